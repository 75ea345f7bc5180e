//! Scores targets against ground-truth labels: a label is found when a target has its exact text and a centre inside its box; a target inside no label is junk.

use serde::Deserialize;

use crate::geometry::Rect;

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

pub fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
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
    for l in gt.labels.iter().filter(|l| keep(l)) {
        s.labels += 1;
        let r = l.bbox.rect();
        let want = norm(&l.text);
        if targets
            .iter()
            .any(|t| r.contains(t.rect.centre()) && norm(&t.text) == want)
        {
            s.found += 1;
        }
    }
    if count_junk {
        s.targets = targets.len();
        s.junk = junk(gt, targets).len();
    }
    s
}

/// Targets whose centre lies in no label (grown by 3 px): text where the page has none.
pub fn junk<'a>(gt: &GroundTruth, targets: &'a [Found]) -> Vec<&'a Found> {
    let bounds = Rect::new(0, 0, gt.width as i32, gt.height as i32);
    targets
        .iter()
        .filter(|t| {
            !gt.labels.iter().any(|l| {
                l.bbox
                    .rect()
                    .expand_within(3, &bounds)
                    .contains(t.rect.centre())
            })
        })
        .collect()
}

/// Which labels of the text a list of missed labels were, for debugging (`voxdesk bench --misses`).
pub fn misses<'a>(gt: &'a GroundTruth, targets: &[Found]) -> Vec<(&'a GtLabel, Option<String>)> {
    gt.labels
        .iter()
        .filter_map(|l| {
            let r = l.bbox.rect();
            let want = norm(&l.text);
            if targets
                .iter()
                .any(|t| r.contains(t.rect.centre()) && norm(&t.text) == want)
            {
                return None;
            }
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
