//! Shared test helpers: the binary, fixture paths, the virtual-desktop gate and private X servers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_voxdesk"));
    c.env("OMP_THREAD_LIMIT", "1");
    c
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ui")
        .join(name)
}

pub fn output(c: &mut Command) -> Output {
    c.output().expect("run voxdesk")
}

/// stderr of a failed command must be one clear line, never a panic.
pub fn assert_clean_failure(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "expected failure, got success; stderr: {err}"
    );
    assert_ne!(
        o.status.code(),
        Some(101),
        "exit code 101 is a panic: {err}"
    );
    assert!(!err.contains("panicked"), "panic: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(lines[0].starts_with("voxdesk: error:"), "{err}");
    assert!(
        lines[0].to_lowercase().contains(&needle.to_lowercase()),
        "expected {needle:?} in {err}"
    );
}

/// The shared virtual desktop, held exclusively: tests that open windows or send input must
/// not overlap (they would fight over focus, the pointer and the GUI lock).
pub struct Rig {
    pub display: String,
    _exclusive: std::sync::MutexGuard<'static, ()>,
}

impl std::ops::Deref for Rig {
    type Target = String;
    fn deref(&self) -> &String {
        &self.display
    }
}

static DESKTOP: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The display of the virtual desktop `cargo xtask test` started, or `None` (with a clear
/// message) outside it. Under `CI=true` a missing rig is a failure instead of a skip.
pub fn rig() -> Option<Rig> {
    let display = std::env::var("DISPLAY").ok().filter(|d| !d.is_empty());
    let in_rig = std::env::var("VOXDESK_RIG").is_ok_and(|v| v == "1");
    match display {
        Some(d) if in_rig => Some(Rig {
            display: d,
            _exclusive: DESKTOP.lock().unwrap_or_else(|p| p.into_inner()),
        }),
        _ => {
            let msg = "this test needs the virtual desktop: run it with `cargo xtask test` (it starts a private Xvfb + openbox)";
            if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
                panic!("{msg}");
            }
            eprintln!("SKIPPED: {msg}");
            None
        }
    }
}

/// An X server of the test's own (to break things without touching the shared rig).
pub struct PrivateX {
    pub display: String,
    children: Vec<Child>,
}

impl PrivateX {
    pub fn start(extra_args: &[&str], with_wm: bool) -> PrivateX {
        PrivateX::sized("1280x800x24", extra_args, with_wm)
    }

    /// One of `screen` (Xvfb's WxHxDEPTH, e.g. a 3840x2160 desktop).
    pub fn sized(screen: &str, extra_args: &[&str], with_wm: bool) -> PrivateX {
        let mut n = 500 + (std::process::id() % 300);
        while Path::new(&format!("/tmp/.X{n}-lock")).exists()
            || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
        {
            n += 1;
        }
        let display = format!(":{n}");
        let x = Command::new("Xvfb")
            .args([
                display.as_str(),
                "-screen",
                "0",
                screen,
                "-nolisten",
                "tcp",
                "-noreset",
            ])
            .args(extra_args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb");
        let mut me = PrivateX {
            display,
            children: vec![x],
        };
        wait_for(Duration::from_secs(10), || {
            Command::new("xdpyinfo")
                .env("DISPLAY", &me.display)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        let _ = Command::new("xrandr")
            .env("DISPLAY", &me.display)
            .args(["--output", "screen", "--primary"])
            .status();
        let _ = Command::new("xsetroot")
            .env("DISPLAY", &me.display)
            .args(["-solid", "#3a6ea5"])
            .status();
        if with_wm {
            let wm = Command::new("openbox")
                .env("DISPLAY", &me.display)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("openbox");
            me.children.push(wm);
            wait_for(Duration::from_secs(10), || {
                Command::new("xprop")
                    .env("DISPLAY", &me.display)
                    .args(["-root", "_NET_SUPPORTING_WM_CHECK"])
                    .output()
                    .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("window id"))
            });
        }
        me
    }

    /// Kill the X server (and the WM) now: SIGTERM, so Xvfb removes its lock file and socket.
    pub fn kill(&mut self) {
        while let Some(mut c) = self.children.pop() {
            if let Ok(pid) = i32::try_from(c.id()) {
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            if !wait_for(Duration::from_secs(2), || {
                matches!(c.try_wait(), Ok(Some(_)))
            }) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

impl Drop for PrivateX {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn wait_for(timeout: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < timeout {
        if ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A child process killed when the test ends, pass or fail.
pub struct Guard(pub Child);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What an app prints when a resource it loads at run time is missing and it quietly falls back
/// (a font from an uninstalled package, a font set, fontconfig's own configuration).
pub const MISSING_RESOURCE: &[&str] = &[
    "Cannot convert string",
    "Missing charsets",
    "cannot load font",
    "Unable to load any usable",
    "Fontconfig error",
];

/// Start an app and focus it; killed when the guard drops. Fails when the app reports a missing
/// resource on stderr: a package the tests need but the xtask does not install shows up here
/// instead of as a quiet fallback that only looks different.
pub fn app(display: &str, cmd: &[&str], class: &str) -> Guard {
    let (g, stderr) = app_with_stderr(display, cmd, class);
    let missing: Vec<&str> = stderr
        .lines()
        .filter(|l| MISSING_RESOURCE.iter().any(|m| l.contains(m)))
        .collect();
    assert!(
        missing.is_empty(),
        "{} is missing run-time resources (a package the xtask should install):\n{}",
        cmd[0],
        missing.join("\n")
    );
    g
}

/// Start an app and focus it, and return what it printed on stderr until its window was up.
pub fn app_with_stderr(display: &str, cmd: &[&str], class: &str) -> (Guard, String) {
    use std::io::{Read, Seek};
    let log = tempfile::tempfile().expect("a temporary file for the app's stderr");
    let mut reader = log.try_clone().expect("a second handle on it");
    let g = Guard(
        Command::new(cmd[0])
            .env("DISPLAY", display)
            .args(&cmd[1..])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start app"),
    );
    assert!(
        wait_for(Duration::from_secs(10), || !Command::new("xdotool")
            .env("DISPLAY", display)
            .args(["search", "--class", class])
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default()
            .is_empty()),
        "{class} window"
    );
    let _ = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(["search", "--class", class, "windowactivate", "--sync"])
        .status();
    std::thread::sleep(Duration::from_millis(400));
    let mut stderr = String::new();
    let _ = reader.rewind();
    let _ = reader.read_to_string(&mut stderr);
    (g, stderr)
}

/// Chromium with a throwaway profile and nothing that reaches the network (root needs no sandbox).
pub fn chromium(profile: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--force-renderer-accessibility",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Hold the default emergency-stop combination (ctrl+alt+Escape) for 600 ms through XTEST, as a
/// person would.
pub fn hold_stop_combo(display: &str) {
    let xd = |action: &str| {
        Command::new("xdotool")
            .env("DISPLAY", display)
            .args([action, "ctrl+alt+Escape"])
            .status()
    };
    let _ = xd("keydown");
    std::thread::sleep(Duration::from_millis(600));
    let _ = xd("keyup");
}

/// The files in a directory, sorted by path.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Keys the X server reports down right now.
pub fn keys_down(display: &str) -> Vec<u8> {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::ConnectionExt as _;
    let (c, _) = x11rb::connect(Some(display)).unwrap();
    let km = c.query_keymap().unwrap().reply().unwrap().keys;
    let _ = c.setup();
    (0..=255u8)
        .filter(|k| km[*k as usize / 8] & (1 << (k % 8)) != 0)
        .collect()
}

/// A target's box from `look --json` (`[x, y, w, h]` in the picture's pixels, the space `act`
/// takes), as the picture has it.
pub fn picture_box(t: &serde_json::Value) -> (f64, f64, f64, f64) {
    let b = |i: usize| t["box"][i].as_f64().expect("a box of four numbers");
    (b(0), b(1), b(2), b(3))
}

/// A target's centre in the picture's pixels: what `act` takes as x/y.
pub fn picture_centre(t: &serde_json::Value) -> (f64, f64) {
    let (x, y, w, h) = picture_box(t);
    (x + w / 2.0, y + h / 2.0)
}

/// A target's box from `look` (`look` the whole output), in the screen's pixels (for xdotool
/// and for places measured on the screen), through the sizes `look` reports.
pub fn screen_box(look: &serde_json::Value, t: &serde_json::Value) -> (i64, i64, i64, i64) {
    let rx = look["capture"][0].as_f64().unwrap() / look["picture"][0].as_f64().unwrap();
    let ry = look["capture"][1].as_f64().unwrap() / look["picture"][1].as_f64().unwrap();
    let (x, y, w, h) = picture_box(t);
    (
        (x * rx).round() as i64,
        (y * ry).round() as i64,
        (w * rx).round() as i64,
        (h * ry).round() as i64,
    )
}
