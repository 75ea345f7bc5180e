//! The one policy every driver goes through (pure): the step cap, the no-progress counter, and what each class of failure calls for, judged from tool results alone.
//!
//! Classes: verified → progress; unverified → neither; failed (nothing changed, or an action
//! failed) → no progress (the driver may try again on a fresh look, if the result says the batch
//! is repeatable); unconfirmed (it ran, the screen changed, the expectation was not seen) → no
//! progress, and Escape only when a window, menu or dialog actually opened; refused, declined, or
//! a capture error → no progress. Three in a row end the task with the transcript of what was
//! tried.

use voxdesk_desk::tool::{ActStatus, ToolResult};
use voxdesk_desk::verify::Verdict;
use voxdesk_record::session::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Steps (acts and steps that could not be planned) per task.
    pub step_cap: usize,
    /// Consecutive cycles without progress that end the task.
    pub no_progress: u32,
}

/// What the loop does after a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// The driver plans on the result.
    Continue,
    /// Something else opened (a window, menu or dialog): press Escape, look again, and let the
    /// driver plan on that, with the result that called for it.
    Escape,
    /// The task ends here.
    End { status: Status, summary: String },
}

#[derive(Debug, Clone)]
pub struct Policy {
    limits: Limits,
    steps: usize,
    no_progress: u32,
    /// Looks since the last act: a driver that only ever looks makes no progress either.
    looks: u32,
    /// Steps observe mode recorded instead of doing (nothing was touched for them).
    recorded: usize,
    transcript: Vec<String>,
}

/// Looks in a row without an act that are still free (the first one, and one after a failure).
const FREE_LOOKS: u32 = 3;

impl Policy {
    pub fn new(limits: Limits) -> Policy {
        Policy {
            limits,
            steps: 0,
            no_progress: 0,
            looks: 0,
            recorded: 0,
            transcript: Vec::new(),
        }
    }

    /// Before the driver plans another step: has the task run out of steps or of progress?
    pub fn gate(&self) -> Option<Next> {
        if self.steps >= self.limits.step_cap {
            return Some(self.fail(format!(
                "stopped at the step cap ({}) — tried: {}",
                self.limits.step_cap,
                self.tried()
            )));
        }
        if self.no_progress >= self.limits.no_progress {
            return Some(self.fail(format!(
                "no progress after {} tries — tried: {}",
                self.limits.no_progress,
                self.tried()
            )));
        }
        None
    }

    /// The driver could not plan a step on this screen.
    pub fn stuck(&mut self, why: &str) {
        self.looks = 0;
        self.steps += 1;
        self.no_progress += 1;
        self.transcript.push(format!("step {}: {why}", self.steps));
    }

    /// After an observe: a look that failed (the display gone, OCR failing) is no progress, and
    /// counts as a step, so a screen that cannot be seen ends the task rather than looping.
    /// Looking again and again without acting counts the same way after the first few.
    pub fn looked(&mut self, r: &ToolResult) {
        self.looks += 1;
        if let ToolResult::Error { message, .. } = r {
            self.steps += 1;
            self.no_progress += 1;
            self.transcript
                .push(format!("step {}: could not look: {message}", self.steps));
        } else if self.looks > FREE_LOOKS {
            self.steps += 1;
            self.no_progress += 1;
            self.transcript
                .push(format!("step {}: looked again without acting", self.steps));
        }
    }

    /// After an act: judge its result. `plan` is the step in words ("Clicking 7").
    pub fn after_act(&mut self, plan: &str, r: &ToolResult) -> Next {
        self.steps += 1;
        self.looks = 0;
        let n = self.steps;
        let a = match r {
            ToolResult::Act(a) => a,
            ToolResult::Error { message, .. } => {
                self.no_progress += 1;
                self.transcript
                    .push(format!("step {n}: {plan} → {message}"));
                return Next::Continue;
            }
            ToolResult::Ended { status, summary } => {
                return Next::End {
                    status: *status,
                    summary: summary.clone(),
                }
            }
            ToolResult::Observation(_) => return Next::Continue,
        };
        match a.status {
            ActStatus::Stopped => {
                let why = a
                    .refusal
                    .as_ref()
                    .map(|r| r.message.clone())
                    .unwrap_or_else(|| "stopped".into());
                self.transcript.push(format!("step {n}: {plan} → stopped"));
                return Next::End {
                    status: Status::Stopped,
                    summary: why,
                };
            }
            ActStatus::Refused | ActStatus::Declined => {
                self.no_progress += 1;
                let rule = a.refusal.as_ref().map_or("refused", |r| r.rule);
                self.transcript
                    .push(format!("step {n}: {plan} → refused by rule `{rule}`"));
                return Next::Continue;
            }
            ActStatus::Recorded => {
                self.recorded += 1;
                self.transcript
                    .push(format!("step {n}: {plan} (observe mode: not done)"));
                return Next::Continue;
            }
            ActStatus::Ran | ActStatus::Failed => {}
        }
        self.transcript
            .push(format!("step {n}: {plan} → {}", a.verdict.name()));
        match &a.verdict {
            Verdict::Verified(_) => {
                self.no_progress = 0;
                Next::Continue
            }
            Verdict::Unverified => Next::Continue,
            Verdict::Failed { .. } => {
                self.no_progress += 1;
                Next::Continue
            }
            Verdict::Unconfirmed(_) => {
                self.no_progress += 1;
                // A window that opened while waiting came from an earlier step (a progress
                // dialog): Escape would cancel it.
                let waited = a.actions.iter().all(|x| x.action == "wait");
                if a.opened.is_empty() || waited {
                    Next::Continue
                } else {
                    Next::Escape
                }
            }
        }
    }

    /// Escape was pressed (or could not be) after the last step.
    pub fn escaped(&mut self, ran: bool) {
        if ran {
            if let Some(last) = self.transcript.last_mut() {
                last.push_str(" (pressed Escape)");
            }
        }
    }

    pub fn transcript(&self) -> &[String] {
        &self.transcript
    }

    /// Steps recorded in observe mode so far (none of them done).
    pub fn recorded(&self) -> usize {
        self.recorded
    }

    /// The summary a session ends with, made true whoever wrote it: a session in observe mode
    /// did nothing, whatever its driver says. A success is only what was recorded (the driver's
    /// "done: 4 steps", or a model's "I clicked 7", would claim otherwise); a failure keeps why.
    pub fn truthful(&self, status: Status, summary: String) -> String {
        match self.recorded {
            0 => summary,
            n => {
                let s = if n == 1 { "" } else { "s" };
                let head =
                    format!("Observe mode, so nothing was clicked or typed: {n} step{s} recorded.");
                match status {
                    Status::Done => head,
                    _ => format!("{head} {summary}"),
                }
            }
        }
    }

    fn tried(&self) -> String {
        self.transcript.join("; ")
    }

    fn fail(&self, summary: String) -> Next {
        Next::End {
            status: Status::Failed,
            summary,
        }
    }
}
