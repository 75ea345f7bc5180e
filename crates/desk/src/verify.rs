//! Verification after an act, a pure function of the expectation, the targets before and after and whether any tile changed: verified, failed (nothing changed), unconfirmed (it ran, the screen changed, the expectation was not seen) or unverified; and whether a batch may safely run again.
//!
//! Text is found the way a person reads it ([`voxdesk_screen::text`]): in lines across
//! neighbouring targets, slips tolerated. "Appears" means *more of it than before*, so the same
//! text elsewhere on screen before the batch (a label, the command that echoes it) never counts
//! as the batch's effect; "shows" means on screen afterwards, not counting text the session
//! typed itself.

use voxdesk_core::action::{Action, Batch, Expect, Pos};
use voxdesk_core::geometry::Rect;
use voxdesk_perception::tiles::same_place;
use voxdesk_perception::Target;
use voxdesk_record::session::Verification;
use voxdesk_screen::text::{label_matches, located, occurrences, runs, Run};

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Everything the expectation named is true.
    Verified(String),
    /// The batch did not take effect: the screen did not change at all (`no_change`), or an
    /// action failed. The only class in which a repeatable batch may be tried again.
    Failed { reason: String, no_change: bool },
    /// The batch ran and the screen changed, but what it named was not seen, even on a second
    /// look: done, not confirmed. Never a reason to repeat it blindly.
    Unconfirmed(String),
    /// Nothing to check: verification off or an empty expectation. Moves no counter.
    Unverified,
}

impl Verdict {
    /// The verdict's class, as records and events carry it.
    pub fn class(&self) -> Verification {
        match self {
            Verdict::Verified(_) => Verification::Verified,
            Verdict::Failed { .. } => Verification::Failed,
            Verdict::Unconfirmed(_) => Verification::Unconfirmed,
            Verdict::Unverified => Verification::Unverified,
        }
    }

    pub fn name(&self) -> &'static str {
        self.class().name()
    }

    /// What was seen: why it verified or why it did not.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Verdict::Verified(w) | Verdict::Unconfirmed(w) => Some(w),
            Verdict::Failed { reason, .. } => Some(reason),
            Verdict::Unverified => None,
        }
    }

    /// Not verified when something was expected: failed or unconfirmed.
    pub fn is_miss(&self) -> bool {
        matches!(self, Verdict::Failed { .. } | Verdict::Unconfirmed(_))
    }
}

/// What a batch is judged on.
pub struct Evidence<'a> {
    pub before: &'a [Target],
    pub after: &'a [Target],
    /// Any perception tile differed between the frames before and after.
    pub changed: bool,
    /// Every text the session has typed so far (this batch's too).
    pub typed: &'a [String],
    /// Where the session's earlier typing was read right after it was typed ([`typed_at`]):
    /// the same text there is still that typing, in its field, not the app's own.
    pub typed_at: &'a [Rect],
}

/// Judge `expect` against the screen after the act.
pub fn verify(expect: &Expect, ev: &Evidence) -> Verdict {
    if expect.is_empty() {
        return Verdict::Unverified;
    }
    let (before, after) = (runs(ev.before), runs(ev.after));
    let count = |text: &str, rs: &[Run]| occurrences(text, rs, &[]).len();
    let miss = |reason: String| {
        if ev.changed {
            Verdict::Unconfirmed(reason)
        } else {
            Verdict::Failed {
                reason,
                no_change: true,
            }
        }
    };
    let mut ok = Vec::new();
    // Text of several lines is looked for line by line: each of its lines must appear.
    let lines: Vec<String> = expect
        .appears
        .iter()
        .flat_map(|a| {
            let parts: Vec<&str> = a.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            if parts.len() > 1 {
                parts.into_iter().map(String::from).collect()
            } else {
                vec![a.clone()]
            }
        })
        .collect();
    // A line expected twice ("ok\nok") must appear twice.
    let mut wanted: Vec<(&String, usize)> = Vec::new();
    for l in &lines {
        match wanted.iter_mut().find(|(w, _)| *w == l) {
            Some((_, n)) => *n += 1,
            None => wanted.push((l, 1)),
        }
    }
    // A target reading exactly the text, more of them than before, is the text appearing,
    // however OCR joined the lines around it (the result's `appeared` lists it: never call
    // absent what the same result says appeared).
    let exact = |text: &str, ts: &[Target]| {
        let want = norm(text);
        ts.iter().filter(|t| norm(&t.text) == want).count()
    };
    for (a, times) in wanted {
        let (n0, hits) = (count(a, &before), occurrences(a, &after, &[]));
        if hits.len() >= n0 + times {
            ok.push(format!("{a:?} appeared{}", place(&hits, a)));
            continue;
        }
        if exact(a, ev.after) >= exact(a, ev.before) + times {
            ok.push(format!("{a:?} appeared"));
            continue;
        }
        return miss(match (n0, hits.len()) {
            (0, _) => format!("{a:?} did not appear"),
            (_, 0) => format!("{a:?} was on screen before and is gone now"),
            _ => format!("{a:?} was already on screen and no more of it appeared"),
        });
    }
    for s in &expect.shows {
        let hits: Vec<String> = located(s, &after, ev.typed)
            .into_iter()
            // Half of the smaller box shared and the middles on one row: a line read with a
            // margin may touch the line typed above it without being it, and the typed line
            // read while the row under it was empty may have taken that row into its margin.
            .filter(|(_, at)| !ev.typed_at.iter().any(|t| same_line(t, at)))
            .map(|(read, _)| read)
            .collect();
        if !hits.is_empty() {
            ok.push(format!("{s:?} is on screen{}", place(&hits, s)));
            continue;
        }
        return miss(if count(s, &after) > 0 {
            format!("{s:?} is on screen only inside text typed by this session")
        } else {
            format!("{s:?} is not on screen")
        });
    }
    for d in &expect.disappears {
        let (n0, n1) = (count(d, &before), count(d, &after));
        // Gone, or fewer of it — but text never seen, on a screen that did not change, did
        // not disappear because of this batch.
        if (n1 == 0 && (n0 > 0 || ev.changed)) || n1 < n0 {
            ok.push(format!("{d:?} disappeared"));
            continue;
        }
        return miss(format!("{d:?} is still on screen"));
    }
    if expect.changes && !ev.changed {
        return Verdict::Failed {
            reason: "the screen did not change".into(),
            no_change: true,
        };
    }
    if ok.is_empty() {
        ok.push("the screen changed".into());
    }
    Verdict::Verified(ok.join(", "))
}

/// A field's value as the tree reads it, by accessible object.
/// Text as compared whole: words separated by one space, lower case.
fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn values(targets: &[Target]) -> Vec<(&str, &Target, &str)> {
    targets
        .iter()
        .filter_map(|t| {
            let a = t.ax.as_ref()?;
            Some((a.key.as_str(), t, a.value.as_deref()?))
        })
        .collect()
}

/// Has the tree not caught up with typing yet? Text was typed, and the focused editable field
/// still holds, by its tree value, exactly what it held before: an app such as Chromium draws
/// the letters before it tells the tree, and the pixels alone (read with the slips OCR is
/// allowed) cannot tell a lost letter from a misread one. The caller looks once more and lets
/// [`semantic`] judge on the tree's word.
pub fn tree_lags(typed_now: &[String], before: &[Target], after: &[Target]) -> bool {
    use voxdesk_core::semantic::State;
    if typed_now.iter().all(|t| t.trim().is_empty()) {
        return false;
    }
    let old = values(before);
    values(after).into_iter().any(|(k, t, v)| {
        let states = t.ax.as_ref().map(|a| a.states);
        states.is_some_and(|s| s.has(State::FOCUSED) && s.has(State::EDITABLE))
            && old.iter().any(|(k0, _, v0)| *k0 == k && *v0 == v)
    })
}

/// The fields whose tree value changed: (target, value now, value before; "" if it had none).
fn changed_fields<'a>(
    before: &'a [Target],
    after: &'a [Target],
) -> Vec<(&'a Target, &'a str, &'a str)> {
    let old = values(before);
    values(after)
        .into_iter()
        .filter_map(|(k, t, v)| {
            let b = old
                .iter()
                .find(|(k0, _, _)| *k0 == k)
                .map_or("", |(_, _, v0)| *v0);
            (b != v).then_some((t, v, b))
        })
        .collect()
}

/// Did a field's value gain `text` (hold it more often than before)?
fn gained(now: &str, before: &str, text: &str) -> bool {
    now.matches(text).count() > before.matches(text).count()
}

/// Return and Tab are keys, not the field's text.
fn typed_text(text: &str) -> &str {
    text.trim_end_matches(['\n', '\r', '\t'])
}

/// Does the tree's exact word contradict the typing? Text was typed, a field's value changed,
/// and no changed field gained the text: it holds something else (a letter lost on the way,
/// a field that rewrote it). The reason, or `None`. This is final: the pixels, read with the
/// slips OCR is allowed, cannot overrule the field's own value (they read "Ada ovelace" as
/// "Ada Lovelace").
pub fn tree_contradicts(
    typed_now: &[String],
    before: &[Target],
    after: &[Target],
) -> Option<String> {
    let changed = changed_fields(before, after);
    let (t, v, _) = *changed.first()?;
    typed_now.iter().map(|s| typed_text(s)).find_map(|want| {
        let got = changed.iter().any(|(_, v, b)| gained(v, b, want));
        (!want.is_empty() && !got).then(|| {
            format!(
                "{} {} ({:?}) now holds {v:?}, not {want:?} as typed",
                role_of(t),
                t.id,
                t.text
            )
        })
    })
}

/// What the accessibility tree says of a batch, exactly (no OCR slips): the text typed is in
/// the field it went to, or that field holds something else (characters lost on the way); an
/// expected text is in a field's value; a box became checked. `None` when the tree has nothing
/// to say (no field changed, no control's state changed): the pixels' verdict stands.
pub fn semantic(
    expect: &Expect,
    typed_now: &[String],
    before: &[Target],
    after: &[Target],
    pixels: &Verdict,
) -> Option<Verdict> {
    let changed = changed_fields(before, after);
    if let Some(why) = tree_contradicts(typed_now, before, after) {
        return Some(Verdict::Unconfirmed(why));
    }
    let mut notes: Vec<String> = Vec::new();
    for text in typed_now {
        let want = typed_text(text);
        if want.is_empty() {
            continue;
        }
        if let Some((t, _, _)) = changed.iter().find(|(_, v, b)| gained(v, b, want)) {
            notes.push(format!(
                "{want:?} is in {} {} ({:?}), exactly",
                role_of(t),
                t.id,
                t.text
            ));
        }
    }
    notes.extend(state_changes(before, after));
    // A change the pixels showed, or none asked for: an unconfirmed verdict saw the screen
    // change.
    let change_ok = !expect.changes || matches!(pixels, Verdict::Unconfirmed(_));
    if pixels.is_miss() && !expect.is_empty() && expect.disappears.is_empty() && change_ok {
        // What OCR missed may be a field's value, read exactly (the words drawn in a field
        // the tree names are that field's target, whose text is its name).
        let all_in_fields = expect
            .appears
            .iter()
            .chain(&expect.shows)
            .all(|s| changed.iter().any(|(_, v, b)| gained(v, b, s)));
        if all_in_fields && !(expect.appears.is_empty() && expect.shows.is_empty()) {
            let mut why: Vec<String> = expect
                .appears
                .iter()
                .chain(&expect.shows)
                .map(|s| format!("{s:?} is in a field's value"))
                .collect();
            why.extend(notes);
            return Some(Verdict::Verified(why.join(", ")));
        }
    }
    if notes.is_empty() {
        return None;
    }
    Some(match pixels {
        Verdict::Verified(w) => Verdict::Verified(format!("{w}; {}", notes.join(", "))),
        Verdict::Unverified => Verdict::Unverified,
        other => other.clone(),
    })
}

fn role_of(t: &Target) -> &'static str {
    t.ax.as_ref().map(|a| a.role.name()).unwrap_or("target")
}

/// Controls whose state the batch changed, by accessible object: "check box 7 (\"I accept
/// the terms\") became checked", focus moved.
pub fn state_changes(before: &[Target], after: &[Target]) -> Vec<String> {
    let mut out = Vec::new();
    for t in after {
        let Some(a) = &t.ax else { continue };
        let Some(b) = before
            .iter()
            .find_map(|p| p.ax.as_ref().filter(|pa| pa.key == a.key))
        else {
            continue;
        };
        let (w0, w1) = (b.states.words(b.role), a.states.words(a.role));
        for w in w1.iter().filter(|w| !w0.contains(w) && **w != "editable") {
            out.push(format!(
                "{} {} ({:?}) became {w}",
                a.role.name(),
                t.id,
                t.text
            ));
        }
    }
    out
}

/// Where `texts`, just typed, were read: the boxes of the lines holding them after the batch
/// that hold none before (the field typed into, not the same words elsewhere).
pub fn typed_at(texts: &[String], before: &[Target], after: &[Target]) -> Vec<Rect> {
    let (before, after) = (runs(before), runs(after));
    texts
        .iter()
        .flat_map(|t| {
            let old: Vec<Rect> = located(t, &before, &[]).into_iter().map(|h| h.1).collect();
            located(t, &after, &[])
                .into_iter()
                .map(|h| h.1)
                .filter(move |r| !old.iter().any(|o| o.intersects(r)))
        })
        .collect()
}

/// Two boxes of one line of text: half of the smaller shared, their middles apart by at most
/// half the smaller's height.
fn same_line(a: &Rect, b: &Rect) -> bool {
    let middle = |r: &Rect| 2 * r.y + r.h;
    same_place(a, b) && (middle(a) - middle(b)).abs() <= a.h.min(b.h)
}

/// ` (in "…")`: the line it was read in, when that says more than the text itself.
fn place(hits: &[String], text: &str) -> String {
    match hits.last() {
        Some(r) if r.trim() != text.trim() => format!(" (in {r:?})"),
        _ => String::new(),
    }
}

/// A menu or popup drawn inside a window (no window of its own): at least two new labels in a
/// left-aligned column, in a box small next to the screen, over a screen otherwise unchanged.
/// `None` for anything else — a page that changed, text that was typed, a line of output.
pub fn overlay(before: &[Target], after: &[Target], screen: &Rect) -> Option<Rect> {
    let same = |a: &Target, b: &Target| {
        a.text == b.text && (a.rect.x - b.rect.x).abs() <= 6 && (a.rect.y - b.rect.y).abs() <= 6
    };
    let new: Vec<&Target> = after
        .iter()
        .filter(|t| !before.iter().any(|b| same(t, b)))
        .collect();
    let column = new.iter().any(|a| {
        new.iter().any(|b| {
            (a.rect.x - b.rect.x).abs() <= 8 && b.rect.y - a.rect.y >= a.rect.h.min(b.rect.h)
        })
    });
    if new.len() < 2 || !column {
        return None;
    }
    let area = new
        .iter()
        .skip(1)
        .fold(new[0].rect, |u, t| u.union(&t.rect));
    let small = (area.w as i64 * area.h as i64) * 5 <= screen.w as i64 * screen.h as i64;
    let rest: Vec<&Target> = before
        .iter()
        .filter(|b| !b.rect.intersects(&area))
        .collect();
    let kept = rest
        .iter()
        .filter(|b| after.iter().any(|a| same(a, b)))
        .count();
    (small && rest.len() >= 2 && kept * 5 >= rest.len() * 4).then_some(area)
}

/// Would `now` do again what `prev` (a batch that ran and could not be confirmed) did? The
/// same actions, or the same text typed again inside another batch ("click the field, type
/// it" after "type it").
pub fn repeats(prev: &[Action], now: &[Action]) -> bool {
    let typed = |a: &Action| match a {
        Action::Type { text } => Some(text.clone()),
        _ => None,
    };
    let before: Vec<String> = prev.iter().filter_map(typed).collect();
    prev == now || now.iter().filter_map(typed).any(|t| before.contains(&t))
}

/// Labels of buttons whose click does something a second click would do again (send, save,
/// pay, delete…): never clicked twice without a look at what the first did.
const COMMITS: &[&str] = &[
    "send",
    "submit",
    "save",
    "post",
    "publish",
    "join",
    "sign",
    "log",
    "register",
    "apply",
    "confirm",
    "ok",
    "yes",
    "pay",
    "buy",
    "order",
    "checkout",
    "delete",
    "remove",
    "reply",
    "create",
    "upload",
    "share",
    "add",
    "continue",
    "next",
    "done",
    "finish",
    "accept",
    "agree",
    "install",
    "run",
    "book",
    "subscribe",
    "empty",
    "move",
    "copy",
    "rename",
    "replace",
    "print",
];

/// Keys that move around and change no content: pressing one again after it changed nothing
/// is safe.
const NAVIGATION_KEYS: &[&str] = &[
    "escape",
    "tab",
    "up",
    "down",
    "left",
    "right",
    "home",
    "end",
    "pageup",
    "pagedown",
    "page_up",
    "page_down",
];

/// May this batch run again if it failed with nothing changed? Not when it typed, pressed
/// Enter or a shortcut, dragged, or clicked a button that commits (send, save, pay, delete…):
/// doing those twice does them twice.
pub fn repeatable(batch: &Batch, targets: &[Target]) -> bool {
    // A point names no label: what it lands on could be a Send button. OCR slips are folded
    // as everywhere ("5ave", "Subrnit").
    let commits = |at: &Pos| match at {
        Pos::Target(id) => targets.iter().find(|t| t.id == *id).is_none_or(|t| {
            t.text
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| COMMITS.iter().any(|c| label_matches(c, w)))
        }),
        Pos::Point { .. } => true,
    };
    batch.actions.iter().all(|a| match a {
        Action::Type { .. } | Action::Drag { .. } => false,
        Action::Key { combo } => {
            combo.modifiers.is_empty() && NAVIGATION_KEYS.contains(&combo.key.as_str())
        }
        Action::Click { at } | Action::DoubleClick { at } | Action::RightClick { at } => {
            !commits(at)
        }
        Action::Scroll { .. } | Action::Wait { .. } => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxdesk_core::action::parse_combo;

    fn ts(texts: &[&str]) -> Vec<Target> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| Target {
                id: i as u32 + 1,
                text: t.to_string(),
                rect: Rect::new(0, i as i32 * 20, 40, 12),
                conf: 0.9,
                new: false,
                ax: None,
            })
            .collect()
    }
    fn ex(appears: &[&str], disappears: &[&str], changes: bool) -> Expect {
        Expect {
            appears: appears.iter().map(|s| s.to_string()).collect(),
            disappears: disappears.iter().map(|s| s.to_string()).collect(),
            changes,
            ..Default::default()
        }
    }
    fn judge(e: &Expect, before: &[Target], after: &[Target], changed: bool) -> Verdict {
        verify(
            e,
            &Evidence {
                before,
                after,
                changed,
                typed: &[],
                typed_at: &[],
            },
        )
    }

    /// `e` judged on a screen that did not change, after the session typed `typed` (read at
    /// `typed_at`).
    fn on(e: &Expect, screen: &[Target], typed: &[String], typed_at: &[Rect]) -> Verdict {
        verify(
            e,
            &Evidence {
                before: screen,
                after: screen,
                changed: false,
                typed,
                typed_at,
            },
        )
    }

    #[test]
    fn table_of_verdicts() {
        let before = ts(&["File", "Save", "0"]);
        let after = ts(&["File", "Saved to notes.txt", "12"]);
        let cases = [
            (ex(&[], &[], false), true, "unverified"),
            (ex(&["12"], &[], false), true, "verified"),
            (ex(&["Saved"], &[], false), true, "verified"),
            (ex(&["Save"], &[], false), true, "unconfirmed"),
            (ex(&["Sav"], &[], false), true, "unconfirmed"),
            (ex(&["File"], &[], false), true, "unconfirmed"),
            (ex(&[], &["Save"], false), true, "verified"),
            (ex(&[], &["File"], false), true, "unconfirmed"),
            (ex(&[], &["Loading"], false), true, "verified"),
            (ex(&[], &["Loading"], false), false, "failed"),
            (ex(&[], &[], true), true, "verified"),
            (ex(&[], &[], true), false, "failed"),
            (ex(&["12"], &[], true), false, "failed"),
        ];
        for (e, changed, want) in cases {
            assert_eq!(
                judge(&e, &before, &after, changed).name(),
                want,
                "{e:?} changed={changed}"
            );
        }
        assert_eq!(
            judge(&ex(&[], &[], true), &before, &before, false),
            Verdict::Failed {
                reason: "the screen did not change".into(),
                no_change: true
            }
        );
    }

    #[test]
    fn nothing_a_result_lists_as_appeared_is_called_absent() {
        // Typed once without newlines (an old line "milkeggsbread"), then line by line after
        // it: each line is a target of its own that was not there, whatever the runs join.
        let at = |s: &str, x, y| Target {
            id: y as u32 + x as u32,
            text: s.into(),
            rect: Rect::new(x, y, 8 * s.len() as i32, 16),
            conf: 0.9,
            new: false,
            ax: None,
        };
        let before = vec![at("milkeggsbread", 0, 0)];
        for after in [
            vec![
                at("milkeggsbread", 0, 0),
                at("milk", 0, 18),
                at("eggs", 0, 36),
                at("bread", 0, 54),
            ],
            // The old line scrolled up out of the editor's view.
            vec![at("milk", 0, 18), at("eggs", 0, 36), at("bread", 0, 54)],
        ] {
            let e = ex(&["milk\neggs\nbread"], &[], false);
            let v = judge(&e, &before, &after, true);
            assert_eq!(v.name(), "verified", "{v:?}");
        }
        // The same word elsewhere, none more of it: still not the effect.
        let other = vec![at("milkeggsbread", 0, 0), at("Loading", 0, 18)];
        let v = judge(&ex(&["bread"], &[], false), &before, &other, true);
        assert_eq!(v.name(), "unconfirmed", "{v:?}");
    }

    #[test]
    fn the_same_text_elsewhere_before_is_not_the_batch_s_effect() {
        // "Ada Lovelace" is already in the members list; typing it into the field adds one.
        let before = ts(&["Members", "Ada Lovelace", "Full name"]);
        let typed = ts(&["Members", "Ada Lovelace", "Full name", "Ada Lovelace|"]);
        let e = ex(&["Ada Lovelace"], &[], true);
        assert_eq!(judge(&e, &before, &typed, true).name(), "verified");
        // Nothing was typed, something else changed: not fooled by the list.
        let other = ts(&["Members", "Ada Lovelace", "Full name", "Loading…"]);
        let v = judge(&e, &before, &other, true);
        assert_eq!(v.name(), "unconfirmed");
        assert!(v.detail().unwrap().contains("already on screen"), "{v:?}");
    }

    #[test]
    fn shows_waits_for_output_not_for_the_command_that_echoes_it() {
        let typed = vec!["echo hello from voxdesk".to_string()];
        let line = |s: &str, y| Target {
            id: y as u32,
            text: s.into(),
            rect: Rect::new(0, y, 200, 14),
            conf: 0.9,
            new: false,
            ax: None,
        };
        let e = Expect {
            shows: vec!["hello from voxdesk".into()],
            ..Default::default()
        };
        let ran = vec![line("$ echo hello from voxdesk", 0)];
        let output = vec![
            ran[0].clone(),
            line("hello from voxdesk", 20),
            line("$", 40),
        ];
        let v = on(&e, &ran, &typed, &[]);
        assert_eq!(v.name(), "failed");
        assert!(
            v.detail().unwrap().contains("only inside text typed"),
            "{v:?}"
        );
        let v = on(&e, &output, &typed, &[]);
        assert_eq!(v.name(), "verified", "{v:?}");
        // Boxes read with a margin (the learned reader's): the output line's touches the
        // command line's by a few pixels, and is still the output, not the typing.
        let (cmd, out) = (Rect::new(0, 0, 200, 20), Rect::new(0, 13, 120, 20));
        let screen = vec![
            Target {
                rect: cmd,
                ..line("$ echo hello from voxdesk", 0)
            },
            Target {
                rect: out,
                ..line("hello from voxdesk", 13)
            },
        ];
        let v = on(&e, &screen, &typed, &[cmd]);
        assert_eq!(v.name(), "verified", "{v:?}");
        let v = on(&e, &screen[..1], &typed, &[cmd]);
        assert_eq!(v.name(), "failed", "{v:?}");
        // xterm's 9 px rows: the command line was read 17 px tall while the row under it was
        // empty, and the output now stands in that row (the task suite's xterm-echo-wait with
        // the learned reader).
        let (typed_box, cmd, out) = (
            Rect::new(64, 79, 112, 17),
            Rect::new(67, 80, 103, 11),
            Rect::new(67, 89, 75, 10),
        );
        let screen = vec![
            Target {
                rect: cmd,
                ..line("$ echo hello from voxdesk", 80)
            },
            Target {
                rect: out,
                ..line("hello from voxdesk", 89)
            },
        ];
        let v = on(&e, &screen, &typed, &[typed_box]);
        assert_eq!(v.name(), "verified", "{v:?}");
        let v = on(&e, &screen[..1], &typed, &[typed_box]);
        assert_eq!(v.name(), "failed", "{v:?}");
    }

    #[test]
    fn a_file_renamed_to_what_was_typed_shows_under_its_new_name() {
        // pcmanfm after "Rename…", "plan.ods", Enter: the icon's label is exactly the text
        // typed, read on one line with its neighbour's. Matched a letter short ("plan.od"),
        // the typed text once looked longer than itself, and hid the label it named.
        let at = |id, text: &str, x| Target {
            id,
            text: text.into(),
            rect: Rect::new(x, 431, 70, 14),
            conf: 0.9,
            new: false,
            ax: None,
        };
        let after = vec![at(1, "plan.ods", 819), at(2, "todo.txt.txt", 904)];
        let e = Expect {
            shows: vec!["plan.ods".into()],
            ..Default::default()
        };
        for typed in [vec!["plan.ods".to_string()], vec!["plans.ods".to_string()]] {
            let v = on(&e, &after, &typed, &[]);
            assert_eq!(v.name(), "verified", "{typed:?}: {v:?}");
        }
        // Where it was typed, it is the typing: the rename dialog still open is no renamed file.
        let field = |text: &str| Target {
            id: 9,
            text: text.into(),
            rect: Rect::new(700, 520, 240, 20),
            conf: 0.9,
            new: false,
            ax: None,
        };
        let dialog = [vec![field("budget.ods")], after.clone()].concat();
        let typing = [vec![field("plan.ods")], after.clone()].concat();
        let typed = vec!["plan.ods".to_string()];
        let there = typed_at(&typed, &dialog, &typing);
        assert_eq!(there, [Rect::new(700, 520, 240, 20)]);
        let open = [vec![field("plan.ods")], vec![at(2, "todo.txt.txt", 904)]].concat();
        let v = on(&e, &open, &typed, &there);
        assert_eq!(v.name(), "failed", "{v:?}");
        assert!(
            v.detail().unwrap().contains("only inside text typed"),
            "{v:?}"
        );
        let v = on(&e, &after, &typed, &there);
        assert_eq!(v.name(), "verified", "{v:?}");
        // Typed as part of something longer, it is still that longer text's.
        let typed = vec!["mv budget.ods plan.ods".to_string()];
        let line = vec![at(1, "$ mv budget.ods plan.ods", 0)];
        let v = on(&e, &line, &typed, &[]);
        assert_eq!(v.name(), "failed", "{v:?}");
    }

    #[test]
    fn a_menu_drawn_in_a_page_is_an_overlay_and_a_page_change_is_not() {
        let at = |text: &str, x, y| Target {
            id: 0,
            text: text.into(),
            rect: Rect::new(x, y, 60, 20),
            conf: 0.9,
            new: false,
            ax: None,
        };
        let screen = Rect::new(0, 0, 1920, 1080);
        let page = vec![
            at("File", 40, 40),
            at("Help", 140, 40),
            at("Welcome", 40, 600),
        ];
        let menu = [
            page.clone(),
            vec![at("Print", 48, 90), at("Export", 48, 130)],
        ]
        .concat();
        assert_eq!(
            overlay(&page, &menu, &screen),
            Some(Rect::new(48, 90, 60, 60))
        );
        // Typed text on one line, a page that changed entirely, a single new label: no overlay.
        let typed = [page.clone(), vec![at("Buy", 48, 90), at("milk", 120, 90)]].concat();
        assert_eq!(overlay(&page, &typed, &screen), None);
        let other = vec![
            at("Inbox", 40, 40),
            at("Sent", 40, 80),
            at("Drafts", 40, 120),
        ];
        assert_eq!(overlay(&page, &other, &screen), None);
        let one = [page.clone(), vec![at("Saved", 48, 90)]].concat();
        assert_eq!(overlay(&page, &one, &screen), None);
    }

    #[test]
    fn text_of_several_lines_appears_line_by_line() {
        let before = ts(&["Untitled"]);
        let after = ts(&["Untitled", "Dear Ada,", "Thank you for the notes."]);
        let e = ex(&["Dear Ada,\nThank you for the notes.\n"], &[], true);
        assert_eq!(judge(&e, &before, &after, true).name(), "verified");
        let half = ts(&["Untitled", "Dear Ada,"]);
        assert_eq!(judge(&e, &before, &half, true).name(), "unconfirmed");
        let twice = ex(&["ok\nok"], &[], true);
        assert_eq!(
            judge(&twice, &before, &ts(&["Untitled", "ok"]), true).name(),
            "unconfirmed"
        );
        assert_eq!(
            judge(&twice, &before, &ts(&["Untitled", "ok", "ok"]), true).name(),
            "verified"
        );
    }

    #[test]
    fn the_same_text_typed_again_is_a_repeat() {
        let ty = |t: &str| Action::Type { text: t.into() };
        let click = Action::Click { at: Pos::Target(3) };
        let enter = Action::Key {
            combo: parse_combo("enter").unwrap(),
        };
        assert!(repeats(&[ty("Ada")], &[ty("Ada")]));
        assert!(repeats(&[ty("Ada")], &[click.clone(), ty("Ada")]));
        assert!(repeats(
            std::slice::from_ref(&enter),
            std::slice::from_ref(&enter)
        ));
        assert!(!repeats(&[ty("Ada")], &[ty("Lovelace")]));
        assert!(!repeats(&[ty("Ada")], &[enter]));
        assert!(!repeats(&[click.clone(), ty("Ada")], &[click]));
    }

    #[test]
    fn what_may_run_again() {
        let targets = ts(&[
            "Downloads",
            "Send",
            "Save As…",
            "7",
            "Sign in",
            "5ave",
            "Subrnit",
        ]);
        let b = |actions: Vec<Action>| Batch {
            observation_id: None,
            actions,
            expect: Expect::default(),
        };
        let click = |id| Action::Click {
            at: Pos::Target(id),
        };
        let key = |c: &str| Action::Key {
            combo: parse_combo(c).unwrap(),
        };
        let cases = [
            (b(vec![click(1)]), true),
            (b(vec![click(4)]), true),
            (b(vec![click(2)]), false),
            (b(vec![click(3)]), false),
            (b(vec![click(5)]), false),
            (b(vec![click(6)]), false),
            (b(vec![click(7)]), false),
            (
                b(vec![Action::Click {
                    at: Pos::Point { x: 10.0, y: 10.0 },
                }]),
                false,
            ),
            (b(vec![Action::Type { text: "x".into() }]), false),
            (b(vec![key("enter")]), false),
            (b(vec![key("ctrl+s")]), false),
            (b(vec![key("tab")]), true),
            (b(vec![key("escape")]), true),
            (b(vec![Action::Wait { ms: 500 }]), true),
            (b(vec![click(1), Action::Type { text: "x".into() }]), false),
        ];
        for (batch, want) in cases {
            assert_eq!(repeatable(&batch, &targets), want, "{:?}", batch.actions);
        }
    }

    fn ax_target(
        id: u32,
        text: &str,
        role: voxdesk_core::semantic::Role,
        states: &[voxdesk_core::semantic::State],
        value: Option<&str>,
    ) -> Target {
        Target {
            id,
            text: text.into(),
            rect: Rect::new(10, 10 + 30 * id as i32, 200, 22),
            conf: 1.0,
            new: false,
            ax: Some(voxdesk_perception::fuse::Ax {
                key: format!(":1.4/{id}"),
                role,
                states: voxdesk_core::semantic::States::of(states),
                value: value.map(String::from),
                drawn: true,
            }),
        }
    }

    #[test]
    fn a_focused_field_whose_value_has_not_moved_since_typing_is_a_tree_that_lags() {
        use voxdesk_core::semantic::{Role, State};
        let field =
            |v: &str, states: &[State]| ax_target(1, "Full name", Role::ENTRY, states, Some(v));
        let focused = [State::EDITABLE, State::FOCUSED];
        let typed = ["Ada Lovelace".to_string()];
        // Chromium drew the letters; its tree still says "".
        assert!(tree_lags(
            &typed,
            &[field("", &focused)],
            &[field("", &focused)]
        ));
        // The tree caught up (with a letter lost or not): `semantic` judges, no waiting.
        assert!(!tree_lags(
            &typed,
            &[field("", &focused)],
            &[field("Ada ovelace", &focused)]
        ));
        // Nothing typed, or the field not focused (the text went elsewhere): nothing to wait for.
        assert!(!tree_lags(
            &[],
            &[field("", &focused)],
            &[field("", &focused)]
        ));
        let unfocused = [State::EDITABLE];
        assert!(!tree_lags(
            &typed,
            &[field("", &unfocused)],
            &[field("", &unfocused)]
        ));
        // No tree at all (a terminal): nothing to wait for.
        assert!(!tree_lags(&typed, &[], &[]));
    }

    #[test]
    fn the_fields_value_contradicts_typing_that_lost_a_letter() {
        use voxdesk_core::semantic::{Role, State};
        let field = |v: &str| {
            ax_target(
                1,
                "Full name",
                Role::ENTRY,
                &[State::EDITABLE, State::FOCUSED],
                Some(v),
            )
        };
        let typed = ["Ada Lovelace".to_string()];
        // (typed, value before, value after, contradicted)
        let cases: &[(&[String], &str, &str, bool)] = &[
            (&typed, "", "Ada ovelace", true),
            (&typed, "", "Ada Lovelace", false),
            // A field that keeps more than was typed (a suggestion completed) still has it.
            (&typed, "", "Ada Lovelace, Countess", false),
            // The value did not move (the tree lags, or no tree word): nothing to say.
            (&typed, "", "", false),
            (&typed, "Ada", "Ada", false),
            // Enter is a key, not text: "Ada Lovelace\n" is judged as "Ada Lovelace".
            (&["Ada Lovelace\n".to_string()], "", "Ada Lovelace", false),
            (&["Ada Lovelace\n".to_string()], "", "Ada Lovelae", true),
            // Nothing typed: a field that changed is not a contradiction.
            (&[], "", "anything", false),
        ];
        for (typed, b, a, want) in cases {
            let got = tree_contradicts(typed, &[field(b)], &[field(a)]);
            assert_eq!(got.is_some(), *want, "{typed:?} {b:?} -> {a:?}: {got:?}");
        }
        let why = tree_contradicts(&typed, &[field("")], &[field("Ada ovelace")]).unwrap();
        assert!(why.contains("now holds \"Ada ovelace\""), "{why}");
    }

    #[test]
    fn the_tree_verifies_typed_text_exactly_and_catches_what_was_lost() {
        use voxdesk_core::semantic::{Role, State};
        let field = |v: &str| {
            ax_target(
                1,
                "Name",
                Role::ENTRY,
                &[State::EDITABLE, State::ENABLED],
                Some(v),
            )
        };
        let before = [field("")];
        let expect = Expect {
            appears: vec!["Zoë".into()],
            ..Expect::default()
        };
        // OCR read "Zoe" (a slip): the pixels miss it, the field's value has it exactly.
        let pixels = Verdict::Unconfirmed("\"Zoë\" did not appear".into());
        let v = semantic(&expect, &["Zoë".into()], &before, &[field("Zoë")], &pixels).unwrap();
        assert!(
            matches!(&v, Verdict::Verified(w) if w.contains("exactly")),
            "{v:?}"
        );
        // The same when the batch also expects a change (the planner's typing does): the
        // screen changed (unconfirmed, not failed), and the words drawn in the field are the
        // field's target, named by its label.
        let changing = Expect {
            changes: true,
            ..expect.clone()
        };
        let v = semantic(
            &changing,
            &["Zoë".into()],
            &before,
            &[field("Zoë")],
            &pixels,
        )
        .unwrap();
        assert!(
            matches!(&v, Verdict::Verified(w) if w.contains("exactly")),
            "{v:?}"
        );
        // Not when nothing changed at all.
        let still = Verdict::Failed {
            reason: "the screen did not change".into(),
            no_change: true,
        };
        let v = semantic(&changing, &["Zoë".into()], &before, &[field("Zoë")], &still);
        assert!(!matches!(v, Some(Verdict::Verified(_))), "{v:?}");
        // A character lost on the way: the field holds something else.
        let v = semantic(
            &expect,
            &["Zoë".into()],
            &before,
            &[field("Zo")],
            &Verdict::Verified("x".into()),
        )
        .unwrap();
        assert!(
            matches!(&v, Verdict::Unconfirmed(w) if w.contains("not \"Zoë\"")),
            "{v:?}"
        );
        // Nothing the tree can say (no field changed): the pixels' verdict stands.
        assert_eq!(semantic(&expect, &[], &before, &before, &pixels), None);
        // Text already in a field before does not count again ("milkeggs" then "bread").
        let list = |v: &str| {
            ax_target(
                2,
                "List",
                Role::TEXT,
                &[State::EDITABLE, State::ENABLED],
                Some(v),
            )
        };
        let v = semantic(
            &Expect {
                appears: vec!["bread".into()],
                ..Expect::default()
            },
            &[],
            &[list("bread")],
            &[list("bread milk")],
            &pixels,
        );
        assert!(!matches!(v, Some(Verdict::Verified(_))), "{v:?}");
    }

    #[test]
    fn a_box_that_became_checked_is_said() {
        use voxdesk_core::semantic::{Role, State};
        let b = |s: &[State]| ax_target(3, "I accept the terms", Role::CHECK_BOX, s, None);
        let ch = state_changes(
            &[b(&[State::ENABLED])],
            &[b(&[State::ENABLED, State::CHECKED, State::FOCUSED])],
        );
        assert_eq!(
            ch,
            [
                "check box 3 (\"I accept the terms\") became checked",
                "check box 3 (\"I accept the terms\") became focused"
            ]
        );
        let back = state_changes(
            &[b(&[State::ENABLED, State::CHECKED])],
            &[b(&[State::ENABLED])],
        );
        assert_eq!(
            back,
            ["check box 3 (\"I accept the terms\") became unchecked"]
        );
    }
}
