//! `voxdesk run` when a daemon runs: the session is started on the daemon (never a second loop beside it), its narration printed from the event stream, a confirmation answered on the terminal, Ctrl-C sent as a stop, and the exit code taken from how the session ended.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::cli::Exit;
use voxdesk_record::sse::next_event;

pub struct Start<'a> {
    pub task: &'a str,
    pub provider: &'a str,
    pub model: Option<String>,
    pub mode: Option<String>,
}

pub fn run(url: &str, token: &str, s: Start) -> Result<Exit> {
    let http = reqwest::blocking::Client::builder()
        .timeout(None::<Duration>)
        .build()?;
    let auth = format!("Bearer {token}");
    // The stream first, so nothing of the new session is missed.
    let stream = http
        .get(format!("{url}/observe/events"))
        .header("Authorization", &auth)
        .send()
        .context("the daemon's event stream")?;
    anyhow::ensure!(
        stream.status().is_success(),
        "the daemon refused its event stream: {}",
        stream.status()
    );
    let r = http
        .post(format!("{url}/observe/sessions"))
        .header("Authorization", &auth)
        .json(&json!({"task": s.task, "provider": s.provider, "model": s.model, "mode": s.mode}))
        .timeout(Duration::from_secs(90))
        .send()
        .context("starting the session on the daemon")?;
    let code = r.status();
    let body: Value = r.json().unwrap_or(Value::Null);
    if !code.is_success() {
        eprintln!(
            "voxdesk: error: the daemon at {url} did not start it ({code}): {}",
            body["error"].as_str().unwrap_or("")
        );
        return Ok(match code.as_u16() {
            400 => Exit::BadInput,
            409 => Exit::Refused,
            _ => Exit::Failed,
        });
    }
    let id = body["id"].as_str().unwrap_or_default().to_string();
    eprintln!("voxdesk: running on the daemon at {url} as session {id}");
    // Ctrl-C is a stop request to the daemon; a second one leaves it running there.
    {
        let (http, url, auth, id) = (http.clone(), url.to_string(), auth.clone(), id.clone());
        let mut asked = false;
        crate::cli::on_signals(move |name| {
            if asked {
                eprintln!("voxdesk: exiting; the daemon finishes stopping the session");
                Exit::Signalled(name).now();
            }
            asked = true;
            eprintln!("voxdesk: stopping the session on the daemon");
            let _ = http
                .post(format!("{url}/observe/sessions/{id}/stop"))
                .header("Authorization", &auth)
                .send();
        })?;
    }
    let mut reader = BufReader::new(stream);
    while let Some(e) = next_event(&mut reader) {
        let v: Value = serde_json::from_str(&e.data).unwrap_or(Value::Null);
        if v["session"].as_str() != Some(id.as_str()) {
            continue;
        }
        match e.event.as_str() {
            "narration" => println!("🗣  {}", v["text"].as_str().unwrap_or("")),
            "transcript" => println!(
                "{}: {}",
                v["who"].as_str().unwrap_or(""),
                v["text"].as_str().unwrap_or("")
            ),
            "confirmation_asked" if std::io::stdin().is_terminal() => {
                eprint!("{} [y/N] ", v["question"].as_str().unwrap_or(""));
                let _ = std::io::stderr().flush();
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
                let yes = matches!(line.trim().to_lowercase().as_str(), "y" | "yes");
                let _ = http
                    .post(format!("{url}/observe/sessions/{id}/confirm"))
                    .header("Authorization", &auth)
                    .json(&json!({ "yes": yes }))
                    .send();
            }
            "session_ended" => {
                println!("session: {id} (recorded by the daemon)");
                return Ok(match v["status"].as_str() {
                    Some("done") => Exit::Ok,
                    Some("stopped") => Exit::Stopped,
                    _ => Exit::Failed,
                });
            }
            _ => {}
        }
    }
    eprintln!("voxdesk: error: the daemon closed the event stream before the session ended");
    Ok(Exit::Failed)
}
