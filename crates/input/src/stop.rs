//! The stop latch every part of a session watches, and the thread that sets it when the emergency-stop combination is held (the keyboard polled over its own x11rb connection).
//!
//! The stop thread polls the physical key state every 5 ms on its own thread and X connection,
//! so it works while the caller waits on the network or OCR. The latch, once set, stays set for
//! the life of the session; it also records why it was set (the held keys, a signal, the display
//! going away), so the session's summary says what stopped it.
//!
//! Why x11rb and not device_query: device_query reads the keys through Xlib, whose default I/O
//! error handler exits the whole process when the display goes away, so a session died
//! unrecorded. Over x11rb a lost display is an error: the watcher can no longer guarantee the
//! stop, so it sets the latch, and the session ends with a true record.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use voxdesk_core::action::Combo;

/// Poll interval of the stop thread (the issue asks for ≤ 10 ms).
pub const STOP_POLL: Duration = Duration::from_millis(5);

pub use voxdesk_safety::latch::{Cause, StopLatch};

/// The keysyms that make up one key of a combination (left or right modifier).
fn keysyms(name: &str) -> Vec<u32> {
    match name {
        "ctrl" => vec![0xffe3, 0xffe4],
        "shift" => vec![0xffe1, 0xffe2],
        "alt" => vec![0xffe9, 0xffea, 0xffe7, 0xffe8],
        "super" => vec![0xffeb, 0xffec],
        "escape" => vec![0xff1b],
        "enter" => vec![0xff0d, 0xff8d],
        "space" => vec![0x20],
        "tab" => vec![0xff09],
        "backspace" => vec![0xff08],
        "delete" => vec![0xffff],
        "insert" => vec![0xff63],
        "home" => vec![0xff50],
        "end" => vec![0xff57],
        "pause" => vec![0xff13],
        k if k.len() == 1 && k.chars().all(|c| c.is_ascii_alphanumeric()) => {
            vec![k
                .chars()
                .next()
                .map(|c| c.to_ascii_lowercase() as u32)
                .unwrap_or(0)]
        }
        k => match k.strip_prefix('f').and_then(|n| n.parse::<u32>().ok()) {
            Some(n @ 1..=24) => vec![0xffbe + n - 1],
            _ => Vec::new(),
        },
    }
}

/// Why a held-keys watcher (the emergency stop, push-to-talk) could not start.
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    /// No X connection of its own to read the keyboard with.
    #[error("{what} cannot watch the keyboard (no X display?): {message}")]
    NoDisplay { what: &'static str, message: String },
    /// The keyboard mapping could not be read.
    #[error("reading the keyboard mapping: {0}")]
    Keymap(String),
    /// A key of the combination is on no key of this keyboard.
    #[error("the combination {0} has a key voxdesk cannot watch")]
    Unwatchable(String),
    #[error("the watcher's thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// For each key of `combo`, the keycodes that produce it on this keyboard.
fn keycode_groups(
    conn: &impl x11rb::connection::Connection,
    combo: &Combo,
) -> Result<Vec<Vec<u8>>, StopError> {
    use x11rb::protocol::xproto::ConnectionExt as _;
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .map_err(|e| StopError::Keymap(e.to_string()))?
        .reply()
        .map_err(|e| StopError::Keymap(e.to_string()))?;
    let per = map.keysyms_per_keycode.max(1) as usize;
    let names: Vec<&str> = combo
        .modifiers
        .iter()
        .map(|m| m.name())
        .chain(std::iter::once(combo.key.as_str()))
        .collect();
    let groups: Vec<Vec<u8>> = names
        .iter()
        .map(|n| {
            let want = keysyms(n);
            map.keysyms
                .chunks(per)
                .enumerate()
                .filter(|(_, syms)| syms.iter().any(|s| want.contains(s)))
                .map(|(i, _)| min + i as u8)
                .collect()
        })
        .collect();
    if groups.iter().any(|g| g.is_empty()) {
        return Err(StopError::Unwatchable(combo.to_string()));
    }
    Ok(groups)
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
    ) -> Result<StopWatcher, StopError> {
        use x11rb::protocol::xproto::ConnectionExt as _;
        let (conn, _) = x11rb::connect(None).map_err(|e| StopError::NoDisplay {
            what: "the emergency stop",
            message: e.to_string(),
        })?;
        let groups = keycode_groups(&conn, combo)?;
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let handle = std::thread::Builder::new()
            .name("voxdesk-estop".into())
            .spawn(move || {
                let mut since: Option<Instant> = None;
                while !q.load(Ordering::Relaxed) {
                    let keys = match conn.query_keymap().map(|c| c.reply()) {
                        Ok(Ok(r)) => r.keys,
                        _ => {
                            // No display, no watched stop: nothing may move any more.
                            latch.trigger(Cause::DisplayLost);
                            return;
                        }
                    };
                    let down = |k: &u8| keys[*k as usize / 8] & (1 << (k % 8)) != 0;
                    let all = groups.iter().all(|g| g.iter().any(down));
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
            })?;
        Ok(StopWatcher {
            quit,
            handle: Some(handle),
        })
    }
}

/// Push-to-talk: a thread that keeps `held` true while every key of `combo` is down (polled on
/// its own X connection, like the stop). Dropping it ends the thread.
pub struct HeldWatcher {
    quit: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    pub held: Arc<AtomicBool>,
}

impl HeldWatcher {
    pub fn start(combo: &Combo) -> Result<HeldWatcher, StopError> {
        use x11rb::protocol::xproto::ConnectionExt as _;
        let (conn, _) = x11rb::connect(None).map_err(|e| StopError::NoDisplay {
            what: "push-to-talk",
            message: e.to_string(),
        })?;
        let groups = keycode_groups(&conn, combo)?;
        let quit = Arc::new(AtomicBool::new(false));
        let held = Arc::new(AtomicBool::new(false));
        let (q, h) = (quit.clone(), held.clone());
        let handle = std::thread::Builder::new()
            .name("voxdesk-ptt".into())
            .spawn(move || {
                while !q.load(Ordering::Relaxed) {
                    let Ok(Ok(r)) = conn.query_keymap().map(|c| c.reply()) else {
                        h.store(false, Ordering::Relaxed);
                        return;
                    };
                    let down = |k: &u8| r.keys[*k as usize / 8] & (1 << (k % 8)) != 0;
                    h.store(groups.iter().all(|g| g.iter().any(down)), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                }
            })?;
        Ok(HeldWatcher {
            quit,
            handle: Some(handle),
            held,
        })
    }
}

impl Drop for HeldWatcher {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
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
        assert_eq!(keysyms("ctrl").len(), 2);
        assert_eq!(keysyms("escape"), vec![0xff1b]);
        assert_eq!(keysyms("S"), vec![0x73]);
        assert_eq!(keysyms("f4"), vec![0xffc1]);
        assert!(keysyms("hyper").is_empty());
        let l = StopLatch::default();
        assert!(!l.is_stopped() && l.cause().is_none());
        l.trigger(Cause::Signal("SIGTERM"));
        let t = l.triggered_at().unwrap();
        l.trigger(Cause::EmergencyStop);
        assert_eq!(l.triggered_at(), Some(t), "the first trigger time is kept");
        assert_eq!(l.cause(), Some(Cause::Signal("SIGTERM")), "and its cause");
    }
}
