//! Charts and the design-review report on the bundled auth-plan walkthrough (anthropic cache model).

use std::path::PathBuf;
use std::process::Command;

use plancache::cache::PriceTable;
use plancache::chart::{self, data, machine, report};
use plancache::engine::{self, ReplayEnv, RunReport};
use plancache::plan_mode::Mode;
use plancache::strategy;

/// `file` replayed under `strategies` (a comma-separated list) against the anthropic cache.
fn replay(file: &str, strategies: &str) -> RunReport {
    let sessions = plancache::scenario::load_sessions(&[PathBuf::from(file)]).unwrap();
    let strategies = strategy::parse_list(strategies).unwrap();
    engine::run(
        &sessions,
        &strategies,
        &["anthropic".to_string()],
        &ReplayEnv::default(),
    )
    .unwrap()
}

fn run() -> RunReport {
    replay("scenarios/auth-plan.toml", "permission-mode,toolset-swap")
}

/// `file` replayed under permission-mode against the anthropic cache.
fn permission_mode_run(file: &str) -> RunReport {
    replay(file, "permission-mode")
}

#[test]
fn cost_split_adds_up_and_prices_each_part() {
    let run = run();
    let prices = PriceTable::bundled();
    for r in &run.replays {
        let s = data::cost_split(&r.rows, &prices).unwrap();
        let total: f64 = r.rows.iter().map(|x| x.cost_usd).sum();
        assert!((s.total() - total).abs() < 1e-12, "{}", r.strategy);
        // The anthropic model (Claude Code layout) writes every recomputed token with the 1-hour
        // TTL: nothing is plain input, nothing is a 5-minute write.
        assert_eq!((s.uncached_input, s.write_5m), (0.0, 0.0));
        let sum = |f: fn(&plancache::metrics::RequestRow) -> u64| r.rows.iter().map(f).sum::<u64>();
        // Writes at 2 x $3 / 1M, reads at 0.1 x $3 / 1M.
        assert!((s.write_1h - sum(|x| x.cache_write_tokens) as f64 * 6.0 / 1e6).abs() < 1e-12);
        assert!((s.read - sum(|x| x.cached_tokens) as f64 * 0.3 / 1e6).abs() < 1e-12);
        // Output: 60+90+120+700+80+300+150 = 1500 tokens x $15 / 1M under both strategies.
        assert!((s.output - 1500.0 * 15.0 / 1e6).abs() < 1e-12);
    }
    // permission-mode: 18539 written, 87052 read -> 0.111234 + 0.0261156 + 0.0225.
    let pm = data::cost_split(&run.replays[0].rows, &prices).unwrap();
    assert!((pm.total() - 0.1598496).abs() < 1e-9, "{pm:?}");
}

#[test]
fn timeline_follows_the_trace() {
    let run = run();
    let r = &run.replays[0];
    let t = data::timeline(&r.rows, &r.trace);
    // Requests at steps 2 (default), 4, 5, 6, 7 (plan), 10, 11 (after the step-9 approval).
    let labels: Vec<String> = t.phases.iter().map(|p| p.label()).collect();
    assert_eq!(
        labels,
        [
            "default",
            "plan",
            "plan",
            "plan",
            "plan",
            "after approval",
            "after approval"
        ]
    );
    // Enter approved at step 3, after request 1; the wait (step 8) and the approval (step 9)
    // fall between requests 5 and 6.
    let ev: Vec<(f64, &str)> = t.events.iter().map(|e| (e.x, e.label.as_str())).collect();
    assert_eq!(
        ev,
        [
            (1.5, "enter plan"),
            (5.5, "wait 3m"),
            (5.5, "plan approved")
        ]
    );
}

#[test]
fn verdict_is_computed_from_the_rows() {
    let run = run();
    let prices = PriceTable::bundled();
    let sections = report::sections(&run, &prices).unwrap();
    assert_eq!(sections.len(), 1);
    let v = sections[0].verdict.join(" ");
    // Total cost (prompt + output): permission-mode 18539 x 6e-6 + 87052 x 0.3e-6 = 0.1373496
    // for the prompt plus 1500 output tokens x 15e-6 = 0.0225, 0.1598496 in all; toolset-swap
    // 33737 x 6e-6 + 64734 x 0.3e-6 = 0.2218422 + 0.0225 = 0.2443422 -> 0.0844926 / 0.2443422
    // = 35%. Hit rates 87052 / 105591 = 82% and 64734 / 98471 = 66%. The swap removes tools
    // when entering plan mode (request 2) and restores them after approval (request 6): both
    // breaks are tool-list changes that permission-mode does not have.
    assert_eq!(
        v,
        "Total cost (prompt + output: cost $ in plancache run), cheapest first: 1. permission-mode $0.1598 (hit 82%; no breaks), \
         2. toolset-swap $0.2443 (hit 66%; permission-mode saves 35%; extra breaks: tools changed at requests 2 and 6)."
    );
    assert_eq!(sections[0].verdict.len(), 1, "one ranked line");
}

#[test]
fn machine_counts_the_transitions_taken() {
    let run = run();
    let edges = machine::edges(&run.replays[0].trace);
    let taken: Vec<(Mode, Mode, String)> = edges
        .iter()
        .filter(|e| e.count() > 0)
        .map(|e| (e.from, e.to, e.label()))
        .collect();
    assert_eq!(
        taken,
        [
            (Mode::Default, Mode::Plan, "approve enter x1".to_string()),
            (Mode::Plan, Mode::Default, "approve exit x1".to_string()),
        ]
    );
    let svg = machine::svg(&run.replays[0].trace);
    assert_eq!(svg.matches("marker-end=\"url(#m-arrow-taken)\"").count(), 2);
    // Every arrow points at a marker the SVG defines.
    for part in svg.split("url(#").skip(1) {
        let id = &part[..part.find(')').unwrap()];
        assert!(svg.contains(&format!("<marker id=\"{id}\"")), "{id}");
    }
    let md = machine::mermaid(&run.replays[0].trace);
    assert!(md.contains("default ==>|\"approve enter x1\"| plan"));
    assert!(md.contains("plan -.->|reject| plan"));
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    (be(16), be(20))
}

#[test]
fn report_command_writes_charts_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("review");
    let status = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args([
            "report",
            "scenarios/auth-plan.toml",
            "--strategy",
            "permission-mode,toolset-swap",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    for kind in ["hit-rate", "recomputed", "cost", "ttft"] {
        let svg =
            std::fs::read_to_string(out.join(format!("charts/auth-plan-anthropic-{kind}.svg")))
                .unwrap();
        assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
        // Text is emitted (the embedded font lays it out): axis and strategy names.
        assert!(
            svg.contains("permission-mode") && svg.contains("toolset-swap"),
            "{kind}"
        );
        let png =
            std::fs::read(out.join(format!("charts/auth-plan-anthropic-{kind}.png"))).unwrap();
        assert_eq!(png_size(&png), chart::SIZE);
    }
    let hit = std::fs::read_to_string(out.join("charts/auth-plan-anthropic-hit-rate.svg")).unwrap();
    assert!(hit.contains("toolset-swap: tools changed"));
    assert!(hit.contains("after approval") && hit.contains("enter plan"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    // Self-contained: charts inline, no external images or scripts.
    assert_eq!(html.matches("<figure><svg").count(), 4);
    assert!(!html.contains("<img") && !html.contains("<script"));
    // It opens at the overview, then the contents, before the first scenario section.
    let (ov, toc, sec) = (
        html.find("id=\"overview\"").unwrap(),
        html.find("id=\"contents\"").unwrap(),
        html.find("<section").unwrap(),
    );
    assert!(ov < toc && toc < sec);
    assert!(html.contains("Verdict.") && html.contains("approve exit x1"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("```mermaid")
            && md.contains("![Cost per session](charts/auth-plan-anthropic-cost.png)")
    );
    assert!(out.join("requests.csv").exists() && out.join("summary.csv").exists());
    // Same inputs, same bytes.
    let again = dir.path().join("again");
    let status = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args([
            "report",
            "scenarios/auth-plan.toml",
            "--strategy",
            "permission-mode,toolset-swap",
            "--out",
        ])
        .arg(&again)
        .output()
        .unwrap();
    assert!(status.status.success());
    for f in [
        "report.html",
        "report.md",
        "charts/auth-plan-anthropic-hit-rate.png",
    ] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(again.join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn report_rejects_missing_scenario_with_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_plancache"))
        .args(["report", "no/such.toml", "--out", "/tmp/unused-report"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such.toml"));
}

#[test]
fn verdict_groups_strategies_with_the_same_figures() {
    let sessions =
        plancache::scenario::load_sessions(&[PathBuf::from("scenarios/auth-plan.toml")]).unwrap();
    // masked keeps tools and system byte-identical like permission-mode, so on auth-plan both
    // have the same rows and share one sentence.
    let strategies = strategy::parse_list("permission-mode,masked,toolset-swap").unwrap();
    let run = engine::run(
        &sessions,
        &strategies,
        &["anthropic".to_string()],
        &ReplayEnv::default(),
    )
    .unwrap();
    let (pm, masked) = (&run.replays[0], &run.replays[1]);
    assert_eq!(pm.summary().cost_usd, masked.summary().cost_usd);
    let v = report::sections(&run, &PriceTable::bundled()).unwrap()[0]
        .verdict
        .join(" ");
    // Same cost and same (no) breaks: one entry.
    assert!(
        v.starts_with("Total cost (prompt + output: cost $ in plancache run), cheapest first: 1. permission-mode = masked $0.1598 (hit 82%; no breaks), 2. toolset-swap $0.2443"),
        "{v}"
    );
}

#[test]
fn machine_and_timeline_show_rejections_and_edits() {
    // reject-then-approve: `mode = "plan"` (default -> plan), two rejections, then the user edits
    // the plan and approves it (plan -> default).
    let run = permission_mode_run("scenarios/reject-then-approve.toml");
    let r = &run.replays[0];
    let taken: Vec<(Mode, Mode, String)> = machine::edges(&r.trace)
        .iter()
        .filter(|e| e.count() > 0)
        .map(|e| (e.from, e.to, e.label()))
        .collect();
    assert_eq!(
        taken,
        [
            (Mode::Default, Mode::Plan, "switch x1".to_string()),
            (Mode::Plan, Mode::Default, "edit + approve x1".to_string()),
            (Mode::Plan, Mode::Plan, "reject x2".to_string()),
        ]
    );
    let labels: Vec<String> = data::timeline(&r.rows, &r.trace)
        .events
        .iter()
        .map(|e| e.label.clone())
        .filter(|l| !l.starts_with("wait"))
        .collect();
    assert_eq!(
        labels,
        ["mode plan", "rejected", "rejected", "plan approved"]
    );
}

#[test]
fn cost_split_matches_billing_under_every_cache_model() {
    // Providers that charge nothing extra for writes bill them as plain input; the split must
    // follow each model's billing so its parts add up to the rows' cost.
    let sessions =
        plancache::scenario::load_sessions(&[PathBuf::from("scenarios/auth-plan.toml")]).unwrap();
    let strategies = strategy::parse_list("permission-mode,toolset-swap").unwrap();
    let caches: Vec<String> = plancache::cache::CACHE_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    let run = engine::run(&sessions, &strategies, &caches, &ReplayEnv::default()).unwrap();
    let prices = PriceTable::bundled();
    for r in &run.replays {
        let s = data::cost_split(&r.rows, &prices).unwrap();
        let total: f64 = r.rows.iter().map(|x| x.cost_usd).sum();
        assert!(
            (s.total() - total).abs() < 1e-9,
            "{} / {}: split {} vs rows {total}",
            r.strategy,
            r.cache,
            s.total()
        );
    }
}

/// The strip names what happened: an `edit_system` step is an edit of the system prompt (it was
/// labelled "plan approved", as an edited plan is), and a compaction is marked where it happens.
#[test]
fn timeline_names_system_edits_and_compactions() {
    let labels = |file: &str| -> Vec<(f64, String)> {
        let run = permission_mode_run(file);
        let r = &run.replays[0];
        data::timeline(&r.rows, &r.trace)
            .events
            .into_iter()
            .map(|e| (e.x, e.label))
            .collect()
    };
    let date = labels("scenarios/date-line-change.toml");
    assert!(date.iter().all(|(_, l)| l != "plan approved"), "{date:?}");
    let edit: Vec<&(f64, String)> = date
        .iter()
        .filter(|(_, l)| l == "system prompt edited")
        .collect();
    assert_eq!(edit.len(), 1, "{date:?}");
    let compact = labels("scenarios/compact-summary.toml");
    let marks: Vec<&(f64, String)> = compact.iter().filter(|(_, l)| l == "compacted").collect();
    assert_eq!(marks.len(), 1, "{compact:?}");
    // The edit shares the wait's place (both between the second and third requests); the mark
    // follows the summarisation request, the fourth.
    assert_eq!((edit[0].0, marks[0].0), (2.5, 4.5));
}
