//! Narration through the real (virtual) sound card: what voxdesk says is heard on the speaker (recorded from `spk.monitor`), a new sentence cuts off a stale one, `--quiet` is silent, and a missing audio output leaves the task running, printed only.

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
pub fn peak_db(wav: &Path) -> f64 {
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
    let rec = Speaker::record(&wav);
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
    rec.stop();
    (peak_db(&wav), out)
}

/// What the rig's speaker plays, recorded from `spk.monitor` into a WAV.
pub struct Speaker(Guard);

impl Speaker {
    pub fn record(wav: &Path) -> Speaker {
        let g = Guard(
            Command::new("parecord")
                .args(["-d", "spk.monitor", "--file-format=wav"])
                .arg(wav)
                .spawn()
                .expect("parecord"),
        );
        // Recording once samples reach the file (the monitor gives silence when nothing plays):
        // on a sound server just started, the first client took about 3 s to begin, and a fixed
        // wait cut the start of what was played.
        let t = std::time::Instant::now();
        while std::fs::metadata(wav).map_or(0, |m| m.len()) < 8192
            && t.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        Speaker(g)
    }

    /// Keep recording a moment longer, then stop: SIGINT lets parecord finish the WAV header.
    pub fn stop(mut self) {
        std::thread::sleep(Duration::from_millis(300));
        let child = &mut (self.0).0;
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let _ = child.wait();
    }
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

/// 16-bit PCM samples of a WAV file (all channels interleaved) and its frames per second × channels.
fn pcm16(path: &Path) -> (Vec<i16>, f64) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[0..4], b"RIFF", "{} is not a WAV", path.display());
    let (mut i, mut rate, mut channels) = (12, 0u32, 0u16);
    while i + 8 <= b.len() {
        let id = &b[i..i + 4];
        let len = u32::from_le_bytes(b[i + 4..i + 8].try_into().unwrap()) as usize;
        let body = &b[i + 8..];
        if id == b"fmt " {
            channels = u16::from_le_bytes(body[2..4].try_into().unwrap());
            rate = u32::from_le_bytes(body[4..8].try_into().unwrap());
        } else if id == b"data" {
            // Streamed WAVs may leave the length open: take what is there.
            let data = &body[..len.min(body.len())];
            let s = data
                .chunks_exact(2)
                .map(|c| i16::from_le_bytes([c[0], c[1]]))
                .collect();
            return (s, rate as f64 * channels as f64);
        }
        i += 8 + len + (len & 1);
    }
    panic!("no data chunk in {}", path.display());
}

/// Seconds of sound (10 ms windows louder than -40 dBFS) in a WAV.
pub fn sounding_seconds(path: &Path) -> f64 {
    let (s, per_s) = pcm16(path);
    let win = (per_s / 100.0) as usize;
    let loud = s
        .chunks(win.max(1))
        .filter(|w| {
            let ms = w.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / w.len() as f64;
            ms.sqrt() > 32768.0 * 0.01
        })
        .count();
    loud as f64 / 100.0
}

#[test]
fn a_new_sentence_cuts_off_the_stale_one_and_the_last_is_heard_whole() {
    let Some(rig) = rig() else { return };
    sound_card();
    let d: &str = &rig;
    let _calc = app(d, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    let dir = tempfile::tempdir().unwrap();
    let (heard, said) = (dir.path().join("speaker.wav"), dir.path().join("said"));
    let rec = Speaker::record(&heard);
    // Four quick steps: each sentence is overtaken by the next long before it ends.
    let o = bin()
        .env("DISPLAY", d)
        .env("XDG_DATA_HOME", dir.path())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .args(["run", "--mode", "auto", "--narration-wav"])
        .arg(&said)
        .arg("click 1, click 2, click 3, click 4")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    rec.stop();
    let parts = files_in(&said);
    assert_eq!(parts.len(), 9, "4 plans, 4 results, 1 summary: {parts:?}");
    let full: f64 = parts.iter().map(|p| sounding_seconds(p)).sum();
    let last = sounding_seconds(parts.last().unwrap());
    let on_speaker = sounding_seconds(&heard);
    eprintln!(
        "said {full:.2} s in {} sentences, heard {on_speaker:.2} s, last {last:.2} s",
        parts.len()
    );
    assert!(
        on_speaker < 0.7 * full,
        "{on_speaker:.2} s heard of {full:.2} s said: stale sentences were not cut"
    );
    assert!(
        on_speaker >= last,
        "{on_speaker:.2} s heard, but the last sentence alone is {last:.2} s"
    );
}

#[test]
fn the_emergency_stop_silences_the_narration() {
    let Some(rig) = rig() else { return };
    sound_card();
    let d: &str = &rig;
    let _term = app(d, &["xterm", "-geometry", "80x20+100+100"], "XTerm");
    let dir = tempfile::tempdir().unwrap();
    let (heard, said) = (dir.path().join("speaker.wav"), dir.path().join("said"));
    // A long text: its "Typing …" sentence lasts over a minute, and typing it takes a while.
    let text = "alpha bravo charlie delta echo foxtrot golf hotel india juliet ".repeat(20);
    let rec = Speaker::record(&heard);
    let child = bin()
        .env("DISPLAY", d)
        .env("XDG_DATA_HOME", dir.path())
        .env("VOXDESK_ALLOW_APPS", "XTerm")
        .args(["run", "--mode", "auto", "--narration-wav"])
        .arg(&said)
        .arg(format!("type \"{}\"", text.trim()))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the first sentence is rendered it is playing; let it play a second, then stop.
    assert!(
        wait_for(Duration::from_secs(30), || said.join("001.wav").is_file()),
        "the first sentence was never rendered"
    );
    std::thread::sleep(Duration::from_millis(1000));
    hold_stop_combo(d);
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(4), "{out}");
    rec.stop();
    let parts = files_in(&said);
    let first = sounding_seconds(&parts[0]);
    let last = sounding_seconds(parts.last().unwrap());
    let on_speaker = sounding_seconds(&heard);
    eprintln!("typing sentence {first:.1} s, stop sentence {last:.1} s, heard {on_speaker:.1} s");
    assert!(out.contains("stopped by the emergency stop"), "{out}");
    assert!(
        on_speaker < last + 8.0 && on_speaker < first / 2.0,
        "{on_speaker:.1} s heard: the {first:.1} s sentence kept playing after the stop"
    );
}
