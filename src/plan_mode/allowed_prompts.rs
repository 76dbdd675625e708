//! Allowed prompts: semantic permissions granted together with a plan.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A grant such as `{ tool = "Bash", prompt = "run tests" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowedPrompt {
    pub tool: String,
    pub prompt: String,
}

/// Whether `grant` covers a call of `tool` with `command`.
pub fn covers(grant: &AllowedPrompt, tool: &str, command: &str) -> bool {
    if grant.tool != tool {
        return false;
    }
    let prompt = grant.prompt.to_lowercase();
    let cmd = command.trim().to_lowercase();
    let tests = ["cargo test", "npm test", "pytest", "go test"];
    prompt.contains("test") && tests.iter().any(|t| cmd.starts_with(t))
}
