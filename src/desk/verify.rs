//! Verification after an act: three states (verified, failed, unverified) judged from the targets before and after and from whether any tile changed — a pure function.

use crate::action::Expect;
use crate::perception::Target;
use crate::screen::text::present;

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Everything the expectation named is true.
    Verified(String),
    /// Something it named is not true; `no_change` says the screen did not change at all
    /// (the failure class that calls for settling and re-capturing once).
    Failed { reason: String, no_change: bool },
    /// Nothing to check: verification off or an empty expectation. Moves no counter.
    Unverified,
}

impl Verdict {
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Verified(_) => "verified",
            Verdict::Failed { .. } => "failed",
            Verdict::Unverified => "unverified",
        }
    }

    /// What was seen: why it verified or why it failed.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Verdict::Verified(w) => Some(w),
            Verdict::Failed { reason, .. } => Some(reason),
            Verdict::Unverified => None,
        }
    }
}

/// Judge `expect` against the screen after the act. `changed` is whether any perception tile
/// differed between the frames before and after.
pub fn verify(expect: &Expect, before: &[Target], after: &[Target], changed: bool) -> Verdict {
    if expect.appears.is_empty() && expect.disappears.is_empty() && !expect.changes {
        return Verdict::Unverified;
    }
    let mut ok = Vec::new();
    for a in &expect.appears {
        if !present(a, after) {
            let reason = if present(a, before) {
                format!("{a:?} was already on screen and is gone now")
            } else {
                format!("{a:?} did not appear")
            };
            return Verdict::Failed {
                reason,
                no_change: !changed,
            };
        }
        ok.push(format!("{a:?} appeared"));
    }
    for d in &expect.disappears {
        if present(d, after) {
            return Verdict::Failed {
                reason: format!("{d:?} is still on screen"),
                no_change: !changed,
            };
        }
        ok.push(format!("{d:?} disappeared"));
    }
    if expect.changes && !changed {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Rect;

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
            })
            .collect()
    }
    fn ex(appears: &[&str], disappears: &[&str], changes: bool) -> Expect {
        Expect {
            appears: appears.iter().map(|s| s.to_string()).collect(),
            disappears: disappears.iter().map(|s| s.to_string()).collect(),
            changes,
        }
    }

    #[test]
    fn table_of_verdicts() {
        let before = ts(&["File", "Save", "0"]);
        let after = ts(&["File", "Saved to notes.txt", "12"]);
        let cases = [
            (ex(&[], &[], false), true, "unverified"),
            (ex(&["12"], &[], false), true, "verified"),
            (ex(&["Saved"], &[], false), true, "verified"),
            (ex(&["Save"], &[], false), true, "failed"),
            (ex(&["Sav"], &[], false), true, "failed"),
            (ex(&[], &["Save"], false), true, "verified"),
            (ex(&[], &["File"], false), true, "failed"),
            (ex(&[], &[], true), true, "verified"),
            (ex(&[], &[], true), false, "failed"),
            (ex(&["12"], &[], true), false, "failed"),
        ];
        for (e, changed, want) in cases {
            assert_eq!(
                verify(&e, &before, &after, changed).name(),
                want,
                "{e:?} changed={changed}"
            );
        }
        assert_eq!(
            verify(&ex(&[], &[], true), &before, &before, false),
            Verdict::Failed {
                reason: "the screen did not change".into(),
                no_change: true
            }
        );
    }
}
