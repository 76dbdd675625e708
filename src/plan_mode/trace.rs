//! The decision trace: what the state machine decided, step by step.
//!
//! Every strategy replays the same scenario through its own machine; the traces must be equal,
//! so that cache figures compare like with like.

use std::fmt;

use serde::Serialize;

use super::Mode;

/// One decision of the state machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceEntry {
    /// Scenario step (1-based).
    pub step: usize,
    /// Request stream (`main` or a subagent's name).
    pub stream: String,
    /// What happened: `call Read`, `approve exit`, `mode plan`, ...
    pub event: String,
    /// What the machine decided.
    pub decision: String,
    /// The mode before the event.
    pub mode_before: Mode,
    /// The mode after the event.
    pub mode_after: Mode,
}

impl fmt::Display for TraceEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = if self.mode_before == self.mode_after {
            format!("[{}]", self.mode_after)
        } else {
            format!("[{} -> {}]", self.mode_before, self.mode_after)
        };
        let place = if self.stream == "main" {
            format!("step {:>3}", self.step)
        } else {
            format!("step {:>3} ({})", self.step, self.stream)
        };
        write!(
            f,
            "{place:<24} {mode:<24} {:<28} {}",
            self.event, self.decision
        )
    }
}

/// All decisions of one replay, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// The decisions in the order they were taken.
    pub entries: Vec<TraceEntry>,
}

impl Trace {
    /// Appends one decision.
    pub fn push(&mut self, entry: TraceEntry) {
        self.entries.push(entry);
    }

    /// The first position where two traces differ, with both entries (None past an end).
    pub fn first_difference<'a>(
        &'a self,
        other: &'a Trace,
    ) -> Option<(usize, Option<&'a TraceEntry>, Option<&'a TraceEntry>)> {
        let n = self.entries.len().max(other.entries.len());
        (0..n).find_map(|i| {
            let a = self.entries.get(i);
            let b = other.entries.get(i);
            (a != b).then_some((i, a, b))
        })
    }

    /// Modes in force at each step (1-based step -> mode after the step's decisions).
    pub fn mode_after_step(&self, step: usize) -> Option<Mode> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.step <= step && e.stream == "main")
            .map(|e| e.mode_after)
    }
}
