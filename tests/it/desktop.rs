//! Tests against a real X server: `look` over a real xcalc window, the measured capture scale, `doctor`'s distinct causes, and a display that dies mid-run.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

#[test]
fn look_sees_xcalc_keys_where_the_window_is() {
    let Some(rig) = rig() else { return };
    let display: &str = &rig;
    let calc = app(display, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("look.png");
    let o = output(
        bin()
            .env("DISPLAY", display)
            .args(["look", "--json", "--annotate"])
            .arg(&png),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["app"], "XCalc", "{}", v["app"]);
    assert_eq!(v["scale"], 1.0);
    assert_eq!(
        (v["capture"][0].as_u64(), v["capture"][1].as_u64()),
        (Some(1920), Some(1080))
    );
    // Boxes are in the picture's pixels, the space `act` takes (one space for look and act).
    assert_eq!(
        (v["picture"][0].as_u64(), v["picture"][1].as_u64()),
        (Some(1280), Some(720))
    );
    assert!(v["observation_id"].as_str().is_some_and(|s| !s.is_empty()));
    let targets = v["targets"].as_array().unwrap();
    // Calculator keys, each inside the window that was placed at (400,200) 300x400.
    for key in ["8", "4", "5", "6", "1", "2", "3", "+", "sin", "cos", "log"] {
        let t = targets
            .iter()
            .find(|t| t["text"] == key)
            .unwrap_or_else(|| {
                panic!(
                    "key {key} not found in {:?}",
                    targets
                        .iter()
                        .map(|t| t["text"].as_str().unwrap())
                        .collect::<Vec<_>>()
                )
            });
        let (x, y, _, _) = screen_box(&v, t);
        assert!(
            (400..700).contains(&x) && (200..600).contains(&y),
            "{key} at {x},{y}"
        );
    }
    let pic = image::open(&png).expect("annotated PNG");
    assert_eq!((pic.width(), pic.height()), (1280, 720));
    drop(calc);
}

#[test]
fn doctor_passes_on_the_rig() {
    let Some(rig) = rig() else { return };
    let display: &str = &rig;
    let o = output(bin().env("DISPLAY", display).arg("doctor"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    for name in [
        "session",
        "display",
        "xtest",
        "window-manager",
        "capture",
        "tessdata",
        "ocr-engine",
        "voice",
        "audio-output",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with("ok") && l.contains(name)),
            "{name} not ok:\n{out}"
        );
    }
}

/// Each broken environment gets its own message (and fix), and a non-zero exit.
#[test]
fn doctor_names_each_cause() {
    let Some(_rig) = rig() else { return };
    let case = |c: &mut Command, needle: &str| {
        let o = output(c.arg("doctor"));
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("FAIL") && l.contains(needle) && l.contains("fix:")),
            "{needle:?} not in:\n{out}"
        );
    };
    case(bin().env_remove("DISPLAY"), "no DISPLAY");
    case(
        bin()
            .env("DISPLAY", ":1")
            .env("WAYLAND_DISPLAY", "wayland-0"),
        "Wayland session: unsupported",
    );
    case(bin().env("DISPLAY", ":4999"), "X server unreachable");
    // No sound server: a warning with its fix, and the run is still possible (exit 0).
    let o = output(
        bin()
            .env("PULSE_SERVER", "unix:/nonexistent/pulse")
            .arg("doctor"),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("warn")
            && l.contains("audio-output")
            && l.contains("printed only")
            && l.contains("fix:")),
        "{out}"
    );
    case(
        bin().env("TESSDATA_PREFIX", "/nonexistent"),
        "no eng.traineddata",
    );
    let no_wm = PrivateX::start(&[], false);
    case(bin().env("DISPLAY", &no_wm.display), "no window manager");
    let no_xtest = PrivateX::start(&["-extension", "XTEST"], true);
    case(
        bin().env("DISPLAY", &no_xtest.display),
        "XTEST extension missing",
    );
}

#[test]
fn look_without_a_display_is_a_clear_error() {
    let o = output(
        bin()
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("XDG_SESSION_TYPE")
            .arg("look"),
    );
    assert_clean_failure(&o, "DISPLAY is not set");
    let o = output(
        bin()
            .env("DISPLAY", ":1")
            .env("XDG_SESSION_TYPE", "wayland")
            .arg("look"),
    );
    assert_clean_failure(&o, "Wayland");
}

#[test]
fn display_going_away_mid_run_is_an_error_not_a_panic_or_hang() {
    let Some(_rig) = rig() else { return };
    for delay_ms in [0u64, 150, 400] {
        let mut x = PrivateX::start(&[], true);
        let mut child = bin()
            .env("DISPLAY", &x.display)
            .args(["look", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        x.kill();
        let finished = wait_for(Duration::from_secs(60), || {
            child.try_wait().ok().flatten().is_some()
        });
        if !finished {
            let _ = child.kill();
            panic!("voxdesk look hung after the display went away (delay {delay_ms} ms)");
        }
        let o = child.wait_with_output().unwrap();
        if !o.status.success() {
            assert_clean_failure(&o, "");
        }
    }
}
