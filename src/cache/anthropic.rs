//! Breakpoint caches: Anthropic's prompt caching, and OpenAI's GPT-5.6 profile which follows the
//! same write-at-breakpoint scheme with different parameters.
//!
//! Rules (platform.claude.com prompt-caching docs; ids as in docs/cache-models.md, *Rule ids*):
//! - the prefix is tools → system → messages; an entry is keyed by the chained hash of every
//!   block up to and including the marked block (A3), salted per level by the request settings
//!   that invalidate that level (A12);
//! - a breakpoint writes exactly one entry, at its own block (A4); at most `max_breakpoints`
//!   (4) per request (A2);
//! - a read checks the breakpoint's block, then walks back one block at a time, at most
//!   `lookback` (20) positions counting the breakpoint itself (A5, A6);
//! - prefixes shorter than the model's minimum are neither read nor written, without error (A7);
//! - entries live 5 min or 1 h and a hit resets the entry's own TTL (A8: the cache "is
//!   refreshed for no additional cost each time the cached content is used"): a 5 min entry
//!   found through a 1 h breakpoint's lookback stays a 5 min entry (the 1 h breakpoint writes
//!   its own entry at its block), and a 1 h entry found through a 5 min breakpoint lives
//!   another hour;
//! - writes are billed by the A/B/C rule (A10) and `input_tokens` is what follows the last
//!   breakpoint (A11);
//! - an entry is readable only once the writing response has begun (A13).
//!
//! Anthropic does not cache the generated reply: it is cached when the next request's
//! breakpoint covers it (§8).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::common;
use super::cursor::{same_name, Advance, ByName, Cursor, Streams};
use super::{BreakReason, CacheError, CacheModel, CacheOutcome, PriceTable};
use crate::prompt::{Level, Request, SegmentKind, Ttl};
use crate::util::duration_str;

/// Where a breakpoint cache puts its breakpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Claude Code's request layout: two breakpoints on the system prompt (`system_ttl`) and one
    /// on the last block of the last message (`message_ttl`), moving forward every turn.
    ClaudeCode,
    /// The API's automatic mode (top-level `cache_control`): one breakpoint on the last
    /// non-empty block (`message_ttl`), plus any explicit breakpoints of the scenario.
    Automatic,
    /// Only the breakpoints the scenario places (`cache_control` on tools, system blocks and
    /// content).
    Explicit,
}

/// Parameters of a breakpoint cache. Defaults are Anthropic's documented values and Claude
/// Code 2.1's layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakpointConfig {
    /// Where the cache puts its breakpoints (Claude Code's, automatic, or explicit marks).
    pub layout: Layout,
    /// TTL class of the layout's system-prompt breakpoints (Claude Code: 1 h).
    pub system_ttl: Ttl,
    /// TTL class of the moving message breakpoint (Claude Code 2.1 main thread: 1 h; older
    /// versions and most subagent streams: 5 m) and of the automatic breakpoint.
    pub message_ttl: Ttl,
    /// TTL class of the message breakpoint in streams other than `main` (subagents); Claude
    /// Code writes 5 min entries in most subagent streams (§8). `None`: use `message_ttl`.
    pub subagent_message_ttl: Option<Ttl>,
    /// Whether the scenario's own `cache_control` marks are honoured besides the layout's.
    pub explicit_breakpoints: bool,
    /// Read lookback in block positions per breakpoint, the breakpoint included; 0 = unlimited.
    pub lookback: usize,
    /// At most this many breakpoints per request; a request with more is refused (the real API
    /// answers 400), see `CacheOutcome::rejected`.
    pub max_breakpoints: usize,
    /// Overrides the per-model minimum cacheable prefix of the price table.
    pub min_cacheable: Option<u64>,
    /// Lifetime of an entry of the `5m` class.
    #[serde(with = "duration_str")]
    pub ttl_5m: Duration,
    /// Lifetime of an entry of the `1h` class.
    #[serde(with = "duration_str")]
    pub ttl_1h: Duration,
    /// Salt the system and message levels with the request settings (A12).
    pub level_salts: bool,
    /// The entries at the tools/system breakpoints of each model's first request were written
    /// by earlier sessions of the same account and exist at t = 0 (§8 cross-session sharing).
    pub prewarmed_prefix: bool,
    /// Other sessions of the account keep the tools/system entries refreshed: they never expire.
    pub prefix_kept_warm: bool,
    /// Per-model minimum cacheable prefix of this provider, where it differs from the price
    /// table's (Bedrock's table): model name -> tokens. `min_cacheable` still overrides it.
    pub model_min_cacheable: BTreeMap<String, u64>,
    /// The minimum applies per checkpoint (Bedrock): a breakpoint is cached only when at least
    /// the minimum lies between it and the previous cached breakpoint ("first checkpoint after
    /// 1,024 tokens and the second after 2,048"). Off: each breakpoint's whole prefix counts.
    pub checkpoint_spacing: bool,
    /// The TTL class each named stream asks for, where a harness sets one per stream (an
    /// imported session: each stream's own class). A listed stream writes only that class, at
    /// its system and message breakpoints alike (no Claude Code request writes two classes);
    /// unlisted streams follow `system_ttl` / `message_ttl` / `subagent_message_ttl`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stream_ttls: BTreeMap<String, Ttl>,
    /// Claude Code layout, subagent streams: put the last system breakpoint before the
    /// trailing environment block (`environment` of an agent) instead of after it. Claude Code
    /// renders the environment into the same text block as the agent's prompt, so its mark
    /// falls after the environment, an entry no other spawn matches; split off and marked
    /// before it, the agent's prompt is an entry every later spawn of the same type reads.
    #[serde(skip_serializing_if = "is_false")]
    pub subagent_environment_breakpoint: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for BreakpointConfig {
    fn default() -> Self {
        BreakpointConfig {
            layout: Layout::ClaudeCode,
            system_ttl: Ttl::OneHour,
            message_ttl: Ttl::OneHour,
            subagent_message_ttl: Some(Ttl::FiveMinutes),
            explicit_breakpoints: false,
            lookback: 20,
            max_breakpoints: 4,
            min_cacheable: None,
            ttl_5m: Duration::from_secs(5 * 60),
            ttl_1h: Duration::from_secs(60 * 60),
            level_salts: true,
            prewarmed_prefix: false,
            prefix_kept_warm: false,
            model_min_cacheable: BTreeMap::new(),
            checkpoint_spacing: false,
            stream_ttls: BTreeMap::new(),
            subagent_environment_breakpoint: false,
        }
    }
}

impl super::Section for BreakpointConfig {
    fn check(&self) -> Result<(), CacheError> {
        self.validate()
    }
}

impl BreakpointConfig {
    /// `anthropic-auto`: the API's automatic mode, 5 min.
    pub fn automatic() -> Self {
        BreakpointConfig {
            layout: Layout::Automatic,
            message_ttl: Ttl::FiveMinutes,
            explicit_breakpoints: true,
            ..Self::default()
        }
    }

    /// `anthropic-explicit`: only the scenario's breakpoints.
    pub fn explicit() -> Self {
        BreakpointConfig {
            layout: Layout::Explicit,
            explicit_breakpoints: true,
            ..Self::default()
        }
    }

    /// `openai-5.6`: an implicit breakpoint at the end of the prompt plus explicit
    /// `prompt_cache_breakpoint`s, at most 4 written, no block-lookback limit, 30 min TTL, writes
    /// at the model's `write_5m` multiplier (1.25x), no 128-token rounding (rules O2,
    /// O6). The 30 min value follows the SDK docs; Azure also lists 12 h.
    pub fn openai_5_6() -> Self {
        BreakpointConfig {
            layout: Layout::Automatic,
            message_ttl: Ttl::FiveMinutes,
            system_ttl: Ttl::FiveMinutes,
            subagent_message_ttl: None,
            explicit_breakpoints: true,
            lookback: 0,
            max_breakpoints: 4,
            min_cacheable: Some(1024),
            ttl_5m: Duration::from_secs(30 * 60),
            ttl_1h: Duration::from_secs(30 * 60),
            level_salts: false,
            prewarmed_prefix: false,
            prefix_kept_warm: false,
            model_min_cacheable: BTreeMap::new(),
            checkpoint_spacing: false,
            stream_ttls: BTreeMap::new(),
            subagent_environment_breakpoint: false,
        }
    }

    /// `bedrock`: Anthropic models on Amazon Bedrock (docs/cache-models.md, *bedrock*;
    /// docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html, several versions read
    /// 2026-12-01). Claude's "simplified" mode: one checkpoint at the end of the prompt, looking
    /// back about 20 blocks, plus the scenario's own `cachePoint`s, at most 4; 5 min TTL (1 h
    /// only on some models, opt-in); the minimum applies per checkpoint, from Bedrock's table.
    /// Prices are the price table's: Bedrock's on-demand Claude prices equal Anthropic's list
    /// prices (writes 1.25x, reads 0.1x).
    pub fn bedrock() -> Self {
        let table: &[(&str, u64)] = &[
            // 4,096: Opus 4.5, Opus 4.6, Haiku 4.5.
            ("claude-opus-4-5", 4096),
            ("claude-opus-4-6", 4096),
            ("claude-haiku-4-5", 4096),
            // 1,024: Sonnet 4.6 (Anthropic's API says 2,048), Opus 4, 3.7 Sonnet.
            ("claude-sonnet-4-6", 1024),
            ("claude-opus-4", 1024),
            ("claude-3-7-sonnet", 1024),
            // 2,048: 3.5 Haiku.
            ("claude-3-5-haiku", 2048),
            // Sonnet 4.5: 4,096 in one table version, 1,024 in another; the lower one is kept,
            // as on Anthropic's API (override with `model_min_cacheable`).
            ("claude-sonnet-4-5", 1024),
            ("claude-sonnet-4", 1024),
        ];
        BreakpointConfig {
            layout: Layout::Automatic,
            message_ttl: Ttl::FiveMinutes,
            system_ttl: Ttl::FiveMinutes,
            subagent_message_ttl: None,
            explicit_breakpoints: true,
            model_min_cacheable: table.iter().map(|(m, n)| (m.to_string(), *n)).collect(),
            checkpoint_spacing: true,
            stream_ttls: BTreeMap::new(),
            ..Self::default()
        }
    }

    /// Checks what the API would reject: longer TTLs must come before shorter ones (A8).
    pub fn validate(&self) -> Result<(), CacheError> {
        if self.layout == Layout::ClaudeCode && self.system_ttl < self.message_ttl {
            return Err(CacheError::TtlOrder {
                system: self.system_ttl.as_str(),
                message: self.message_ttl.as_str(),
            });
        }
        if self.max_breakpoints == 0 {
            return Err(CacheError::Zero {
                key: "max_breakpoints",
            });
        }
        Ok(())
    }

    fn ttl_ms(&self, ttl: Ttl) -> u64 {
        match ttl {
            Ttl::FiveMinutes => self.ttl_5m.as_millis() as u64,
            Ttl::OneHour => self.ttl_1h.as_millis() as u64,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// When the entry becomes readable (ms): when the writing request's response began.
    visible_at: u64,
    /// When the entry lapses (ms) unless a hit renews it first.
    expires_at: u64,
    /// The entry's own lifetime (its TTL class when written), which a hit renews.
    ttl_ms: u64,
}

#[derive(Debug, Default)]
struct ModelState {
    /// The model's cache entries, keyed by the prefix hash they were written at.
    entries: common::HashKeyed<u64, Entry>,
    /// Prefix hashes of every earlier prompt, to tell "changed" from "never written".
    seen: common::HashKeyed<u64, ()>,
    /// Whether the model has served a request yet (its first request finds nothing).
    started: bool,
}

/// A breakpoint cache (Anthropic, or OpenAI GPT-5.6) with its configuration.
#[derive(Debug)]
pub struct BreakpointCache {
    /// The cache's name, as reports label it.
    name: String,
    /// The rules this cache applies (breakpoints, TTLs, minimums, layout).
    config: BreakpointConfig,
    /// Each model's minimum cacheable prefix from the price table, when the config sets none.
    min_by_model: HashMap<String, u64>,
    /// Each model's entries and seen prefixes, keyed by model name.
    models: ByName<ModelState>,
    /// Every stream's memory of its previous request, keyed by stream name.
    streams: Streams<StreamState>,
}

/// What a breakpoint cache remembers of a stream's previous request, so a request costs what it
/// adds: hashes and ends come from the cursor, breakpoint candidates from marks kept in step.
#[derive(Debug, Default)]
struct StreamState {
    /// The stream's previous prompt as segments with their prefix hashes and ends.
    cursor: Cursor,
    /// Indices of the system-level segments.
    system: Vec<usize>,
    /// Indices of the segments carrying a `cache_control` mark, with its TTL.
    explicit: Vec<(usize, Ttl)>,
    /// Leading hashes known to be in the model's `seen` set.
    seen_ok: usize,
    /// Entries the stream's last lookup read: their TTL runs again from when it finished.
    read: Vec<u64>,
}

impl StreamState {
    fn advance(&mut self, req: &Request, salts: [u64; 3]) -> Advance {
        let adv = self.cursor.advance(req, salts);
        let k = adv.keep;
        self.system
            .truncate(self.system.partition_point(|&i| i < k));
        self.explicit
            .truncate(self.explicit.partition_point(|&(i, _)| i < k));
        for (i, s) in req.segments.iter().enumerate().skip(k) {
            if s.level == Level::System {
                self.system.push(i);
            }
            if let Some(ttl) = s.breakpoint {
                self.explicit.push((i, ttl));
            }
        }
        self.seen_ok = if adv.same_model {
            self.seen_ok.min(k)
        } else {
            0
        };
        adv
    }

    /// Extends `seen_ok` as far as `seen` holds the hashes; returns it.
    fn seen_prefix(&mut self, seen: &common::HashKeyed<u64, ()>) -> usize {
        let hashes = self.cursor.hashes();
        while self.seen_ok < hashes.len() && seen.contains_key(&hashes[self.seen_ok]) {
            self.seen_ok += 1;
        }
        self.seen_ok
    }
}

/// A breakpoint of one request: segment index and TTL class.
type Breakpoint = (usize, Ttl);

impl BreakpointCache {
    /// A cold cache named `name` (the registry name it reports); each model's minimum
    /// cacheable length comes from `prices`.
    pub fn new(name: &str, config: BreakpointConfig, prices: &PriceTable) -> Self {
        let min_by_model = prices
            .names()
            .filter_map(|n| prices.get(n).map(|p| (n.to_string(), p.min_cacheable)))
            .collect();
        BreakpointCache {
            name: name.to_string(),
            config,
            min_by_model,
            models: ByName::default(),
            streams: Streams::default(),
        }
    }

    /// The parameters it runs with.
    pub fn config(&self) -> &BreakpointConfig {
        &self.config
    }

    fn min_cacheable(&self, model: &str) -> u64 {
        self.config
            .min_cacheable
            .or_else(|| self.config.model_min_cacheable.get(model).copied())
            .or_else(|| self.min_by_model.get(model).copied())
            .unwrap_or(0)
    }

    fn salts(&self, req: &Request) -> [u64; 3] {
        if self.config.level_salts {
            common::level_salts(req)
        } else {
            [0; 3]
        }
    }
}

/// The request's breakpoints in prompt order, at most `max_breakpoints`.
fn breakpoints(config: &BreakpointConfig, req: &Request, st: &StreamState) -> Vec<Breakpoint> {
    kept_breakpoints(config, requested_breakpoints(config, req, st))
}

/// One breakpoint per block (the longest TTL), at most `max_breakpoints`.
fn kept_breakpoints(config: &BreakpointConfig, mut requested: Vec<Breakpoint>) -> Vec<Breakpoint> {
    requested.dedup_by_key(|b| b.0);
    requested.truncate(config.max_breakpoints);
    requested
}

/// Why the API would refuse a request with these breakpoints (sorted by position, TTLs longest
/// first on a tie), if it would: more than `max_breakpoints` (A2), two TTLs on one block (A2), or
/// a 1 h breakpoint after a 5 m one (A8: longer TTLs must come first).
fn refusal(config: &BreakpointConfig, req: &Request, bps: &[Breakpoint]) -> Option<String> {
    let label = |i: usize| req.segments[i].label.clone();
    if let Some(w) = bps
        .windows(2)
        .find(|w| w[0].0 == w[1].0 && w[0].1 != w[1].1)
    {
        return Some(format!(
            "block {} carries two cache breakpoints with different TTLs; the API answers 400",
            label(w[0].0)
        ));
    }
    let mut distinct: Vec<Breakpoint> = bps.to_vec();
    distinct.dedup_by_key(|b| b.0);
    if distinct.len() > config.max_breakpoints {
        return Some(format!(
            "the request carries {} cache breakpoints ({}); the API allows {} and answers 400 (mark {} is on {})",
            distinct.len(),
            distinct
                .iter()
                .map(|b| format!("{} {}", label(b.0), b.1.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
            config.max_breakpoints,
            config.max_breakpoints + 1,
            label(distinct[config.max_breakpoints].0)
        ));
    }
    let first_5m = distinct.iter().position(|b| b.1 == Ttl::FiveMinutes)?;
    let late_1h = distinct[first_5m..].iter().find(|b| b.1 == Ttl::OneHour)?;
    Some(format!(
        "a 1h cache breakpoint on {} follows a 5m one on {}; the API requires longer TTLs first and answers 400",
        label(late_1h.0),
        label(distinct[first_5m].0)
    ))
}

/// Every breakpoint the layout and the scenario ask for, in prompt order (not deduplicated).
fn requested_breakpoints(
    config: &BreakpointConfig,
    req: &Request,
    st: &StreamState,
) -> Vec<Breakpoint> {
    let segs = &req.segments;
    let mut out: Vec<Breakpoint> = Vec::new();
    if config.explicit_breakpoints || config.layout == Layout::Explicit {
        out.extend_from_slice(&st.explicit);
    }
    let last_nonempty = |upto: usize| (0..upto).rev().find(|&i| !segs[i].is_empty());
    // The TTL class the stream asks for: the configuration's per-stream class, else the one the
    // harness sets in the request (a scenario's `ttl`).
    let own = config
        .stream_ttls
        .get(&req.stream)
        .copied()
        .or(req.settings.cache_ttl);
    match config.layout {
        Layout::Explicit => {}
        Layout::Automatic => {
            if let Some(i) = last_nonempty(segs.len()) {
                out.push((i, own.unwrap_or(config.message_ttl)));
            }
        }
        Layout::ClaudeCode => {
            // System prompt: on the first and the last system block; with a single system
            // block, on the last tool definition and the system block (so the tools alone
            // are also an entry of their own).
            let (sys, env) = split_environment(req, &st.system);
            let first_msg = req.first_segment_at(Level::Messages);
            // A subagent request writes one TTL class only (no Claude Code request writes both
            // 1 h and 5 m): its system breakpoints take the subagent TTL too.
            let ttl = own.unwrap_or(match config.subagent_message_ttl {
                Some(t) if req.stream != "main" => t,
                _ => config.system_ttl,
            });
            match sys {
                [] => {
                    if let Some(i) = last_nonempty(first_msg) {
                        out.push((i, ttl));
                    }
                }
                [only] => {
                    if let Some(i) = last_nonempty(*only) {
                        out.push((i, ttl));
                    }
                    out.push((*only, ttl));
                }
                [first, .., last] => {
                    out.push((*first, ttl));
                    out.push((*last, ttl));
                }
            }
            // The environment is the tail of the agent's last system block: the mark goes
            // after it, unless the layout splits it off and marks before it.
            if let (Some(e), Some(&last)) = (env, sys.last()) {
                if !config.subagent_environment_breakpoint {
                    for b in out.iter_mut().filter(|b| b.0 == last) {
                        b.0 = e;
                    }
                }
            }
            let msg_ttl = own.unwrap_or(match config.subagent_message_ttl {
                Some(t) if req.stream != "main" => t,
                _ => config.message_ttl,
            });
            // On the last block of the last message, before the reminders the harness appends
            // after it.
            let last_block = (0..segs.len())
                .rev()
                .find(|&i| !segs[i].is_empty() && segs[i].kind != SegmentKind::Reminder);
            if let Some(i) = last_block.filter(|&i| i >= first_msg) {
                out.push((i, msg_ttl));
            }
        }
    }
    out.sort_by_key(|&(i, ttl)| (i, std::cmp::Reverse(ttl)));
    out
}

/// The system blocks of a request without a trailing environment block, and that block's index.
fn split_environment<'a>(req: &Request, system: &'a [usize]) -> (&'a [usize], Option<usize>) {
    match system.split_last() {
        Some((&e, rest))
            if !rest.is_empty()
                && req.segments[e]
                    .label
                    .ends_with(crate::prompt::ENVIRONMENT_SUFFIX) =>
        {
            (rest, Some(e))
        }
        _ => (system, None),
    }
}

/// Which breakpoints are long enough to be cached (A7): each whole prefix at least `min`, or,
/// with `checkpoint_spacing` (Bedrock), at least `min` after the previous cached breakpoint.
fn cacheable_breakpoints(
    config: &BreakpointConfig,
    bps: &[Breakpoint],
    ends: &[u64],
    min: u64,
) -> Vec<bool> {
    let mut last = 0u64;
    bps.iter()
        .map(|&(i, _)| {
            let end = ends[i];
            let from = if config.checkpoint_spacing { last } else { 0 };
            let ok = end > 0 && end >= from.saturating_add(min);
            if ok {
                last = end;
            }
            ok
        })
        .collect()
}

/// What the prewarm of a request's head needs of it.
struct Head<'a> {
    /// The prompt's prefix hashes and token ends, per segment.
    hashes: &'a [u64],
    /// The prompt's cumulative token count at the end of each segment.
    ends: &'a [u64],
    /// The model's minimum cacheable prompt.
    min: u64,
    /// The request's send time.
    now: u64,
    /// Kept warm by other sessions for ever (not only written before this one).
    kept: bool,
}

/// Cross-session sharing: the entries of the request's tools/system breakpoints already exist
/// (written by earlier sessions of the account, or kept warm by them).
fn prewarm_head(
    config: &BreakpointConfig,
    entries: &mut common::HashKeyed<u64, Entry>,
    req: &Request,
    bps: &[Breakpoint],
    h: &Head<'_>,
) {
    for &(i, ttl) in bps {
        if req.segments[i].level < Level::Messages && h.ends[i] >= h.min && h.ends[i] > 0 {
            let ttl_ms = match ttl {
                Ttl::FiveMinutes => config.ttl_5m.as_millis() as u64,
                Ttl::OneHour => config.ttl_1h.as_millis() as u64,
            };
            let expires_at = if h.kept {
                u64::MAX
            } else {
                ttl_ms.max(h.now + 1)
            };
            let e = entries.entry(h.hashes[i]).or_insert(Entry {
                visible_at: 0,
                expires_at,
                ttl_ms,
            });
            e.expires_at = e.expires_at.max(expires_at);
            e.ttl_ms = e.ttl_ms.max(ttl_ms);
            e.visible_at = e.visible_at.min(h.now);
        }
    }
}

/// The reads: each breakpoint looks back at most `lookback` positions (0: all) for a live
/// entry, which the hit renews; returns the last segment read, noting every hash read in `read`.
fn read_breakpoints(
    lookback: usize,
    entries: &mut common::HashKeyed<u64, Entry>,
    bps: &[Breakpoint],
    hashes: &[u64],
    now: u64,
    read: &mut Vec<u64>,
) -> Option<usize> {
    let mut hit: Option<usize> = None;
    for &(i, _) in bps {
        let span = if lookback == 0 {
            i + 1
        } else {
            lookback.min(i + 1)
        };
        for p in (i + 1 - span..=i).rev() {
            if let Some(e) = entries.get_mut(&hashes[p]) {
                if live(e, now) {
                    // The hit renews the entry's own TTL, whatever the reading breakpoint's
                    // class.
                    e.expires_at = e.expires_at.max(now.saturating_add(e.ttl_ms));
                    read.push(hashes[p]);
                    hit = hit.max(Some(p));
                    break;
                }
            }
        }
    }
    hit
}

/// Where the 1 h writes end (`b`) and where all writes end (`c`), given the read end `a` and
/// the breakpoints long enough to be cached (A10: read, then 1 h, then 5 m).
fn write_ends(eligible: &[&Breakpoint], ends: &[u64], a: u64) -> (u64, u64) {
    let c = eligible
        .iter()
        .map(|(i, _)| ends[*i])
        .max()
        .unwrap_or(0)
        .max(a);
    let b = eligible
        .iter()
        .filter(|(i, ttl)| *ttl == Ttl::OneHour && ends[*i] > a)
        .map(|(i, _)| ends[*i])
        .max()
        .unwrap_or(a)
        .max(a);
    (b, c)
}

/// Why the last entry among `hashes` (a prompt's hashes past what was read) was not read:
/// not visible yet, expired, or beyond every breakpoint's lookback; `None` with no entry.
fn unread_entry(
    entries: &common::HashKeyed<u64, Entry>,
    hashes: &[u64],
    now: u64,
) -> Option<BreakReason> {
    let e = hashes.iter().rev().find_map(|h| entries.get(h))?;
    Some(if e.visible_at > now {
        BreakReason::InFlight
    } else if e.expires_at <= now {
        BreakReason::TtlExpired
    } else {
        BreakReason::LookbackExceeded
    })
}

/// The first segment from `start` whose prefix no earlier prompt had (`known` segments of the
/// stream's prompt were seen).
fn first_unseen(
    seen: &common::HashKeyed<u64, ()>,
    hashes: &[u64],
    start: usize,
    known: usize,
    n: usize,
) -> Option<usize> {
    if start <= known {
        (known < n).then_some(known)
    } else {
        (start..n).find(|&p| !seen.contains_key(&hashes[p]))
    }
}

/// A request's outcome (no stop yet): `a` tokens read, then 1 h writes to `b` and 5 m writes
/// to `c`, the rest uncached.
fn split_prompt(prompt: u64, a: u64, (b, c): (u64, u64), rejected: Option<String>) -> CacheOutcome {
    CacheOutcome {
        prompt_tokens: prompt,
        cached_tokens: a,
        write_1h_tokens: b - a,
        write_5m_tokens: c - b,
        uncached_input_tokens: prompt - c,
        stop: None,
        rejected,
        storage_token_seconds: 0,
    }
}

fn live(e: &Entry, now: u64) -> bool {
    e.visible_at <= now && now < e.expires_at
}

impl CacheModel for BreakpointCache {
    fn name(&self) -> &str {
        &self.name
    }

    fn lookup(&mut self, req: &Request) -> CacheOutcome {
        let now = req.sent_at_ms;
        let min = self.min_cacheable(&req.model);
        let salts = self.salts(req);
        let st = self.streams.stream(&req.stream);
        // Salted hashes: a settings change shows as a change at the level it invalidates.
        let departure = st.advance(req, salts).departure;
        let requested = requested_breakpoints(&self.config, req, st);
        let rejected = refusal(&self.config, req, &requested);
        let bps = kept_breakpoints(&self.config, requested);
        let n = req.segments.len();
        let others = self
            .models
            .iter()
            .any(|(m, s)| !same_name(m, &req.model) && s.started);
        let prewarm = self.config.prewarmed_prefix || self.config.prefix_kept_warm;
        let kept = self.config.prefix_kept_warm;
        let state = self
            .models
            .get_or_insert_with(&req.model, ModelState::default);
        let first = !state.started;
        // Leading hashes in `seen` (memoized per stream, so this walks only new segments).
        let known = st.seen_prefix(&state.seen);
        let cursor = &st.cursor;
        let prompt = cursor.total();
        let hashes = cursor.hashes();
        let ends = cursor.ends();
        // Cross-session sharing: the tools/system entries already exist.
        if prewarm && (first || kept) {
            let head = Head {
                hashes,
                ends,
                min,
                now,
                kept,
            };
            prewarm_head(&self.config, &mut state.entries, req, &bps, &head);
        }
        let had_entries = !state.entries.is_empty();
        // Reads: per breakpoint, look back at most `lookback` positions (A5).
        st.read.clear();
        let hit = read_breakpoints(
            self.config.lookback,
            &mut state.entries,
            &bps,
            hashes,
            now,
            &mut st.read,
        );
        let a = hit.map_or(0, |p| ends[p]);
        // Writes: A/B/C (A10) over the breakpoints long enough to be cached (A7).
        let cacheable = cacheable_breakpoints(&self.config, &bps, ends, min);
        let eligible: Vec<&Breakpoint> = bps
            .iter()
            .zip(&cacheable)
            .filter_map(|(b, &ok)| ok.then_some(b))
            .collect();
        let mut outcome = split_prompt(prompt, a, write_ends(&eligible, ends, a), rejected);
        if a < prompt {
            let start = hit.map_or(0, |p| p + 1);
            let reason_at = |reason, seg: usize| cursor.stop_at(n, cursor.start(seg), reason);
            outcome.stop = if first && !had_entries {
                cursor.stop_at(n, 0, common::cold_reason(others))
            } else if let Some(reason) = unread_entry(&state.entries, &hashes[start..], now) {
                reason_at(reason, start)
            } else if let Some(stop) = cursor.departure_stop(departure) {
                Some(stop)
            } else if !bps.is_empty() && eligible.is_empty() {
                reason_at(BreakReason::BelowMinimum, start)
            } else if departure == common::Departure::Extends {
                // The prompt extends the stream's previous one, which left nothing readable:
                // it was too short to cache, or no breakpoint covered it.
                let seen = cursor.start(known);
                if seen < min {
                    reason_at(BreakReason::BelowMinimum, start)
                } else {
                    reason_at(BreakReason::NotWritten, start)
                }
            } else if bps.is_empty() || !had_entries {
                reason_at(BreakReason::NotWritten, start)
            } else {
                // The first block no earlier prompt had at this place: the prefix changed there.
                match first_unseen(&state.seen, hashes, start, known, n) {
                    Some(q) => reason_at(BreakReason::PrefixChanged, q),
                    None => reason_at(BreakReason::NotWritten, start),
                }
            };
        }
        state.started = true;
        outcome
    }

    fn store(&mut self, req: &Request, outcome: &CacheOutcome, visible_at_ms: u64, done: u64) {
        let min = self.min_cacheable(&req.model);
        let salts = self.salts(req);
        let st = self.streams.stream(&req.stream);
        st.advance(req, salts);
        let bps = breakpoints(&self.config, req, st);
        let ttl_of: Vec<u64> = bps.iter().map(|&(_, t)| self.config.ttl_ms(t)).collect();
        let hashes = st.cursor.hashes();
        let ends = st.cursor.ends();
        let state = self
            .models
            .get_or_insert_with(&req.model, ModelState::default);
        state.started = true;
        let now = req.sent_at_ms;
        let cacheable = cacheable_breakpoints(&self.config, &bps, ends, min);
        for (k, &(i, _)) in bps.iter().enumerate() {
            if !cacheable[k] {
                continue;
            }
            // A breakpoint whose entry is live was a read (refreshed in `lookup`); any other
            // writes its entry, readable once the response begins (A13). Its TTL runs from when
            // the request finished: an idle gap is measured from the end of the response.
            let fresh = Entry {
                visible_at: visible_at_ms,
                expires_at: done.max(visible_at_ms).saturating_add(ttl_of[k]),
                ttl_ms: ttl_of[k],
            };
            match state.entries.get_mut(&hashes[i]) {
                // Read at this very block in `lookup`: its own TTL, renewed there, runs from
                // when this request finished.
                Some(e) if e.visible_at <= now && now < e.expires_at => {
                    let renewed = done.max(visible_at_ms).saturating_add(e.ttl_ms);
                    e.expires_at = e.expires_at.max(renewed);
                }
                // Still being written by a concurrent request: both write it.
                Some(e) if now < e.expires_at => {
                    e.expires_at = e.expires_at.max(fresh.expires_at);
                    e.ttl_ms = e.ttl_ms.max(fresh.ttl_ms);
                    e.visible_at = e.visible_at.min(visible_at_ms);
                }
                _ => {
                    state.entries.insert(hashes[i], fresh);
                }
            }
        }
        let _ = outcome;
        // What the request read lives its own TTL from when the request finished.
        for h in std::mem::take(&mut st.read) {
            if let Some(e) = state.entries.get_mut(&h) {
                let renewed = done.max(visible_at_ms).saturating_add(e.ttl_ms);
                e.expires_at = e.expires_at.max(renewed);
            }
        }
        // Only hashes this stream has not recorded yet: the earlier ones are there already.
        for h in &hashes[st.seen_ok..] {
            state.seen.insert(*h, ());
        }
        st.seen_ok = hashes.len();
    }
}

/// The TTL classes one request would write under `config`'s Claude Code layout, given `marks`,
/// the `cache_control` TTLs the scenario puts on its tools, system and context blocks (honoured
/// only with explicit breakpoints; `Scenario::cache_marks` lists them), and a warning when there
/// are two: Claude Code never bills 1 h and 5 m writes in one request, so such a layout describes
/// no real harness request.
pub fn mixed_ttl_warning(
    marks: impl IntoIterator<Item = Ttl>,
    config: &BreakpointConfig,
) -> Option<String> {
    let mut main: Vec<Ttl> = Vec::new();
    if config.layout == Layout::ClaudeCode {
        main.extend([config.system_ttl, config.message_ttl]);
    } else {
        main.push(config.message_ttl);
    }
    if config.explicit_breakpoints || config.layout == Layout::Explicit {
        main.extend(marks);
    }
    main.sort();
    main.dedup();
    (main.len() > 1).then(|| {
        format!(
            "a request would write both {} and {} cache entries; Claude Code writes one TTL class per request (main thread 1h or 5m, subagents 5m), so such a layout bills writes no real session shows",
            main[0].as_str(),
            main[1].as_str()
        )
    })
}

/// A request whose breakpoints cannot work as placed: a mark too far after the last entry the
/// prompt still matches (Anthropic's 20-block lookback), or more marks than the API accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutWarning {
    /// Index of the request in send order (0-based).
    pub request: usize,
    /// The request's stream (`main` or a subagent's name).
    pub stream: String,
    /// Scenario step (0-based) that made the request.
    pub step: usize,
    /// What goes wrong and what to do about it.
    pub message: String,
}

/// The lookback and breakpoint-budget problems of `requests` (one replay, in send order) under
/// `config`, ignoring TTLs and minimum lengths: the anthropic model's own account of why such a
/// request misses or is refused. Facts, from Anthropic's prompt-caching page
/// (<https://platform.claude.com/docs/en/build-with-claude/prompt-caching>; rules
/// A2, A5, A6 in docs/cache-models.md): a request may carry at most 4 `cache_control` breakpoints
/// (more is a 400 error), and a read checks the breakpoint's block and walks back at most 20
/// positions, the breakpoint's own counting as the first, so an entry written 20 or more blocks
/// before the nearest later breakpoint is not found. Checked with the docs search on
/// 2026-12-02: the page is stored, but the excerpts returned were its introduction, not these
/// sentences; third-party pages found then (Goose issue 8921, a Zapvol design note, SDK
/// validators dropping a fifth mark) state the same two limits.
pub fn layout_warnings(config: &BreakpointConfig, requests: &[Request]) -> Vec<LayoutWarning> {
    let mut written: HashMap<(String, u64), String> = HashMap::new();
    let mut out = Vec::new();
    for req in requests {
        let mut st = StreamState::default();
        st.advance(req, [0; 3]);
        let requested = requested_breakpoints(config, req, &st);
        let mut distinct = requested.clone();
        distinct.dedup_by_key(|b| b.0);
        let warn = |message: String| LayoutWarning {
            request: req.index,
            stream: req.stream.clone(),
            step: req.step,
            message,
        };
        let label = |i: usize| req.segments[i].label.clone();
        if distinct.len() > config.max_breakpoints {
            let extra = distinct[config.max_breakpoints].0;
            out.push(warn(format!(
                "{} cache_control marks ({}); mark {} on {} exceeds Anthropic's limit of {} breakpoints per request, and the API answers 400",
                distinct.len(),
                distinct.iter().map(|b| label(b.0)).collect::<Vec<_>>().join(", "),
                config.max_breakpoints + 1,
                label(extra),
                config.max_breakpoints
            )));
        }
        let bps = kept_breakpoints(config, requested);
        let hashes = chained_ids(req);
        let key = |p: usize| (req.model.clone(), hashes[p]);
        if config.lookback > 0 {
            let reached = bps
                .iter()
                .filter_map(|&(i, _)| {
                    let lo = (i + 1).saturating_sub(config.lookback);
                    (lo..=i).rev().find(|&p| written.contains_key(&key(p)))
                })
                .max();
            let last = (0..hashes.len())
                .rev()
                .find(|&p| written.contains_key(&key(p)));
            if let Some(p) = last.filter(|&p| reached.is_none_or(|r| r < p)) {
                if let Some(&(i, _)) = bps.iter().find(|&&(i, _)| i > p) {
                    out.push(warn(format!(
                        "the cache_control mark on {} is {} blocks after the last cached entry ({}); Anthropic reads back only {} blocks from a mark, so the entry is not found and everything after it is written again; add a mark at most {} blocks after it (e.g. on {})",
                        label(i),
                        i - p,
                        label(p),
                        config.lookback,
                        config.lookback - 1,
                        label(p + config.lookback - 1)
                    )));
                }
            }
        }
        for &(i, _) in &bps {
            written.insert(key(i), label(i));
        }
    }
    out
}

/// The chained content hash of every prefix of `req` (block `p`: blocks `0..=p`).
fn chained_ids(req: &Request) -> Vec<u64> {
    let mut h = 0u64;
    req.segments
        .iter()
        .map(|s| {
            h = xxhash_rust::xxh3::xxh3_64(&[h.to_le_bytes(), s.id.to_le_bytes()].concat());
            h
        })
        .collect()
}
