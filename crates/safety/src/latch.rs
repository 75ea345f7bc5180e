//! The emergency-stop latch every part of a session watches (the stop thread, a signal, the actuator, the voice, the loop and the confirmation), and what set it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// What set the latch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The emergency-stop combination was held.
    EmergencyStop,
    /// SIGINT (Ctrl-C) or SIGTERM.
    Signal(&'static str),
    /// A spoken or typed "stop", or a stop from a client.
    Requested,
    /// The display went away: the emergency stop can no longer be watched.
    DisplayLost,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::EmergencyStop => write!(f, "the emergency stop"),
            Cause::Signal(s) => write!(f, "{s}"),
            Cause::Requested => write!(f, "a stop request"),
            Cause::DisplayLost => write!(
                f,
                "the display going away (the emergency stop could no longer be watched)"
            ),
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
