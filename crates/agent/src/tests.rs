//! Table tests of the one policy, driven by the offline planner over a fake desk (no X server): every failure class, the step cap, the no-progress counter, stops and broken records.

use super::*;
use voxdesk_core::geometry::Rect;
use voxdesk_desk::tool::{ActResult, ActionOutcome, ErrorKind, ObservationView};
use voxdesk_desk::verify::Verdict;
use voxdesk_input::stop::Cause;
use voxdesk_perception::Target;
use voxdesk_safety::rails::Refusal;

/// What the fake desk answers to the next act.
#[derive(Clone, Debug)]
enum Reply {
    Verified,
    Unverified,
    NoChange,
    /// It ran, the screen changed, the expectation was not seen, and a menu opened.
    Opened(&'static str),
    /// It ran, the screen changed, the expectation was not seen; nothing opened.
    Unconfirmed,
    Refused(&'static str),
    Declined,
    Recorded,
    Stop,
    CaptureError,
    /// The record fails to write during this act (it still verifies).
    BreakRecord,
}

struct FakeDesk {
    targets: Vec<&'static str>,
    replies: Vec<Reply>,
    seq: u32,
    acts: Vec<serde_json::Value>,
    escapes: usize,
    not_planned: Vec<String>,
    said: Vec<String>,
    stopped: bool,
    broken: Option<String>,
    ended: Option<(Status, String)>,
    /// Looks that fail before one succeeds (`usize::MAX`: the display is gone for good).
    blind: usize,
}

impl FakeDesk {
    fn new(targets: &[&'static str], replies: &[Reply]) -> FakeDesk {
        FakeDesk {
            targets: targets.to_vec(),
            replies: replies.to_vec(),
            seq: 0,
            acts: Vec::new(),
            escapes: 0,
            not_planned: Vec::new(),
            said: Vec::new(),
            stopped: false,
            broken: None,
            ended: None,
            blind: 0,
        }
    }

    fn view(&mut self) -> ObservationView {
        self.seq += 1;
        let targets: Vec<Target> = self
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| Target {
                id: i as u32 + 1,
                text: t.to_string(),
                rect: Rect::new(10 + 50 * i as i32, 10, 40, 20),
                conf: 0.9,
                new: false,
                ax: None,
            })
            .collect();
        ObservationView {
            id: format!("fake-{}", self.seq),
            app: Some("Fake".into()),
            title: None,
            picture: (1280, 720),
            targets: targets.clone(),
            capture_targets: targets,
            jpeg: None,
            route: Default::default(),
        }
    }

    fn act(&mut self, b: &voxdesk_core::action::Batch) -> ToolResult {
        self.acts.push(b.to_value());
        let reply = if self.replies.is_empty() {
            Reply::Verified
        } else {
            self.replies.remove(0)
        };
        let before = self.view();
        self.seq -= 1;
        let after = self.view();
        let mut r = ActResult {
            observation_id: b.observation_id.clone().unwrap_or_default(),
            app: Some("Fake".into()),
            status: ActStatus::Ran,
            refusal: None,
            actions: vec![ActionOutcome {
                index: 1,
                action: "click",
                step: None,
                outcome: voxdesk_desk::tool::Outcome::Done,
                error: None,
                ms: 1.0,
            }],
            verdict: Verdict::Verified("the screen changed".into()),
            changed: true,
            appeared: vec![],
            opened: vec![],
            repeatable: voxdesk_desk::verify::repeatable(b, &before.capture_targets),
            step: Some(self.acts.len()),
            after: Some(after),
        };
        match reply {
            Reply::Verified => {}
            Reply::BreakRecord => self.broken = Some("disk full".into()),
            Reply::Unverified => r.verdict = Verdict::Unverified,
            Reply::NoChange => {
                r.changed = false;
                r.verdict = Verdict::Failed {
                    reason: "the screen did not change".into(),
                    no_change: true,
                }
            }
            Reply::Opened(t) => {
                r.appeared = vec![t.to_string()];
                r.opened = vec!["a menu or popup at (10, 30), 200x300".into()];
                r.verdict = Verdict::Unconfirmed("\"Save As\" did not appear".into());
            }
            Reply::Unconfirmed => {
                r.verdict = Verdict::Unconfirmed("\"hello\" did not appear".into());
            }
            Reply::Refused(rule) => {
                r.status = ActStatus::Refused;
                r.verdict = Verdict::Unverified;
                r.refusal = Some(Refusal {
                    rule: Box::leak(rule.to_string().into_boxed_str()),
                    action: Some(1),
                    message: format!("{rule} says no"),
                });
            }
            Reply::Declined => {
                r.status = ActStatus::Declined;
                r.verdict = Verdict::Unverified;
                r.refusal = Some(Refusal {
                    rule: "confirmation",
                    action: None,
                    message: "needs a yes (confirm mode) and none was given".into(),
                });
            }
            Reply::Recorded => {
                r.status = ActStatus::Recorded;
                r.verdict = Verdict::Unverified;
            }
            Reply::Stop => {
                self.stopped = true;
                r.status = ActStatus::Stopped;
                r.verdict = Verdict::Unverified;
                r.refusal = Some(Refusal {
                    rule: "stopped",
                    action: None,
                    message: "stopped by SIGINT; nothing more will move this session".into(),
                });
            }
            Reply::CaptureError => {
                return ToolResult::error(ErrorKind::Capture, "the display went away")
            }
        }
        ToolResult::Act(Box::new(r))
    }
}

impl Host for FakeDesk {
    fn call(&mut self, call: &ToolCall) -> ToolResult {
        match call {
            ToolCall::Observe if self.blind > 0 => {
                self.blind -= 1;
                ToolResult::error(ErrorKind::Capture, "the display went away")
            }
            ToolCall::Observe => ToolResult::Observation(self.view()),
            ToolCall::Act(b) => self.act(b),
            ToolCall::Done { success, summary } => self.end(
                if *success {
                    Status::Done
                } else {
                    Status::Failed
                },
                summary,
            ),
        }
    }
    fn escape(&mut self) -> bool {
        self.escapes += 1;
        true
    }
    fn not_planned(&mut self, why: &str) {
        self.not_planned.push(why.into());
    }
    fn emit(&mut self, e: Event) {
        if let Event::Narration { text } = e {
            self.said.push(text);
        }
    }
    fn go(&mut self, _: State, _: &str) {}
    fn stopped(&mut self) -> Option<Cause> {
        self.stopped.then_some(Cause::Signal("SIGINT"))
    }
    fn end(&mut self, status: Status, summary: &str) -> ToolResult {
        assert!(self.ended.is_none(), "a session ends once");
        self.ended = Some((status, summary.into()));
        ToolResult::Ended {
            status,
            summary: summary.into(),
        }
    }
    fn broken(&mut self) -> Option<String> {
        self.broken.take()
    }
}

struct Case {
    name: &'static str,
    task: &'static str,
    replies: Vec<Reply>,
    step_cap: usize,
    status: Status,
    summary: &'static str,
    acts: usize,
    escapes: usize,
    not_planned: usize,
}

#[test]
fn table_of_policies_over_a_fake_desk() {
    use Reply::*;
    let case =
        |name, task, replies: Vec<Reply>, status, summary, acts, escapes, not_planned| Case {
            name,
            task,
            replies,
            step_cap: 20,
            status,
            summary,
            acts,
            escapes,
            not_planned,
        };
    let cases = vec![
        case(
            "all verified",
            "click 7, click +, click 5",
            vec![],
            Status::Done,
            "done: 3 steps",
            3,
            0,
            0,
        ),
        case(
            "unverified moves on",
            "click 7, click 5",
            vec![Unverified, Unverified],
            Status::Done,
            "done: 2 steps",
            2,
            0,
            0,
        ),
        case(
            "a missing label is looked for further down until a scroll moves nothing",
            "click Frobnicate",
            vec![Verified, NoChange],
            Status::Failed,
            "\"Frobnicate\" is not on screen, and scrolling down brought nothing more into view",
            2,
            0,
            0,
        ),
        case(
            "a missing label on content that keeps scrolling: six scrolls, then three misses",
            "click Frobnicate",
            vec![],
            Status::Failed,
            "step 6: Scrolling down to look for Frobnicate → verified; step 7: \"Frobnicate\" is not on screen",
            6,
            0,
            3,
        ),
        case(
            "no change, three times: the same click, no Escape",
            "click 7",
            vec![NoChange, NoChange, NoChange],
            Status::Failed,
            "no progress after 3 tries",
            3,
            0,
            0,
        ),
        case(
            "something else opened: Escape once, and the step is not repeated",
            "open File then Save As",
            vec![Opened("Print")],
            Status::Failed,
            "Clicking File was done, but I could not confirm it (\"Save As\" did not appear; something else opened (a menu or popup at (10, 30), 200x300))",
            1,
            1,
            0,
        ),
        case(
            "typing that cannot be confirmed is never typed again, and no Escape without a menu",
            "type \"hello\", press enter",
            vec![Unconfirmed],
            Status::Failed,
            "Typing \"hello\" was done, but I could not confirm it",
            1,
            0,
            0,
        ),
        case(
            "typing that changed nothing is not typed again either",
            "type \"hello\"",
            vec![NoChange],
            Status::Failed,
            "Typing \"hello\" was done, but nothing on screen showed it (the screen did not change), so I cannot tell whether it took effect; I am not repeating it",
            1,
            0,
            0,
        ),
        case(
            "Enter is not pressed twice",
            "press enter",
            vec![Unconfirmed],
            Status::Failed,
            "Pressing enter was done, but I could not confirm it",
            1,
            0,
            0,
        ),
        case(
            "waiting goes on while the text is not there yet",
            "wait for Done",
            vec![NoChange, Unconfirmed, Verified],
            Status::Done,
            "done: 1 step",
            3,
            0,
            0,
        ),
        case(
            "progress resets the counter",
            "click 7, click 5",
            vec![NoChange, NoChange, Verified, NoChange, NoChange, Verified],
            Status::Done,
            "done: 2 steps",
            6,
            0,
            0,
        ),
        case(
            "a refusal ends the offline planner's task",
            "click 7, click 5",
            vec![Refused("app-allowlist")],
            Status::Failed,
            "refused by rule `app-allowlist`: app-allowlist says no",
            1,
            0,
            0,
        ),
        case(
            "no yes",
            "click 7",
            vec![Declined],
            Status::Failed,
            "needs a yes (confirm mode) and none was given",
            1,
            0,
            0,
        ),
        case(
            "observe mode records every step",
            "click 7, click 5",
            vec![Recorded, Recorded],
            Status::Done,
            "Observe mode, so nothing was clicked or typed: 2 steps recorded.",
            2,
            0,
            0,
        ),
        case(
            "stopped mid-act",
            "click 7, click 5",
            vec![Stop],
            Status::Stopped,
            "stopped by SIGINT",
            1,
            0,
            0,
        ),
        case(
            "a capture error is no progress, then it recovers",
            "click 7",
            vec![CaptureError, Verified],
            Status::Done,
            "done: 1 step",
            2,
            0,
            0,
        ),
        case(
            "capture errors three times",
            "click 7",
            vec![CaptureError, CaptureError, CaptureError],
            Status::Failed,
            "no progress after 3 tries — tried: step 1: Clicking 7 → the display went away",
            3,
            0,
            0,
        ),
        case(
            "a broken record ends the session",
            "click 7, click 5",
            vec![BreakRecord],
            Status::Failed,
            "the session record could not be written (disk full)",
            1,
            0,
            0,
        ),
        Case {
            step_cap: 2,
            ..case(
                "the step cap",
                "click 7, click +, click 5",
                vec![],
                Status::Failed,
                "stopped at the step cap (2)",
                2,
                0,
                0,
            )
        },
    ];
    for c in cases {
        let mut desk = FakeDesk::new(&["7", "+", "5", "File", "="], &c.replies);
        let mut driver = offline::LocalPlanner::new(c.task).unwrap();
        let end = drive(
            &mut driver,
            &mut desk,
            Limits {
                step_cap: c.step_cap,
                no_progress: 3,
            },
        );
        let n = c.name;
        assert_eq!(end.status, c.status, "{n}: {end:?}");
        assert!(end.summary.contains(c.summary), "{n}: {:?}", end.summary);
        assert_eq!(desk.acts.len(), c.acts, "{n}: acts {:?}", desk.acts);
        assert_eq!(desk.escapes, c.escapes, "{n}: escapes");
        assert_eq!(desk.not_planned.len(), c.not_planned, "{n}: not planned");
        assert_eq!(
            desk.ended,
            Some((c.status, end.summary.clone())),
            "{n}: the desk was ended with the same status"
        );
        assert_eq!(desk.said.last(), Some(&end.summary), "{n}: the end is said");
    }
}

#[test]
fn a_screen_that_cannot_be_seen_ends_the_task_instead_of_looping() {
    for (blind, status, acts) in [(usize::MAX, Status::Failed, 0), (2, Status::Done, 1)] {
        let mut desk = FakeDesk::new(&["7"], &[]);
        desk.blind = blind;
        let mut driver = offline::LocalPlanner::new("click 7").unwrap();
        let end = drive(
            &mut driver,
            &mut desk,
            Limits {
                step_cap: 20,
                no_progress: 3,
            },
        );
        assert_eq!(end.status, status, "{end:?}");
        assert_eq!(desk.acts.len(), acts);
        if status == Status::Failed {
            assert!(end.summary.contains("no progress after 3 tries — tried: step 1: could not look: the display went away"), "{}", end.summary);
        }
    }
}

#[test]
fn every_batch_names_the_observation_it_was_planned_on_and_retries_are_the_same_click() {
    let mut desk = FakeDesk::new(&["7", "5"], &[Reply::NoChange, Reply::Verified]);
    let mut driver = offline::LocalPlanner::new("click 7").unwrap();
    let end = drive(
        &mut driver,
        &mut desk,
        Limits {
            step_cap: 20,
            no_progress: 3,
        },
    );
    assert_eq!(end.status, Status::Done);
    assert_eq!(desk.acts[0]["observation_id"], "fake-1");
    assert_eq!(
        desk.acts[1]["observation_id"], "fake-2",
        "planned on the screen after the first try"
    );
    assert_eq!(desk.acts[0]["actions"], desk.acts[1]["actions"]);
    assert!(desk
        .said
        .iter()
        .any(|s| s == "That didn't work: the screen did not change."));
    assert!(desk.said.iter().any(|s| s == "Done: the screen changed."));
}

/// A driver that only ever looks.
struct Looker;
impl Driver for Looker {
    fn provider(&self) -> &str {
        "test"
    }
    fn model(&self) -> &str {
        "looker"
    }
    fn decomposition(&self) -> Vec<String> {
        Vec::new()
    }
    fn next(&mut self, _: &ToolResult, _: &mut dyn FnMut(Event)) -> Move {
        Move {
            say: Vec::new(),
            plan: String::new(),
            what: What::Call(ToolCall::Observe),
        }
    }
}

#[test]
fn a_driver_that_only_looks_ends_instead_of_looping() {
    let mut desk = FakeDesk::new(&["7"], &[]);
    let end = drive(
        &mut Looker,
        &mut desk,
        Limits {
            step_cap: 20,
            no_progress: 3,
        },
    );
    assert_eq!(end.status, Status::Failed, "{end:?}");
    assert!(
        end.summary.contains("no progress after 3 tries")
            && end.summary.contains("looked again without acting"),
        "{}",
        end.summary
    );
    assert!(desk.acts.is_empty());
}

/// A driver (as a model might) that clicks 7 and then says it did.
struct Boaster {
    acted: bool,
}
impl Driver for Boaster {
    fn provider(&self) -> &str {
        "test"
    }
    fn model(&self) -> &str {
        "boaster"
    }
    fn decomposition(&self) -> Vec<String> {
        Vec::new()
    }
    fn next(&mut self, last: &ToolResult, _: &mut dyn FnMut(Event)) -> Move {
        let what = match (last, self.acted) {
            (ToolResult::Observation(o), false) => {
                self.acted = true;
                What::Call(ToolCall::Act(voxdesk_core::action::Batch {
                    observation_id: Some(o.id.clone()),
                    actions: vec![voxdesk_core::action::Action::Click {
                        at: voxdesk_core::action::Pos::Target(1),
                    }],
                    expect: Default::default(),
                }))
            }
            _ => What::Call(ToolCall::Done {
                success: true,
                summary: "I clicked 7.".into(),
            }),
        };
        Move {
            say: Vec::new(),
            plan: "Clicking 7".into(),
            what,
        }
    }
}

#[test]
fn in_observe_mode_the_end_says_nothing_was_done_whoever_claims_otherwise() {
    for (replies, claims) in [
        (vec![Reply::Recorded], false),
        (vec![Reply::Verified], true),
    ] {
        let mut desk = FakeDesk::new(&["7"], &replies);
        let end = drive(
            &mut Boaster { acted: false },
            &mut desk,
            Limits {
                step_cap: 20,
                no_progress: 3,
            },
        );
        assert_eq!(desk.acts.len(), 1);
        let observed = "Observe mode, so nothing was clicked or typed: 1 step recorded.";
        // Observe mode: only what was recorded; the driver's claim is not repeated.
        assert_eq!(end.summary == observed, !claims, "{end:?}");
        assert_eq!(desk.ended.as_ref().map(|e| &e.1), Some(&end.summary));
        // One step: its last words say it, once.
        let told = desk
            .said
            .iter()
            .filter(|s| s.contains("Observe mode"))
            .count();
        assert_eq!(told, usize::from(!claims), "{:?}", desk.said);
    }
    // Three steps: said once before the second is planned aloud, and in the last words.
    let mut desk = FakeDesk::new(
        &["7", "+", "5"],
        &[Reply::Recorded, Reply::Recorded, Reply::Recorded],
    );
    let mut driver = offline::LocalPlanner::new("click 7, click +, click 5").unwrap();
    drive(
        &mut driver,
        &mut desk,
        Limits {
            step_cap: 20,
            no_progress: 3,
        },
    );
    assert_eq!(
        desk.said,
        [
            "Clicking 7.",
            "Observe mode: that was recorded, not done.",
            "Clicking +.",
            "Clicking 5.",
            "Observe mode, so nothing was clicked or typed: 3 steps recorded."
        ],
        "{:?}",
        desk.said
    );
}
