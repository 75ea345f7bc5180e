//! `voxdesk act`: one fresh observation, the rails, a yes when needed, then the actuator under the GUI lock and the emergency stop — and a report of what happened to every action.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::action::Batch;
use crate::actuator::{Actuator, Outcome, StopLatch, StopWatcher};
use crate::capture;
use crate::config::{Mode, Settings};
use crate::lock::GuiLock;
use crate::perception::{engine, Perceiver};
use crate::rails::{self, Decision, Screen};

/// Exit codes of `voxdesk act`.
pub const EXIT_OK: u8 = 0;
pub const EXIT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_REFUSED: u8 = 3;
pub const EXIT_STOPPED: u8 = 4;

#[derive(Debug, Serialize)]
pub struct ActionReport {
    pub index: usize,
    pub action: &'static str,
    /// The resolved step ("click at (130, 108)"), when the rails got that far.
    pub step: Option<String>,
    /// done | stopped | failed | skipped (after a failure) | would-run | not-run
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub ms: f64,
}

#[derive(Debug, Serialize)]
pub struct RefusalDto {
    pub rule: &'static str,
    pub action: Option<usize>,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct ActReport {
    pub observation_id: String,
    pub mode: String,
    pub app: Option<String>,
    /// ran | recorded | refused | stopped | failed
    pub status: &'static str,
    pub refusal: Option<RefusalDto>,
    pub actions: Vec<ActionReport>,
}

impl ActReport {
    pub fn exit_code(&self) -> u8 {
        match self.status {
            "ran" | "recorded" => EXIT_OK,
            "refused" => EXIT_REFUSED,
            "stopped" => EXIT_STOPPED,
            _ => EXIT_FAILED,
        }
    }

    pub fn render(&self) -> String {
        let mut s = format!(
            "observation {} · mode {} · app {}\n",
            self.observation_id,
            self.mode,
            self.app.as_deref().unwrap_or("(unknown)")
        );
        for a in &self.actions {
            s.push_str(&format!(
                "  {:>2}. {:<12} {:<40} {}{}\n",
                a.index,
                a.action,
                a.step.as_deref().unwrap_or(""),
                a.outcome,
                a.error
                    .as_ref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ));
        }
        if let Some(r) = &self.refusal {
            s.push_str(&format!(
                "refused by rule `{}`{}: {}\nnothing in the batch ran\n",
                r.rule,
                r.action
                    .map(|n| format!(" (action {n})"))
                    .unwrap_or_default(),
                r.message
            ));
        }
        s.push_str(&format!("status: {}\n", self.status));
        s
    }
}

/// Ask on the terminal. No terminal: no yes.
pub fn ask_yes(question: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        return false;
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).is_ok()
        && matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
}

/// Run `batch` against the live screen under `settings`.
pub fn run(mut batch: Batch, settings: &Settings, assume_yes: bool) -> anyhow::Result<ActReport> {
    let mode = settings.rails.mode;
    let display = std::env::var("DISPLAY").unwrap_or_default();
    // The lock comes first: two voxdesks must not even plan against each other's half-finished work.
    let _lock = if mode == Mode::Observe {
        None
    } else {
        Some(
            GuiLock::acquire(&display, settings.lock_lease_ms)
                .map_err(|e| anyhow::anyhow!(RefusedByLock(e.to_string())))?,
        )
    };
    let capturer = capture::Capturer::new()?;
    let frame = capturer.capture()?;
    let app = capture::focused_window().ok().flatten();
    let (w, h) = frame.size();
    let mut perceiver = Perceiver::new(engine::default_workers())?;
    let p = perceiver.perceive(frame.image.as_raw(), w, h, true)?;
    let observation_id = format!("obs-{:x}-1", std::process::id());
    let named = batch
        .observation_id
        .get_or_insert_with(|| observation_id.clone())
        .clone();
    // The model names points in the picture it saw.
    let mapping =
        crate::picture::picture_mapping(&frame, crate::picture::PictureConfig::default())?;
    let screen = Screen {
        observation_id: &named,
        latest_id: &observation_id,
        targets: &p.targets,
        mapping,
        app: app.as_ref().map(|a| a.app.as_str()),
    };
    let mut report = ActReport {
        observation_id: observation_id.clone(),
        mode: mode.to_string(),
        app: app.as_ref().map(|a| a.app.clone()),
        status: "refused",
        refusal: None,
        actions: Vec::new(),
    };
    let checked = match rails::check(&batch, &screen, &settings.rails, &settings.stop.combo) {
        Ok(c) => c,
        Err(r) => {
            report.actions = batch
                .actions
                .iter()
                .enumerate()
                .map(|(i, a)| ActionReport {
                    index: i + 1,
                    action: a.name(),
                    step: None,
                    outcome: "not-run",
                    error: None,
                    ms: 0.0,
                })
                .collect();
            report.refusal = Some(RefusalDto {
                rule: r.rule,
                action: r.action,
                message: r.message,
            });
            return Ok(report);
        }
    };
    let step_text: Vec<String> = checked.steps.iter().map(|s| s.to_string()).collect();
    let names: Vec<&'static str> = batch.actions.iter().map(|a| a.name()).collect();
    let listing = |outcome: &'static str| -> Vec<ActionReport> {
        names
            .iter()
            .zip(&step_text)
            .enumerate()
            .map(|(i, (n, s))| ActionReport {
                index: i + 1,
                action: n,
                step: Some(s.clone()),
                outcome,
                error: None,
                ms: 0.0,
            })
            .collect()
    };
    let approved = match rails::approve(checked.clone(), mode, &settings.rails, assume_yes) {
        Decision::Record => {
            report.status = "recorded";
            report.actions = listing("would-run");
            return Ok(report);
        }
        Decision::AskFirst(why) => {
            eprintln!(
                "planned:\n{}",
                step_text
                    .iter()
                    .enumerate()
                    .map(|(i, s)| format!("  {}. {s}", i + 1))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            if !ask_yes(&format!(
                "{}. Run these {} actions?",
                why.join("; "),
                step_text.len()
            )) {
                report.actions = listing("not-run");
                report.refusal = Some(RefusalDto {
                    rule: "confirmation",
                    action: None,
                    message: format!("needs a yes ({}) and none was given", why.join("; ")),
                });
                return Ok(report);
            }
            match rails::approve(checked, mode, &settings.rails, true) {
                Decision::Run(a) => a,
                other => {
                    anyhow::bail!("internal error: a confirmed batch was not approved ({other:?})")
                }
            }
        }
        Decision::Run(a) => a,
    };
    let latch = Arc::new(StopLatch::default());
    let _watch = StopWatcher::start(
        &settings.stop.combo,
        Duration::from_millis(settings.stop.hold_ms),
        latch.clone(),
    )
    .map_err(|e| anyhow::anyhow!("{e}: refusing to act without an emergency stop"))?;
    let actuator = Actuator::start(latch.clone()).map_err(|e| anyhow::anyhow!(e))?;
    let t0 = Instant::now();
    let rx = actuator.run(
        approved,
        Duration::from_millis(settings.rails.rate_limit_ms),
    );
    report.actions = listing("not-run");
    for r in rx {
        let a = &mut report.actions[r.index];
        a.ms = (r.took.as_secs_f64() * 1000.0 * 10.0).round() / 10.0;
        match r.outcome {
            Outcome::Done => a.outcome = "done",
            Outcome::Skipped => a.outcome = "skipped",
            Outcome::Stopped => a.outcome = "stopped",
            Outcome::Failed(e) => {
                a.outcome = "failed";
                a.error = Some(e);
            }
        }
    }
    drop(actuator);
    tracing::debug!("batch took {:?}", t0.elapsed());
    report.status = if latch.is_stopped() {
        "stopped"
    } else if report.actions.iter().any(|a| a.outcome == "failed") {
        "failed"
    } else {
        "ran"
    };
    Ok(report)
}

/// The GUI lock refused: reported as a refusal (exit 3), not a crash.
#[derive(Debug)]
pub struct RefusedByLock(pub String);
impl std::fmt::Display for RefusedByLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused by rule `gui-lock`: {}", self.0)
    }
}
impl std::error::Error for RefusedByLock {}
