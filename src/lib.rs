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
//! The command line (`plancache run`, `report`, `compare`, ...) is [`cli`]; its guide is the
//! README.

pub mod account;
#[warn(missing_docs)]
pub mod budget;
pub mod cache;
#[warn(missing_docs)]
pub mod chart;
pub mod cli;
#[warn(missing_docs)]
pub mod compare;
pub mod engine;
#[warn(missing_docs)]
pub mod export;
pub mod import;
pub mod metrics;
#[warn(missing_docs)]
pub mod mooncake;
#[warn(missing_docs)]
pub mod plan_mode;
pub mod prompt;
#[warn(missing_docs)]
pub mod requests;
pub mod scenario;
#[warn(missing_docs)]
pub mod signals;
#[warn(missing_docs)]
pub mod strategy;
#[warn(missing_docs)]
pub mod sweep;
pub mod trace;
#[warn(missing_docs)]
pub mod util;
pub mod validate;
pub mod workload;
