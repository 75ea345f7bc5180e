//! The offline planner (`--provider local`), a driver like any model: plain imperative English parsed deterministically into steps, each with the expectation it implies; labels matched against targets, never guessed.
//!
//! Grammar (case-insensitive; steps joined by "then", commas, or "and"):
//! `click L`, `double-click L`, `right-click L`, `type "text"`, `press COMBO`,
//! `scroll up|down|left|right [N] [in L]`, `drag L to L`, `wait for L`, `wait N ms|s`,
//! `open L then L` (open = click). `L` is a label as it appears on screen, quotes optional.

use super::{Driver, Move, What};
use voxdesk_core::action::{parse_combo, Action, Batch, Combo, Direction, Expect, Pos};
use voxdesk_desk::tool::{ActStatus, ObservationView, ToolCall, ToolResult};
use voxdesk_desk::verify::Verdict;
use voxdesk_perception::Target;
use voxdesk_record::events::Event;
use voxdesk_screen::text::label_matches;

/// One step of the task, before it is bound to targets on a screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    Click {
        label: String,
        kind: ClickKind,
    },
    Type {
        text: String,
    },
    Press {
        combo: Combo,
    },
    Scroll {
        direction: Direction,
        amount: u32,
        within: Option<String>,
    },
    Drag {
        from: String,
        to: String,
    },
    WaitFor {
        label: String,
    },
    Wait {
        ms: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClickKind {
    Single,
    Double,
    Right,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("step {step}: I don't understand {text:?} (try: click, double-click, right-click, type \"…\", press ctrl+s, scroll down, drag A to B, wait for X)")]
    Unknown { step: usize, text: String },
    #[error("step {step}: {message}")]
    Bad { step: usize, message: String },
    #[error("the task is empty")]
    Empty,
}

/// Split a task into its steps and parse each.
pub fn parse_task(task: &str) -> Result<Vec<Intent>, PlanError> {
    Ok(parse_task_with_menus(task)?.0)
}

/// [`parse_task`], plus for each step the menu item it should bring up: in "open File then
/// Save As", clicking File should make "Save As" appear (if something else opens, that is the
/// wrong thing, and the loop's Escape-and-look-again handles it).
pub fn parse_task_with_menus(task: &str) -> Result<(Vec<Intent>, Vec<Option<String>>), PlanError> {
    let parts = split_steps(task);
    if parts.is_empty() {
        return Err(PlanError::Empty);
    }
    let mut out = Vec::with_capacity(parts.len());
    let mut item = Vec::with_capacity(parts.len());
    let mut in_menu = false;
    for (i, p) in parts.iter().enumerate() {
        item.push(in_menu);
        // "open File then Save As": after "open", a bare label is the next menu item to click.
        let intent = match parse_step(p, i + 1) {
            Err(PlanError::Unknown { .. }) if in_menu => Intent::Click {
                label: unquote(p),
                kind: ClickKind::Single,
            },
            other => other?,
        };
        in_menu = p.to_lowercase().starts_with("open ")
            || (in_menu && matches!(intent, Intent::Click { .. }));
        out.push(intent);
    }
    // Only the "open" step itself: what later items of a chain bring up (a submenu, a dialog)
    // is not named by the task, and a wrong expectation would make the loop press Escape.
    let opens = (0..out.len())
        .map(|i| match (&out[i], out.get(i + 1)) {
            (Intent::Click { .. }, Some(Intent::Click { label, .. }))
                if item[i + 1] && parts[i].to_lowercase().starts_with("open ") =>
            {
                Some(label.clone())
            }
            _ => None,
        })
        .collect();
    Ok((out, opens))
}

/// Split on "then", "and", commas and semicolons — but never inside quotes.
fn split_steps(task: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let words: Vec<&str> = task.split_inclusive(char::is_whitespace).collect();
    let push = |cur: &mut String, out: &mut Vec<String>| {
        let t = cur
            .trim()
            .trim_end_matches([',', ';', '.'])
            .trim()
            .to_string();
        if !t.is_empty() {
            out.push(t);
        }
        cur.clear();
    };
    for w in words {
        let bare = w.trim().to_lowercase();
        if !quoted && (bare == "then" || bare == "and" || bare == "and then") {
            push(&mut cur, &mut out);
            continue;
        }
        for c in w.chars() {
            if c == '"' || c == '“' || c == '”' {
                quoted = !quoted;
            }
            if !quoted && (c == ',' || c == ';') {
                push(&mut cur, &mut out);
                continue;
            }
            cur.push(c);
        }
    }
    push(&mut cur, &mut out);
    out
}

fn unquote(s: &str) -> String {
    s.trim()
        .trim_matches(|c| c == '"' || c == '“' || c == '”' || c == '\'')
        .trim()
        .to_string()
}

/// A step lower-cased char by char, knowing where each of its bytes came from: a char's lower
/// case may be shorter or longer than it ('K' KELVIN SIGN, 3 bytes, is "k"; 'İ', 2 bytes, is
/// "i̇", 3), so an offset found in the lower case is mapped back before the original is sliced.
struct Lower<'a> {
    orig: &'a str,
    text: String,
    /// For each byte of `text`, and one past its end: where its char starts in `orig`.
    at: Vec<usize>,
}

impl<'a> Lower<'a> {
    fn new(orig: &'a str) -> Lower<'a> {
        let mut text = String::with_capacity(orig.len());
        let mut at = Vec::with_capacity(orig.len() + 1);
        for (i, c) in orig.char_indices() {
            let before = text.len();
            text.extend(c.to_lowercase());
            at.resize(at.len() + (text.len() - before), i);
        }
        at.push(orig.len());
        Lower { orig, text, at }
    }

    /// The original from where byte `from` of the lower case came from.
    fn rest(&self, from: usize) -> &'a str {
        self.between(from, self.text.len())
    }

    /// The original between where bytes `from` and `to` of the lower case came from.
    fn between(&self, from: usize, to: usize) -> &'a str {
        let end = self.text.len();
        let (a, b) = (self.at[from.min(end)], self.at[to.min(end)]);
        &self.orig[a..b.max(a)]
    }
}

fn parse_step(s: &str, step: usize) -> Result<Intent, PlanError> {
    let low = Lower::new(s);
    let lower = low.text.as_str();
    let rest = |prefix: &str| unquote(low.rest(prefix.len()));
    let bad = |m: &str| PlanError::Bad {
        step,
        message: m.to_string(),
    };
    for (prefix, kind) in [
        ("double-click ", ClickKind::Double),
        ("double click ", ClickKind::Double),
        ("right-click ", ClickKind::Right),
        ("right click ", ClickKind::Right),
        ("click on ", ClickKind::Single),
        ("click ", ClickKind::Single),
        ("open ", ClickKind::Single),
        ("select ", ClickKind::Single),
        ("press the ", ClickKind::Single),
    ] {
        if lower.starts_with(prefix) && !(prefix == "press the " && lower.ends_with(" key")) {
            let label = rest(prefix);
            if label.is_empty() {
                return Err(bad("which label?"));
            }
            return Ok(Intent::Click { label, kind });
        }
    }
    if let Some(t) = lower.strip_prefix("type ").map(|_| low.rest(5).trim()) {
        let text = if t.starts_with(['"', '“']) && t.ends_with(['"', '”']) && t.chars().count() >= 2
        {
            let mut c = t.chars();
            c.next();
            c.next_back();
            c.as_str().to_string()
        } else {
            t.to_string()
        };
        if text.is_empty() {
            return Err(bad("type what?"));
        }
        return Ok(Intent::Type { text });
    }
    if lower.starts_with("press ") || lower.starts_with("hit ") {
        let c = s.split_once(' ').map(|x| x.1).unwrap_or("").trim();
        let c = c
            .strip_prefix("the ")
            .or_else(|| c.strip_prefix("The "))
            .unwrap_or(c);
        let c = c.trim_end_matches(" key").trim_end_matches(" Key").trim();
        return parse_combo(c)
            .map(|combo| Intent::Press { combo })
            .map_err(|m| bad(&m));
    }
    if let Some(r) = lower.strip_prefix("scroll ") {
        let mut words = r.split_whitespace();
        let direction = match words.next() {
            Some("up") => Direction::Up,
            Some("down") => Direction::Down,
            Some("left") => Direction::Left,
            Some("right") => Direction::Right,
            other => {
                return Err(bad(&format!(
                    "scroll which way? (up, down, left, right), got {:?}",
                    other.unwrap_or("")
                )))
            }
        };
        let mut amount = 3;
        let mut within = None;
        let tail: Vec<&str> = words.collect();
        let mut i = 0;
        while i < tail.len() {
            if let Ok(n) = tail[i].parse::<u32>() {
                amount = n;
            } else if tail[i] == "in" || tail[i] == "within" {
                // Keep the label's original case from the input.
                let start = lower
                    .find(&format!(" {} ", tail[i]))
                    .map_or(lower.len(), |p| p + tail[i].len() + 2);
                within = Some(unquote(low.rest(start)));
                break;
            }
            i += 1;
        }
        return Ok(Intent::Scroll {
            direction,
            amount: amount.max(1),
            within,
        });
    }
    if let Some(body) = lower.strip_prefix("drag ") {
        let Some(p) = body.rfind(" to ").map(|p| p + 5) else {
            return Err(bad("drag what to where? (drag A to B)"));
        };
        let (from, to) = (unquote(low.between(5, p)), unquote(low.rest(p + 4)));
        if from.is_empty() || to.is_empty() {
            return Err(bad("drag what to where? (drag A to B)"));
        }
        return Ok(Intent::Drag { from, to });
    }
    if lower.starts_with("wait for ") {
        let label = rest("wait for ");
        return Ok(Intent::WaitFor { label });
    }
    if let Some(r) = lower.strip_prefix("wait ") {
        let r = r.trim();
        let (num, unit) = r.split_at(
            r.find(|c: char| !c.is_ascii_digit() && c != '.')
                .unwrap_or(r.len()),
        );
        let n: f64 = num
            .parse()
            .map_err(|_| bad(&format!("wait how long? got {r:?}")))?;
        let ms = match unit.trim() {
            "ms" | "milliseconds" => n,
            "s" | "sec" | "secs" | "second" | "seconds" | "" => n * 1000.0,
            other => return Err(bad(&format!("unknown unit {other:?}"))),
        };
        return Ok(Intent::Wait {
            ms: ms.round() as u64,
        });
    }
    Err(PlanError::Unknown {
        step,
        text: s.to_string(),
    })
}

/// Why a label could not be bound.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BindError {
    #[error("{label:?} is not on screen")]
    Missing { label: String },
    #[error("{label:?} is ambiguous: {} targets match ({})", ids.len(), ids.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(", "))]
    Ambiguous { label: String, ids: Vec<u32> },
}

/// The one target whose text matches `label`.
pub fn find(label: &str, targets: &[Target]) -> Result<u32, BindError> {
    // Exact text (any case) first: on a calculator "8" and "B" are different keys even though
    // OCR may confuse them; the slip-tolerant match is the fallback.
    let exact: Vec<u32> = targets
        .iter()
        .filter(|t| t.text.trim().eq_ignore_ascii_case(label.trim()))
        .map(|t| t.id)
        .collect();
    let ids = if exact.is_empty() {
        targets
            .iter()
            .filter(|t| label_matches(label, &t.text))
            .map(|t| t.id)
            .collect()
    } else {
        exact
    };
    // Several with those words, one of them a control the application's tree names: that is
    // what a person means; the same words OCR alone read elsewhere (the window's title bar, a
    // heading) are not a control.
    let controls: Vec<u32> = ids
        .iter()
        .copied()
        .filter(|id| targets.iter().any(|t| t.id == *id && t.ax.is_some()))
        .collect();
    if let ([_, _, ..], [control]) = (ids.as_slice(), controls.as_slice()) {
        return Ok(*control);
    }
    match ids.as_slice() {
        [] => Err(BindError::Missing {
            label: label.into(),
        }),
        [one] => Ok(*one),
        _ => Err(BindError::Ambiguous {
            label: label.into(),
            ids,
        }),
    }
}

/// Bind an intent to the current targets: the action(s) to run and what they should cause.
/// `WaitFor` binds to a bare expectation (nothing to press).
pub fn bind(intent: &Intent, targets: &[Target]) -> Result<(Vec<Action>, Expect), BindError> {
    Ok(match intent {
        Intent::Click { label, kind } => {
            let at = Pos::Target(find(label, targets)?);
            let a = match kind {
                ClickKind::Single => Action::Click { at },
                ClickKind::Double => Action::DoubleClick { at },
                ClickKind::Right => Action::RightClick { at },
            };
            (
                vec![a],
                Expect {
                    changes: true,
                    ..Default::default()
                },
            )
        }
        Intent::Type { text } => (
            vec![Action::Type { text: text.clone() }],
            Expect {
                appears: vec![text.clone()],
                changes: true,
                ..Default::default()
            },
        ),
        Intent::Press { combo } => (
            vec![Action::Key {
                combo: combo.clone(),
            }],
            Expect {
                changes: true,
                ..Default::default()
            },
        ),
        Intent::Scroll {
            direction,
            amount,
            within,
        } => {
            let at = match within {
                Some(l) => Some(Pos::Target(find(l, targets)?)),
                None => None,
            };
            (
                vec![Action::Scroll {
                    direction: *direction,
                    amount: *amount,
                    at,
                }],
                Expect {
                    changes: true,
                    ..Default::default()
                },
            )
        }
        Intent::Drag { from, to } => {
            let f = find(from, targets)?;
            let t = find(to, targets)?;
            (
                vec![Action::Drag {
                    from: Pos::Target(f),
                    to: Pos::Target(t),
                }],
                Expect {
                    disappears: vec![from.clone()],
                    changes: true,
                    ..Default::default()
                },
            )
        }
        // On screen, whether or not it was before — but not inside text the session typed
        // (the command that echoes what it waits for).
        Intent::WaitFor { label } => (
            vec![Action::Wait { ms: 500 }],
            Expect {
                shows: vec![label.clone()],
                ..Default::default()
            },
        ),
        Intent::Wait { ms } => (vec![Action::Wait { ms: *ms }], Expect::default()),
    })
}

/// The offline planner as a driver: one parsed step at a time, moving on when the step verifies
/// (or cannot be verified), narrating each plan and each result.
pub struct LocalPlanner {
    intents: Vec<Intent>,
    /// Per step: the menu item it should bring up (see [`parse_task_with_menus`]).
    opens: Vec<Option<String>>,
    next: usize,
    /// The step last sent, in words, for what is said when it cannot be confirmed.
    last_plan: String,
    /// Scrolls made looking for the current step's label, and the label while the last of them
    /// is unanswered.
    searched: usize,
    searching: Option<String>,
    /// The step `searched` counts for.
    search_step: usize,
}

/// How often a label not on screen is looked for further down the focused window, and by how
/// many wheel clicks each time: less than a window's height in the toolkits measured (Chromium
/// moves 5 clicks a little more than a 600-pixel window, so what sat at its bottom edge, cut
/// and unread, would be skipped).
const SEARCH_SCROLLS: usize = 6;
const SEARCH_CLICKS: u32 = 3;

impl LocalPlanner {
    pub fn new(task: &str) -> Result<LocalPlanner, PlanError> {
        let (intents, opens) = parse_task_with_menus(task)?;
        Ok(LocalPlanner {
            intents,
            opens,
            next: 0,
            last_plan: String::new(),
            searched: 0,
            searching: None,
            search_step: 0,
        })
    }

    /// Say `plan` and send `actions` against observation `o`.
    fn act(
        &mut self,
        o: &ObservationView,
        mut say: Vec<String>,
        plan: String,
        actions: Vec<Action>,
        expect: Expect,
    ) -> Move {
        say.push(format!("{plan}."));
        self.last_plan = plan.clone();
        Move {
            say,
            plan,
            what: What::Call(ToolCall::Act(Batch {
                observation_id: Some(o.id.clone()),
                actions,
                expect,
            })),
        }
    }

    /// Bind the next step to the targets of `o`.
    fn plan_on(&mut self, o: &ObservationView, mut say: Vec<String>) -> Move {
        if self.search_step != self.next {
            self.search_step = self.next;
            self.searched = 0;
        }
        let Some(intent) = self.intents.get(self.next) else {
            let n = self.intents.len();
            return Move {
                say,
                plan: String::new(),
                what: What::Call(ToolCall::Done {
                    success: true,
                    summary: format!("done: {n} step{}", if n == 1 { "" } else { "s" }),
                }),
            };
        };
        match bind(intent, &o.capture_targets) {
            Ok((actions, mut expect)) => {
                if let Some(item) = &self.opens[self.next] {
                    expect.appears.push(item.clone());
                }
                let plan = describe(intent, &actions, &o.capture_targets);
                self.act(o, say, plan, actions, expect)
            }
            // A label not on screen may be further down (a long page, a list): scroll the
            // focused window's content and look again, a few times, until a scroll moves
            // nothing. Scrolling presses nothing and types nothing.
            Err(BindError::Missing { label })
                if self.searched < SEARCH_SCROLLS
                    && matches!(intent, Intent::Click { .. } | Intent::Drag { .. }) =>
            {
                self.searched += 1;
                let plan = format!("Scrolling down to look for {label}");
                self.searching = Some(label);
                let scroll = Action::Scroll {
                    direction: Direction::Down,
                    amount: SEARCH_CLICKS,
                    at: None,
                };
                let changes = Expect {
                    changes: true,
                    ..Default::default()
                };
                self.act(o, say, plan, vec![scroll], changes)
            }
            Err(e) => {
                say.push(format!("I can't find it: {e}."));
                Move {
                    say,
                    plan: String::new(),
                    what: What::Stuck(e.to_string()),
                }
            }
        }
    }
}

/// "Clicking 7" / "Typing \"hello\"" — what is about to happen, for narration.
fn describe(intent: &Intent, actions: &[Action], targets: &[Target]) -> String {
    let label = |at: &Pos| match at {
        Pos::Target(id) => targets
            .iter()
            .find(|t| t.id == *id)
            // A menu item's ellipsis is not said ("Clicking Save As.", not "Save As....").
            .map(|t| match t.text.trim_end_matches(['.', '…']).trim_end() {
                "" => t.text.clone(),
                said => said.to_string(),
            })
            .unwrap_or_default(),
        Pos::Point { x, y } => format!("({x:.0}, {y:.0})"),
    };
    match (intent, actions.first()) {
        (_, Some(Action::Click { at })) => format!("Clicking {}", label(at)),
        (_, Some(Action::DoubleClick { at })) => format!("Double-clicking {}", label(at)),
        (_, Some(Action::RightClick { at })) => format!("Right-clicking {}", label(at)),
        (Intent::Type { text }, _) => format!("Typing {text:?}"),
        (Intent::Press { combo }, _) => format!("Pressing {combo}"),
        (Intent::Scroll { direction, .. }, _) => {
            format!("Scrolling {}", format!("{direction:?}").to_lowercase())
        }
        (Intent::Drag { from, to }, _) => format!("Dragging {from} to {to}"),
        (Intent::WaitFor { label }, _) => format!("Waiting for {label}"),
        (Intent::Wait { ms }, _) => format!("Waiting {ms} ms"),
        _ => "Acting".into(),
    }
}

fn give_up(say: Vec<String>, summary: String) -> Move {
    Move {
        say,
        plan: String::new(),
        what: What::Call(ToolCall::Done {
            success: false,
            summary,
        }),
    }
}

impl Driver for LocalPlanner {
    fn provider(&self) -> &str {
        "local"
    }
    fn model(&self) -> &str {
        "offline-planner"
    }
    fn decomposition(&self) -> Vec<String> {
        self.intents.iter().map(|i| format!("{i:?}")).collect()
    }
    fn next(&mut self, last: &ToolResult, _: &mut dyn FnMut(Event)) -> Move {
        let observe = |say| Move {
            say,
            plan: String::new(),
            what: What::Call(ToolCall::Observe),
        };
        let a = match last {
            ToolResult::Observation(o) => return self.plan_on(o, Vec::new()),
            ToolResult::Act(a) => a,
            // A failed look: look again (the policy counts it against progress).
            ToolResult::Error { .. } => return observe(Vec::new()),
            ToolResult::Ended { status, summary } => {
                return give_up(
                    Vec::new(),
                    format!("the session already ended ({status:?}): {summary}"),
                )
            }
        };
        let mut say = Vec::new();
        match a.status {
            // Nothing else can be tried: this planner has one way to do each step.
            ActStatus::Refused | ActStatus::Stopped => {
                let r = a.refusal.as_ref();
                return give_up(
                    say,
                    r.map(|r| format!("refused by rule `{}`: {}", r.rule, r.message))
                        .unwrap_or_else(|| "refused".into()),
                );
            }
            ActStatus::Declined => {
                let why = a
                    .refusal
                    .as_ref()
                    .map(|r| r.message.clone())
                    .unwrap_or_default();
                return give_up(say, why);
            }
            ActStatus::Recorded if self.searching.is_some() => self.searching = None,
            ActStatus::Recorded => self.next += 1,
            // A scroll made to look for the step's label: look at what it brought into view,
            // unless it moved nothing (the end of the content, or nothing there scrolls).
            ActStatus::Ran | ActStatus::Failed if self.searching.is_some() => {
                let label = self.searching.take().unwrap_or_default();
                if let Verdict::Failed { .. } = &a.verdict {
                    return give_up(
                        say,
                        format!("{label:?} is not on screen, and scrolling down brought nothing more into view"),
                    );
                }
            }
            ActStatus::Ran | ActStatus::Failed => {
                let waiting = matches!(self.intents.get(self.next), Some(Intent::WaitFor { .. }));
                let plan = &self.last_plan;
                match &a.verdict {
                    Verdict::Verified(why) => {
                        say.push(format!("Done: {why}."));
                        self.next += 1;
                    }
                    Verdict::Unverified => self.next += 1,
                    // Waiting again is always safe; the policy bounds how often.
                    Verdict::Failed { reason, .. } | Verdict::Unconfirmed(reason) if waiting => {
                        say.push(format!("Not yet: {reason}."))
                    }
                    // Nothing changed and doing it again cannot do it twice: try once more.
                    Verdict::Failed {
                        reason,
                        no_change: true,
                    } if a.repeatable => say.push(format!("That didn't work: {reason}.")),
                    // Nothing on screen changed: keys may still have reached a program that
                    // shows nothing (a terminal with echo off, a password prompt), so say what
                    // was seen, not that it had no effect.
                    Verdict::Failed {
                        reason,
                        no_change: true,
                    } => {
                        return give_up(
                            say,
                            format!("{plan} was done, but nothing on screen showed it ({reason}), so I cannot tell whether it took effect; I am not repeating it, because doing it twice could do it twice"),
                        );
                    }
                    Verdict::Failed { reason, .. } => {
                        return give_up(
                            say,
                            format!("{plan} did not take effect ({reason}); I am not repeating it, because doing it twice could do it twice"),
                        )
                    }
                    Verdict::Unconfirmed(reason) => {
                        let opened = if a.opened.is_empty() {
                            String::new()
                        } else {
                            format!("; something else opened ({})", a.opened.join(", "))
                        };
                        return give_up(
                            say,
                            format!("{plan} was done, but I could not confirm it ({reason}{opened}); I am stopping rather than repeating it"),
                        );
                    }
                }
            }
        }
        match &a.after {
            Some(o) => self.plan_on(o, say),
            None => observe(say),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxdesk_core::geometry::Rect;

    fn c(label: &str) -> Intent {
        Intent::Click {
            label: label.into(),
            kind: ClickKind::Single,
        }
    }

    #[test]
    fn a_menu_item_s_ellipsis_is_not_said() {
        let at = |id, text: &str| Target {
            id,
            text: text.into(),
            rect: Rect::new(0, 0, 40, 12),
            conf: 0.9,
            new: false,
            ax: None,
        };
        let ts = [
            at(1, "Save As..."),
            at(2, "Rename…"),
            at(3, "..."),
            at(4, "7"),
        ];
        let said = |id| {
            let click = [Action::Click {
                at: Pos::Target(id),
            }];
            describe(&c("x"), &click, &ts)
        };
        assert_eq!(said(1), "Clicking Save As");
        assert_eq!(said(2), "Clicking Rename");
        assert_eq!(said(3), "Clicking ...");
        assert_eq!(said(4), "Clicking 7");
    }

    #[test]
    fn a_control_the_tree_names_beats_the_same_words_read_elsewhere() {
        let at = |id, text: &str, control: bool| Target {
            id,
            text: text.into(),
            rect: Rect::new(0, id as i32 * 20, 40, 12),
            conf: 0.9,
            new: false,
            ax: control.then(|| voxdesk_perception::fuse::Ax {
                key: format!(":1.2/{id}"),
                role: voxdesk_core::semantic::Role::ENTRY,
                states: Default::default(),
                value: None,
                drawn: true,
            }),
        };
        // The window's title bar says "Message" too (OCR alone); the field is named by its label.
        assert_eq!(
            find(
                "Message",
                &[at(4, "Message", false), at(3, "Message", true)]
            ),
            Ok(3)
        );
        assert!(matches!(
            find("Message", &[at(4, "Message", true), at(3, "Message", true)]),
            Err(BindError::Ambiguous { .. })
        ));
        assert!(matches!(
            find(
                "Message",
                &[at(4, "Message", false), at(3, "Message", false)]
            ),
            Err(BindError::Ambiguous { .. })
        ));
    }

    #[test]
    fn opening_a_menu_expects_its_item() {
        let (_, opens) = parse_task_with_menus("open File then Save As, click OK").unwrap();
        assert_eq!(opens, vec![Some("Save As".to_string()), None, None]);
        let (_, opens) = parse_task_with_menus("open Edit then click Preferences").unwrap();
        assert_eq!(opens, vec![Some("Preferences".to_string()), None]);
        let (_, opens) = parse_task_with_menus("open View then Zoom then 200%").unwrap();
        assert_eq!(opens, vec![Some("Zoom".to_string()), None, None]);
        // Plain clicks in a row expect nothing of each other.
        let (_, opens) = parse_task_with_menus("click 7, click +").unwrap();
        assert_eq!(opens, vec![None, None]);
    }

    #[test]
    fn table_of_tasks() {
        let cases: Vec<(&str, Vec<Intent>)> = vec![
            ("click Save", vec![c("Save")]),
            (
                "click 7, click +, click 5, click =",
                vec![c("7"), c("+"), c("5"), c("=")],
            ),
            (
                "double-click Downloads",
                vec![Intent::Click {
                    label: "Downloads".into(),
                    kind: ClickKind::Double,
                }],
            ),
            (
                "right-click invoice.pdf",
                vec![Intent::Click {
                    label: "invoice.pdf".into(),
                    kind: ClickKind::Right,
                }],
            ),
            (
                "type \"hello, world and then some\"",
                vec![Intent::Type {
                    text: "hello, world and then some".into(),
                }],
            ),
            (
                "type hello then press ctrl+s",
                vec![
                    Intent::Type {
                        text: "hello".into(),
                    },
                    Intent::Press {
                        combo: parse_combo("ctrl+s").unwrap(),
                    },
                ],
            ),
            (
                "scroll down in Files",
                vec![Intent::Scroll {
                    direction: Direction::Down,
                    amount: 3,
                    within: Some("Files".into()),
                }],
            ),
            (
                "scroll up 10",
                vec![Intent::Scroll {
                    direction: Direction::Up,
                    amount: 10,
                    within: None,
                }],
            ),
            (
                "drag a.txt to Trash",
                vec![Intent::Drag {
                    from: "a.txt".into(),
                    to: "Trash".into(),
                }],
            ),
            (
                "wait for Done",
                vec![Intent::WaitFor {
                    label: "Done".into(),
                }],
            ),
            (
                "wait 2 s and press Return",
                vec![
                    Intent::Wait { ms: 2000 },
                    Intent::Press {
                        combo: parse_combo("enter").unwrap(),
                    },
                ],
            ),
            ("open File then Save As", vec![c("File"), c("Save As")]),
            (
                "Click \"Save As\" and press the Escape key",
                vec![
                    c("Save As"),
                    Intent::Press {
                        combo: parse_combo("escape").unwrap(),
                    },
                ],
            ),
        ];
        for (task, want) in cases {
            assert_eq!(parse_task(task).unwrap(), want, "{task}");
        }
    }

    #[test]
    fn errors_name_the_step() {
        assert_eq!(parse_task("  ").unwrap_err(), PlanError::Empty);
        assert!(matches!(
            parse_task("click Save then dance").unwrap_err(),
            PlanError::Unknown { step: 2, .. }
        ));
        assert!(parse_task("press ctrl+hyper")
            .unwrap_err()
            .to_string()
            .starts_with("step 1:"));
        assert!(parse_task("scroll sideways")
            .unwrap_err()
            .to_string()
            .contains("scroll which way"));
        assert!(parse_task("drag a.txt")
            .unwrap_err()
            .to_string()
            .contains("drag A to B"));
    }

    #[test]
    fn labels_bind_with_ocr_slips_and_never_guess() {
        let t = |id, text: &str| Target {
            id,
            text: text.into(),
            rect: Rect::new(0, 0, 10, 10),
            conf: 0.9,
            new: false,
            ax: None,
        };
        let ts = vec![
            t(1, "Save"),
            t(2, "0K"),
            t(3, "Fi1e"),
            t(4, "Open"),
            t(5, "Open"),
            t(6, "invoice.pdf"),
        ];
        assert_eq!(find("save", &ts), Ok(1));
        assert_eq!(find("OK", &ts), Ok(2));
        assert_eq!(find("File", &ts), Ok(3));
        assert_eq!(
            find("Open", &ts),
            Err(BindError::Ambiguous {
                label: "Open".into(),
                ids: vec![4, 5]
            })
        );
        assert_eq!(
            find("Close", &ts),
            Err(BindError::Missing {
                label: "Close".into()
            })
        );
        assert_eq!(
            find("Sav", &ts),
            Err(BindError::Missing {
                label: "Sav".into()
            }),
            "a prefix is not a match"
        );
        let (a, e) = bind(&Intent::Type { text: "hi".into() }, &ts).unwrap();
        assert_eq!(a, vec![Action::Type { text: "hi".into() }]);
        assert_eq!(e.appears, vec!["hi".to_string()]);
        assert!(bind(&c("Close"), &ts).is_err());
    }

    #[test]
    fn a_kelvin_sign_in_the_task_is_not_a_char_boundary_panic() {
        // 'K' (U+212A, 3 bytes) lower-cases to "k" (1 byte): "clicK Save" matched "click " in
        // the lower case, and the original was sliced at byte 6, inside the sign.
        assert_eq!(parse_task("clic\u{212A} Save").unwrap(), vec![c("Save")]);
        assert_eq!(
            parse_task("double-clic\u{212A} \u{212A}elvin").unwrap(),
            vec![Intent::Click {
                label: "\u{212A}elvin".into(),
                kind: ClickKind::Double
            }]
        );
        // Before the fix: no panic, but the wrong labels ("K", "o Trash").
        assert_eq!(
            parse_task("drag \u{212A}ey to Trash").unwrap(),
            vec![Intent::Drag {
                from: "\u{212A}ey".into(),
                to: "Trash".into()
            }]
        );
        assert!(LocalPlanner::new("clic\u{212A} Save").is_ok());
    }

    #[test]
    fn a_dotted_capital_i_in_a_scroll_is_not_a_char_boundary_panic() {
        // 'İ' (2 bytes) lower-cases to "i̇" (3 bytes): the label after " in " was cut from the
        // original at an offset found in the lower case, a byte late per 'İ'.
        assert_eq!(
            parse_task("scroll down İ in Ωmega").unwrap(),
            vec![Intent::Scroll {
                direction: Direction::Down,
                amount: 3,
                within: Some("Ωmega".into()),
            }]
        );
        assert_eq!(
            parse_task("scroll down İİİ in Files").unwrap(),
            vec![Intent::Scroll {
                direction: Direction::Down,
                amount: 3,
                within: Some("Files".into()),
            }]
        );
        assert_eq!(
            parse_task("type İstanbul").unwrap(),
            vec![Intent::Type {
                text: "İstanbul".into()
            }]
        );
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    /// Text biased to the chars whose lower case is another length, combining marks, emoji,
    /// right-to-left script, quotes and the step separators.
    fn tricky() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            4 => prop::sample::select(vec![
                '\u{212A}', 'K', 'k', 'İ', 'ı', 'ß', 'ẞ', 'Σ', 'ς', 'ǅ', 'ﬀ', '\u{301}', '\u{308}',
                '😀', '👩', '\u{200D}', '\u{FE0F}', 'א', 'ש', '\u{202E}', '\u{200F}', '"', '“', '”',
                '\'', ',', ';', '.', ' ', '\t', '\n', '+', '0', '9', 'e', 's',
            ]),
            1 => any::<char>(),
        ];
        let word = prop_oneof![
            3 => prop::collection::vec(ch, 0..8).prop_map(|v| v.into_iter().collect::<String>()),
            2 => prop::sample::select(vec![
                "click", "clic\u{212A}", "CLICK", "double-click", "right-clic\u{212A}", "open",
                "select", "press", "the", "key", "type", "scroll", "down", "in", "within",
                "drag", "to", "wait", "for", "ms", "s", "then", "and", "1e30", "99999999999999999999",
                "İn", "\u{212A}ey", "ctrl+s",
            ])
            .prop_map(String::from),
        ];
        prop::collection::vec(word, 0..10).prop_map(|w| w.join(" "))
    }

    /// A label of one word: letters of any length in lower case, marks, emoji, RTL.
    fn label() -> impl Strategy<Value = String> {
        "[a-zA-Z\u{212A}\u{130}\u{df}\u{3a3}\u{301}\u{5d0}-\u{5ea}\u{1F600}]{1,10}"
            .prop_filter("a separator word", |l| {
                !matches!(l.to_lowercase().as_str(), "then" | "and")
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_task_is_steps_or_an_error_never_a_panic(task in tricky()) {
            match parse_task_with_menus(&task) {
                Ok((steps, opens)) => {
                    prop_assert!(!steps.is_empty());
                    prop_assert_eq!(steps.len(), opens.len());
                    prop_assert!(LocalPlanner::new(&task).is_ok());
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }

        #[test]
        fn any_unicode_task_is_never_a_panic(task in ".{0,60}") {
            let _ = parse_task(&task);
        }

        #[test]
        fn a_label_is_taken_as_written_whatever_its_letters(
            verb in prop::sample::select(vec!["click ", "CLICK ", "clic\u{212A} ", "Click on "]),
            l in label(),
            to in label(),
        ) {
            prop_assert_eq!(parse_task(&format!("{verb}{l}")).unwrap(), vec![Intent::Click {
                label: l.clone(),
                kind: ClickKind::Single,
            }]);
            prop_assert_eq!(
                parse_task(&format!("drag {l} to {to}")).unwrap(),
                vec![Intent::Drag { from: l.clone(), to: to.clone() }]
            );
            prop_assert_eq!(
                parse_task(&format!("scroll up in {l}")).unwrap(),
                vec![Intent::Scroll { direction: Direction::Up, amount: 3, within: Some(l.clone()) }]
            );
        }
    }
}
