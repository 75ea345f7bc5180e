//! `voxdesk bench text`: a turn-based model's driver against an instant in-process Chat Completions server on xcalc — voxdesk's own time per step apart from the model's, the request's size, and (with the learned ears) end of speech to the request sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::bench::median;

/// When the server got each request and sent its reply, and each request's body.
#[derive(Default)]
struct Log {
    got: Vec<Instant>,
    sent: Vec<Instant>,
    bodies: Vec<Value>,
}

/// A Chat Completions server that answers at once: an act clicking `labels` on the newest
/// screen the request carries, `acts` times, then done.
fn server(labels: &'static [&'static str], acts: usize) -> Result<(String, Arc<Mutex<Log>>)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://127.0.0.1:{}/v1", l.local_addr()?.port());
    let log: Arc<Mutex<Log>> = Arc::default();
    let lg = log.clone();
    std::thread::spawn(move || {
        for tcp in l.incoming().map_while(std::result::Result::ok) {
            let got = Instant::now();
            let mut r = BufReader::new(match tcp.try_clone() {
                Ok(t) => t,
                Err(_) => continue,
            });
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut buf = vec![0u8; len];
            let _ = r.read_exact(&mut buf);
            let body: Value = serde_json::from_slice(&buf).unwrap_or(Value::Null);
            let n = lg.lock().map(|g| g.got.len()).unwrap_or(0);
            let call = if n < acts {
                let obs = newest_screen(&body);
                let actions: Vec<Value> = labels
                    .iter()
                    .filter_map(|t| target(&obs, t))
                    .map(|id| json!({"action": "click", "target": id}))
                    .collect();
                (
                    "act",
                    json!({"observation_id": obs["observation_id"], "actions": actions}),
                )
            } else {
                ("done", json!({"success": true, "summary": "done"}))
            };
            let events = [
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function", "function": {"name": call.0, "arguments": call.1.to_string()}}]}, "finish_reason": "tool_calls"}]}).to_string(),
                json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).to_string(),
                "[DONE]".to_string(),
            ];
            let mut w = tcp;
            let mut out = String::from(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            for e in events {
                out.push_str(&format!("data: {e}\n\n"));
            }
            let _ = w.write_all(out.as_bytes());
            let _ = w.flush();
            let _ = w.shutdown(std::net::Shutdown::Both);
            if let Ok(mut g) = lg.lock() {
                g.got.push(got);
                g.sent.push(Instant::now());
                g.bodies.push(body);
            }
        }
    });
    Ok((base, log))
}

fn newest_screen(body: &Value) -> Value {
    let mut obs = Value::Null;
    for m in body["messages"].as_array().into_iter().flatten() {
        let text = m["content"].as_str().unwrap_or_default();
        if m["role"] == "tool" {
            if let Ok(v) = serde_json::from_str::<Value>(text) {
                if v["observation"]["targets"].is_array() {
                    obs = v["observation"].clone();
                } else if v["targets"].is_array() {
                    obs = v;
                }
            }
        } else if let (Some(a), Some(b)) = (
            text.find("<untrusted-screen-text>\n"),
            text.find("\n</untrusted-screen-text>"),
        ) {
            if let Ok(v) = serde_json::from_str::<Value>(&text[a + 24..b]) {
                if v["targets"].is_array() {
                    obs = v;
                }
            }
        }
    }
    obs
}

fn target(obs: &Value, text: &str) -> Option<u64> {
    obs["targets"]
        .as_array()?
        .iter()
        .find(|t| t["text"] == text)?["id"]
        .as_u64()
}

fn spec(base: &str) -> Result<voxdesk_text::Spec> {
    Ok(voxdesk_text::Spec::resolve(
        voxdesk_text::Provider::OpenAiCompatible,
        Some("bench"),
        Some(base),
        |_| None,
    )?)
}

fn record(root: &std::path::Path, task: &str) -> voxdesk_desk::RecordSpec {
    voxdesk_desk::RecordSpec {
        root: root.to_path_buf(),
        task: task.into(),
        provider: "openai-compatible".into(),
        model: "bench".into(),
        decomposition: Vec::new(),
        prompt_version: voxdesk_desk::PROMPT_VERSION.into(),
    }
}

pub fn text(runs: usize) -> Result<String> {
    let mut calc = Command::new("xcalc")
        .args(["-geometry", "300x400+400+200"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting xcalc (apt-get install x11-apps)")?;
    let r = on_xcalc(runs);
    let _ = calc.kill();
    let _ = calc.wait();
    r
}

fn on_xcalc(runs: usize) -> Result<String> {
    use voxdesk_agent::{drive, Limits};
    use voxdesk_core::config::{Mode, Settings};
    use voxdesk_desk::{confirm::Nobody, Desk};
    std::thread::sleep(Duration::from_millis(1500));
    let mut settings = Settings::default();
    settings.rails.mode = Mode::Auto;
    settings.rails.allow_apps = vec!["XCalc".into()];
    let root = std::env::temp_dir().join(format!("voxdesk-bench-text-{}", std::process::id()));
    let latch = Arc::new(voxdesk_input::stop::StopLatch::default());
    let mut desk = Desk::new(&settings, None, Box::new(Nobody), latch.clone())?;
    // Steps of one click each ("DRG" changes the screen every time): the driver's time around
    // each step (reply read → the next request sent), less the desk's own (act, settle, verify,
    // observe), is what the text driver adds.
    let (mut own, mut whole, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let (base, log) = server(&["DRG"], 10)?;
        let task = "cycle the angle unit ten times";
        desk.begin(record(&root, task), latch.clone())?;
        let mut d = voxdesk_text::TextDriver::new(spec(&base)?, latch.clone(), task);
        let end = drive(
            &mut d,
            &mut desk,
            Limits {
                step_cap: 20,
                no_progress: 3,
            },
        );
        anyhow::ensure!(
            end.status == voxdesk_record::session::Status::Done,
            "the bench task did not finish: {}",
            end.summary
        );
        let steps = desk.record().map(|r| r.steps.clone()).unwrap_or_default();
        let g = log.lock().map_err(|_| anyhow::anyhow!("log"))?;
        for (k, s) in steps.iter().enumerate() {
            // Reply k was sent; request k+1 arrived after the step and its observation.
            let (Some(sent), Some(got)) = (g.sent.get(k), g.got.get(k + 1)) else {
                continue;
            };
            let around = got.duration_since(*sent).as_secs_f64() * 1000.0;
            let t = &s.timings_ms;
            let desk_ms = t.capture + t.ocr + t.act + t.settle + t.verify;
            whole.push(around);
            own.push((around - desk_ms).max(0.0));
        }
        for b in &g.bodies {
            sizes.push(b.to_string().len() as f64);
        }
    }
    let mut out = format!(
        "text driver, per step (reply read → next request sent, less the desk's act/settle/verify/observe): median {:.1} ms over {} steps (target ≤ 60 ms)\nthe whole step seen from the server (desk included, model excluded): median {:.0} ms\n",
        median(&mut own.clone()),
        own.len(),
        median(&mut whole.clone()),
    );
    let max = sizes.iter().copied().fold(0.0, f64::max);
    let first = sizes.first().copied().unwrap_or(0.0);
    out.push_str(&format!(
        "request size on xcalc (53 targets, no picture): the first {first:.0} characters ≈ {:.0} tokens; median {:.0} ≈ {:.0} tokens, largest {:.0} ≈ {:.0} tokens (target ≤ 3 k tokens; tokens ≈ characters ÷ 4)\n",
        first / 4.0,
        median(&mut sizes.clone()),
        median(&mut sizes) / 4.0,
        max,
        max / 4.0
    ));
    // End of speech → request sent: a task said (flite, fed in real time) to a listener with
    // the learned ears, the task handed to the driver on a desk already open.
    match speech_to_request(&mut desk, &root, latch, runs) {
        Ok(s) => out.push_str(&s),
        Err(e) => out.push_str(&format!(
            "end of speech → request sent: not measured ({e})\n"
        )),
    }
    let _ = std::fs::remove_dir_all(&root);
    Ok(out)
}

fn speech_to_request(
    desk: &mut voxdesk_desk::Desk,
    root: &std::path::Path,
    latch: Arc<voxdesk_input::stop::StopLatch>,
    runs: usize,
) -> Result<String> {
    use voxdesk_agent::{drive, Limits};
    use voxdesk_voice::grammar::Mode;
    use voxdesk_voice::listen::{Listener, Note};
    use voxdesk_voice::mic::Frame;
    let mut ls = crate::bench_listen::listen_spec(&["stop".to_string()], Mode::Commands);
    anyhow::ensure!(ls.ears.is_some(), "the learned ears are off");
    ls.free_speech = true;
    let listener = Listener::start(ls, None, latch.clone(), None)?;
    listener.set_labels(desk.labels_now().unwrap_or_default());
    let speech = crate::bench_listen::synth(
        &["flite", "-voice", "rms"],
        "add seven and five on the calculator",
    )?;
    let (mut lat, mut to_task) = (Vec::new(), Vec::new());
    let mut heard = String::new();
    for _ in 0..runs.max(3) {
        let (base, log) = server(&["7", "+", "5", "="], 0)?;
        let mut pcm = vec![0i16; 4800];
        pcm.extend(&speech);
        let speech_end = pcm.len();
        pcm.extend(vec![0i16; 16_000]);
        let mut last_speech = Instant::now();
        let mut task = None;
        for (i, chunk) in pcm.chunks_exact(256).enumerate() {
            let at = Instant::now();
            listener.feed(Frame {
                pcm: chunk.to_vec(),
                at,
            });
            if (i + 1) * 256 <= speech_end {
                last_speech = at;
            }
            std::thread::sleep(Duration::from_millis(16));
            while let Some(n) = listener.next(Duration::ZERO) {
                if let Note::Task { text, .. } = n {
                    task = Some(text);
                }
            }
            if task.is_some() {
                break;
            }
        }
        let until = Instant::now() + Duration::from_secs(5);
        while task.is_none() && Instant::now() < until {
            if let Some(Note::Task { text, .. }) = listener.next(Duration::from_millis(20)) {
                task = Some(text);
            }
        }
        let Some(text) = task else {
            anyhow::bail!("the spoken task was not heard as one")
        };
        to_task.push(last_speech.elapsed().as_secs_f64() * 1000.0);
        heard = text.clone();
        desk.begin(record(root, &text), latch.clone())?;
        let mut d = voxdesk_text::TextDriver::new(spec(&base)?, latch.clone(), &text);
        drive(
            &mut d,
            desk,
            Limits {
                step_cap: 5,
                no_progress: 3,
            },
        );
        let g = log.lock().map_err(|_| anyhow::anyhow!("log"))?;
        if let Some(got) = g.got.first() {
            lat.push(got.duration_since(last_speech).as_secs_f64() * 1000.0);
        }
    }
    Ok(format!(
        "end of speech → request sent (a {:.1} s spoken task, learned ears, desk open): median {:.0} ms over {} runs (of which end of speech → the task heard {:.0} ms), heard {heard:?} (target ≤ 400 ms)\n",
        speech.len() as f64 / 16_000.0,
        median(&mut lat),
        lat.len(),
        median(&mut to_task)
    ))
}
