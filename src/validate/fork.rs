//! Forks of the main thread, as the shared cache sees them.
//!
//! Claude Code's compaction, prompt-suggestion and aside-question helpers (subagent files
//! `agent-acompact-*`, `agent-aprompt_suggestion-*`, `agent-aside_question-*`) are cache-safe
//! forks: their first request re-sends the main thread's prompt as it stood (its tools, system
//! prompt and messages) with one instruction appended, so it reads the main thread's entries;
//! a later request of the fork extends the fork's own previous prompt. A fork's scenario file
//! cannot say that (its segments are its own), so the shared cache is fed requests built from
//! the main thread's: the main thread's latest request sent before the fork, followed by its
//! reply when that had finished (the reply is then the conversation's last message), cut to whole
//! segments that fit the fork's recorded prompt, and one tail segment making up the rest.

use std::sync::Arc;

use crate::prompt::{Level, Request, Role, Segment, SegmentKind, TokenSource, Tokenizer};

/// Builds the request the cache sees for request `k` of a fork, whose recorded prompt is
/// `prompt` tokens: from `base` (the main thread's latest request for `k == 0`, else the fork's
/// own previous request as the cache saw it) and, `with_reply`, its reply, keeping the leading
/// whole segments that fit and appending one tail segment so the prompt is exactly `prompt`
/// tokens.
pub fn fork_request(
    own: &Request,
    base: &Request,
    with_reply: bool,
    prompt: u64,
    k: usize,
    tokenizer: &Tokenizer,
) -> Request {
    let mut segments: Vec<Arc<Segment>> = Vec::with_capacity(base.segments.len() + 2);
    let mut kept = 0u64;
    let reply = if with_reply { &base.reply[..] } else { &[] };
    for s in base.segments.iter().chain(reply) {
        let n = s.len() as u64;
        if kept + n > prompt {
            break;
        }
        kept += n;
        segments.push(s.clone());
    }
    let tail = prompt - kept;
    if tail > 0 {
        let source = TokenSource::Count(tail.min(u32::MAX as u64) as u32);
        let label = format!("{}:fork-tail{}", own.stream, k + 1);
        let id = Tokenizer::content_id(&label, &source);
        segments.push(Arc::new(Segment {
            id,
            level: Level::Messages,
            kind: SegmentKind::Message(Role::User),
            label,
            tokens: tokenizer.tokens(id, &source),
            breakpoint: None,
        }));
    }
    Request {
        segments,
        // Settings that salt cache levels are the main thread's: a fork sends them unchanged.
        settings: base.settings.clone(),
        // The fork's own model: a fork of a thread that switched models runs on its own.
        ..own.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{Encoding, RequestSettings};

    fn seg(label: &str, n: u32, tok: &Tokenizer) -> Arc<Segment> {
        let source = TokenSource::Count(n);
        let id = Tokenizer::content_id(label, &source);
        Arc::new(Segment {
            id,
            level: Level::Messages,
            kind: SegmentKind::Message(Role::User),
            label: label.into(),
            tokens: tok.tokens(id, &source),
            breakpoint: None,
        })
    }

    fn req(stream: &str, segs: Vec<Arc<Segment>>) -> Request {
        Request {
            index: 0,
            stream: stream.into(),
            step: 0,
            model: "claude-opus-4-6".into(),
            sent_at_ms: 0,
            segments: segs,
            settings: RequestSettings::default(),
            reply: Vec::new(),
            output_tokens: 0,
        }
    }

    #[test]
    fn a_fork_re_sends_the_main_prompt_and_appends_its_instruction() {
        let tok = Tokenizer::new(Encoding::O200kBase);
        let main = req(
            "main",
            vec![
                seg("a", 1000, &tok),
                seg("b", 500, &tok),
                seg("c", 300, &tok),
            ],
        );
        let own = req("agent-acompact-1", vec![seg("x", 1900, &tok)]);
        // 1,900 recorded: the whole main prompt (1,800) plus a 100-token instruction.
        let f = fork_request(&own, &main, false, 1900, 0, &tok);
        assert_eq!(f.prompt_tokens(), 1900);
        assert_eq!(f.segments.len(), 4);
        assert!(f.segments[..3]
            .iter()
            .zip(&main.segments)
            .all(|(a, b)| a.id == b.id));
        assert_eq!(f.stream, "agent-acompact-1");
        // 1,600 recorded (a fork of an earlier state): the first two segments (1,500) and 100.
        let f = fork_request(&own, &main, false, 1600, 0, &tok);
        assert_eq!(f.segments.len(), 3);
        assert_eq!(f.segments[2].len(), 100);
    }

    #[test]
    fn a_fork_after_the_reply_re_sends_the_reply_too() {
        let tok = Tokenizer::new(Encoding::O200kBase);
        let mut main = req("main", vec![seg("a", 1000, &tok), seg("b", 500, &tok)]);
        main.reply = vec![seg("reply", 200, &tok)];
        let own = req("agent-aprompt_suggestion-1", vec![seg("x", 1750, &tok)]);
        // Sent after the reply finished: 1,500 of prompt, the 200-token reply, 50 of instruction.
        let f = fork_request(&own, &main, true, 1750, 0, &tok);
        assert_eq!(f.segments.len(), 4);
        assert_eq!(f.segments[2].id, main.reply[0].id);
        assert_eq!(f.segments[3].len(), 50);
        // Sent while the reply streamed: the reply is not in its prompt, the tail is 250 tokens.
        let f = fork_request(&own, &main, false, 1750, 0, &tok);
        assert_eq!(f.segments.len(), 3);
        assert_eq!(f.segments[2].len(), 250);
    }
}
