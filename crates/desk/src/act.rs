//! The act pipeline, one stage per method: stale check and rails (`approved`), the mode and the person's yes (`approve`), actuation through the hands, settling and judging through the eyes (`run_and_verify`, `judge`, `reread`), and the record (`record_step`). Its stages are tested with a fake screen and fake hands (`tests`).

use super::*;

impl Desk {
    pub(crate) fn act(&mut self, batch: &Batch) -> ToolResult {
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
    pub(crate) fn pending(&mut self, obs: Observation, batch: &Batch, plan_ms: f64) -> Pending {
        let mut batch = batch.clone();
        // A scroll is meant to move something: with nothing else expected, one that moved
        // nothing is a failure that says so, never "unverified".
        if batch.expect.is_empty()
            && batch
                .actions
                .iter()
                .any(|a| matches!(a, Action::Scroll { .. }))
        {
            batch.expect.changes = true;
        }
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
    pub(crate) fn approved(&mut self, p: &mut Pending) -> Option<rails::Approved> {
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
            dialogs: p
                .obs
                .perception
                .tree
                .as_ref()
                .map(|t| &t.dialogs[..])
                .unwrap_or(&[]),
            terminal: tree_terminal(&p.obs),
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
    pub(crate) fn run_and_verify(
        &mut self,
        p: &mut Pending,
        approved: rails::Approved,
    ) -> Result<Option<Observation>, String> {
        let shot = self.screenshot(&p.obs, &format!("step-{:03}.png", p.index));
        let t_act = Instant::now();
        let rate = Duration::from_millis(self.settings.rails.rate_limit_ms);
        for r in self.hands.run(approved, rate) {
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
                p.result.changed = changed_since(&p.obs, &after, changed);
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
        let mut after = after;
        self.current_title(&mut after);
        let view = self.view_of(&after);
        self.observed(&view);
        p.result.after = Some(view);
        Ok(Some(after))
    }

    /// Verify the batch's expectation on the settled screen. A miss is looked at once more
    /// before it is reported (nothing changed yet: a stale frame is the usual cause; changed but
    /// not as expected: the app may still be drawing); the screen it was judged on.
    pub(crate) fn judge(
        &mut self,
        p: &mut Pending,
        mut after: Observation,
        all_ran: bool,
    ) -> Observation {
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
                p.result.changed |= changed_since(&p.obs, &again, changed);
                verdict = judge(&again, p.result.changed, &self.typed);
                after = again;
            }
        }
        if let Verdict::Failed {
            reason,
            no_change: true,
        } = &mut verdict
        {
            if p.batch
                .actions
                .iter()
                .any(|a| matches!(a, Action::Scroll { .. }))
            {
                reason.push_str(": the scroll moved nothing (nothing under it scrolls, or it is already at the end)");
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
        // The tree's word, exact, where it has one: a field's value, a box's state.
        if all_ran {
            if let Some(v) = verify::semantic(
                expect,
                &now_typed,
                before,
                &after.perception.targets,
                &verdict,
            ) {
                verdict = v;
            }
        }
        let mut at = typed_at(&now_typed, before, &after.perception.targets);
        let contradicted = |after: &Observation| {
            all_ran
                .then(|| verify::tree_contradicts(&now_typed, before, &after.perception.targets))
                .flatten()
        };
        if all_ran
            && texts
            && matches!(verdict, Verdict::Unconfirmed(_))
            && contradicted(&after).is_none()
        {
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
        // The tree may not have caught up with the typing yet: look once more and let its
        // exact word on the field judge (a letter lost on the way is not an OCR slip).
        if all_ran && verify::tree_lags(&now_typed, before, &after.perception.targets) {
            std::thread::sleep(RECHECK_AFTER);
            if let Ok(mut o) = self.look(false) {
                o.timing = None;
                if let Some(v) =
                    verify::semantic(expect, &now_typed, before, &o.perception.targets, &verdict)
                {
                    verdict = v;
                    after = self.shown(o);
                }
            }
        }
        // The field's own value has the last word over pixels read with slips allowed.
        if let Some(why) = contradicted(&after) {
            verdict = Verdict::Unconfirmed(why);
        }
        self.typed_at.extend(at);
        p.times.verify = ms_since(t);
        p.result.appeared = appeared(before, &after.perception.targets);
        // Only when both lists are known: a list that failed is no proof of a new window.
        if let (Some(w0), Some(w1)) = (&p.obs.windows, &after.windows) {
            p.result.opened = desktop::opened(w0, w1);
        }
        // A menu a page draws has no window of its own; a terminal's new lines are output,
        // typed lines are what was typed, and a scroll moves what was there (new lines in a
        // column are the content coming into view, not a menu).
        let (w, h) = p.obs.frame.size();
        let scrolled = p
            .batch
            .actions
            .iter()
            .all(|a| matches!(a, Action::Scroll { .. } | Action::Wait { .. }));
        if p.result.opened.is_empty()
            && !self.in_terminal(&p.obs)
            && now_typed.is_empty()
            && !scrolled
        {
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
        // A double-click opens something: when all it changed is how the clicked item is drawn
        // (selected), with the same texts on screen and no window opened, nothing opened (the
        // program may have died on start, or still be loading): not "verified".
        let only_changes = expect.changes
            && expect.appears.is_empty()
            && expect.shows.is_empty()
            && expect.disappears.is_empty();
        let opens = p
            .batch
            .actions
            .iter()
            .any(|a| matches!(a, Action::DoubleClick { .. }));
        if only_changes
            && opens
            && matches!(verdict, Verdict::Verified(_))
            && p.result.opened.is_empty()
            && same_texts(before, &after.perception.targets)
        {
            verdict = Verdict::Unconfirmed(
                "only the clicked item's look changed: the same text is on screen and no window \
                 opened (the program may have failed to start, or be still loading): look again \
                 before doing it again"
                    .into(),
            );
        }
        p.result.verdict = verdict;
        after
    }

    /// The targets of `before` and `after` with the changed part of each line (the columns whose
    /// pixels changed, in a band one line high) replaced by that part read as one line; `None`
    /// when nothing, or too much, changed to read it so.
    pub(crate) fn reread(
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
                let text = self.eyes.read_line(&o.frame, r).ok()?;
                tracing::debug!("read where the screen changed, {r:?}: {text:?}");
                targets.retain(|t| !r.contains(t.rect.centre()));
                if !text.is_empty() {
                    targets.push(Target {
                        id: 0,
                        text,
                        rect: r,
                        conf: 0.5,
                        new: false,
                        ax: None,
                    });
                }
            }
        }
        Some((b, a))
    }

    /// Apply the mode and, when needed, the person's yes. `Err(Ok(()))`: observe mode, record
    /// only; `Err(Err(refusal))`: no yes.
    pub(crate) fn approve(
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
    pub(crate) fn screenshot(&mut self, obs: &Observation, name: &str) -> Option<String> {
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
    pub(crate) fn record_step(
        &mut self,
        p: &Pending,
        rails_verdict: RailsVerdict,
        v: &Verdict,
        shot: Option<&str>,
        vshot: Option<&str>,
    ) -> Option<usize> {
        // Only clicks that happened (or, in observe mode or refused, would have): a click cut
        // by a stop, skipped after a failure or failed itself clicked nothing.
        let clicks: Vec<[f64; 2]> = p
            .clicks
            .iter()
            .filter(|(i, _)| {
                p.result.actions.get(*i).is_none_or(|a| {
                    matches!(
                        a.outcome,
                        tool::Outcome::Done | tool::Outcome::WouldRun | tool::Outcome::NotRun
                    )
                })
            })
            .map(|(_, c)| *c)
            .collect();
        let (picture, focus) = focus_of(&p.obs, &clicks);
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
            click_points: clicks,
            plan: p.plan.clone(),
            picture: Some(picture),
            focus,
            tokens: self.step_tokens.take(),
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

/// Where the batch's clicks land, in model-picture pixels (for the report), each with the
/// index of its action.
fn click_points(checked: &Checked, m: &Mapping) -> Vec<(usize, [f64; 2])> {
    checked
        .steps()
        .iter()
        .enumerate()
        .filter_map(|(i, st)| match st {
            Step::Click { at, .. } => m
                .logical_to_capture(*at)
                .ok()
                .map(|c| m.capture_to_image(c))
                .map(|p| (i, [p.x, p.y])),
            _ => None,
        })
        .collect()
}

/// The same texts on screen, each as often (ids and places aside).
fn same_texts(before: &[Target], after: &[Target]) -> bool {
    let texts = |ts: &[Target]| {
        let mut v: Vec<String> = ts.iter().map(|t| t.text.trim().to_lowercase()).collect();
        v.sort();
        v
    };
    texts(before) == texts(after)
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

/// Did the screen change between the observation a batch was planned on and `after`? The frames
/// say it first: byte-identical frames never changed, whatever flickered while settling or however
/// the targets were renumbered (only what the accessibility tree says of a control, a state or a
/// value that changed with no pixel to show it, still counts). Otherwise: a tile changed while
/// settling (`settled_changed`), or the targets differ.
fn changed_since(before: &Observation, after: &Observation, settled_changed: bool) -> bool {
    let ax = |o: &Observation| -> Vec<_> {
        o.perception
            .targets
            .iter()
            .filter_map(|t| {
                t.ax.as_ref()
                    .map(|a| (a.key.clone(), a.states, a.value.clone()))
            })
            .collect()
    };
    if before.frame.image.as_raw() == after.frame.image.as_raw() {
        return ax(before) != ax(after);
    }
    let seen = |o: &Observation| -> Vec<(String, voxdesk_core::geometry::Rect)> {
        o.perception
            .targets
            .iter()
            .map(|t| (t.text.clone(), t.rect))
            .collect()
    };
    settled_changed || seen(before) != seen(after) || ax(before) != ax(after)
}

#[cfg(test)]
mod tests {
    //! Each stage of `act` on a fake screen and fake hands: the stale check and the rails refuse
    //! before anything is sent, the mode and the yes decide whether the hands move, actuation
    //! sends exactly the approved steps, settling and judging read the screen afterwards, and
    //! the record and the events carry the verdict by name.

    use std::collections::VecDeque;
    use std::sync::mpsc;
    use std::sync::Mutex;

    use super::*;
    use voxdesk_core::action::parse_batch;
    use voxdesk_input::actuator::StepReport;
    use voxdesk_perception::Timings;
    use voxdesk_record::events::{Memory, Stamped};
    use voxdesk_record::session::Verification;
    use voxdesk_screen::capture::FocusedWindow;

    /// The fake desktop both fakes share: what the screen shows, what the hands sent, and the
    /// screens each run of the hands brings up in turn.
    #[derive(Default)]
    struct World {
        screen: Vec<Target>,
        changed: bool,
        next: VecDeque<Vec<Target>>,
        sent: Vec<String>,
        tree: Option<voxdesk_core::semantic::Tree>,
        /// Bumped whenever the screen changes: the fake frame's pixels.
        version: u8,
        /// The hands are stopped before this step (the emergency stop during a batch).
        stop_at: Option<usize>,
    }

    type Shared = Arc<Mutex<World>>;

    struct FakeEyes(Shared);

    impl Eyes for FakeEyes {
        fn capture(&mut self) -> Result<Frame, eyes::LookError> {
            // The pixels change when the world does (a frame that did not change is the same).
            let v = self.0.lock().unwrap().version;
            let mut img = image::RgbaImage::new(1280, 720);
            img.put_pixel(0, 0, image::Rgba([v, 0, 0, 255]));
            Ok(Frame::from_image(img))
        }
        fn perceive(
            &mut self,
            _: &Frame,
            full: bool,
            _: Option<&FocusedWindow>,
        ) -> Result<Perception, eyes::LookError> {
            let mut w = self.0.lock().unwrap();
            let changed = std::mem::take(&mut w.changed);
            Ok(Perception {
                width: 1280,
                height: 720,
                targets: w.screen.clone(),
                timings: Timings::default(),
                changed_tiles: usize::from(changed || full),
                total_tiles: 50,
                strips_read: 0,
                full,
                tree: w.tree.clone(),
                no_tree: None,
            })
        }
        fn read_line(&self, _: &Frame, _: Rect) -> Result<String, eyes::LookError> {
            Ok(String::new())
        }
        fn focused(&mut self) -> Option<FocusedWindow> {
            Some(FocusedWindow {
                app: "XCalc".into(),
                title: "Calculator".into(),
                pid: Some(1),
                id: Some(0x40),
                rect: Some((0, 0, 1280, 720)),
            })
        }
        fn windows(&self) -> Option<Vec<Shown>> {
            Some(Vec::new())
        }
    }

    struct FakeHands(Shared);

    impl Hands for FakeHands {
        fn run(&self, batch: rails::Approved, _: Duration) -> mpsc::Receiver<StepReport> {
            let (tx, rx) = mpsc::channel();
            let mut w = self.0.lock().unwrap();
            for (i, s) in batch.steps().iter().enumerate() {
                let stopped = w.stop_at.is_some_and(|at| i >= at);
                if !stopped {
                    w.sent.push(s.to_string());
                }
                let _ = tx.send(StepReport {
                    index: i,
                    outcome: if stopped {
                        Outcome::Stopped
                    } else {
                        Outcome::Done
                    },
                    took: Duration::ZERO,
                });
            }
            if let Some(next) = w.next.pop_front() {
                w.screen = next;
                w.changed = true;
                w.version = w.version.wrapping_add(1);
            }
            rx
        }
        fn rebind(&mut self, _: Arc<StopLatch>) -> Result<(), DeskError> {
            Ok(())
        }
    }

    /// Answers every question the same, and counts them.
    struct FakeConfirm(bool, Arc<Mutex<usize>>);

    impl Confirm for FakeConfirm {
        fn ask(&mut self, _: &Question, _: &StopLatch) -> bool {
            *self.1.lock().unwrap() += 1;
            self.0
        }
    }

    fn target(id: u32, text: &str, x: i32) -> Target {
        Target {
            id,
            text: text.into(),
            rect: Rect::new(x, 100, 60, 20),
            conf: 0.9,
            new: false,
            ax: None,
        }
    }

    struct Rig {
        desk: Desk,
        world: Shared,
        asked: Arc<Mutex<usize>>,
        events: Memory,
        _dir: tempfile::TempDir,
    }

    fn rig(mode: Mode, yes: bool, screen: Vec<Target>, next: Vec<Vec<Target>>) -> Rig {
        let world: Shared = Arc::new(Mutex::new(World {
            screen,
            next: next.into(),
            ..World::default()
        }));
        let mut settings = Settings::default();
        settings.rails.mode = mode;
        settings.rails.rate_limit_ms = 0;
        settings.rails.allow_apps = vec!["XCalc".into()];
        let dir = tempfile::tempdir().unwrap();
        let asked = Arc::new(Mutex::new(0));
        let mut desk = Desk::with_devices(
            &settings,
            Some(RecordSpec {
                root: dir.path().to_path_buf(),
                task: "press 7".into(),
                provider: "test".into(),
                model: "fake".into(),
                decomposition: Vec::new(),
                prompt_version: PROMPT_VERSION.into(),
            }),
            Box::new(FakeConfirm(yes, asked.clone())),
            Arc::new(StopLatch::default()),
            Devices {
                eyes: Box::new(FakeEyes(world.clone())),
                hands: Box::new(FakeHands(world.clone())),
                lines: Lines::memory(),
                keymap: Keymap::us(),
            },
        )
        .unwrap();
        let events = Memory::default();
        desk.subscribe(Box::new(events.clone()));
        Rig {
            desk,
            world,
            asked,
            events,
            _dir: dir,
        }
    }

    impl Rig {
        fn observe(&mut self) -> String {
            match self.desk.call(&ToolCall::Observe) {
                ToolResult::Observation(v) => v.id,
                other => panic!("observe: {other:?}"),
            }
        }
        fn act(&mut self, json: &str) -> ActResult {
            match self.desk.call(&ToolCall::Act(parse_batch(json).unwrap())) {
                ToolResult::Act(r) => *r,
                other => panic!("act: {other:?}"),
            }
        }
        fn sent(&self) -> Vec<String> {
            self.world.lock().unwrap().sent.clone()
        }
        fn steps(&self) -> Vec<Stamped> {
            let all = self.events.0.lock().unwrap().clone();
            all.into_iter()
                .filter(|e| matches!(e.event, Event::Step { .. }))
                .collect()
        }
    }

    fn calculator() -> Vec<Target> {
        vec![target(1, "7", 100), target(2, "8", 200)]
    }

    #[test]
    fn a_yes_in_auto_mode_runs_the_drag_it_was_asked_for() {
        for (yes, status, sent) in [(true, ActStatus::Ran, 1), (false, ActStatus::Declined, 0)] {
            let mut r = rig(
                Mode::Auto,
                yes,
                calculator(),
                vec![vec![target(2, "8", 200)]],
            );
            let id = r.observe();
            let res = r.act(&format!(
                r#"{{"observation_id":"{id}","actions":[{{"action":"drag","from":{{"target":1}},"to":{{"target":2}}}}]}}"#
            ));
            assert_eq!(res.status, status, "{:?}", res.refusal);
            assert_eq!(*r.asked.lock().unwrap(), 1, "the drag is asked about once");
            assert_eq!(r.sent().len(), sent);
        }
    }

    #[test]
    fn a_stale_observation_is_refused_before_anything_is_sent() {
        let mut r = rig(Mode::Auto, true, calculator(), vec![]);
        r.observe();
        let res =
            r.act(r#"{"observation_id":"obs-old","actions":[{"action":"click","target":1}]}"#);
        assert_eq!(res.status, ActStatus::Refused);
        assert_eq!(res.refusal.unwrap().rule, "stale-observation");
        assert!(r.sent().is_empty());
        assert!(res
            .actions
            .iter()
            .all(|a| a.outcome == tool::Outcome::NotRun));
    }

    #[test]
    fn a_rail_refuses_the_whole_batch_and_the_record_names_the_rule() {
        let mut r = rig(Mode::Auto, true, calculator(), vec![]);
        let id = r.observe();
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"click","target":1}},{{"action":"key","combo":"alt+f4"}}]}}"#
        ));
        assert_eq!(res.status, ActStatus::Refused);
        assert!(
            r.sent().is_empty(),
            "the click before it was not sent either"
        );
        let steps = r.steps();
        let Event::Step { rails, verdict, .. } = &steps[0].event else {
            unreachable!()
        };
        assert!(
            matches!(rails, RailsVerdict::Refused(rule) if rule == "forbidden-combo"),
            "{rails:?}"
        );
        assert_eq!(*verdict, Verification::Unverified);
    }

    #[test]
    fn observe_mode_records_and_touches_nothing() {
        let mut r = rig(Mode::Observe, true, calculator(), vec![]);
        let id = r.observe();
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"click","target":1}}]}}"#
        ));
        assert_eq!(res.status, ActStatus::Recorded, "{:?}", res.refusal);
        assert!(r.sent().is_empty());
        assert_eq!(*r.asked.lock().unwrap(), 0);
        assert!(res
            .actions
            .iter()
            .all(|a| a.outcome == tool::Outcome::WouldRun));
    }

    #[test]
    fn confirm_mode_moves_the_hands_only_after_a_yes() {
        let batch = |id: &str| {
            format!(r#"{{"observation_id":"{id}","actions":[{{"action":"click","target":2}}]}}"#)
        };
        let mut no = rig(Mode::Confirm, false, calculator(), vec![]);
        let id = no.observe();
        let res = no.act(&batch(&id));
        assert_eq!(res.status, ActStatus::Declined, "{:?}", res.refusal);
        assert_eq!(*no.asked.lock().unwrap(), 1);
        assert!(no.sent().is_empty());

        let mut yes = rig(Mode::Confirm, true, calculator(), vec![]);
        let id = yes.observe();
        let res = yes.act(&batch(&id));
        assert_eq!(res.status, ActStatus::Ran, "{:?}", res.refusal);
        assert_eq!(*yes.asked.lock().unwrap(), 1);
        assert_eq!(yes.sent().len(), 1, "{:?}", yes.sent());
    }

    #[test]
    fn what_appears_after_the_hands_ran_is_verified_and_recorded_by_name() {
        let mut after = calculator();
        after.push(target(3, "78", 600));
        let mut r = rig(Mode::Auto, true, calculator(), vec![after]);
        let id = r.observe();
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"click","target":1}}],"expect":{{"appears":["78"]}}}}"#
        ));
        assert_eq!(res.status, ActStatus::Ran, "{:?}", res.refusal);
        assert_eq!(
            res.verdict.class(),
            Verification::Verified,
            "{:?}",
            res.verdict
        );
        assert!(res.changed);
        assert_eq!(r.sent().len(), 1, "sent once: {:?}", r.sent());
        let record = r.desk.record().unwrap();
        assert_eq!(record.steps[0].rails, RailsVerdict::Approved);
        assert_eq!(record.steps[0].verification, Verification::Verified);
    }

    #[test]
    fn a_batch_that_changed_nothing_fails_and_is_not_sent_again() {
        let mut r = rig(Mode::Auto, true, calculator(), vec![]);
        let id = r.observe();
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"click","target":1}}],"expect":{{"appears":["78"]}}}}"#
        ));
        assert_eq!(res.status, ActStatus::Ran, "{:?}", res.refusal);
        assert!(!res.changed);
        assert!(
            matches!(
                res.verdict,
                Verdict::Failed {
                    no_change: true,
                    ..
                }
            ),
            "{:?}",
            res.verdict
        );
        assert_eq!(
            r.sent().len(),
            1,
            "the desk itself never repeats: {:?}",
            r.sent()
        );
    }

    #[test]
    fn identical_frames_never_changed_whatever_flickered_or_was_renumbered() {
        let mut r = rig(Mode::Auto, true, calculator(), vec![]);
        let id = r.observe();
        {
            // Something flickered while settling (a tile differed once) and the targets came back
            // renumbered, but the frame after is the frame before, byte for byte.
            let mut w = r.world.lock().unwrap();
            w.changed = true;
            for t in &mut w.screen {
                t.new = !t.new;
            }
        }
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"scroll","direction":"down","amount":3}}],"expect":{{"changes":true}}}}"#
        ));
        assert!(!res.changed, "identical frames are not a change");
        assert!(
            matches!(
                res.verdict,
                Verdict::Failed {
                    no_change: true,
                    ..
                }
            ),
            "{:?}",
            res.verdict
        );
    }

    #[test]
    fn a_scroll_that_moved_nothing_says_so_and_one_that_moved_is_verified() {
        let scroll = r#""actions":[{"action":"scroll","direction":"down","amount":5}]"#;
        let mut r = rig(Mode::Auto, true, calculator(), vec![]);
        let id = r.observe();
        let res = r.act(&format!(r#"{{"observation_id":"{id}",{scroll}}}"#));
        match &res.verdict {
            Verdict::Failed {
                no_change: true,
                reason,
            } => {
                assert!(reason.contains("the scroll moved nothing"), "{reason}")
            }
            v => panic!("{v:?}"),
        }
        let mut r = rig(
            Mode::Auto,
            true,
            calculator(),
            vec![vec![target(3, "9", 300)]],
        );
        let id = r.observe();
        let res = r.act(&format!(r#"{{"observation_id":"{id}",{scroll}}}"#));
        assert_eq!(res.verdict.name(), "verified", "{:?}", res.verdict);
    }

    #[test]
    fn a_click_cut_by_a_stop_is_not_recorded_as_clicked() {
        let mut r = rig(Mode::Auto, true, calculator(), vec![]);
        r.world.lock().unwrap().stop_at = Some(1);
        let id = r.observe();
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"click","target":1}},{{"action":"click","target":2}}]}}"#
        ));
        let outcomes: Vec<_> = res.actions.iter().map(|a| a.outcome).collect();
        assert_eq!(outcomes, [tool::Outcome::Done, tool::Outcome::Stopped]);
        assert_eq!(r.sent().len(), 1);
        let rec = r.desk.record().unwrap();
        let step = rec.steps.last().unwrap();
        assert_eq!(
            step.click_points.len(),
            1,
            "only the click that ran: {:?}",
            step.click_points
        );
        // The one that ran is the first target's (x 100..160 in capture, picture = capture here).
        assert!(
            (100.0..160.0).contains(&step.click_points[0][0]),
            "{:?}",
            step.click_points
        );
    }

    #[test]
    fn a_double_click_that_opened_nothing_is_not_verified() {
        // Only the item's look changed (the frame did, the texts did not), no window: unconfirmed.
        let same = calculator();
        let mut r = rig(Mode::Auto, true, calculator(), vec![same]);
        let id = r.observe();
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"double_click","target":1}}],"expect":{{"changes":true}}}}"#
        ));
        assert_eq!(res.verdict.name(), "unconfirmed", "{:?}", res.verdict);
        // It opened a folder: new texts on screen, verified.
        let mut r = rig(
            Mode::Auto,
            true,
            calculator(),
            vec![vec![target(5, "invoice.pdf", 100)]],
        );
        let id = r.observe();
        let res = r.act(&format!(
            r#"{{"observation_id":"{id}","actions":[{{"action":"double_click","target":1}}],"expect":{{"changes":true}}}}"#
        ));
        assert_eq!(res.verdict.name(), "verified", "{:?}", res.verdict);
    }
}
