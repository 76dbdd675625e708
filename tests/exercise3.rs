//! Pins the exercise-3 figures under the `ideal` cache for both foundation strategies.
//!
//! Hand derivation (sizes from scenarios/exercise-3.toml). Prefix P = 3,000 tools + 7,000 system.
//! The ideal cache reuses the longest prefix shared with any earlier prompt or visible reply.
//!
//! permission-mode (tools and system never change):
//!   r1 = P + user 40 = 10,040, nothing cached.
//!   r2 adds reply 50 + enter result 60 + reminder 147: 10,297; cached 10,090 (r1 + its reply);
//!      recomputed 207.
//!   r3..r7 each add reply 80 + Read result 1,500: 11,877 / 13,457 / 15,037 / 16,617 / 18,197;
//!      each reuses the previous prompt + its 80-token reply: recomputed 1,500 each.
//!   r8 adds ExitPlanMode reply 120 + approval 30 + plan 600 + exit reminder 41: 18,988;
//!      cached 18,317; recomputed 671.
//!   prompt sum 114,510; recomputed 10,040 + 207 + 5 x 1,500 + 671 = 18,418; cached 96,092.
//!
//! toolset-swap (Edit, Write, Bash = 1,400 tokens leave the tools list in plan mode):
//!   r1 = 10,040 as above.
//!   r2 = 10,297 - 1,400 = 8,897; the tools list now reads Read, Glob, Grep, EnterPlanMode: only
//!      the first 1,000 tokens match r1: recomputed 7,897.
//!   r3..r7 = 10,477 ... 16,797, recomputed 1,500 each (plan-mode prefix is stable).
//!   r8 = 18,988 with the full tools again: the longest shared prefix is r1 + its reply (10,090):
//!      recomputed 8,898.
//!   prompt sum 106,110; recomputed 10,040 + 7,897 + 7,500 + 8,898 = 34,335; cached 71,775.
//!
//! system-message and frozen-tools: exercise-3 edits neither the system prompt nor the tools,
//! so they send exactly permission-mode's requests (the plan reminders of 147 and 41 tokens go
//! in as system messages of the same size): the permission-mode figures above.

use std::path::Path;

use plancache::cache::IdealCache;
use plancache::engine::{replay, ReplayEnv};
use plancache::scenario::Session;
use plancache::strategy::{FrozenTools, PermissionMode, Strategy, SystemMessage, ToolsetSwap};

fn scenario() -> Session {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/exercise-3.toml");
    Session::load(&path, None).expect("exercise-3 loads")
}

fn figures(strategy: &dyn Strategy) -> (Vec<u64>, Vec<u64>, u64, u64) {
    let session = scenario();
    let r = replay(
        &session,
        strategy,
        &mut IdealCache::default(),
        &ReplayEnv::default(),
    )
    .expect("exercise-3 replays");
    let prompts = r.rows.iter().map(|x| x.prompt_tokens).collect();
    let recomputed = r.rows.iter().map(|x| x.recomputed_tokens).collect();
    let s = r.summary();
    (prompts, recomputed, s.cached_tokens, s.prompt_tokens)
}

#[test]
fn permission_mode_keeps_the_prefix() {
    let (prompts, recomputed, cached, prompt) = figures(&PermissionMode);
    assert_eq!(
        prompts,
        [10_040, 10_297, 11_877, 13_457, 15_037, 16_617, 18_197, 18_988]
    );
    assert_eq!(
        recomputed,
        [10_040, 207, 1_500, 1_500, 1_500, 1_500, 1_500, 671]
    );
    assert_eq!((cached, prompt), (96_092, 114_510));
}

#[test]
fn system_message_and_frozen_tools_keep_the_prefix() {
    for strategy in [&SystemMessage as &dyn Strategy, &FrozenTools] {
        let (prompts, recomputed, cached, prompt) = figures(strategy);
        assert_eq!(
            prompts,
            [10_040, 10_297, 11_877, 13_457, 15_037, 16_617, 18_197, 18_988]
        );
        assert_eq!(
            recomputed,
            [10_040, 207, 1_500, 1_500, 1_500, 1_500, 1_500, 671]
        );
        assert_eq!((cached, prompt), (96_092, 114_510), "{}", strategy.name());
    }
}

#[test]
fn toolset_swap_breaks_at_each_switch() {
    let (prompts, recomputed, cached, prompt) = figures(&ToolsetSwap);
    assert_eq!(
        prompts,
        [10_040, 8_897, 10_477, 12_057, 13_637, 15_217, 16_797, 18_988]
    );
    assert_eq!(
        recomputed,
        [10_040, 7_897, 1_500, 1_500, 1_500, 1_500, 1_500, 8_898]
    );
    assert_eq!((cached, prompt), (71_775, 106_110));
}

#[test]
fn the_swap_break_is_explained() {
    let session = scenario();
    let r = replay(
        &session,
        &ToolsetSwap,
        &mut IdealCache::default(),
        &ReplayEnv::default(),
    )
    .unwrap();
    assert_eq!(
        r.rows[1].break_text(),
        "tools: prefix changed at tool:EnterPlanMode (token 1000)"
    );
    assert!(r.rows[2].break_text().is_empty());
    assert!(r.rows[7]
        .break_text()
        .starts_with("messages: prefix changed at result:enter-approved"));
}
