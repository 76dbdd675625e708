use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a tool only reads or can change the user's files and system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Only reads: allowed in plan mode.
    #[default]
    Read,
    /// Can change files or the system: refused in plan mode.
    Write,
}

/// Which plan-mode transition an approval answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// Entering plan mode.
    Enter,
    /// Leaving it: the plan is approved.
    Exit,
}

/// Permission modes of the harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Write tools ask the user unless an allowed prompt covers the call.
    #[default]
    Default,
    /// File edits are allowed; other write tools ask.
    AcceptEdits,
    /// Read-only exploration; write tools are denied (the plan file excepted).
    Plan,
    /// Everything is allowed (classifier-approved).
    Auto,
    /// Everything is allowed.
    BypassPermissions,
}

impl Mode {
    /// The mode's name as Claude Code writes it (`plan`, `acceptEdits`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::Auto => "auto",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
