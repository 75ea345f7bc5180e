//! `voxdesk bench tasks --driver script`: each task driven the way a model drives the tools, as scripted tool calls through the CLI — `voxdesk look --json` for `observe`, `voxdesk act --json` for `act`, naming look's observation and its target ids, each batch with the `expect` a careful model writes — so the model-facing results are held to the same outside judgement as the offline planner's.
//!
//! The script is what a plain model does with the task's words (parsed by the offline planner's
//! grammar, nothing else of it): for each step it observes, picks the target whose text is the
//! label (exactly, as a person reads it; a control the tree names first), scrolls the focused
//! window down and looks again when the label is not on screen (a few times), acts, and reads
//! the result: a refusal or a decline is final (it stops); a verified step goes on; a
//! waited-for label is waited for (15 s at most); a step that changed nothing and says it is
//! safe to repeat is tried once more; anything else (unconfirmed, failed) stops it, never
//! repeated.

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
        for attempt in 0..7 {
            let look = self.look()?;
            // Where several targets carry the words, the one the application's tree calls a
            // control (it has a role) is what a model reading the roles picks; else the first.
            let hit = look["targets"].as_array().and_then(|ts| {
                let named = || {
                    ts.iter()
                        .filter(|t| t["text"].as_str().is_some_and(|s| label_matches(label, s)))
                };
                named()
                    .find(|t| t["role"].is_string())
                    .or_else(|| named().next())
                    .and_then(|t| t["id"].as_u64())
            });
            if let Some(id) = hit {
                return Ok(Some((look, id)));
            }
            if attempt == 6 {
                break;
            }
            let (code, _) = self.act(&json!({
                "observation_id": look["observation_id"],
                "actions": [{"action": "scroll", "direction": "down", "amount": 3}],
            }))?;
            if code != 0 {
                break;
            }
        }
        Ok(None)
    }
}

/// One step as a model writes it: the batch (on a fresh look) and what it should cause.
enum Step {
    Act(Value, String),
    Missing(String),
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
        if let Intent::Wait { ms } = intent {
            std::thread::sleep(Duration::from_millis(ms));
            continue;
        }
        let waiting = matches!(intent, Intent::WaitFor { .. });
        let t0 = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            let step = match &intent {
                Intent::Click { label, kind } => match cli.find(label)? {
                    None => Step::Missing(label.clone()),
                    Some((look, id)) => {
                        let action = match kind {
                            ClickKind::Single => "click",
                            ClickKind::Double => "double_click",
                            ClickKind::Right => "right_click",
                        };
                        Step::Act(
                            json!({"observation_id": look["observation_id"],
                                   "actions": [{"action": action, "target": id}],
                                   "expect": {"changes": true}}),
                            format!("{action} {label:?}"),
                        )
                    }
                },
                Intent::Type { text } => {
                    let look = cli.look()?;
                    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                    Step::Act(
                        json!({"observation_id": look["observation_id"],
                               "actions": [{"action": "type", "text": text}],
                               "expect": {"appears": lines}}),
                        format!("type {text:?}"),
                    )
                }
                Intent::Press { combo } => {
                    let look = cli.look()?;
                    Step::Act(
                        json!({"observation_id": look["observation_id"],
                               "actions": [{"action": "key", "combo": combo.to_string()}],
                               "expect": {"changes": true}}),
                        format!("key {combo}"),
                    )
                }
                // Waiting is a short wait whose result must show the label.
                Intent::WaitFor { label } => Step::Act(
                    json!({"actions": [{"action": "wait", "ms": 500}],
                           "expect": {"shows": [label]}}),
                    format!("wait for {label:?}"),
                ),
                other => {
                    story.push_str(&format!("the script does not do {other:?}; "));
                    return Ok(end(1, cli.calls, verified, story));
                }
            };
            let (batch, what) = match step {
                Step::Act(b, w) => (b, w),
                Step::Missing(label) => {
                    story.push_str(&format!("{label:?} not found; "));
                    return Ok(end(1, cli.calls, verified, story));
                }
            };
            let (code, r) = cli.act(&batch)?;
            let v = &r["verification"];
            let verdict = v["verdict"].as_str().unwrap_or("").to_string();
            story.push_str(&format!("{what} → exit {code} {verdict}; "));
            match code {
                0 => ran = true,
                // A refusal or a decline is final for that route: the model stops.
                3 => return Ok(end(if ran { 1 } else { 3 }, cli.calls, verified, story)),
                _ => return Ok(end(1, cli.calls, verified, story)),
            }
            // What a careful model does with the verdict: go on when it is verified; wait
            // again (bounded) while a waited-for label has not shown; try once more only what
            // changed nothing and the result says is safe to repeat; otherwise stop.
            match verdict.as_str() {
                "verified" | "unverified" => {
                    verified += usize::from(verdict == "verified");
                    break;
                }
                _ if waiting && t0.elapsed() < Duration::from_secs(15) => continue,
                "failed" if tries == 1 && v["repeatable"] == Value::Bool(true) => continue,
                _ => return Ok(end(1, cli.calls, verified, story)),
            }
        }
    }
    Ok(end(0, cli.calls, verified, story))
}
