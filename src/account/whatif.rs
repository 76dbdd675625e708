//! The what-if: the account's sessions replayed under every strategy, TTL and keep-alive
//! setting, against the setting the harness actually ran.

use std::time::Duration;

use super::figures::Counters;
use super::replay::{Keepalive, Setting};
use crate::prompt::Ttl;

/// Totals of one setting over the sessions every setting could replay.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIf {
    /// The strategy, TTL and keep-alive replayed.
    pub setting: Setting,
    /// The sessions' requests (pings not included).
    pub predicted: Counters,
    /// The price of the requests' output in dollars.
    pub output_usd: f64,
    /// Keep-alive pings sent.
    pub pings: u64,
    /// Their input-side counters.
    pub ping_cost: Counters,
    /// The price of their output in dollars.
    pub ping_output_usd: f64,
    /// Requests predicted as breaks.
    pub breaks: usize,
}

impl WhatIf {
    /// Zero totals for `setting`.
    pub fn new(setting: Setting) -> WhatIf {
        WhatIf {
            setting,
            predicted: Counters::default(),
            output_usd: 0.0,
            pings: 0,
            ping_cost: Counters::default(),
            ping_output_usd: 0.0,
            breaks: 0,
        }
    }

    /// Everything the setting costs in dollars: requests, output and pings.
    pub fn total_usd(&self) -> f64 {
        self.predicted.usd + self.output_usd + self.ping_cost.usd + self.ping_output_usd
    }
}

/// The grid: every strategy × TTL × keep-alive (`None` = off). Parsing errors name the flag.
pub fn grid(strategies: &[String], ttls: &[Ttl], keepalives: &[Option<Keepalive>]) -> Vec<Setting> {
    let mut out = Vec::new();
    for s in strategies {
        for &t in ttls {
            for &k in keepalives {
                out.push(Setting {
                    strategy: s.clone(),
                    ttl: Some(t),
                    keepalive: k,
                });
            }
        }
    }
    out
}

/// `5m` / `1h`.
pub fn parse_ttl(s: &str) -> Result<Ttl, super::AccountError> {
    match s.trim() {
        "5m" => Ok(Ttl::FiveMinutes),
        "1h" => Ok(Ttl::OneHour),
        other => Err(super::AccountError::Ttl(other.to_string())),
    }
}

/// `off` or a ping interval such as `4m30s`.
pub fn parse_keepalive(s: &str, limit: Duration) -> Result<Option<Keepalive>, super::AccountError> {
    let every = crate::scenario::parse_keepalive(s.trim())?;
    Ok(every.map(|every| Keepalive { every, limit }))
}
