//! `voxdesk bench serve`: the daemon under load on loopback, bounded in time — sessions on xcalc run back to back while 50 event-stream clients listen and /observe/health is asked 200 times a second; every client must see every event in order; health latency, delivery latency from the desk to a client, and the sessions' own step timings alone and under load.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::StreamExt;
use serde_json::{json, Value};

const TASK: &str =
    "click AC, click 1, click +, click 2, click =, click AC, click 3, click +, click 4, click =";

struct Daemon {
    child: Child,
    url: String,
    token: String,
    dirs: Vec<std::path::PathBuf>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn start_daemon() -> Result<Daemon> {
    let dirs: Vec<std::path::PathBuf> = ["config", "data", "runtime"]
        .iter()
        .map(|n| {
            std::env::temp_dir().join(format!("voxdesk-bench-serve-{}-{n}", std::process::id()))
        })
        .collect();
    for d in &dirs {
        voxdesk_core::private::dir(d)?;
    }
    let mut child = Command::new(super::bench::voxdesk_exe())
        .env("XDG_CONFIG_HOME", &dirs[0])
        .env("XDG_DATA_HOME", &dirs[1])
        .env("XDG_RUNTIME_DIR", &dirs[2])
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .args(["serve", "--quiet", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting voxdesk serve")?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("its stdout")?).read_line(&mut line)?;
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .context("the daemon did not say where it listens")?
        .to_string();
    let token = std::fs::read_to_string(dirs[0].join("voxdesk/serve.token"))?
        .trim()
        .to_string();
    Ok(Daemon {
        child,
        url,
        token,
        dirs,
    })
}

fn pct(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() - 1) as f64 * p).round() as usize]
}

fn wall_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// What one event-stream client saw: ids in arrival order, delivery delays, step timings.
#[derive(Default)]
struct Seen {
    ids: Vec<u64>,
    delay_ms: Vec<f64>,
    steps_ms: Vec<f64>,
    ended: usize,
    error: Option<String>,
}

async fn client(http: reqwest::Client, url: String, token: String, seen: Arc<Mutex<Seen>>) {
    let r = http
        .get(format!("{url}/observe/events"))
        .bearer_auth(&token)
        .send()
        .await;
    let mut body = match r {
        Ok(r) if r.status().is_success() => r.bytes_stream(),
        Ok(r) => {
            seen.lock().unwrap().error = Some(r.status().to_string());
            return;
        }
        Err(e) => {
            seen.lock().unwrap().error = Some(e.to_string());
            return;
        }
    };
    let mut buf = String::new();
    while let Some(chunk) = body.next().await {
        let Ok(chunk) = chunk else {
            seen.lock().unwrap().error = Some("the stream broke".into());
            return;
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let now = wall_ms();
            let Some(e) = voxdesk_record::sse::next_event(&mut block.as_bytes()) else {
                continue;
            };
            let id = e.id.and_then(|i| i.parse::<u64>().ok());
            let data = serde_json::from_str::<Value>(&e.data).ok();
            let (Some(id), Some(d)) = (id, data) else {
                continue;
            };
            let mut s = seen.lock().unwrap();
            s.ids.push(id);
            if let Some(t) = d["t_ms"].as_f64() {
                s.delay_ms.push(now - t);
            }
            match d["event"].as_str() {
                Some("step") => {
                    if let Some(ms) = d["ms"].as_f64() {
                        s.steps_ms.push(ms);
                    }
                }
                Some("session_ended") => s.ended += 1,
                _ => {}
            }
        }
    }
}

/// Start a session and wait for its end; its status.
async fn session(http: &reqwest::Client, d: &Daemon) -> Result<String> {
    let r = http
        .post(format!("{}/observe/sessions", d.url))
        .bearer_auth(&d.token)
        .json(
            &json!({"task": TASK, "provider": "local", "model": "offline-planner", "mode": "auto"}),
        )
        .send()
        .await?;
    let code = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    if !code.is_success() {
        bail!("starting a session: {code} {v}");
    }
    let id = v["id"].as_str().unwrap_or_default().to_string();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let v: Value = http
            .get(format!("{}/observe/sessions/{id}", d.url))
            .bearer_auth(&d.token)
            .send()
            .await?
            .json()
            .await?;
        if v["status"] != "running" {
            return Ok(v["status"].as_str().unwrap_or("?").to_string());
        }
    }
}

pub fn serve(clients: usize, rate: u32, seconds: u64) -> Result<String> {
    let mut calc = Command::new("xcalc")
        .args(["-geometry", "300x400+400+200"])
        .spawn()
        .context("starting xcalc (apt-get install x11-apps)")?;
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("xdotool")
        .args(["search", "--class", "XCalc", "windowactivate", "--sync"])
        .status();
    let d = start_daemon()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let out = rt.block_on(async {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()?;
        // Alone: one listener, two sessions, for the step timings without load.
        eprintln!("bench serve: sessions alone…");
        let alone = Arc::new(Mutex::new(Seen::default()));
        let solo = tokio::spawn(client(http.clone(), d.url.clone(), d.token.clone(), alone.clone()));
        for _ in 0..2 {
            session(&http, &d).await?;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        solo.abort();
        let alone_steps = alone.lock().unwrap().steps_ms.clone();

        // Under load.
        eprintln!("bench serve: {clients} event-stream clients and {rate} health requests/s for {seconds} s…");
        let seen: Vec<Arc<Mutex<Seen>>> = (0..clients).map(|_| Arc::default()).collect();
        let tasks: Vec<_> = seen
            .iter()
            .map(|s| tokio::spawn(client(http.clone(), d.url.clone(), d.token.clone(), s.clone())))
            .collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let health: Arc<Mutex<(Vec<f64>, u32)>> = Arc::default();
        let until = Instant::now() + Duration::from_secs(seconds);
        let h2 = health.clone();
        let (hu, ht, hh) = (d.url.clone(), d.token.clone(), http.clone());
        let load = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let mut inflight = Vec::new();
            while Instant::now() < until {
                tick.tick().await;
                let (c, u, t, h) = (hh.clone(), hu.clone(), ht.clone(), h2.clone());
                inflight.push(tokio::spawn(async move {
                    let t0 = Instant::now();
                    let ok = c
                        .get(format!("{u}/observe/health"))
                        .bearer_auth(&t)
                        .send()
                        .await
                        .map(|r| r.status().is_success())
                        .unwrap_or(false);
                    let ms = t0.elapsed().as_secs_f64() * 1000.0;
                    let mut g = h.lock().unwrap();
                    if ok {
                        g.0.push(ms);
                    } else {
                        g.1 += 1;
                    }
                }));
            }
            for t in inflight {
                let _ = t.await;
            }
        });
        let mut sessions = 0;
        let mut statuses = Vec::new();
        while Instant::now() < until {
            statuses.push(session(&http, &d).await?);
            sessions += 1;
        }
        load.await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        for t in &tasks {
            t.abort();
        }
        let (health_ms, health_err) = health.lock().unwrap().clone();
        let mut delays = Vec::new();
        let mut loaded_steps = Vec::new();
        let mut complete = 0;
        let mut stream_errors = 0;
        let reference: Vec<u64> = seen[0].lock().unwrap().ids.clone();
        for s in &seen {
            let s = s.lock().unwrap();
            delays.extend(&s.delay_ms);
            if loaded_steps.is_empty() {
                loaded_steps = s.steps_ms.clone();
            }
            let in_order = s.ids.windows(2).all(|w| w[1] == w[0] + 1);
            if s.error.is_none() && in_order && s.ids == reference && s.ended >= sessions {
                complete += 1;
            }
            if s.error.is_some() {
                stream_errors += 1;
            }
        }
        let mut o = String::new();
        o.push_str(&format!(
            "\nvoxdesk serve under load (loopback; {clients} event-stream clients, {rate} health requests/s for {seconds} s; {sessions} sessions of 10 steps on xcalc: {})\n\n",
            statuses.join(", ")
        ));
        o.push_str("| measure | median | p99 | n | target |\n|---|---|---|---|---|\n");
        o.push_str(&format!(
            "| /observe/health latency | {:.2} ms | {:.2} ms | {} | p99 ≤ 20 ms |\n",
            pct(&health_ms, 0.5),
            pct(&health_ms, 0.99),
            health_ms.len()
        ));
        o.push_str(&format!(
            "| event delivery, desk → client | {:.1} ms | {:.1} ms | {} | median ≤ 10 ms |\n",
            pct(&delays, 0.5),
            pct(&delays, 0.99),
            delays.len()
        ));
        o.push_str(&format!(
            "| step time, sessions alone | {:.0} ms | {:.0} ms | {} | |\n",
            pct(&alone_steps, 0.5),
            pct(&alone_steps, 0.99),
            alone_steps.len()
        ));
        o.push_str(&format!(
            "| step time, under load | {:.0} ms | {:.0} ms | {} | unchanged within noise |\n",
            pct(&loaded_steps, 0.5),
            pct(&loaded_steps, 0.99),
            loaded_steps.len()
        ));
        o.push_str(&format!(
            "\nhealth errors: {health_err} (target 0); stream errors: {stream_errors}; clients that saw every event ({} events) in order: {complete}/{clients}\n",
            reference.len()
        ));
        anyhow::Ok(o)
    });
    let _ = calc.kill();
    let _ = calc.wait();
    drop(d);
    out
}
