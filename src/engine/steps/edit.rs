//! Mid-session edits of a stream's prompt head: a context block, a system block replaced or
//! patched, tools added, withdrawn, re-rendered or reordered. They change what the next request
//! renders, never a plan-mode decision.

use std::sync::Arc;

use super::super::replayer::{At, Replayer};
use super::super::stream::Stream;
use super::super::ReplayError;
use super::Decisions;
use crate::prompt::{Role, Segment, TokenSource};
use crate::scenario::{ContextBlock, SystemEdit, ToolDef};

/// An edit's decision on the stream, the mode unchanged.
fn decided(
    r: &Replayer<'_>,
    at: &At,
    stream: &Stream,
    event: String,
    decision: String,
) -> Decisions {
    let mode = r.machine.mode();
    vec![at.entry(&stream.name, event, decision, mode, mode)]
}

/// `edit_context`: a named early context block replaced where it sits.
pub(super) fn context(
    r: &mut Replayer<'_>,
    at: &At,
    block: &ContextBlock,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let seg = r
        .session
        .context_block(block, at.step)
        .map_err(|e| at.scenario_err(e))?;
    let size = seg.len();
    let Some((_, old)) = stream.context.iter_mut().find(|(n, _)| *n == block.name) else {
        return Err(at.unchecked(format!("no context block named `{}`", block.name)));
    };
    if let Some(pos) = stream.conversation.iter().position(|s| Arc::ptr_eq(s, old)) {
        stream.conversation[pos] = seg.clone();
        stream.dirty_from = stream.dirty_from.min(pos);
    }
    *old = seg;
    let event = format!("edit context {}", block.name);
    Ok(decided(
        r,
        at,
        stream,
        event,
        format!("block replaced ({size} tokens)"),
    ))
}

/// `add_tool`: offered from now on (appended; the strategy may announce it).
pub(super) fn add_tool(
    r: &mut Replayer<'_>,
    at: &At,
    def: &ToolDef,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let tool = r.session.build_tool(def).map_err(|e| at.scenario_err(e))?;
    stream
        .conversation
        .extend(r.strategy.tool_added(r.session, &tool, at.step));
    stream.tools_mut().push(tool);
    let event = format!("add tool {}", def.name);
    Ok(decided(
        r,
        at,
        stream,
        event,
        "tool offered from now on".into(),
    ))
}

/// `remove_tool`: withdrawn wherever it sits.
pub(super) fn remove_tool(
    r: &mut Replayer<'_>,
    at: &At,
    name: &String,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    stream.tools_mut().retain(|t| t.name != *name);
    stream.loaded.remove(name);
    let event = format!("remove tool {name}");
    Ok(decided(r, at, stream, event, "tool withdrawn".into()))
}

/// `edit_system`: a system block replaced or patched. Under a strategy that edits inline the
/// system prompt stays as it is and the change is appended to the conversation as a system
/// message: the whole new block for a replacement, the patched tokens for a patch (the decision
/// text is the same either way: the trace is strategy-independent).
pub(super) fn system(
    r: &mut Replayer<'_>,
    at: &At,
    edit: &SystemEdit,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let session = r.session;
    let original = session
        .system
        .get(edit.block.wrapping_sub(1))
        .cloned()
        .ok_or_else(|| at.unchecked(format!("edit_system block {} does not exist", edit.block)))?;
    let (segment, decision) = edited_block(r, at, stream, edit, &original)?;
    if r.strategy.system_edit_inline() {
        let size = match (edit.replacement(), edit.patch_tokens) {
            (None, Some(len)) => len,
            _ => segment.len() as u32,
        };
        stream.conversation.push(session.message(
            Role::User,
            &format!("step{}:system-message:system#{}", at.step + 1, edit.block),
            TokenSource::Count(size),
        ));
    } else {
        stream.edit_system_block(&original, segment);
    }
    let event = format!("edit system #{}", edit.block);
    Ok(decided(r, at, stream, event, decision))
}

/// The new version of system block `original` and the decision text.
fn edited_block(
    r: &Replayer<'_>,
    at: &At,
    stream: &Stream,
    edit: &SystemEdit,
    original: &Arc<Segment>,
) -> Result<(Arc<Segment>, String), ReplayError> {
    let session = r.session;
    let current = stream.system_block(original);
    match (edit.replacement(), edit.patch_at, edit.patch_tokens) {
        (Some(content), _, _) => {
            let k = edit.block - 1;
            let seg = session
                .system_replacement(k, &content, original.breakpoint, at.step)
                .map_err(|e| at.scenario_err(e))?;
            let decision = format!("block replaced ({} tokens)", seg.len());
            Ok((seg, decision))
        }
        (None, Some(at_token), Some(len)) => {
            let end = u64::from(at_token) + u64::from(len);
            let seg = session
                .system_patch(&current, at_token, len, at.step)
                .ok_or_else(|| ReplayError {
                    place: at.place(),
                    message: format!(
                        "the patch spans tokens {at_token}..{end} but system block {} has {} tokens",
                        edit.block,
                        current.len()
                    ),
                    hint: "keep patch_at + patch_tokens within the block".into(),
                })?;
            Ok((seg, format!("tokens {at_token}..{end} patched")))
        }
        _ => Err(at.unchecked("edit_system without a replacement or a patch".into())),
    }
}

/// `reorder_tools`: the named tools take the positions the named tools occupy, in the given
/// order; the others stay where they are.
pub(super) fn reorder_tools(
    r: &mut Replayer<'_>,
    at: &At,
    names: &[String],
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let slots: Vec<usize> = stream
        .tools()
        .iter()
        .enumerate()
        .filter(|(_, t)| names.contains(&t.name))
        .map(|(i, _)| i)
        .collect();
    let moved: Vec<_> = names
        .iter()
        .filter_map(|n| stream.tools().iter().find(|t| t.name == *n).cloned())
        .collect();
    if slots.len() != names.len() || moved.len() != names.len() {
        return Err(
            at.unchecked("reorder_tools names a tool that is not offered, or one twice".into())
        );
    }
    for (slot, tool) in slots.into_iter().zip(moved) {
        stream.tools_mut()[slot] = tool;
    }
    let event = format!("reorder tools {}", names.join(", "));
    Ok(decided(r, at, stream, event, "tools reordered".into()))
}

/// `replace_tool`: the tool's new definition at its position (the strategy may announce it).
pub(super) fn replace_tool(
    r: &mut Replayer<'_>,
    at: &At,
    def: &ToolDef,
    stream: &mut Stream,
) -> Result<Decisions, ReplayError> {
    let Some(pos) = stream.tools().iter().position(|t| t.name == def.name) else {
        return Err(at.unchecked(format!(
            "replace_tool `{}`: no such tool is offered",
            def.name
        )));
    };
    let tool = r
        .session
        .replaced_tool(def, &stream.tools()[pos], at.step)
        .map_err(|e| at.scenario_err(e))?;
    let size = tool.segment.len();
    stream.tools_mut()[pos] = tool;
    let added = r
        .strategy
        .tool_replaced(r.session, &stream.tools()[pos], at.step);
    stream.conversation.extend(added);
    let event = format!("replace tool {}", def.name);
    let decision = format!("definition re-rendered ({size} tokens)");
    Ok(decided(r, at, stream, event, decision))
}
