//! `GET /observe/health`: readiness without side effects — the preflight checks (display, XTEST, capture, OCR engine, audio devices) run on a background thread every half minute and read from memory, plus what is true now (the session, the GUI lock's owner, the emergency stop, which providers have keys); it never moves anything and never calls a model.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::runner::Runner;
use crate::cli::doctor::{self, Check, Status};
use voxdesk_input::lock;

/// How often the preflight checks are run again.
pub const EVERY: Duration = Duration::from_secs(30);

pub struct Health {
    checks: Arc<Mutex<(Vec<Check>, Instant)>>,
    combo: String,
    hold_ms: u64,
}

impl Health {
    /// Run the checks once now, then every `EVERY` on a thread of their own.
    pub fn start(combo: String, hold_ms: u64, models: Option<std::path::PathBuf>) -> Health {
        let checks = Arc::new(Mutex::new((
            doctor::run(models.as_deref(), false),
            Instant::now(),
        )));
        let c = checks.clone();
        let _ = std::thread::Builder::new()
            .name("voxdesk-health".into())
            .spawn(move || loop {
                std::thread::sleep(EVERY);
                let fresh = doctor::run(models.as_deref(), false);
                *c.lock().unwrap_or_else(|p| p.into_inner()) = (fresh, Instant::now());
            });
        Health {
            checks,
            combo,
            hold_ms,
        }
    }

    pub fn report(&self, runner: &Runner) -> Value {
        let (checks, at) = self
            .checks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let status = |c: &Check| match c.status {
            Status::Ok => "ok",
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Skipped => "skipped",
        };
        let find = |name: &str| checks.iter().find(|c| c.name == name);
        let ok = |name: &str| find(name).is_some_and(|c| c.status == Status::Ok);
        let key = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
        let display = std::env::var("DISPLAY").unwrap_or_default();
        let owner = lock::lock_path(&display)
            .and_then(std::fs::read_to_string)
            .ok()
            .and_then(|t| serde_json::from_str::<lock::Owner>(&t).ok())
            .map(|o| {
                let live = lock::is_live(&o, voxdesk_record::session::now_ms());
                json!({"pid": o.pid, "display": o.display, "live": live,
                       "this_daemon": o.pid == std::process::id()})
            });
        let session = runner.with_current(|c| {
            json!({"id": c.id, "stopping": c.latch.is_stopped(),
                   "pending_confirmation": c.asker.pending().is_some()})
        });
        json!({
            "ready": doctor::all_ok(&checks),
            "checked_ms_ago": at.elapsed().as_millis() as u64,
            "checks": checks.iter().map(|c| json!({
                "name": c.name, "status": status(c), "detail": c.detail, "fix": c.fix,
            })).collect::<Vec<_>>(),
            "actuator": ok("display") && ok("xtest"),
            "capture": ok("capture"),
            "ocr_engine": ok("ocr-engine"),
            "audio": {"output": ok("audio-output"), "microphone": ok("microphone"), "voice": ok("voice")},
            "providers": {
                "local": {"needs_key": false, "ready": true},
                "gemini": {"needs_key": true, "key_set": key("GEMINI_API_KEY")},
                "openai": {"needs_key": true, "key_set": key("OPENAI_API_KEY")},
            },
            "lock": owner,
            "session": session,
            "vision": "OCR targets: numbered labels from Tesseract; a picture is sent only to a deployment measured to use it (voxdesk probe)",
            "emergency_stop": {
                "combo": self.combo,
                "hold_ms": self.hold_ms,
                // Armed by each session's desk; it can be armed when XTEST and the display work.
                "armed": session.is_some(),
                "can_arm": ok("display"),
            },
        })
    }
}
