//! Stable target ids across observations: the same text at about the same place keeps its id; anything else is new.

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

    /// Give `labels` ids, matching them against `prev` (the last observation's targets).
    /// Matching is greedy by distance over pairs with equal text, so two identical labels
    /// ("OK" twice) keep their own ids as long as neither moved past the other.
    pub fn assign(&mut self, prev: &[Target], labels: Vec<Label>) -> Vec<Target> {
        let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
        let prev_norm: Vec<String> = prev.iter().map(|t| norm(&t.text)).collect();
        for (i, l) in labels.iter().enumerate() {
            let n = norm(&l.text);
            let c = l.rect.centre();
            for (j, p) in prev.iter().enumerate() {
                if prev_norm[j] != n {
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
        let mut label_id: Vec<Option<u32>> = vec![None; labels.len()];
        let mut prev_used = vec![false; prev.len()];
        for (_, i, j) in pairs {
            if label_id[i].is_none() && !prev_used[j] {
                label_id[i] = Some(prev[j].id);
                prev_used[j] = true;
            }
        }
        if self.next_id == 0 {
            self.next_id = 1;
        }
        let mut out: Vec<Target> = labels
            .into_iter()
            .zip(label_id)
            .map(|(l, id)| {
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
}
