//! `voxdesk listen`: the microphone streams to a realtime model, its speech plays and both sides are printed; each task the person asks for becomes a desk session of its own, one after another, until the emergency stop or Ctrl-C.

use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::{open_desk, settings, stop_on_signals, Console, Exit, ListenArgs};
use voxdesk_agent::registry;
use voxdesk_agent::{drive, Limits};
use voxdesk_desk::RecordSpec;
use voxdesk_input::stop::StopLatch;
use voxdesk_realtime::driver::{RealtimeDriver, INSTRUCTION_VERSION};
use voxdesk_realtime::session::{Playback, Silent};
use voxdesk_record::events::Event;
use voxdesk_record::session::sessions_dir;
use voxdesk_voice::narrate::{Narrator, Shared};

pub fn listen(a: ListenArgs, config: Option<&std::path::Path>) -> Result<Exit> {
    let loaded = settings(config, a.mode.clone())?;
    let model = voxdesk_realtime::launch::model(&loaded, &a.provider, a.model.as_deref());
    let (provider, model) = match registry::resolve_realtime(&a.provider, model.as_deref()) {
        Ok(Some(pm)) => pm,
        Ok(None) => {
            eprintln!(
                "voxdesk: error: listen needs a realtime provider (gemini or openai); the offline planner reads typed tasks: voxdesk run"
            );
            return Ok(Exit::BadInput);
        }
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    };
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
    // `quit` ends listening (Ctrl-C); each task has its own latch, set by a spoken stop or the
    // emergency stop.
    let quit = Arc::new(StopLatch::default());
    stop_on_signals(quit.clone())?;
    let voice = Arc::new(Mutex::new(Narrator::new(
        !a.quiet,
        None,
        Some(quit.clone()),
    )));
    let speaker: Box<dyn Playback> = match voice.lock().ok().and_then(|n| n.speaker()) {
        Some(s) if !a.quiet => Box::new(s),
        _ => Box::new(Silent::new()),
    };
    let mut latch = Arc::new(StopLatch::default());
    let session = spec.start(latch.clone(), speaker)?;
    let barge = voice.lock().ok().and_then(|n| n.barge());
    let echo = barge
        .as_ref()
        .filter(|_| loaded.settings.voice.echo_cancel)
        .map(|b| b.reference.clone());
    let local = voxdesk_realtime::launch::listener(
        &session,
        &spec.stop_words,
        barge,
        latch.clone(),
        &loaded.settings.voice,
    );
    let tap = local.as_ref().map(|l| l.mic_tap());
    let mic = match voxdesk_realtime::launch::mic(
        &session,
        spec.profile.input_rate,
        tap,
        loaded.settings.voice.mic.as_deref(),
        echo,
    ) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::Failed);
        }
    };
    println!(
        "listening on {} ({} Hz) to {provider} {model}; say a task, Ctrl-C to end",
        mic.device_name, mic.device_rate
    );
    let mut driver = RealtimeDriver::new(&spec, session, latch.clone(), None);
    let mut print = |e: Event| {
        if let Event::Transcript { who, text } = &e {
            println!("{who}: {text}");
        }
        if let Event::Narration { text } = &e {
            println!("🗣  {text}");
            if let Ok(mut v) = voice.lock() {
                v.say(text);
            }
        }
    };
    super::say_if_observing(&loaded.settings);
    let mut exit = Exit::Ok;
    loop {
        if let Err(why) = driver.wait_for_call(&mut print, &quit) {
            println!("{why}");
            break;
        }
        // The person asked for something: a desk session for it.
        let task = if driver.last_heard.is_empty() {
            "(spoken task)".to_string()
        } else {
            driver.last_heard.clone()
        };
        let record = RecordSpec {
            root: sessions_dir(),
            task: task.clone(),
            provider: provider.to_string(),
            model: model.clone(),
            decomposition: Vec::new(),
            prompt_version: format!("{}+{INSTRUCTION_VERSION}", voxdesk_desk::PROMPT_VERSION),
        };
        let Some(mut desk) = open_desk(&loaded.settings, record, latch.clone())? else {
            exit = Exit::Refused;
            break;
        };
        desk.subscribe(Box::new(Console));
        desk.subscribe(Box::new(Shared(voice.clone())));
        desk.send_pictures(voxdesk_realtime::launch::pictures(&spec));
        let end = drive(
            &mut driver,
            &mut desk,
            Limits {
                step_cap: a.step_cap,
                no_progress: loaded.settings.rails.max_failures,
            },
        );
        let emergency = latch.cause() == Some(voxdesk_input::stop::Cause::EmergencyStop);
        if let Some(d) = desk.session_dir() {
            println!("session: {} ({:?})", d.display(), end.status);
        }
        drop(desk);
        if emergency || quit.is_stopped() {
            exit = Exit::Stopped;
            break;
        }
        // The next task starts with a fresh latch: a spoken stop halted only this one.
        latch = Arc::new(StopLatch::default());
        driver.new_task(latch.clone());
        if let Some(l) = &local {
            l.set_latch(latch.clone());
        }
    }
    let dropped = mic
        .stats
        .dropped_frames
        .load(std::sync::atomic::Ordering::Relaxed);
    drop(mic);
    let stats = driver.finish();
    tracing::info!(
        "realtime: {} connection(s), {} resumed; mic frames dropped: {dropped}",
        stats.connections,
        stats.resumed
    );
    Ok(exit)
}
