//! The daemon's one session at a time: a request checked before anything starts, the desk and its driver on a thread of their own, the stop and the confirmation a client answers (a pending question times out as a no), and the 409 for a second session while one runs.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::hub::{Hub, HubSink};
use voxdesk_agent::registry::{self, RegistryError};
use voxdesk_agent::{drive, Limits};
use voxdesk_core::config::{Loaded, Mode};
use voxdesk_desk::confirm::{Confirm, Question};
use voxdesk_desk::{Desk, DeskError, RecordSpec};
use voxdesk_input::stop::{Cause, StopLatch};
use voxdesk_realtime::launch::{drive_realtime, Voice};
use voxdesk_record::session::Status;
use voxdesk_voice::narrate::Narrator;

/// `POST /observe/sessions`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    pub task: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub mode: Option<String>,
}

/// Why a session did not start, as the API answers it.
#[derive(Debug)]
pub enum StartError {
    /// 400: the request, with the reason.
    Bad(String),
    /// 409: a session runs (here, or another voxdesk holds the screen).
    Busy(String),
    /// 500: the desk could not start (no display, no OCR data, …), with the reason.
    Failed(String),
}

/// A confirmation waiting for a client's answer.
#[derive(Debug, Clone, Serialize)]
pub struct Pending {
    pub question: String,
    pub steps: Vec<String>,
    pub reasons: Vec<String>,
    /// Milliseconds left before it counts as a no.
    pub expires_in_ms: u64,
}

/// The confirmation a client answers: the daemon's implementation of the desk's trait.
pub struct Asker {
    slot: Mutex<Option<(Question, Instant, mpsc::Sender<bool>)>>,
    timeout: Duration,
}

impl Asker {
    pub fn new(timeout: Duration) -> Asker {
        Asker {
            slot: Mutex::new(None),
            timeout,
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<(Question, Instant, mpsc::Sender<bool>)>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answer the pending question; false when none is pending.
    pub fn answer(&self, yes: bool) -> bool {
        match self.slot().take() {
            Some((_, _, tx)) => tx.send(yes).is_ok(),
            None => false,
        }
    }

    pub fn pending(&self) -> Option<Pending> {
        self.slot().as_ref().map(|(q, since, _)| Pending {
            question: q.text(),
            steps: q.steps.clone(),
            reasons: q.reasons.clone(),
            expires_in_ms: self.timeout.saturating_sub(since.elapsed()).as_millis() as u64,
        })
    }
}

struct PanelConfirm(Arc<Asker>);

impl Confirm for PanelConfirm {
    fn ask(&mut self, q: &Question, stop: &StopLatch) -> bool {
        let (tx, rx) = mpsc::channel();
        *self.0.slot() = Some((q.clone(), Instant::now(), tx));
        let deadline = Instant::now() + self.0.timeout;
        let yes = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(yes) => break yes,
                Err(mpsc::RecvTimeoutError::Timeout)
                    if !stop.is_stopped() && Instant::now() < deadline => {}
                Err(_) => break false,
            }
        };
        *self.0.slot() = None;
        yes && !stop.is_stopped()
    }
}

/// The session that runs now.
pub struct Current {
    pub id: String,
    pub latch: Arc<StopLatch>,
    pub asker: Arc<Asker>,
    done: Arc<AtomicBool>,
}

impl Current {
    pub fn running(&self) -> bool {
        !self.done.load(Ordering::SeqCst)
    }
}

pub struct Runner {
    pub loaded: Loaded,
    pub root: PathBuf,
    pub hub: Arc<Hub>,
    pub speak: bool,
    pub confirm_timeout: Duration,
    pub step_cap: usize,
    current: Mutex<Option<Current>>,
    starting: Mutex<()>,
}

/// What was checked before starting: the driver to run.
enum Plan {
    /// Checked here, made again on the session's thread (a driver stays on its thread).
    Local(String, String),
    Realtime(Box<voxdesk_realtime::driver::Spec>),
    Text(Box<voxdesk_text::Spec>),
}

impl Runner {
    pub fn new(loaded: Loaded, root: PathBuf, hub: Arc<Hub>, speak: bool) -> Runner {
        Runner {
            loaded,
            root,
            hub,
            speak,
            confirm_timeout: Duration::from_secs(30),
            step_cap: 25,
            current: Mutex::new(None),
            starting: Mutex::new(()),
        }
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Option<Current>> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The running session's id, stop latch and confirmation (none when idle).
    pub fn with_current<T>(&self, f: impl FnOnce(&Current) -> T) -> Option<T> {
        self.current().as_ref().filter(|c| c.running()).map(f)
    }

    /// Stop the session `id` if it runs now; false when it does not.
    pub fn stop(&self, id: &str) -> bool {
        self.with_current(|c| {
            (c.id == id).then(|| {
                c.latch.trigger(Cause::Requested);
                // A question waiting for an answer is a no at once.
                c.asker.answer(false);
            })
        })
        .flatten()
        .is_some()
    }

    /// Check the request, then start its session on a thread of its own; the new session's id.
    pub fn start(&self, req: StartRequest) -> Result<String, StartError> {
        let need = |v: &Option<String>, what: &str, hint: &str| -> Result<String, StartError> {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| StartError::Bad(format!("`{what}` is required{hint}")))
        };
        let known = registry::PROVIDERS
            .iter()
            .map(|p| p.name)
            .collect::<Vec<_>>()
            .join(", ");
        let task = need(&req.task, "task", "")?;
        let provider = need(
            &req.provider,
            "provider",
            &format!(" (voxdesk picks no vendor for you; one of {known})"),
        )?;
        let model = need(
            &req.model,
            "model",
            " (voxdesk picks no model for you; the local provider's is offline-planner)",
        )?;
        let mut settings = self.loaded.settings.clone();
        if let Some(m) = req.mode.as_deref() {
            settings.rails.mode =
                Mode::parse(m).map_err(|e| StartError::Bad(format!("mode: {e}")))?;
        }
        let bad = |e: RegistryError| StartError::Bad(e.to_string());
        let mut decomposition = Vec::new();
        let text = registry::resolve_text(&provider, Some(&model)).map_err(bad)?;
        let (provider, model, plan) = match registry::resolve_realtime(&provider, Some(&model)) {
            _ if text.is_some() => {
                let (p, m) = text.expect("checked");
                let which = voxdesk_text::Provider::from_name(p)
                    .ok_or_else(|| StartError::Bad(format!("provider {p} has no text driver")))?;
                let mut spec =
                    voxdesk_text::Spec::resolve(which, Some(&m), None, |k| std::env::var(k).ok())
                        .map_err(|e| StartError::Bad(e.to_string()))?;
                spec.max_actions = settings.rails.max_actions;
                crate::cli::text_pictures(&mut spec, &settings);
                (p.to_string(), m, Plan::Text(Box::new(spec)))
            }
            Ok(Some((p, m))) => {
                let spec = voxdesk_realtime::launch::spec(&self.loaded, p, &m, None, |k| {
                    std::env::var(k).ok()
                })
                .map_err(|e| StartError::Bad(e.to_string()))?;
                (p.to_string(), m, Plan::Realtime(Box::new(spec)))
            }
            Ok(None) => {
                let d = registry::driver(&provider, Some(&model), &task).map_err(bad)?;
                let (p, m) = (d.provider().to_string(), d.model().to_string());
                decomposition = d.decomposition();
                (p.clone(), m.clone(), Plan::Local(p, m))
            }
            Err(e) => return Err(bad(e)),
        };
        // One start at a time; the session itself is looked at under its own short lock, so
        // health and the stream are never held up by a desk starting.
        let _one = self.starting.lock().unwrap_or_else(|p| p.into_inner());
        // A session whose record has ended is only letting go of the screen (its last words,
        // the lock): a client that saw it end and starts the next one waits for that.
        let t = Instant::now();
        loop {
            let busy = self.with_current(|c| c.id.clone());
            let Some(id) = busy else { break };
            let ended = voxdesk_record::session::load(&self.root.join(&id))
                .is_ok_and(|r| r.status != Status::Running);
            if !ended || t.elapsed() > Duration::from_secs(15) {
                return Err(StartError::Busy(format!(
                    "session {id} is running: one screen, one session (stop it first)"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let latch = Arc::new(StopLatch::default());
        let asker = Arc::new(Asker::new(self.confirm_timeout));
        let done = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel::<Result<String, StartError>>();
        let prompt_version = match &plan {
            Plan::Local(..) => voxdesk_desk::PROMPT_VERSION.to_string(),
            Plan::Realtime(_) => format!(
                "{}+{}",
                voxdesk_desk::PROMPT_VERSION,
                voxdesk_realtime::driver::INSTRUCTION_VERSION
            ),
            Plan::Text(_) => format!(
                "{}+{}",
                voxdesk_desk::PROMPT_VERSION,
                voxdesk_text::driver::INSTRUCTION_VERSION
            ),
        };
        let record = RecordSpec {
            root: self.root.clone(),
            task: task.clone(),
            provider,
            model,
            decomposition,
            prompt_version,
        };
        let (hub, speak, step_cap) = (self.hub.clone(), self.speak, self.step_cap);
        let max_failures = settings.rails.max_failures;
        let voice_knobs = settings.voice.clone();
        let (l, a, d) = (latch.clone(), asker.clone(), done.clone());
        let spawned = std::thread::Builder::new()
            .name("voxdesk-session".into())
            .spawn(move || {
                let confirm = Box::new(PanelConfirm(a));
                let mut desk = match Desk::new(&settings, Some(record), confirm, l.clone()) {
                    Ok(desk) => desk,
                    Err(e) => {
                        let _ = tx.send(Err(if matches!(e, DeskError::RefusedByLock(_)) {
                            StartError::Busy(e.to_string())
                        } else {
                            StartError::Failed(format!("{e:#}"))
                        }));
                        d.store(true, Ordering::SeqCst);
                        return;
                    }
                };
                let id = desk.record().map(|r| r.id.clone()).unwrap_or_default();
                desk.subscribe(Box::new(HubSink {
                    hub,
                    session: id.clone(),
                }));
                let _ = tx.send(Ok(id));
                let limits = Limits {
                    step_cap,
                    no_progress: max_failures,
                };
                match plan {
                    Plan::Local(p, m) => match registry::driver(&p, Some(&m), &task) {
                        Ok(mut driver) => {
                            if speak {
                                desk.subscribe(Box::new(Narrator::new(true, None, Some(l))));
                            }
                            drive(driver.as_mut(), &mut desk, limits);
                        }
                        Err(e) => {
                            use voxdesk_desk::Host;
                            let _ = desk.end(Status::Failed, &e.to_string());
                        }
                    },
                    Plan::Text(spec) => {
                        if spec.flavour.pictures {
                            desk.send_pictures(Some(
                                voxdesk_screen::picture::PictureConfig::default(),
                            ));
                        }
                        if speak {
                            desk.subscribe(Box::new(Narrator::new(true, None, Some(l.clone()))));
                        }
                        let mut driver = voxdesk_text::TextDriver::new(*spec, l, &task);
                        drive(&mut driver, &mut desk, limits);
                    }
                    Plan::Realtime(spec) => {
                        let voice = Voice {
                            speak,
                            wav: None,
                            knobs: voice_knobs.clone(),
                        };
                        if let Err(e) = drive_realtime(&mut desk, &spec, voice, &task, limits) {
                            use voxdesk_desk::Host;
                            let _ = desk.end(Status::Failed, &format!("{e:#}"));
                        }
                    }
                }
                // The record is final when the desk is gone.
                drop(desk);
                d.store(true, Ordering::SeqCst);
            });
        if let Err(e) = spawned {
            return Err(StartError::Failed(format!("no session thread: {e}")));
        }
        let started = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| Err(StartError::Failed("the desk did not start".into())));
        if let Ok(id) = &started {
            *self.current() = Some(Current {
                id: id.clone(),
                latch,
                asker,
                done,
            });
        }
        started
    }
}
