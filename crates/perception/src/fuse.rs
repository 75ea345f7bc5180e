//! The accessibility tree fused with what OCR read (pure): every control the tree names becomes a target of its own with its role, states and value; OCR labels it explains (its drawn name, a field's text, the label beside a check box) are folded into it and mark it seen; every other label stays a target as read. OCR alone still covers what has no tree (terminals, Xaw, canvases) and what the tree leaves unnamed (pcmanfm's icons).
//!
//! Heuristics (each generic, none keyed to an application's strings):
//! - a label whose centre lies in a control is that control's text when it is the control's
//!   name (either contains the other, spaces and case aside, or 80 % alike) or the control has
//!   no name and holds at most two labels (more: a container, its labels stay targets); a
//!   single-line field's text is its value, so any label in it is folded;
//! - a label over, beside (same row, ≤ 48 px apart) or just above a control is folded when its
//!   text is the control's name (a check box and its label read as one, a form's "Name" left of
//!   its field);
//! - an unnamed single-line field takes its name from the nearest label on its left (≤ 250 px)
//!   or just above, among labels not drawn inside another control;
//! - an unnamed row, cell, icon or menu with no text in it and not checked is dropped (nothing
//!   to name it by);
//! - boxes thinner than 4 px and controls whose centre is off the frame are dropped.

use super::label::Label;
use voxdesk_core::geometry::Rect;
use voxdesk_core::semantic::{Node, Role, State, States};

/// What the tree says of a target.
#[derive(Debug, Clone, PartialEq)]
pub struct Ax {
    /// The accessible object (bus name + path): the id follows it.
    pub key: String,
    pub role: Role,
    pub states: States,
    /// A field's contents, exactly.
    pub value: Option<String>,
    /// OCR read its name or text too (`source` "ax+ocr").
    pub drawn: bool,
}

/// A label or a control before it has an id.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub label: Label,
    pub ax: Option<Ax>,
}

/// Words compared without case, spaces or the punctuation OCR adds around them.
fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(|c| c.to_lowercase())
        .collect()
}

/// Is OCR's `read` the drawing of `name`? Either contains the other ("() I accept the terms"
/// holds "I accept the terms"; "Save" is in "Save As…"), or they differ by a slip or two of
/// OCR's (a check box's circle read as "Ol" before its label): at least 80 % alike.
fn names(name: &str, read: &str) -> bool {
    let (a, b) = (norm(name), norm(read));
    !a.is_empty()
        && !b.is_empty()
        && (a.contains(&b)
            || b.contains(&a)
            || (a.chars().count() >= 5 && strsim::normalized_levenshtein(&a, &b) >= 0.8))
}

fn single_line(n: &Node, labels_h: i32) -> bool {
    !n.states.has(State::MULTI_LINE) && n.rect.h <= 3 * labels_h.max(12)
}

/// A control worth a target of its own.
fn control(n: &Node, frame: &Rect) -> bool {
    let interactive = n.role.is_interactive() && (n.role != Role::TEXT || n.is_field());
    interactive && n.rect.w >= 4 && n.rect.h >= 4 && frame.contains(n.rect.centre())
}

fn beside(label: &Rect, node: &Rect) -> bool {
    let same_row =
        (label.centre().y - node.centre().y).abs() <= (label.h.max(node.h) as f64) / 2.0 + 2.0;
    let gap = if label.x >= node.right() {
        label.x - node.right()
    } else {
        node.x - label.right()
    };
    // OCR's box of a label often runs a few pixels into the control's.
    same_row && (-10..=48).contains(&gap)
}

fn above(label: &Rect, node: &Rect) -> bool {
    let gap = node.y - label.bottom();
    (-2..=30).contains(&gap) && label.x < node.right() && node.x < label.right()
}

/// Fuse `labels` (OCR) with `nodes` (the tree, in the same capture pixels) within `frame`.
pub fn fuse(labels: &[Label], nodes: &[Node], frame: Rect) -> Vec<Item> {
    let mut controls: Vec<Node> = nodes
        .iter()
        .filter(|n| control(n, &frame))
        .cloned()
        .collect();
    // The smallest box that holds a label is the control it belongs to.
    controls.sort_by_key(|n| n.rect.area());
    // An unnamed single-line field is named by the nearest label beside it, not one drawn in
    // another control (an icon's glyph), and never a document's text area (what is left of it
    // is other text, not its name).
    let free: Vec<Label> = labels
        .iter()
        .filter(|l| !controls.iter().any(|n| n.rect.contains(l.rect.centre())))
        .cloned()
        .collect();
    for n in controls
        .iter_mut()
        .filter(|n| n.name.is_empty() && n.is_field())
    {
        if single_line(n, 16) {
            n.name = nearest_label(&free, &n.rect).unwrap_or_default();
        }
    }
    let mut drawn = vec![false; controls.len()];
    let mut read_names: Vec<Vec<(Rect, String)>> = vec![Vec::new(); controls.len()];
    let mut folded = vec![false; labels.len()];
    // An unnamed control holding more than two labels is a container (a calendar, a panel):
    // its labels are targets of their own, not its name.
    let holds: Vec<usize> = controls
        .iter()
        .map(|n| {
            labels
                .iter()
                .filter(|l| n.rect.contains(l.rect.centre()))
                .count()
        })
        .collect();
    for (li, l) in labels.iter().enumerate() {
        let c = l.rect.centre();
        if let Some(ci) = controls.iter().position(|n| n.rect.contains(c)) {
            let n = &controls[ci];
            let fold = if n.is_field() {
                single_line(n, l.rect.h) || names(&n.name, &l.text)
            } else {
                (n.name.is_empty() && holds[ci] <= 2) || names(&n.name, &l.text)
            };
            if fold {
                folded[li] = true;
                drawn[ci] = true;
                if n.name.is_empty() && !n.is_field() {
                    read_names[ci].push((l.rect, l.text.clone()));
                }
                continue;
            }
        }
        // A label beside or above the control it names.
        if let Some(ci) = controls.iter().position(|n| {
            names(&n.name, &l.text)
                && norm(&n.name).len() <= norm(&l.text).len() + 2
                && (l.rect.intersects(&n.rect)
                    || beside(&l.rect, &n.rect)
                    || (n.is_field() && above(&l.rect, &n.rect)))
        }) {
            folded[li] = true;
            drawn[ci] = true;
        }
    }
    let mut out: Vec<Item> = Vec::new();
    for (ci, n) in controls.iter().enumerate() {
        let mut name = n.name.clone();
        if name.is_empty() {
            let mut read = std::mem::take(&mut read_names[ci]);
            read.sort_by_key(|(r, _)| (r.y, r.x));
            name = read
                .into_iter()
                .map(|(_, t)| t)
                .collect::<Vec<_>>()
                .join(" ");
        }
        let rows = matches!(
            n.role,
            Role::TABLE_CELL | Role::LIST_ITEM | Role::TREE_ITEM | Role::ICON | Role::MENU
        );
        // A box a cell or row shows checked is a control even unnamed (a list's check column).
        if name.is_empty() && rows && !n.states.has(State::CHECKED) {
            continue;
        }
        out.push(Item {
            label: Label {
                text: name,
                rect: n.rect,
                conf: 1.0,
            },
            ax: Some(Ax {
                key: n.key.clone(),
                role: n.role,
                states: n.states,
                value: n.value.clone(),
                drawn: drawn[ci],
            }),
        });
    }
    for (l, f) in labels.iter().zip(folded) {
        if !f {
            out.push(Item {
                label: l.clone(),
                ax: None,
            });
        }
    }
    out
}

/// The text of the nearest label left of `field` on its row (≤ 250 px), else just above it.
fn nearest_label(labels: &[Label], field: &Rect) -> Option<String> {
    let left = labels
        .iter()
        .filter(|l| {
            l.rect.right() <= field.x + 2
                && field.x - l.rect.right() <= 250
                && (l.rect.centre().y - field.centre().y).abs() <= field.h as f64 / 2.0
        })
        .max_by_key(|l| l.rect.right());
    let up = || {
        labels
            .iter()
            .filter(|l| above(&l.rect, field))
            .max_by_key(|l| l.rect.bottom())
    };
    left.or_else(up).map(|l| l.text.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(text: &str, x: i32, y: i32, w: i32) -> Label {
        Label {
            text: text.into(),
            rect: Rect::new(x, y, w, 16),
            conf: 0.9,
        }
    }
    fn n(key: &str, role: Role, name: &str, rect: Rect, states: &[State]) -> Node {
        Node {
            key: key.into(),
            role,
            name: name.into(),
            states: States::of(states),
            value: None,
            rect,
        }
    }
    const FRAME: Rect = Rect::new(0, 0, 1920, 1080);
    fn text_of(items: &[Item]) -> Vec<(String, Option<&'static str>, bool)> {
        items
            .iter()
            .map(|i| {
                (
                    i.label.text.clone(),
                    i.ax.as_ref().map(|a| a.role.name()),
                    i.ax.as_ref().is_some_and(|a| a.drawn),
                )
            })
            .collect()
    }

    #[test]
    fn a_check_box_and_its_glued_label_are_one_target_with_its_state() {
        let labels = [l("() I accept the terms", 20, 100, 180)];
        let nodes = [n(
            ":1.2/7",
            Role::CHECK_BOX,
            "I accept the terms",
            Rect::new(18, 98, 190, 20),
            &[State::ENABLED],
        )];
        let f = fuse(&labels, &nodes, FRAME);
        assert_eq!(
            text_of(&f),
            [("I accept the terms".into(), Some("check box"), true)]
        );
    }

    #[test]
    fn a_label_read_with_a_slip_is_still_the_controls_drawn_name() {
        let labels = [
            l("Ol accept the terms", 26, 345, 150),
            l("Save", 400, 345, 40),
        ];
        let nodes = [n(
            ":1.2/c",
            Role::CHECK_BOX,
            "I accept the terms",
            Rect::new(26, 346, 13, 14),
            &[],
        )];
        let f = fuse(&labels, &nodes, FRAME);
        assert_eq!(
            text_of(&f),
            [
                ("I accept the terms".into(), Some("check box"), true),
                ("Save".into(), None, false)
            ]
        );
    }

    #[test]
    fn a_radio_read_into_its_label_and_a_label_running_into_its_field_are_folded() {
        let labels = [l("@Small", 26, 383, 57), l("Name", 23, 232, 51)];
        let nodes = [
            n(
                ":1.2/r",
                Role::RADIO_BUTTON,
                "Small",
                Rect::new(27, 382, 13, 14),
                &[State::CHECKED],
            ),
            n(
                ":1.2/n",
                Role::ENTRY,
                "Name",
                Rect::new(69, 232, 186, 22),
                &[State::EDITABLE],
            ),
        ];
        let f = fuse(&labels, &nodes, FRAME);
        assert_eq!(
            text_of(&f),
            [
                ("Small".into(), Some("radio button"), true),
                ("Name".into(), Some("entry"), true)
            ]
        );
    }

    #[test]
    fn an_empty_field_is_a_target_named_by_the_label_beside_it() {
        let labels = [l("Name", 20, 100, 40), l("Email", 20, 140, 44)];
        let nodes = [
            n(
                ":1.2/a",
                Role::ENTRY,
                "Name",
                Rect::new(70, 98, 180, 22),
                &[State::EDITABLE],
            ),
            // Unnamed: the nearest label on its left names it, and is folded into it.
            n(
                ":1.2/b",
                Role::ENTRY,
                "",
                Rect::new(70, 138, 180, 22),
                &[State::EDITABLE],
            ),
        ];
        let f = fuse(&labels, &nodes, FRAME);
        assert_eq!(
            text_of(&f),
            [
                ("Name".into(), Some("entry"), true),
                ("Email".into(), Some("entry"), true),
            ]
        );
    }

    #[test]
    fn rows_glued_by_ocr_are_separate_cells_and_text_typed_in_a_field_is_its_value() {
        let labels = [l("alpha.txtbeta.txt", 10, 200, 150), l("milk", 300, 50, 40)];
        let mut field = n(
            ":1.2/f",
            Role::TEXT,
            "",
            Rect::new(290, 45, 300, 26),
            &[State::EDITABLE],
        );
        field.value = Some("milk".into());
        let nodes = [
            n(
                ":1.2/r1",
                Role::TABLE_CELL,
                "alpha.txt",
                Rect::new(8, 198, 70, 20),
                &[],
            ),
            n(
                ":1.2/r2",
                Role::TABLE_CELL,
                "beta.txt",
                Rect::new(80, 198, 70, 20),
                &[],
            ),
            field,
            // Unnamed with nothing in it: nothing to name it by.
            n(
                ":1.2/r3",
                Role::TABLE_CELL,
                "",
                Rect::new(8, 230, 20, 20),
                &[],
            ),
            // Off the frame, and a sliver.
            n(
                ":1.2/x",
                Role::PUSH_BUTTON,
                "Far",
                Rect::new(5000, 5000, 20, 20),
                &[],
            ),
            n(
                ":1.2/y",
                Role::PUSH_BUTTON,
                "Thin",
                Rect::new(10, 10, 2, 20),
                &[],
            ),
        ];
        let f = fuse(&labels, &nodes, FRAME);
        let got = text_of(&f);
        assert!(
            got.contains(&("alpha.txt".into(), Some("table cell"), false)),
            "{got:?}"
        );
        assert!(
            got.contains(&("beta.txt".into(), Some("table cell"), true)),
            "{got:?}"
        );
        assert!(
            !got.iter().any(|(t, _, _)| t == "Far" || t == "Thin"),
            "{got:?}"
        );
        let field = f.iter().find(|i| i.label.text.is_empty()).unwrap();
        assert_eq!(field.ax.as_ref().unwrap().value.as_deref(), Some("milk"));
        assert!(field.ax.as_ref().unwrap().drawn);
        // The glued label's centre is in beta's cell and holds its name: it is folded there,
        // not left as a third target.
        assert_eq!(f.len(), 3, "{got:?}");
    }

    #[test]
    fn an_unnamed_icon_takes_the_text_read_in_it_and_other_labels_stay() {
        let labels = [
            l("report.pdf", 100, 160, 80),
            l("Free space: 41 GiB", 600, 1000, 200),
        ];
        let nodes = [n(":1.2/i", Role::ICON, "", Rect::new(96, 100, 88, 80), &[])];
        let f = fuse(&labels, &nodes, FRAME);
        assert_eq!(
            text_of(&f),
            [
                ("report.pdf".into(), Some("icon"), true),
                ("Free space: 41 GiB".into(), None, false),
            ]
        );
    }

    #[test]
    fn a_glyph_in_a_button_does_not_name_a_field_nor_does_text_beside_an_editor() {
        let labels = [l("vv", 742, 345, 20), l("No symbols found", 500, 400, 120)];
        let nodes = [
            n(
                ":1.2/t",
                Role::TOGGLE_BUTTON,
                "",
                Rect::new(740, 336, 25, 34),
                &[],
            ),
            n(
                ":1.2/loc",
                Role::TEXT,
                "",
                Rect::new(767, 336, 377, 34),
                &[State::EDITABLE, State::SINGLE_LINE],
            ),
            n(
                ":1.2/ed",
                Role::TEXT,
                "",
                Rect::new(668, 368, 741, 329),
                &[State::EDITABLE, State::MULTI_LINE],
            ),
            // A list's check column: unnamed, checked, nothing read in it: still a target.
            n(
                ":1.2/c",
                Role::TABLE_CELL,
                "",
                Rect::new(826, 524, 41, 21),
                &[State::CHECKED, State::ENABLED],
            ),
        ];
        let f = fuse(&labels, &nodes, FRAME);
        let field = |key: &str| {
            f.iter()
                .find(|i| i.ax.as_ref().is_some_and(|a| a.key == key))
                .unwrap()
        };
        assert_eq!(field(":1.2/loc").label.text, "");
        assert_eq!(field(":1.2/ed").label.text, "");
        assert_eq!(
            field(":1.2/c")
                .ax
                .as_ref()
                .unwrap()
                .states
                .words(Role::TABLE_CELL),
            ["checked"]
        );
        // A calendar holds its days: they stay targets, and do not become its name.
        let days = [
            l("1", 900, 600, 10),
            l("2", 930, 600, 10),
            l("3", 960, 600, 10),
        ];
        let cal = [n(
            ":1.2/cal",
            Role::CALENDAR,
            "",
            Rect::new(890, 500, 200, 150),
            &[State::ENABLED],
        )];
        let f = fuse(&days, &cal, FRAME);
        assert_eq!(f.len(), 4);
        assert_eq!(f.iter().find(|i| i.ax.is_some()).unwrap().label.text, "");
    }

    #[test]
    fn a_multi_line_editor_keeps_its_lines_as_targets() {
        let labels = [l("first line", 10, 100, 90), l("second line", 10, 120, 100)];
        let nodes = [n(
            ":1.2/t",
            Role::TEXT,
            "",
            Rect::new(0, 90, 800, 400),
            &[State::EDITABLE, State::MULTI_LINE],
        )];
        let f = fuse(&labels, &nodes, FRAME);
        assert_eq!(f.len(), 3);
        assert_eq!(f.iter().filter(|i| i.ax.is_none()).count(), 2);
    }

    #[test]
    fn without_a_tree_every_label_is_a_target_as_read() {
        let labels = [l("7", 10, 10, 10), l("+", 30, 10, 10)];
        let f = fuse(&labels, &[], FRAME);
        assert_eq!(
            f.iter().map(|i| &i.label).cloned().collect::<Vec<_>>(),
            labels
        );
        assert!(f.iter().all(|i| i.ax.is_none()));
    }
}
