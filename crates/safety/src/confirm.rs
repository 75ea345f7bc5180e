//! Asking the person for a yes: one trait whichever driver produced the batch (the terminal, the voice, the daemon's panel), and the only place a [`Yes`] is made: from the person's answer to that question, which [`super::rails::approve`] needs for a batch that must be confirmed.

use super::latch::StopLatch;
use super::rails::{Checked, Step, Yes};

/// What the person is asked to approve.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The plan in words ("Typing \"rm -rf build\""), when the driver gave one.
    pub plan: String,
    /// Each resolved step ("type \"rm -rf build\"").
    pub steps: Vec<String>,
    /// Why a yes is needed ("confirm mode", "action 1 is destructive: …").
    pub reasons: Vec<String>,
}

impl Question {
    /// The question about exactly this checked batch.
    pub fn about(checked: &Checked, plan: &str, reasons: Vec<String>) -> Question {
        Question {
            plan: plan.to_string(),
            steps: checked.steps().iter().map(Step::to_string).collect(),
            reasons,
        }
    }

    /// One line for the person: the plan (or the steps) and why it needs a yes.
    pub fn text(&self) -> String {
        let what = if self.plan.is_empty() {
            self.steps.join(", ")
        } else {
            self.plan.clone()
        };
        format!("{what} ({}). Go ahead?", self.reasons.join("; "))
    }
}

/// Someone who can say yes. Only an explicit yes counts: an error, a timeout, the stop latch or
/// anything unclear is a no.
pub trait Confirm: Send {
    fn ask(&mut self, q: &Question, stop: &StopLatch) -> bool;
}

/// Ask `confirm` about `checked`: a [`Yes`] for exactly that batch, or `None` for anything
/// but a yes (and always once the stop latch is set).
pub fn ask(
    confirm: &mut dyn Confirm,
    q: &Question,
    checked: &Checked,
    stop: &StopLatch,
) -> Option<Yes> {
    let yes = confirm.ask(q, stop) && !stop.is_stopped();
    yes.then(|| Yes::answering(checked))
}

/// No one to ask (no terminal): every answer is no.
pub struct Nobody;
impl Confirm for Nobody {
    fn ask(&mut self, _: &Question, _: &StopLatch) -> bool {
        false
    }
}

/// `--yes`: the person answered in advance.
pub struct AssumeYes;
impl Confirm for AssumeYes {
    fn ask(&mut self, _: &Question, stop: &StopLatch) -> bool {
        !stop.is_stopped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_reads_as_one_line() {
        let q = Question {
            plan: "Typing \"rm -rf build\"".into(),
            steps: vec!["type \"rm -rf build\"".into()],
            reasons: vec!["action 1 is destructive: typed text contains \"rm\"".into()],
        };
        assert_eq!(
            q.text(),
            "Typing \"rm -rf build\" (action 1 is destructive: typed text contains \"rm\"). Go ahead?"
        );
        let stop = StopLatch::default();
        assert!(!Nobody.ask(&q, &stop));
        assert!(AssumeYes.ask(&q, &stop));
        stop.trigger(crate::latch::Cause::EmergencyStop);
        assert!(!AssumeYes.ask(&q, &stop), "never a yes once stopped");
    }
}
