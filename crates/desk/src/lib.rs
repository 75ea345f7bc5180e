//! The desk: the one tool host every driver calls (`observe`, `act`, `done`), on two device handles (`eyes`: capture and perception; `hands`: the actuator, the emergency stop and the GUI lock), with the rails, the confirmation and the session record.
//!
//! `act` (`act.rs`, a method per stage) is: stale check → rails → confirmation → actuate →
//! settle → verify → record, and its
//! result says what happened to each action and what the screen showed afterwards. Every failure
//! is a [`ToolResult`] that says why; nothing here panics or returns early past the record.
//! The desk emits events; it never prints or speaks.

mod act;
pub mod confirm;
pub mod eyes;
pub mod handoff;
pub mod hands;
mod lines;
pub mod observation;
pub mod packet;
pub mod pictures;
pub mod tool;
pub mod verify;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use voxdesk_core::action::{parse_combo, Action, Batch, Expect};
use voxdesk_core::config::{Mode, Settings};
use voxdesk_core::geometry::{Mapping, Rect};
use voxdesk_core::keys::Keymap;
use voxdesk_input::actuator::Outcome;
use voxdesk_input::stop::{Cause, StopLatch};
use voxdesk_perception::{Perception, Target};
use voxdesk_record::events::{Bus, Event, JsonlSink, Sink, State};
use voxdesk_record::redact::Secrets;
use voxdesk_record::session::{PhaseTimes, RailsVerdict, Recorder, Status, StepRecord};
use voxdesk_safety::confirm::ask as ask_yes;
use voxdesk_safety::rails::{self, Checked, Decision, Refusal, Screen, Step};
use voxdesk_screen as screen;
use voxdesk_screen::capture::FocusedWindow;
use voxdesk_screen::desktop::{self, Shown};
use voxdesk_screen::frame::Frame;
use voxdesk_screen::picture::{self, PictureConfig};

use confirm::{Confirm, Question};
use eyes::{Eyes, ScreenEyes};
use hands::{DeviceHands, Hands};
use lines::Lines;
use packet::PastStep;
use tool::{
    ActResult, ActStatus, ActionOutcome, ErrorKind, ObservationView, Route, ToolCall, ToolResult,
};
use verify::{overlay, repeatable, typed_at, verify, Evidence, Verdict};

/// The rails' rule for text that would go into a password field (`rails::type_text`).
const PASSWORD_RULE: &str = "password-field";

/// The version of the tool contract recorded in every session.
pub const PROMPT_VERSION: &str = "tools.v4+packet.v4";
/// Settling: look every this often until two frames in a row are identical…
const SETTLE_EVERY: Duration = Duration::from_millis(60);
/// …but never longer than this (an animation never settles).
const SETTLE_AT_MOST: Duration = Duration::from_millis(2500);
/// A batch that changed the screen but was not confirmed is looked at once more after this
/// pause (an app still drawing, a terminal still echoing) before it is called unconfirmed.
const RECHECK_AFTER: Duration = Duration::from_millis(300);
/// Text not seen even then, nor read where the screen changed, is looked for a little longer,
/// this many times this far apart (the last resort, since it waits): a
/// blinking caret glued to the last letter ("a.txt|" in a GTK field) hides a short word from
/// OCR while it is drawn, and a cycle is 1.2 s (GTK) or 1 s (Chromium).
const BLINK_LOOKS: u32 = 4;
const BLINK_EVERY: Duration = Duration::from_millis(250);
/// A batch after which nothing changed is given this long to show an effect (a busy machine,
/// a shell still running the command) before it is called "no change".
const NO_CHANGE_WAIT: Duration = Duration::from_millis(1200);

/// What the loop's host does besides the tools: the agent drives any `Host`, the real desk or a
/// fake one in tests.
pub trait Host {
    /// Run one tool call.
    fn call(&mut self, call: &ToolCall) -> ToolResult;
    /// Press Escape behind the rails (the "something else opened" recovery); whether it ran.
    fn escape(&mut self) -> bool;
    /// Record a step the driver could not plan on this screen.
    fn not_planned(&mut self, why: &str);
    /// Emit an event from the driver's side (narration, the plan in words).
    fn emit(&mut self, e: Event);
    /// The one place states change.
    fn go(&mut self, to: State, why: &str);
    /// Why the session was stopped, once the latch is set.
    fn stopped(&mut self) -> Option<Cause>;
    /// End the session with a true final status.
    fn end(&mut self, status: Status, summary: &str) -> ToolResult;
    /// A record or sink failure since the last call: the session cannot go on unrecorded.
    fn broken(&mut self) -> Option<String>;
}

/// Where a session is recorded (a desk without one records nothing: `voxdesk act`).
pub struct RecordSpec {
    pub root: PathBuf,
    pub task: String,
    pub provider: String,
    pub model: String,
    pub decomposition: Vec<String>,
    /// The prompts and tool schema the driver was given (`PROMPT_VERSION`, plus a realtime
    /// model's system instruction).
    pub prompt_version: String,
}

/// Why a desk could not be opened (or a session begun on it).
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// The GUI lock refused: another voxdesk holds the screen. A refusal (exit 3), not a crash.
    #[error("refused by rule `gui-lock`: {0}")]
    RefusedByLock(String),
    #[error("{0}: refusing to run without an emergency stop")]
    NoStop(voxdesk_input::stop::StopError),
    #[error(transparent)]
    Actuator(#[from] voxdesk_input::actuator::ActuatorError),
    #[error(transparent)]
    Capture(#[from] voxdesk_screen::capture::CaptureError),
    #[error(transparent)]
    Perception(#[from] voxdesk_perception::engine::EngineError),
    #[error(transparent)]
    Record(#[from] voxdesk_record::session::SessionError),
    #[error("session records at {path}: {source}")]
    Events {
        path: String,
        source: std::io::Error,
    },
}

/// The devices a desk runs on, and what it reads once from the display.
pub(crate) struct Devices {
    pub eyes: Box<dyn Eyes>,
    pub hands: Box<dyn Hands>,
    pub lines: Lines,
    pub keymap: Keymap,
}

/// A batch on its way through `act`: what it was planned on and its result so far.
struct Pending {
    obs: Observation,
    batch: Batch,
    plan: String,
    result: ActResult,
    times: PhaseTimes,
    /// Where its clicks land, in model-picture pixels, with the index of the action each is.
    clicks: Vec<(usize, [f64; 2])>,
    /// Its step number in the record, were it recorded now.
    index: usize,
}

/// One look at the screen.
struct Observation {
    id: String,
    /// Shared with the step-picture writers, which would otherwise copy 8 MB each.
    frame: Arc<Frame>,
    perception: Perception,
    app: Option<String>,
    title: Option<String>,
    /// The focused window, as a key for what the rails follow per window (a terminal's line).
    window: Option<String>,
    /// The focused window's client area (root = logical pixels), when known.
    window_rect: Option<Rect>,
    /// Model picture ↔ capture ↔ logical for this frame.
    mapping: Mapping,
    /// Capture and perception time, for an observation made by `observe` (not by settling).
    timing: Option<(f64, f64)>,
    /// The windows shown (`None` when they could not be listed).
    windows: Option<Vec<Shown>>,
}

impl Observation {
    fn view(&self) -> ObservationView {
        let m = &self.mapping;
        ObservationView {
            id: self.id.clone(),
            app: self.app.clone(),
            title: self.title.clone(),
            picture: (m.image_w, m.image_h),
            targets: self
                .perception
                .targets
                .iter()
                .map(|t| Target {
                    rect: m.capture_rect_to_image(&t.rect),
                    ..t.clone()
                })
                .collect(),
            capture_targets: self.perception.targets.clone(),
            jpeg: None,
            route: self.route(),
        }
    }

    /// How the targets were found: the tree (what it gave) or OCR alone (why).
    fn route(&self) -> Route {
        let p = &self.perception;
        match &p.tree {
            Some(t) => {
                let ax = p.targets.iter().filter(|t| t.ax.is_some()).count();
                let both = p.targets.iter().filter(|t| t.source() == "ax+ocr").count();
                Route {
                    tree: true,
                    why: format!(
                        "{} ({}): {ax} controls from the accessibility tree ({both} also read on screen), {} labels from OCR alone{}",
                        self.app.as_deref().unwrap_or("the focused window"),
                        if t.toolkit.is_empty() { "toolkit unknown" } else { &t.toolkit },
                        p.targets.len() - ax,
                        if t.partial { "; the tree was cut at its budget: some controls may be missing" } else { "" },
                    ),
                    partial: t.partial,
                }
            }
            None => Route {
                tree: false,
                why: p.no_tree.clone().unwrap_or_default(),
                partial: false,
            },
        }
    }
}

pub struct Desk {
    settings: Settings,
    eyes: Box<dyn Eyes>,
    hands: Box<dyn Hands>,
    /// Every text this session typed (what "shows" does not count as the app's own).
    typed: Vec<String>,
    /// Where that typing was read once typed (the same text there is still the typing).
    typed_at: Vec<Rect>,
    /// Where the keyboard went after the last batch that ran whole, for the password rail.
    focus: Option<rails::Focus>,
    /// Each terminal window's command line as voxdesk's keys left it, for the terminal rails.
    lines: Lines,
    /// The keyboard layout the actuator's keys are judged with.
    keymap: Keymap,
    /// The actions of the last batch, when it ran, was not confirmed and may not simply run
    /// again; cleared by a look (`observe`).
    unsure: Option<Vec<Action>>,
    latch: Arc<StopLatch>,
    confirm: Box<dyn Confirm>,
    bus: Bus,
    recorder: Option<Recorder>,
    latest: Option<Observation>,
    id_prefix: String,
    seq: u32,
    state: State,
    task: String,
    decomposition: Vec<String>,
    history: Vec<PastStep>,
    /// The plan in words of the batch about to run (from the driver's `Plan` event).
    plan: String,
    /// When the previous call returned: the time until the next act is the driver's.
    returned: Instant,
    /// Started with the first step picture.
    pictures: Option<pictures::Pictures>,
    ended: Option<(Status, String)>,
    stop_told: bool,
    failure: Option<String>,
    /// Observations carry the annotated JPEG (for a model measured to use pictures).
    model_pictures: Option<PictureConfig>,
    /// Text the rails refused as a password: masked in every event and record (`emit_event`,
    /// `record_step`).
    secrets: Secrets,
    /// The driver's plan for the next act and what it says with it, held until the rails have
    /// judged that batch (`Host::emit`, `judge_secrets`).
    held: Option<Vec<Event>>,
    /// The model's tokens since the last recorded step (its planning of the next one).
    step_tokens: Option<voxdesk_record::session::Tokens>,
}

impl Desk {
    /// Take the GUI lock (not in observe mode), start the emergency stop, the actuator, the
    /// capturer and the OCR engines, and create the session record when there is one.
    /// `latch` is the session's stop latch: the caller may hand it to whoever else can stop the
    /// session (a signal handler) before the desk exists.
    pub fn new(
        settings: &Settings,
        record: Option<RecordSpec>,
        confirm: Box<dyn Confirm>,
        latch: Arc<StopLatch>,
    ) -> Result<Desk, DeskError> {
        let display = std::env::var("DISPLAY").unwrap_or_default();
        let hands = DeviceHands::open(settings, &display, latch.clone())?;
        let eyes = ScreenEyes::open(settings)?;
        Desk::with_devices(
            settings,
            record,
            confirm,
            latch,
            Devices {
                eyes: Box::new(eyes),
                hands: Box::new(hands),
                lines: Lines::load(&display),
                // Without the server's table, the layout the rails assume is US.
                keymap: desktop::keymap().unwrap_or_else(|_| Keymap::us()),
            },
        )
    }

    /// A desk on the given devices (the real ones from `new`; a fake screen and fake hands in
    /// the act pipeline's tests).
    pub(crate) fn with_devices(
        settings: &Settings,
        record: Option<RecordSpec>,
        confirm: Box<dyn Confirm>,
        latch: Arc<StopLatch>,
        devices: Devices,
    ) -> Result<Desk, DeskError> {
        let mut bus = Bus::default();
        let (recorder, task, decomposition) = open_record(settings, record, &mut bus)?;
        let id_prefix = recorder
            .as_ref()
            .map(|r| r.record.id.clone())
            .unwrap_or_else(|| format!("obs-{:x}", std::process::id()));
        Ok(Desk {
            settings: settings.clone(),
            eyes: devices.eyes,
            hands: devices.hands,
            typed: Vec::new(),
            typed_at: Vec::new(),
            focus: None,
            lines: devices.lines,
            keymap: devices.keymap,
            unsure: None,
            latch,
            confirm,
            bus,
            recorder,
            latest: None,
            id_prefix,
            seq: 0,
            state: State::Observe,
            task,
            decomposition,
            history: Vec::new(),
            plan: String::new(),
            returned: Instant::now(),
            pictures: None,
            ended: None,
            stop_told: false,
            failure: None,
            model_pictures: None,
            secrets: Secrets::default(),
            held: None,
            step_tokens: None,
        })
    }

    /// Start the next session on this desk (`voxdesk listen`: one per spoken task): a new
    /// record and stop latch, the session's own state cleared; the capturer, the OCR engines
    /// with their cache, the lock and the window list stay, so its first look is quick. The
    /// caller subscribes its sinks again.
    pub fn begin(&mut self, record: RecordSpec, latch: Arc<StopLatch>) -> Result<(), DeskError> {
        if self.ended.is_none() && self.recorder.is_some() {
            let _ = self.end(Status::Failed, "the session ended without finishing");
        }
        if !Arc::ptr_eq(&latch, &self.latch) {
            self.hands.rebind(latch.clone())?;
            self.latch = latch;
        }
        let mut bus = Bus::default();
        let (recorder, task, decomposition) = open_record(&self.settings, Some(record), &mut bus)?;
        if let Some(r) = &recorder {
            self.id_prefix = r.record.id.clone();
        }
        self.bus = bus;
        self.recorder = recorder;
        self.task = task;
        self.decomposition = decomposition;
        self.typed.clear();
        self.typed_at.clear();
        self.focus = None;
        self.unsure = None;
        self.state = State::Observe;
        self.history.clear();
        self.plan.clear();
        self.returned = Instant::now();
        self.pictures = None;
        self.ended = None;
        self.stop_told = false;
        self.failure = None;
        self.secrets = Secrets::default();
        self.held = None;
        Ok(())
    }

    /// The labels on screen now, for a grammar of what can be said: one look, recorded nowhere.
    pub fn labels_now(&mut self) -> Result<Vec<String>, String> {
        let o = self.look(self.latest.is_none())?;
        let labels = o
            .perception
            .targets
            .iter()
            .map(|t| t.text.clone())
            .collect();
        self.latest = Some(o);
        Ok(labels)
    }

    /// Another sink for the session's events (the console, the voice, the daemon's stream).
    pub fn subscribe(&mut self, sink: Box<dyn Sink>) {
        self.bus.subscribe(sink);
    }

    /// The stop latch, for whoever else may stop the session (a signal handler, a client).
    pub fn latch(&self) -> Arc<StopLatch> {
        self.latch.clone()
    }

    pub fn session_dir(&self) -> Option<PathBuf> {
        self.recorder.as_ref().map(|r| r.dir.clone())
    }

    pub fn record(&self) -> Option<&voxdesk_record::session::SessionRecord> {
        self.recorder.as_ref().map(|r| &r.record)
    }

    /// Give every observation the picture the model sees (≤ the config's size, JPEG at its
    /// quality), or none (the default: a picture is sent only where it was measured to help).
    pub fn send_pictures(&mut self, cfg: Option<PictureConfig>) {
        self.model_pictures = cfg;
    }

    /// An observation as the driver sees it, with its picture when pictures are asked for.
    fn view_of(&self, obs: &Observation) -> ObservationView {
        let mut v = obs.view();
        if let Some(cfg) = self.model_pictures {
            match picture::model_picture(&obs.frame, &obs.perception.targets, cfg) {
                Ok(p) => v.jpeg = Some(Arc::new(p.jpeg)),
                Err(e) => tracing::warn!("no picture for the model: {e}"),
            }
        }
        v
    }

    /// Take `targets` (another process's observation, `voxdesk look`'s) as the last one seen,
    /// so the next observation keeps their ids for the same controls.
    pub fn adopt(&mut self, targets: Vec<voxdesk_perception::Target>) {
        self.eyes.adopt(targets);
    }

    pub fn mode(&self) -> Mode {
        self.settings.rails.mode
    }

    /// The one door events leave the desk by: the driver's held words first, then `e`, each
    /// with the session's secrets masked.
    fn emit_event(&mut self, e: Event) {
        for h in self.held.take().into_iter().flatten() {
            self.bus.emit(self.secrets.mask_event(h));
        }
        self.bus.emit(self.secrets.mask_event(e));
        if let Some(why) = self.bus.take_failure() {
            self.failure.get_or_insert(why);
        }
    }

    /// Text refused as a password is never recorded, streamed, spoken or shown. It becomes a
    /// secret here, at the start of `act`, before anything about its batch is emitted or
    /// written: the driver's plan and the words said with it were held since it emitted them
    /// (`Host::emit`; `agent::drive` emits the plan first), and every event and step record
    /// leaves the desk masked (`emit_event`, `record_step`). The rails are pure, so asking them
    /// here first changes nothing of what `approved` then decides; a text is a secret when they
    /// refuse its batch by the password rule (the field that has the keyboard is a password
    /// field, or may be one). A secret learnt late is also taken out of the record so far.
    fn judge_secrets(&mut self, batch: &Batch, obs: &Observation) {
        let typed: Vec<&str> = batch
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Type { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        if typed.is_empty() {
            return;
        }
        let named = batch
            .observation_id
            .clone()
            .unwrap_or_else(|| obs.id.clone());
        let screen = Screen {
            observation_id: &named,
            latest_id: &obs.id,
            targets: &obs.perception.targets,
            mapping: obs.mapping,
            app: obs.app.as_deref(),
            focus: self
                .focus
                .as_ref()
                .filter(|f| f.carried(&obs.perception.targets)),
            keymap: &self.keymap,
            line: obs.window.as_ref().map(|w| self.lines.get(w)),
            window: obs.window_rect,
            popups: &popups_of(obs),
            dialogs: obs
                .perception
                .tree
                .as_ref()
                .map(|t| &t.dialogs[..])
                .unwrap_or(&[]),
            terminal: tree_terminal(obs),
        };
        let refused = rails::check(
            batch,
            &screen,
            &self.settings.rails,
            &self.settings.stop.combo,
        );
        if !matches!(&refused, Err(r) if r.rule == PASSWORD_RULE) {
            return;
        }
        let mut learnt = false;
        for t in typed {
            learnt |= self.secrets.add(t);
        }
        if learnt {
            if let Some(r) = self.recorder.as_mut() {
                self.secrets.mask_record(&mut r.record);
            }
        }
    }

    fn record_failed(&mut self, e: impl std::fmt::Display) {
        self.failure.get_or_insert_with(|| e.to_string());
    }

    /// `o` with the windows shown now (`None` when they cannot be listed).
    fn shown(&self, mut o: Observation) -> Observation {
        if o.windows.is_none() {
            o.windows = self.eyes.windows();
        }
        o
    }

    /// Is the focused app of `obs` a terminal (the rails' list)?
    fn in_terminal(&self, obs: &Observation) -> bool {
        tree_terminal(obs)
            || obs
                .app
                .as_deref()
                .is_some_and(|app| self.settings.rails.is_terminal(app))
    }

    /// The title `obs`'s window has now: a page retitles its window when it finished loading,
    /// after the screen settled, and the act result must not report the old one. Only the same
    /// window's (a window that took focus since is the next observation's business).
    fn current_title(&mut self, obs: &mut Observation) {
        if let Some(w) = self.eyes.focused() {
            let key = window_key(&w);
            if key.is_some() && key == obs.window {
                obs.title = Some(w.title).filter(|t| !t.is_empty());
            }
        }
    }

    /// Capture and perceive one frame (`full`: read every label, not only changed tiles).
    fn look(&mut self, full: bool) -> Result<Observation, String> {
        let t = Instant::now();
        let frame = self.eyes.capture().map_err(|e| e.to_string())?;
        let capture_ms = ms_since(t);
        let focused = self.eyes.focused();
        let perception = self
            .eyes
            .perceive(&frame, full, focused.as_ref())
            .map_err(|e| e.to_string())?;
        self.seq += 1;
        let (app, title, window, window_rect) = match focused {
            Some(w) => (
                Some(w.app.clone()),
                Some(w.title.clone()).filter(|t| !t.is_empty()),
                window_key(&w),
                w.rect
                    .map(|(x, y, ww, hh)| Rect::new(x, y, ww as i32, hh as i32)),
            ),
            None => (None, None, None, None),
        };
        let mapping = picture::picture_mapping(&frame, PictureConfig::default())
            .map_err(|e| e.to_string())?;
        Ok(Observation {
            id: format!("{}-{}", self.id_prefix, self.seq),
            timing: Some((capture_ms, perception.timings.total_ms)),
            frame: Arc::new(frame),
            perception,
            app,
            title,
            window,
            window_rect,
            mapping,
            // Listed only for a screen someone plans or judges on (see `shown`), not for
            // every frame of settling.
            windows: None,
        })
    }

    /// Look until two consecutive frames are identical (bounded): the last one, the time it
    /// took, and whether anything changed meanwhile.
    fn settle(&mut self) -> Result<(Observation, f64, bool), String> {
        let t = Instant::now();
        let mut changed = false;
        loop {
            std::thread::sleep(SETTLE_EVERY);
            let mut o = self.look(false)?;
            o.timing = None;
            let still = o.perception.unchanged();
            changed |= !still;
            if still || t.elapsed() > SETTLE_AT_MOST {
                let o = self.shown(o);
                return Ok((o, ms_since(t), changed));
            }
        }
    }

    /// Look until the screen changes (then until it settles), or `at_most` passes with no
    /// change: the last frame, the time it took, and whether anything changed.
    fn await_change(&mut self, at_most: Duration) -> Result<(Observation, f64, bool), String> {
        let t = Instant::now();
        loop {
            std::thread::sleep(SETTLE_EVERY);
            let mut o = self.look(false)?;
            o.timing = None;
            if !o.perception.unchanged() {
                let (o, _, _) = self.settle()?;
                return Ok((o, ms_since(t), true));
            }
            if t.elapsed() > at_most {
                let o = self.shown(o);
                return Ok((o, ms_since(t), false));
            }
        }
    }

    fn observe(&mut self) -> ToolResult {
        self.go(State::Observe, "observe");
        // The driver looks before it decides: it may do the unconfirmed batch again.
        self.unsure = None;
        let first = self.latest.is_none();
        let obs = match self.look(first) {
            Ok(o) if first || o.perception.unchanged() => o,
            // The screen is moving: wait for it to settle before anyone plans on it.
            Ok(_) => match self.settle() {
                Ok((o, _, _)) => o,
                Err(e) => return self.capture_error(e),
            },
            Err(e) => return self.capture_error(e),
        };
        let obs = self.shown(obs);
        let view = self.view_of(&obs);
        self.observed(&view);
        self.latest = Some(obs);
        ToolResult::Observation(view)
    }

    /// Emit a new observation with the perception packet a model planner reads for it.
    fn observed(&mut self, view: &ObservationView) {
        let packet = packet::build(&packet::PacketInput {
            task: &self.task,
            decomposition: &self.decomposition,
            history: &self.history,
            observation_id: &view.id,
            app: view.app.as_deref(),
            title: view.title.as_deref(),
            picture: view.picture,
            targets: &view.targets,
        });
        self.emit_event(Event::Observed {
            observation_id: view.id.clone(),
            app: view.app.clone(),
            targets: view.targets.len(),
            packet_version: packet::PACKET_VERSION.into(),
            packet,
        });
    }

    fn capture_error(&mut self, e: String) -> ToolResult {
        ToolResult::error(
            ErrorKind::Capture,
            format!("could not look at the screen: {e}"),
        )
    }
}

impl Host for Desk {
    fn call(&mut self, call: &ToolCall) -> ToolResult {
        if let Some((status, summary)) = &self.ended {
            // A plan held for an act that will not run is not told.
            self.held = None;
            return ToolResult::Ended {
                status: *status,
                summary: summary.clone(),
            };
        }
        let r = match call {
            ToolCall::Observe => self.observe(),
            ToolCall::Act(b) => self.act(b),
            ToolCall::Done { success, summary } => {
                let status = if *success {
                    Status::Done
                } else {
                    Status::Failed
                };
                self.end(status, summary)
            }
        };
        self.returned = Instant::now();
        r
    }

    fn escape(&mut self) -> bool {
        let Some(obs) = self.latest.take() else {
            return false;
        };
        // In a terminal Escape is readline's Meta prefix: it would change the next key typed.
        if self.in_terminal(&obs) {
            self.emit_event(Event::Recovery {
                class: "unexpected window or menu".into(),
                action: "none: Escape is never pressed in a terminal".into(),
                ran: false,
            });
            self.latest = Some(obs);
            return false;
        }
        let batch = Batch {
            observation_id: Some(obs.id.clone()),
            actions: vec![Action::Key {
                combo: parse_combo("escape").expect("a valid combo"),
            }],
            expect: Expect::default(),
        };
        let screen = Screen {
            observation_id: &obs.id,
            latest_id: &obs.id,
            targets: &obs.perception.targets,
            mapping: obs.mapping,
            app: obs.app.as_deref(),
            focus: None,
            keymap: &self.keymap,
            line: None,
            window: None,
            popups: &[],
            dialogs: &[],
            terminal: tree_terminal(&obs),
        };
        self.focus = None;
        let rails = &self.settings.rails;
        let ran = match rails::check(&batch, &screen, rails, &self.settings.stop.combo)
            .map(|c| rails::approve(c, rails.mode, rails, None))
        {
            Ok(Decision::Run(a)) => self
                .hands
                .run(a, Duration::ZERO)
                .iter()
                .all(|r| r.outcome == Outcome::Done),
            _ => false,
        };
        self.emit_event(Event::Recovery {
            class: "unexpected window or menu".into(),
            action: "escape".into(),
            ran,
        });
        self.latest = Some(obs);
        if ran {
            // What Escape left behind, not the menu it closed.
            self.go(State::Settle, "pressed Escape");
            if let Ok((o, _, _)) = self.settle() {
                self.latest = Some(o);
            }
        }
        ran
    }

    fn not_planned(&mut self, why: &str) {
        let Some(obs) = self.latest.take() else {
            return;
        };
        let empty = Batch {
            observation_id: Some(obs.id.clone()),
            actions: Vec::new(),
            expect: Expect::default(),
        };
        let p = self.pending(obs, &empty, ms_since(self.returned));
        let v = Verdict::Failed {
            reason: why.to_string(),
            no_change: true,
        };
        self.record_step(&p, RailsVerdict::NotPlanned, &v, None, None);
        self.history.push(PastStep {
            action: "(nothing planned)".into(),
            verdict: format!("failed: {why}"),
        });
        self.latest = Some(p.obs);
    }

    /// A driver's plan is held, with whatever it says after it, until the next act has been
    /// judged (see `judge_secrets`); anything else it emits goes out at once.
    fn emit(&mut self, e: Event) {
        if let Event::Tokens { input, output } = e {
            self.step_tokens
                .get_or_insert_with(Default::default)
                .add(input, output);
            if let Some(r) = self.recorder.as_mut() {
                r.record.tokens.add(input, output);
            }
        }
        if let Event::Plan { say, .. } = &e {
            self.plan = say.clone();
            self.held.get_or_insert_with(Vec::new).push(e);
            return;
        }
        match &mut self.held {
            Some(h) => h.push(e),
            None => self.emit_event(e),
        }
    }

    fn go(&mut self, to: State, why: &str) {
        tracing::debug!("{:?} -> {to:?}: {}", self.state, self.secrets.mask(why));
        let from = std::mem::replace(&mut self.state, to);
        if from == to {
            return;
        }
        self.emit_event(Event::Transition {
            from,
            to,
            why: why.to_string(),
        });
    }

    fn stopped(&mut self) -> Option<Cause> {
        if !self.latch.is_stopped() {
            return None;
        }
        let cause = self.latch.cause().unwrap_or(Cause::EmergencyStop);
        if !self.stop_told {
            self.stop_told = true;
            self.emit_event(Event::EmergencyStop {
                cause: cause.to_string(),
            });
        }
        Some(cause)
    }

    fn end(&mut self, status: Status, summary: &str) -> ToolResult {
        if self.ended.is_none() {
            let summary = &self.secrets.mask(summary);
            let to = match status {
                Status::Done => State::Done,
                Status::Stopped => State::Stopped,
                _ => State::Failed,
            };
            self.go(to, summary);
            if let Some(p) = &mut self.pictures {
                p.finish();
            }
            if let Some(Err(e)) = self.recorder.as_mut().map(|r| r.finish(status, summary)) {
                self.record_failed(e);
            }
            self.emit_event(Event::SessionEnded {
                status,
                summary: summary.to_string(),
            });
            self.ended = Some((status, summary.to_string()));
        }
        let (status, summary) = self.ended.clone().expect("set above");
        ToolResult::Ended { status, summary }
    }

    fn broken(&mut self) -> Option<String> {
        self.failure.take()
    }
}

impl Drop for Desk {
    fn drop(&mut self) {
        // A desk dropped without an end (a panic unwinding, an error in the caller) still leaves
        // a true record: the process did not die, the session was cut short.
        if self.ended.is_none() && self.recorder.is_some() {
            let _ = self.end(Status::Failed, "the session ended without finishing");
        }
    }
}

/// The record of a new session and its event log on `bus` (none without a spec).
fn open_record(
    settings: &Settings,
    record: Option<RecordSpec>,
    bus: &mut Bus,
) -> Result<(Option<Recorder>, String, Vec<String>), DeskError> {
    Ok(match record {
        Some(spec) => {
            let r = Recorder::create(
                &spec.root,
                &spec.task,
                &spec.provider,
                &spec.model,
                &spec.prompt_version,
                &settings.rails.mode.to_string(),
            )?;
            let events = r.events_path();
            bus.subscribe(Box::new(JsonlSink::open(&events).map_err(|e| {
                DeskError::Events {
                    path: events.display().to_string(),
                    source: e,
                }
            })?));
            bus.emit(Event::SessionStarted {
                session: r.record.id.clone(),
                task: spec.task.clone(),
                provider: spec.provider,
                model: spec.model,
                mode: settings.rails.mode.to_string(),
                prompt_version: spec.prompt_version.clone(),
            });
            (Some(r), spec.task, spec.decomposition)
        }
        None => (None, String::new(), Vec::new()),
    })
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn stopped_refusal(cause: Cause) -> Refusal {
    Refusal {
        rule: "stopped",
        action: None,
        message: format!("stopped by {cause}; nothing more will move this session"),
    }
}

/// The menus and popups `obs` shows, in root (logical) pixels.
fn popups_of(obs: &Observation) -> Vec<Rect> {
    obs.windows
        .iter()
        .flatten()
        .filter(|w| w.popup)
        .map(|w| Rect::new(w.x, w.y, w.w as i32, w.h as i32))
        .collect()
}

/// A window told apart from every other: X reuses window ids once a client has gone, so the
/// process and the app name go with it.
fn window_key(w: &FocusedWindow) -> Option<String> {
    w.id.map(|id| format!("{}#{id:x}#{}", w.app, w.pid.unwrap_or(0)))
}

/// Does `obs`'s accessibility tree show a terminal widget with the keyboard (or the only one
/// there is)? Its keys reach a shell whatever the window's class is called.
pub(crate) fn tree_terminal(obs: &Observation) -> bool {
    use voxdesk_core::semantic::{Role, State};
    obs.perception.tree.as_ref().is_some_and(|t| {
        let terms: Vec<_> = t
            .nodes
            .iter()
            .filter(|n| n.role == Role::TERMINAL)
            .collect();
        terms.iter().any(|n| n.states.has(State::FOCUSED)) || terms.len() == 1
    })
}
