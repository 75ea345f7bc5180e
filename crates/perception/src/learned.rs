//! The learned reader (`perception.reader = "learned"`): PP-OCRv6 finds the text boxes in the regions to read (each region scaled for the detector by the size of its text) and reads each one (`voxdesk-ppocr`), in place of the pixel rules of `lines` and Tesseract. Rules kept on top, each measured: a box the detector joined across a gap much wider than its line's letter spacing, across a button's border (a rule between toolbar buttons, a pill's outline), or between words in two colours (a name and the grey time beside it), is cut there into labels. After a change the detector looks only around the changed pixels and the labels they touch, and boxes are cached by their pixels, so a one-widget change reads one box.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use voxdesk_core::geometry::Rect;
use voxdesk_ppocr::{Bbox, Ocr};

use crate::engine::EngineError;
use crate::label::Label;

/// The model files under the models directory.
pub use voxdesk_ppocr::{Gaps, DET as DET_FILE, REC as REC_FILE};

/// Below this mean character probability a read is not a label (RapidOCR's `text_score`).
pub const MIN_SCORE: f32 = 0.5;
/// A lone letter or digit needs more: an icon the recogniser sees as the letter nearest its
/// shape (a close cross as "X", a ring as "O", a bar as "1") is read with less certainty than a
/// letter drawn in a font. Chosen on dev with `voxdesk bench eyes` (stride 3, train / dev):
/// 0.5 → 0.8 found 2493 / 2557 → 2493 / 2556, junk 80 / 81 → 38 / 45 (0.9: 2492 / 2555, 33 /
/// 41); the real apps unchanged, the fixtures 2578 → 2571 found, 17 → 12 junk. A lone "+" or
/// "}" is left at [`MIN_SCORE`]: with it at 0.8 too, dev lost 16 such labels.
pub const MIN_SCORE_ONE: f32 = 0.8;
/// Two labels in one box, by the empty columns between them, in the line's ink heights
/// ([`voxdesk_ppocr::Gaps`]). Chosen with `voxdesk bench eyes` on train, dev and the real apps
/// (stride 2, with each row's own fill): 1.3 alone (the last choice, made on the corpus) read
/// 85.9 / 85.3 / 64.9 %: every real menu bar was one label; 1.0 alone 86.0 / 81.8 / 89.5 (it
/// cut monospace cells, "851.1 | MB"); 1.3, or 0.9 at 5, 6.5 or 8 times the line's median gap
/// between glyphs: 84.9 / 84.8 / 90.4, **86.4 / 86.5 / 90.4**, 86.3 / 87.7 / 81.6.
///
/// Buttons' borders (Xaw's pill outlines, the rules between xedit's buttons, a frame's side)
/// part labels and are left out of them. Measured the same way: with them 85.8 / 85.9 / 89.5 %,
/// without 86.1 / 86.4 / 87.7 (badges in thin rings, a letter of a thin font glued to a rule
/// are what they cost); kept because without them Xaw's buttons are one label and the task
/// suite's xedit-save and xmessage-accept fail every run with this reader.
///
/// Words in inks that differ by 64 or more in a channel are two labels (a name and the grey
/// time after it, a breadcrumb's links, a diff's line number and its marker); in a monospace
/// line only across a gutter (centres 2.5 cells apart), where colours are a line's tokens.
/// Measured with `voxdesk bench eyes` (stride 3, train / dev found of 3000 / 2948): without
/// 2585 / 2682; 64: 2664 / 2688 (junk 22 → 21, 13 → 11); 96: 2654 / 2687. Cut at any word
/// gap, monospace or not: 2749 / 2611 at 48 (code pieces such as "=" and ");" read alone and
/// lost); in monospace at an ink gap of 1.5 cells: 2709 / 2689 (a space beside a narrow glyph
/// is that wide). Real apps 195 = 195, the fixtures 2571 → 2593.
pub const GAPS: voxdesk_ppocr::Gaps = voxdesk_ppocr::Gaps {
    wide: 1.3,
    near: 0.9,
    ratio: 6.5,
    borders: true,
    colour: 64,
};
/// The detector looks at most this many pixels at once: its working memory grows with them
/// (about 250 bytes a pixel; a whole 1920×1080 frame at once held 530 MB).
pub const DETECT_AREA: i32 = 500_000;
/// Pixels around a change whose old labels it replaces (a caret beside a word, a letter typed
/// after it).
const ZONE_PAD: i32 = 8;
/// How much further up and down to look when a box runs into the top or bottom of a look.
const LINE_MORE: i32 = 48;
/// Rows two detector windows share: text less tall than this lies whole in one of them.
const DETECT_OVERLAP: i32 = 64;
/// Bound on cached boxes; past it the cache starts over.
const CACHE_CAP: usize = 8192;

/// The x-height (capture pixels) the detector is best at, chosen with `voxdesk bench eyes` on
/// train and dev: a region whose text is larger is shown to the detector scaled down to it
/// (never below [`MIN_DETECT_SCALE`]; up to [`MAX_DETECT_SCALE`] where it is smaller). A HiDPI
/// screen's text is twice the size; the detector finds it as well at half the scale, in a
/// quarter of the time.
pub const DETECT_XH: f32 = 10.0;
/// The least a region is scaled for the detector.
pub const MIN_DETECT_SCALE: f32 = 0.5;
/// The most a region is scaled up for the detector (small text). Measured on dev with
/// `voxdesk bench eyes` (stride 3, "learned@@xh10:1.25"): 1.25 found train 2493 → 2490, dev
/// 2557 → 2574, the real apps 195 → 198, but the detector's memory grew past 300 MB (318), and
/// with its windows shrunk to hold memory the fixtures' cold pass took 2176 → 2932 ms. Not taken:
/// 1 (1.5 and 2 found the same as 1.25 and cost more).
pub const MAX_DETECT_SCALE: f32 = 1.0;

/// The scale the detector should see `region` at: [`DETECT_XH`] over the region's typical
/// x-height, as the pixel rules of [`crate::lines`] measure it (a few milliseconds a frame),
/// each line weighted by its width. 1 when no text-like line is found.
pub fn detect_scale(rgba: &[u8], width: u32, height: u32, region: Rect, xh: f32, max: f32) -> f32 {
    let mut hs: Vec<(i32, i32)> = crate::lines::find_lines(rgba, width, height, region)
        .into_iter()
        .filter(|l| l.glyph.is_none() && l.rect.w >= 2 * l.rect.h && l.text_h >= 3)
        .map(|l| (l.text_h, l.rect.w))
        .collect();
    if hs.is_empty() {
        return 1.0;
    }
    hs.sort_unstable();
    let total: i64 = hs.iter().map(|&(_, w)| w as i64).sum();
    let mut acc = 0i64;
    let median = hs
        .iter()
        .find(|&&(_, w)| {
            acc += w as i64;
            2 * acc >= total
        })
        .map_or(hs[0].0, |&(h, _)| h);
    (xh / median as f32).clamp(MIN_DETECT_SCALE, max.max(MIN_DETECT_SCALE))
}

pub struct Learned {
    ocr: Ocr,
    /// The detector's scale: measured per region from its text ([`detect_scale`], this being
    /// the x-height aimed at), or fixed (the benchmark's choice).
    scale: DetectScale,
    /// Where a line is cut into labels ([`GAPS`]).
    pub gaps: voxdesk_ppocr::Gaps,
    /// A box's pixels → its text and confidence (none: not text).
    cache: HashMap<u64, Option<(String, f32)>>,
}

fn err(e: voxdesk_ppocr::OcrError) -> EngineError {
    EngineError::Learned(e.to_string())
}

impl Learned {
    /// Load the detector and the recogniser from the models directory.
    pub fn load(models: &Path, threads: usize) -> Result<Learned, EngineError> {
        Ok(Learned {
            ocr: Ocr::load(models, threads).map_err(err)?,
            gaps: GAPS,
            scale: DetectScale::ByText {
                xh: DETECT_XH,
                max: MAX_DETECT_SCALE,
            },
            cache: HashMap::new(),
        })
    }

    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }

    /// The scale the detector sees the frame at (for the benchmark that chooses it).
    pub fn set_detect_scale(&mut self, scale: DetectScale) {
        self.scale = scale;
        self.cache.clear();
    }

    /// Every label in the frame, and how many boxes had to be read (the rest came from the
    /// cache) and the milliseconds spent finding them.
    pub fn read(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
    ) -> Result<(Vec<Label>, usize, f64), EngineError> {
        let t0 = std::time::Instant::now();
        let frame = Rect::new(0, 0, width as i32, height as i32);
        let boxes = self.find(rgba, width, height, frame)?;
        let detect_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let (labels, n) = self.read_boxes(rgba, width, height, &boxes)?;
        Ok((labels, n, detect_ms))
    }

    /// The labels where pixels `changed` since the last frame (see [`crate::tiles::changed_boxes`]),
    /// given the labels `old` read before: the detector looks only around each change and the
    /// old labels it touches, wider only when a box it finds runs into the edge of where it
    /// looked (a line crossing into the change is read whole). Also returns the zones these
    /// labels replace the old ones in, the boxes read and the milliseconds spent finding them.
    pub fn read_changes(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        changed: &[Rect],
        old: &[Label],
    ) -> Result<(Vec<Label>, Vec<Rect>, usize, f64), EngineError> {
        let t0 = std::time::Instant::now();
        let frame = Rect::new(0, 0, width as i32, height as i32);
        let mut boxes: Vec<Rect> = Vec::new();
        let mut zones = Vec::new();
        for c in changed {
            // The change, and the old labels it touches, whole: they are replaced, so all of
            // each is read again (a line's other end).
            let zone = crate::tiles::grow(c, ZONE_PAD).intersection(&frame);
            let zone = old
                .iter()
                .filter(|l| l.rect.intersects(&zone))
                .fold(zone, |a, l| a.union(&l.rect))
                .intersection(&frame);
            let mut look = crate::tiles::grow(&zone, ZONE_PAD).intersection(&frame);
            let mut found = self.find(rgba, width, height, look)?;
            // A box against an edge of where the detector looked may go on past it: look
            // again, across the frame's width or a line's height further.
            for _ in 0..3 {
                let across = found.iter().any(|b| {
                    (b.x <= look.x && look.x > 0)
                        || (b.right() >= look.right() && look.right() < frame.w)
                });
                let down = found.iter().any(|b| {
                    (b.y <= look.y && look.y > 0)
                        || (b.bottom() >= look.bottom() && look.bottom() < frame.h)
                });
                if !across && !down {
                    break;
                }
                if across {
                    look = Rect::new(0, look.y, frame.w, look.h);
                }
                if down {
                    look = Rect::new(look.x, look.y - LINE_MORE, look.w, look.h + 2 * LINE_MORE)
                        .intersection(&frame);
                }
                found = self.find(rgba, width, height, look)?;
            }
            boxes.extend(found.into_iter().filter(|b| b.intersects(&zone)));
            zones.push(zone);
        }
        // One line found from two looks (two changes near it) may come back a pixel or two
        // apart: the larger box stands for both.
        boxes.sort_unstable_by_key(|b| std::cmp::Reverse(b.w as i64 * b.h as i64));
        let mut kept: Vec<Rect> = Vec::with_capacity(boxes.len());
        for b in boxes {
            if !kept.iter().any(|k| crate::tiles::same_place(k, &b)) {
                kept.push(b);
            }
        }
        let mut boxes = kept;
        boxes.sort_unstable_by_key(|b| (b.y, b.x, b.w, b.h));
        let detect_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let (labels, n) = self.read_boxes(rgba, width, height, &boxes)?;
        Ok((labels, zones, n, detect_ms))
    }

    /// The label boxes the detector finds in `region`, where anything is drawn in it, in
    /// windows of rows that bound its memory; each box cut at wide gaps into labels.
    fn find(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        region: Rect,
    ) -> Result<Vec<Rect>, EngineError> {
        let mut boxes = Vec::new();
        for r in crate::tiles::content(rgba, width, height, region) {
            let s = match self.scale {
                DetectScale::Fixed(s) => s,
                DetectScale::ByText { xh, max } => detect_scale(rgba, width, height, r, xh, max),
            };
            // The detector's memory grows with the pixels it is given, after scaling.
            let area = (DETECT_AREA as f32 / (s * s)) as i32;
            boxes.extend(self.find_in(rgba, width, height, r, area, s)?);
        }
        Ok(boxes)
    }

    fn find_in(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        r: Rect,
        area: i32,
        scale: f32,
    ) -> Result<Vec<Rect>, EngineError> {
        let mut boxes = Vec::new();
        for (win, own) in crate::tiles::windows(r, area, DETECT_OVERLAP) {
            let found = self
                .ocr
                .detect(rgba, width, height, bbox(&win), scale)
                .map_err(err)?;
            boxes.extend(
                found
                    .into_iter()
                    .filter(|f| own.contains(&(f.rect.y + f.rect.h / 2)))
                    .flat_map(|f| voxdesk_ppocr::labels_in(rgba, width, f.rect, self.gaps))
                    .map(rect),
            );
        }
        Ok(boxes)
    }

    /// Read each box (from the cache when its pixels were read before), and how many boxes
    /// the recogniser had to read.
    fn read_boxes(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        boxes: &[Rect],
    ) -> Result<(Vec<Label>, usize), EngineError> {
        let keys: Vec<u64> = boxes.iter().map(|b| key(rgba, width, b)).collect();
        let todo: Vec<usize> = {
            let mut seen = std::collections::HashSet::new();
            (0..boxes.len())
                .filter(|&i| !self.cache.contains_key(&keys[i]) && seen.insert(keys[i]))
                .collect()
        };
        if !todo.is_empty() {
            let want: Vec<Bbox> = todo.iter().map(|&i| bbox(&boxes[i])).collect();
            let reads = self
                .ocr
                .recognise(rgba, width, height, &want)
                .map_err(err)?;
            if self.cache.len() + todo.len() > CACHE_CAP {
                self.cache.clear();
            }
            for (&i, read) in todo.iter().zip(reads) {
                let text = read.text.trim();
                let label = (read.score >= min_score(text) && !text.is_empty() && !a_shape(text))
                    .then(|| (text.to_string(), read.score));
                self.cache.insert(keys[i], label);
            }
        }
        let mut labels = Vec::new();
        for (b, k) in boxes.iter().zip(&keys) {
            if let Some(Some((text, conf))) = self.cache.get(k) {
                labels.push(Label {
                    text: text.clone(),
                    rect: *b,
                    conf: *conf,
                });
            }
        }
        Ok((labels, todo.len()))
    }
}

/// The least mean character probability a read needs to be a label: [`MIN_SCORE`], and
/// [`MIN_SCORE_ONE`] for a lone letter or digit.
fn min_score(text: &str) -> f32 {
    let mut cs = text.chars();
    match (cs.next(), cs.next()) {
        (Some(c), None) if c.is_alphanumeric() => MIN_SCORE_ONE,
        _ => MIN_SCORE,
    }
}

/// A read that is one geometric shape ("●", "□", "▼": Unicode's Geometric Shapes) names an
/// icon the recogniser saw as a glyph (a status dot, a window's maximise box, a chevron), not
/// words anyone would say. Measured with `voxdesk bench eyes` on train and dev (stride 3):
/// junk 153/90 → 103/71, no label lost there or in the real apps (no text of either is such a
/// glyph alone).
fn a_shape(text: &str) -> bool {
    let mut cs = text.chars();
    matches!((cs.next(), cs.next()), (Some(c), None) if ('\u{25A0}'..='\u{25FF}').contains(&c))
}

/// How the detector's scale is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DetectScale {
    /// From each region's text: this x-height is what the detector sees ([`detect_scale`]).
    ByText { xh: f32, max: f32 },
    /// One scale for everything (1: as captured).
    Fixed(f32),
}

fn bbox(r: &Rect) -> Bbox {
    Bbox {
        x: r.x,
        y: r.y,
        w: r.w,
        h: r.h,
    }
}

fn rect(b: Bbox) -> Rect {
    Rect::new(b.x, b.y, b.w, b.h)
}

/// A box's pixels, hashed with its size: the same text drawn the same way reads the same.
fn key(rgba: &[u8], width: u32, b: &Rect) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (b.w, b.h).hash(&mut h);
    for y in b.y..b.bottom() {
        let at = (y as usize * width as usize + b.x as usize) * 4;
        rgba[at..at + b.w as usize * 4].hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale_of(page: &str) -> f32 {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ui");
        let img = image::open(dir.join(format!("{page}.png")))
            .unwrap()
            .to_rgba8();
        let (w, h) = img.dimensions();
        let all = Rect::new(0, 0, w as i32, h as i32);
        detect_scale(img.as_raw(), w, h, all, DETECT_XH, MAX_DETECT_SCALE)
    }

    #[test]
    fn text_twice_as_large_is_detected_at_about_half_the_scale() {
        for page in ["calendar", "chat", "code", "files", "menus"] {
            let one = scale_of(&format!("{page}-light-1x"));
            let two = scale_of(&format!("{page}-light-2x"));
            assert!(one >= 0.9, "{page} at 1x: {one}");
            assert!(
                (MIN_DETECT_SCALE..=0.7).contains(&two),
                "{page} at 2x: {two}"
            );
        }
    }

    #[test]
    fn a_lone_geometric_shape_is_an_icon_not_a_label() {
        for (text, shape) in [
            ("●", true),
            ("□", true),
            ("▼", true),
            ("■", true),
            ("★", false),
            ("● Online", false),
            ("=", false),
            ("π", false),
            ("X", false),
        ] {
            assert_eq!(a_shape(text), shape, "{text}");
        }
    }

    #[test]
    fn a_lone_letter_or_digit_needs_a_surer_read() {
        for (text, min) in [
            ("X", MIN_SCORE_ONE),
            ("1", MIN_SCORE_ONE),
            ("é", MIN_SCORE_ONE),
            ("+", MIN_SCORE),
            ("}", MIN_SCORE),
            ("OK", MIN_SCORE),
            ("", MIN_SCORE),
        ] {
            assert_eq!(min_score(text), min, "{text:?}");
        }
    }

    #[test]
    fn a_region_without_text_is_detected_as_captured() {
        let (w, h) = (64u32, 32u32);
        let blank = vec![255u8; (w * h * 4) as usize];
        let all = Rect::new(0, 0, w as i32, h as i32);
        assert_eq!(
            detect_scale(&blank, w, h, all, DETECT_XH, MAX_DETECT_SCALE),
            1.0
        );
    }
}
