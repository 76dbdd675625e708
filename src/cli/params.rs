//! `--model`, `--ttl`, `--keepalive` and `--set PATH=VALUE`: parameters on the user's own
//! scenario files, shared by `run`, `report`, `compare` and `sweep`. The scenario edits live in
//! [`plancache::scenario::params`]; `--ttl` is a replay option (the TTL class of the `anthropic*`
//! cache models' breakpoints, as the sweep axis `ttl`).

use clap::Args;

use super::CliError;
use plancache::engine::ReplayEnv;
use plancache::prompt::Ttl;
use plancache::scenario::params::{Overrides, SetParam};

/// The parameter flags (flattened into each command's arguments).
#[derive(Debug, Clone, Default, Args)]
pub struct ParamArgs {
    /// Replay every scenario on this model instead of its `model` (prices and cache rules
    /// follow it; per-turn and plan models are kept: use --set for those).
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// TTL class of every breakpoint of the anthropic cache models: 5m or 1h.
    #[arg(long, value_name = "5m|1h", value_parser = ttl_class)]
    pub ttl: Option<Ttl>,
    /// Keep-alive pings every INTERVAL during every main-stream wait (`off`: none), e.g. 4m30s.
    #[arg(long, value_name = "INTERVAL", value_parser = keepalive)]
    pub keepalive: Option<String>,
    /// Set any scenario field before it is loaded (repeatable), e.g. 'steps[5].wait.duration=20m';
    /// list indices count from 1, as "step 5" in plancache's messages.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = set_param)]
    pub sets: Vec<SetParam>,
}

impl ParamArgs {
    /// The scenario edits the flags ask for.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            model: self.model.clone(),
            keepalive: self.keepalive.clone(),
            sets: self.sets.clone(),
        }
    }

    /// Whether any parameter flag was given.
    pub fn is_empty(&self) -> bool {
        self.ttl.is_none() && self.overrides().is_empty()
    }

    /// Applies the replay options (`--ttl`) to the environment.
    pub fn apply_env(&self, env: &mut ReplayEnv) {
        if let Some(ttl) = self.ttl {
            plancache::sweep::set_ttl(&mut env.caches, ttl);
        }
    }

    /// Refuses the flags where no scenario is replayed (`compare --current`).
    pub fn refuse(&self, why: &str) -> Result<(), CliError> {
        if self.is_empty() {
            return Ok(());
        }
        Err(CliError::input(format!(
            "--model, --ttl, --keepalive and --set change the scenarios replayed, but {why}\n  hint: drop them, or replay the scenarios (name them instead of --current)"
        )))
    }
}

fn ttl_class(s: &str) -> Result<Ttl, plancache::sweep::SweepError> {
    plancache::sweep::parse_ttl(s)
}

fn keepalive(s: &str) -> Result<String, plancache::scenario::KeepaliveError> {
    plancache::scenario::parse_keepalive(s).map(|_| s.trim().to_string())
}

fn set_param(s: &str) -> Result<SetParam, String> {
    SetParam::parse(s).map_err(|e| {
        let text = e.to_string();
        let prefix = format!("--set {}: ", s.split_once('=').map_or(s, |(p, _)| p).trim());
        let text = text.strip_prefix(&prefix).unwrap_or(&text);
        text.strip_prefix(&format!("--set {s}: "))
            .unwrap_or(text)
            .to_string()
    })
}
