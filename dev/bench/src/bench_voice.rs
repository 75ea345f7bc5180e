//! `voxdesk bench voice`: a realtime session against a loopback server speaking Gemini Live's wire format, on the virtual desktop and sound card: mic frame → socket, tool call → tool response for observe and a one-click act on xcalc, `interrupted` → speaker silent (measured on the speaker's monitor), and resident memory over a long session with two resumptions.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::bench::{median, percentile, rss_mb};
use crate::loopback::{Loopback, Peer};
use crate::monitor::Monitor;
use voxdesk_agent::{drive, Limits};
use voxdesk_core::config::{Mode, Settings};
use voxdesk_desk::{confirm::Nobody, Desk, RecordSpec};
use voxdesk_input::stop::StopLatch;
use voxdesk_realtime::driver::{RealtimeDriver, Spec};
use voxdesk_realtime::endpoint::{ApiKey, Provider};
use voxdesk_realtime::session::{Down, Options, Session};
use voxdesk_realtime::wire::{GeminiWire, Opening};
use voxdesk_voice::mic::Mic;
use voxdesk_voice::narrate::Narrator;

const WAIT: Duration = Duration::from_secs(30);

/// What the server side measured.
#[derive(Default)]
struct Measured {
    observe_ms: Vec<f64>,
    act_ms: Vec<f64>,
    silent_ms: Vec<f64>,
    /// Arrival of each audio frame at the server, in order.
    audio_in: Vec<Instant>,
    rss_start: f64,
    rss_end: f64,
    resumptions: usize,
    seconds: f64,
    /// Audio frames that arrived on the first connection (after it, frames lost while
    /// reconnecting break the pairing of made and received frames).
    first_conn_frames: usize,
}

/// `part`: "realtime" (the loopback model server), "local" (the listener), "sound" (the
/// listener on the sound card, without the accuracy), "accuracy" (only the spoken commands'
/// accuracy, no sound card) or "all".
pub fn voice(runs: usize, seconds: u64, part: &str) -> Result<String> {
    // `VOXDESK_LEARNED_EARS=1`: the learned recogniser hears commands (the models directory
    // from `VOXDESK_MODELS_DIR`, else the default).
    let stops = ["stop".to_string(), "cancel".to_string()];
    let accuracy = || {
        super::bench_ears::accuracy(&|| {
            super::bench_listen::listen_spec(&stops, voxdesk_voice::grammar::Mode::Commands)
        })
    };
    if part == "accuracy" {
        return accuracy();
    }
    let mut calc = Command::new("xcalc")
        .args(["-geometry", "300x400+400+200"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting xcalc (apt-get install x11-apps)")?;
    let mut out = String::new();
    let mut r = Ok(());
    if part == "all" || part == "realtime" {
        r = on_xcalc(runs.max(3), seconds.max(20)).map(|s| out.push_str(&s));
    }
    if r.is_ok() && part != "realtime" {
        let _ = Command::new("xdotool")
            .args(["search", "--class", "XCalc", "windowactivate", "--sync"])
            .status();
        r = super::bench_listen::local(runs.max(3)).map(|s| out.push_str(&s));
    }
    if r.is_ok() && part != "realtime" && part != "sound" {
        r = accuracy().map(|s| out.push_str(&s));
    }
    let _ = calc.kill();
    let _ = calc.wait();
    r.map(|()| out)
}

fn on_xcalc(runs: usize, seconds: u64) -> Result<String> {
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("xdotool")
        .args(["search", "--class", "XCalc", "windowactivate", "--sync"])
        .status();
    let mut settings = Settings::default();
    settings.rails.mode = Mode::Auto;
    settings.rails.allow_apps = vec!["XCalc".into()];
    let server = Loopback::start()?;
    let url = format!(
        "ws://127.0.0.1:{}{}",
        server.port,
        voxdesk_realtime::gemini::path("v1beta")
    );
    let latch = Arc::new(StopLatch::default());
    let narrator = Narrator::new(true, None, Some(latch.clone()));
    let speaker = narrator
        .speaker()
        .context("no voice thread for the speaker")?;
    let wire = GeminiWire::new(Opening {
        model: "gemini-3.8-live".into(),
        voice: None,
        instruction: "bench".into(),
        max_actions: 10,
    });
    let session = Session::start(
        Box::new(wire),
        Options::new(url, ("x-goog-api-key", "bench".into())),
        latch.clone(),
        Box::new(speaker),
    )?;
    // The mic's frames, stamped as the mic thread hands them on.
    let made: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let m2 = made.clone();
    let tx = session.audio_in().context("the session ended")?;
    let mic = Mic::start(None, 16_000, voxdesk_realtime::launch::FRAME_MS, move |f| {
        let ok = tx.try_send(Down::Audio(f.pcm)).is_ok();
        if ok {
            if let Ok(mut v) = m2.lock() {
                v.push(f.at);
            }
        }
        ok
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    // The speaker, as the room hears it: its monitor, in 10 ms chunks.
    let monitor = Monitor::start()?;
    let script = std::thread::spawn(move || serve(server, runs, seconds, &monitor));
    let spec = bench_spec()?;
    let mut desk = Desk::new(
        &settings,
        Some(RecordSpec {
            root: std::env::temp_dir().join(format!("voxdesk-bench-voice-{}", std::process::id())),
            task: "bench voice".into(),
            provider: "gemini".into(),
            model: "gemini-3.8-live".into(),
            decomposition: Vec::new(),
            prompt_version: voxdesk_desk::PROMPT_VERSION.into(),
        }),
        Box::new(Nobody),
        latch.clone(),
    )?;
    desk.subscribe(Box::new(narrator));
    let mut driver = RealtimeDriver::new(&spec, session, latch, Some("bench voice".into()));
    let end = drive(
        &mut driver,
        &mut desk,
        Limits {
            step_cap: 10_000,
            no_progress: 1_000,
        },
    );
    let dropped_mic = mic
        .stats
        .dropped_frames
        .load(std::sync::atomic::Ordering::Relaxed);
    let overrun = mic
        .stats
        .overrun_samples
        .load(std::sync::atomic::Ordering::Relaxed);
    drop(mic);
    let stats = driver.finish();
    drop(desk);
    let mut m = match script.join() {
        Ok(r) => r?,
        Err(_) => bail!("the bench server's script panicked"),
    };
    let made = made.lock().map(|v| v.clone()).unwrap_or_default();
    // Paired in order on the first connection, after its first second (frames made while it
    // opened waited for it).
    let n = made.len().min(m.first_conn_frames);
    let mut mic_ms: Vec<f64> = (50.min(n)..n)
        .map(|i| (m.audio_in[i].saturating_duration_since(made[i])).as_secs_f64() * 1000.0)
        .collect();
    let row = |name: &str, v: &mut Vec<f64>, target: &str| {
        let mut w = v.clone();
        format!(
            "| {name} | {:.1} | {:.1} | {} | {target} |\n",
            median(&mut w),
            percentile(v, 95.0),
            v.len()
        )
    };
    let mut s = format!(
        "voice bench: {:?} after {:.0} s, {} connection(s), {} resumed\n\n| measure | median ms | p95 ms | n | target |\n|---|---|---|---|---|\n",
        end.status, m.seconds, stats.connections, stats.resumed
    );
    s.push_str(&row("mic frame → socket", &mut mic_ms, "≤ 40 ms"));
    s.push_str(&row(
        "observe call → response",
        &mut m.observe_ms,
        "≤ 150 ms",
    ));
    s.push_str(&row(
        "one-click act → response (verified)",
        &mut m.act_ms,
        "≤ 400 ms",
    ));
    s.push_str(&row(
        "interrupted → speaker silent (monitor)",
        &mut m.silent_ms,
        "≤ 50 ms",
    ));
    s.push_str(&format!(
        "\nmic: {} frames made, {} reached the server, {dropped_mic} dropped (queue full), {overrun} samples overrun\n",
        made.len(),
        m.audio_in.len()
    ));
    s.push_str(&format!(
        "resident memory: {:.1} MB after warm-up → {:.1} MB after {:.0} s with {} resumption(s): {:+.1} MB (target ≤ 10 MB growth)\n",
        m.rss_start, m.rss_end, m.seconds, m.resumptions, m.rss_end - m.rss_start
    ));
    Ok(s)
}

/// A spec for the driver's bookkeeping (the session itself is started above).
fn bench_spec() -> Result<Spec> {
    let profile = voxdesk_realtime::profile::find(None, Provider::Gemini, "gemini-3.8-live")?;
    Ok(Spec {
        provider: Provider::Gemini,
        model: "gemini-3.8-live".into(),
        profile,
        url: String::new(),
        key: ApiKey::from_env(Provider::Gemini, |_| Some("bench".into()))?,
        stop_words: Vec::new(),
        give_up_after: None,
        max_actions: 10,
        warning: None,
    })
}

/// The server side: a scripted Gemini Live session.
struct Script {
    peer: Peer,
    audio_in: Vec<Instant>,
}

impl Script {
    fn send(&self, v: Value) {
        let _ = self.peer.out.send(Some(v.to_string()));
    }
    /// The next non-audio frame (audio frames are stamped on the way).
    fn next(&mut self, within: Duration) -> Result<(Instant, Value)> {
        let until = Instant::now() + within;
        loop {
            let left = until
                .checked_duration_since(Instant::now())
                .context("the client went quiet")?;
            let (at, bytes) = self
                .peer
                .frames
                .recv_timeout(left)
                .context("the client went quiet")?;
            let v: Value = serde_json::from_slice(&bytes)?;
            if v.pointer("/realtimeInput/audio").is_some() {
                self.audio_in.push(at);
                continue;
            }
            return Ok((at, v));
        }
    }
    fn until(&mut self, what: &str, ok: impl Fn(&Value) -> bool) -> Result<(Instant, Value)> {
        loop {
            let (at, v) = self
                .next(WAIT)
                .with_context(|| format!("waiting for {what}"))?;
            if ok(&v) {
                return Ok((at, v));
            }
        }
    }
    fn open(&mut self) -> Result<()> {
        self.until("setup", |v| v.get("setup").is_some())?;
        self.send(json!({"setupComplete": {}}));
        Ok(())
    }
    /// A tool call; the time until its response, and the response.
    fn call(&mut self, id: &str, name: &str, args: Value) -> Result<(f64, Value)> {
        let t0 = Instant::now();
        self.send(json!({"toolCall": {"functionCalls": [{"id": id, "name": name, "args": args}]}}));
        let (at, v) = self.until("a tool response", |v| v.get("toolResponse").is_some())?;
        let r = v["toolResponse"]["functionResponses"][0]["response"].clone();
        Ok((at.saturating_duration_since(t0).as_secs_f64() * 1000.0, r))
    }
    /// Drain audio frames for `d`.
    fn idle(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.peer.frames.recv_timeout(left) {
                Ok((at, _)) => self.audio_in.push(at),
                Err(_) => break,
            }
        }
    }
}

fn tone(ms: u32) -> String {
    use base64::Engine;
    let n = (24_000 * ms / 1000) as usize;
    let mut b = Vec::with_capacity(n * 2);
    for i in 0..n {
        let s = ((i as f32 * 440.0 * std::f32::consts::TAU / 24_000.0).sin() * 8000.0) as i16;
        b.extend_from_slice(&s.to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn serve(server: Loopback, runs: usize, seconds: u64, monitor: &Monitor) -> Result<Measured> {
    let started = Instant::now();
    let accept = |server: &Loopback| {
        server
            .peers
            .recv_timeout(WAIT)
            .context("the client did not connect")
    };
    let mut s = Script {
        peer: accept(&server)?,
        audio_in: Vec::new(),
    };
    let mut m = Measured::default();
    s.open()?;
    let (_, turn) = s.until("the task turn", |v| v.get("clientContent").is_some())?;
    let text = turn["clientContent"]["turns"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let a = text.find("<untrusted-screen-text>").context("no screen")? + 23;
    let b = text.find("</untrusted-screen-text>").context("no screen")?;
    let mut obs: Value = serde_json::from_str(text[a..b].trim())?;
    let id_of = |obs: &Value, label: &str| -> Result<u64> {
        obs["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["text"] == label)
            .and_then(|t| t["id"].as_u64())
            .with_context(|| format!("no {label:?} on xcalc"))
    };
    let mut n = 0;
    let mut next_id = || {
        n += 1;
        format!("b{n}")
    };
    for _ in 0..runs {
        let (ms, r) = s.call(&next_id(), "observe", json!({}))?;
        m.observe_ms.push(ms);
        obs = r;
    }
    for i in 0..runs {
        // Alternate digits so each click changes the display.
        let label = if i % 2 == 0 { "7" } else { "1" };
        let (ms, r) = s.call(
            &next_id(),
            "act",
            json!({"observation_id": obs["observation_id"],
                   "actions": [{"action": "click", "target": id_of(&obs, label)?}],
                   "expect": {"changes": true}}),
        )?;
        if r["verification"]["verdict"] != "verified" {
            bail!("the bench click was not verified: {r}");
        }
        m.act_ms.push(ms);
        obs = r["observation"].clone();
    }
    // Interruptions: the model speaks, the person talks over it.
    for _ in 0..runs {
        for _ in 0..10 {
            s.send(
                json!({"serverContent": {"modelTurn": {"parts": [{"inlineData": {
                "mimeType": "audio/pcm;rate=24000", "data": tone(200)}}]}}}),
            );
        }
        s.idle(Duration::from_millis(700));
        let t0 = Instant::now();
        s.send(json!({"serverContent": {"interrupted": true}}));
        s.idle(Duration::from_millis(500));
        s.send(json!({"serverContent": {"turnComplete": true}}));
        if let Some(ms) = monitor.silent_after(t0) {
            m.silent_ms.push(ms);
        }
        s.idle(Duration::from_millis(300));
    }
    // The long session: the mic streams, the model talks now and then, two goAways.
    m.rss_start = rss_mb();
    let soak = Duration::from_secs(seconds);
    let t_soak = Instant::now();
    let mut handle = 0;
    while t_soak.elapsed() < soak {
        let frac = t_soak.elapsed().as_secs_f64() / soak.as_secs_f64();
        if (frac > 0.33 && m.resumptions == 0) || (frac > 0.66 && m.resumptions == 1) {
            if m.resumptions == 0 {
                m.first_conn_frames = s.audio_in.len();
            }
            handle += 1;
            s.send(json!({"sessionResumptionUpdate": {"newHandle": format!("h{handle}"), "resumable": true}}));
            s.send(json!({"goAway": {"timeLeft": "2s"}}));
            let audio = std::mem::take(&mut s.audio_in);
            s = Script {
                peer: accept(&server)?,
                audio_in: audio,
            };
            s.open()?;
            m.resumptions += 1;
        }
        s.send(
            json!({"serverContent": {"modelTurn": {"parts": [{"inlineData": {
            "mimeType": "audio/pcm;rate=24000", "data": tone(300)}}]},
            "outputTranscription": {"text": "still here"}}}),
        );
        s.send(json!({"serverContent": {"turnComplete": true}}));
        let (_, r) = s.call(&next_id(), "observe", json!({}))?;
        obs = r;
        s.idle(Duration::from_secs(2));
    }
    m.rss_end = rss_mb();
    let _ = s.call(
        &next_id(),
        "done",
        json!({"success": true, "summary": "bench over"}),
    );
    // Keep taking the mic's frames until the client closes: every frame made is counted.
    let until = Instant::now() + Duration::from_secs(15);
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match s.peer.frames.recv_timeout(left) {
            Ok((at, bytes)) => {
                if bytes.windows(13).any(|w| w == b"realtimeInput") {
                    s.audio_in.push(at);
                }
            }
            Err(_) => break,
        }
    }
    m.audio_in = s.audio_in;
    m.seconds = started.elapsed().as_secs_f64();
    let _ = obs;
    Ok(m)
}
