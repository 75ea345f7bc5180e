//! Confirmation by voice: the desk's `Confirm` asked aloud ("Typing rm -rf build. Shall I?") and answered by a spoken yes or no; silence until the timeout, anything unclear, a stop word or the stop latch is a no.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::grammar::{Heard, Mode};
use super::listen::{Listener, Note};
use super::narrate::Narrator;
use voxdesk_input::stop::StopLatch;
use voxdesk_safety::confirm::{Confirm, Question};

/// How long a question waits for its answer by default.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

pub struct VoiceConfirm {
    pub listener: Arc<Listener>,
    pub voice: Arc<Mutex<Narrator>>,
    pub within: Duration,
    /// The listening mode to go back to after the answer.
    pub back_to: Mode,
    /// What was said while a question waited, for the caller to print (not acted on).
    pub said: Vec<String>,
}

impl VoiceConfirm {
    pub fn new(listener: Arc<Listener>, voice: Arc<Mutex<Narrator>>) -> VoiceConfirm {
        VoiceConfirm {
            listener,
            voice,
            within: ANSWER_WITHIN,
            back_to: Mode::Commands,
            said: Vec::new(),
        }
    }
}

/// The question as it is said: the plan, then "Shall I?".
pub fn spoken(q: &Question) -> String {
    let what = if q.plan.is_empty() {
        q.steps.join(", ")
    } else {
        q.plan.clone()
    };
    format!("{}. Shall I?", what.trim_end_matches('.'))
}

impl Confirm for VoiceConfirm {
    fn ask(&mut self, q: &Question, stop: &StopLatch) -> bool {
        if stop.is_stopped() {
            return false;
        }
        // Answers heard before the question are not answers to it.
        while self.listener.next(Duration::ZERO).is_some() {}
        self.listener.set_mode(Mode::Confirm);
        let text = spoken(q);
        tracing::info!("asked aloud: {text} (say yes or no)");
        if let Ok(mut v) = self.voice.lock() {
            v.say(&text);
        }
        let until = Instant::now() + self.within;
        let answer = loop {
            if stop.is_stopped() {
                break false;
            }
            let Some(left) = until.checked_duration_since(Instant::now()) else {
                tracing::info!("no answer: taken as no");
                break false;
            };
            match self.listener.next(left.min(Duration::from_millis(50))) {
                Some(Note::Heard { meaning, text, .. }) => match meaning {
                    Heard::Yes => break true,
                    Heard::No | Heard::Stop(_) => break false,
                    _ => {
                        self.said.push(text);
                        break false;
                    }
                },
                Some(Note::NotUnderstood { text, .. }) => {
                    tracing::info!("heard {text:?}: not a yes");
                    break false;
                }
                _ => {}
            }
        };
        self.listener.set_mode(self.back_to);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_is_the_plan_then_shall_i() {
        let q = Question {
            plan: "Typing \"rm -rf build\"".into(),
            steps: vec!["type \"rm -rf build\"".into()],
            reasons: vec!["destructive".into()],
        };
        assert_eq!(spoken(&q), "Typing \"rm -rf build\". Shall I?");
        let q = Question {
            plan: String::new(),
            ..q
        };
        assert_eq!(spoken(&q), "type \"rm -rf build\". Shall I?");
    }
}
