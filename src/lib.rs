//! plancache: what does a plan-mode design cost in prompt-cache hits, recomputed tokens, money and
//! latency?
//!
//! A [`scenario`] scripts one agent session. The reference state machine in [`plan_mode`] decides
//! what happens at every step; a [`strategy`] renders each assistant step as a [`prompt::Request`]
//! of segments; a [`cache`] model prices it; [`engine`] runs the loop and [`metrics`] holds the
//! rows that [`export`] writes.
//!
//! # Example
//!
//! Replay the bundled `auth-plan` session under two plan-mode designs against Anthropic's
//! prompt cache and read the per-session figures (the rows of `summary.csv`):
//!
//! ```
//! use std::path::Path;
//! use plancache::{engine, scenario::Session, strategy};
//!
//! let session = Session::load(Path::new("scenarios/auth-plan.toml"), None)?;
//! let designs = strategy::parse_list("toolset-swap,permission-mode")?;
//! let caches = ["anthropic".to_string()];
//! let run = engine::run(&[session], &designs, &caches, &engine::ReplayEnv::default())?;
//! let rows = run.summaries();
//! let (swap, permission) = (&rows[0], &rows[1]);
//! assert_eq!(permission.strategy, "permission-mode");
//! // The figures of results/report/summary.csv: 7 requests each; permission-mode keeps the
//! // tool list fixed, so 87052 of its 105591 prompt tokens are cache reads (hit rate
//! // 87052 / 105591 = 0.8244), against 64734 of 98471 (0.6574) when the tools are swapped.
//! assert_eq!((permission.requests, permission.prompt_tokens), (7, 105_591));
//! assert_eq!(permission.cached_tokens, 87_052);
//! assert_eq!((swap.prompt_tokens, swap.cached_tokens), (98_471, 64_734));
//! assert!(permission.cost_usd < swap.cost_usd);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The command line (`plancache run`, `report`, `compare`, ...) is the binary's, not part of
//! the library; its guide is the README.
//!
//! # Layers
//!
//! Each module belongs to one layer and imports only the layers below it (docs/architecture.md
//! has the table; `tests/layering.rs` holds it), bottom-up:
//!
//! - **base** ([`util`], [`budget`], `signals`): small pure helpers (slugs, durations,
//!   did-you-mean, the input-file error), the limits on what one session may declare with the
//!   bounded reader of every input file, and the interrupt flag the writers check.
//! - **prompt** ([`prompt`]): what a request is (segments, token sources, the memoized
//!   tokenizer).
//! - **cache** ([`cache`]): one model per provider or engine behind [`cache::CacheModel`], one
//!   registry line each, their configuration, prices and latency. A model sees requests and its
//!   own configuration, never a scenario.
//! - **plan_mode** ([`plan_mode`]): the reference state machine that checks every replay.
//! - **scenario** ([`scenario`]): the scenario file format, its loading and checks, `--set`
//!   parameters, the generator, and [`scenario::Session`] (a scenario as ready segments).
//! - **strategy** ([`strategy`]): one plan-mode design per file, each rendering a session's
//!   requests.
//! - **metrics** ([`metrics`]): the rows of every request and the per-session summaries.
//! - **engine** ([`engine`]): the replay of a session under a strategy and a cache model, and
//!   [`engine::schedule`], many streams on one cache and one clock.
//! - **sources** ([`import`], [`trace`]): recorded sessions (Claude Code, Codex) and block-hash
//!   traces turned into scenarios; they say what was sent, never what it cost.
//! - **analyses** ([`compare`], [`sweep`], [`requests`], [`mooncake`], [`validate`]): the CI gate,
//!   sweeps, raw API request logs, Mooncake traces and validation against billed usage.
//! - **output** ([`export`], [`chart`]): tables, CSV, JSON, Markdown, charts and the report.
//! - **applications** ([`account`], [`workload`]): a whole account's sessions with what-ifs, and
//!   many sessions on one serving cache with capacity and TTL curves.

#![warn(missing_docs)]

pub mod account;
pub mod budget;
pub mod cache;
pub mod chart;
pub mod compare;
pub mod engine;
pub mod export;
pub mod import;
pub mod metrics;
pub mod mooncake;
pub mod plan_mode;
pub mod prompt;
pub mod requests;
pub mod scenario;
pub(crate) mod signals;
pub mod strategy;
pub mod sweep;
pub mod trace;
pub mod util;
pub mod validate;
pub mod workload;
