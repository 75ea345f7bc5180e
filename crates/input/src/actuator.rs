//! The only module that uses enigo (synthetic input): one actuator thread that runs approved batches and halts the moment the stop latch is set.
//!
//! The actuator checks the latch ([`super::stop::StopLatch`]) between every keystroke and every
//! 5 ms of any wait, releases every key and button it holds, and drops whatever is queued.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use enigo::{
    Axis, Button as EButton, Coordinate, Direction as Press_, Enigo, Key, Keyboard, Mouse, Settings,
};

use super::stop::StopLatch;
use voxdesk_core::action::Direction;
use voxdesk_core::geometry::LogicalPoint;
use voxdesk_core::keys::{self, Press};
use voxdesk_safety::rails::{Approved, Button, Step};

/// Longest stretch the actuator goes without looking at the stop latch.
const SLICE: Duration = Duration::from_millis(5);

/// How long an application gets to take in typed text before a key that acts on it (Return,
/// Tab): GTK's file chooser completes a typed path as it arrives, and a Return sent 2.5 ms after
/// the path was swallowed by the completion (nothing was saved).
const TEXT_SETTLES: Duration = Duration::from_millis(150);

/// Does this press act on the text before it (run it, submit it, leave the field)?
fn acts_on_text(p: &Press) -> bool {
    [keys::RETURN, keys::KP_ENTER, keys::TAB, keys::ISO_LEFT_TAB].contains(&p.keysym)
}

/// The pause before `next` (the whole step's first press) after `prev`: the rate limit, and at
/// least [`TEXT_SETTLES`] when typed text is followed by a key that acts on it.
fn gap(prev: Option<&Step>, next: &Step, rate_limit: Duration) -> Duration {
    let typed = matches!(prev, Some(Step::Type { presses, .. }) if presses.last().is_some_and(|p| !acts_on_text(p)));
    let acting = match next {
        Step::Key { press, .. } => acts_on_text(press),
        Step::Type { presses, .. } => presses.first().is_some_and(acts_on_text),
        _ => false,
    };
    if typed && acting {
        rate_limit.max(TEXT_SETTLES)
    } else {
        rate_limit
    }
}

/// What happened to one step.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    /// Not run because an earlier step of the batch failed.
    Skipped,
    /// Interrupted or skipped by the emergency stop.
    Stopped,
    Failed(String),
}

/// One step's report, sent as it finishes.
#[derive(Debug, Clone)]
pub struct StepReport {
    pub index: usize,
    pub outcome: Outcome,
    /// Time spent in the step itself (excluding the rate limit before it).
    pub took: Duration,
}

enum Job {
    Run {
        batch: Approved,
        rate_limit: Duration,
        reports: Sender<StepReport>,
    },
}

/// Handle to the actuator thread.
pub struct Actuator {
    jobs: Option<Sender<Job>>,
    handle: Option<JoinHandle<()>>,
    latch: Arc<StopLatch>,
}

/// Why the actuator could not start.
#[derive(Debug, thiserror::Error)]
pub enum ActuatorError {
    /// enigo could not open the display's input.
    #[error("cannot drive input: {0}")]
    NoInput(String),
    #[error("the actuator's thread: {0}")]
    Thread(#[from] std::io::Error),
    #[error("the actuator did not start")]
    Timeout,
}

impl Actuator {
    /// Start the actuator thread (it connects to `$DISPLAY` through enigo).
    pub fn start(latch: Arc<StopLatch>) -> Result<Actuator, ActuatorError> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let l = latch.clone();
        let handle = std::thread::Builder::new()
            .name("voxdesk-actuator".into())
            .spawn(move || {
                let settings = Settings {
                    linux_delay: 0,
                    release_keys_when_dropped: true,
                    ..Settings::default()
                };
                match Enigo::new(&settings) {
                    Ok(e) => {
                        let _ = ready_tx.send(Ok(()));
                        worker(e, rx, l);
                    }
                    Err(err) => {
                        let _ = ready_tx.send(Err(ActuatorError::NoInput(err.to_string())));
                    }
                }
            })?;
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| ActuatorError::Timeout)??;
        Ok(Actuator {
            jobs: Some(tx),
            handle: Some(handle),
            latch,
        })
    }

    /// Run an approved batch; reports arrive on the returned channel as steps finish.
    pub fn run(&self, batch: Approved, rate_limit: Duration) -> Receiver<StepReport> {
        let (tx, rx) = mpsc::channel();
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Run {
                batch,
                rate_limit,
                reports: tx,
            });
        }
        rx
    }

    pub fn latch(&self) -> &Arc<StopLatch> {
        &self.latch
    }
}

impl Drop for Actuator {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Sleep up to `d` in slices, returning false as soon as the latch is set.
fn pause(d: Duration, latch: &StopLatch) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if latch.is_stopped() {
            return false;
        }
        std::thread::sleep(SLICE.min(end.saturating_duration_since(Instant::now())));
    }
    !latch.is_stopped()
}

struct Held {
    keys: Vec<Key>,
    buttons: Vec<EButton>,
}

fn worker(mut e: Enigo, jobs: Receiver<Job>, latch: Arc<StopLatch>) {
    let mut held = Held {
        keys: Vec::new(),
        buttons: Vec::new(),
    };
    for job in jobs {
        let Job::Run {
            batch,
            rate_limit,
            reports,
        } = job;
        for (i, step) in batch.steps().iter().enumerate() {
            if i > 0 {
                // A stop during the pause shows up as the latch below.
                pause(gap(batch.steps().get(i - 1), step, rate_limit), &latch);
            }
            let t = Instant::now();
            let outcome = if latch.is_stopped() {
                Outcome::Stopped
            } else {
                execute(&mut e, step, &latch, &mut held)
            };
            if latch.is_stopped() {
                release_all(&mut e, &mut held, &latch);
            }
            let stopped = outcome == Outcome::Stopped;
            let failed = matches!(outcome, Outcome::Failed(_));
            let _ = reports.send(StepReport {
                index: i,
                outcome,
                took: t.elapsed(),
            });
            if stopped || failed {
                // Everything queued after a stop is dropped; after a failure the rest would act
                // on a screen that is not what was planned for.
                for j in i + 1..batch.steps().len() {
                    let outcome = if stopped {
                        Outcome::Stopped
                    } else {
                        Outcome::Skipped
                    };
                    let _ = reports.send(StepReport {
                        index: j,
                        outcome,
                        took: Duration::ZERO,
                    });
                }
                release_all(&mut e, &mut held, &latch);
                break;
            }
        }
    }
    release_all(&mut e, &mut held, &latch);
}

/// Release every key and button voxdesk pressed (and anything enigo still reports held).
fn release_all(e: &mut Enigo, held: &mut Held, latch: &StopLatch) {
    for b in held.buttons.drain(..) {
        let _ = e.button(b, Press_::Release);
    }
    for k in held.keys.drain(..).rev() {
        let _ = e.key(k, Press_::Release);
    }
    let (keys, raw) = e.held();
    for k in keys {
        let _ = e.key(k, Press_::Release);
    }
    for r in raw {
        let _ = e.raw(r, Press_::Release);
    }
    if latch.is_stopped() {
        latch.mark_released();
    }
}

/// The enigo keys for one press: the modifiers to hold (in order) and the key to click, every
/// one an X keysym. Nothing but the press the rails judged decides them.
fn enigo_keys(p: Press) -> (Vec<Key>, Key) {
    let held = p
        .mods
        .list()
        .into_iter()
        .map(|m| Key::Other(keys::modifier_keysym(m)))
        .collect();
    (held, Key::Other(p.keysym))
}

/// Send one press: hold its modifiers, click its key, let go of the modifiers.
fn send(e: &mut Enigo, p: Press, held: &mut Held) -> Result<(), String> {
    let (mods, key) = enigo_keys(p);
    let mut r = Ok(());
    for k in mods {
        if let Err(err) = e.key(k, Press_::Press) {
            r = Err(format!("pressing a modifier of {p}: {err}"));
            break;
        }
        held.keys.push(k);
    }
    if r.is_ok() {
        r = e
            .key(key, Press_::Click)
            .map_err(|err| format!("pressing {p}: {err}"));
    }
    while let Some(k) = held.keys.pop() {
        let _ = e.key(k, Press_::Release);
    }
    r
}

fn move_to(e: &mut Enigo, p: LogicalPoint) -> Result<(), String> {
    e.move_mouse(p.x, p.y, Coordinate::Abs)
        .map_err(|err| format!("moving the pointer: {err}"))
}

fn execute(e: &mut Enigo, step: &Step, latch: &StopLatch, held: &mut Held) -> Outcome {
    let res: Result<bool, String> = (|| {
        match step {
            Step::Click { at, button, count } => {
                move_to(e, *at)?;
                let b = if *button == Button::Right {
                    EButton::Right
                } else {
                    EButton::Left
                };
                for k in 0..*count {
                    if k > 0 && !pause(Duration::from_millis(40), latch) {
                        return Ok(false);
                    }
                    e.button(b, Press_::Click)
                        .map_err(|err| format!("clicking: {err}"))?;
                }
                Ok(true)
            }
            Step::Type { presses, .. } => {
                // One key at a time: the stop latch is checked between keystrokes; a Return or
                // Tab after text waits for the text to settle.
                for (k, p) in presses.iter().enumerate() {
                    if latch.is_stopped() {
                        return Ok(false);
                    }
                    if k > 0
                        && acts_on_text(p)
                        && !acts_on_text(&presses[k - 1])
                        && !pause(TEXT_SETTLES, latch)
                    {
                        return Ok(false);
                    }
                    send(e, *p, held)?;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(true)
            }
            Step::Key { press, .. } => send(e, *press, held).map(|_| true),
            Step::Scroll {
                direction,
                amount,
                at,
            } => {
                if let Some(p) = at {
                    move_to(e, *p)?;
                }
                let (axis, sign) = match direction {
                    Direction::Up => (Axis::Vertical, -1),
                    Direction::Down => (Axis::Vertical, 1),
                    Direction::Left => (Axis::Horizontal, -1),
                    Direction::Right => (Axis::Horizontal, 1),
                };
                for _ in 0..*amount {
                    if latch.is_stopped() {
                        return Ok(false);
                    }
                    e.scroll(sign, axis)
                        .map_err(|err| format!("scrolling: {err}"))?;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(true)
            }
            Step::Drag { from, to } => {
                move_to(e, *from)?;
                e.button(EButton::Left, Press_::Press)
                    .map_err(|err| format!("pressing the button: {err}"))?;
                held.buttons.push(EButton::Left);
                let n = 12;
                for k in 1..=n {
                    if !pause(Duration::from_millis(15), latch) {
                        return Ok(false);
                    }
                    let p = LogicalPoint {
                        x: from.x + (to.x - from.x) * k / n,
                        y: from.y + (to.y - from.y) * k / n,
                    };
                    move_to(e, p)?;
                }
                e.button(EButton::Left, Press_::Release)
                    .map_err(|err| format!("releasing the button: {err}"))?;
                held.buttons.clear();
                Ok(true)
            }
            Step::Wait { ms } => Ok(pause(Duration::from_millis(*ms), latch)),
        }
    })();
    match res {
        Ok(true) => Outcome::Done,
        Ok(false) => Outcome::Stopped,
        Err(m) => Outcome::Failed(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_that_acts_on_typed_text_waits_for_it_to_settle() {
        let rate = Duration::from_millis(20);
        let ty = |t: &str| Step::Type {
            text: t.into(),
            presses: keys::lower_text(t).unwrap(),
        };
        let key = |c: &str| Step::Key {
            combo: voxdesk_core::action::parse_combo(c).unwrap(),
            press: keys::lower_combo(&voxdesk_core::action::parse_combo(c).unwrap()).unwrap(),
        };
        let table = [
            (Some(ty("/tmp/out.txt")), key("enter"), TEXT_SETTLES),
            (Some(ty("name")), key("tab"), TEXT_SETTLES),
            (Some(ty("name")), ty("\n"), TEXT_SETTLES),
            (Some(ty("name\n")), key("enter"), rate),
            (Some(ty("name")), key("ctrl+a"), rate),
            (Some(key("ctrl+a")), key("enter"), rate),
            (None, key("enter"), rate),
        ];
        for (prev, next, want) in table {
            assert_eq!(
                gap(prev.as_ref(), &next, rate),
                want,
                "{prev:?} then {next:?}"
            );
        }
        assert_eq!(
            gap(Some(&ty("x")), &key("enter"), Duration::from_secs(1)),
            Duration::from_secs(1)
        );
    }

    /// What the rails judged is what is sent: for every spelling of a key and every typed
    /// text, the keys given to enigo are the judged presses' keysyms with their modifiers held.
    #[test]
    fn the_keys_sent_are_the_presses_judged() {
        use voxdesk_core::action::parse_combo;
        for combo in [
            "ctrl+alt+\u{7f}",
            "shift+\\",
            ";",
            "ctrl+shift+Tab",
            "f4",
            "super",
            "\r",
        ] {
            let p = keys::lower_combo(&parse_combo(combo).unwrap()).unwrap();
            let (held, key) = enigo_keys(p);
            assert_eq!(key, Key::Other(p.keysym), "{combo:?}");
            let mods: Vec<Key> = p
                .mods
                .list()
                .into_iter()
                .map(|m| Key::Other(keys::modifier_keysym(m)))
                .collect();
            assert_eq!(held, mods, "{combo:?}");
        }
        let text = "a|b\nc\t€";
        let presses = keys::lower_text(text).unwrap();
        assert_eq!(presses.len(), text.chars().count());
        for p in presses {
            assert_eq!(enigo_keys(p), (vec![], Key::Other(p.keysym)));
        }
    }

    #[test]
    fn a_stopped_pause_returns_at_once() {
        let l = StopLatch::default();
        l.trigger(super::super::stop::Cause::EmergencyStop);
        assert!(
            !pause(Duration::from_secs(10), &l),
            "a stopped pause returns at once"
        );
    }
}
