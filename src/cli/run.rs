//! `voxdesk run`: a task driven to its end by the named provider's driver through the desk, printed, spoken and recorded.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use super::{open_desk, settings, stop_on_signals, Console, Exit};
use voxdesk_agent::registry::{self, RegistryError};
use voxdesk_agent::{drive, Limits};
use voxdesk_desk::{Desk, Host, RecordSpec};
use voxdesk_input::stop::StopLatch;
use voxdesk_realtime::launch::{drive_realtime, Voice};
use voxdesk_record::session::{sessions_dir, Status};
use voxdesk_voice::narrate::Narrator;

pub struct RunArgs {
    pub provider: String,
    pub model: Option<String>,
    /// The realtime endpoint's base (scheme, host, port).
    pub endpoint: Option<String>,
    pub mode: Option<String>,
    pub quiet: bool,
    pub narration_wav: Option<PathBuf>,
    pub step_cap: usize,
    pub task: String,
}

pub fn run(a: RunArgs, config: Option<&std::path::Path>) -> Result<Exit> {
    let loaded = settings(config, a.mode.clone())?;
    let model = voxdesk_realtime::launch::model(&loaded, &a.provider, a.model.as_deref());
    // One process owns the screen's session: when the daemon runs, it runs this one too.
    if let Some((url, token)) = super::serve::running_daemon()? {
        if a.endpoint.is_some() || a.narration_wav.is_some() {
            tracing::warn!("--endpoint and --narration-wav are the daemon's to set; ignored");
        }
        let model = model.or_else(|| {
            registry::resolve(&a.provider, None)
                .ok()
                .map(|(_, m)| m.to_string())
        });
        return super::serve::client::run(
            &url,
            &token,
            super::serve::client::Start {
                task: &a.task,
                provider: &a.provider,
                model,
                mode: a.mode.clone(),
            },
        );
    }
    match registry::resolve_realtime(&a.provider, model.as_deref()) {
        Ok(Some((provider, model))) => return realtime(a, loaded, provider, model),
        Ok(None) => {}
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    }
    match registry::resolve_text(&a.provider, model.as_deref()) {
        Ok(Some((provider, model))) => return text(a, loaded, provider, model),
        Ok(None) => {}
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    }
    // A task the driver cannot read is refused before anything starts or is recorded.
    let mut driver = match registry::driver(&a.provider, a.model.as_deref(), &a.task) {
        Ok(d) => d,
        Err(e @ RegistryError::Task(_)) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
        Err(e) => return Err(e.into()),
    };
    let latch = Arc::new(StopLatch::default());
    stop_on_signals(latch.clone())?;
    let spec = RecordSpec {
        root: sessions_dir(),
        task: a.task.clone(),
        provider: driver.provider().to_string(),
        model: driver.model().to_string(),
        decomposition: driver.decomposition(),
        prompt_version: voxdesk_desk::PROMPT_VERSION.into(),
    };
    super::say_if_observing(&loaded.settings);
    let Some(mut desk) = open_desk(&loaded.settings, spec, latch.clone())? else {
        return Ok(Exit::Refused);
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
    finish(desk, end.status)
}

/// Print where the session is recorded and map its end to the exit code.
fn finish(mut desk: Desk, status: Status) -> Result<Exit> {
    let dir = desk.session_dir();
    let broken = desk.broken();
    // Refused as a whole: a rule (or no yes) refused a step and nothing ever ran.
    let refused = desk.record().is_some_and(|r| r.refused_throughout());
    // Dropping the desk lets the voice finish its last sentence (bounded).
    drop(desk);
    if let Some(d) = dir {
        println!("session: {}", d.display());
    }
    if let Some(why) = broken {
        eprintln!("voxdesk: error: the session record is incomplete: {why}");
        return Ok(Exit::Failed);
    }
    Ok(match status {
        Status::Done => Exit::Ok,
        Status::Stopped => Exit::Stopped,
        _ if refused => Exit::Refused,
        _ => Exit::Failed,
    })
}

/// `voxdesk run --provider openai-compatible --endpoint … --model …`: the same loop, driven by
/// a turn-based model over HTTP.
fn text(
    a: RunArgs,
    loaded: voxdesk_core::config::Loaded,
    provider: &'static str,
    model: String,
) -> Result<Exit> {
    use voxdesk_text::driver::INSTRUCTION_VERSION;
    let Some(p) = voxdesk_text::Provider::from_name(provider) else {
        eprintln!("voxdesk: error: provider {provider} has no text driver");
        return Ok(Exit::BadInput);
    };
    let mut spec = match voxdesk_text::Spec::resolve(p, Some(&model), a.endpoint.as_deref(), |k| {
        std::env::var(k).ok()
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    spec.max_actions = loaded.settings.rails.max_actions;
    super::text_pictures(&mut spec, &loaded.settings);
    let pictures = spec.flavour.pictures;
    let latch = Arc::new(StopLatch::default());
    stop_on_signals(latch.clone())?;
    let mut driver = voxdesk_text::TextDriver::new(spec, latch.clone(), &a.task);
    let record = RecordSpec {
        root: sessions_dir(),
        task: a.task.clone(),
        provider: provider.to_string(),
        model,
        decomposition: Vec::new(),
        prompt_version: format!("{}+{INSTRUCTION_VERSION}", voxdesk_desk::PROMPT_VERSION),
    };
    super::say_if_observing(&loaded.settings);
    let Some(mut desk) = open_desk(&loaded.settings, record, latch.clone())? else {
        return Ok(Exit::Refused);
    };
    if pictures {
        desk.send_pictures(Some(voxdesk_screen::picture::PictureConfig::default()));
    }
    desk.subscribe(Box::new(Console));
    if !a.quiet || a.narration_wav.is_some() {
        desk.subscribe(Box::new(Narrator::new(
            !a.quiet,
            a.narration_wav,
            Some(latch),
        )));
    }
    let end = drive(
        &mut driver,
        &mut desk,
        Limits {
            step_cap: a.step_cap,
            no_progress: loaded.settings.rails.max_failures,
        },
    );
    println!(
        "tokens: {} in, {} out over {} requests",
        driver.usage.input,
        driver.usage.output,
        driver.steps.len()
    );
    finish(desk, end.status)
}

/// `voxdesk run --provider gemini|openai`: the same loop, driven by a realtime model.
fn realtime(
    a: RunArgs,
    loaded: voxdesk_core::config::Loaded,
    provider: &'static str,
    model: String,
) -> Result<Exit> {
    use voxdesk_realtime::driver::INSTRUCTION_VERSION;
    let spec = match voxdesk_realtime::launch::spec(
        &loaded,
        provider,
        &model,
        a.endpoint.as_deref(),
        |k| std::env::var(k).ok(),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let latch = Arc::new(StopLatch::default());
    stop_on_signals(latch.clone())?;
    let record = RecordSpec {
        root: sessions_dir(),
        task: a.task.clone(),
        provider: provider.to_string(),
        model: model.clone(),
        decomposition: Vec::new(),
        prompt_version: format!("{}+{INSTRUCTION_VERSION}", voxdesk_desk::PROMPT_VERSION),
    };
    super::say_if_observing(&loaded.settings);
    let Some(mut desk) = open_desk(&loaded.settings, record, latch.clone())? else {
        return Ok(Exit::Refused);
    };
    desk.subscribe(Box::new(Console));
    let status = drive_realtime(
        &mut desk,
        &spec,
        Voice {
            speak: !a.quiet,
            wav: a.narration_wav,
            knobs: loaded.settings.voice.clone(),
        },
        &a.task,
        Limits {
            step_cap: a.step_cap,
            no_progress: loaded.settings.rails.max_failures,
        },
    )?;
    finish(desk, status)
}
