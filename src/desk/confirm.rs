//! Asking the person for a yes: one trait whichever driver produced the batch (the terminal today; the voice and the daemon add theirs), and the answers that need no person (`--yes`, no way to ask).

use crate::input::stop::StopLatch;

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
        stop.trigger(crate::input::stop::Cause::EmergencyStop);
        assert!(!AssumeYes.ask(&q, &stop), "never a yes once stopped");
    }
}
