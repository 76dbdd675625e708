//! The scenario of one stream, from its sized prefix and its steps.

use super::stream::Prefix;
use super::{clamp, is_write, StreamInputs, CONTEXT_BLOCK};
use crate::import::{Stream, StreamKind};
use crate::plan_mode::Access;
use crate::prompt::Encoding;
use crate::scenario::{ContextBlock, Reminders, Scenario, Step, Timing, ToolDef};

/// The scenario: the stream's tools and system as sized, its early context block when an edit
/// needs one, and its steps. Reminders and plan-tool results are part of the recorded growth
/// (zero-sized here so they are not counted twice), and time comes from the recorded
/// timestamps (wait steps), not from defaults.
pub(super) fn scenario(
    s: &Stream,
    inputs: &StreamInputs<'_>,
    model: &str,
    prefix: &Prefix,
    context: Option<u64>,
    requests: usize,
    steps: Vec<Step>,
) -> Scenario {
    Scenario {
        name: format!("{}/{}", inputs.t.name, s.name),
        description: format!(
            "Imported from {} ({} stream, {requests} requests)",
            inputs.t.source,
            match s.kind {
                StreamKind::Main => "main",
                StreamKind::Agent => "subagent",
            },
        ),
        model: model.to_string(),
        plan_model: None,
        tokenizer: Encoding::O200kBase,
        seed: 0,
        initial_mode: s.initial_mode,
        auto_available: true,
        external_channels: false,
        plans_dir: "plans".into(),
        system: prefix.system.clone(),
        plan_system: None,
        context: context
            .map(|n| {
                vec![ContextBlock {
                    name: CONTEXT_BLOCK.into(),
                    tokens: Some(clamp(n)),
                    ..ContextBlock::default()
                }]
            })
            .unwrap_or_default(),
        deferred_tools: Default::default(),
        ttl: None,
        keepalive_max_tokens: 1,
        tools: tools(inputs.tool_names, &prefix.tool_tokens),
        reminders: Reminders::recorded(),
        team: None,
        timing: Timing::recorded(),
        steps,
    }
}

/// The stream kind's tools. The transcript does not record tool definitions: each size is an
/// estimate (see `tool_sizes`), 0 where none is published; the system blocks carry the rest of
/// the static prefix.
fn tools(names: &[String], sizes: &[u32]) -> Vec<ToolDef> {
    names
        .iter()
        .zip(sizes)
        .map(|(n, &size)| ToolDef {
            name: n.clone(),
            access: Some(if is_write(n) {
                Access::Write
            } else {
                Access::Read
            }),
            tokens: Some(size),
            description: None,
            schema: None,
            deferred: false,
            cache_control: None,
        })
        .collect()
}
