//! `voxdesk bench tasks --driver script`: each task driven the way a model drives the tools, as scripted tool calls through the CLI — `voxdesk look --json` for `observe`, `voxdesk act --json` for `act`, naming look's observation and its target ids, each batch with the `expect` a careful model writes — so the model-facing results are held to the same outside judgement as the offline planner's.
//!
//! The script is what a plain model does with the task's words (parsed by the offline planner's
//! grammar, nothing else of it): for each step it observes, picks the target whose text is the
//! label (exactly, as a person reads it), scrolls the focused window down and looks again when
//! the label is not on screen (a few times), acts, and reads the result: a refusal or a decline
//! is final (it stops), a failed action stops it, an unconfirmed one is not repeated.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use voxdesk_agent::offline::{parse_task, ClickKind, Intent};
use voxdesk_screen::text::label_matches;

/// How a scripted run ended, as `voxdesk run` would have said it: 0 done, 1 failed after
/// something ran, 3 refused (or declined) before anything ran.
pub struct Scripted {
    pub exit: i32,
    /// Tool calls made (observe and act), and act results whose verdict was "verified".
    pub calls: usize,
    pub verified: usize,
    /// What happened, for the notes under the table.
    pub story: String,
}

struct Cli<'a> {
    exe: &'a Path,
    class: &'a str,
    calls: usize,
}

impl Cli<'_> {
    fn look(&mut self) -> Result<Value> {
        self.calls += 1;
        let o = Command::new(self.exe)
            .args(["look", "--json"])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .context("running voxdesk look")?;
        anyhow::ensure!(o.status.success(), "voxdesk look failed");
        Ok(serde_json::from_slice(&o.stdout)?)
    }

    /// One act call: (exit code, its JSON result).
    fn act(&mut self, batch: &Value) -> Result<(i32, Value)> {
        self.calls += 1;
        let o = Command::new(self.exe)
            .env("VOXDESK_ALLOW_APPS", self.class)
            .args(["act", "--mode", "auto", "--json"])
            .arg(batch.to_string())
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .context("running voxdesk act")?;
        let v = serde_json::from_slice(&o.stdout).unwrap_or_else(
            |_| json!({"error": String::from_utf8_lossy(&o.stderr).trim().to_string()}),
        );
        Ok((o.status.code().unwrap_or(-1), v))
    }

    /// The target named `label` on a fresh look (scrolling down to find it, as a model would).
    fn find(&mut self, label: &str) -> Result<Option<(Value, u64)>> {
        for attempt in 0..4 {
            let look = self.look()?;
            let hit = look["targets"].as_array().and_then(|ts| {
                ts.iter()
                    .find(|t| t["text"].as_str().is_some_and(|s| label_matches(label, s)))
                    .and_then(|t| t["id"].as_u64())
            });
            if let Some(id) = hit {
                return Ok(Some((look, id)));
            }
            if attempt == 3 {
                break;
            }
            let (code, _) = self.act(&json!({
                "observation_id": look["observation_id"],
                "actions": [{"action": "scroll", "direction": "down", "amount": 5}],
            }))?;
            if code != 0 {
                break;
            }
        }
        Ok(None)
    }
}

/// Drive task words `text` on the current display through look and act.
pub fn drive(exe: &Path, class: &str, text: &str) -> Result<Scripted> {
    let intents = parse_task(text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut cli = Cli {
        exe,
        class,
        calls: 0,
    };
    let (mut ran, mut verified) = (false, 0);
    let mut story = String::new();
    let end = |exit: i32, calls: usize, verified: usize, story: String| Scripted {
        exit,
        calls,
        verified,
        story,
    };
    for intent in intents {
        let (batch, what) = match &intent {
            Intent::Click { label, kind } => {
                let Some((look, id)) = cli.find(label)? else {
                    story.push_str(&format!("{label:?} not found; "));
                    return Ok(end(1, cli.calls, verified, story));
                };
                let action = match kind {
                    ClickKind::Single => "click",
                    ClickKind::Double => "double_click",
                    ClickKind::Right => "right_click",
                };
                (
                    json!({"observation_id": look["observation_id"],
                           "actions": [{"action": action, "target": id}]}),
                    format!("{action} {label:?}"),
                )
            }
            Intent::Type { text } => {
                let look = cli.look()?;
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                (
                    json!({"observation_id": look["observation_id"],
                           "actions": [{"action": "type", "text": text}],
                           "expect": {"appears": lines}}),
                    format!("type {text:?}"),
                )
            }
            Intent::Press { combo } => {
                let look = cli.look()?;
                (
                    json!({"observation_id": look["observation_id"],
                           "actions": [{"action": "key", "combo": combo.to_string()}]}),
                    format!("key {combo}"),
                )
            }
            Intent::WaitFor { label } => {
                let t0 = Instant::now();
                let mut seen = false;
                while !seen && t0.elapsed() < Duration::from_secs(15) {
                    seen = cli.look()?["targets"].as_array().is_some_and(|ts| {
                        ts.iter()
                            .any(|t| t["text"].as_str().is_some_and(|s| label_matches(label, s)))
                    });
                }
                if !seen {
                    story.push_str(&format!("{label:?} never showed; "));
                    return Ok(end(1, cli.calls, verified, story));
                }
                continue;
            }
            Intent::Wait { ms } => {
                std::thread::sleep(Duration::from_millis(*ms));
                continue;
            }
            other => {
                story.push_str(&format!("the script does not do {other:?}; "));
                return Ok(end(1, cli.calls, verified, story));
            }
        };
        let (code, r) = cli.act(&batch)?;
        let verdict = r["verification"]["verdict"]
            .as_str()
            .unwrap_or("")
            .to_string();
        verified += usize::from(verdict == "verified");
        story.push_str(&format!("{what} → exit {code} {verdict}; "));
        match code {
            0 => ran = true,
            // A refusal or a decline is final for that route: the model stops.
            3 => return Ok(end(if ran { 1 } else { 3 }, cli.calls, verified, story)),
            _ => return Ok(end(1, cli.calls, verified, story)),
        }
    }
    Ok(end(0, cli.calls, verified, story))
}
