//! The learned reader (`perception.reader = "learned"`): PP-OCRv6 finds the text boxes in the regions to read and reads each one (`voxdesk-ppocr`), in place of the pixel rules of `lines` and Tesseract. One rule is kept on top: a box the detector joined across a wide gap is cut there into two labels. Boxes are cached by their pixels, so an incremental pass reads only boxes whose pixels changed.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;

use voxdesk_core::geometry::Rect;
use voxdesk_ppocr::{Bbox, Ocr};

use crate::engine::EngineError;
use crate::label::Label;

/// The model files under the models directory.
pub use voxdesk_ppocr::{DET as DET_FILE, REC as REC_FILE};

/// Below this mean character probability a read is not a label (RapidOCR's `text_score`).
pub const MIN_SCORE: f32 = 0.5;
/// Two labels in one box: empty columns wider than this many times the line's ink height (a
/// word space is about a third of it, a monospace space with narrow glyphs either side about
/// one). Chosen with `voxdesk bench eyes`: 0.8 cut monospace cells ("851.1 | MB"), 1.3 read
/// 81.1 % of train labels against 79.7 % with no cut (dev: 87.1 % and 87.3 %).
pub const GAP: f32 = 1.3;
/// Bound on cached boxes; past it the cache starts over.
const CACHE_CAP: usize = 8192;

pub struct Learned {
    ocr: Ocr,
    /// Empty columns wider than this many ink heights part two labels ([`GAP`]; infinite: never).
    pub gap: f32,
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
            gap: GAP,
            cache: HashMap::new(),
        })
    }

    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }

    /// The scale the detector sees the frame at (1: as captured).
    pub fn set_detect_scale(&mut self, scale: f32) {
        self.ocr.params.scale = scale;
        self.cache.clear();
    }

    /// Labels in `regions` of the frame whose box touches a `dirty` rectangle, and how many
    /// boxes had to be read (the rest came from the cache).
    pub fn read(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        regions: &[Rect],
        dirty: &[Rect],
    ) -> Result<(Vec<Label>, usize, f64), EngineError> {
        let t0 = std::time::Instant::now();
        let mut boxes = Vec::new();
        let drawn: Vec<Rect> = regions
            .iter()
            .flat_map(|r| crate::tiles::content(rgba, width, height, *r))
            .collect();
        for r in &drawn {
            let found = self.ocr.detect(rgba, width, height, bbox(r)).map_err(err)?;
            boxes.extend(
                found
                    .into_iter()
                    .flat_map(|f| voxdesk_ppocr::labels_in(rgba, width, f.rect, self.gap))
                    .map(rect)
                    .filter(|b| crate::tiles::touches(b, dirty)),
            );
        }
        let detect_ms = t0.elapsed().as_secs_f64() * 1000.0;
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
                let label = (read.score >= MIN_SCORE && !text.is_empty())
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
        Ok((labels, todo.len(), detect_ms))
    }
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
