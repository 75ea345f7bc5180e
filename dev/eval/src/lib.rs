//! Scores targets against ground-truth labels: a label is found when a target has its exact text and a centre inside its box (or, for a piece of one drawn line, when a target of that line reads it in place); a target inside no label is junk.
//!
//! Three rules keep the score honest where one text node is not one target:
//! - A syntax-coloured terminal or code line is several text nodes (labels) but one drawn line,
//!   and the loop wants the line. A label marked as part of a line (`line`) is also found by a
//!   target centred in that line's box whose text contains the label's text where the label is:
//!   that text lies within the label's box (to 1.5 character widths; the box spans the node's
//!   leading indentation, which its trimmed text does not show).
//! - Text nodes that run on as one line of text, in one size and colour on one fill and a word
//!   space apart ("#5484 opened ", "14 days ago", " by quinn"), are pieces of one drawn line in
//!   the same way (`GroundTruth::join_runs`): nothing drawn shows where one node ends.
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

#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct GtBox {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// A fixture's ground truth file (`NAME.json` beside `NAME.png`), with the text nodes that run
/// on as one drawn line of text joined into it ([`GroundTruth::join_runs`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "TruthFile")]
pub struct GroundTruth {
    pub width: u32,
    pub height: u32,
    pub scale: f64,
    pub theme: String,
    pub labels: Vec<GtLabel>,
    /// Boxes of non-text things (icons) — reading them as text is junk.
    pub icons: Vec<GtBox>,
    /// Where the truth came from when it is not the whole page ("accessibility tree": the
    /// elements an app exposes, not every text it draws, so text read elsewhere is no junk).
    pub truth: Option<String>,
}

/// The file as written.
#[derive(Deserialize)]
struct TruthFile {
    width: u32,
    height: u32,
    scale: f64,
    theme: String,
    labels: Vec<GtLabel>,
    #[serde(default)]
    icons: Vec<GtBox>,
    #[serde(default)]
    truth: Option<String>,
}

impl From<TruthFile> for GroundTruth {
    fn from(f: TruthFile) -> Self {
        let mut gt = GroundTruth {
            width: f.width,
            height: f.height,
            scale: f.scale,
            theme: f.theme,
            labels: f.labels,
            icons: f.icons,
            truth: f.truth,
        };
        gt.join_runs();
        gt
    }
}

impl GroundTruth {
    /// Does the truth hold every text drawn (so text read elsewhere is junk)?
    pub fn complete(&self) -> bool {
        self.truth.is_none()
    }

    /// Text nodes that run on as one drawn line of text become pieces of that line (as the
    /// `data-line` pieces of a terminal or code line are): "#5484 opened ", "14 days ago",
    /// " by quinn" are three nodes of the page but one line on the screen, in one size and one
    /// colour on one fill, a word space apart, and nothing drawn tells where one node ends.
    /// Nodes in another colour or size, on another fill, or further apart than a word space
    /// stay labels of their own (a reader can see them apart). Only where the truth knows the
    /// colours (`contrast`; not the accessibility tree's).
    pub fn join_runs(&mut self) {
        let n = self.labels.len();
        let joinable =
            |l: &GtLabel| l.line.is_none() && !optional(l.kind()) && l.contrast.is_some();
        let mut root: Vec<usize> = (0..n).collect();
        fn find(root: &mut [usize], mut i: usize) -> usize {
            while root[i] != i {
                root[i] = root[root[i]];
                i = root[i];
            }
            i
        }
        for a in 0..n {
            for b in 0..n {
                let (la, lb) = (&self.labels[a], &self.labels[b]);
                if a != b && joinable(la) && joinable(lb) && runs_on(la, lb, self.scale) {
                    let (ra, rb) = (find(&mut root, a), find(&mut root, b));
                    root[ra.max(rb)] = ra.min(rb);
                }
            }
        }
        let mut next = self
            .labels
            .iter()
            .filter_map(|l| l.line.map(|ln| ln.id + 1))
            .max()
            .unwrap_or(0);
        let mut runs: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
        for i in 0..n {
            let r = find(&mut root, i);
            runs.entry(r).or_default().push(i);
        }
        for members in runs.into_values().filter(|m| m.len() > 1) {
            let boxes: Vec<GtBox> = members.iter().map(|&i| self.labels[i].bbox).collect();
            let x0 = boxes.iter().map(|b| b.x).fold(f64::INFINITY, f64::min);
            let y0 = boxes.iter().map(|b| b.y).fold(f64::INFINITY, f64::min);
            let x1 = boxes
                .iter()
                .map(|b| b.x + b.w)
                .fold(f64::NEG_INFINITY, f64::max);
            let y1 = boxes
                .iter()
                .map(|b| b.y + b.h)
                .fold(f64::NEG_INFINITY, f64::max);
            let line = GtLine {
                id: next,
                bbox: GtBox {
                    x: x0,
                    y: y0,
                    w: x1 - x0,
                    h: y1 - y0,
                },
            };
            next += 1;
            for i in members {
                self.labels[i].line = Some(line);
            }
        }
    }
}

/// Does `b` go on `a`'s line of text right after it: the same size, colour and fill, the same
/// line (centres within a quarter of the height), and at most a word space (0.4 em) after it?
fn runs_on(a: &GtLabel, b: &GtLabel, scale: f64) -> bool {
    let (ab, bb) = (&a.bbox, &b.bbox);
    let same_colour = match (a.contrast, b.contrast) {
        (Some(x), Some(y)) => (x - y).abs() <= 0.05,
        _ => false,
    };
    let gap = bb.x - (ab.x + ab.w);
    (a.font_px - b.font_px).abs() < 0.5
        && a.on_colour == b.on_colour
        && same_colour
        && (ab.h - bb.h).abs() <= 0.3 * ab.h.max(bb.h)
        && ((ab.y + ab.h / 2.0) - (bb.y + bb.h / 2.0)).abs() <= 0.25 * ab.h.min(bb.h)
        && (-2.0..=0.4 * a.font_px * scale).contains(&gap)
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
    fn nodes_that_run_on_as_one_line_are_its_pieces() {
        // "#5484 opened " "14 days ago" " by quinn" in one colour; a link in another colour
        // right after; a node two ems further on; one in the same colour on the next line.
        let g: GroundTruth = serde_json::from_str(
            r##"{"width":800,"height":100,"scale":2,"theme":"light","labels":[
                {"text":"#5484 opened","box":{"x":100,"y":20,"w":174,"h":24},"font_px":12,"contrast":5.77},
                {"text":"14 days ago","box":{"x":274,"y":20,"w":144,"h":24},"font_px":12,"contrast":5.77},
                {"text":"by quinn","box":{"x":418,"y":20,"w":106,"h":24},"font_px":12,"contrast":5.77},
                {"text":"edit","box":{"x":530,"y":20,"w":50,"h":24},"font_px":12,"contrast":3.1},
                {"text":"Closed","box":{"x":630,"y":20,"w":80,"h":24},"font_px":12,"contrast":5.77},
                {"text":"Next line","box":{"x":100,"y":46,"w":120,"h":24},"font_px":12,"contrast":5.77}]}"##,
        )
        .unwrap();
        let line = |i: usize| g.labels[i].line.map(|l| l.id);
        assert!(line(0).is_some());
        assert_eq!(line(0), line(1));
        assert_eq!(line(1), line(2));
        assert_eq!((line(3), line(4), line(5)), (None, None, None));
        let t = |text: &str, x, w| Found {
            text: text.into(),
            rect: Rect::new(x, 20, w, 24),
        };
        // The run read whole finds its three pieces, in place; not the link beside it.
        let run = [t("#5484 opened 14 days ago by quinn", 100, 424)];
        assert_eq!(score(&g, &run, |_| true, false).found, 3);
        // A misread run finds only the pieces it reads; a piece read alone is found.
        let misread = [t("#5484 opened 14 days ago by quin", 100, 424)];
        assert_eq!(score(&g, &misread, |_| true, false).found, 2);
        assert_eq!(
            score(&g, &[t("by quinn", 418, 106)], |_| true, false).found,
            1
        );
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
