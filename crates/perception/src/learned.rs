//! The learned reader (`perception.reader = "learned"`): PP-OCRv6 finds the text boxes in the regions to read (each region scaled for the detector by the size of its text) and reads each one (`voxdesk-ppocr`), in place of the pixel rules of `lines` and Tesseract. Rules kept on top, each measured: a box the detector joined across a gap much wider than its line's letter spacing, across a button's border (a rule between toolbar buttons, a pill's outline), or between words in two colours (a name and the grey time beside it), is cut there into labels; a mnemonic's underline under a menu's letter is left out of the crop ("File" with its "F" on a rule reads "Eile"). Pieces of one monospace line (a terminal's, an editor's) that it parted are joined back: their glyphs on one grid of one pitch, shown by their letters or lent by a long line near them. After a change the detector looks only around the changed pixels and the labels they touch, and boxes are cached by their pixels, so a one-widget change reads one box.

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
/// A lone character needs more: an icon the recogniser sees as the letter nearest its
/// shape (a close cross as "X", a ring as "O", a bar as "1") is read with less certainty than a
/// letter drawn in a font. Chosen on dev with `voxdesk bench eyes` (stride 3, train / dev):
/// 0.5 → 0.8 found 2493 / 2557 → 2493 / 2556, junk 80 / 81 → 38 / 45 (0.9: 2492 / 2555, 33 /
/// 41); the real apps unchanged, the fixtures 2578 → 2571 found, 17 → 12 junk. A lone "+" or
/// "}" is left at [`MIN_SCORE`]: with it at 0.8 too, dev lost 16 such labels.
///
/// Since the recogniser chooses among the classes an English screen shows only (`ppocr`'s
/// head), its probabilities are spread over those alone, and an icon it used to read as a Han
/// character with a faint "*" beside it is now a surer "*": this floor holds for every lone
/// character (bar "+" and "}"), not only letters and digits. Measured with `voxdesk bench eyes`
/// (dev stride 1 / train stride 3, found and junk): the whole head 4215 / 2674 found, 49 / 21
/// junk; the cut head with the letters' floor 4217 / 2674, 68 / 27; with this floor 4215 / 2674,
/// 52 / 21; with "+" and "}" under it too 4209 / 2674, 52 / 21.
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
        Ok((join_mono(rgba, width, labels, self.gaps.colour), todo.len()))
    }
}

/// Cells of blank between two pieces of one monospace line that still join them (as
/// `mono::MAX_GAP_CELLS` on the Tesseract path).
const JOIN_CELLS: f32 = 12.0;
/// Glyphs a monospace line needs to lend its grid to a piece near it too short to show one.
const LEND_GLYPHS: usize = 20;

/// The pieces of one monospace line that the detector or the gaps between labels parted
/// (`ls -l`'s padded columns, a command after its prompt, "64 bytes from …:" and
/// "icmp_seq=1 …"), joined back into the line: a terminal's or an editor's line is one
/// target, as the Tesseract path's `mono` makes it. Two labels on one row join when their
/// glyphs sit on one grid (one pitch; a piece too short to show one sits on the other's), at
/// most [`JOIN_CELLS`] cells of blank apart with no ink between them (a pane's border), the
/// left one not a gutter (digits two cells or more before the line) and not in another colour
/// across a gutter (as [`GAPS`] cuts them). Proportional text is never joined.
fn join_mono(rgba: &[u8], width: u32, mut labels: Vec<Label>, colour: u8) -> Vec<Label> {
    labels.sort_by_key(|l| (l.rect.x, l.rect.y));
    let mut pieces: Vec<Piece> = labels
        .into_iter()
        .map(|label| {
            let glyphs = voxdesk_ppocr::glyphs_in(rgba, width, bbox(&label.rect));
            let pitch = letter_pitch(&label.text, &glyphs);
            let phase = pitch
                .filter(|&p| p > 0.0)
                .map_or(0.0, |p| phase_of(glyphs.centres(), p));
            Piece {
                label,
                glyphs,
                pitch,
                phase,
                own: pitch.is_some(),
            }
        })
        .collect();
    // A piece too short to show a pitch takes one from a monospace line close above or
    // below it that it overlaps (a terminal's other lines), as `mono` does.
    // Its grid too: a terminal's lines share their columns. Only a long line lends (at
    // least [`LEND_GLYPHS`]): a short label in a small UI font may sit on a grid by chance.
    let shown: Vec<(Rect, f32, f32)> = pieces
        .iter()
        .filter(|p| p.glyphs.runs.len() >= LEND_GLYPHS)
        .filter_map(|p| {
            p.pitch
                .filter(|&q| q > 0.0)
                .map(|q| (p.label.rect, q, p.phase))
        })
        .collect();
    for p in pieces.iter_mut().filter(|p| p.pitch.is_none()) {
        let r = p.label.rect;
        if let Some(&(_, q, phase)) = shown
            .iter()
            .filter(|(o, _, _)| {
                o.x < r.right() && r.x < o.right() && (o.y - r.y).abs() <= 8 * r.h.max(o.h)
            })
            .min_by_key(|(o, _, _)| (o.y - r.y).abs())
        {
            p.pitch = Some(q);
            p.phase = phase;
        }
    }
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for b in pieces {
        let row = |o: &Piece| {
            let (a, b) = (&o.label.rect, &b.label.rect);
            let h = a.h.min(b.h);
            (2 * (a.y - b.y) + a.h - b.h).abs() <= h / 2
                && 10 * (a.h - b.h).abs() <= 3 * a.h.max(b.h)
                && a.right() <= b.x + 2
        };
        let left = out
            .iter()
            .enumerate()
            .filter(|(_, o)| row(o))
            .max_by_key(|(_, o)| o.label.rect.right())
            .map(|(i, _)| i);
        if let Some(i) = left {
            if let Some(j) = joined(rgba, width, &out[i], &b, colour) {
                out[i] = j;
                continue;
            }
        }
        out.push(b);
    }
    out.into_iter().map(|p| p.label).collect()
}

/// A label with its glyphs and its pitch (see [`letter_pitch`]; borrowed from a line near it
/// when too short to show one).
struct Piece {
    label: Label,
    glyphs: voxdesk_ppocr::Glyphs,
    pitch: Option<f32>,
    /// Where the grid's cells are centred, in cells (0–1).
    phase: f32,
    /// The pitch and phase are the label's own, not a line's near it.
    own: bool,
}

/// Where the cells of pitch `p` that `centres` sit on are centred, in cells: their circular
/// mean.
fn phase_of(centres: impl Iterator<Item = f32>, p: f32) -> f32 {
    let turn = |c: f32| std::f32::consts::TAU * c / p;
    let (sin, cos) = centres.fold((0.0f32, 0.0f32), |(s, c), x| {
        (s + turn(x).sin(), c + turn(x).cos())
    });
    sin.atan2(cos) / std::f32::consts::TAU
}

/// The cell width of a monospace label from the steps between its neighbouring letters'
/// glyphs (matched to its characters in order when there are as many glyphs as characters):
/// nearly all of them one width. Only letters show it: digits are as wide as each other in
/// proportional fonts too (a table's sizes and versions). 0 when proportional; None when too
/// few letters (under seven steps) or the glyphs do not match the characters (two that touch).
fn letter_pitch(text: &str, g: &voxdesk_ppocr::Glyphs) -> Option<f32> {
    let chars: Vec<(char, bool)> = text
        .chars()
        .scan(false, |spaced, c| {
            let item = (c, *spaced);
            *spaced = c.is_whitespace();
            Some(item)
        })
        .filter(|(c, _)| !c.is_whitespace())
        .collect();
    if chars.len() != g.runs.len() {
        return None;
    }
    let centres: Vec<f32> = g.centres().collect();
    let steps: Vec<f32> = (1..chars.len())
        .filter(|&i| chars[i].0.is_alphabetic() && chars[i - 1].0.is_alphabetic() && !chars[i].1)
        .map(|i| centres[i] - centres[i - 1])
        .collect();
    if steps.len() < 7 {
        return None;
    }
    // A glyph's ink sits a little off its cell's centre ("r", "j"): a step between
    // neighbours is its cell's width within about a pixel.
    let mean = steps.iter().sum::<f32>() / steps.len() as f32;
    let near = steps
        .iter()
        .filter(|&&s| (s - mean).abs() <= (0.1 * mean).max(1.0))
        .count();
    if 10 * near < 8 * steps.len() {
        return Some(0.0);
    }
    // And its glyphs stay on one grid from end to end: a proportional font's drift off it.
    let p = refine(mean, &centres);
    let phase = phase_of(centres.iter().copied(), p);
    let on = centres
        .iter()
        .filter(|&&c| {
            let k = c / p - phase;
            (k - k.round()).abs() <= 0.2
        })
        .count();
    Some(if 10 * on >= 8 * centres.len() { p } else { 0.0 })
}

/// A rough pitch made exact by the glyphs' centres: each given its cell's number from the
/// first, the pitch is the slope of centre on number (least squares, twice). A line's
/// centres over thirty cells tell it to a small part of a pixel, where neighbouring steps
/// only to about a pixel.
fn refine(rough: f32, centres: &[f32]) -> f32 {
    let mut p = rough;
    for _ in 0..2 {
        let Some(&c0) = centres.first() else {
            return p;
        };
        let ks: Vec<f32> = centres.iter().map(|c| ((c - c0) / p).round()).collect();
        let n = ks.len() as f32;
        let (mk, mc) = (ks.iter().sum::<f32>() / n, centres.iter().sum::<f32>() / n);
        let cov: f32 = ks
            .iter()
            .zip(centres)
            .map(|(k, c)| (k - mk) * (c - mc))
            .sum();
        let var: f32 = ks.iter().map(|k| (k - mk) * (k - mk)).sum();
        if var < 1.0 {
            return p;
        }
        p = cov / var;
    }
    p
}

/// `a` and `b` as one label when they are pieces of one monospace line (see [`join_mono`]).
fn joined(rgba: &[u8], width: u32, a: &Piece, b: &Piece, colour: u8) -> Option<Piece> {
    let (ga, gb) = (&a.glyphs, &b.glyphs);
    let (&(_, a_end), &(b_start, _)) = (ga.runs.last()?, gb.runs.first()?);
    let p = match (a.pitch, b.pitch) {
        (Some(p), Some(q)) if p > 0.0 && q > 0.0 && (p - q).abs() <= (0.08 * p).max(0.6) => p,
        _ => return None,
    };
    // Both on one grid: their glyphs' centres a whole number of cells from one phase (the
    // piece's own that shows one; when both borrowed it, the same line's), nearly all of them
    // (two glyphs that touch are one run, centred between two cells).
    let phase = match (a.own, b.own) {
        (true, _) => a.phase,
        (false, true) => b.phase,
        (false, false) => {
            let d = a.phase - b.phase;
            if (d - d.round()).abs() > 0.1 {
                return None;
            }
            a.phase
        }
    };
    let on_grid = |g: &voxdesk_ppocr::Glyphs| {
        let on = g
            .centres()
            .filter(|&c| {
                let k = c / p - phase;
                (k - k.round()).abs() <= 0.25
            })
            .count();
        10 * on >= 7 * g.runs.len()
    };
    if !on_grid(ga) || !on_grid(gb) {
        return None;
    }
    let (ta, tb) = (&a.label.text, &b.label.text);
    let cells = (b_start - a_end) as f32 / p;
    let centres = ((gb.runs[0].0 + gb.runs[0].1) - (ga.runs.last()?.0 + a_end)) as f32 / 2.0 / p;
    let gutter = ta.chars().all(|c| c.is_ascii_digit()) && cells >= 2.0;
    let recoloured = colour > 0
        && centres >= 2.5
        && (0..3).any(|i| (ga.colour[i] - gb.colour[i]).abs() >= colour as f32);
    if cells > JOIN_CELLS || gutter || recoloured {
        return None;
    }
    // Nothing drawn between them, in the middle half of their rows (a box's margin reaches
    // the tails of the next line's letters); faint pixels at its sides are the letters' own
    // edges.
    let (ra, rb) = (a.label.rect, b.label.rect);
    let top = ra.y.max(rb.y);
    let bottom = ra.bottom().min(rb.bottom());
    let gap = Bbox {
        x: a_end + 1,
        y: top + (bottom - top) / 4,
        w: b_start - a_end - 2,
        h: (bottom - top) / 2,
    };
    if gap.w > 0
        && gap.h > 0
        && 2 * voxdesk_ppocr::glyphs_in(rgba, width, gap).strength as u32
            >= ga.strength.min(gb.strength) as u32
    {
        return None;
    }
    let mut runs = ga.runs.clone();
    runs.extend(gb.runs.iter().copied());
    let glyphs = voxdesk_ppocr::Glyphs {
        runs,
        colour: ga.colour,
        strength: ga.strength.min(gb.strength),
    };
    let text = format!("{} {}", ta.trim_end(), tb.trim_start());
    // Two short pieces that borrowed a grid may together show their letters proportional
    // (a status bar's "2,262 words" and "English" under an editor).
    if let Some(q) = letter_pitch(&text, &glyphs) {
        if (q - p).abs() > (0.08 * p).max(0.6) {
            return None;
        }
    }
    let centres: Vec<f32> = glyphs.centres().collect();
    let p = refine(p, &centres);
    Some(Piece {
        label: Label {
            text,
            rect: ra.union(&rb),
            conf: a.label.conf.min(b.label.conf),
        },
        glyphs,
        pitch: Some(p),
        phase,
        own: a.own || b.own,
    })
}

/// The least mean character probability a read needs to be a label: [`MIN_SCORE`], and
/// [`MIN_SCORE_ONE`] for a lone character but "+" and "}".
fn min_score(text: &str) -> f32 {
    let mut cs = text.chars();
    match (cs.next(), cs.next()) {
        (Some(c), None) if c != '+' && c != '}' => MIN_SCORE_ONE,
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

    /// A white frame 400×120 with `text` drawn from `x` on row `y`: each character a 10 px
    /// tall block in its cell (`advance(i)` wide; a space is an empty cell), and the label
    /// as a reader would give it.
    fn write(
        img: &mut [u8],
        text: &str,
        x: i32,
        y: i32,
        advance: impl Fn(usize) -> i32,
        colour: u8,
    ) -> Label {
        let mut at = x;
        for (i, c) in text.chars().enumerate() {
            let w = advance(i);
            if !c.is_whitespace() {
                for yy in y..y + 10 {
                    for xx in at + 1..at + w - 2 {
                        let p = ((yy * 400 + xx) * 4) as usize;
                        img[p..p + 3].copy_from_slice(&[colour; 3]);
                    }
                }
            }
            at += w;
        }
        Label {
            text: text.into(),
            rect: Rect::new(x - 2, y - 3, at - x + 4, 16),
            conf: 0.9,
        }
    }

    #[test]
    fn pieces_of_one_monospace_line_join_and_nothing_else_does() {
        let blank = || vec![255u8; 400 * 120 * 4];
        let cell = |_| 8;
        let texts = |ls: &[Label]| ls.iter().map(|l| l.text.clone()).collect::<Vec<_>>();
        // A terminal line the detector parted: one label.
        let mut img = blank();
        let a = write(&mut img, "bytes from host:", 4, 10, cell, 30);
        let b = write(&mut img, "icmp_seq=1 ttl", 4 + 17 * 8, 10, cell, 30);
        let out = join_mono(&img, 400, vec![b.clone(), a.clone()], GAPS.colour);
        assert_eq!(texts(&out), ["bytes from host: icmp_seq=1 ttl"]);
        assert_eq!(out[0].rect, a.rect.union(&b.rect));
        // The same words in a proportional font (letters 5 to 10 px wide): two labels.
        let mut img = blank();
        let varied = |i: usize| [6, 9, 5, 10, 7, 5, 8][i % 7];
        let a = write(&mut img, "bytes from host:", 4, 10, varied, 30);
        let b = write(
            &mut img,
            "icmp_seq=1 ttl",
            a.rect.right() + 12,
            10,
            varied,
            30,
        );
        assert_eq!(join_mono(&img, 400, vec![a, b], GAPS.colour).len(), 2);
        // An editor's line number two cells before its line is a label of its own.
        let mut img = blank();
        let n = write(&mut img, "42", 4, 10, cell, 30);
        let code = write(&mut img, "let mut total = parse", 4 + 4 * 8, 10, cell, 30);
        assert_eq!(join_mono(&img, 400, vec![n, code], GAPS.colour).len(), 2);
        // Something drawn between them (a pane's border): two labels.
        let mut img = blank();
        let a = write(&mut img, "bytes from host:", 4, 10, cell, 30);
        let b = write(&mut img, "icmp_seq=1 ttl", 4 + 20 * 8, 10, cell, 30);
        write(&mut img, "|", 4 + 18 * 8, 8, cell, 30);
        assert_eq!(join_mono(&img, 400, vec![a, b], GAPS.colour).len(), 2);
        // Pieces too short to show a pitch join on the grid of a long line above them; not
        // when they are off its grid.
        for (shift, joined) in [(0, true), (4, false)] {
            let mut img = blank();
            let long = write(&mut img, "drwxr-xr-x yusuf yusuf schedule", 4, 10, cell, 30);
            let rm = write(&mut img, "rm:", 4 + shift, 40, cell, 30);
            let what = write(&mut img, "cannot", 4 + shift + 4 * 8, 40, cell, 30);
            let out = join_mono(&img, 400, vec![long, rm, what], GAPS.colour);
            assert_eq!(out.len() == 2, joined, "{:?}", texts(&out));
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
    fn a_lone_character_needs_a_surer_read() {
        for (text, min) in [
            ("X", MIN_SCORE_ONE),
            ("1", MIN_SCORE_ONE),
            ("é", MIN_SCORE_ONE),
            ("*", MIN_SCORE_ONE),
            ("<", MIN_SCORE_ONE),
            ("*2", MIN_SCORE),
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
