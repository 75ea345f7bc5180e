//! `voxdesk run`: a task driven to its end by the named provider's driver through the desk, printed, spoken and recorded.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use super::{settings, stop_on_signals, Console, Exit, TerminalConfirm};
use voxdesk::agent::registry::{self, RegistryError};
use voxdesk::agent::{drive, Limits};
use voxdesk::desk::{Desk, Host, RecordSpec, RefusedByLock};
use voxdesk::input::stop::StopLatch;
use voxdesk::record::session::{sessions_dir, Status};
use voxdesk::voice::narrate::Narrator;

pub struct RunArgs {
    pub provider: String,
    pub model: Option<String>,
    pub mode: Option<String>,
    pub quiet: bool,
    pub narration_wav: Option<PathBuf>,
    pub step_cap: usize,
    pub task: String,
}

pub fn run(a: RunArgs, config: Option<&std::path::Path>) -> Result<Exit> {
    // A task the driver cannot read is refused before anything starts or is recorded.
    let mut driver = match registry::driver(&a.provider, a.model.as_deref(), &a.task) {
        Ok(d) => d,
        Err(e @ RegistryError::Task(_)) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
        Err(e) => return Err(e.into()),
    };
    let loaded = settings(config, a.mode)?;
    let latch = Arc::new(StopLatch::default());
    stop_on_signals(latch.clone())?;
    let spec = RecordSpec {
        root: sessions_dir(),
        task: a.task.clone(),
        provider: driver.provider().to_string(),
        model: driver.model().to_string(),
        decomposition: driver.decomposition(),
    };
    let mut desk = match Desk::new(
        &loaded.settings,
        Some(spec),
        Box::new(TerminalConfirm),
        latch.clone(),
    ) {
        Ok(d) => d,
        Err(e) if e.downcast_ref::<RefusedByLock>().is_some() => {
            eprintln!("voxdesk: {e}");
            return Ok(Exit::Refused);
        }
        Err(e) => return Err(e),
    };
    desk.subscribe(Box::new(Console));
    if !a.quiet || a.narration_wav.is_some() {
        desk.subscribe(Box::new(Narrator::new(
            !a.quiet,
            a.narration_wav,
            Some(latch),
        )));
    }
    let end = drive(
        driver.as_mut(),
        &mut desk,
        Limits {
            step_cap: a.step_cap,
            no_progress: loaded.settings.rails.max_failures,
        },
    );
    let dir = desk.session_dir();
    let broken = desk.broken();
    // Refused as a whole: a rule (or no yes) refused a step and nothing ever ran.
    let refused = desk.record().is_some_and(|r| {
        r.steps.iter().all(|s| s.rails != "approved")
            && r.steps
                .iter()
                .any(|s| !matches!(s.rails.as_str(), "recorded" | "not planned"))
    });
    // Dropping the desk lets the voice finish its last sentence (bounded).
    drop(desk);
    if let Some(d) = dir {
        println!("session: {}", d.display());
    }
    if let Some(why) = broken {
        eprintln!("voxdesk: error: the session record is incomplete: {why}");
        return Ok(Exit::Failed);
    }
    Ok(match end.status {
        Status::Done => Exit::Ok,
        Status::Stopped => Exit::Stopped,
        _ if refused => Exit::Refused,
        _ => Exit::Failed,
    })
}
