//! Estimated sizes of Claude Code's tool definitions, for imported sessions.
//!
//! A transcript names the tools a session called but not their definitions, so an import cannot
//! say how much of the static prefix is the tools array and how much the system prompt. Without
//! that split every strategy that changes the tools array (toolset-swap, deferred-tools,
//! frozen-tools) replays an imported session exactly as permission-mode does. Claude Code's
//! published prompt pieces (data/claude-code-2.1.240-prompt-token-counts.csv, see
//! data/claude-code-prompt-pieces.md) give each built-in tool's description in parts
//! (`Tool Description: Bash`, `Tool Description: Bash (maintain cwd)`, ...): a tool's estimate is
//! the sum of its parts. The input schemas are not in the table, so the estimates are low for
//! tools with large schemas; the system block of the imported scenario holds the rest of the
//! static prefix, so prompt sizes are unchanged.

use std::collections::HashMap;
use std::sync::OnceLock;

const PIECES: &str = include_str!("../../data/claude-code-2.1.240-prompt-token-counts.csv");

/// The tools every Claude Code session is offered besides the ones it calls (the core toolset
/// of 2.x; plan mode's two tools among them, which toolset-swap removes).
pub const BUILT_IN: &[&str] = &[
    "Bash",
    "Glob",
    "Grep",
    "Read",
    "Edit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "Skill",
];

/// Names a transcript uses for a tool whose pieces are listed under another name.
fn listed_as(name: &str) -> &str {
    match name {
        "Read" => "ReadFile",
        "Task" => "Agent",
        "Skill" => "Invoke skill",
        other => other,
    }
}

/// Tool name -> estimated tokens: the tool's own row (`Tool Description: Edit`) where the table
/// has one (its parenthesised rows are then variants, e.g. `EnterPlanMode (ambiguous tasks)`),
/// else the sum of its parenthesised parts (Bash and Agent are listed only in parts).
fn table() -> &'static HashMap<String, u32> {
    static TABLE: OnceLock<HashMap<String, u32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut own: HashMap<String, u32> = HashMap::new();
        let mut parts: HashMap<String, u32> = HashMap::new();
        let mut rows = csv::Reader::from_reader(PIECES.as_bytes());
        for row in rows.records().flatten() {
            let (Some(section), Some(name), Some(tokens)) = (row.get(0), row.get(2), row.get(4))
            else {
                continue;
            };
            let Some(rest) = name.strip_prefix("Tool Description: ") else {
                continue;
            };
            if section != "Builtin Tool Descriptions" {
                continue;
            }
            let n: u32 = tokens.trim().parse().unwrap_or(0);
            match rest.split_once(" (") {
                Some((tool, _)) => *parts.entry(tool.trim().to_string()).or_insert(0) += n,
                None => {
                    own.insert(rest.trim().to_string(), n);
                }
            }
        }
        for (tool, n) in parts {
            own.entry(tool).or_insert(n);
        }
        own
    })
}

/// The estimated definition size of a Claude Code tool, in tokens (`None`: not a built-in tool
/// the published pieces list, such as an MCP server's).
pub fn estimate(name: &str) -> Option<u32> {
    table().get(listed_as(name)).copied().filter(|&n| n > 0)
}

/// Estimated sizes for `names`, scaled down in proportion where they would not fit in `budget`
/// (the static prefix they are part of). Unlisted tools get 0.
pub fn sized(names: &[String], budget: u64) -> Vec<u32> {
    let raw: Vec<u64> = names
        .iter()
        .map(|n| estimate(n).unwrap_or(0) as u64)
        .collect();
    let sum: u64 = raw.iter().sum();
    if sum <= budget {
        return raw.iter().map(|&n| n as u32).collect();
    }
    raw.iter()
        .map(|&n| (n as u128 * budget as u128 / sum as u128) as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_estimates_sum_their_published_parts() {
        // Single-piece tools, as the table lists them.
        assert_eq!(estimate("EnterPlanMode"), Some(1296));
        assert_eq!(estimate("ExitPlanMode"), Some(648));
        assert_eq!(estimate("Glob"), Some(90));
        // `Read` is listed as `ReadFile`: 586, plus its `ReadFile compact` variant is a tool of
        // its own name (not a part), so it is not added.
        assert_eq!(estimate("Read"), Some(586));
        // Edit: its own row, 392 (`Edit single replacement` is another name, not a part).
        assert_eq!(estimate("Edit"), Some(392));
        // Bash has no row of its own, only parts: their sum is over 2,469 (the git-instructions
        // part alone).
        assert!(estimate("Bash").unwrap() > 2469);
        assert_eq!(estimate("mcp__db__query"), None);
    }

    #[test]
    fn estimates_scale_down_to_fit_the_static_prefix() {
        let names: Vec<String> = ["EnterPlanMode", "ExitPlanMode", "mcp__x"]
            .map(String::from)
            .to_vec();
        assert_eq!(sized(&names, 10_000), vec![1296, 648, 0]);
        // 1,944 does not fit in 972: halved.
        assert_eq!(sized(&names, 972), vec![648, 324, 0]);
    }
}
