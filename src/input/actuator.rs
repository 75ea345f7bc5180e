//! The only module that uses enigo (synthetic input): one actuator thread that runs approved batches and halts the moment the stop latch is set.
//!
//! The actuator checks the latch ([`super::stop::StopLatch`]) between every keystroke and every
//! 5 ms of any wait, releases every key and button it holds, and drops whatever is queued.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use enigo::{
    Axis, Button as EButton, Coordinate, Direction as Press, Enigo, Key, Keyboard, Mouse, Settings,
};

use super::stop::StopLatch;
use crate::action::{Direction, Modifier};
use crate::geometry::LogicalPoint;
use crate::safety::rails::{Approved, Button, Step};

/// Longest stretch the actuator goes without looking at the stop latch.
const SLICE: Duration = Duration::from_millis(5);

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

impl Actuator {
    /// Start the actuator thread (it connects to `$DISPLAY` through enigo).
    pub fn start(latch: Arc<StopLatch>) -> Result<Actuator, String> {
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
                        let _ = ready_tx.send(Err(format!("cannot drive input: {err}")));
                    }
                }
            })
            .map_err(|e| e.to_string())?;
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| "the actuator did not start".to_string())??;
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
                pause(rate_limit, &latch);
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
        let _ = e.button(b, Press::Release);
    }
    for k in held.keys.drain(..).rev() {
        let _ = e.key(k, Press::Release);
    }
    let (keys, raw) = e.held();
    for k in keys {
        let _ = e.key(k, Press::Release);
    }
    for r in raw {
        let _ = e.raw(r, Press::Release);
    }
    if latch.is_stopped() {
        latch.mark_released();
    }
}

fn key_of(name: &str) -> Option<Key> {
    Some(match name {
        "enter" => Key::Return,
        "tab" => Key::Tab,
        "escape" => Key::Escape,
        "backspace" => Key::Backspace,
        "delete" => Key::Delete,
        "insert" => Key::Insert,
        "home" => Key::Home,
        "end" => Key::End,
        "pageup" => Key::PageUp,
        "pagedown" => Key::PageDown,
        "up" => Key::UpArrow,
        "down" => Key::DownArrow,
        "left" => Key::LeftArrow,
        "right" => Key::RightArrow,
        "space" => Key::Space,
        "ctrl" => Key::Control,
        "alt" => Key::Alt,
        "shift" => Key::Shift,
        "super" => Key::Meta,
        "capslock" => Key::CapsLock,
        "printscreen" => Key::PrintScr,
        "menu" => Key::Other(0xff67),
        f if f.starts_with('f') && f.len() > 1 => {
            let n: u32 = f[1..].parse().ok()?;
            // X keysyms F1..F35 are consecutive from 0xffbe.
            Key::Other(0xffbe + n - 1)
        }
        c if c.chars().count() == 1 => Key::Unicode(c.chars().next()?),
        _ => return None,
    })
}

fn modifier_key(m: Modifier) -> Key {
    match m {
        Modifier::Ctrl => Key::Control,
        Modifier::Alt => Key::Alt,
        Modifier::Shift => Key::Shift,
        Modifier::Super => Key::Meta,
    }
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
                    e.button(b, Press::Click)
                        .map_err(|err| format!("clicking: {err}"))?;
                }
                Ok(true)
            }
            Step::Type { text } => {
                // One character at a time: the stop latch is checked between keystrokes.
                let mut buf = [0u8; 4];
                for c in text.chars() {
                    if latch.is_stopped() {
                        return Ok(false);
                    }
                    e.text(c.encode_utf8(&mut buf))
                        .map_err(|err| format!("typing: {err}"))?;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(true)
            }
            Step::Key { combo } => {
                let key =
                    key_of(&combo.key).ok_or_else(|| format!("no key for {:?}", combo.key))?;
                for m in &combo.modifiers {
                    let k = modifier_key(*m);
                    e.key(k, Press::Press)
                        .map_err(|err| format!("pressing {m:?}: {err}"))?;
                    held.keys.push(k);
                }
                let r = e
                    .key(key, Press::Click)
                    .map_err(|err| format!("pressing {}: {err}", combo.key));
                while let Some(k) = held.keys.pop() {
                    let _ = e.key(k, Press::Release);
                }
                r.map(|_| true)
            }
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
                e.button(EButton::Left, Press::Press)
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
                e.button(EButton::Left, Press::Release)
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
    fn keys_map() {
        assert_eq!(key_of("enter"), Some(Key::Return));
        assert_eq!(key_of("f4"), Some(Key::Other(0xffc1)));
        assert_eq!(key_of("s"), Some(Key::Unicode('s')));
        assert_eq!(key_of("nope"), None);
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
