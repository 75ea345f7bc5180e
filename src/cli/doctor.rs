//! Preflight: one line per check, a distinct message and fix per cause, and whether voxdesk can run at all.

use voxdesk_perception::engine;
use voxdesk_screen::capture::{self, CaptureError};
use voxdesk_screen::desktop::{self, DisplayError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Fail,
    /// voxdesk runs, with less: narration printed instead of spoken.
    Warn,
    Skipped,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    /// What to do about it (empty when nothing is needed).
    pub fix: String,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Ok,
            detail: detail.into(),
            fix: String::new(),
        }
    }
    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Fail,
            detail: detail.into(),
            fix: fix.into(),
        }
    }
    fn warn(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Warn,
            detail: detail.into(),
            fix: fix.into(),
        }
    }
    fn skipped(name: &'static str, why: &str) -> Check {
        Check {
            name,
            status: Status::Skipped,
            detail: format!("skipped: {why}"),
            fix: String::new(),
        }
    }
}

/// Run every check against the real environment.
/// Every check. `models`: the models directory the settings name; `load_model`: load the
/// speech model to prove it works (the daemon's periodic health only looks for its files).
pub fn run(models: Option<&std::path::Path>, load_model: bool) -> Vec<Check> {
    let mut out = Vec::new();
    let env = |k: &str| std::env::var(k).ok();
    let wayland = capture::is_wayland(env);
    out.push(if wayland {
        Check::fail("session", "Wayland session: unsupported — voxdesk can only see and drive an X11 desktop", "log in to an X11 (\"Xorg\") session; XWayland cannot capture or drive native Wayland windows")
    } else {
        Check::ok("session", "X11")
    });
    let facts = if wayland {
        Err(DisplayError::NoDisplay)
    } else {
        desktop::probe()
    };
    match &facts {
        Ok(f) => out.push(Check::ok("display", format!("{} ({}x{})", f.display, f.screen.0, f.screen.1))),
        Err(DisplayError::NoDisplay) if wayland => out.push(Check::skipped("display", "Wayland session")),
        Err(DisplayError::NoDisplay) => out.push(Check::fail("display", "no DISPLAY: not running inside an X session", "run voxdesk from a terminal on your X11 desktop, or export DISPLAY=:0")),
        Err(e @ DisplayError::Unreachable { .. }) => out.push(Check::fail("display", format!("X server unreachable: {e}"), "check DISPLAY and that the X server runs; for another user's display, `xhost +SI:localuser:$USER`")),
        Err(e) => out.push(Check::fail("display", e.to_string(), "restart the X session")),
    }
    match &facts {
        Ok(f) if f.xtest => out.push(Check::ok("xtest", "XTEST present: synthetic input available")),
        Ok(_) => out.push(Check::fail("xtest", "XTEST extension missing: voxdesk cannot move the mouse or type", "enable XTEST (Xorg: remove `Option \"XTEST\" \"Disable\"`; Xvfb: start it with `+extension XTEST`)")),
        Err(_) => out.push(Check::skipped("xtest", "no X server")),
    }
    match &facts {
        Ok(f) => match &f.window_manager {
            Some(wm) => out.push(Check::ok("window-manager", wm.clone())),
            None => out.push(Check::fail("window-manager", "no window manager: the focused window and its application cannot be known, so no app can be allowed", "start an EWMH window manager (e.g. `openbox &`)")),
        },
        Err(_) => out.push(Check::skipped("window-manager", "no X server")),
    }
    if facts.is_ok() {
        out.push(match capture::capture_primary() {
            Ok(frame) => {
                let (w, h) = frame.size();
                let black = frame.image.as_raw().chunks_exact(4).all(|p| p[0] == 0 && p[1] == 0 && p[2] == 0);
                if black {
                    Check::fail("capture", format!("capture returns an all-black {w}x{h} image"), "the screen may be locked or blanked, or a compositor blocks XGetImage; unlock it and retry")
                } else {
                    Check::ok("capture", format!("primary monitor {} {w}x{h} at {:?}, scale {:.2}", frame.monitor.name, frame.monitor.origin, frame.scale()))
                }
            }
            Err(e @ CaptureError::NoMonitor(_)) => Check::fail("capture", format!("capture returns nothing: {e}"), "mark a monitor primary: `xrandr --output <name> --primary`"),
            Err(e) => Check::fail("capture", format!("capture returns nothing: {e}"), "check that the X server allows XGetImage on the root window"),
        });
    } else {
        out.push(Check::skipped("capture", "no X server"));
    }
    let data = engine::tessdata_dir();
    match &data {
        Some(d) if std::path::Path::new(d).join("eng.traineddata").is_file() => out.push(Check::ok("tessdata", format!("{d}/eng.traineddata"))),
        Some(d) => out.push(Check::fail("tessdata", format!("TESSDATA_PREFIX={d} has no eng.traineddata"), "point TESSDATA_PREFIX at a tessdata directory, or unset it and `apt-get install tesseract-ocr-eng`")),
        None => out.push(Check::fail("tessdata", "English OCR data (eng.traineddata) not found", "apt-get install tesseract-ocr-eng")),
    }
    if data.is_some() {
        out.push(
            match engine::Engine::new().and_then(|mut e| e.read_gray(&[255u8; 64 * 32], 64, 32)) {
                Ok(_) => Check::ok(
                    "ocr-engine",
                    format!("Tesseract starts ({} workers)", engine::default_workers()),
                ),
                Err(e) => Check::fail(
                    "ocr-engine",
                    format!("OCR engine fails to start: {e}"),
                    "reinstall libtesseract5 and tesseract-ocr-eng",
                ),
            },
        );
    } else {
        out.push(Check::skipped("ocr-engine", "no tessdata"));
    }
    if !wayland {
        out.push(accessibility());
    }
    // Narration: without a voice or an output voxdesk still runs, printing what it would say.
    out.push(match voxdesk_voice::narrate::probe_voice() {
        Ok(v) => Check::ok("voice", v),
        Err(e) => Check::warn(
            "voice",
            format!("{e}: narration is printed only"),
            "apt-get install espeak-ng",
        ),
    });
    out.push(match voxdesk_voice::narrate::probe_output() {
        Ok(()) => Check::ok("audio-output", "the default output opens"),
        Err(e) => Check::warn("audio-output", format!("no audio output ({e}): narration is printed only"), "start the desktop's sound server (PulseAudio or PipeWire) and install libasound2-plugins so ALSA's default reaches it"),
    });
    // The microphone: opened for a moment, never recorded.
    out.push(
        match voxdesk_voice::mic::Mic::start(None, 16_000, 20, |_| true) {
            Ok(m) => Check::ok(
                "microphone",
                format!("{} ({} Hz)", m.device_name, m.device_rate),
            ),
            Err(e) => Check::warn(
                "microphone",
                format!("{e}: `voxdesk listen` cannot hear you; `run` still works"),
                "start the desktop's sound server and install libasound2-plugins",
            ),
        },
    );
    // The learned recogniser: its model and ONNX Runtime, loaded (not run).
    out.push(ears(models, load_model));
    out.push(eyes(models));
    // Which realtime providers have a key (never the key itself).
    let keys: Vec<String> = [("gemini", "GEMINI_API_KEY"), ("openai", "OPENAI_API_KEY")]
        .iter()
        .map(|(p, var)| {
            let set = env(var).is_some_and(|v| !v.trim().is_empty());
            format!("{p}: {}", if set { "key set" } else { "no key" })
        })
        .collect();
    out.push(Check::ok("realtime-keys", keys.join(", ")));
    out
}

/// The learned text reader's models (PP-OCRv6), which `perception.reader = "learned"` needs.
fn eyes(models: Option<&std::path::Path>) -> Check {
    let Some(dir) = voxdesk_onnx::models_dir(models) else {
        return Check::warn(
            "text-model",
            "no models directory (no HOME, no models.dir)",
            "set models.dir (or VOXDESK_MODELS_DIR)",
        );
    };
    let files = [
        voxdesk_onnx::RUNTIME,
        voxdesk_perception::learned::DET_FILE,
        voxdesk_perception::learned::REC_FILE,
    ];
    match files.iter().find(|f| !dir.join(f).is_file()) {
        None => Check::ok("text-model", format!("PP-OCRv6 in {}", dir.display())),
        Some(f) => Check::warn(
            "text-model",
            format!(
                "no {}: perception.reader = \"learned\" cannot start (Tesseract still reads)",
                dir.join(f).display()
            ),
            voxdesk_onnx::INSTALL,
        ),
    }
}

/// The offline recogniser (Moonshine on ONNX Runtime): where it lives, and whether it loads.
fn ears(models: Option<&std::path::Path>, load: bool) -> Check {
    let Some(dir) = voxdesk_onnx::models_dir(models) else {
        return Check::warn(
            "speech-model",
            "no models directory (no HOME, no models.dir)",
            "set models.dir (or VOXDESK_MODELS_DIR)",
        );
    };
    if !load {
        let files = [
            voxdesk_onnx::RUNTIME,
            "moonshine-base-en/encoder_model.ort",
            "moonshine-base-en/decoder_model_merged.ort",
            "moonshine-base-en/tokenizer.json",
        ];
        return match files.iter().find(|f| !dir.join(f).is_file()) {
            None => Check::ok(
                "speech-model",
                format!("Moonshine base (English) in {}", dir.display()),
            ),
            Some(f) => Check::warn(
                "speech-model",
                format!(
                    "no {}: offline listening falls back to pocketsphinx's grammar",
                    dir.join(f).display()
                ),
                voxdesk_onnx::INSTALL,
            ),
        };
    }
    let t = std::time::Instant::now();
    match voxdesk_moonshine::Moonshine::load(&dir, 1) {
        Ok(_) => Check::ok(
            "speech-model",
            format!(
                "Moonshine base (English) on ONNX Runtime 1.22.1 in {}, loaded in {:.0} ms",
                dir.display(),
                t.elapsed().as_secs_f64() * 1000.0
            ),
        ),
        Err(e) => Check::warn(
            "speech-model",
            format!("{e}; offline listening falls back to pocketsphinx's grammar"),
            voxdesk_onnx::INSTALL,
        ),
    }
}

/// The accessibility bus: up or not, the desktop's switch, which applications expose a tree and
/// which expose nothing (a browser started without accessibility), the focused one's included.
fn accessibility() -> Check {
    let mut reader = match voxdesk_a11y::Reader::open(voxdesk_a11y::Limits::default()) {
        Ok(r) => r,
        Err(e) => {
            return Check::warn(
                "accessibility",
                format!("{e}: targets come from OCR alone (no roles, states or exact values)"),
                "apt-get install at-spi2-core (and libatk-bridge2.0-0; libatk-adaptor libgail-common for GTK 2 apps)",
            )
        }
    };
    let apps = match reader.apps() {
        Ok(a) => a,
        Err(e) => {
            return Check::warn(
                "accessibility",
                e.to_string(),
                "restart the desktop session",
            )
        }
    };
    let switch = voxdesk_a11y::enabled();
    let exposing: Vec<String> = apps
        .iter()
        .filter(|a| a.windows > 0)
        .map(|a| {
            if a.toolkit.is_empty() {
                a.name.clone()
            } else {
                format!("{} ({})", a.name, a.toolkit)
            }
        })
        .collect();
    let mut silent: Vec<String> = apps
        .iter()
        .filter(|a| a.windows == 0 && !a.name.is_empty())
        .map(|a| a.name.clone())
        .collect();
    if let Ok(Some(w)) = capture::focused_window() {
        let on_bus = apps
            .iter()
            .any(|a| a.pid.is_some() && a.pid == w.pid && a.windows > 0);
        if !on_bus && !silent.contains(&w.app) {
            silent.push(format!("{} (focused)", w.app));
        }
    }
    let detail = format!(
        "bus up, assistive technologies {}; a tree from: {}; nothing from: {}",
        match switch {
            Some(true) => "on",
            Some(false) => "off",
            None => "unknown",
        },
        if exposing.is_empty() {
            "none".to_string()
        } else {
            exposing.join(", ")
        },
        if silent.is_empty() {
            "none".to_string()
        } else {
            silent.join(", ")
        },
    );
    let browser = silent.iter().any(|a| {
        ["chrom", "electron", "code", "brave", "slack"]
            .iter()
            .any(|b| a.to_lowercase().contains(b))
    });
    if browser || switch == Some(false) {
        Check::warn(
            "accessibility",
            detail,
            "Chromium/Electron expose their tree only when told: start them with --force-renderer-accessibility, or turn on the desktop's assistive technologies (org.a11y.Status IsEnabled, e.g. `gsettings set org.gnome.desktop.interface toolkit-accessibility true`); GTK 2 apps need GTK_MODULES=gail:atk-bridge. Apps with no tree (xterm, xcalc) are read by OCR",
        )
    } else {
        Check::ok("accessibility", detail)
    }
}

/// One line per check.
pub fn render(checks: &[Check]) -> String {
    let mut s = String::new();
    for c in checks {
        let tag = match c.status {
            Status::Ok => "ok  ",
            Status::Fail => "FAIL",
            Status::Warn => "warn",
            Status::Skipped => "--  ",
        };
        s.push_str(&format!("{tag}  {:<15} {}", c.name, c.detail));
        if !c.fix.is_empty() {
            s.push_str(&format!(" — fix: {}", c.fix));
        }
        s.push('\n');
    }
    s
}

pub fn all_ok(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.status != Status::Fail)
}
