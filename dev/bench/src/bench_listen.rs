//! `voxdesk bench voice`, the local half, on the virtual desktop and sound card: barge-in (speech onset at the mic → speaker silent on its monitor), false barge-ins from voxdesk's own voice looped into the mic at −10 dB, the accuracy part (bench_ears.rs), end of speech → first action on xcalc, a spoken stop → the latch, and the CPU of the idle listening path.

use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::bench::{median, percentile};
use crate::monitor::Monitor;
use voxdesk_agent::offline::LocalPlanner;
use voxdesk_agent::{drive, Limits};
use voxdesk_core::config::{Mode as Rails, Settings};
use voxdesk_desk::tool::{ToolCall, ToolResult};
use voxdesk_desk::{confirm::Nobody, Desk, Host, RecordSpec};
use voxdesk_input::stop::{Cause, StopLatch};
use voxdesk_record::events::{Event, State};
use voxdesk_record::session::Status;
use voxdesk_voice::grammar::{Heard, Mode};
use voxdesk_voice::listen::{Listener, Note, Spec};
use voxdesk_voice::mic::{Frame, Mic};
use voxdesk_voice::narrate::Narrator;

/// The synthetic voices: (name, program and arguments before the text).
pub const VOICES: &[(&str, &[&str])] = &[
    (
        "espeak en-us+klatt2",
        &["espeak-ng", "-v", "en-us+klatt2", "-s", "150"],
    ),
    (
        "espeak en-us+klatt",
        &["espeak-ng", "-v", "en-us+klatt", "-s", "150"],
    ),
    ("flite slt", &["flite", "-voice", "slt"]),
    ("flite rms", &["flite", "-voice", "rms"]),
];
/// xcalc's keys and a file manager's and editor's words: the grammar's slots.
pub const LABELS: &[&str] = &[
    "AC",
    "7",
    "8",
    "9",
    "÷",
    "4",
    "5",
    "6",
    "×",
    "1",
    "2",
    "3",
    "-",
    "0",
    ".",
    "=",
    "+",
    "1/x",
    "x²",
    "√",
    "CE",
    "sin",
    "cos",
    "tan",
    "log",
    "ln",
    "π",
    "e",
    "EE",
    "INV",
    "DRG",
    "STO",
    "RCL",
    "SUM",
    "EXC",
    "(",
    ")",
    "Downloads",
    "Documents",
    "Music",
    "Pictures",
    "Videos",
    "Desktop",
    "Trash",
    "Home",
    "File",
    "Edit",
    "View",
    "Help",
    "Save",
    "Save As…",
    "Open",
    "Close",
];

/// Sentences no command describes.
pub const OUT_OF_GRAMMAR: &[&str] = &[
    "what is the weather like today",
    "I think we should go home now",
    "the quick brown fox jumps over the lazy dog",
    "please tell me a joke",
    "how many people live in paris",
    "my favourite colour is blue",
    "can you hear the music",
    "let us meet tomorrow morning",
];

/// `text` spoken by `voice`, as 16 kHz mono PCM16.
pub fn synth(voice: &[&str], text: &str) -> Result<Vec<i16>> {
    let wav =
        voxdesk_core::private::runtime_dir()?.join(format!("synth-{}.wav", std::process::id()));
    drop(voxdesk_core::private::create(&wav)?);
    let mut c = Command::new(voice[0]);
    c.args(&voice[1..]);
    if voice[0] == "flite" {
        c.args(["-t", text, "-o"]).arg(&wav);
    } else {
        c.arg("-w").arg(&wav).arg("--").arg(text);
    }
    let st = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("starting {} (apt-get install espeak-ng flite)", voice[0]))?;
    anyhow::ensure!(st.success(), "{} failed", voice[0]);
    let o = Command::new("sox")
        .arg(&wav)
        .args([
            "-r",
            "16000",
            "-c",
            "1",
            "-b",
            "16",
            "-e",
            "signed-integer",
            "-t",
            "raw",
            "-",
        ])
        .output()
        .context("starting sox (apt-get install sox)")?;
    let _ = std::fs::remove_file(&wav);
    anyhow::ensure!(o.status.success(), "sox failed");
    Ok(o.stdout
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect())
}

/// Write PCM16 at 16 kHz as a WAV file (for paplay).
pub fn write_wav(path: &std::path::Path, pcm: &[i16]) -> Result<()> {
    Ok(voxdesk_voice::listen::write_wav(path, pcm)?)
}

/// Pink noise (Paul Kellett's filter over white noise from a small xorshift), RMS ≈ 1.
pub fn pink(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.max(1);
    let mut b = [0f32; 7];
    let mut out: Vec<f32> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let w = (x >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
            b[0] = 0.99886 * b[0] + w * 0.055_518;
            b[1] = 0.99332 * b[1] + w * 0.075_076;
            b[2] = 0.969 * b[2] + w * 0.153_852;
            b[3] = 0.8665 * b[3] + w * 0.310_486;
            b[4] = 0.55 * b[4] + w * 0.532_952;
            b[5] = -0.7616 * b[5] - w * 0.016_898;
            let p = b.iter().sum::<f32>() + w * 0.5362;
            b[6] = w * 0.115_926;
            p
        })
        .collect();
    let r = (out.iter().map(|s| s * s).sum::<f32>() / n.max(1) as f32).sqrt();
    out.iter_mut().for_each(|s| *s /= r.max(1e-9));
    out
}

fn paplay(wav: &std::path::Path) -> Result<()> {
    let st = Command::new("paplay")
        .args(["-d", "micfeed"])
        .arg(wav)
        .status()
        .context("starting paplay (apt-get install pulseaudio-utils)")?;
    anyhow::ensure!(st.success(), "paplay failed");
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn row(name: &str, v: &mut [f64], target: &str) -> String {
    let med = median(&mut v.to_vec());
    format!(
        "| {name} | {med:.1} | {:.1} | {} | {target} |\n",
        percentile(v, 95.0),
        v.len()
    )
}

/// Process CPU time (user + system), from /proc.
fn cpu_time() -> Duration {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name and state.
    let ticks = f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0);
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_micros(ticks * 1_000_000 / hz)
}

/// The default microphone's name on the sound server (the mic before any echo canceller).
fn default_source() -> Result<String> {
    let o = Command::new("pactl")
        .arg("get-default-source")
        .output()
        .context("starting pactl (apt-get install pulseaudio-utils)")?;
    anyhow::ensure!(o.status.success(), "pactl get-default-source failed");
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The local half of `voxdesk bench voice` (xcalc is running and focused), with the accuracy
/// of spoken commands or without.
pub fn local(runs: usize) -> Result<String> {
    let mut out = format!(
        "\nlocal voice (the listener: earshot detector, echo guard, {})\n\n| measure | median ms | p95 ms | n | target |\n|---|---|---|---|---|\n",
        if crate::voice_knobs().learned {
            "Moonshine"
        } else {
            "pocketsphinx grammar"
        }
    );
    let stop_words = vec!["stop".to_string(), "cancel".to_string()];
    let latch = Arc::new(StopLatch::default());

    // The microphone as it is, before the echo canceller: where speech starts and ends.
    let probe = Monitor::start_on(&default_source()?)?;

    // The idle listening path's CPU, before anything else runs in this process.
    // As `voxdesk listen` runs: a voice that has spoken once (its output open, the echo
    // canceller rendering what it plays, silence included).
    eprintln!("bench voice (local): idle CPU…");
    let mut idle_voice = Narrator::new(true, None, None);
    let idle_barge = idle_voice.barge().context("no voice thread")?;
    let listener = Arc::new(Listener::start(
        listen_spec(&stop_words, Mode::Commands),
        Some(idle_barge.clone()),
        latch.clone(),
        None,
    )?);
    listener.set_labels(LABELS.iter().map(|s| s.to_string()).collect());
    let echo = crate::voice_knobs()
        .echo_cancel
        .then(|| idle_barge.reference.clone());
    let mic = Mic::start_cleaned(None, vec![listener.mic_tap()], echo)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    idle_voice.say("Listening.");
    std::thread::sleep(Duration::from_secs(3));
    let (c0, t0) = (cpu_time(), Instant::now());
    let per_frame = |l: &Listener| {
        [&l.stats.frames, &l.stats.detect_us, &l.stats.denoise_us]
            .map(|c| c.load(Ordering::Relaxed) as f64)
    };
    let [f0, d0, n0] = per_frame(&listener);
    std::thread::sleep(Duration::from_secs(10));
    let cpu = ms(cpu_time() - c0) / ms(t0.elapsed()) * 100.0;
    let [f1, d1, n1] = per_frame(&listener);
    let frames = (f1 - f0).max(1.0);
    let (detect_us, denoise_us) = ((d1 - d0) / frames, (n1 - n0) / frames);

    // End of speech → the first action on xcalc, and a spoken stop → the latch.
    eprintln!("bench voice (local): commands on xcalc and stop…");
    let mut settings = Settings::default();
    settings.rails.mode = Rails::Auto;
    settings.rails.allow_apps = vec!["XCalc".into()];
    let mut desk = Desk::new(&settings, None, Box::new(Nobody), latch.clone())?;
    let labels = desk.labels_now().map_err(|e| anyhow::anyhow!(e))?;
    listener.set_labels(labels);
    let tmp = tempfile::Builder::new()
        .prefix("voxdesk-bench-listen-")
        .tempdir()?;
    let dir = tmp.path().to_path_buf();
    let mut act_ms = Vec::new();
    let mut stop_ms = Vec::new();
    let mut heard_wrong = 0;
    for i in 0..runs {
        let say = if i % 2 == 0 {
            "click seven"
        } else {
            "click one"
        };
        let wav = dir.join("cmd.wav");
        write_wav(&wav, &synth(VOICES[3].1, say)?)?;
        while listener.next(Duration::ZERO).is_some() {}
        let t = Instant::now();
        paplay(&wav)?;
        let heard = wait_heard(&listener, Duration::from_secs(5));
        let end = probe.end(t);
        let Some(Heard::Command(task)) = heard else {
            heard_wrong += 1;
            continue;
        };
        let l = Arc::new(StopLatch::default());
        desk.begin(
            RecordSpec {
                root: dir.join("sessions"),
                task: task.clone(),
                provider: "local".into(),
                model: "offline-planner".into(),
                decomposition: Vec::new(),
                prompt_version: voxdesk_desk::PROMPT_VERSION.into(),
            },
            l,
        )?;
        let mut planner = LocalPlanner::new(&task).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut timed = Timed {
            desk: &mut desk,
            first_act: None,
        };
        let end_ = drive(
            &mut planner,
            &mut timed,
            Limits {
                step_cap: 5,
                no_progress: 2,
            },
        );
        if let (Some(a), Some(e)) = (timed.first_act, end) {
            act_ms.push(ms(a.saturating_duration_since(e)));
        }
        if end_.status != Status::Done {
            tracing::warn!("bench: {task:?} ended {:?}", end_.status);
        }
    }
    drop(desk);
    for _ in 0..runs {
        let l = Arc::new(StopLatch::default());
        listener.set_latch(l.clone());
        let wav = dir.join("stop.wav");
        write_wav(&wav, &synth(VOICES[0].1, "stop")?)?;
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        paplay(&wav)?;
        let _ = wait_heard(&listener, Duration::from_secs(3));
        let end = probe.end(t);
        match (l.triggered_at(), end, l.cause()) {
            (Some(a), Some(e), Some(Cause::Requested)) => {
                stop_ms.push(ms(a.saturating_duration_since(e)))
            }
            _ => heard_wrong += 1,
        }
    }
    drop(mic);
    drop(listener);
    drop(idle_voice);

    // Barge-in: voxdesk speaks, the person talks over it.
    eprintln!("bench voice (local): barge-in…");
    let narrator = Narrator::new(true, None, None);
    let barge = narrator.barge().context("no voice thread")?;
    let listener = Listener::start(
        listen_spec(&stop_words, Mode::StopOnly),
        Some(barge.clone()),
        latch.clone(),
        None,
    )?;
    let echo = crate::voice_knobs()
        .echo_cancel
        .then(|| barge.reference.clone());
    let mic = Mic::start_cleaned(None, vec![listener.mic_tap()], echo)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let monitor = Monitor::start()?;
    let mut narrator = narrator;
    let speech = dir.join("over.wav");
    write_wav(&speech, &synth(VOICES[2].1, "wait, wait a moment please")?)?;
    let long = "This is a long sentence that voxdesk says while the person starts to talk over it, to measure how quickly it falls silent when they do.";
    let mut barge_ms = Vec::new();
    let barge_runs = |narrator: &mut Narrator, out: &mut Vec<f64>, n: usize| -> Result<()> {
        for _ in 0..n {
            narrator.say(long);
            std::thread::sleep(Duration::from_millis(1800));
            let t = Instant::now();
            paplay(&speech)?;
            std::thread::sleep(Duration::from_millis(400));
            let onset = probe.onset(t);
            if let Some(o) = onset {
                if let Some(m) = monitor.silent_after(o) {
                    out.push(m);
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(())
    };
    barge_runs(&mut narrator, &mut barge_ms, runs)?;

    // Its own voice looped back into the mic at -10 dB, as laptop speakers would.
    eprintln!("bench voice (local): echo…");
    let loopback = Loopback::load(0.316)?;
    std::thread::sleep(Duration::from_millis(500));
    let sentences = [
        "I can see a calculator. I'll click seven.",
        "Clicked seven: the display shows seven.",
        "Clicking plus, then five, then equals.",
        "The display shows twelve. Done.",
        "I could not find a button called Save on this screen.",
        "Typing hello world into the editor.",
        "Stopped. Nothing more will move.",
        "Refused: that would type into a password field.",
        "Scrolling down three times in the file list.",
        "Opening the File menu, then Save As.",
    ];
    let mut false_barge = 0;
    let mut said = 0;
    for i in 0..(2 * runs).max(20) {
        let before = listener.stats.pauses.load(Ordering::Relaxed);
        narrator.say(sentences[i % sentences.len()]);
        said += 1;
        // Until it has finished playing.
        std::thread::sleep(Duration::from_millis(700));
        let t = Instant::now();
        while barge.reference.sounding(Duration::from_millis(300))
            && t.elapsed() < Duration::from_secs(8)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        if listener.stats.pauses.load(Ordering::Relaxed) > before {
            false_barge += 1;
        }
    }
    let mut echo_barge_ms = Vec::new();
    barge_runs(&mut narrator, &mut echo_barge_ms, runs.min(5))?;
    drop(loopback);
    drop(mic);
    drop(listener);
    drop(monitor);

    let _ = std::fs::remove_dir_all(&dir);

    out.push_str(&row(
        "barge-in: speech onset at the mic → speaker silent",
        &mut barge_ms,
        "≤ 100 median, ≤ 150 p95",
    ));
    out.push_str(&row(
        "barge-in with its own voice looped in at −10 dB",
        &mut echo_barge_ms,
        "(same)",
    ));
    out.push_str(&row(
        "spoken command: end of speech → first action dispatched",
        &mut act_ms,
        "≤ 300",
    ));
    out.push_str(&row(
        "\"stop\": end of the word → actions halted (latch set)",
        &mut stop_ms,
        "≤ 300",
    ));
    out.push_str(&format!(
        "\nfalse barge-ins from its own voice looped into the mic at −10 dB: {false_barge}/{said} sentences ({:.1} %, target ≤ 5 %)\n",
        100.0 * f64::from(false_barge) / f64::from(said.max(1))
    ));
    out.push_str(&format!(
        "idle listening path (mic + detector + recogniser idle): {cpu:.1} % of one core (target ≤ 5 %); per 16 ms frame, the detector and floor {detect_us:.0} µs, cleaning the noise {denoise_us:.0} µs\n"
    ));

    if heard_wrong > 0 {
        out.push_str(&format!(
            "commands or stops not heard as said on the sound card: {heard_wrong}\n"
        ));
    }
    Ok(out)
}

/// The listener's settings as the bench's knobs give them: the learned ears when
/// `VOXDESK_LEARNED_EARS=1` (the models directory from `VOXDESK_MODELS_DIR`, else the default).
pub fn listen_spec(stop_words: &[String], mode: Mode) -> Spec {
    let mut s =
        Spec::new(stop_words.to_vec(), mode != Mode::StopOnly, mode).tuned(crate::voice_knobs());
    if crate::voice_knobs().learned {
        let dir = std::env::var_os("VOXDESK_MODELS_DIR").map(std::path::PathBuf::from);
        s.ears = voxdesk_onnx::models_dir(dir.as_deref());
    }
    s
}

/// Feed an utterance and collect what the listener made of it: every command heard (a chain
/// said with pauses arrives as several utterances) joined as one task, or a stop; and the words
/// the recogniser heard, joined.
pub fn hear_text(listener: &Listener, pcm: &[i16]) -> (Option<Heard>, String) {
    while listener.next(Duration::ZERO).is_some() {}
    let at = Instant::now();
    let before = listener.stats.frames.load(Ordering::Relaxed);
    let mut fed = 0;
    for chunk in pcm.chunks_exact(256) {
        listener.feed(Frame {
            pcm: chunk.to_vec(),
            at,
        });
        fed += 1;
    }
    // Every utterance ends within the trailing second of silence, and is recognised on the
    // listener's thread before it takes the next frame: once the last frame is taken, every
    // note about the speech has been sent.
    let until = Instant::now() + Duration::from_secs(10);
    while listener.stats.frames.load(Ordering::Relaxed) < before + fed && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut steps: Vec<String> = Vec::new();
    let mut other = None;
    let mut words: Vec<String> = Vec::new();
    while let Some(n) = listener.next(Duration::from_millis(30)) {
        match n {
            Note::Heard {
                meaning,
                text,
                per_frame,
                ..
            } => {
                words.push(format!("{text} [{per_frame:.2}]"));
                match meaning {
                    Heard::Command(t) => steps.push(t),
                    h => other = other.or(Some(h)),
                }
            }
            Note::Ask { question, .. } => {
                words.push(format!("asked: {question}"));
                other = other.or(Some(Heard::Nothing))
            }
            Note::NotUnderstood { text, per_frame } => {
                words.push(format!("{text} [{per_frame:.2}]"));
                other = other.or(Some(Heard::Nothing))
            }
            _ => {}
        }
    }
    let heard = match (other, steps.is_empty()) {
        (Some(h @ Heard::Stop(_)), _) => Some(h),
        (_, false) => Some(Heard::Command(steps.join(", "))),
        (h, true) => h,
    };
    (heard, words.join(" | "))
}

fn wait_heard(listener: &Listener, within: Duration) -> Option<Heard> {
    let until = Instant::now() + within;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match listener.next(left) {
            Some(Note::Heard { meaning, .. }) => return Some(meaning),
            Some(Note::NotUnderstood { .. }) => return Some(Heard::Nothing),
            Some(_) => {}
            None => break,
        }
    }
    None
}

/// The speaker looped into the microphone (PulseAudio's module-loopback) at a linear gain.
struct Loopback {
    module: String,
}

impl Loopback {
    fn load(gain: f64) -> Result<Loopback> {
        let o = Command::new("pactl")
            .args([
                "load-module",
                "module-loopback",
                "source=spk.monitor",
                "sink=micfeed",
                "latency_msec=20",
            ])
            .output()
            .context("starting pactl")?;
        if !o.status.success() {
            bail!("pactl load-module module-loopback failed");
        }
        let module = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let lb = Loopback { module };
        // Its sink input: the one whose owner module is ours.
        std::thread::sleep(Duration::from_millis(300));
        let list = Command::new("pactl")
            .args(["list", "sink-inputs"])
            .output()?;
        let text = String::from_utf8_lossy(&list.stdout);
        let mut input = None;
        let mut current = None;
        for l in text.lines() {
            if let Some(n) = l.strip_prefix("Sink Input #") {
                current = Some(n.trim().to_string());
            }
            if l.trim() == format!("Owner Module: {}", lb.module) {
                input = current.clone();
            }
        }
        let input = input.context("the loopback's sink input was not found")?;
        let st = Command::new("pactl")
            .args(["set-sink-input-volume", &input, &format!("{gain}")])
            .status()?;
        anyhow::ensure!(st.success(), "pactl set-sink-input-volume failed");
        Ok(lb)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        let _ = Command::new("pactl")
            .args(["unload-module", &self.module])
            .status();
    }
}

/// The desk, with the moment its first act arrives noted.
struct Timed<'a> {
    desk: &'a mut Desk,
    first_act: Option<Instant>,
}

impl Host for Timed<'_> {
    fn call(&mut self, call: &ToolCall) -> ToolResult {
        if matches!(call, ToolCall::Act(_)) && self.first_act.is_none() {
            self.first_act = Some(Instant::now());
        }
        self.desk.call(call)
    }
    fn escape(&mut self) -> bool {
        self.desk.escape()
    }
    fn not_planned(&mut self, why: &str) {
        self.desk.not_planned(why)
    }
    fn emit(&mut self, e: Event) {
        self.desk.emit(e)
    }
    fn go(&mut self, to: State, why: &str) {
        self.desk.go(to, why)
    }
    fn stopped(&mut self) -> Option<Cause> {
        self.desk.stopped()
    }
    fn end(&mut self, status: Status, summary: &str) -> ToolResult {
        self.desk.end(status, summary)
    }
    fn broken(&mut self) -> Option<String> {
        self.desk.broken()
    }
}
