//! Scores targets against ground-truth labels: a label is found when a target has its exact text and a centre inside its box (or, for a piece of one drawn line, when a target of that line reads it in place); a target inside no label is junk.
//!
//! Two rules keep the score honest where one text node is not one target:
//! - A syntax-coloured terminal or code line is several text nodes (labels) but one drawn line,
//!   and the loop wants the line. A label marked as part of a line (`line`) is also found by a
//!   target centred in that line's box whose text contains the label's text where the label is:
//!   that text lies within the label's box (to 1.5 character widths; the box spans the node's
//!   leading indentation, which its trimmed text does not show).
//! - A wrapped name (an icon's file name on two lines) is one text node whose box spans both
//!   lines: only a target that reads the whole name counts. Half a name is not the name.
//!
//! Placeholders (`kind: "placeholder"`, the faint hint in an empty input) and labels partly
//! hidden under another element (`"partly-hidden"`) may be read or not: they count neither for
//! recall nor as junk.

use serde::Deserialize;

use voxdesk_core::geometry::Rect;

/// One ground-truth label of a fixture (from the DOM of the page that was rendered).
#[derive(Debug, Clone, Deserialize)]
pub struct GtLabel {
    pub text: String,
    #[serde(rename = "box")]
    pub bbox: GtBox,
    /// CSS font size in px at scale 1.
    pub font_px: f64,
    /// Text on a coloured fill (button, chip, badge) rather than the page background.
    #[serde(default)]
    pub on_colour: bool,
    /// What the text is (the page's `data-kind`: "terminal", "code", "shortcut", "icon",
    /// "avatar", "badge", "date", "button", ...); empty in old ground truth, read as "text".
    #[serde(default)]
    pub kind: String,
    /// The drawn line this text node is a piece of (terminal and code lines).
    #[serde(default)]
    pub line: Option<GtLine>,
    /// WCAG contrast ratio of the text's colour against its fill (1–21), where the page
    /// measured it.
    #[serde(default)]
    pub contrast: Option<f64>,
}

/// One drawn line made of several text nodes: its number within the page and its box.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct GtLine {
    pub id: u32,
    #[serde(flatten)]
    pub bbox: GtBox,
}

/// The kinds of labels that may be read or not: the faint hint in an empty input, and a label
/// partly hidden under another element (only what shows of it can be read).
pub const PLACEHOLDER: &str = "placeholder";
pub const PARTLY_HIDDEN: &str = "partly-hidden";

/// May this kind of label be read or not (counted neither for recall nor as junk)?
pub fn optional(kind: &str) -> bool {
    kind == PLACEHOLDER || kind == PARTLY_HIDDEN
}

impl GtLabel {
    /// The label's kind, "text" when the ground truth names none.
    pub fn kind(&self) -> &str {
        if self.kind.is_empty() {
            "text"
        } else {
            &self.kind
        }
    }

    /// Is this label read by one of `targets`?
    pub fn found_in(&self, targets: &[Found]) -> bool {
        let r = self.bbox.rect();
        let want = norm(&self.text);
        if targets
            .iter()
            .any(|t| r.contains(t.rect.centre()) && norm(&t.text) == want)
        {
            return true;
        }
        let Some(line) = &self.line else {
            return false;
        };
        let b = line.bbox.rect();
        let lr = Rect::new(b.x - 3, b.y - 3, b.w + 6, b.h + 6);
        targets.iter().any(|t| {
            if !lr.contains(t.rect.centre()) {
                return false;
            }
            let text = norm(&t.text);
            let n = text.chars().count().max(1);
            let cw = t.rect.w as f64 / n as f64;
            // A text node's box spans its leading indentation ("        l.text_h = "), which
            // the label's text (trimmed) does not show: the text read must lie in the box.
            let len = want.chars().count() as f64 * cw;
            let slack = 1.5 * cw + 2.0;
            text.match_indices(&want).any(|(i, _)| {
                let k = text[..i].chars().count();
                let at = t.rect.x as f64 + k as f64 * cw;
                at >= self.bbox.x - slack && at + len <= self.bbox.x + self.bbox.w + slack
            })
        })
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
pub struct GtBox {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// A fixture's ground truth file (`NAME.json` beside `NAME.png`).
#[derive(Debug, Clone, Deserialize)]
pub struct GroundTruth {
    pub width: u32,
    pub height: u32,
    pub scale: f64,
    pub theme: String,
    pub labels: Vec<GtLabel>,
    /// Boxes of non-text things (icons) — reading them as text is junk.
    #[serde(default)]
    pub icons: Vec<GtBox>,
    /// Where the truth came from when it is not the whole page ("accessibility tree": the
    /// elements an app exposes, not every text it draws, so text read elsewhere is no junk).
    #[serde(default)]
    pub truth: Option<String>,
}

impl GroundTruth {
    /// Does the truth hold every text drawn (so text read elsewhere is junk)?
    pub fn complete(&self) -> bool {
        self.truth.is_none()
    }
}

impl GtBox {
    pub fn rect(&self) -> Rect {
        let x0 = self.x.floor() as i32;
        let y0 = self.y.floor() as i32;
        Rect::new(
            x0,
            y0,
            ((self.x + self.w).ceil() as i32 - x0).max(1),
            ((self.y + self.h).ceil() as i32 - y0).max(1),
        )
    }
}

/// A target as scored: text and box in the image's pixels.
#[derive(Debug, Clone)]
pub struct Found {
    pub text: String,
    pub rect: Rect,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Score {
    pub labels: usize,
    pub found: usize,
    pub targets: usize,
    pub junk: usize,
}

impl Score {
    pub fn add(&mut self, o: Score) {
        self.labels += o.labels;
        self.found += o.found;
        self.targets += o.targets;
        self.junk += o.junk;
    }
    pub fn recall(&self) -> Option<f64> {
        (self.labels > 0).then(|| self.found as f64 / self.labels as f64)
    }
    pub fn junk_rate(&self) -> Option<f64> {
        (self.targets > 0).then(|| self.junk as f64 / self.targets as f64)
    }
}

/// Text as compared: whitespace collapsed, and typographic variants that OCR cannot tell from
/// their plain forms (an ellipsis from three dots, curly from straight quotes) made plain.
pub fn norm(s: &str) -> String {
    let plain = s
        .replace('…', "...")
        .replace(['‘', '’'], "'")
        .replace(['“', '”'], "\"");
    plain.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Score `targets` against the labels of `gt` that `keep` selects. Junk is counted over all
/// targets (it does not depend on the label filter) and only when `count_junk`.
pub fn score(
    gt: &GroundTruth,
    targets: &[Found],
    keep: impl Fn(&GtLabel) -> bool,
    count_junk: bool,
) -> Score {
    let mut s = Score::default();
    for l in gt.labels.iter().filter(|l| !optional(l.kind()) && keep(l)) {
        s.labels += 1;
        if l.found_in(targets) {
            s.found += 1;
        }
    }
    if count_junk {
        s.targets = targets.len();
        s.junk = junk(gt, targets).len();
    }
    s
}

/// Targets whose centre lies in no label and no drawn line (grown by 3 px): text where the page
/// has none.
pub fn junk<'a>(gt: &GroundTruth, targets: &'a [Found]) -> Vec<&'a Found> {
    let bounds = Rect::new(0, 0, gt.width as i32, gt.height as i32);
    targets
        .iter()
        .filter(|t| {
            !gt.labels.iter().any(|l| {
                let inside =
                    |b: &GtBox| b.rect().expand_within(3, &bounds).contains(t.rect.centre());
                inside(&l.bbox) || l.line.as_ref().is_some_and(|ln| inside(&ln.bbox))
            })
        })
        .collect()
}

/// Which labels of the text a list of missed labels were, for debugging (`voxdesk bench --misses`).
pub fn misses<'a>(gt: &'a GroundTruth, targets: &[Found]) -> Vec<(&'a GtLabel, Option<String>)> {
    gt.labels
        .iter()
        .filter_map(|l| {
            if optional(l.kind()) || l.found_in(targets) {
                return None;
            }
            let r = l.bbox.rect();
            let near = targets
                .iter()
                .find(|t| r.intersects(&t.rect))
                .map(|t| t.text.clone());
            Some((l, near))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gt() -> GroundTruth {
        serde_json::from_str(
            r#"{"width":400,"height":100,"scale":1,"theme":"light","labels":[
                {"text":"File","box":{"x":10,"y":10,"w":30,"h":14},"font_px":13},
                {"text":"Save  As","box":{"x":100,"y":10,"w":60,"h":14},"font_px":11,"on_colour":true}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn found_needs_text_and_centre_junk_is_outside_every_label() {
        let g = gt();
        let t = |text: &str, x, y, w, h| Found {
            text: text.into(),
            rect: Rect::new(x, y, w, h),
        };
        let targets = [
            t("File", 11, 11, 28, 12),
            t("Save As", 100, 10, 60, 14),
            t("Edit", 300, 50, 20, 10),
        ];
        assert_eq!(
            score(&g, &targets, |_| true, true),
            Score {
                labels: 2,
                found: 2,
                targets: 3,
                junk: 1
            }
        );
        // Right place, wrong text; right text, centre outside.
        let targets = [t("Fi1e", 11, 11, 28, 12), t("Save As", 100, 10, 140, 14)];
        assert_eq!(
            score(&g, &targets, |_| true, true),
            Score {
                labels: 2,
                found: 0,
                targets: 2,
                junk: 1
            }
        );
        assert_eq!(
            score(&g, &[], |l| l.font_px < 13.0, false).recall(),
            Some(0.0)
        );
        assert_eq!(Score::default().recall(), None);
    }
}
