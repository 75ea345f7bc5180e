//! Stable target ids across observations: a control the accessibility tree backs keeps its id while it is the same accessible object, wherever it moves and whatever it says; a label OCR alone read keeps its id while it is the same text at about the same place; anything else is new.

use super::fuse::{Ax, Item};
use super::label::Label;
use voxdesk_core::geometry::Rect;

/// A label with the id the model uses to name it.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub id: u32,
    pub text: String,
    /// Capture pixels.
    pub rect: Rect,
    pub conf: f32,
    /// Not present in the previous observation.
    pub new: bool,
    /// What the accessibility tree says of it (`None`: OCR alone read it).
    pub ax: Option<Ax>,
}

impl Target {
    /// Where it came from: `ocr`, `ax` (the tree alone: nothing drawn read), `ax+ocr`.
    pub fn source(&self) -> &'static str {
        match &self.ax {
            None => "ocr",
            Some(a) if a.drawn => "ax+ocr",
            Some(_) => "ax",
        }
    }
}

/// Hands out ids; never reuses one within a session, so an id the model remembers cannot silently
/// point at a different widget.
#[derive(Debug, Default)]
pub struct Tracker {
    next_id: u32,
}

/// How far a label may move and still be "about the same place": its own height, at least 12 px.
fn max_shift(r: &Rect) -> f64 {
    (r.h as f64).max(12.0)
}

fn norm(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

impl Tracker {
    pub fn new() -> Self {
        Tracker { next_id: 1 }
    }

    /// Never hand out `id` or any id below it again (targets adopted from another process).
    pub fn reserve(&mut self, id: u32) {
        self.next_id = self.next_id.max(id.saturating_add(1));
    }

    /// Give `labels` ids, matching them against `prev` (the last observation's targets).
    pub fn assign(&mut self, prev: &[Target], labels: Vec<Label>) -> Vec<Target> {
        self.assign_items(
            prev,
            labels
                .into_iter()
                .map(|label| Item { label, ax: None })
                .collect(),
        )
    }

    /// Give fused `items` ids: first by accessible object (the same key keeps its id), then
    /// by text and place. Matching by place is greedy by distance over pairs with equal text,
    /// so two identical labels ("OK" twice) keep their own ids as long as neither moved past
    /// the other.
    pub fn assign_items(&mut self, prev: &[Target], items: Vec<Item>) -> Vec<Target> {
        let mut label_id: Vec<Option<u32>> = vec![None; items.len()];
        let mut prev_used = vec![false; prev.len()];
        for (i, it) in items.iter().enumerate() {
            let Some(key) = it.ax.as_ref().map(|a| &a.key) else {
                continue;
            };
            if let Some(j) = (0..prev.len())
                .find(|&j| !prev_used[j] && prev[j].ax.as_ref().is_some_and(|a| &a.key == key))
            {
                label_id[i] = Some(prev[j].id);
                prev_used[j] = true;
            }
        }
        let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
        let prev_norm: Vec<String> = prev.iter().map(|t| norm(&t.text)).collect();
        for (i, it) in items.iter().enumerate() {
            if label_id[i].is_some() {
                continue;
            }
            let l = &it.label;
            let n = norm(&l.text);
            let c = l.rect.centre();
            for (j, p) in prev.iter().enumerate() {
                if prev_used[j] || prev_norm[j] != n {
                    continue;
                }
                // A control the tree still shows is not taken over by a label in its place.
                if p.ax.is_some() && it.ax.is_some() {
                    continue;
                }
                let pc = p.rect.centre();
                let d = ((c.x - pc.x).powi(2) + (c.y - pc.y).powi(2)).sqrt();
                if d <= max_shift(&p.rect).max(max_shift(&l.rect)) {
                    pairs.push((d, i, j));
                }
            }
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, i, j) in pairs {
            if label_id[i].is_none() && !prev_used[j] {
                label_id[i] = Some(prev[j].id);
                prev_used[j] = true;
            }
        }
        if self.next_id == 0 {
            self.next_id = 1;
        }
        let mut out: Vec<Target> = items
            .into_iter()
            .zip(label_id)
            .map(|(Item { label: l, ax }, id)| {
                let (id, new) = match id {
                    Some(id) => (id, false),
                    None => {
                        let id = self.next_id;
                        self.next_id += 1;
                        (id, true)
                    }
                };
                Target {
                    id,
                    text: l.text,
                    rect: l.rect,
                    conf: l.conf,
                    new,
                    ax,
                }
            })
            .collect();
        // Reading order: top to bottom, then left to right, so numbering on screen is predictable.
        out.sort_by_key(|t| (t.rect.y, t.rect.x, t.id));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(text: &str, x: i32, y: i32) -> Label {
        Label {
            text: text.into(),
            rect: Rect::new(x, y, 40, 14),
            conf: 0.9,
        }
    }

    #[test]
    fn table_of_observations() {
        let mut tr = Tracker::new();
        let first = tr.assign(
            &[],
            vec![
                l("File", 10, 5),
                l("Edit", 60, 5),
                l("OK", 100, 300),
                l("OK", 300, 300),
            ],
        );
        assert!(first.iter().all(|t| t.new));
        let ids = |v: &[Target]| {
            v.iter()
                .map(|t| (t.text.clone(), t.id, t.new))
                .collect::<Vec<_>>()
        };
        // Same labels, slight shift, one gone, one added, case of an OCR slip in case only.
        let second = tr.assign(
            &first,
            vec![
                l("file", 12, 6),
                l("OK", 302, 301),
                l("OK", 99, 300),
                l("Saved", 10, 400),
            ],
        );
        assert_eq!(
            ids(&second),
            vec![
                ("file".into(), 1, false),
                ("OK".into(), 3, false),
                ("OK".into(), 4, false),
                ("Saved".into(), 5, true)
            ]
        );
        // Moved far away: a new target with a new id; ids are never reused.
        let third = tr.assign(&second, vec![l("Saved", 900, 900)]);
        assert_eq!(ids(&third), vec![("Saved".into(), 6, true)]);
    }

    fn ax(key: &str, text: &str, x: i32, y: i32) -> Item {
        Item {
            label: l(text, x, y),
            ax: Some(Ax {
                key: key.into(),
                role: voxdesk_core::semantic::Role::PUSH_BUTTON,
                states: Default::default(),
                value: None,
                drawn: false,
            }),
        }
    }

    #[test]
    fn a_control_keeps_its_id_while_it_is_the_same_object_and_a_new_one_never_takes_it() {
        let mut tr = Tracker::new();
        let first = tr.assign_items(
            &[],
            vec![
                ax(":1.2/save", "Save", 100, 400),
                ax(":1.2/cancel", "Cancel", 200, 400),
                Item {
                    label: l("Untitled", 10, 10),
                    ax: None,
                },
            ],
        );
        let id = |ts: &[Target], text: &str| ts.iter().find(|t| t.text == text).unwrap().id;
        // The dialog grew a line: the buttons moved down; one was renamed; a new button sits
        // where Save was. The same objects keep their ids; the newcomer gets a new one.
        let second = tr.assign_items(
            &first,
            vec![
                ax(":1.2/save", "Save As", 100, 440),
                ax(":1.2/cancel", "Cancel", 200, 440),
                ax(":1.2/delete", "Save", 100, 400),
                Item {
                    label: l("Untitled", 10, 10),
                    ax: None,
                },
            ],
        );
        assert_eq!(id(&second, "Save As"), id(&first, "Save"));
        assert_eq!(id(&second, "Cancel"), id(&first, "Cancel"));
        assert_eq!(id(&second, "Untitled"), id(&first, "Untitled"));
        let newcomer = second.iter().find(|t| t.text == "Save").unwrap();
        assert!(newcomer.new && !first.iter().any(|t| t.id == newcomer.id));
        assert_eq!(newcomer.source(), "ax");
    }
}
