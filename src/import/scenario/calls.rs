//! The calls of one reply: each call carries the result that answers it; the plan-mode tools
//! become the state machine's approve / decline / reject steps.

use super::stream::Emitter;
use super::{clamp, is_write, starts_from_plan, weight, Piece};
use crate::import::{Block, Item};
use crate::plan_mode::{Mode, Target};
use crate::scenario::{Call, Content, Step, TextOrContent};

/// How the calls of one reply are answered.
pub(super) struct Answers {
    /// The assistant step's calls, in the reply's order.
    pub calls: Vec<Call>,
    /// Per piece of the next prompt: carried by a call (its result) rather than sent as text.
    pub answered: Vec<bool>,
    /// The approve / decline / reject step that answers a plan-mode call.
    pub plan_answer: Option<Step>,
    /// Tokens of an `EnterPlanMode` result, sent as user text after the answer.
    pub trailing: u64,
}

/// The result that answers a call, when the transcript has one.
#[derive(Clone, Copy)]
struct Answer {
    /// Index of the result among the pieces (`None`: the call has no result).
    idx: Option<usize>,
    /// The result's tokens.
    size: u64,
    /// Logged as an error (a rejection, or a "clear context" approval of a plan).
    is_error: bool,
}

impl Emitter<'_, '_> {
    /// The calls of request `k`'s reply, answered by the pieces after it.
    pub(super) fn answer_calls(&mut self, k: usize, pieces: &[Piece<'_>]) -> Answers {
        let r = self.rounds[k].0;
        let mut a = Answers {
            calls: Vec::new(),
            answered: vec![false; pieces.len()],
            plan_answer: None,
            trailing: 0,
        };
        for b in &r.blocks {
            let Block::ToolUse { id, name, input } = b else {
                continue;
            };
            let answer = answer_of(pieces, id);
            if let Some(call) = self.call(k, name, input, answer, &mut a) {
                a.calls.push(call);
            }
        }
        a
    }

    /// One call, or `None` when it is left out of the scenario.
    fn call(
        &mut self,
        k: usize,
        name: &str,
        input: &str,
        answer: Answer,
        a: &mut Answers,
    ) -> Option<Call> {
        let id = &self.rounds[k].0.request_id;
        let mut call = Call {
            tool: name.to_string(),
            ..Call::default()
        };
        match name {
            "EnterPlanMode" | "ExitPlanMode" if answer.idx.is_none() => {
                // Unanswered (the log ends, or the answer was lost): the state machine would
                // wait for it forever, so the call is left out.
                self.notes.push(format!(
                    "request {id}: {name} has no result in the transcript; the call is left out"
                ));
                return None;
            }
            "EnterPlanMode" if self.mode == Mode::Plan => {
                self.notes.push(format!(
                    "request {id}: EnterPlanMode while already in plan mode; the call is left out and its result kept as text"
                ));
                return None;
            }
            "EnterPlanMode" => self.enter_plan(answer, a),
            "ExitPlanMode" => self.exit_plan(k, input, answer, &mut call, a),
            _ => {
                let denied = self.mode == Mode::Plan && is_write(name);
                if let (false, Some(j)) = (denied, answer.idx) {
                    call.result_tokens = Some(clamp(answer.size));
                    a.answered[j] = true;
                }
            }
        }
        Some(call)
    }

    /// Deferred: the answer is an approve / decline step; its result text follows it.
    fn enter_plan(&mut self, answer: Answer, a: &mut Answers) {
        a.plan_answer = Some(if answer.is_error {
            Step::Decline(Target::Enter)
        } else {
            self.pre_plan = self.mode;
            self.mode = Mode::Plan;
            Step::Approve(Target::Enter.into())
        });
        a.trailing += answer.size;
        if let Some(j) = answer.idx {
            a.answered[j] = true;
        }
    }

    /// The plan: approved (left to the mode before plan mode) or rejected with feedback.
    fn exit_plan(
        &mut self,
        k: usize,
        input: &str,
        answer: Answer,
        call: &mut Call,
        a: &mut Answers,
    ) {
        let id = &self.rounds[k].0.request_id;
        if self.mode != Mode::Plan {
            self.notes.push(format!(
                "request {id}: ExitPlanMode outside plan mode in the transcript; a `mode = \"plan\"` step is inserted before it"
            ));
            self.steps.push(Step::Mode(Mode::Plan));
            self.pre_plan = self.mode;
            self.mode = Mode::Plan;
        }
        // Claude Code's "clear context and implement" approval is logged as an error result
        // (the plan tool's call was cut off), then a user message that starts the new
        // conversation from the plan: an approval, not a rejection.
        let clears = answer.is_error && self.rounds[k].1.iter().any(starts_from_plan);
        if clears {
            self.notes.push(format!(
                "request {id}: plan approved with \"clear context\": the conversation restarts from the plan"
            ));
        }
        if answer.is_error && !clears {
            // The machine reads the plan from the call; a rejection's result carries only the
            // feedback, so the plan's size is its own token count.
            call.plan_tokens = Some(clamp(weight(self.inputs.tok, input).max(1)));
            a.plan_answer = Some(Step::Reject(TextOrContent::Content(Content::tokens(
                clamp(answer.size),
            ))));
        } else {
            call.plan_tokens = Some(clamp(answer.size));
            a.plan_answer = Some(Step::Approve(Target::Exit.into()));
            // A session that started in plan mode leaves it for the default mode.
            self.mode = match self.pre_plan {
                Mode::Plan => Mode::Default,
                m => m,
            };
        }
        if let Some(j) = answer.idx {
            a.answered[j] = true;
        }
    }
}

/// The piece holding the result of call `id`, if any.
fn answer_of(pieces: &[Piece<'_>], id: &str) -> Answer {
    let result = pieces.iter().enumerate().skip(1).find(
        |(_, p)| matches!(p.item, Some(Item::ToolResult { tool_use_id, .. }) if tool_use_id == id),
    );
    match result {
        Some((j, p)) => Answer {
            idx: Some(j),
            size: p.tokens,
            is_error: matches!(p.item, Some(Item::ToolResult { is_error: true, .. })),
        },
        None => Answer {
            idx: None,
            size: 0,
            is_error: false,
        },
    }
}
