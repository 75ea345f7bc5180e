//! `voxdesk look`'s observation handed to a later `voxdesk act` (another process): written 0600 in the private runtime dir, believed only when it is the user's own, and accepted by `act` only while the screen still shows what the batch names — so the CLI is driven the way a model drives the tools.
//!
//! `act` gives its eyes the handed-off targets as the last observation's (`Eyes::adopt`), so
//! its fresh observation keeps their ids for the same controls (the same accessible object, or
//! the same text at about the same place), then [`carry`] decides: every target the batch names
//! must still be there with the same text, and a batch that names a point needs the whole
//! screen as it was (a point has no control to follow).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use voxdesk_core::action::{Action, Batch, Pos};
use voxdesk_core::geometry::Rect;
use voxdesk_core::semantic::{Role, States};
use voxdesk_perception::fuse::Ax;
use voxdesk_perception::Target;

/// The file's name in the private runtime dir: one per X display (`look-:0.json`), so a look
/// on one desktop never stands for another's.
fn file_name() -> String {
    let display = std::env::var("DISPLAY").unwrap_or_default();
    let safe: String = display
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".:-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("look-{safe}.json")
}

/// One observation as `look` saw it: its id, the picture's size and its targets in capture
/// pixels, each with the accessible object behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    pub observation_id: String,
    pub picture: (u32, u32),
    pub targets: Vec<Kept>,
}

/// A target as handed over (capture pixels; the tree's object, role and states when it has one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    pub id: u32,
    pub text: String,
    pub rect: [i32; 4],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ax: Option<(String, u32, u64)>,
}

impl Handoff {
    pub fn of(observation_id: &str, picture: (u32, u32), targets: &[Target]) -> Handoff {
        Handoff {
            observation_id: observation_id.to_string(),
            picture,
            targets: targets
                .iter()
                .map(|t| Kept {
                    id: t.id,
                    text: t.text.clone(),
                    rect: [t.rect.x, t.rect.y, t.rect.w, t.rect.h],
                    ax: t.ax.as_ref().map(|a| (a.key.clone(), a.role.0, a.states.0)),
                })
                .collect(),
        }
    }

    /// The targets, as a perceiver adopts them.
    pub fn targets(&self) -> Vec<Target> {
        self.targets
            .iter()
            .map(|k| Target {
                id: k.id,
                text: k.text.clone(),
                rect: Rect::new(k.rect[0], k.rect[1], k.rect[2], k.rect[3]),
                conf: 1.0,
                new: false,
                ax: k.ax.as_ref().map(|(key, role, states)| Ax {
                    key: key.clone(),
                    role: Role(*role),
                    states: States(*states),
                    value: None,
                    drawn: false,
                }),
            })
            .collect()
    }

    fn path() -> std::io::Result<PathBuf> {
        Ok(voxdesk_core::private::runtime_dir()?.join(file_name()))
    }

    /// The looks kept, oldest first (none when the file is missing, not ours or unreadable:
    /// a file another user could have written is never believed).
    fn kept() -> Vec<Handoff> {
        Self::path()
            .ok()
            .and_then(|p| voxdesk_core::private::read_own(&p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Keep it for a later `act` (0600 in the private runtime dir), with the few looks before it.
    pub fn save(&self) -> std::io::Result<()> {
        let mut all = Self::kept();
        all.retain(|h| h.observation_id != self.observation_id);
        all.push(self.clone());
        let from = all.len().saturating_sub(KEPT);
        let json = serde_json::to_vec(&all[from..]).map_err(std::io::Error::other)?;
        voxdesk_core::private::write(&Self::path()?, &json)
    }

    /// The look with this observation id, when it is one of the last few kept.
    pub fn load(observation_id: &str) -> Option<Handoff> {
        Self::kept()
            .into_iter()
            .rev()
            .find(|h| h.observation_id == observation_id)
    }
}

/// How many looks are kept: a driver may look several times before it acts on one of them.
const KEPT: usize = 8;

/// The target ids and whether a point is named, over every position in `batch`.
fn named(batch: &Batch) -> (Vec<u32>, bool) {
    let mut ids = Vec::new();
    let mut point = false;
    let mut see = |p: &Pos| match p {
        Pos::Target(id) => ids.push(*id),
        Pos::Point { .. } => point = true,
    };
    for a in &batch.actions {
        match a {
            Action::Click { at } | Action::DoubleClick { at } | Action::RightClick { at } => {
                see(at)
            }
            Action::Scroll { at: Some(at), .. } => see(at),
            Action::Drag { from, to } => {
                see(from);
                see(to);
            }
            _ => {}
        }
    }
    (ids, point)
}

fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// May `batch`, written against `look`, run on `fresh` (the observation `act` made after
/// adopting look's targets, `picture` its size)? `Err` says what moved, for a person and a model.
pub fn carry(
    look: &Handoff,
    fresh: &[Target],
    picture: (u32, u32),
    batch: &Batch,
) -> Result<(), String> {
    if picture != look.picture {
        return Err(format!(
            "the screen's size changed since observation {} ({}x{} then, {}x{} now): look again",
            look.observation_id, look.picture.0, look.picture.1, picture.0, picture.1
        ));
    }
    let (ids, point) = named(batch);
    let same = |k: &Kept| {
        fresh
            .iter()
            .any(|t| t.id == k.id && norm(&t.text) == norm(&k.text))
    };
    for id in ids {
        let Some(k) = look.targets.iter().find(|k| k.id == id) else {
            return Err(format!(
                "observation {} has no target {id}",
                look.observation_id
            ));
        };
        if !same(k) {
            return Err(format!(
                "target {id} ({:?}) of observation {} is no longer on screen: look again",
                k.text, look.observation_id
            ));
        }
    }
    if point {
        let moved = look.targets.iter().filter(|k| !same(k)).count();
        let now_new = fresh.iter().filter(|t| t.new).count();
        if moved > 0 || now_new > 0 {
            return Err(format!(
                "the batch names a point and the screen changed since observation {} ({moved} targets gone or moved, {now_new} new): look again",
                look.observation_id
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxdesk_core::action::parse_batch;

    fn t(id: u32, text: &str, x: i32, new: bool) -> Target {
        Target {
            id,
            text: text.into(),
            rect: Rect::new(x, 100, 60, 20),
            conf: 0.9,
            new,
            ax: None,
        }
    }

    #[test]
    fn a_batch_runs_while_what_it_names_is_still_there() {
        let look = Handoff::of(
            "obs-1",
            (1280, 720),
            &[t(1, "Save", 10, false), t(2, "Cancel", 90, false)],
        );
        let click = |what: &str| {
            parse_batch(&format!(
                r#"{{"observation_id":"obs-1","actions":[{what}]}}"#
            ))
            .unwrap()
        };
        let same = [t(1, "Save", 10, false), t(2, "Cancel", 90, false)];
        let other_gone = [t(1, "Save", 12, false), t(7, "Saved", 200, true)];
        let save_gone = [t(2, "Cancel", 90, false), t(3, "Save", 400, true)];
        let table: &[(&str, &[Target], (u32, u32), Option<&str>)] = &[
            (r#"{"action":"click","target":1}"#, &same, (1280, 720), None),
            (
                r#"{"action":"click","target":1}"#,
                &other_gone,
                (1280, 720),
                None,
            ),
            (
                r#"{"action":"click","target":1}"#,
                &save_gone,
                (1280, 720),
                Some("no longer on screen"),
            ),
            (
                r#"{"action":"click","target":9}"#,
                &same,
                (1280, 720),
                Some("has no target 9"),
            ),
            (
                r#"{"action":"click","x":20,"y":30}"#,
                &same,
                (1280, 720),
                None,
            ),
            (
                r#"{"action":"click","x":20,"y":30}"#,
                &other_gone,
                (1280, 720),
                Some("names a point"),
            ),
            (
                r#"{"action":"drag","from":{"target":1},"to":{"target":2}}"#,
                &other_gone,
                (1280, 720),
                Some("target 2"),
            ),
            (
                r#"{"action":"type","text":"hi"}"#,
                &save_gone,
                (1280, 720),
                None,
            ),
            (
                r#"{"action":"click","target":1}"#,
                &same,
                (1920, 1080),
                Some("size changed"),
            ),
        ];
        for (what, fresh, pic, err) in table {
            let r = carry(&look, fresh, *pic, &click(what));
            match (err, &r) {
                (None, Ok(())) => {}
                (Some(e), Err(m)) if m.contains(e) => {}
                _ => panic!("{what}: {r:?}, wanted {err:?}"),
            }
        }
    }

    #[test]
    fn the_targets_come_back_with_their_objects() {
        let mut a = t(4, "Name", 10, false);
        a.ax = Some(Ax {
            key: ":1.5/org/a11y/atspi/accessible/12".into(),
            role: Role(79),
            states: States(1 << 7),
            value: Some("x".into()),
            drawn: true,
        });
        let h = Handoff::of("obs-2", (1280, 720), &[a.clone()]);
        let back: Handoff = serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
        let got = &back.targets()[0];
        assert_eq!((got.id, &got.text, got.rect), (4, &a.text, a.rect));
        let ax = got.ax.as_ref().unwrap();
        assert_eq!(
            (ax.key.as_str(), ax.role, ax.states),
            (
                ":1.5/org/a11y/atspi/accessible/12",
                Role(79),
                States(1 << 7)
            )
        );
    }
}
