//! The only module that uses enigo (synthetic input) and device_query (the held-key emergency stop): one actuator thread that runs approved batches, one stop thread that can halt it at any moment.
//!
//! The stop thread polls the physical key state every 5 ms on its own thread, so it works while
//! the caller waits on the network or OCR. It sets a latch; the actuator checks the latch
//! between every keystroke and every 5 ms of any wait, releases every key and button it holds,
//! and drops whatever is queued. The latch stays set for the life of the session.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use enigo::{
    Axis, Button as EButton, Coordinate, Direction as Press, Enigo, Key, Keyboard, Mouse, Settings,
};

use crate::action::{Combo, Direction, Modifier};
use crate::geometry::LogicalPoint;
use crate::rails::{Approved, Button, Step};

/// Poll interval of the stop thread (the issue asks for ≤ 10 ms).
pub const STOP_POLL: Duration = Duration::from_millis(5);
/// Longest stretch the actuator goes without looking at the stop latch.
const SLICE: Duration = Duration::from_millis(5);

/// The emergency-stop latch, shared by the stop thread, the actuator and the caller.
#[derive(Default)]
pub struct StopLatch {
    stopped: AtomicBool,
    at: Mutex<Option<Instant>>,
    /// When the actuator had released everything after the stop.
    released: Mutex<Option<Instant>>,
}

impl StopLatch {
    pub fn trigger(&self) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            *self.at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        }
    }
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
    pub fn triggered_at(&self) -> Option<Instant> {
        *self.at.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn released_at(&self) -> Option<Instant> {
        *self.released.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The physical keys that make up one key of a combination (left or right modifier).
fn physical(name: &str) -> Vec<device_query::Keycode> {
    use device_query::Keycode as K;
    match name {
        "ctrl" => vec![K::LControl, K::RControl],
        "alt" => vec![K::LAlt, K::RAlt],
        "shift" => vec![K::LShift, K::RShift],
        "super" => vec![K::LMeta, K::RMeta],
        "escape" => vec![K::Escape],
        "enter" => vec![K::Enter],
        "space" => vec![K::Space],
        "tab" => vec![K::Tab],
        "backspace" => vec![K::Backspace],
        "delete" => vec![K::Delete],
        other => other.parse::<K>().map(|k| vec![k]).unwrap_or_default(),
    }
}

fn modifier_name(m: Modifier) -> &'static str {
    match m {
        Modifier::Ctrl => "ctrl",
        Modifier::Alt => "alt",
        Modifier::Shift => "shift",
        Modifier::Super => "super",
    }
}

/// The stop thread: trigger `latch` when every key of `combo` has been held for `hold`.
pub struct StopWatcher {
    quit: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl StopWatcher {
    pub fn start(
        combo: &Combo,
        hold: Duration,
        latch: Arc<StopLatch>,
    ) -> Result<StopWatcher, String> {
        let groups: Vec<Vec<device_query::Keycode>> = combo
            .modifiers
            .iter()
            .map(|m| physical(modifier_name(*m)))
            .chain(std::iter::once(physical(&combo.key)))
            .collect();
        if groups.iter().any(|g| g.is_empty()) {
            return Err(format!(
                "the stop combination {combo} has a key voxdesk cannot watch"
            ));
        }
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let (ready_tx, ready_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("voxdesk-estop".into())
            .spawn(move || {
                // DeviceState is not Send: it lives on this thread only.
                let Some(state) = device_query::DeviceState::checked_new() else {
                    let _ = ready_tx.send(false);
                    return;
                };
                let _ = ready_tx.send(true);
                let mut since: Option<Instant> = None;
                while !q.load(Ordering::Relaxed) {
                    let keys = state.query_keymap();
                    let all = groups.iter().all(|g| g.iter().any(|k| keys.contains(k)));
                    match (all, since) {
                        (true, None) => since = Some(Instant::now()),
                        (true, Some(t)) if t.elapsed() >= hold => latch.trigger(),
                        (false, _) => since = None,
                        _ => {}
                    }
                    std::thread::sleep(STOP_POLL);
                }
            })
            .map_err(|e| e.to_string())?;
        match ready_rx.recv_timeout(Duration::from_secs(5)) {
            Ok(true) => Ok(StopWatcher {
                quit,
                handle: Some(handle),
            }),
            _ => Err("the emergency stop cannot watch the keyboard (no X display?)".into()),
        }
    }
}

impl Drop for StopWatcher {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
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
        let mut r = latch.released.lock().unwrap_or_else(|p| p.into_inner());
        if r.is_none() {
            *r = Some(Instant::now());
        }
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
        assert_eq!(physical("ctrl").len(), 2);
        assert!(!physical("escape").is_empty());
    }

    #[test]
    fn latch_latches_once() {
        let l = StopLatch::default();
        assert!(!l.is_stopped());
        l.trigger();
        let t = l.triggered_at().unwrap();
        l.trigger();
        assert_eq!(l.triggered_at(), Some(t), "the first trigger time is kept");
        assert!(
            !pause(Duration::from_secs(10), &l),
            "a stopped pause returns at once"
        );
    }
}
