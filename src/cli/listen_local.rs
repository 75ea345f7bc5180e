//! `voxdesk listen --provider local` (or a text model): spoken commands with no key and no network — the listener recognises them offline against what is on screen, each becomes the offline planner's task on the desk (its own recorded session, one after another); with a text model named, other speech is that model's task; stop words halt at once, and destructive steps are confirmed by a spoken yes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::ListenArgs;
use super::{settings, stop_on_signals, Console, Exit};
use voxdesk_agent::offline::LocalPlanner;
use voxdesk_agent::{drive, Driver, Limits};
use voxdesk_desk::{Desk, DeskError, RecordSpec};
use voxdesk_input::stop::{Cause, HeldWatcher, StopLatch};
use voxdesk_record::session::sessions_dir;
use voxdesk_voice::ask::VoiceConfirm;
use voxdesk_voice::grammar::{Heard, Mode};
use voxdesk_voice::listen::{self, Listener, Note};
use voxdesk_voice::mic::Mic;
use voxdesk_voice::narrate::{Narrator, Shared};

pub fn listen_local(a: ListenArgs, config: Option<&std::path::Path>) -> Result<Exit> {
    let loaded = settings(config, a.mode.clone())?;
    let s = &loaded.settings;
    let quit = Arc::new(StopLatch::default());
    stop_on_signals(quit.clone())?;
    let voice = Arc::new(Mutex::new(Narrator::new(
        !a.quiet,
        a.narration_wav.clone(),
        Some(quit.clone()),
    )));
    let barge = voice.lock().ok().and_then(|v| v.barge());
    let echo = barge
        .as_ref()
        .filter(|_| s.voice.echo_cancel)
        .map(|b| b.reference.clone());
    // A text planner for what is no command (`--provider openai-compatible|anthropic|…`).
    let planner = match planner_of(&a, s) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let mut spec =
        listen::Spec::new(s.realtime.stop_words.clone(), true, Mode::Commands).tuned(&s.voice);
    if s.voice.learned {
        spec.ears = voxdesk_onnx::models_dir(s.models_dir.as_deref());
    }
    if planner.is_some() {
        if spec.ears.is_none() {
            eprintln!("voxdesk: error: a spoken task for a text model needs the learned ears (voice.learned = true, and `cargo xtask models`)");
            return Ok(Exit::BadInput);
        }
        spec.free_speech = true;
    }
    let _ptt = match &a.push_to_talk {
        Some(c) => {
            let combo = match voxdesk_core::action::parse_combo(c) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("voxdesk: error: --push-to-talk {c:?}: {e}");
                    return Ok(Exit::BadInput);
                }
            };
            match HeldWatcher::start(&combo) {
                Ok(w) => {
                    spec.push_to_talk = Some(w.held.clone());
                    Some(w)
                }
                Err(e) => {
                    eprintln!("voxdesk: error: {e}");
                    return Ok(Exit::Failed);
                }
            }
        }
        None => None,
    };
    let ptt = a.push_to_talk.clone();
    let mut latch = Arc::new(StopLatch::default());
    // Speaking over voxdesk during a text model's task abandons its request in flight.
    let spoke_over = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = spoke_over.clone();
    let on_interrupt: Box<dyn FnMut() + Send> =
        Box::new(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    let listener = match Listener::start(spec, barge, latch.clone(), Some(on_interrupt)) {
        Ok(l) => Arc::new(l),
        Err(e) => {
            eprintln!("voxdesk: error: offline recognition cannot start: {e}");
            return Ok(Exit::Failed);
        }
    };
    let mic = match Mic::start_cleaned(s.voice.mic.as_deref(), vec![listener.mic_tap()], echo) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::Failed);
        }
    };
    let confirm = VoiceConfirm::new(listener.clone(), voice.clone());
    super::say_if_observing(s);
    let mut desk = match Desk::new(s, None, Box::new(confirm), latch.clone()) {
        Ok(d) => d,
        Err(e @ DeskError::RefusedByLock(_)) => {
            eprintln!("voxdesk: {e}");
            return Ok(Exit::Refused);
        }
        Err(e) => return Err(e.into()),
    };
    let say = |text: &str| {
        println!("🗣  {text}");
        if let Ok(mut v) = voice.lock() {
            v.say(text);
        }
    };
    let labels = desk.labels_now().unwrap_or_default();
    let n = labels.len();
    listener.set_labels(labels);
    println!(
        "listening on {} (offline, {n} labels on screen{}); say a command such as \"click …\", \"stop\" to halt, \"go to sleep\" to pause, Ctrl-C to end",
        mic.device_name,
        ptt.as_deref()
            .map(|k| format!(", while {k} is held"))
            .unwrap_or_default()
    );
    say("Listening.");
    let mut exit = Exit::Ok;
    while !quit.is_stopped() {
        let Some(note) = listener.next(Duration::from_millis(100)) else {
            continue;
        };
        match note {
            Note::Started => {
                // The grammar follows the screen: read it while the person speaks.
                if let Ok(l) = desk.labels_now() {
                    listener.set_labels(l);
                }
            }
            Note::Ask { question, .. } => {
                println!("👂 {question}");
                say(&question);
            }
            Note::Task { text, .. } => {
                let Some(spec) = &planner else { continue };
                println!("👂 \"{text}\"");
                println!("▶  {text} ({} {})", spec.provider.name(), spec.model);
                if latch.is_stopped() {
                    latch = Arc::new(StopLatch::default());
                    listener.set_latch(latch.clone());
                }
                spoke_over.store(false, std::sync::atomic::Ordering::SeqCst);
                let mut driver = voxdesk_text::TextDriver::new(spec.clone(), latch.clone(), &text)
                    .cancelled_by(spoke_over.clone());
                let pictures = spec.flavour.pictures;
                if let Err(e) = run_with(
                    &mut desk,
                    &mut driver,
                    &text,
                    &latch,
                    &voice,
                    a.step_cap,
                    s,
                    pictures,
                ) {
                    eprintln!("voxdesk: error: {e}");
                    exit = Exit::Failed;
                    break;
                }
                println!(
                    "tokens: {} in, {} out over {} requests",
                    driver.usage.input,
                    driver.usage.output,
                    driver.steps.len()
                );
                if after_task(&latch, &listener, &mut desk, &say) {
                    exit = Exit::Stopped;
                    break;
                }
            }
            Note::NotUnderstood { text, per_frame } => {
                println!("👂 {text:?} ({per_frame:.0}/frame): not understood, nothing done");
                say("Sorry, I did not understand that.");
            }
            Note::Listening(on) => {
                println!("🎙  {}", if on { "listening" } else { "not listening" })
            }
            Note::Heard { text, meaning, .. } => {
                println!("👂 \"{text}\"");
                match meaning {
                    Heard::Command(task) => {
                        println!("▶  {task}");
                        if latch.is_stopped() {
                            latch = Arc::new(StopLatch::default());
                            listener.set_latch(latch.clone());
                        }
                        match run_one(&mut desk, &task, &latch, &voice, a.step_cap, s) {
                            Ok(()) => {}
                            Err(e) => {
                                eprintln!("voxdesk: error: {e}");
                                exit = Exit::Failed;
                                break;
                            }
                        }
                        if after_task(&latch, &listener, &mut desk, &say) {
                            exit = Exit::Stopped;
                            break;
                        }
                    }
                    Heard::Stop(_) => {
                        say("Stopped.");
                    }
                    Heard::Sleep => say("Sleeping. Say wake up when you need me."),
                    Heard::Wake => say("I'm listening."),
                    Heard::Yes | Heard::No => println!("(no question is waiting)"),
                    Heard::Nothing => {}
                }
            }
            Note::Paused | Note::Resumed | Note::Interrupted { .. } => {
                tracing::debug!("listener: {note:?}")
            }
        }
    }
    if quit.is_stopped() && exit == Exit::Ok {
        exit = Exit::Stopped;
    }
    drop(mic);
    let st = &listener.stats;
    tracing::info!(
        "listener: {} utterances, {} pauses, {} false alarms, {} interruptions",
        st.utterances.load(std::sync::atomic::Ordering::Relaxed),
        st.pauses.load(std::sync::atomic::Ordering::Relaxed),
        st.false_alarms.load(std::sync::atomic::Ordering::Relaxed),
        st.interruptions.load(std::sync::atomic::Ordering::Relaxed)
    );
    Ok(exit)
}

/// After a task: true when the emergency stop (or the display's loss) ended it and listening
/// ends too; a spoken stop drops what was heard before it and is said; the grammar follows the
/// screen.
fn after_task(latch: &StopLatch, listener: &Listener, desk: &mut Desk, say: &dyn Fn(&str)) -> bool {
    match latch.cause() {
        Some(Cause::EmergencyStop) | Some(Cause::DisplayLost) => return true,
        Some(Cause::Requested) => {
            // Commands heard before the stop are dropped with it.
            drain_until_stop(listener);
            say("Stopped.");
        }
        _ => {}
    }
    if let Ok(l) = desk.labels_now() {
        listener.set_labels(l);
    }
    false
}

/// The text planner `--provider` names, if it names one (`local`: none).
fn planner_of(
    a: &ListenArgs,
    s: &voxdesk_core::config::Settings,
) -> Result<Option<voxdesk_text::Spec>, String> {
    if a.provider == "local" {
        return Ok(None);
    }
    let (name, model) = match voxdesk_agent::registry::resolve_text(&a.provider, a.model.as_deref())
    {
        Ok(Some(pm)) => pm,
        Ok(None) => return Err(format!("{} is no text provider", a.provider)),
        Err(e) => return Err(e.to_string()),
    };
    let p = voxdesk_text::Provider::from_name(name)
        .ok_or_else(|| format!("provider {name} has no text driver"))?;
    let mut spec = voxdesk_text::Spec::resolve(p, Some(&model), a.endpoint.as_deref(), |k| {
        std::env::var(k).ok()
    })
    .map_err(|e| e.to_string())?;
    spec.max_actions = s.rails.max_actions;
    super::text_pictures(&mut spec, s);
    Ok(Some(spec))
}

/// One spoken command as a recorded task of the offline planner.
fn run_one(
    desk: &mut Desk,
    task: &str,
    latch: &Arc<StopLatch>,
    voice: &Arc<Mutex<Narrator>>,
    step_cap: usize,
    s: &voxdesk_core::config::Settings,
) -> Result<()> {
    let mut planner = match LocalPlanner::new(task) {
        Ok(p) => p,
        Err(e) => {
            println!("voxdesk: {e}");
            return Ok(());
        }
    };
    run_with(desk, &mut planner, task, latch, voice, step_cap, s, false)
}

/// One task, driven by `planner` on the desk as a recorded session of its own (with the
/// screen's picture in each observation when `pictures`).
#[allow(clippy::too_many_arguments)]
fn run_with(
    desk: &mut Desk,
    planner: &mut dyn Driver,
    task: &str,
    latch: &Arc<StopLatch>,
    voice: &Arc<Mutex<Narrator>>,
    step_cap: usize,
    s: &voxdesk_core::config::Settings,
    pictures: bool,
) -> Result<()> {
    desk.begin(
        RecordSpec {
            root: sessions_dir(),
            task: task.to_string(),
            provider: planner.provider().to_string(),
            model: planner.model().to_string(),
            decomposition: planner.decomposition(),
            prompt_version: if planner.provider() == "local" {
                voxdesk_desk::PROMPT_VERSION.to_string()
            } else {
                format!(
                    "{}+{}",
                    voxdesk_desk::PROMPT_VERSION,
                    voxdesk_text::driver::INSTRUCTION_VERSION
                )
            },
        },
        latch.clone(),
    )?;
    // The model's picture of each screen, only for a text model that is said to see it.
    desk.send_pictures(pictures.then(voxdesk_screen::picture::PictureConfig::default));
    desk.subscribe(Box::new(Console));
    desk.subscribe(Box::new(Shared(voice.clone())));
    let end = drive(
        planner,
        desk,
        Limits {
            step_cap,
            no_progress: s.rails.max_failures,
        },
    );
    if let Some(d) = desk.session_dir() {
        println!("session: {} ({:?})", d.display(), end.status);
    }
    Ok(())
}

/// Drop what was heard up to and including the stop word.
fn drain_until_stop(listener: &Listener) {
    while let Some(n) = listener.next(Duration::ZERO) {
        if let Note::Heard {
            meaning: Heard::Stop(_),
            ..
        } = n
        {
            return;
        }
    }
}
