//! Narration through the real (virtual) sound card: what voxdesk says is heard on the speaker (recorded from `spk.monitor`), `--quiet` is silent, and a missing audio output leaves the task running, printed only.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

/// The rig's PulseAudio must answer: under `cargo xtask test` a missing sound card is a failure.
fn sound_card() {
    let ok = Command::new("pactl")
        .arg("info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "the rig's PulseAudio does not answer (pactl info)");
}

/// Peak level in dB of a WAV file, from `sox FILE -n stats` (`-inf` for digital silence).
fn peak_db(wav: &Path) -> f64 {
    let o = Command::new("sox")
        .arg(wav)
        .args(["-n", "stats"])
        .output()
        .expect("run sox");
    let text = String::from_utf8_lossy(&o.stderr);
    let line = text
        .lines()
        .find(|l| l.starts_with("Pk lev dB"))
        .unwrap_or_else(|| panic!("no peak level in sox stats: {text}"));
    let v = line.split_whitespace().nth(3).expect("a value");
    v.parse().unwrap_or(f64::NEG_INFINITY)
}

/// Record the speaker while `voxdesk run` does a one-step observe-mode task; return the peak level.
fn heard_while(display: &str, extra: &[&str]) -> (f64, String) {
    let _calc = app(display, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("speaker.wav");
    let mut rec = Guard(
        Command::new("parecord")
            .args(["-d", "spk.monitor", "--file-format=wav"])
            .arg(&wav)
            .spawn()
            .expect("parecord"),
    );
    std::thread::sleep(Duration::from_millis(300));
    let o = bin()
        .env("DISPLAY", display)
        .env("XDG_DATA_HOME", dir.path())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .args(["run", "--mode", "observe"])
        .args(extra)
        .arg("click 5")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::thread::sleep(Duration::from_millis(300));
    // SIGINT lets parecord finish the WAV header.
    sigint(rec.0.id());
    let _ = rec.0.wait();
    (peak_db(&wav), out)
}

fn sigint(pid: u32) {
    let _ = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status();
}

#[test]
fn narration_is_heard_on_the_speaker_and_quiet_is_silent() {
    let Some(rig) = rig() else { return };
    sound_card();
    let (spoken, out) = heard_while(&rig, &[]);
    assert!(out.contains("Clicking 5."), "{out}");
    assert!(
        spoken > -20.0,
        "narration peak {spoken} dB: nothing was heard"
    );
    let (quiet, out) = heard_while(&rig, &["--quiet"]);
    assert!(
        out.contains("Clicking 5."),
        "printed even when quiet: {out}"
    );
    assert!(quiet < -60.0, "--quiet still made sound (peak {quiet} dB)");
}

#[test]
fn without_an_audio_output_the_task_runs_and_narration_is_printed() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = app(d, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    let data = tempfile::tempdir().unwrap();
    let o = bin()
        .env("DISPLAY", d)
        .env("XDG_DATA_HOME", data.path())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .env("PULSE_SERVER", "unix:/nonexistent/pulse")
        .args(["run", "--mode", "observe", "click 5"])
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("Clicking 5."), "{out}");
    assert!(err.contains("narration is printed only"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
