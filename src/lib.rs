//! plancache: what does a plan-mode design cost in prompt-cache hits, recomputed tokens, money and
//! latency?
//!
//! A [`scenario`] scripts one agent session. The reference state machine in [`plan_mode`] decides
//! what happens at every step; a [`strategy`] renders each assistant step as a [`prompt::Request`]
//! of segments; a [`cache`] model prices it; [`engine`] runs the loop and [`metrics`] holds the
//! rows that [`export`] writes.

pub mod account;
pub mod budget;
pub mod cache;
pub mod chart;
pub mod cli;
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
pub mod signals;
pub mod strategy;
pub mod sweep;
pub mod trace;
pub mod util;
pub mod validate;
pub mod workload;
