//! The only module that uses device_query: the stop latch every part of a session watches, and the thread that sets it when the emergency-stop combination is held.
//!
//! The stop thread polls the physical key state every 5 ms on its own thread and X connection,
//! so it works while the caller waits on the network or OCR. The latch, once set, stays set for
//! the life of the session; it also records why it was set (the held keys or a signal), so the
//! session's summary says what stopped it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::action::{Combo, Modifier};

/// Poll interval of the stop thread (the issue asks for ≤ 10 ms).
pub const STOP_POLL: Duration = Duration::from_millis(5);

/// What set the latch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The emergency-stop combination was held.
    EmergencyStop,
    /// SIGINT (Ctrl-C) or SIGTERM.
    Signal(&'static str),
    /// A spoken or typed "stop", or a stop from a client.
    Requested,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::EmergencyStop => write!(f, "the emergency stop"),
            Cause::Signal(s) => write!(f, "{s}"),
            Cause::Requested => write!(f, "a stop request"),
        }
    }
}

/// The emergency-stop latch, shared by the stop thread, the actuator, the voice and the loop.
#[derive(Default)]
pub struct StopLatch {
    stopped: AtomicBool,
    at: Mutex<Option<(Instant, Cause)>>,
    /// When the actuator had released everything after the stop.
    released: Mutex<Option<Instant>>,
}

impl StopLatch {
    /// Set the latch; the first cause and time are kept.
    pub fn trigger(&self, cause: Cause) {
        if !self.stopped.swap(true, Ordering::SeqCst) {
            *self.at.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), cause));
        }
    }
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }
    pub fn triggered_at(&self) -> Option<Instant> {
        self.at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|a| a.0)
    }
    pub fn cause(&self) -> Option<Cause> {
        self.at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|a| a.1)
    }
    pub fn released_at(&self) -> Option<Instant> {
        *self.released.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// The actuator has released every key and button (the first time counts).
    pub fn mark_released(&self) {
        let mut r = self.released.lock().unwrap_or_else(|p| p.into_inner());
        if r.is_none() {
            *r = Some(Instant::now());
        }
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
                        (true, Some(t)) if t.elapsed() >= hold => {
                            latch.trigger(Cause::EmergencyStop)
                        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_the_latch() {
        assert_eq!(physical("ctrl").len(), 2);
        assert!(!physical("escape").is_empty());
        let l = StopLatch::default();
        assert!(!l.is_stopped() && l.cause().is_none());
        l.trigger(Cause::Signal("SIGTERM"));
        let t = l.triggered_at().unwrap();
        l.trigger(Cause::EmergencyStop);
        assert_eq!(l.triggered_at(), Some(t), "the first trigger time is kept");
        assert_eq!(l.cause(), Some(Cause::Signal("SIGTERM")), "and its cause");
    }
}
