//! `voxdesk act`: one batch (the `act` tool's JSON) through the desk on a fresh observation — rails, a yes when needed, the actuator, settle and verify — and a report of what happened to every action.

use std::sync::Arc;

use anyhow::{Context, Result};

use super::{settings, stop_on_signals, Exit, TerminalConfirm};
use voxdesk_desk::confirm::{AssumeYes, Confirm};
use voxdesk_desk::handoff::{self, Handoff};
use voxdesk_desk::tool::{ActResult, ActStatus, ToolCall, ToolResult};
use voxdesk_desk::{Desk, DeskError, Host};
use voxdesk_input::stop::StopLatch;

pub fn run(
    mode: Option<String>,
    json: bool,
    yes: bool,
    batch: String,
    config: Option<&std::path::Path>,
) -> Result<Exit> {
    let loaded = settings(config, mode)?;
    let text = if batch == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .context("reading the batch from standard input")?;
        s
    } else {
        batch
    };
    let batch = match voxdesk_core::action::parse_batch(&text) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("voxdesk: error: unusable batch: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let latch = Arc::new(StopLatch::default());
    stop_on_signals(latch.clone())?;
    let confirm: Box<dyn Confirm> = if yes {
        Box::new(AssumeYes)
    } else {
        Box::new(TerminalConfirm)
    };
    let mut desk = match Desk::new(&loaded.settings, None, confirm, latch) {
        Ok(d) => d,
        Err(e @ DeskError::RefusedByLock(_)) => {
            eprintln!("voxdesk: {e}");
            return Ok(Exit::Refused);
        }
        Err(e) => return Err(e.into()),
    };
    // A batch written against `voxdesk look`'s observation (another process) runs while the
    // screen still shows what it names: this desk adopts look's targets, so its observation
    // keeps their ids, and `handoff::carry` judges what moved.
    let look = batch.observation_id.as_deref().and_then(Handoff::load);
    if let Some(h) = &look {
        desk.adopt(h.targets());
    }
    let mut batch = batch;
    match desk.call(&ToolCall::Observe) {
        ToolResult::Error { message, .. } => anyhow::bail!(message),
        ToolResult::Observation(o) => {
            if let Some(h) = &look {
                match handoff::carry(h, &o.targets, o.picture, &batch) {
                    Ok(()) => batch.observation_id = Some(o.id.clone()),
                    Err(why) => {
                        eprintln!("voxdesk: refused by rule `stale-observation`: {why}\nnothing in the batch ran");
                        return Ok(Exit::Refused);
                    }
                }
            }
        }
        _ => {}
    }
    let r = match desk.call(&ToolCall::Act(batch)) {
        ToolResult::Act(a) => a,
        ToolResult::Error { message, .. } => anyhow::bail!(message),
        other => anyhow::bail!("unexpected result: {}", other.to_json()),
    };
    let mode = desk.mode().to_string();
    drop(desk);
    if json {
        let mut v = r.to_json();
        v["mode"] = mode.into();
        println!("{v}");
    } else {
        print!("{}", render(&r, &mode));
    }
    Ok(match r.status {
        ActStatus::Ran | ActStatus::Recorded => Exit::Ok,
        ActStatus::Refused | ActStatus::Declined => Exit::Refused,
        ActStatus::Stopped => Exit::Stopped,
        ActStatus::Failed => Exit::Failed,
    })
}

/// The report for a person: one line per action, the refusal or the verdict, the status.
fn render(r: &ActResult, mode: &str) -> String {
    let mut s = format!(
        "observation {} · mode {mode} · app {}\n",
        r.observation_id,
        r.app.as_deref().unwrap_or("(unknown)")
    );
    for a in &r.actions {
        s.push_str(&format!(
            "  {:>2}. {:<12} {:<40} {}{}\n",
            a.index,
            a.action,
            a.step.as_deref().unwrap_or(""),
            a.outcome.name(),
            a.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ));
    }
    if let (ActStatus::Refused | ActStatus::Declined, Some(f)) = (r.status, &r.refusal) {
        s.push_str(&format!(
            "refused by rule `{}`{}: {}\nnothing in the batch ran\n",
            f.rule,
            f.action
                .map(|n| format!(" (action {n})"))
                .unwrap_or_default(),
            f.message
        ));
    }
    if matches!(r.status, ActStatus::Ran | ActStatus::Failed) {
        s.push_str(&format!(
            "verification: {}{}\n",
            r.verdict.name(),
            r.verdict
                .detail()
                .map(|d| format!(": {d}"))
                .unwrap_or_default()
        ));
    }
    s.push_str(&format!("status: {}\n", r.status.as_str()));
    s
}
