//! PP-OCRv6 (PaddleOCR's small detector and recogniser, Apache-2.0, shipped in the PyPI wheel `rapidocr`) through ONNX Runtime: text boxes found in a frame's pixels, each box read with the model's own confidence and where each character sits.
//!
//! Two models, one pure core around them:
//! - the detector (DB) gives a text probability per pixel; [`boxes_from_map`] turns it into
//!   axis-aligned boxes (screen text is axis-aligned: no rotated rectangles), grown by the DB
//!   "unclip" distance the model was trained with;
//! - the recogniser (SVTR + CTC) reads a box scaled to 48 px high; [`ctc_decode`] turns its
//!   per-column classes into text, the mean probability and each character's column, so a box
//!   that holds two labels a wide gap apart can be cut there ([`split_at_gaps`]).
//!
//! The character set is the recogniser's own metadata (`character`), as RapidOCR reads it.

use std::path::{Path, PathBuf};

use voxdesk_onnx::ort;
use voxdesk_onnx::ort::session::Session;
use voxdesk_onnx::ort::value::Tensor;
pub use voxdesk_onnx::{models_dir, OnnxError, INSTALL};

/// The models, as `cargo xtask models` unpacks them from `rapidocr`'s wheel.
pub const DET: &str = "ppocr/PP-OCRv6_det_small.onnx";
pub const REC: &str = "ppocr/PP-OCRv6_rec_small.onnx";

/// The recogniser's input height (rec_img_shape [3, 48, 320]).
pub const REC_H: u32 = 48;
/// The detector's input sides are multiples of this.
const DET_ALIGN: u32 = 32;
/// The longest side the detector is given (RapidOCR's max_side_len is 2000); a larger frame is
/// scaled down to it.
pub const DET_MAX_SIDE: u32 = 2048;

/// The detector's post-processing, as RapidOCR configures PP-OCRv6.
#[derive(Debug, Clone, Copy)]
pub struct DetParams {
    /// A pixel is text above this probability.
    pub thresh: f32,
    /// A box is kept when its mean probability is at least this.
    pub box_thresh: f32,
    /// DB's unclip ratio: boxes grow by area × ratio / perimeter.
    pub unclip: f32,
}

impl Default for DetParams {
    fn default() -> Self {
        DetParams {
            thresh: 0.3,
            box_thresh: 0.5,
            unclip: 1.6,
        }
    }
}

/// An axis-aligned box in the pixels of the image it was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bbox {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
}

impl Bbox {
    pub fn right(&self) -> i32 {
        self.x + self.w
    }
    pub fn bottom(&self) -> i32 {
        self.y + self.h
    }
}

/// A box the detector found, with its mean text probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    pub rect: Bbox,
    pub score: f32,
}

/// One box read: its text, the mean probability of its characters, and each character's
/// centre as a fraction of the box's width (0–1), in the order of `text`'s chars.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub text: String,
    pub score: f32,
    pub at: Vec<f32>,
}

#[derive(Debug, thiserror::Error)]
pub enum OcrError {
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    #[error("the text model failed: {0}")]
    Run(String),
    #[error("{0}")]
    Image(String),
}

fn run_err(e: impl std::fmt::Display) -> OcrError {
    OcrError::Run(e.to_string())
}

/// The two sessions and the character set. One per thread that reads; not shared.
pub struct Ocr {
    det: Session,
    rec: Session,
    /// Index 0 is CTC's blank, the last a space (as PaddleOCR's decoder adds them).
    chars: Vec<String>,
    pub params: DetParams,
}

impl Ocr {
    /// Load both models from `models` (the models directory), their work on `threads` threads.
    pub fn load(models: &Path, threads: usize) -> Result<Ocr, OcrError> {
        let env = voxdesk_onnx::environment(models)?;
        let det_path = voxdesk_onnx::need("PP-OCRv6 text detector", models.join(DET))?;
        let rec_path = voxdesk_onnx::need("PP-OCRv6 text recogniser", models.join(REC))?;
        let det = voxdesk_onnx::session(&env, &det_path, threads)?;
        let rec = voxdesk_onnx::session(&env, &rec_path, threads)?;
        let list = rec
            .metadata()
            .map_err(run_err)?
            .custom("character")
            .ok_or_else(|| OcrError::Run(format!("{}: no character list", rec_path.display())))?;
        let mut chars = vec![String::new()];
        chars.extend(list.lines().map(str::to_string));
        chars.push(" ".into());
        Ok(Ocr {
            det,
            rec,
            chars,
            params: DetParams::default(),
        })
    }

    /// Files the models need under `models` (for `voxdesk doctor`).
    pub fn files(models: &Path) -> Vec<PathBuf> {
        vec![
            models.join(voxdesk_onnx::RUNTIME),
            models.join(DET),
            models.join(REC),
        ]
    }

    /// Text boxes in `region` of an RGBA frame, in the frame's pixels.
    pub fn detect(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        region: Bbox,
    ) -> Result<Vec<Found>, OcrError> {
        let r = clip(region, width, height)
            .ok_or_else(|| OcrError::Image(format!("no region {region:?} in {width}x{height}")))?;
        let scale = (DET_MAX_SIDE as f32 / r.w.max(r.h) as f32).min(1.0);
        let sw = ((r.w as f32 * scale).round() as u32).max(1);
        let sh = ((r.h as f32 * scale).round() as u32).max(1);
        let (iw, ih) = (
            sw.div_ceil(DET_ALIGN) * DET_ALIGN,
            sh.div_ceil(DET_ALIGN) * DET_ALIGN,
        );
        let crop = crop_rgb(rgba, width, r);
        let img = if scale < 1.0 {
            image::imageops::resize(&crop, sw, sh, image::imageops::FilterType::Triangle)
        } else {
            crop
        };
        // (x/255 − 0.5)/0.5 per channel, CHW; the padding is what black normalises to.
        let plane = (iw * ih) as usize;
        let mut input = vec![-1.0f32; 3 * plane];
        for (x, y, p) in img.enumerate_pixels() {
            let at = (y * iw + x) as usize;
            for c in 0..3 {
                input[c * plane + at] = p.0[c] as f32 / 127.5 - 1.0;
            }
        }
        let t =
            Tensor::from_array(([1usize, 3, ih as usize, iw as usize], input)).map_err(run_err)?;
        let name = self.det.inputs()[0].name().to_string();
        let out = self.det.run(ort::inputs![name => t]).map_err(run_err)?;
        let (shape, map) = out[0].try_extract_tensor::<f32>().map_err(run_err)?;
        let (mh, mw) = (shape[2] as u32, shape[3] as u32);
        let found = boxes_from_map(map, mw, mh, sw, sh, self.params);
        Ok(found
            .into_iter()
            .map(|f| Found {
                rect: Bbox {
                    x: r.x + (f.rect.x as f32 / scale).floor() as i32,
                    y: r.y + (f.rect.y as f32 / scale).floor() as i32,
                    w: (f.rect.w as f32 / scale).ceil() as i32,
                    h: (f.rect.h as f32 / scale).ceil() as i32,
                },
                score: f.score,
            })
            .filter_map(|f| {
                clip(f.rect, width, height).map(|rect| Found {
                    rect,
                    score: f.score,
                })
            })
            .collect())
    }

    /// Read each box of an RGBA frame, in the order given. Boxes are batched by width.
    pub fn recognise(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        boxes: &[Bbox],
    ) -> Result<Vec<Read>, OcrError> {
        let mut out = vec![
            Read {
                text: String::new(),
                score: 0.0,
                at: Vec::new()
            };
            boxes.len()
        ];
        // Scaled to 48 high, keeping the aspect; batched in order of width so padding is small.
        let scaled: Vec<Option<image::RgbImage>> = boxes
            .iter()
            .map(|b| {
                clip(*b, width, height).map(|r| {
                    let crop = crop_rgb(rgba, width, r);
                    let w = ((r.w as f32 * REC_H as f32 / r.h as f32).ceil() as u32).clamp(8, 4096);
                    image::imageops::resize(&crop, w, REC_H, image::imageops::FilterType::Triangle)
                })
            })
            .collect();
        let mut order: Vec<usize> = (0..boxes.len()).filter(|&i| scaled[i].is_some()).collect();
        order.sort_by_key(|&i| scaled[i].as_ref().map(|s| s.width()).unwrap_or(0));
        for batch in order.chunks(REC_BATCH) {
            let widest = batch
                .iter()
                .filter_map(|&i| scaled[i].as_ref().map(|s| s.width()))
                .max()
                .unwrap_or(8)
                .max(REC_H * 320 / 48);
            let plane = (REC_H * widest) as usize;
            let mut input = vec![0.0f32; batch.len() * 3 * plane];
            for (k, &i) in batch.iter().enumerate() {
                let img = scaled[i].as_ref().expect("filtered");
                let base = k * 3 * plane;
                for (x, y, p) in img.enumerate_pixels() {
                    let at = (y * widest + x) as usize;
                    for c in 0..3 {
                        input[base + c * plane + at] = p.0[c] as f32 / 127.5 - 1.0;
                    }
                }
            }
            let t = Tensor::from_array(([batch.len(), 3, REC_H as usize, widest as usize], input))
                .map_err(run_err)?;
            let name = self.rec.inputs()[0].name().to_string();
            let res = self.rec.run(ort::inputs![name => t]).map_err(run_err)?;
            let (shape, probs) = res[0].try_extract_tensor::<f32>().map_err(run_err)?;
            let (steps, classes) = (shape[1] as usize, shape[2] as usize);
            for (k, &i) in batch.iter().enumerate() {
                let own = scaled[i].as_ref().expect("filtered").width() as f32;
                let p = &probs[k * steps * classes..(k + 1) * steps * classes];
                let mut read = ctc_decode(p, steps, classes, &self.chars);
                // A step covers widest/steps input columns; as a fraction of the box's own width.
                let per = widest as f32 / steps as f32;
                for a in &mut read.at {
                    *a = ((*a + 0.5) * per / own).clamp(0.0, 1.0);
                }
                out[i] = read;
            }
        }
        Ok(out)
    }
}

/// Boxes read in one run of the recogniser.
const REC_BATCH: usize = 8;

/// `b` within a `width`×`height` frame, or none when nothing of it is inside.
pub fn clip(b: Bbox, width: u32, height: u32) -> Option<Bbox> {
    let x0 = b.x.max(0);
    let y0 = b.y.max(0);
    let x1 = b.right().min(width as i32);
    let y1 = b.bottom().min(height as i32);
    (x1 > x0 && y1 > y0).then(|| Bbox {
        x: x0,
        y: y0,
        w: x1 - x0,
        h: y1 - y0,
    })
}

fn crop_rgb(rgba: &[u8], width: u32, r: Bbox) -> image::RgbImage {
    let mut img = image::RgbImage::new(r.w as u32, r.h as u32);
    for y in 0..r.h {
        let row = ((r.y + y) as usize * width as usize + r.x as usize) * 4;
        for x in 0..r.w as usize {
            let p = &rgba[row + x * 4..row + x * 4 + 3];
            img.put_pixel(x as u32, y as u32, image::Rgb([p[0], p[1], p[2]]));
        }
    }
    img
}

/// DB post-processing for axis-aligned text: pixels above `thresh` (dilated by 2×2, as
/// RapidOCR does), joined into 8-connected components; each component's bounding box, kept
/// when its mean probability reaches `box_thresh`, grown by area × unclip / perimeter on every
/// side. `map` is `mw`×`mh`; boxes come back in the pixels of the `sw`×`sh` image the map was
/// made from (the map may be padded beyond it), ordered top to bottom, then left to right.
pub fn boxes_from_map(map: &[f32], mw: u32, mh: u32, sw: u32, sh: u32, p: DetParams) -> Vec<Found> {
    let (w, h) = (mw as usize, mh as usize);
    let mut on = vec![false; w * h];
    for y in 0..h {
        for x in 0..w {
            // 2×2 dilation: on when this pixel or the one left, above or above-left is on.
            let hit = |xx: usize, yy: usize| map[yy * w + xx] > p.thresh;
            on[y * w + x] = hit(x, y)
                || (x > 0 && hit(x - 1, y))
                || (y > 0 && hit(x, y - 1))
                || (x > 0 && y > 0 && hit(x - 1, y - 1));
        }
    }
    let mut seen = vec![false; w * h];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..w * h {
        if !on[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        while let Some(i) = stack.pop() {
            let (x, y) = (i % w, i / w);
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
            for dy in -1i64..=1 {
                for dx in -1i64..=1 {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    if nx < 0 || ny < 0 || nx >= w as i64 || ny >= h as i64 {
                        continue;
                    }
                    let j = ny as usize * w + nx as usize;
                    if on[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        let (bw, bh) = ((x1 - x0 + 1) as f32, (y1 - y0 + 1) as f32);
        if bw.min(bh) < 3.0 {
            continue;
        }
        let mut sum = 0.0f32;
        for y in y0..=y1 {
            sum += map[y * w + x0..=y * w + x1].iter().sum::<f32>();
        }
        let score = sum / (bw * bh);
        if score < p.box_thresh {
            continue;
        }
        let d = bw * bh * p.unclip / (2.0 * (bw + bh));
        if (bw.min(bh) + 2.0 * d) < 5.0 {
            continue;
        }
        // The map has the input's size (the padded image): its pixels are the image's.
        let gx0 = (x0 as f32 - d).round().max(0.0) as i32;
        let gy0 = (y0 as f32 - d).round().max(0.0) as i32;
        let gx1 = ((x1 + 1) as f32 + d).round().min(sw as f32) as i32;
        let gy1 = ((y1 + 1) as f32 + d).round().min(sh as f32) as i32;
        if gx1 <= gx0 || gy1 <= gy0 {
            continue;
        }
        out.push(Found {
            rect: Bbox {
                x: gx0,
                y: gy0,
                w: gx1 - gx0,
                h: gy1 - gy0,
            },
            score,
        });
    }
    out.sort_by_key(|f| (f.rect.y, f.rect.x));
    out
}

/// Greedy CTC: the likeliest class per step, repeats merged, blanks (class 0) dropped. The
/// score is the mean probability of the kept steps; `at` holds each character's step (the
/// caller turns steps into pixels).
pub fn ctc_decode(probs: &[f32], steps: usize, classes: usize, chars: &[String]) -> Read {
    let mut text = String::new();
    let mut at = Vec::new();
    let mut sum = 0.0f32;
    let mut prev = 0usize;
    for t in 0..steps {
        let row = &probs[t * classes..(t + 1) * classes];
        let (best, p) =
            row.iter().enumerate().fold(
                (0usize, f32::MIN),
                |b, (i, &v)| if v > b.1 { (i, v) } else { b },
            );
        if best != 0 && best != prev {
            if let Some(c) = chars.get(best) {
                for ch in c.chars() {
                    text.push(ch);
                    at.push(t as f32);
                }
                sum += p;
            }
        }
        prev = best;
    }
    let n = at.len();
    Read {
        text,
        score: if n == 0 { 0.0 } else { sum / n as f32 },
        at,
    }
}

/// Cut a read box into labels where its characters stand further apart than `gap` × the box's
/// height (two labels the detector joined, "Edit  View"): each piece's text (trimmed) and its
/// horizontal extent as fractions of the box's width.
pub fn split_at_gaps(read: &Read, box_w: f32, box_h: f32, gap: f32) -> Vec<(String, f32, f32)> {
    let chars: Vec<char> = read.text.chars().collect();
    if chars.is_empty() || chars.len() != read.at.len() {
        return vec![(read.text.trim().to_string(), 0.0, 1.0)];
    }
    let mut out = Vec::new();
    let mut start = 0;
    let step = |a: usize, b: usize| (read.at[b] - read.at[a]) * box_w;
    // The typical distance between neighbouring characters of the box.
    let mut d: Vec<f32> = (1..chars.len()).map(|i| step(i - 1, i)).collect();
    d.sort_by(|a, b| a.total_cmp(b));
    let typical = d.get(d.len() / 2).copied().unwrap_or(box_h);
    for i in 1..=chars.len() {
        let cut = i == chars.len() || {
            let g = step(i - 1, i);
            chars[i - 1] == ' ' && g > gap * box_h && g > 2.5 * typical
                || chars[i] == ' '
                    && i + 1 < chars.len()
                    && step(i - 1, i + 1) > gap * box_h + typical
        };
        if cut {
            let piece: String = chars[start..i].iter().collect();
            let t = piece.trim();
            if !t.is_empty() {
                let lo = if start == 0 {
                    0.0
                } else {
                    (read.at[start] - 0.5 * typical / box_w).max(0.0)
                };
                let hi = if i == chars.len() {
                    1.0
                } else {
                    (read.at[i - 1] + 0.5 * typical / box_w).min(1.0)
                };
                out.push((t.to_string(), lo, hi));
            }
            start = i;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctc_merges_repeats_drops_blanks_and_keeps_doubled_letters_split_by_a_blank() {
        let chars: Vec<String> = ["", "a", "b", " "].iter().map(|s| s.to_string()).collect();
        // steps: a a _ a b _ _ b
        let seq = [1, 1, 0, 1, 2, 0, 0, 2];
        let mut probs = vec![0.0f32; seq.len() * 4];
        for (t, &c) in seq.iter().enumerate() {
            probs[t * 4 + c] = 0.9;
        }
        let r = ctc_decode(&probs, seq.len(), 4, &chars);
        assert_eq!(r.text, "aabb");
        assert_eq!(r.at, vec![0.0, 3.0, 4.0, 7.0]);
        assert!((r.score - 0.9).abs() < 1e-6);
    }

    #[test]
    fn a_blob_becomes_a_box_grown_by_the_unclip_distance() {
        // A 40×8 block of text probability 0.9 at (10, 6) on a 64×32 map.
        let (w, h) = (64u32, 32u32);
        let mut map = vec![0.0f32; (w * h) as usize];
        for y in 6..14 {
            for x in 10..50 {
                map[(y * w + x) as usize] = 0.9;
            }
        }
        let f = boxes_from_map(&map, w, h, w, h, DetParams::default());
        assert_eq!(f.len(), 1);
        // Dilated to 41×9; d = 41·9·1.6/(2·50) ≈ 5.9.
        let b = f[0].rect;
        assert!((b.x - 4).abs() <= 1 && (b.y).abs() <= 1, "{b:?}");
        assert!(
            (b.right() - 57).abs() <= 1 && (b.bottom() - 21).abs() <= 1,
            "{b:?}"
        );
        // Weak text is not a box.
        let weak: Vec<f32> = map.iter().map(|v| v * 0.5).collect();
        assert!(boxes_from_map(&weak, w, h, w, h, DetParams::default()).is_empty());
    }

    #[test]
    fn a_wide_gap_between_words_cuts_a_box_into_labels() {
        // "Edit   View": characters 10 px apart, the gap 60 px, in a 200 × 20 box.
        let text = "Edit View";
        let xs = [5.0, 15.0, 25.0, 35.0, 70.0, 105.0, 115.0, 125.0, 135.0];
        let r = Read {
            text: text.into(),
            score: 0.9,
            at: xs.iter().map(|x| x / 200.0).collect(),
        };
        let parts = split_at_gaps(&r, 200.0, 20.0, 1.2);
        let names: Vec<&str> = parts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(names, ["Edit", "View"]);
        // Words one space apart stay one label.
        let xs = [5.0, 15.0, 25.0, 35.0, 45.0, 55.0, 65.0, 75.0, 85.0];
        let r = Read {
            text: text.into(),
            score: 0.9,
            at: xs.iter().map(|x| x / 200.0).collect(),
        };
        assert_eq!(split_at_gaps(&r, 200.0, 20.0, 1.2).len(), 1);
    }
}
