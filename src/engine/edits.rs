//! Mid-session edits of a stream's prompt head: a system block replaced or patched, tools
//! re-rendered or reordered. They change what the next request renders, never a decision.

use super::stream::Stream;
use super::ReplayError;
use crate::prompt::{Role, TokenSource};
use crate::scenario::{Session, SystemEdit, ToolDef};

/// An edit that cannot apply at this point of the replay (the loader catches most of these).
pub(super) struct EditError {
    message: String,
    hint: String,
}

impl EditError {
    fn new(message: String, hint: &str) -> Self {
        EditError {
            message,
            hint: hint.to_string(),
        }
    }

    /// The error at a step (`place`: `file: step 7 (line 42)`).
    pub(super) fn at(self, place: &str) -> ReplayError {
        ReplayError {
            place: place.to_string(),
            message: self.message,
            hint: self.hint,
        }
    }
}

/// Puts an `edit_system` (at `step`, 0-based) in force on `stream`; returns the decision text.
/// With `inline` the system prompt stays as it is and the change is appended to the
/// conversation as a system message: the whole new block for a replacement, the patched tokens
/// for a patch (the decision text is the same either way: the trace is strategy-independent).
pub(super) fn edit_system(
    session: &Session,
    stream: &mut Stream,
    edit: &SystemEdit,
    step: usize,
    inline: bool,
) -> Result<String, EditError> {
    let k = edit.block.wrapping_sub(1);
    let original = session.system.get(k).cloned().ok_or_else(|| {
        EditError::new(
            format!(
                "edit_system block {} does not exist: the system prompt has {} block(s)",
                edit.block,
                session.system.len()
            ),
            "number the blocks of `system` from 1",
        )
    })?;
    let current = stream.system_block(&original);
    let (segment, decision) = match (edit.replacement(), edit.patch_at, edit.patch_tokens) {
        (Some(content), _, _) => {
            let seg = session
                .system_replacement(k, &content, original.breakpoint, step)
                .map_err(|e| EditError::new(e.message, e.hint.as_deref().unwrap_or_default()))?;
            let decision = format!("block replaced ({} tokens)", seg.len());
            (seg, decision)
        }
        (None, Some(at), Some(len)) => {
            let end = u64::from(at) + u64::from(len);
            let seg = session
                .system_patch(&current, at, len, step)
                .ok_or_else(|| {
                    EditError::new(
                        format!(
                            "the patch spans tokens {at}..{end} but system block {} has {} tokens",
                            edit.block,
                            current.len()
                        ),
                        "keep patch_at + patch_tokens within the block",
                    )
                })?;
            (seg, format!("tokens {at}..{end} patched"))
        }
        _ => {
            return Err(EditError::new(
                "edit_system needs a replacement or a patch".into(),
                "e.g. edit_system = { block = 1, patch_at = 1830, patch_tokens = 12 }",
            ))
        }
    };
    if inline {
        let size = match (edit.replacement(), edit.patch_tokens) {
            (None, Some(len)) => len,
            _ => segment.len() as u32,
        };
        stream.conversation.push(session.message(
            Role::User,
            &format!("step{}:system-message:system#{}", step + 1, edit.block),
            TokenSource::Count(size),
        ));
    } else {
        stream.edit_system_block(&original, segment);
    }
    Ok(decision)
}

/// `reorder_tools`: the named tools take the positions the named tools occupy, in the given
/// order; the others stay where they are.
pub(super) fn reorder_tools(stream: &mut Stream, names: &[String]) -> Result<(), EditError> {
    let slots: Vec<usize> = stream
        .tools
        .iter()
        .enumerate()
        .filter(|(_, t)| names.contains(&t.name))
        .map(|(i, _)| i)
        .collect();
    let moved: Vec<_> = names
        .iter()
        .filter_map(|n| stream.tools.iter().find(|t| t.name == *n).cloned())
        .collect();
    if slots.len() != names.len() || moved.len() != names.len() {
        return Err(EditError::new(
            "reorder_tools names a tool that is not offered, or one twice".into(),
            "list distinct tools in force at this step",
        ));
    }
    for (slot, tool) in slots.into_iter().zip(moved) {
        stream.tools[slot] = tool;
    }
    Ok(())
}

/// `replace_tool` (at `step`, 0-based): the tool's new definition at its position; returns its
/// size in tokens.
pub(super) fn replace_tool(
    session: &Session,
    stream: &mut Stream,
    def: &ToolDef,
    step: usize,
) -> Result<usize, EditError> {
    let Some(pos) = stream.tools.iter().position(|t| t.name == def.name) else {
        return Err(EditError::new(
            format!("replace_tool `{}`: no such tool is offered", def.name),
            "add it with add_tool instead",
        ));
    };
    let tool = session
        .replaced_tool(def, &stream.tools[pos], step)
        .map_err(|e| EditError::new(e.message, e.hint.as_deref().unwrap_or_default()))?;
    let size = tool.segment.len();
    stream.tools[pos] = tool;
    Ok(size)
}
