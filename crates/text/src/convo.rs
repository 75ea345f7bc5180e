//! The conversation with a turn-based model, in no vendor's words (pure): the task and each screen, the model's calls, the desk's answers; kept small (targets as text, old pictures dropped) before each request is written in a vendor's wire format.

use serde_json::Value;

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The vendor's id (made up as `call_<n>` when a server sends none).
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (an object when they parsed).
    pub args: Value,
    /// Gemini's thought signature, sent back in the same part.
    pub signature: Option<String>,
}

/// The answer to one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub id: String,
    pub name: String,
    /// The desk's result (or a bad-call error) as compact JSON.
    pub content: String,
    pub error: bool,
}

/// A turn of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// The person's side: words, and the screen's picture when the model may see it.
    User { text: String, jpeg: Option<Vec<u8>> },
    /// The model's side: its words and its calls.
    Model { text: String, calls: Vec<Call> },
    /// The answers to the model's calls (one per call, in order), then words and a picture
    /// that go with them (the screen after the action).
    Answers {
        answers: Vec<Answer>,
        text: String,
        jpeg: Option<Vec<u8>>,
    },
}

/// What the model said back in one turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<Call>,
    /// Tokens read and written for this turn, as the server counted them.
    pub usage: Usage,
    /// Why the server says the turn ended (`stop`, `tool_calls`, `end_turn`, …).
    pub stop: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

/// Why a reply could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReadError {
    #[error("the server answered with an error: {0}")]
    Server(String),
    #[error("the reply is not what the API returns: {0}")]
    Shape(String),
}

/// The conversation: a system instruction and the turns.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    pub system: String,
    pub turns: Vec<Turn>,
}

impl Conversation {
    pub fn new(system: impl Into<String>) -> Conversation {
        Conversation {
            system: system.into(),
            turns: Vec::new(),
        }
    }

    /// Does any turn carry a picture?
    pub fn has_pictures(&self) -> bool {
        self.turns.iter().any(|t| {
            matches!(
                t,
                Turn::User { jpeg: Some(_), .. } | Turn::Answers { jpeg: Some(_), .. }
            )
        })
    }

    /// Keep the conversation small: only the newest `keep` pictures stay; older ones are
    /// replaced by a note that the screen was shown then (their targets stay as text).
    pub fn drop_old_pictures(&mut self, keep: usize) {
        let mut seen = 0;
        for t in self.turns.iter_mut().rev() {
            let (jpeg, text) = match t {
                Turn::User { jpeg, text } => (jpeg, text),
                Turn::Answers { jpeg, text, .. } => (jpeg, text),
                Turn::Model { .. } => continue,
            };
            if jpeg.is_some() {
                seen += 1;
                if seen > keep {
                    *jpeg = None;
                    text.push_str("\n(The picture of this screen was dropped; its targets above still read as they did.)");
                }
            }
        }
    }

    /// Only the newest screen is sent whole: the targets of every older one (in the task's
    /// turn, in observe's and act's answers) are left out, their ids and verdicts kept.
    pub fn keep_newest_screen(&mut self) {
        const GONE: &str = "(left out: an older screen; the newest is further down)";
        let newest = self.turns.iter().rposition(|t| match t {
            Turn::Answers { answers, .. } => answers.iter().any(|a| has_screen(&a.content)),
            _ => false,
        });
        let Some(newest) = newest else { return };
        for t in &mut self.turns[..newest] {
            match t {
                Turn::User { text, .. } => {
                    let open = "<untrusted-screen-text>\n";
                    let close = "\n</untrusted-screen-text>";
                    if let (Some(a), Some(b)) = (text.find(open), text.find(close)) {
                        if a + open.len() <= b {
                            text.replace_range(a + open.len()..b, GONE);
                        }
                    }
                }
                Turn::Answers { answers, .. } => {
                    for a in answers.iter_mut() {
                        let Ok(mut v) = serde_json::from_str::<Value>(&a.content) else {
                            continue;
                        };
                        let changed = if v["observation"]["targets"].is_array() {
                            v["observation"]["targets"] = Value::from(GONE);
                            true
                        } else if v["targets"].is_array() {
                            v["targets"] = Value::from(GONE);
                            true
                        } else {
                            false
                        };
                        if changed {
                            a.content = v.to_string();
                        }
                    }
                }
                Turn::Model { .. } => {}
            }
        }
    }

    /// Keep the conversation short: the first turn (the task) and the last `keep` turns,
    /// cut only where a model turn begins (calls and their answers stay together).
    pub fn keep_last(&mut self, keep: usize) {
        if self.turns.len() <= keep + 1 {
            return;
        }
        let mut cut = self.turns.len() - keep;
        while cut < self.turns.len() && !matches!(self.turns[cut], Turn::Model { .. }) {
            cut += 1;
        }
        if cut >= self.turns.len() || cut <= 1 {
            return;
        }
        let dropped = cut - 1;
        self.turns.drain(1..cut);
        if let Some(Turn::User { text, .. }) = self.turns.first_mut() {
            if !text.contains("earlier steps were left out") {
                text.push_str(&format!(
                    "\n({dropped} earlier steps were left out to keep this short; the newest screen is below.)"
                ));
            }
        }
    }
}

/// Does an answer carry a screen (an observation's targets, or act's screen after it)?
fn has_screen(content: &str) -> bool {
    serde_json::from_str::<Value>(content)
        .is_ok_and(|v| v["targets"].is_array() || v["observation"]["targets"].is_array())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(p: bool) -> Turn {
        Turn::User {
            text: "screen".into(),
            jpeg: p.then(|| vec![1, 2, 3]),
        }
    }
    fn model() -> Turn {
        Turn::Model {
            text: String::new(),
            calls: vec![Call {
                id: "c".into(),
                name: "observe".into(),
                args: Value::Null,
                signature: None,
            }],
        }
    }
    fn answers(p: bool) -> Turn {
        Turn::Answers {
            answers: vec![Answer {
                id: "c".into(),
                name: "observe".into(),
                content: "{}".into(),
                error: false,
            }],
            text: "after".into(),
            jpeg: p.then(|| vec![4]),
        }
    }

    #[test]
    fn only_the_newest_screen_keeps_its_targets() {
        let screen = |id: &str| {
            format!("{{\"observation_id\":\"{id}\",\"targets\":[{{\"id\":1,\"text\":\"7\"}}]}}")
        };
        let mut c = Conversation::new("s");
        c.turns = vec![
            Turn::User {
                text: format!(
                    "Task: x\n<untrusted-screen-text>\n{}\n</untrusted-screen-text>",
                    screen("o1")
                ),
                jpeg: None,
            },
            model(),
            Turn::Answers {
                answers: vec![Answer {
                    id: "c".into(),
                    name: "act".into(),
                    content: format!("{{\"status\":\"ran\",\"observation\":{}}}", screen("o2")),
                    error: false,
                }],
                text: String::new(),
                jpeg: None,
            },
            model(),
            Turn::Answers {
                answers: vec![Answer {
                    id: "c".into(),
                    name: "observe".into(),
                    content: screen("o3"),
                    error: false,
                }],
                text: String::new(),
                jpeg: None,
            },
        ];
        c.keep_newest_screen();
        let Turn::User { text, .. } = &c.turns[0] else {
            panic!()
        };
        assert!(
            text.contains("left out") && !text.contains("\"text\":\"7\""),
            "{text}"
        );
        let Turn::Answers { answers, .. } = &c.turns[2] else {
            panic!()
        };
        let v: Value = serde_json::from_str(&answers[0].content).unwrap();
        assert_eq!(v["status"], "ran");
        assert_eq!(v["observation"]["observation_id"], "o2");
        assert!(v["observation"]["targets"].is_string());
        let Turn::Answers { answers, .. } = &c.turns[4] else {
            panic!()
        };
        assert!(
            answers[0].content.contains("\"text\":\"7\""),
            "the newest is whole"
        );
    }

    #[test]
    fn only_the_newest_pictures_are_kept() {
        let mut c = Conversation::new("s");
        c.turns = vec![user(true), model(), answers(true), model(), answers(true)];
        c.drop_old_pictures(1);
        let pics: Vec<bool> = c
            .turns
            .iter()
            .filter_map(|t| match t {
                Turn::User { jpeg, .. } | Turn::Answers { jpeg, .. } => Some(jpeg.is_some()),
                _ => None,
            })
            .collect();
        assert_eq!(pics, [false, false, true]);
        let Turn::User { text, .. } = &c.turns[0] else {
            panic!()
        };
        assert!(text.contains("was dropped"));
    }

    #[test]
    fn old_steps_are_cut_before_a_model_turn_and_the_task_stays() {
        let mut c = Conversation::new("s");
        c.turns = vec![
            user(false),
            model(),
            answers(false),
            model(),
            answers(false),
            model(),
            answers(false),
        ];
        c.keep_last(4);
        assert_eq!(c.turns.len(), 5);
        assert!(matches!(c.turns[0], Turn::User { .. }));
        assert!(matches!(c.turns[1], Turn::Model { .. }));
        let Turn::User { text, .. } = &c.turns[0] else {
            panic!()
        };
        assert!(text.contains("2 earlier steps were left out"), "{text}");
        // Short enough: nothing changes.
        let before = c.turns.len();
        c.keep_last(10);
        assert_eq!(c.turns.len(), before);
    }
}
