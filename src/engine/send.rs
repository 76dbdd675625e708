//! The one sender: every request a step makes (a reply, a compaction's summarisation, a
//! keep-alive ping, an unlogged attempt) is built from its stream's head and conversation,
//! priced against the cache, tagged with its kind and recorded here.

use std::sync::Arc;

use super::price::price;
use super::replayer::{At, Replayer};
use super::stream::Stream;
use super::ReplayError;
use crate::cache::{with_hint, SentHint};
use crate::metrics::RequestKind;
use crate::plan_mode::Mode;
use crate::prompt::{Request, RequestSettings, Segment};

/// How a request is sent.
pub(super) enum Tag {
    /// Logged as a row of this kind.
    Row(RequestKind),
    /// Sent and cached but neither logged nor part of the conversation (an away summary's
    /// instruction, a retried attempt): the stream's next request reuses `kept`, the prompt
    /// without the request's own tail.
    Unlogged(Vec<Arc<Segment>>),
}

impl Replayer<'_> {
    /// The tools and system blocks of `stream`'s next request in `mode` (system edits in force
    /// applied), and the model that serves it.
    pub(super) fn head(&self, stream: &Stream, mode: Mode) -> (Vec<Arc<Segment>>, String) {
        let session = self.session;
        let mut segments =
            self.strategy
                .tools_for(session, &stream.initial_tools, stream.tools(), mode);
        let strategy_model = self.strategy.model(session, mode);
        let model = match &stream.agent {
            Some(agent) => {
                segments.extend(agent.system.iter().cloned());
                agent.model.clone().unwrap_or(strategy_model)
            }
            None => {
                segments.extend(
                    self.strategy
                        .system(session, mode)
                        .iter()
                        .map(|s| stream.system_block(s)),
                );
                strategy_model
            }
        };
        (segments, model)
    }

    /// A request of `stream` at step `at`, sent at the stream's clock; the TTL class is the one
    /// the scenario's `ttl` asks for on that stream.
    pub(super) fn request(
        &self,
        at: &At,
        stream: &Stream,
        model: String,
        segments: Vec<Arc<Segment>>,
        reply: Vec<Arc<Segment>>,
        output_tokens: u64,
    ) -> Request {
        Request {
            index: self.out.rows.len(),
            stream: stream.name.clone(),
            step: at.step,
            model,
            sent_at_ms: stream.clock_ms,
            segments,
            settings: RequestSettings {
                cache_ttl: self
                    .session
                    .scenario
                    .ttl
                    .and_then(|t| t.for_stream(&stream.name)),
                ..RequestSettings::default()
            },
            reply,
            output_tokens,
        }
    }

    /// Prices `request` (advancing `stream`'s clock past its reply), records it as `tag` says,
    /// and keeps its segments for the stream's next request.
    pub(super) fn send(
        &mut self,
        request: Request,
        stream: &mut Stream,
        mode: Mode,
        tag: Tag,
    ) -> Result<(), ReplayError> {
        // The cache models' cursors skip the segments known to be the previous request's.
        let hint = SentHint::new(&request.segments, stream.sent_serial, stream.unchanged);
        stream.unchanged = 0;
        let row = with_hint(hint, || {
            price(
                &request,
                &mut *self.cache,
                self.env,
                stream,
                mode,
                (&self.out, &mut self.names),
                self.session,
            )
        })?;
        stream.last_sent_at_ms = request.sent_at_ms;
        match tag {
            Tag::Row(kind) => {
                self.out.rows.push(row.tagged(kind));
                // A compaction's prompt is not the conversation's: nothing of the restarted
                // conversation is sent yet, so there is nothing for pings to re-send until its
                // first request.
                stream.sent_model = (kind != RequestKind::Compaction).then_some(request.model);
                stream.keep_sent(request.segments);
                stream.sent_serial = hint.serial();
            }
            Tag::Unlogged(kept) => {
                stream.keep_sent(kept);
                stream.sent_serial = 0;
            }
        }
        Ok(())
    }
}
