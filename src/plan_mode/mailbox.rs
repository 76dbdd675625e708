//! Team approval mailboxes.
//!
//! In a team session, teammates and the lead talk through append-only JSONL files, one per
//! recipient (`<dir>/<recipient>.jsonl`). Appending one whole line per message keeps writers
//! simple, and a reader that remembers the byte offset after the last *complete* line it read
//! can poll cheaply and never sees half a message: a torn last line (no trailing newline yet) is
//! left for a later read. A complete line that is not a valid message is reported as an error
//! item naming file and line, so one bad writer cannot stop the session.
//!
//! [`TeamApproval`] is the in-memory side of plan approval: a teammate that *must* plan sends a
//! [`Message::PlanApprovalRequest`] and waits for the lead's matching
//! [`Message::PlanApprovalResponse`]; a teammate that entered plan mode by choice exits directly.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The plan carried by an approval request: inline text or a path to the plan file.
///
/// On the wire the fields sit beside `type`; a line with both `plan` and `plan_path` reads as
/// [`PlanBody::Text`], a line with neither is a bad line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PlanBody {
    /// The plan text itself.
    Text {
        /// Plan text (Markdown).
        plan: String,
    },
    /// Where the plan file was written.
    Path {
        /// Path of the plan file.
        plan_path: PathBuf,
    },
}

/// One mailbox line. Serialized as JSON tagged by `type` in snake_case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// A direct message.
    Message {
        /// Sender name.
        from: String,
        /// Message text.
        text: String,
    },
    /// A message sent to every teammate (one copy per mailbox).
    Broadcast {
        /// Sender name.
        from: String,
        /// Message text.
        text: String,
    },
    /// The lead asks a teammate to stop.
    ShutdownRequest {
        /// Correlates the response.
        request_id: String,
        /// Sender name.
        from: String,
        /// Why, if given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A teammate's answer to a shutdown request.
    ShutdownResponse {
        /// The request answered.
        request_id: String,
        /// Sender name.
        from: String,
        /// Whether the teammate agrees to stop.
        approve: bool,
        /// Why, if given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A teammate asks the lead to approve its plan.
    PlanApprovalRequest {
        /// Correlates the response.
        request_id: String,
        /// The teammate asking.
        from: String,
        /// The plan, inline or by path.
        #[serde(flatten)]
        plan: PlanBody,
    },
    /// The lead's decision on a plan.
    PlanApprovalResponse {
        /// The request answered.
        request_id: String,
        /// Whether the plan is approved.
        approve: bool,
        /// What to change, typically given with a rejection.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
}

/// Errors of the mailbox and of the approval protocol.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MailboxError {
    /// A complete line of a mailbox file is not a valid message.
    #[error("{}:{line}: not a valid mailbox message: {reason}", path.display())]
    BadLine {
        /// The mailbox file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        reason: String,
    },
    /// A response names a request id that was never sent.
    #[error("plan approval response for unknown request {0:?}")]
    UnknownRequest(String),
    /// A response arrived for a request that was already answered.
    #[error("plan approval request {0:?} was already answered")]
    AlreadyAnswered(String),
    /// The message given as a response is not a plan approval response.
    #[error("expected a plan_approval_response message")]
    NotAResponse,
    /// The teammate already has a request waiting for an answer.
    #[error("{teammate} is already waiting for an answer to {request_id:?}")]
    AlreadyWaiting {
        /// The teammate.
        teammate: String,
        /// Its pending request.
        request_id: String,
    },
}

/// A directory of per-recipient mailbox files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mailbox {
    /// The directory holding one `<recipient>.jsonl` file per recipient.
    dir: PathBuf,
}

impl Mailbox {
    /// Mailboxes in `dir` (created on first append).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `<dir>/<recipient>.jsonl`.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] unless `recipient` is non-empty and made of
    /// ASCII letters, digits, `-`, `_` and `.` (not starting with `.`), so a name can never point
    /// outside the directory.
    pub fn path_for(&self, recipient: &str) -> io::Result<PathBuf> {
        let valid = !recipient.is_empty()
            && !recipient.starts_with('.')
            && recipient
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if valid {
            Ok(self.dir.join(format!("{recipient}.jsonl")))
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid mailbox recipient name {recipient:?}"),
            ))
        }
    }

    /// Appends `message` as one JSON line to the recipient's mailbox and flushes it.
    ///
    /// The line is written with a single `write_all` on a file opened in append mode.
    pub fn append(&self, recipient: &str, message: &Message) -> io::Result<()> {
        let path = self.path_for(recipient)?;
        let mut line = serde_json::to_string(message).map_err(io::Error::other)?;
        line.push('\n');
        fs::create_dir_all(&self.dir)?;
        let mut file = OpenOptions::new().create(true).append(true).open(path)?;
        file.write_all(line.as_bytes())?;
        file.flush()
    }

    /// A reader for the recipient's mailbox, starting at the beginning.
    pub fn reader(&self, recipient: &str) -> io::Result<MailboxReader> {
        Ok(MailboxReader::new(self.path_for(recipient)?))
    }
}

/// Reads a mailbox file incrementally, one complete line at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailboxReader {
    /// The mailbox file read.
    path: PathBuf,
    /// Byte offset just after the last complete line read: the next read starts there.
    offset: u64,
    /// Complete lines read so far (blank ones too): the line number of errors.
    lines: u64,
}

impl MailboxReader {
    /// A reader of the file at `path`, starting at the beginning.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            offset: 0,
            lines: 0,
        }
    }

    /// The file read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset just after the last complete line read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Messages from complete lines appended since the last call, in file order.
    ///
    /// A missing file yields no items. Blank lines are skipped. A torn last line (no trailing
    /// newline) is not consumed. A complete line that does not parse yields
    /// [`MailboxError::BadLine`] in its place and reading continues. The outer error is for I/O
    /// failures, including a file that shrank below the offset already read (mailboxes are
    /// append-only).
    pub fn read_new(&mut self) -> io::Result<Vec<Result<Message, MailboxError>>> {
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        if len < self.offset {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: mailbox shrank from {} to {len} bytes",
                    self.path.display(),
                    self.offset
                ),
            ));
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        let Some(last_newline) = buf.iter().rposition(|&b| b == b'\n') else {
            return Ok(Vec::new());
        };
        let complete = &buf[..=last_newline];
        let mut items = Vec::new();
        for raw in complete.split_inclusive(|&b| b == b'\n') {
            self.lines += 1;
            let line = raw.strip_suffix(b"\n").unwrap_or(raw);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            items.push(serde_json::from_slice::<Message>(line).map_err(|e| {
                MailboxError::BadLine {
                    path: self.path.clone(),
                    line: self.lines,
                    reason: e.to_string(),
                }
            }));
        }
        // `last_newline < buf.len()`, which came from a u64-sized file.
        self.offset += last_newline as u64 + 1;
        Ok(items)
    }
}

/// Why a teammate is in plan mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanRequirement {
    /// The lead requires a plan: leaving plan mode needs the lead's approval.
    Required,
    /// The teammate chose to plan: it leaves plan mode on its own.
    ByChoice,
}

/// What a teammate does when it wants to leave plan mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitOutcome {
    /// Leave plan mode now; no mailbox traffic.
    ExitDirectly,
    /// Send this request to the lead's mailbox and wait for the answer.
    AwaitApproval(Message),
}

/// The lead's answer to one plan approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The request answered.
    pub request_id: String,
    /// The teammate that asked.
    pub teammate: String,
    /// Whether the plan was approved (the teammate may leave plan mode).
    pub approved: bool,
    /// The lead's feedback, if any.
    pub feedback: Option<String>,
}

/// In-memory bookkeeping of plan approval requests and responses.
///
/// Request ids are `plan-1`, `plan-2`, … in the order requests are made, so replays are
/// deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamApproval {
    /// Approval requests made so far: the next id is `plan-{issued + 1}`.
    issued: u64,
    /// request id → teammate, for requests without an answer yet.
    pending: BTreeMap<String, String>,
    /// request id → decision, for answered requests.
    answered: BTreeMap<String, Decision>,
}

impl TeamApproval {
    /// No requests yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A teammate wants to leave plan mode with `plan`.
    ///
    /// By choice: exit directly. Required: returns the request to send to the lead and records it
    /// as pending. A teammate may have at most one pending request.
    pub fn request_exit(
        &mut self,
        teammate: &str,
        requirement: PlanRequirement,
        plan: PlanBody,
    ) -> Result<ExitOutcome, MailboxError> {
        if requirement == PlanRequirement::ByChoice {
            return Ok(ExitOutcome::ExitDirectly);
        }
        if let Some(request_id) = self.pending_for(teammate) {
            return Err(MailboxError::AlreadyWaiting {
                teammate: teammate.to_string(),
                request_id: request_id.to_string(),
            });
        }
        self.issued += 1;
        let request_id = format!("plan-{}", self.issued);
        self.pending
            .insert(request_id.clone(), teammate.to_string());
        Ok(ExitOutcome::AwaitApproval(Message::PlanApprovalRequest {
            request_id,
            from: teammate.to_string(),
            plan,
        }))
    }

    /// Matches the lead's response to its request.
    ///
    /// Errors: not a plan approval response, unknown request id, or already answered.
    pub fn receive(&mut self, response: &Message) -> Result<Decision, MailboxError> {
        let Message::PlanApprovalResponse {
            request_id,
            approve,
            feedback,
        } = response
        else {
            return Err(MailboxError::NotAResponse);
        };
        if self.answered.contains_key(request_id) {
            return Err(MailboxError::AlreadyAnswered(request_id.clone()));
        }
        let Some(teammate) = self.pending.remove(request_id) else {
            return Err(MailboxError::UnknownRequest(request_id.clone()));
        };
        let decision = Decision {
            request_id: request_id.clone(),
            teammate,
            approved: *approve,
            feedback: feedback.clone(),
        };
        self.answered.insert(request_id.clone(), decision.clone());
        Ok(decision)
    }

    /// The teammate's request still waiting for an answer, if any.
    pub fn pending_for(&self, teammate: &str) -> Option<&str> {
        self.pending
            .iter()
            .find(|(_, t)| t.as_str() == teammate)
            .map(|(id, _)| id.as_str())
    }

    /// The decision recorded for `request_id`, if answered.
    pub fn decision(&self, request_id: &str) -> Option<&Decision> {
        self.answered.get(request_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn msg(from: &str, text: &str) -> Message {
        Message::Message {
            from: from.into(),
            text: text.into(),
        }
    }

    fn ok_items(items: Vec<Result<Message, MailboxError>>) -> Vec<Message> {
        items
            .into_iter()
            .map(|r| r.expect("valid message"))
            .collect()
    }

    #[test]
    fn wire_format_is_tagged_snake_case() {
        let req = Message::PlanApprovalRequest {
            request_id: "plan-1".into(),
            from: "alice".into(),
            plan: PlanBody::Text {
                plan: "1. do it".into(),
            },
        };
        assert_eq!(
            serde_json::to_string(&req).expect("serialize"),
            r#"{"type":"plan_approval_request","request_id":"plan-1","from":"alice","plan":"1. do it"}"#
        );
        let by_path: Message = serde_json::from_str(
            r#"{"type":"plan_approval_request","request_id":"plan-2","from":"bob","plan_path":"plans/x.md"}"#,
        )
        .expect("deserialize");
        assert_eq!(
            by_path,
            Message::PlanApprovalRequest {
                request_id: "plan-2".into(),
                from: "bob".into(),
                plan: PlanBody::Path {
                    plan_path: "plans/x.md".into()
                },
            }
        );
        let resp = Message::PlanApprovalResponse {
            request_id: "plan-1".into(),
            approve: false,
            feedback: Some("add tests".into()),
        };
        assert_eq!(
            serde_json::to_string(&resp).expect("serialize"),
            r#"{"type":"plan_approval_response","request_id":"plan-1","approve":false,"feedback":"add tests"}"#
        );
        let shutdown: Message =
            serde_json::from_str(r#"{"type":"shutdown_request","request_id":"s1","from":"lead"}"#)
                .expect("deserialize");
        assert_eq!(
            shutdown,
            Message::ShutdownRequest {
                request_id: "s1".into(),
                from: "lead".into(),
                reason: None
            }
        );
        for m in [
            msg("a", "hi"),
            Message::Broadcast {
                from: "lead".into(),
                text: "stop".into(),
            },
            Message::ShutdownResponse {
                request_id: "s1".into(),
                from: "bob".into(),
                approve: true,
                reason: None,
            },
            req,
            resp,
        ] {
            let line = serde_json::to_string(&m).expect("serialize");
            assert_eq!(serde_json::from_str::<Message>(&line).expect("parse"), m);
        }
    }

    #[test]
    fn append_and_read_incrementally() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mailbox = Mailbox::new(dir.path().join("inbox"));
        let mut reader = mailbox.reader("lead").expect("reader");
        assert_eq!(reader.read_new().expect("read").len(), 0, "no file yet");

        mailbox.append("lead", &msg("a", "one")).expect("append");
        mailbox.append("lead", &msg("b", "two")).expect("append");
        assert_eq!(
            ok_items(reader.read_new().expect("read")),
            vec![msg("a", "one"), msg("b", "two")]
        );
        let len = fs::metadata(reader.path()).expect("meta").len();
        assert_eq!(reader.offset(), len);
        assert!(reader.read_new().expect("read").is_empty());

        mailbox.append("lead", &msg("c", "three")).expect("append");
        assert_eq!(
            ok_items(reader.read_new().expect("read")),
            vec![msg("c", "three")]
        );
    }

    #[test]
    fn recipients_have_separate_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mailbox = Mailbox::new(dir.path());
        mailbox
            .append("alice", &msg("lead", "for alice"))
            .expect("append");
        mailbox
            .append("bob", &msg("lead", "for bob"))
            .expect("append");
        mailbox
            .append("alice", &msg("lead", "again"))
            .expect("append");
        assert_eq!(
            mailbox.path_for("alice").expect("path"),
            dir.path().join("alice.jsonl")
        );
        let alice = ok_items(
            mailbox
                .reader("alice")
                .expect("r")
                .read_new()
                .expect("read"),
        );
        let bob = ok_items(mailbox.reader("bob").expect("r").read_new().expect("read"));
        assert_eq!(alice, vec![msg("lead", "for alice"), msg("lead", "again")]);
        assert_eq!(bob, vec![msg("lead", "for bob")]);
    }

    #[test]
    fn bad_recipient_names_rejected() {
        let mailbox = Mailbox::new("/tmp/unused");
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            let err = mailbox.append(bad, &msg("a", "b")).expect_err(bad);
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
    }

    #[test]
    fn torn_line_is_left_for_later() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("lead.jsonl");
        let full = serde_json::to_string(&msg("a", "one")).expect("ser");
        let torn = serde_json::to_string(&msg("b", "two")).expect("ser");
        let (head, tail) = torn.split_at(10);
        fs::write(&path, format!("{full}\n{head}")).expect("write");

        let mut reader = MailboxReader::new(&path);
        assert_eq!(
            ok_items(reader.read_new().expect("read")),
            vec![msg("a", "one")]
        );
        assert_eq!(reader.offset(), full.len() as u64 + 1);
        assert!(reader.read_new().expect("read").is_empty(), "still torn");
        assert_eq!(reader.offset(), full.len() as u64 + 1);

        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(format!("{tail}\n").as_bytes()).expect("write");
        assert_eq!(
            ok_items(reader.read_new().expect("read")),
            vec![msg("b", "two")]
        );
    }

    #[test]
    fn bad_json_line_is_an_error_item_with_line_number() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bob.jsonl");
        let good = serde_json::to_string(&msg("a", "ok")).expect("ser");
        fs::write(
            &path,
            format!("{good}\n\nnot json\n{{\"type\":\"nope\"}}\r\n{good}\r\n"),
        )
        .expect("write");
        let items = MailboxReader::new(&path).read_new().expect("read");
        assert_eq!(items.len(), 4);
        assert_eq!(items[0], Ok(msg("a", "ok")));
        match &items[1] {
            Err(MailboxError::BadLine { path: p, line, .. }) => {
                assert_eq!(p, &path);
                assert_eq!(*line, 3, "blank line 2 still counts");
            }
            other => panic!("expected bad line, got {other:?}"),
        }
        let text = items[2].as_ref().expect_err("unknown type").to_string();
        assert!(text.contains("bob.jsonl:4:"), "{text}");
        assert_eq!(items[3], Ok(msg("a", "ok")));
    }

    #[test]
    fn shrunk_file_is_an_io_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        let line = serde_json::to_string(&msg("a", "one")).expect("ser");
        fs::write(&path, format!("{line}\n")).expect("write");
        let mut reader = MailboxReader::new(&path);
        assert_eq!(reader.read_new().expect("read").len(), 1);
        fs::write(&path, "").expect("truncate");
        let err = reader.read_new().expect_err("shrunk");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn required_plan_goes_through_the_lead() {
        let mut team = TeamApproval::new();
        let plan = PlanBody::Text {
            plan: "steps".into(),
        };
        let out = team
            .request_exit("alice", PlanRequirement::Required, plan.clone())
            .expect("request");
        assert_eq!(
            out,
            ExitOutcome::AwaitApproval(Message::PlanApprovalRequest {
                request_id: "plan-1".into(),
                from: "alice".into(),
                plan: plan.clone(),
            })
        );
        assert_eq!(team.pending_for("alice"), Some("plan-1"));
        assert_eq!(
            team.request_exit("alice", PlanRequirement::Required, plan.clone()),
            Err(MailboxError::AlreadyWaiting {
                teammate: "alice".into(),
                request_id: "plan-1".into()
            })
        );
        let bob = team
            .request_exit("bob", PlanRequirement::Required, plan.clone())
            .expect("bob");
        assert!(matches!(
            bob,
            ExitOutcome::AwaitApproval(Message::PlanApprovalRequest { ref request_id, .. })
                if request_id == "plan-2"
        ));

        let reject = Message::PlanApprovalResponse {
            request_id: "plan-1".into(),
            approve: false,
            feedback: Some("cover rollback".into()),
        };
        let decision = team.receive(&reject).expect("match");
        assert_eq!(
            decision,
            Decision {
                request_id: "plan-1".into(),
                teammate: "alice".into(),
                approved: false,
                feedback: Some("cover rollback".into()),
            }
        );
        assert_eq!(team.pending_for("alice"), None);
        assert_eq!(team.decision("plan-1"), Some(&decision));
        assert_eq!(
            team.receive(&reject),
            Err(MailboxError::AlreadyAnswered("plan-1".into()))
        );

        // After a rejection the teammate revises and asks again with a fresh id.
        let again = team
            .request_exit("alice", PlanRequirement::Required, plan)
            .expect("again");
        assert!(matches!(
            again,
            ExitOutcome::AwaitApproval(Message::PlanApprovalRequest { ref request_id, .. })
                if request_id == "plan-3"
        ));
    }

    #[test]
    fn unknown_and_wrong_responses_are_errors() {
        let mut team = TeamApproval::new();
        let unknown = Message::PlanApprovalResponse {
            request_id: "plan-9".into(),
            approve: true,
            feedback: None,
        };
        assert_eq!(
            team.receive(&unknown),
            Err(MailboxError::UnknownRequest("plan-9".into()))
        );
        assert_eq!(
            team.receive(&msg("lead", "ok")),
            Err(MailboxError::NotAResponse)
        );
    }

    #[test]
    fn plan_by_choice_exits_without_mailbox() {
        let mut team = TeamApproval::new();
        let out = team
            .request_exit(
                "carol",
                PlanRequirement::ByChoice,
                PlanBody::Path {
                    plan_path: "plans/x.md".into(),
                },
            )
            .expect("exit");
        assert_eq!(out, ExitOutcome::ExitDirectly);
        assert_eq!(team.pending_for("carol"), None);
        assert_eq!(team, TeamApproval::new(), "no state recorded");
    }

    proptest! {
        #[test]
        fn reader_never_panics_and_stops_at_newlines(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6)
        ) {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("p.jsonl");
            let mut reader = MailboxReader::new(&path);
            let mut written = Vec::new();
            let mut items = 0usize;
            for chunk in &chunks {
                let mut f = OpenOptions::new().create(true).append(true).open(&path).expect("open");
                f.write_all(chunk).expect("write");
                written.extend_from_slice(chunk);
                items += reader.read_new().expect("read").len();
                let expected = written
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                prop_assert_eq!(reader.offset(), expected as u64);
                let non_blank = written[..expected]
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                    .count();
                prop_assert_eq!(items, non_blank, "one item per complete non-blank line");
            }
        }
    }
}
