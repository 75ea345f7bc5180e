//! The loop as an explicit state machine: observe → plan → act → settle → verify, with a step cap, a no-progress counter that aborts at three, failure handling by class, narration and a session record of every step.
//!
//! States and transitions live in [`State`] and [`Agent::go`]; every transition is logged to the
//! session's event log. The planner here is the offline one; model providers plug in at `plan`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::action::{Action, Batch, Expect};
use crate::actuator::{Actuator, Outcome, StopLatch, StopWatcher};
use crate::capture::{self, Capturer};
use crate::config::Settings;
use crate::frame::Frame;
use crate::narrate::Narrator;
use crate::perception::{engine, Perceiver, Perception, Target};
use crate::planner::local::LocalPlanner;
use crate::planner::{PlanInput, Planned, Planner};
use crate::rails::{self, Decision, Screen};
use crate::session::{PhaseTimes, Recorder, Status, StepRecord};
use crate::verify::{verify, Verdict};

/// The version of the planner contract recorded in every session.
pub const PROMPT_VERSION: &str = "tools.v1+packet.v1";
/// Consecutive no-progress cycles (failed verification or unchanged screen) that abort a task.
pub const NO_PROGRESS_LIMIT: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Observe,
    Plan,
    Act,
    Settle,
    Verify,
    Done,
    Failed,
    Stopped,
}

pub struct RunOptions {
    pub task: String,
    pub step_cap: usize,
    pub quiet: bool,
    pub wav_dir: Option<std::path::PathBuf>,
    pub sessions_root: std::path::PathBuf,
}

struct Observation {
    id: String,
    frame: Frame,
    perception: Perception,
    app: Option<String>,
    /// Model picture ↔ capture ↔ logical for this frame.
    mapping: crate::geometry::Mapping,
}

pub struct Agent<'a> {
    settings: &'a Settings,
    capturer: Capturer,
    perceiver: Perceiver,
    latch: Arc<StopLatch>,
    actuator: Actuator,
    _watch: StopWatcher,
    pub recorder: Recorder,
    pub narrator: Narrator,
    state: State,
    seq: u32,
    transcript: Vec<String>,
    /// Click points of the step being recorded, in model-picture pixels.
    last_points: Vec<[f64; 2]>,
    /// What the current step's plan was, in words ("Clicking 7"), for its record.
    last_plan: String,
    writers: Vec<std::thread::JoinHandle<()>>,
}

pub struct RunResult {
    pub status: Status,
    pub summary: String,
    pub session_dir: std::path::PathBuf,
    pub transcript: Vec<String>,
}

impl<'a> Agent<'a> {
    pub fn new(settings: &'a Settings, opts: &RunOptions) -> Result<Agent<'a>> {
        let latch = Arc::new(StopLatch::default());
        let watch = StopWatcher::start(
            &settings.stop.combo,
            Duration::from_millis(settings.stop.hold_ms),
            latch.clone(),
        )
        .map_err(|e| anyhow::anyhow!("{e}: refusing to run without an emergency stop"))?;
        let actuator = Actuator::start(latch.clone()).map_err(|e| anyhow::anyhow!(e))?;
        let recorder = Recorder::create(
            &opts.sessions_root,
            &opts.task,
            "local",
            "offline-planner",
            PROMPT_VERSION,
            &settings.rails.mode.to_string(),
        )?;
        let narrator = Narrator::new(opts.quiet, opts.wav_dir.clone(), Some(latch.clone()));
        Ok(Agent {
            settings,
            capturer: Capturer::new()?,
            perceiver: Perceiver::new(engine::default_workers())?,
            latch,
            actuator,
            _watch: watch,
            recorder,
            narrator,
            state: State::Observe,
            seq: 0,
            transcript: Vec::new(),
            last_points: Vec::new(),
            last_plan: String::new(),
            writers: Vec::new(),
        })
    }

    /// The one place states change: logged and recorded.
    fn go(&mut self, to: State, why: &str) {
        tracing::debug!("{:?} -> {to:?}: {why}", self.state);
        let _ = self.recorder.event("transition", serde_json::json!({"from": format!("{:?}", self.state), "to": format!("{to:?}"), "why": why}));
        self.state = to;
    }

    fn observe(&mut self, full: bool) -> Result<(Observation, f64, f64)> {
        let t = Instant::now();
        let frame = self.capturer.capture()?;
        let capture_ms = t.elapsed().as_secs_f64() * 1000.0;
        let (w, h) = frame.size();
        let perception = self.perceiver.perceive(frame.image.as_raw(), w, h, full)?;
        self.seq += 1;
        let app = capture::focused_window().ok().flatten().map(|a| a.app);
        let ocr_ms = perception.timings.total_ms;
        let mapping =
            crate::picture::picture_mapping(&frame, crate::picture::PictureConfig::default())?;
        Ok((
            Observation {
                id: format!("{}-{}", self.recorder.record.id, self.seq),
                frame,
                perception,
                app,
                mapping,
            },
            capture_ms,
            ocr_ms,
        ))
    }

    /// Capture until two consecutive frames are identical (bounded), returning the last.
    fn settle(&mut self) -> Result<(Observation, f64, bool)> {
        let t = Instant::now();
        let mut changed = false;
        loop {
            std::thread::sleep(Duration::from_millis(60));
            let (o, _, _) = self.observe(false)?;
            let still = o.perception.unchanged();
            changed |= !still;
            if still || t.elapsed() > Duration::from_millis(2500) {
                return Ok((o, t.elapsed().as_secs_f64() * 1000.0, changed));
            }
        }
    }

    /// Draw and write the step picture on a background thread (downscale, boxes and PNG encoding
    /// take ~150 ms: not the loop's business); [`Agent::run_with`] joins them before the session ends.
    fn save_png(&mut self, frame: &Frame, targets: &[Target], name: &str) -> Option<String> {
        // At most two pictures in flight: each holds a copy of the frame.
        while self.writers.len() >= 2 {
            let _ = self.writers.remove(0).join();
        }
        let (frame, targets, path) = (
            frame.clone(),
            targets.to_vec(),
            self.recorder.dir.join(name),
        );
        self.writers.push(std::thread::spawn(move || {
            if let Ok((image, _)) = crate::picture::annotated(
                &frame,
                &targets,
                crate::picture::PictureConfig::default(),
            ) {
                let _ = image.save_with_format(path, image::ImageFormat::Png);
            }
        }));
        Some(name.to_string())
    }

    /// Run the task to an end with the offline planner.
    pub fn run(&mut self, task: &str, step_cap: usize) -> Result<RunResult> {
        let mut planner = match LocalPlanner::new(task) {
            Ok(p) => p,
            Err(e) => {
                self.narrator.say(&format!("I can't do that: {e}."));
                self.recorder.finish(Status::Failed, &e.to_string())?;
                return Ok(self.result(Status::Failed, e.to_string()));
            }
        };
        self.run_with(&mut planner, task, step_cap)
    }

    /// Run the task to an end with any planner.
    pub fn run_with(
        &mut self,
        planner: &mut dyn Planner,
        task: &str,
        step_cap: usize,
    ) -> Result<RunResult> {
        // Provider and model are always named explicitly in the record.
        self.recorder.record.provider = planner.provider().to_string();
        self.recorder.record.model = planner.model().to_string();
        self.recorder.save()?;
        let mut no_progress = 0u32;
        let mut steps = 0usize;
        let (mut obs, mut cap_ms, mut ocr_ms) = self.observe(true)?;
        self.go(State::Plan, "first observation");
        let (status, summary) = loop {
            if self.latch.is_stopped() {
                self.narrator.cut();
                self.go(State::Stopped, "emergency stop");
                break (
                    Status::Stopped,
                    "stopped by the emergency stop; nothing more will move this session"
                        .to_string(),
                );
            }
            if steps >= step_cap {
                self.go(State::Failed, "step cap");
                break (
                    Status::Failed,
                    format!(
                        "stopped at the step cap ({step_cap}) — tried: {}",
                        self.tried()
                    ),
                );
            }
            if no_progress >= NO_PROGRESS_LIMIT {
                self.go(State::Failed, "no progress");
                break (
                    Status::Failed,
                    format!(
                        "no progress after {NO_PROGRESS_LIMIT} tries — tried: {}",
                        self.tried()
                    ),
                );
            }
            steps += 1;
            // Plan: the packet first (what a model planner reads, kept in the event log).
            let t_plan = Instant::now();
            let m = obs.mapping;
            let (pw, ph) = (m.image_w, m.image_h);
            let in_picture: Vec<Target> = obs
                .perception
                .targets
                .iter()
                .map(|t| Target {
                    rect: m.capture_rect_to_image(&t.rect),
                    ..t.clone()
                })
                .collect();
            let decomposition = planner.decomposition();
            let history: Vec<crate::packet::PastStep> = self
                .transcript
                .iter()
                .map(|t| crate::packet::PastStep {
                    action: t.clone(),
                    verdict: String::new(),
                })
                .collect();
            let packet = crate::packet::build(&crate::packet::PacketInput {
                task,
                decomposition: &decomposition,
                history: &history,
                observation_id: &obs.id,
                app: obs.app.as_deref(),
                picture: (pw, ph),
                targets: &in_picture,
            });
            let _ = self.recorder.event(
                "packet",
                serde_json::json!({"version": crate::packet::PACKET_VERSION, "text": packet}),
            );
            let (actions, expect, said) = match planner.plan(&PlanInput {
                targets: &obs.perception.targets,
                packet: &packet,
            }) {
                Planned::Act {
                    actions,
                    expect,
                    say,
                } => (actions, expect, say),
                Planned::Done { success, summary } => {
                    self.go(
                        if success { State::Done } else { State::Failed },
                        "the planner is done",
                    );
                    break (
                        if success {
                            Status::Done
                        } else {
                            Status::Failed
                        },
                        summary,
                    );
                }
                Planned::Stuck(e) => {
                    no_progress += 1;
                    self.transcript.push(format!("step {steps}: {e}"));
                    self.narrator.say(&format!("I can't find it: {e}."));
                    self.record_step(
                        &obs,
                        serde_json::json!([]),
                        "not planned",
                        &Verdict::Failed {
                            reason: e.clone(),
                            no_change: true,
                        },
                        PhaseTimes {
                            capture: cap_ms,
                            ocr: ocr_ms,
                            ..Default::default()
                        },
                        None,
                    );
                    // Maybe the screen was still drawing: settle and look again.
                    self.go(State::Settle, "could not plan on this screen");
                    let (o, _, _) = self.settle()?;
                    obs = o;
                    self.go(State::Plan, "re-observed");
                    continue;
                }
            };
            let plan_ms = t_plan.elapsed().as_secs_f64() * 1000.0;
            self.narrator.say(&format!("{said}."));
            self.last_plan = said.clone();
            // Act.
            self.go(State::Act, &said);
            let batch = Batch {
                observation_id: Some(obs.id.clone()),
                actions,
                expect: expect.clone(),
            };
            let actions_json = batch.to_value();
            let mapping = obs.mapping;
            let screen = Screen {
                observation_id: &obs.id,
                latest_id: &obs.id,
                targets: &obs.perception.targets,
                mapping,
                app: obs.app.as_deref(),
            };
            // The screenshot of the step is made before the act phase is timed.
            let before = obs.perception.targets.clone();
            let shot = self.save_png(&obs.frame, &before, &format!("step-{steps:03}.png"));
            let t_act = Instant::now();
            let checked = match rails::check(
                &batch,
                &screen,
                &self.settings.rails,
                &self.settings.stop.combo,
            ) {
                Ok(c) => c,
                Err(r) => {
                    self.narrator.say(&format!("Refused: {}.", r.message));
                    self.record_step(
                        &obs,
                        actions_json,
                        r.rule,
                        &Verdict::Unverified,
                        PhaseTimes {
                            capture: cap_ms,
                            ocr: ocr_ms,
                            plan: plan_ms,
                            ..Default::default()
                        },
                        None,
                    );
                    self.go(State::Failed, "refused by the rails");
                    break (
                        Status::Failed,
                        format!("refused by rule `{}`: {}", r.rule, r.message),
                    );
                }
            };
            self.last_points = checked
                .steps
                .iter()
                .filter_map(|st| match st {
                    rails::Step::Click { at, .. } => mapping
                        .logical_to_capture(*at)
                        .ok()
                        .map(|c| mapping.capture_to_image(c))
                        .map(|p| [p.x, p.y]),
                    _ => None,
                })
                .collect();
            let (rails_verdict, ran) = match rails::approve(
                checked,
                self.settings.rails.mode,
                &self.settings.rails,
                false,
            ) {
                Decision::Run(a) => match self.run_approved(a) {
                    Some(all_done) => ("approved", all_done),
                    None => continue, // stopped: the top of the loop ends the session
                },
                Decision::Record => ("recorded", false),
                Decision::AskFirst(why) => {
                    self.narrator
                        .say(&format!("{said}? I need a yes first ({}).", why.join("; ")));
                    let asked = crate::act::ask_yes(&format!(
                        "step {steps}: {said} ({}). Go ahead?",
                        why.join("; ")
                    ));
                    let again = rails::check(
                        &batch,
                        &screen,
                        &self.settings.rails,
                        &self.settings.stop.combo,
                    );
                    match (
                        asked,
                        again.map(|c| {
                            rails::approve(c, self.settings.rails.mode, &self.settings.rails, true)
                        }),
                    ) {
                        (true, Ok(Decision::Run(a))) => match self.run_approved(a) {
                            Some(all_done) => ("approved", all_done),
                            None => continue,
                        },
                        _ => {
                            self.narrator.say("No yes, so I stopped.");
                            self.go(State::Failed, "needs confirmation");
                            break (
                                Status::Failed,
                                format!("needs a yes and none was given: {}", why.join("; ")),
                            );
                        }
                    }
                }
            };
            let act_ms = t_act.elapsed().as_secs_f64() * 1000.0;
            if rails_verdict == "recorded" {
                // Observe mode: nothing moved; record what would have been done and go on.
                self.record_step(
                    &obs,
                    actions_json,
                    "recorded",
                    &Verdict::Unverified,
                    PhaseTimes {
                        capture: cap_ms,
                        ocr: ocr_ms,
                        plan: plan_ms,
                        act: act_ms,
                        ..Default::default()
                    },
                    shot,
                );
                self.transcript
                    .push(format!("step {steps}: {said} (observe mode: not done)"));
                planner.outcome(&Verdict::Unverified);
                continue;
            }
            // Settle, then verify.
            self.go(State::Settle, "acted");
            let (after, settle_ms, changed_since) = self.settle()?;
            let changed = changed_since || after.perception.targets != before;
            self.go(State::Verify, "screen settled");
            let t_verify = Instant::now();
            let mut verdict = if ran {
                verify(&expect, &before, &after.perception.targets, changed)
            } else {
                Verdict::Failed {
                    reason: "an action failed".into(),
                    no_change: !changed,
                }
            };
            if let Verdict::Failed {
                no_change: true, ..
            } = verdict
            {
                // Class "no change": a stale frame is the usual cause — settle and re-capture once.
                let (again, _, c2) = self.settle()?;
                verdict = verify(
                    &expect,
                    &before,
                    &again.perception.targets,
                    c2 || again.perception.targets != before,
                );
            }
            let verify_ms = t_verify.elapsed().as_secs_f64() * 1000.0;
            let vshot = self.save_png(
                &after.frame,
                &after.perception.targets,
                &format!("step-{steps:03}-verify.png"),
            );
            let times = PhaseTimes {
                capture: cap_ms,
                ocr: ocr_ms,
                plan: plan_ms,
                act: act_ms,
                settle: settle_ms,
                verify: verify_ms,
            };
            let mut escaped = false;
            match &verdict {
                Verdict::Verified(why) => {
                    self.narrator.say(&format!("Done: {why}."));
                    no_progress = 0;
                }
                Verdict::Failed { reason, no_change } => {
                    no_progress += 1;
                    self.narrator.say(&format!("That didn't work: {reason}."));
                    // `new` marks only a target's first frame, and settling took several: what
                    // is new is what the screen before the action did not have.
                    let appeared = after
                        .perception
                        .targets
                        .iter()
                        .any(|t| !before.iter().any(|b| b.text == t.text));
                    if !no_change && appeared {
                        self.narrator.say("Something else opened: pressing Escape.");
                        // Class "wrong thing opened": Escape, then look again.
                        escaped = self.escape(&after)?;
                    }
                }
                // Unverified moves no counter.
                Verdict::Unverified => {}
            }
            planner.outcome(&verdict);
            self.transcript.push(format!(
                "step {steps}: {said} → {}{}",
                verdict.name(),
                if escaped { " (pressed Escape)" } else { "" }
            ));
            self.record_step_full(&obs, actions_json, "approved", &verdict, times, shot, vshot);
            let after = if escaped {
                // What Escape left behind, not the menu it closed.
                self.go(State::Settle, "pressed Escape");
                self.settle()?.0
            } else {
                after
            };
            (obs, cap_ms, ocr_ms) = (after, 0.0, 0.0);
            self.go(State::Plan, "verified or retrying");
        };
        self.narrator.say(&summary);
        for w in self.writers.drain(..) {
            let _ = w.join();
        }
        self.recorder.finish(status, &summary)?;
        Ok(self.result(status, summary))
    }

    /// Run an approved batch; `None` when the emergency stop cut it, else whether every step ran.
    fn run_approved(&mut self, a: crate::rails::Approved) -> Option<bool> {
        let outcomes: Vec<Outcome> = self
            .actuator
            .run(a, Duration::from_millis(self.settings.rails.rate_limit_ms))
            .iter()
            .map(|r| r.outcome)
            .collect();
        if outcomes.contains(&Outcome::Stopped) {
            return None;
        }
        Some(outcomes.iter().all(|o| *o == Outcome::Done))
    }

    /// The transcript of what was tried, for a failed task's summary.
    fn tried(&self) -> String {
        self.transcript.join("; ")
    }

    /// Press Escape behind the same rails as any action; whether it ran.
    fn escape(&mut self, obs: &Observation) -> Result<bool> {
        let b = Batch {
            observation_id: Some(obs.id.clone()),
            actions: vec![Action::Key {
                combo: crate::action::parse_combo("escape").map_err(|e| anyhow::anyhow!(e))?,
            }],
            expect: Expect::default(),
        };
        let screen = Screen {
            observation_id: &obs.id,
            latest_id: &obs.id,
            targets: &obs.perception.targets,
            mapping: obs.mapping,
            app: obs.app.as_deref(),
        };
        let mut ran = false;
        if let Ok(c) = rails::check(&b, &screen, &self.settings.rails, &self.settings.stop.combo) {
            if let Decision::Run(a) =
                rails::approve(c, self.settings.rails.mode, &self.settings.rails, false)
            {
                ran = self
                    .actuator
                    .run(a, Duration::ZERO)
                    .iter()
                    .all(|r| r.outcome == Outcome::Done);
            }
        }
        let _ = self.recorder.event(
            "recovery",
            serde_json::json!({"class": "unexpected window or menu", "action": "escape", "ran": ran}),
        );
        Ok(ran)
    }

    fn record_step(
        &mut self,
        obs: &Observation,
        actions: serde_json::Value,
        rails: &str,
        v: &Verdict,
        times: PhaseTimes,
        shot: Option<String>,
    ) {
        self.record_step_full(obs, actions, rails, v, times, shot, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn record_step_full(
        &mut self,
        obs: &Observation,
        actions: serde_json::Value,
        rails: &str,
        v: &Verdict,
        times: PhaseTimes,
        shot: Option<String>,
        vshot: Option<String>,
    ) {
        let detail = match v {
            Verdict::Verified(w) => w.clone(),
            Verdict::Failed { reason, .. } => reason.clone(),
            Verdict::Unverified => String::new(),
        };
        let index = self.recorder.record.steps.len() + 1;
        let click_points = std::mem::take(&mut self.last_points);
        let (picture, focus) = focus_of(obs, &click_points);
        let _ = self.recorder.push_step(StepRecord {
            index,
            observation_id: obs.id.clone(),
            actions,
            rails: rails.into(),
            verification: v.name().into(),
            detail,
            timings_ms: times,
            screenshot: shot,
            verify_screenshot: vshot,
            click_points,
            plan: std::mem::take(&mut self.last_plan),
            picture: Some(picture),
            focus,
        });
    }

    fn result(&self, status: Status, summary: String) -> RunResult {
        RunResult {
            status,
            summary,
            session_dir: self.recorder.dir.clone(),
            transcript: self.transcript.clone(),
        }
    }
}

/// The model picture's size and the part of it a person reviewing the step wants to see: every
/// target and click point, with a margin (`None` when there is nothing on screen).
fn focus_of(obs: &Observation, clicks: &[[f64; 2]]) -> ([f64; 2], Option<[f64; 4]>) {
    let m = &obs.mapping;
    let pic = crate::geometry::Rect::new(0, 0, m.image_w as i32, m.image_h as i32);
    let mut r: Option<crate::geometry::Rect> = None;
    let mut add = |x: crate::geometry::Rect| r = Some(r.map_or(x, |u| u.union(&x)));
    for t in &obs.perception.targets {
        add(m.capture_rect_to_image(&t.rect));
    }
    for p in clicks {
        add(crate::geometry::Rect::new(p[0] as i32, p[1] as i32, 1, 1));
    }
    let focus = r
        .map(|r| r.expand_within(24, &pic))
        .map(|r| [r.x as f64, r.y as f64, r.w as f64, r.h as f64]);
    ([m.image_w as f64, m.image_h as f64], focus)
}
