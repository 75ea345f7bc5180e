//! The desk: the one tool host every driver calls (`observe`, `act`, `done`), owner of capture, perception, the actuator, the rails, the GUI lock, the confirmation and the session record.
//!
//! `act` is: stale check → rails → confirmation → actuate → settle → verify → record, and its
//! result says what happened to each action and what the screen showed afterwards. Every failure
//! is a [`ToolResult`] that says why; nothing here panics or returns early past the record.
//! The desk emits events; it never prints or speaks.

pub mod confirm;
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
use voxdesk_input::actuator::{Actuator, Outcome};
use voxdesk_input::lock::GuiLock;
use voxdesk_input::stop::{Cause, StopLatch, StopWatcher};
use voxdesk_perception::{engine, Perceiver, Perception, Target};
use voxdesk_record::events::{Bus, Event, JsonlSink, Sink, State};
use voxdesk_record::redact::Secrets;
use voxdesk_record::session::{PhaseTimes, RailsVerdict, Recorder, Status, StepRecord};
use voxdesk_safety::confirm::ask as ask_yes;
use voxdesk_safety::rails::{self, Checked, Decision, Refusal, Screen, Step};
use voxdesk_safety::terminal::Line;
use voxdesk_screen as screen;
use voxdesk_screen::capture::{self, Capturer};
use voxdesk_screen::desktop::{self, Shown, Windows};
use voxdesk_screen::frame::Frame;
use voxdesk_screen::picture::{self, PictureConfig};

use confirm::{Confirm, Question};
use packet::PastStep;
use tool::{ActResult, ActStatus, ActionOutcome, ErrorKind, ObservationView, ToolCall, ToolResult};
use verify::{overlay, repeatable, typed_at, verify, Evidence, Verdict};

/// The rails' rule for text that would go into a password field (`rails::type_text`).
const PASSWORD_RULE: &str = "password-field";

/// The version of the tool contract recorded in every session.
pub const PROMPT_VERSION: &str = "tools.v2+packet.v2";
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

/// The GUI lock refused: reported as a refusal (exit 3), not a crash.
#[derive(Debug)]
pub struct RefusedByLock(pub String);
impl std::fmt::Display for RefusedByLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "refused by rule `gui-lock`: {}", self.0)
    }
}
impl std::error::Error for RefusedByLock {}

/// A batch on its way through `act`: what it was planned on and its result so far.
struct Pending {
    obs: Observation,
    batch: Batch,
    plan: String,
    result: ActResult,
    times: PhaseTimes,
    /// Where its clicks land, in model-picture pixels.
    clicks: Vec<[f64; 2]>,
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
        }
    }
}

pub struct Desk {
    settings: Settings,
    capturer: Capturer,
    perceiver: Perceiver,
    windows: Option<Windows>,
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
    actuator: Actuator,
    _watch: StopWatcher,
    _lock: Option<GuiLock>,
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
    ) -> anyhow::Result<Desk> {
        // The lock comes first: two voxdesks must not even plan against each other's work.
        let lock = if settings.rails.mode == Mode::Observe {
            None
        } else {
            let display = std::env::var("DISPLAY").unwrap_or_default();
            Some(
                GuiLock::acquire(&display, settings.lock_lease_ms)
                    .map_err(|e| anyhow::anyhow!(RefusedByLock(e.to_string())))?,
            )
        };
        let watch = StopWatcher::start(
            &settings.stop.combo,
            Duration::from_millis(settings.stop.hold_ms),
            latch.clone(),
        )
        .map_err(|e| anyhow::anyhow!("{e}: refusing to run without an emergency stop"))?;
        let actuator = Actuator::start(latch.clone()).map_err(|e| anyhow::anyhow!(e))?;
        let capturer = Capturer::new()?;
        let mut perceiver = Perceiver::new(engine::default_workers())?;
        perceiver.debug_to(settings.perception.debug_dir.clone());
        let mut bus = Bus::default();
        let (recorder, task, decomposition) = open_record(settings, record, &mut bus)?;
        let id_prefix = recorder
            .as_ref()
            .map(|r| r.record.id.clone())
            .unwrap_or_else(|| format!("obs-{:x}", std::process::id()));
        Ok(Desk {
            settings: settings.clone(),
            capturer,
            perceiver,
            // Without it only a menu drawn inside a window can be classed "something else
            // opened" (see `judge`).
            windows: Windows::open().ok(),
            typed: Vec::new(),
            typed_at: Vec::new(),
            focus: None,
            lines: Lines::load(&std::env::var("DISPLAY").unwrap_or_default()),
            // Without the server's table, the layout the rails assume is US.
            keymap: desktop::keymap().unwrap_or_else(|_| Keymap::us()),
            unsure: None,
            latch,
            actuator,
            _watch: watch,
            _lock: lock,
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
        })
    }

    /// Start the next session on this desk (`voxdesk listen`: one per spoken task): a new
    /// record and stop latch, the session's own state cleared; the capturer, the OCR engines
    /// with their cache, the lock and the window list stay, so its first look is quick. The
    /// caller subscribes its sinks again.
    pub fn begin(&mut self, record: RecordSpec, latch: Arc<StopLatch>) -> anyhow::Result<()> {
        if self.ended.is_none() && self.recorder.is_some() {
            let _ = self.end(Status::Failed, "the session ended without finishing");
        }
        if !Arc::ptr_eq(&latch, &self.latch) {
            self._watch = StopWatcher::start(
                &self.settings.stop.combo,
                Duration::from_millis(self.settings.stop.hold_ms),
                latch.clone(),
            )
            .map_err(|e| anyhow::anyhow!("{e}: refusing to run without an emergency stop"))?;
            self.actuator = Actuator::start(latch.clone()).map_err(|e| anyhow::anyhow!(e))?;
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
            o.windows = self.windows.as_ref().and_then(|w| w.list().ok());
        }
        o
    }

    /// Is the focused app of `obs` a terminal (the rails' list)?
    fn in_terminal(&self, obs: &Observation) -> bool {
        obs.app
            .as_deref()
            .is_some_and(|app| self.settings.rails.is_terminal(app))
    }

    /// Capture and perceive one frame (`full`: read every label, not only changed tiles).
    fn look(&mut self, full: bool) -> Result<Observation, String> {
        let t = Instant::now();
        let frame = self.capturer.capture().map_err(|e| e.to_string())?;
        let capture_ms = ms_since(t);
        let (w, h) = frame.size();
        let perception = self
            .perceiver
            .perceive(frame.image.as_raw(), w, h, full)
            .map_err(|e| e.to_string())?;
        self.seq += 1;
        let (app, title, window, window_rect) = match capture::focused_window().ok().flatten() {
            Some(w) => (
                Some(w.app.clone()),
                Some(w.title).filter(|t| !t.is_empty()),
                // X reuses window ids once a client has gone: the process tells two apart.
                w.id.map(|id| format!("{}#{id:x}#{}", w.app, w.pid.unwrap_or(0))),
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

    fn act(&mut self, batch: &Batch) -> ToolResult {
        let plan_ms = ms_since(self.returned);
        let Some(obs) = self.latest.take() else {
            return ToolResult::error(
                ErrorKind::BadCall,
                "act needs an observation: call observe first",
            );
        };
        self.judge_secrets(batch, &obs);
        let why = if self.plan.is_empty() {
            "act".to_string()
        } else {
            self.secrets.mask(&self.plan)
        };
        self.go(State::Act, &why);
        let mut p = self.pending(obs, batch, plan_ms);
        let outcome = match self.approved(&mut p) {
            Some(a) => self.run_and_verify(&mut p, a),
            None => Ok(None),
        };
        let ran = matches!(p.result.status, ActStatus::Ran | ActStatus::Failed);
        if ran {
            // Not confirmed, or not even looked at afterwards.
            let unsure = p.result.verdict.is_miss() || outcome.is_err();
            self.unsure = (unsure && !p.result.repeatable).then(|| p.batch.actions.clone());
        }
        match outcome {
            Ok(after) => {
                // Nothing ran (refused, recorded, declined, stopped): the screen is the one the
                // batch was checked against, and it is still the latest.
                let after = after.unwrap_or(p.obs);
                if p.result.after.is_none() {
                    p.result.after = Some(self.view_of(&after));
                }
                self.latest = Some(after);
                ToolResult::Act(Box::new(p.result))
            }
            // The batch ran but the screen could not be seen: the driver must observe again.
            Err(why) => ToolResult::error(ErrorKind::Capture, why),
        }
    }

    /// A batch about to be judged against `obs`, with its result so far: nothing ran yet.
    fn pending(&mut self, obs: Observation, batch: &Batch, plan_ms: f64) -> Pending {
        let mut batch = batch.clone();
        let named = batch
            .observation_id
            .get_or_insert_with(|| obs.id.clone())
            .clone();
        let plan = self.secrets.mask(&std::mem::take(&mut self.plan));
        let result = ActResult {
            observation_id: named,
            app: obs.app.clone(),
            status: ActStatus::Refused,
            refusal: None,
            actions: outcomes(&batch, None, tool::Outcome::NotRun),
            verdict: Verdict::Unverified,
            changed: false,
            appeared: Vec::new(),
            opened: Vec::new(),
            repeatable: repeatable(&batch, &obs.perception.targets),
            step: None,
            after: None,
        };
        let times = PhaseTimes {
            capture: obs.timing.map_or(0.0, |t| t.0),
            ocr: obs.timing.map_or(0.0, |t| t.1),
            plan: plan_ms,
            ..Default::default()
        };
        Pending {
            index: self.recorder.as_ref().map_or(0, |r| r.record.steps.len()) + 1,
            obs,
            batch,
            plan,
            result,
            times,
            clicks: Vec::new(),
        }
    }

    /// Stale check, rails, mode and confirmation: the approved batch, or `None` with the result
    /// (stopped, refused, recorded, declined) filled in and recorded.
    fn approved(&mut self, p: &mut Pending) -> Option<rails::Approved> {
        if let Some(cause) = self.stopped() {
            p.result.status = ActStatus::Stopped;
            p.result.refusal = Some(stopped_refusal(cause));
            return None;
        }
        let popups = popups_of(&p.obs);
        let screen = Screen {
            observation_id: &p.result.observation_id,
            latest_id: &p.obs.id,
            targets: &p.obs.perception.targets,
            mapping: p.obs.mapping,
            app: p.obs.app.as_deref(),
            focus: self
                .focus
                .as_ref()
                .filter(|f| f.carried(&p.obs.perception.targets)),
            keymap: &self.keymap,
            line: p.obs.window.as_ref().map(|w| self.lines.get(w)),
            window: p.obs.window_rect,
            popups: &popups,
        };
        let rails = &self.settings.rails;
        // The same batch again, right after it ran and could not be confirmed, with no look in
        // between: doing it twice could do it twice (type twice, send twice).
        let blind = self
            .unsure
            .as_ref()
            .is_some_and(|prev| verify::repeats(prev, &p.batch.actions));
        let checked = if blind {
            Err(Refusal {
                rule: "blind-repeat",
                action: None,
                message: "this batch ran a moment ago and could not be confirmed; running it again could do it twice: observe, check what the first one did, then decide".into(),
            })
        } else {
            rails::check(&p.batch, &screen, rails, &self.settings.stop.combo)
        };
        let checked = match checked {
            Ok(c) => c,
            Err(r) => {
                self.emit_event(Event::Refusal {
                    rule: r.rule.into(),
                    action: r.action,
                    message: r.message.clone(),
                });
                p.result.step = self.record_step(
                    p,
                    RailsVerdict::Refused(r.rule.into()),
                    &Verdict::Unverified,
                    None,
                    None,
                );
                p.result.refusal = Some(r);
                return None;
            }
        };
        p.clicks = click_points(&checked, &p.obs.mapping);
        p.result.actions = outcomes(&p.batch, Some(&checked), tool::Outcome::NotRun);
        let why = match self.approve(checked.clone(), &p.plan) {
            Ok(a) => {
                // Where the keyboard will be, and what a terminal's line will read, once it all
                // ran (`run_and_verify` forgets both when something did not).
                self.focus = a.focus().cloned();
                if let (Some(w), Some(l)) = (&p.obs.window, a.line()) {
                    self.lines.set(w, l.clone());
                }
                return Some(a);
            }
            Err(why) => why,
        };
        let shot = self.screenshot(&p.obs, &format!("step-{:03}.png", p.index));
        let rails_verdict = match why {
            Ok(()) => {
                p.result.status = ActStatus::Recorded;
                p.result.actions = outcomes(&p.batch, Some(&checked), tool::Outcome::WouldRun);
                self.history.push(PastStep {
                    action: plan_or(&p.plan, &p.batch),
                    verdict: "recorded (observe mode: not done)".into(),
                });
                RailsVerdict::Recorded
            }
            Err(refusal) => {
                p.result.status = ActStatus::Declined;
                p.result.refusal = Some(refusal);
                RailsVerdict::Confirmation
            }
        };
        p.result.step = self.record_step(
            p,
            rails_verdict,
            &Verdict::Unverified,
            shot.as_deref(),
            None,
        );
        None
    }

    /// Actuate, settle, verify, record. The screen afterwards, `None` when the stop cut the
    /// batch, or why the screen could not be seen after it ran.
    fn run_and_verify(
        &mut self,
        p: &mut Pending,
        approved: rails::Approved,
    ) -> Result<Option<Observation>, String> {
        let shot = self.screenshot(&p.obs, &format!("step-{:03}.png", p.index));
        let t_act = Instant::now();
        let rate = Duration::from_millis(self.settings.rails.rate_limit_ms);
        for r in self.actuator.run(approved, rate) {
            let a = &mut p.result.actions[r.index];
            a.ms = (r.took.as_secs_f64() * 1000.0 * 10.0).round() / 10.0;
            a.outcome = match r.outcome {
                Outcome::Done => tool::Outcome::Done,
                Outcome::Skipped => tool::Outcome::Skipped,
                Outcome::Stopped => tool::Outcome::Stopped,
                Outcome::Failed(e) => {
                    a.error = Some(e);
                    tool::Outcome::Failed
                }
            };
        }
        p.times.act = ms_since(t_act);
        if p.result
            .actions
            .iter()
            .any(|a| a.outcome != tool::Outcome::Done)
        {
            self.focus = None;
            if let Some(w) = &p.obs.window {
                let mut l = self.lines.get(w).clone();
                l.lose();
                self.lines.set(w, l);
            }
        }
        for (a, o) in p.batch.actions.iter().zip(&p.result.actions) {
            if let (Action::Type { text }, true) = (a, o.outcome.was_sent()) {
                self.typed.push(text.clone());
            }
        }
        if let Some(cause) = self.stopped() {
            p.result.status = ActStatus::Stopped;
            p.result.refusal = Some(stopped_refusal(cause));
            p.result.step = self.record_step(
                p,
                RailsVerdict::Approved,
                &Verdict::Unverified,
                shot.as_deref(),
                None,
            );
            return Ok(None);
        }
        let all_ran = p
            .result
            .actions
            .iter()
            .all(|a| a.outcome == tool::Outcome::Done);
        p.result.status = if all_ran {
            ActStatus::Ran
        } else {
            ActStatus::Failed
        };
        self.go(State::Settle, "acted");
        let after = match self.settle() {
            Ok((after, settle_ms, changed)) => {
                p.times.settle = settle_ms;
                p.result.changed = changed || after.perception.targets != p.obs.perception.targets;
                after
            }
            Err(e) => {
                let why =
                    format!("the batch ran, but the screen could not be looked at afterwards: {e}");
                let v = Verdict::Failed {
                    reason: why.clone(),
                    no_change: false,
                };
                self.record_step(p, RailsVerdict::Approved, &v, shot.as_deref(), None);
                return Err(why);
            }
        };
        self.go(State::Verify, "screen settled");
        let after = self.judge(p, after, all_ran);
        let vshot = self.screenshot(&after, &format!("step-{:03}-verify.png", p.index));
        let verdict = p.result.verdict.clone();
        p.result.step = self.record_step(
            p,
            RailsVerdict::Approved,
            &verdict,
            shot.as_deref(),
            vshot.as_deref(),
        );
        self.history.push(PastStep {
            action: plan_or(&p.plan, &p.batch),
            verdict: match verdict.detail() {
                Some(d) => format!("{}: {d}", verdict.name()),
                None => verdict.name().into(),
            },
        });
        let view = self.view_of(&after);
        self.observed(&view);
        p.result.after = Some(view);
        Ok(Some(after))
    }

    /// Verify the batch's expectation on the settled screen. A miss is looked at once more
    /// before it is reported (nothing changed yet: a stale frame is the usual cause; changed but
    /// not as expected: the app may still be drawing); the screen it was judged on.
    fn judge(&mut self, p: &mut Pending, mut after: Observation, all_ran: bool) -> Observation {
        let t = Instant::now();
        let before = &p.obs.perception.targets;
        let expect = &p.batch.expect;
        let earlier = self.typed_at.clone();
        let judge = |after: &Observation, changed: bool, typed: &[String]| {
            verify(
                expect,
                &Evidence {
                    before,
                    after: &after.perception.targets,
                    changed,
                    typed,
                    typed_at: &earlier,
                },
            )
        };
        let mut verdict = if all_ran {
            judge(&after, p.result.changed, &self.typed)
        } else {
            let why = p
                .result
                .actions
                .iter()
                .find_map(|a| a.error.clone())
                .unwrap_or_else(|| "an action failed".into());
            Verdict::Failed {
                reason: why,
                no_change: !p.result.changed,
            }
        };
        if all_ran && verdict.is_miss() {
            let again = if matches!(verdict, Verdict::Failed { .. }) {
                self.await_change(NO_CHANGE_WAIT)
            } else {
                std::thread::sleep(RECHECK_AFTER);
                self.settle()
            };
            if let Ok((again, _, changed)) = again {
                p.result.changed |= changed || again.perception.targets != *before;
                verdict = judge(&again, p.result.changed, &self.typed);
                after = again;
            }
        }
        let texts = !expect.appears.is_empty() || !expect.shows.is_empty();
        // What this batch typed, and where it was read once typed: a later "shows" of the
        // same words does not count them there (a file renamed in a dialog still open).
        let now_typed: Vec<String> = p
            .batch
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Type { text } => Some(text.clone()),
                _ => None,
            })
            .collect();
        let mut at = typed_at(&now_typed, before, &after.perception.targets);
        if all_ran && texts && matches!(verdict, Verdict::Unconfirmed(_)) {
            // Look where the text went: the lines whose pixels changed, read whole, before
            // and after (the targets can miss text glued to a caret or inside an input).
            if let Some((b, a)) = self.reread(&p.obs, &after) {
                let v = verify(
                    expect,
                    &Evidence {
                        before: &b,
                        after: &a,
                        changed: true,
                        typed: &self.typed,
                        typed_at: &self.typed_at,
                    },
                );
                at.extend(typed_at(&now_typed, &b, &a));
                if let Verdict::Verified(why) = v {
                    verdict = Verdict::Verified(format!("{why}, read where the screen changed"));
                }
            }
            // Still not seen: look through a caret's blink, the last resort (it waits).
            let mut blinked = false;
            for _ in 0..BLINK_LOOKS {
                if !matches!(verdict, Verdict::Unconfirmed(_)) {
                    break;
                }
                std::thread::sleep(BLINK_EVERY);
                let Ok(mut o) = self.look(false) else { break };
                o.timing = None;
                verdict = judge(&o, p.result.changed, &self.typed);
                after = self.shown(o);
                blinked = true;
            }
            if blinked {
                at.extend(typed_at(&now_typed, before, &after.perception.targets));
            }
        }
        self.typed_at.extend(at);
        p.times.verify = ms_since(t);
        p.result.appeared = appeared(before, &after.perception.targets);
        // Only when both lists are known: a list that failed is no proof of a new window.
        if let (Some(w0), Some(w1)) = (&p.obs.windows, &after.windows) {
            p.result.opened = desktop::opened(w0, w1);
        }
        // A menu a page draws has no window of its own; a terminal's new lines are output, and
        // typed lines are what was typed.
        let (w, h) = p.obs.frame.size();
        if p.result.opened.is_empty() && !self.in_terminal(&p.obs) && now_typed.is_empty() {
            if let Some(r) = overlay(
                before,
                &after.perception.targets,
                &Rect::new(0, 0, w as i32, h as i32),
            ) {
                p.result.opened.push(format!(
                    "a menu or popup drawn at ({}, {}), {}x{}",
                    r.x, r.y, r.w, r.h
                ));
            }
        }
        p.result.verdict = verdict;
        after
    }

    /// The targets of `before` and `after` with the changed part of each line (the columns whose
    /// pixels changed, in a band one line high) replaced by that part read as one line; `None`
    /// when nothing, or too much, changed to read it so.
    fn reread(
        &self,
        before: &Observation,
        after: &Observation,
    ) -> Option<(Vec<Target>, Vec<Target>)> {
        const LINE_GAP: u32 = 3;
        const LINE_MAX_H: u32 = 64;
        const MAX_LINES: usize = 6;
        let bands = screen::frame::changed_bands(&before.frame, &after.frame, LINE_GAP, LINE_MAX_H);
        if bands.is_empty() || bands.len() > MAX_LINES {
            return None;
        }
        let (w, h) = after.frame.size();
        let whole = Rect::new(0, 0, w as i32, h as i32);
        let (mut b, mut a) = (
            before.perception.targets.clone(),
            after.perception.targets.clone(),
        );
        for band in bands {
            let r = band.expand_within(1, &whole);
            for (targets, o) in [(&mut b, before), (&mut a, after)] {
                let text = self
                    .perceiver
                    .read_line(o.frame.image.as_raw(), w, h, r)
                    .ok()?;
                tracing::debug!("read where the screen changed, {r:?}: {text:?}");
                targets.retain(|t| !r.contains(t.rect.centre()));
                if !text.is_empty() {
                    targets.push(Target {
                        id: 0,
                        text,
                        rect: r,
                        conf: 0.5,
                        new: false,
                    });
                }
            }
        }
        Some((b, a))
    }

    /// Apply the mode and, when needed, the person's yes. `Err(Ok(()))`: observe mode, record
    /// only; `Err(Err(refusal))`: no yes.
    fn approve(
        &mut self,
        checked: Checked,
        plan: &str,
    ) -> Result<rails::Approved, Result<(), Refusal>> {
        let rails = &self.settings.rails;
        match rails::approve(checked.clone(), rails.mode, rails, None) {
            Decision::Run(a) => Ok(a),
            Decision::Record => Err(Ok(())),
            Decision::AskFirst(reasons) => {
                let q = Question::about(&checked, plan, reasons.clone());
                self.emit_event(Event::ConfirmationAsked {
                    question: q.text(),
                    reasons: reasons.clone(),
                });
                let yes = ask_yes(self.confirm.as_mut(), &q, &checked, &self.latch);
                self.emit_event(Event::ConfirmationAnswered { yes: yes.is_some() });
                let refusal = Refusal {
                    rule: "confirmation",
                    action: None,
                    message: format!("needs a yes ({}) and none was given", reasons.join("; ")),
                };
                let Some(yes) = yes else {
                    return Err(Err(refusal));
                };
                let rails = &self.settings.rails;
                match rails::approve(checked, rails.mode, rails, Some(&yes)) {
                    Decision::Run(a) => Ok(a),
                    _ => Err(Err(refusal)),
                }
            }
        }
    }

    /// Have a step picture drawn and written off the loop; `end` waits for them. `None` when
    /// the session keeps no screenshots or no record.
    fn screenshot(&mut self, obs: &Observation, name: &str) -> Option<String> {
        let dir = self.recorder.as_ref()?.dir.clone();
        if !self.settings.record_screenshots {
            return None;
        }
        self.pictures
            .get_or_insert_with(pictures::Pictures::start)
            .write(
                obs.frame.clone(),
                obs.perception.targets.clone(),
                dir.join(name),
            );
        Some(name.to_string())
    }

    /// Record the step of `p` (when there is a record) and emit it; its number.
    fn record_step(
        &mut self,
        p: &Pending,
        rails_verdict: RailsVerdict,
        v: &Verdict,
        shot: Option<&str>,
        vshot: Option<&str>,
    ) -> Option<usize> {
        let (picture, focus) = focus_of(&p.obs, &p.clicks);
        let index = self.recorder.as_ref()?.record.steps.len() + 1;
        let times = p.times.clone();
        let mut step = StepRecord {
            index,
            observation_id: p.obs.id.clone(),
            actions: p.batch.to_value(),
            rails: rails_verdict.clone(),
            verification: v.class(),
            detail: v.detail().unwrap_or_default().to_string(),
            timings_ms: times.clone(),
            screenshot: shot.map(String::from),
            verify_screenshot: vshot.map(String::from),
            click_points: p.clicks.clone(),
            plan: p.plan.clone(),
            picture: Some(picture),
            focus,
        };
        self.secrets.mask_step(&mut step);
        if let Some(Err(e)) = self.recorder.as_mut().map(|r| r.push_step(step)) {
            self.record_failed(e);
        }
        let total = times.capture + times.ocr + times.act + times.settle + times.verify;
        self.emit_event(Event::Step {
            index,
            observation_id: p.obs.id.clone(),
            rails: rails_verdict,
            verdict: v.class(),
            detail: v.detail().unwrap_or_default().to_string(),
            ms: (total * 10.0).round() / 10.0,
        });
        Some(index)
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
        };
        self.focus = None;
        let rails = &self.settings.rails;
        let ran = match rails::check(&batch, &screen, rails, &self.settings.stop.combo)
            .map(|c| rails::approve(c, rails.mode, rails, None))
        {
            Ok(Decision::Run(a)) => self
                .actuator
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
) -> anyhow::Result<(Option<Recorder>, String, Vec<String>)> {
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
                anyhow::anyhow!("session records at {}: {e}", events.display())
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

/// Each terminal window's command line, kept beside the GUI lock so the next voxdesk on this
/// display (another `act`, a new session) goes on from where this one's keys left it: a command
/// typed by one process and run by the next is still judged whole. A file that cannot be read
/// makes every terminal's line unknown (Return then needs a yes), never an empty one.
struct Lines {
    path: PathBuf,
    by_window: std::collections::BTreeMap<String, Line>,
    /// The line of a window not in the file: empty, or unknown when the file was unreadable.
    unseen: Line,
}

impl Lines {
    fn load(display: &str) -> Lines {
        let mut lines = Lines {
            path: PathBuf::new(),
            by_window: Default::default(),
            unseen: Line::default(),
        };
        match voxdesk_input::lock::lock_path(display) {
            Ok(p) => lines.path = p.with_extension("lines.json"),
            Err(e) => {
                tracing::warn!("no private runtime dir ({e}); every terminal line is unknown");
                lines.unseen.lose();
                return lines;
            }
        }
        // Believed only when it is ours and private, like serve.json.
        match voxdesk_core::private::read_own(&lines.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(
                    "{}: {e}; every terminal line is unknown",
                    lines.path.display()
                );
                lines.unseen.lose();
            }
            Ok(bytes) => match serde_json::from_slice::<
                std::collections::BTreeMap<String, Option<String>>,
            >(&bytes)
            {
                Ok(m) => {
                    lines.by_window = m.into_iter().map(|(w, t)| (w, Line::restored(t))).collect();
                }
                Err(e) => {
                    tracing::warn!(
                        "{}: {e}; every terminal line is unknown",
                        lines.path.display()
                    );
                    lines.unseen.lose();
                }
            },
        }
        lines
    }

    fn get(&self, window: &str) -> &Line {
        self.by_window.get(window).unwrap_or(&self.unseen)
    }

    fn set(&mut self, window: &str, line: Line) {
        // An empty line is what a window not in the file has: only the others are kept (X
        // reuses window ids; a stale entry only errs towards a yes).
        if line.text() == Some("") && self.unseen.text() == Some("") {
            self.by_window.remove(window);
        } else {
            self.by_window.insert(window.to_string(), line);
        }
        let saved: std::collections::BTreeMap<&str, Option<&str>> = self
            .by_window
            .iter()
            .map(|(w, l)| (w.as_str(), l.text()))
            .collect();
        if self.path.as_os_str().is_empty() {
            return;
        }
        let written = self
            .path
            .parent()
            .map_or(Ok(()), voxdesk_core::private::dir)
            .and_then(|_| {
                let tmp = self.path.with_extension("tmp");
                voxdesk_core::private::write(
                    &tmp,
                    &serde_json::to_vec(&saved).unwrap_or_default(),
                )?;
                std::fs::rename(&tmp, &self.path)
            });
        if let Err(e) = written {
            tracing::warn!("{}: {e}", self.path.display());
        }
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

fn plan_or(plan: &str, batch: &Batch) -> String {
    if plan.is_empty() {
        batch.to_value()["actions"].to_string()
    } else {
        plan.to_string()
    }
}

/// Every action of `batch` with the same outcome, resolved steps where the rails made them.
fn outcomes(
    batch: &Batch,
    checked: Option<&Checked>,
    outcome: tool::Outcome,
) -> Vec<ActionOutcome> {
    batch
        .actions
        .iter()
        .enumerate()
        .map(|(i, a)| ActionOutcome {
            index: i + 1,
            action: a.name(),
            step: checked.and_then(|c| c.steps().get(i)).map(Step::to_string),
            outcome,
            error: None,
            ms: 0.0,
        })
        .collect()
}

/// Where the batch's clicks land, in model-picture pixels (for the report).
fn click_points(checked: &Checked, m: &Mapping) -> Vec<[f64; 2]> {
    checked
        .steps()
        .iter()
        .filter_map(|st| match st {
            Step::Click { at, .. } => m
                .logical_to_capture(*at)
                .ok()
                .map(|c| m.capture_to_image(c))
                .map(|p| [p.x, p.y]),
            _ => None,
        })
        .collect()
}

/// Texts on screen after that the screen before did not have.
fn appeared(before: &[Target], after: &[Target]) -> Vec<String> {
    after
        .iter()
        .filter(|t| !before.iter().any(|b| b.text == t.text))
        .map(|t| t.text.clone())
        .collect()
}

/// The model picture's size and the part of it a person reviewing the step wants to see: every
/// target and click point, with a margin (`None` when there is nothing on screen).
fn focus_of(obs: &Observation, clicks: &[[f64; 2]]) -> ([f64; 2], Option<[f64; 4]>) {
    let m = &obs.mapping;
    let pic = Rect::new(0, 0, m.image_w as i32, m.image_h as i32);
    let mut r: Option<Rect> = None;
    let mut add = |x: Rect| r = Some(r.map_or(x, |u| u.union(&x)));
    for t in &obs.perception.targets {
        add(m.capture_rect_to_image(&t.rect));
    }
    for p in clicks {
        add(Rect::new(p[0] as i32, p[1] as i32, 1, 1));
    }
    let focus = r
        .map(|r| r.expand_within(24, &pic))
        .map(|r| [r.x as f64, r.y as f64, r.w as f64, r.h as f64]);
    ([m.image_w as f64, m.image_h as f64], focus)
}
