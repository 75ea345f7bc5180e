//! The agent: drivers (the offline planner today, realtime models next) send tool calls into a [`Host`], and the one loop in [`drive`] puts every call through the same [`policy::Policy`].
//!
//! A driver does not touch the desktop: it reads tool results and answers with the next call.
//! The loop narrates only what voxdesk itself must say (refusals, recoveries, the end); a
//! driver narrates its own plans and results.

pub mod offline;
pub mod policy;
pub mod registry;

use voxdesk_desk::tool::{ActStatus, ToolCall, ToolResult};
use voxdesk_desk::Host;
use voxdesk_record::events::{Event, State};
use voxdesk_record::session::Status;

pub use policy::{Limits, Next, Policy};

/// What a driver does next.
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    /// Sentences for the person, in order (a result, then the next plan).
    pub say: Vec<String>,
    /// The step in words ("Clicking 7"), for the record and the transcript.
    pub plan: String,
    pub what: What,
}

#[derive(Debug, Clone, PartialEq)]
pub enum What {
    Call(ToolCall),
    /// No call makes sense on this screen (a missing or ambiguous label): no progress.
    Stuck(String),
    /// The driver cannot go on (the model unreachable, a spoken stop): the session ends so.
    End(Status, String),
}

/// Anything that plans by calling the desk's tools.
pub trait Driver {
    fn provider(&self) -> &str;
    fn model(&self) -> &str;
    /// The task as the driver decomposed it (for the packet and the record).
    fn decomposition(&self) -> Vec<String>;
    /// The next move, given the result of the last call. A driver that waits (on a model) may
    /// `tell` events meanwhile: what was heard and said, that the model is unreachable.
    fn next(&mut self, last: &ToolResult, tell: &mut dyn FnMut(Event)) -> Move;
    /// The session ended (by `done`, the policy, a stop): the driver learns how, once.
    fn ended(&mut self, _ending: &Ending) {}
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    pub status: Status,
    pub summary: String,
    pub transcript: Vec<String>,
}

/// Drive `host` with `driver` until the task ends, every step through the policy; the session
/// always ends with a true status (also when the record fails or the stop latch is set).
pub fn drive(driver: &mut dyn Driver, host: &mut dyn Host, limits: Limits) -> Ending {
    let mut policy = Policy::new(limits);
    let mut told_observing = false;
    let mut last = host.call(&ToolCall::Observe);
    policy.looked(&last);
    host.go(State::Plan, "first observation");
    let (status, summary) = loop {
        if let Some(why) = host.broken() {
            break (
                Status::Failed,
                format!("the session record could not be written ({why}), so nothing more is done"),
            );
        }
        if let Some(cause) = host.stopped() {
            break (
                Status::Stopped,
                format!("stopped by {cause}; nothing more will move this session"),
            );
        }
        if let Some(Next::End { status, summary }) = policy.gate() {
            break (status, summary);
        }
        let mv = driver.next(&last, &mut |e| host.emit(e));
        // Observe mode, said once, before the next step is planned aloud: the last one was
        // only recorded. (A one-step session hears it in its last words instead.)
        if !told_observing
            && policy.recorded() > 0
            && matches!(mv.what, What::Call(ToolCall::Act(_)))
        {
            told_observing = true;
            host.emit(Event::Narration {
                text: "Observe mode: that was recorded, not done.".into(),
            });
        }
        // The plan of an act comes before the words said with it: a host holds them all until
        // it has judged the batch (the desk masks text refused as a password in every one).
        if let What::Call(ToolCall::Act(batch)) = &mv.what {
            host.emit(Event::Plan {
                say: mv.plan.clone(),
                actions: batch.to_value(),
            });
        }
        for s in &mv.say {
            host.emit(Event::Narration { text: s.clone() });
        }
        match mv.what {
            What::Call(ToolCall::Done { success, summary }) => {
                break (
                    if success {
                        Status::Done
                    } else {
                        Status::Failed
                    },
                    summary,
                )
            }
            What::Call(ToolCall::Observe) => {
                last = host.call(&ToolCall::Observe);
                policy.looked(&last);
            }
            What::Call(ToolCall::Act(batch)) => {
                last = host.call(&ToolCall::Act(batch));
                tell(host, &last);
                match policy.after_act(&mv.plan, &last) {
                    Next::Continue => {}
                    Next::Escape => {
                        let opened = match &last {
                            ToolResult::Act(a) => a.opened.join(", "),
                            _ => String::new(),
                        };
                        let ran = host.escape();
                        host.emit(Event::Narration {
                            text: if ran {
                                format!("Something else opened ({opened}): I pressed Escape.")
                            } else {
                                format!("Something else opened ({opened}); I did not press Escape here.")
                            },
                        });
                        policy.escaped(ran);
                        // The driver still reads the result that called for Escape (it must
                        // not think the step never ran), with the screen Escape left.
                        let look = host.call(&ToolCall::Observe);
                        policy.looked(&look);
                        match (&mut last, look) {
                            (ToolResult::Act(a), ToolResult::Observation(o)) => a.after = Some(o),
                            (_, look) => last = look,
                        }
                    }
                    Next::End { status, summary } => break (status, summary),
                }
            }
            What::End(status, summary) => break (status, summary),
            What::Stuck(why) => {
                policy.stuck(&why);
                host.not_planned(&why);
                // Maybe the screen was still drawing: look again (the desk settles first).
                host.go(State::Settle, "could not plan on this screen");
                last = host.call(&ToolCall::Observe);
                policy.looked(&last);
            }
        }
        host.go(State::Plan, "next step");
    };
    let summary = policy.truthful(status, summary);
    host.emit(Event::Narration {
        text: summary.clone(),
    });
    host.end(status, &summary);
    let ending = Ending {
        status,
        summary,
        transcript: policy.transcript().to_vec(),
    };
    driver.ended(&ending);
    ending
}

/// What voxdesk itself says about a result, whoever drives: refusals and unanswered questions.
fn tell(host: &mut dyn Host, r: &ToolResult) {
    let text = match r {
        ToolResult::Act(a) => match (a.status, &a.refusal) {
            (ActStatus::Refused, Some(r)) => format!("Refused: {}.", r.message),
            (ActStatus::Declined, _) => "No yes, so I did not do it.".into(),
            _ => return,
        },
        ToolResult::Error { message, .. } => format!("Something went wrong: {message}."),
        _ => return,
    };
    host.emit(Event::Narration { text });
}

#[cfg(test)]
mod tests;
