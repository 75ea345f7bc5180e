//! PP-OCRv6 (PaddleOCR's small detector and recogniser, Apache-2.0, shipped in the PyPI wheel `rapidocr`) through ONNX Runtime: text boxes found in a frame's pixels, each box read with the model's own confidence and where each character sits.
//!
//! Two models, one pure core around them:
//! - the detector (DB) gives a text probability per pixel; [`boxes_from_map`] turns it into
//!   axis-aligned boxes (screen text is axis-aligned: no rotated rectangles), grown by the DB
//!   "unclip" distance the model was trained with;
//! - a box's ink is cut into lines at empty rows and into labels at wide empty columns
//!   ([`labels_in`]): the detector joins neighbours a few pixels apart ("Data file   Osaka");
//! - the recogniser (SVTR + CTC) reads each label scaled to 48 px high; [`ctc_decode`] turns its
//!   per-column classes into text and the mean probability.
//!
//! The character set is the recogniser's own metadata (`character`), as RapidOCR reads it.

use std::path::Path;

mod head;

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

/// One box read: its text and the mean probability of its characters.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub text: String,
    pub score: f32,
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
        let det = voxdesk_onnx::session_lean(&env, &det_path, threads)?;
        let model = std::fs::read(&rec_path)
            .map_err(|e| OcrError::Run(format!("{}: {e}", rec_path.display())))?;
        let list = head::metadata(&model, "character")
            .ok_or_else(|| OcrError::Run(format!("{}: no character list", rec_path.display())))?;
        // Index 0 is CTC's blank, the last a space (as PaddleOCR's decoder adds them). The
        // list is Chinese and English: voxdesk reads English screens, where a CJK character is
        // always a misreading ("+" read as "十"), so the recogniser's last layer keeps only the
        // other classes (`head`); a model it cannot cut is loaded whole, those classes never
        // chosen.
        let mut all = vec![String::new()];
        all.extend(list.lines().map(str::to_string));
        all.push(" ".into());
        let keep: Vec<usize> = (0..all.len())
            .filter(|&i| i == 0 || !all[i].chars().any(east_asian))
            .collect();
        let (rec, chars) = match head::keep_classes(&model, all.len(), &keep) {
            Some(cut) => (
                voxdesk_onnx::session_lean_bytes(&env, &rec_path, &cut, threads)?,
                keep.iter().map(|&i| all[i].clone()).collect(),
            ),
            None => (
                voxdesk_onnx::session_lean(&env, &rec_path, threads)?,
                all.into_iter()
                    .map(|c| {
                        if c.chars().any(east_asian) {
                            String::new()
                        } else {
                            c
                        }
                    })
                    .collect(),
            ),
        };
        Ok(Ocr {
            det,
            rec,
            chars,
            params: DetParams::default(),
        })
    }

    /// Text boxes in `region` of an RGBA frame, in the frame's pixels. The detector sees the
    /// region scaled by `scale` (at most to [`DET_MAX_SIDE`]).
    pub fn detect(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        region: Bbox,
        scale: f32,
    ) -> Result<Vec<Found>, OcrError> {
        let r = clip(region, width, height)
            .ok_or_else(|| OcrError::Image(format!("no region {region:?} in {width}x{height}")))?;
        let scale = (DET_MAX_SIDE as f32 / r.w.max(r.h) as f32).min(scale);
        let sw = ((r.w as f32 * scale).round() as u32).max(1);
        let sh = ((r.h as f32 * scale).round() as u32).max(1);
        let (iw, ih) = (
            sw.div_ceil(DET_ALIGN) * DET_ALIGN,
            sh.div_ceil(DET_ALIGN) * DET_ALIGN,
        );
        let crop = crop_rgb(rgba, width, r);
        let img = if scale != 1.0 {
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
        if shape.len() != 4 || map.len() != (shape[2] * shape[3]) as usize {
            return Err(OcrError::Run(format!(
                "the detector gave a map of shape {shape:?}"
            )));
        }
        let (mh, mw) = (shape[2] as u32, shape[3] as u32);
        let found = boxes_from_map(map, mw, mh, sw, sh, self.params);
        drop(out);
        if (iw * ih) as usize >= TRIM_ABOVE {
            give_back();
        }
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
        // Batches of up to REC_BATCH boxes, and of at most REC_COLUMNS columns once each is
        // padded to the widest: the recogniser's working memory grows with the padded area.
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let mut batch: Vec<usize> = Vec::new();
        for &i in &order {
            let w = scaled[i].as_ref().map(|s| s.width()).unwrap_or(0);
            if !batch.is_empty()
                && (batch.len() == REC_BATCH || (batch.len() as u32 + 1) * w > REC_COLUMNS)
            {
                batches.push(std::mem::take(&mut batch));
            }
            batch.push(i);
        }
        if !batch.is_empty() {
            batches.push(batch);
        }
        let columns: u32 = batches
            .iter()
            .flatten()
            .filter_map(|&i| scaled[i].as_ref().map(|s| s.width()))
            .sum();
        for batch in &batches {
            let widest = batch
                .iter()
                .filter_map(|&i| scaled[i].as_ref().map(|s| s.width()))
                .max()
                .unwrap_or(8)
                .next_multiple_of(8);
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
            if shape.len() != 3
                || shape[0] as usize != batch.len()
                || probs.len() != (shape[0] * shape[1] * shape[2]) as usize
            {
                return Err(OcrError::Run(format!(
                    "the recogniser gave an output of shape {shape:?}"
                )));
            }
            let (steps, classes) = (shape[1] as usize, shape[2] as usize);
            for (k, &i) in batch.iter().enumerate() {
                let p = &probs[k * steps * classes..(k + 1) * steps * classes];
                out[i] = ctc_decode(p, steps, classes, &self.chars);
            }
        }
        if (columns * REC_H) as usize >= TRIM_ABOVE {
            give_back();
        }
        Ok(out)
    }
}

/// Pixels a model run must have seen before its freed memory is worth handing back (a run on
/// a changed widget is far smaller, and trimming costs 1–7 ms).
const TRIM_ABOVE: usize = 1 << 18;

/// Hand the memory the models' large, short-lived tensors leave free back to the system.
fn give_back() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free heap memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Ink components (8-connected) that are a button's border, not a letter: drawn with hairlines
/// (hardly a pixel of it inked on all four sides), at least [`BORDER_TALLER`] times as tall as
/// the tallest letter of the box, and reaching past the other letters both above and below
/// (a pill's outline, the rules between a toolbar's buttons with the line under them). They are
/// erased from `ink` (a box of `bw`×`bh`); returned are their upright strokes as tall, as
/// (x0, x1, y0, y1): labels do not reach across them. Fewer than three letters: no border.
fn erase_borders(ink: &mut [bool], bw: usize, bh: usize) -> Vec<(usize, usize, usize, usize)> {
    let comps = pieces(ink, bw, bh);
    // Drawn with hairlines: hardly a pixel of it has ink on all four sides (an outline, a rule;
    // a letter of large text, a filled badge have a body).
    let hollow = |c: &Piece| {
        let inside = |i: usize| {
            let (x, y) = (i % bw, i / bw);
            x > 0
                && y > 0
                && x + 1 < bw
                && y + 1 < bh
                && ink[i - 1]
                && ink[i + 1]
                && ink[i - bw]
                && ink[i + bw]
        };
        let body = c.0.iter().filter(|&&i| inside(i)).count();
        (body as f32) < 0.25 * c.0.len() as f32
    };
    let hollow: Vec<bool> = comps.iter().map(hollow).collect();
    // The tallest letter: the box's pieces of ink but its specks (dots, a gradient's noise),
    // but for their tallest quarter (the borders, a letter glued to a frame's side).
    let mut heights: Vec<usize> = comps
        .iter()
        .filter(|c| c.4 - c.3 >= 4 && c.0.len() >= 6)
        .map(|c| c.4 - c.3)
        .collect();
    if heights.len() < 3 {
        return Vec::new();
    }
    heights.sort_unstable();
    let tallest = heights[(heights.len() - 1) * 3 / 4] as f32;
    let tall: Vec<bool> = comps
        .iter()
        .zip(&hollow)
        .map(|(c, &hollow)| hollow && ((c.4 - c.3) as f32) >= BORDER_TALLER * tallest)
        .collect();
    // A border reaches past the letters beside it both above and below; a letter as tall
    // reaches past them one way only (a "y" or a "Q"'s tail below, an "l" above).
    let letters = comps
        .iter()
        .zip(&tall)
        .filter(|(c, &tall)| !tall && c.4 - c.3 >= 4 && c.0.len() >= 6);
    let (top, bottom) = letters.fold((usize::MAX, 0), |(t, b), (c, _)| (t.min(c.3), b.max(c.4)));
    let mut walls = Vec::new();
    for (c, &tall) in comps.iter().zip(&tall) {
        if !tall || (bottom > 0 && (c.3 >= top || c.4 <= bottom)) {
            continue;
        }
        // Its upright strokes (a rule, a frame's side; a pill's round end is not one): each
        // column's runs of its pixels as tall as a border.
        let (cw, ch) = (c.2 - c.1, c.4 - c.3);
        let mut mine = vec![false; cw * ch];
        for &i in &c.0 {
            mine[(i / bw - c.3) * cw + i % bw - c.1] = true;
        }
        let mut upright = Vec::new();
        for x in 0..cw {
            let on = |y: usize| y < ch && mine[y * cw + x];
            let mut y = 0;
            while y < ch {
                let start = y;
                // A pixel missing here and there (a row whose fill is the stroke's colour).
                while on(y) || (on(y + 1) && y > start) {
                    y += 1;
                }
                if (y - start) as f32 >= BORDER_TALLER * tallest {
                    upright.push((c.1 + x, c.1 + x + 1, c.3 + start, c.3 + y));
                }
                y += 1;
            }
        }
        // The strokes go; then what is left of it that is still taller than a letter (a
        // pill's round ends, its outline), never the letters a stroke touched.
        for &(x, _, y0, y1) in &upright {
            for y in y0..y1 {
                mine[(y - c.3) * cw + x - c.1] = false;
                ink[y * bw + x] = false;
            }
        }
        for (piece, _, _, top, bottom) in pieces(&mine, cw, ch) {
            if (bottom - top) as f32 >= BORDER_TALLER * tallest {
                for i in piece {
                    ink[(c.3 + i / cw) * bw + c.1 + i % cw] = false;
                }
            }
        }
        walls.extend(upright);
    }
    walls
}

/// The 8-connected pieces of a `w`×`h` mask: each one's cells (row-major indices) and its
/// bounds (x0, x1, y0, y1).
type Piece = (Vec<usize>, usize, usize, usize, usize);
fn pieces(on: &[bool], w: usize, h: usize) -> Vec<Piece> {
    let mut seen = vec![false; on.len()];
    let mut out = Vec::new();
    for start in 0..on.len() {
        if !on[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        let (mut stack, mut cells) = (vec![start], Vec::new());
        let (mut x0, mut x1, mut y0, mut y1) = (usize::MAX, 0, usize::MAX, 0);
        while let Some(i) = stack.pop() {
            cells.push(i);
            let (x, y) = (i % w, i / w);
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x + 1), y0.min(y), y1.max(y + 1));
            for (dx, dy) in NEIGHBOURS {
                let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                if nx < 0 || ny < 0 || nx >= w as i32 || ny >= h as i32 {
                    continue;
                }
                let j = ny as usize * w + nx as usize;
                if on[j] && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        out.push((cells, x0, x1, y0, y1));
    }
    out
}

/// A pixel this far from its row's fill is ink, however strong the box's strongest pixel: a
/// faint grey count beside a black rating and an orange star ("★ 4.3 (10,459)") is text too,
/// where a third of the star's strength hid it. Measured with `voxdesk bench eyes` (train
/// stride 3 / dev stride 1 / real apps, found and junk): without 2680 / 4239 / 195, 19 / 52;
/// **64: 2690 / 4239 / 199, 19 / 54**; 48: 2698 / 4218, 24 / 60.
const INK_ENOUGH: f32 = 64.0;

/// A border stands this many times taller than the tallest letter beside it (a parenthesis
/// stands about 1.4 times as tall as a lower-case letter; Xaw's pill ends twice).
const BORDER_TALLER: f32 = 1.6;

/// The eight neighbours of a pixel.
const NEIGHBOURS: [(i32, i32); 8] = [
    (-1, -1),
    (0, -1),
    (1, -1),
    (-1, 0),
    (1, 0),
    (-1, 1),
    (0, 1),
    (1, 1),
];

/// Boxes read in one run of the recogniser.
const REC_BATCH: usize = 8;
/// Columns (at 48 rows) in one run of the recogniser, padding included.
const REC_COLUMNS: u32 = 2048;

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
        // Two lines close enough to touch in the map are one component: cut it where a row's
        // mean probability falls far below the strongest row's (the space between lines).
        for (ya, yb) in line_runs(map, w, x0, x1, y0, y1) {
            if let Some(f) = grow(map, w, (x0, x1, ya, yb), sw, sh, p) {
                out.push(f);
            }
        }
    }
    out.sort_by_key(|f| (f.rect.y, f.rect.x));
    out
}

/// The runs of rows of a component (columns `x0..=x1`, rows `y0..=y1`) that hold text: rows
/// whose mean probability reaches 40 % of the strongest row's. One run for a single line.
fn line_runs(
    map: &[f32],
    w: usize,
    x0: usize,
    x1: usize,
    y0: usize,
    y1: usize,
) -> Vec<(usize, usize)> {
    let n = (x1 - x0 + 1) as f32;
    let mean: Vec<f32> = (y0..=y1)
        .map(|y| map[y * w + x0..=y * w + x1].iter().sum::<f32>() / n)
        .collect();
    let peak = mean.iter().cloned().fold(0.0f32, f32::max);
    let mut runs = Vec::new();
    let mut start = None;
    for (i, &m) in mean.iter().enumerate() {
        match (m >= 0.4 * peak, start) {
            (true, None) => start = Some(i),
            (false, Some(a)) => {
                runs.push((y0 + a, y0 + i - 1));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(a) = start {
        runs.push((y0 + a, y1));
    }
    if runs.len() < 2 {
        return vec![(y0, y1)];
    }
    runs
}

/// One line's box (columns `x0..=x1`, rows `ya..=yb` of the map): trimmed to the columns with
/// text in those rows, kept when its mean probability reaches `box_thresh`, grown by DB's
/// unclip distance, in the `sw`×`sh` image's pixels.
fn grow(
    map: &[f32],
    w: usize,
    (x0, x1, ya, yb): (usize, usize, usize, usize),
    sw: u32,
    sh: u32,
    p: DetParams,
) -> Option<Found> {
    let col_on = |x: usize| (ya..=yb).any(|y| map[y * w + x] > p.thresh);
    let x0 = (x0..=x1).find(|&x| col_on(x))?;
    let x1 = (x0..=x1).rev().find(|&x| col_on(x))?;
    let (bw, bh) = ((x1 - x0 + 1) as f32, (yb - ya + 1) as f32);
    if bw.min(bh) < 3.0 {
        return None;
    }
    let mut sum = 0.0f32;
    for y in ya..=yb {
        sum += map[y * w + x0..=y * w + x1].iter().sum::<f32>();
    }
    let score = sum / (bw * bh);
    if score < p.box_thresh {
        return None;
    }
    let d = bw * bh * p.unclip / (2.0 * (bw + bh));
    if bw.min(bh) + 2.0 * d < 5.0 {
        return None;
    }
    // The map has the input's size (the padded image): its pixels are the image's.
    let gx0 = (x0 as f32 - d).round().max(0.0) as i32;
    let gy0 = (ya as f32 - d).round().max(0.0) as i32;
    let gx1 = ((x1 + 1) as f32 + d).round().min(sw as f32) as i32;
    let gy1 = ((yb + 1) as f32 + d).round().min(sh as f32) as i32;
    (gx1 > gx0 && gy1 > gy0).then_some(Found {
        rect: Bbox {
            x: gx0,
            y: gy0,
            w: gx1 - gx0,
            h: gy1 - gy0,
        },
        score,
    })
}

/// Han, kana, Hangul and full-width forms: scripts an English screen does not show.
pub fn east_asian(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

/// Greedy CTC: the likeliest class per step among those `chars` names (an empty entry past the
/// blank is never chosen), repeats merged, blanks (class 0) dropped. The score is the mean
/// probability of the kept steps.
pub fn ctc_decode(probs: &[f32], steps: usize, classes: usize, chars: &[String]) -> Read {
    let mut text = String::new();
    let mut n = 0usize;
    let mut sum = 0.0f32;
    let mut prev = 0usize;
    for t in 0..steps {
        let row = &probs[t * classes..(t + 1) * classes];
        let usable = |i: usize| i == 0 || chars.get(i).is_some_and(|c| !c.is_empty());
        let (best, p) = row.iter().enumerate().filter(|&(i, _)| usable(i)).fold(
            (0usize, f32::MIN),
            |b, (i, &v)| if v > b.1 { (i, v) } else { b },
        );
        if best != 0 && best != prev {
            if let Some(c) = chars.get(best) {
                text.push_str(c);
                n += 1;
                sum += p;
            }
        }
        prev = best;
    }
    Read {
        text,
        score: if n == 0 { 0.0 } else { sum / n as f32 },
    }
}

/// Where a line of ink is cut into labels, in its ink heights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gaps {
    /// Empty columns at least this wide always part two labels.
    pub wide: f32,
    /// Narrower ones down to this part them too where they are `ratio` times the line's median
    /// gap between glyphs or more: a menu bar's letters stand 1–2 px apart and its items an em
    /// apart, while monospace letters stand 2–4 px apart and a space is one cell.
    pub near: f32,
    pub ratio: f32,
    /// Buttons' borders part labels and are left out of them (see `erase_borders`).
    pub borders: bool,
    /// Two words whose inks differ by at least this much (the largest difference of a channel,
    /// 0–255) are two labels: a link in a sentence, a variable's name and its value, a name and
    /// the grey time beside it. 0: never.
    pub colour: u8,
}

/// A detector's box as labels: its ink (the pixels that differ from their row's fill)
/// split into lines where whole rows are empty (an underscore a row under its letters kept
/// with them), and each line into labels where whole columns
/// are empty for more than `gap` × the line's ink height (a word space is about a third of it;
/// two labels the detector joined, "Data file   Osaka", stand an em or more apart), at
/// buttons' borders (thin strokes from the line's top to its bottom, far taller than its
/// letters), and between words in two colours (`Gaps::colour`; in a monospace line only
/// across a gutter). Each piece keeps a margin of a fifth of its height, as the recogniser was trained
/// with, up and down only over empty rows, and ends above a mnemonic's underline
/// ([`mnemonic_cut`]). Pure.
pub fn labels_in(rgba: &[u8], width: u32, b: Bbox, gaps: Gaps) -> Vec<Bbox> {
    let (bw, bh) = (b.w as usize, b.h as usize);
    if bw < 2 || bh < 2 {
        return vec![b];
    }
    let px = |x: usize, y: usize| {
        let at = ((b.y as usize + y) * width as usize + b.x as usize + x) * 4;
        [rgba[at], rgba[at + 1], rgba[at + 2]]
    };
    // The border's most common colour is the fill the text is drawn on.
    let mut counts: std::collections::HashMap<[u8; 3], usize> = std::collections::HashMap::new();
    for x in 0..bw {
        *counts.entry(px(x, 0)).or_default() += 1;
        *counts.entry(px(x, bh - 1)).or_default() += 1;
    }
    for y in 0..bh {
        *counts.entry(px(0, y)).or_default() += 1;
        *counts.entry(px(bw - 1, y)).or_default() += 1;
    }
    let border = counts
        .into_iter()
        .max_by_key(|(c, n)| (*n, *c))
        .map(|(c, _)| c)
        .expect("a box has a border");
    // Each row's own fill: its most common colour when that covers most of the row (a box the
    // detector drew across a title bar and the menu under it spans two fills; a vertical
    // gradient changes its fill row by row), else the border's.
    let fills: Vec<[u8; 3]> = (0..bh)
        .map(|y| {
            let mut counts: std::collections::HashMap<[u8; 3], usize> =
                std::collections::HashMap::new();
            for x in 0..bw {
                *counts.entry(px(x, y)).or_default() += 1;
            }
            match counts.into_iter().max_by_key(|(c, n)| (*n, *c)) {
                Some((c, n)) if n * 2 > bw => c,
                _ => border,
            }
        })
        .collect();
    let diff = |c: [u8; 3], y: usize| {
        let f = fills[y];
        (0..3).map(|i| c[i].abs_diff(f[i])).max().unwrap_or(0)
    };
    let mut strongest = 0u8;
    for y in 0..bh {
        for x in 0..bw {
            strongest = strongest.max(diff(px(x, y), y));
        }
    }
    if strongest < 16 {
        return vec![b];
    }
    let cut = (strongest as f32 * 0.35).clamp(12.0, INK_ENOUGH) as u8;
    let mut ink: Vec<bool> = (0..bh)
        .flat_map(|y| (0..bw).map(move |x| (x, y)))
        .map(|(x, y)| diff(px(x, y), y) >= cut)
        .collect();
    // Buttons' borders are no part of a label: erased, and a thin upright one parts the
    // labels beside it (the rules between a toolbar's buttons).
    let walls = if gaps.borders {
        erase_borders(&mut ink, bw, bh)
    } else {
        Vec::new()
    };
    let row_on = |y: usize| ink[y * bw..(y + 1) * bw].iter().any(|&v| v);
    // Each line's letters (y0..y1) and its bottom: an underscore a row or two under them,
    // thin and wide, is theirs (at small sizes an empty row parts it from the letters), not
    // a line of its own nor the tips of the next line's letters (those are narrow, or cut by
    // the box's edge).
    let mut lines: Vec<(usize, usize, usize)> = Vec::new();
    for (y0, y1) in runs(&row_on, bh, 1) {
        if let Some(last) = lines.last_mut() {
            let main = last.1 - last.0;
            let widest = runs(&|x: usize| (y0..y1).any(|y| ink[y * bw + x]), bw, 1)
                .iter()
                .map(|r| r.1 - r.0)
                .max()
                .unwrap_or(0);
            if main >= 6
                && y1 - y0 <= (main / 4).max(2)
                && y0 - last.2 <= 2
                && y1 < bh
                && 10 * widest >= 4 * main
            {
                last.2 = y1;
                continue;
            }
        }
        lines.push((y0, y1, y1));
    }
    let mut out = Vec::new();
    for (y0, y1, bottom) in lines {
        let lh = y1 - y0;
        if lh < 3 {
            continue;
        }
        let col_on = |x: usize| (y0..bottom).any(|y| ink[y * bw + x]);
        // The glyphs (runs of inked columns) and the gaps between them.
        let glyphs = runs(&col_on, bw, 1);
        let mut between: Vec<usize> = glyphs.windows(2).map(|p| p[1].0 - p[0].1).collect();
        between.sort_unstable();
        let median = between.get(between.len() / 2).copied().unwrap_or(1).max(1);
        let h = lh as f32;
        let cut_at = |g: usize| {
            let g = g as f32;
            g >= (gaps.wide * h).max(4.0)
                || (g >= (gaps.near * h).max(4.0) && g >= gaps.ratio * median as f32)
        };
        // Words (glyphs closer than a fifth of the line's height) and their ink's colour.
        let word_gap = ((0.2 * h).ceil() as usize).max(2);
        let words = runs(&col_on, bw, word_gap);
        let ink_of = |x0: usize, x1: usize| -> [f32; 3] {
            let mut most = 0u8;
            for y in y0..y1 {
                for x in x0..x1 {
                    if ink[y * bw + x] {
                        most = most.max(diff(px(x, y), y));
                    }
                }
            }
            let floor = (most as f32 * 0.8) as u8;
            let (mut sum, mut n) = ([0f32; 3], 0f32);
            for y in y0..y1 {
                for x in x0..x1 {
                    if ink[y * bw + x] && diff(px(x, y), y) >= floor {
                        let c = px(x, y);
                        for i in 0..3 {
                            sum[i] += c[i] as f32;
                        }
                        n += 1.0;
                    }
                }
            }
            sum.map(|v| v / n.max(1.0))
        };
        let colours: Vec<[f32; 3]> = if gaps.colour > 0 {
            words.iter().map(|&(a, z)| ink_of(a, z)).collect()
        } else {
            Vec::new()
        };
        let word_at = |x: usize| words.iter().position(|&(a, z)| a <= x && x < z);
        // In a monospace line (code, a terminal) colours mark tokens of one line, not labels:
        // there only a gap of two cells or more (a gutter) parts two colours.
        // Two glyphs' centres two cells apart stand a space apart; a gutter is wider. A line
        // too short to tell (fewer than seven glyphs) is not cut by colour.
        let pitch = mono_pitch(&glyphs);
        let recoloured =
            |l: (usize, usize), r: (usize, usize)| match (word_at(l.0), word_at(r.0), pitch) {
                (Some(i), Some(j), Some(p))
                    if i != j
                        && gaps.colour > 0
                        && (p == 0.0 || (r.0 + r.1 - l.0 - l.1) as f32 >= 5.0 * p) =>
                {
                    let (p, q) = (colours[i], colours[j]);
                    (0..3).any(|c| (p[c] - q[c]).abs() >= gaps.colour as f32)
                }
                _ => false,
            };
        let mut labels: Vec<(usize, usize)> = Vec::new();
        let mut prev: Option<(usize, usize)> = None;
        for (x0, x1) in glyphs.iter().copied() {
            let wall = |a: usize, z: usize| {
                walls
                    .iter()
                    .any(|w| w.0 >= a && w.1 <= z && w.2 < y1 && w.3 > y0)
            };
            match labels.last_mut() {
                Some(last)
                    if !cut_at(x0 - last.1)
                        && !wall(last.1, x0)
                        && !prev.is_some_and(|p| recoloured(p, (x0, x1))) =>
                {
                    last.1 = x1
                }
                _ => labels.push((x0, x1)),
            }
            prev = Some((x0, x1));
        }
        for (x0, x1) in labels {
            // A mnemonic's underline is not read with the letters (see `mnemonic_cut`).
            let mine: Vec<(usize, usize)> = glyphs
                .iter()
                .copied()
                .filter(|g| g.0 >= x0 && g.1 <= x1)
                .collect();
            let bottom = mnemonic_cut(&ink, bw, &mine, (y0, bottom)).unwrap_or(bottom);
            let m = ((lh as f32) * 0.2).ceil() as i32 + 1;
            // Up and down only over rows empty of ink: in a terminal the line above or below
            // may stand closer than the margin, and its letters' tips at a crop's edge read as
            // underscores between the words.
            // Sideways, never over a border beside it.
            let wall_at = |x: usize| walls.iter().any(|w| w.0 == x && w.2 < y1 && w.3 > y0);
            let left = (1..=m as usize)
                .take_while(|&k| k <= x0 && !wall_at(x0 - k))
                .count();
            let right = (0..m as usize)
                .take_while(|&k| x1 + k < bw && !wall_at(x1 + k))
                .count();
            let clear = |y: usize| (x0..x1).all(|x| !ink[y * bw + x]);
            let up = (1..=m as usize)
                .take_while(|&k| k <= y0 && clear(y0 - k))
                .count() as i32;
            let down = (0..m as usize)
                .take_while(|&k| bottom + k < bh && clear(bottom + k))
                .count() as i32;
            let r = Bbox {
                x: b.x + (x0 - left) as i32,
                y: b.y + y0 as i32 - up,
                w: (x1 + right - x0 + left) as i32,
                h: (bottom - y0) as i32 + up + down,
            };
            // Within the detector's box (its own margin is the fill).
            let x = r.x.max(b.x);
            let y = r.y.max(b.y);
            let right = r.right().min(b.right());
            let bottom = r.bottom().min(b.bottom());
            out.push(Bbox {
                x,
                y,
                w: right - x,
                h: bottom - y,
            });
        }
    }
    if out.is_empty() {
        vec![b]
    } else {
        out
    }
}

/// The runs of `0..n` where `on` holds (a line's rows, a line's glyphs' columns), runs less
/// than `min_gap` apart joined.
fn runs(on: &dyn Fn(usize) -> bool, n: usize, min_gap: usize) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < n {
        if !on(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && on(i) {
            i += 1;
        }
        match out.last_mut() {
            Some(last) if start - last.1 < min_gap => last.1 = i,
            _ => out.push((start, i)),
        }
    }
    out
}

/// Where a label's crop ends when the only ink under its letters' baseline is a mnemonic's
/// underline (GTK's menu bars draw "File" with a rule under its "F", which the recogniser reads
/// as an "E"): the row under the baseline. The baseline is the row most of the glyphs (runs of
/// inked columns, `x`) end on; under it, every row's ink must be runs at least three pixels and
/// a third of the letters' height wide, at most two rows (a sixth of the height) in all, and
/// under a letter: nearly all of its columns inked above too, and the letter standing on it by
/// its stems (a round letter's overshoot is covered by the letter's own bottom stroke). An
/// underscore is a glyph of its own (nothing above it), a descender narrow: those lines keep
/// their bottom. Pure.
fn mnemonic_cut(
    ink: &[bool],
    bw: usize,
    glyphs: &[(usize, usize)],
    (y0, bottom): (usize, usize),
) -> Option<usize> {
    let at = |x: usize, y: usize| ink[y * bw + x];
    let (x0, x1) = (glyphs.first()?.0, glyphs.last()?.1);
    let mut ends = glyphs
        .iter()
        .map(|&(a, z)| {
            (y0..bottom)
                .rev()
                .find(|&y| (a..z).any(|x| at(x, y)))
                .map(|y| y + 1)
        })
        .collect::<Option<Vec<usize>>>()?;
    // The baseline: the end most glyphs share (the upper one of a tie), two glyphs at least.
    ends.sort_unstable();
    let (n, base) = ends
        .chunk_by(|a, b| a == b)
        .map(|c| (c.len(), c[0]))
        .max_by_key(|&(n, e)| (n, std::cmp::Reverse(e)))?;
    let lh = base - y0;
    if n < 2 || base >= bottom || lh < 6 {
        return None;
    }
    let rows: Vec<usize> = (base..bottom)
        .filter(|&y| (x0..x1).any(|x| at(x, y)))
        .collect();
    if rows.is_empty() || rows.len() > (lh / 6).max(2) {
        return None;
    }
    let wide = (lh / 3).max(3);
    let (mut under, mut above) = (0, 0);
    for &y in &rows {
        for (a, z) in runs(&|i| at(x0 + i, y), x1 - x0, 1) {
            let (a, z) = (x0 + a, x0 + z);
            // Not a round letter's overshoot ("C", "o" end a row lower than "R", "L", "F"): the
            // letter's bottom stroke covers it, where a letter stands on an underline by a stem.
            if z - a < wide || 2 * (a..z).filter(|&c| at(c, base - 1)).count() > z - a {
                return None;
            }
            under += z - a;
            above += (a..z).filter(|&c| (y0..base).any(|r| at(c, r))).count();
        }
    }
    (10 * above >= 8 * under).then_some(base)
}

/// The glyphs of a one-line label box: runs of inked columns (the frame's x, end exclusive)
/// and the colour of its ink (the mean of its strongest pixels).
#[derive(Debug, Clone, PartialEq)]
pub struct Glyphs {
    pub runs: Vec<(i32, i32)>,
    pub colour: [f32; 3],
    /// The largest difference of a pixel from the fill (0–255).
    pub strength: u8,
}

impl Glyphs {
    /// Each glyph's centre.
    pub fn centres(&self) -> impl Iterator<Item = f32> + '_ {
        self.runs.iter().map(|&(a, z)| (a + z) as f32 / 2.0)
    }
}

/// The glyphs of box `b` of an RGBA frame, its ink told from the fill (its border's most
/// common colour) as in [`labels_in`]. Pure.
pub fn glyphs_in(rgba: &[u8], width: u32, b: Bbox) -> Glyphs {
    let (bw, bh) = (b.w.max(0) as usize, b.h.max(0) as usize);
    let px = |x: usize, y: usize| {
        let at = ((b.y as usize + y) * width as usize + b.x as usize + x) * 4;
        [rgba[at], rgba[at + 1], rgba[at + 2]]
    };
    let mut counts: std::collections::HashMap<[u8; 3], usize> = std::collections::HashMap::new();
    for x in 0..bw {
        *counts.entry(px(x, 0)).or_default() += 1;
        *counts.entry(px(x, bh.saturating_sub(1))).or_default() += 1;
    }
    let Some(fill) = counts
        .into_iter()
        .max_by_key(|(c, n)| (*n, *c))
        .map(|(c, _)| c)
    else {
        return Glyphs {
            runs: Vec::new(),
            colour: [0.0; 3],
            strength: 0,
        };
    };
    let diff = |c: [u8; 3]| (0..3).map(|i| c[i].abs_diff(fill[i])).max().unwrap_or(0);
    let strongest = (0..bh)
        .flat_map(|y| (0..bw).map(move |x| (x, y)))
        .map(|(x, y)| diff(px(x, y)))
        .max()
        .unwrap_or(0);
    let cut = (strongest as f32 * 0.35).max(12.0) as u8;
    let floor = (strongest as f32 * 0.8) as u8;
    let (mut sum, mut n) = ([0f32; 3], 0f32);
    let mut runs: Vec<(i32, i32)> = Vec::new();
    for x in 0..bw {
        let mut on = false;
        for y in 0..bh {
            let c = px(x, y);
            let d = diff(c);
            on |= d >= cut;
            if d >= floor && d >= cut {
                for i in 0..3 {
                    sum[i] += c[i] as f32;
                }
                n += 1.0;
            }
        }
        let x = b.x + x as i32;
        match runs.last_mut() {
            Some(last) if on && last.1 == x => last.1 = x + 1,
            _ if on => runs.push((x, x + 1)),
            _ => {}
        }
    }
    Glyphs {
        runs,
        colour: sum.map(|v| v / n.max(1.0)),
        strength: strongest,
    }
}

/// The cell width of a monospace line from its glyphs (runs of inked columns): most steps
/// between neighbouring glyphs' centres are one cell (within a pixel), where a proportional
/// font's vary with its letters. 0 for a proportional line; None for one too short to tell.
fn mono_pitch(glyphs: &[(usize, usize)]) -> Option<f32> {
    let steps: Vec<f32> = glyphs
        .windows(2)
        .map(|p| (p[1].0 + p[1].1) as f32 / 2.0 - (p[0].0 + p[0].1) as f32 / 2.0)
        .collect();
    if steps.len() < 6 {
        return None;
    }
    let mut best: Option<(usize, f32)> = None;
    for &s in &steps {
        if s < 3.0 {
            continue;
        }
        let near: Vec<f32> = steps
            .iter()
            .copied()
            .filter(|t| (t - s).abs() <= 1.0)
            .collect();
        if best.is_none_or(|(n, _)| near.len() > n) {
            best = Some((near.len(), near.iter().sum::<f32>() / near.len() as f32));
        }
    }
    best.map(|(n, p)| if n * 10 >= steps.len() * 6 { p } else { 0.0 })
        .or(Some(0.0))
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
        // A class with no usable character ("十" on an English screen) is never chosen: the
        // step goes to the likeliest usable one.
        let chars: Vec<String> = ["", "+", "", " "].iter().map(|s| s.to_string()).collect();
        let probs = [0.05, 0.3, 0.6, 0.05];
        assert_eq!(ctc_decode(&probs, 1, 4, &chars).text, "+");
        assert!(east_asian('十') && !east_asian('+') && !east_asian('×') && !east_asian('π'));
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

    const G: Gaps = Gaps {
        wide: 0.8,
        near: 0.8,
        ratio: 100.0,
        borders: true,
        colour: 0,
    };

    /// A white box with dark "glyphs": 6 px wide, 10 px tall, at the given x positions, on a
    /// row starting at y.
    fn drawn(w: u32, h: u32, glyphs: &[(i32, i32)]) -> Vec<u8> {
        let mut img = vec![255u8; (w * h * 4) as usize];
        for &(gx, gy) in glyphs {
            for y in gy..gy + 10 {
                for x in gx..gx + 6 {
                    let at = ((y as u32 * w + x as u32) * 4) as usize;
                    img[at..at + 3].copy_from_slice(&[30, 30, 30]);
                }
            }
        }
        img
    }

    /// `img` (w wide) with a dark rectangle.
    fn paint(img: &mut [u8], w: usize, x: std::ops::Range<usize>, y: std::ops::Range<usize>) {
        paint_grey(img, w, x, y, 30);
    }

    /// `img` (w wide) with a rectangle of grey `v`.
    fn paint_grey(
        img: &mut [u8],
        w: usize,
        x: std::ops::Range<usize>,
        y: std::ops::Range<usize>,
        v: u8,
    ) {
        for yy in y {
            for xx in x.clone() {
                let at = (yy * w + xx) * 4;
                img[at..at + 3].copy_from_slice(&[v, v, v]);
            }
        }
    }

    #[test]
    fn buttons_borders_part_labels_and_are_left_out_of_them() {
        let b = Bbox {
            x: 0,
            y: 0,
            w: 200,
            h: 40,
        };
        // "|Quit|Save|": rules 20 px tall, 2 px from 10 px letters 2 px apart.
        let mut g: Vec<(i32, i32)> = (0..4).map(|i| (6 + i * 8, 10)).collect();
        g.extend((0..4).map(|i| (44 + i * 8, 10)));
        let mut img = drawn(200, 40, &g);
        for x in [2, 40, 78] {
            paint(&mut img, 200, x..x + 2, 5..25);
        }
        let parts = labels_in(&img, 200, b, G);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].x >= 4 && parts[0].right() <= 40, "{parts:?}");
        assert!(parts[1].x >= 42 && parts[1].right() <= 78, "{parts:?}");
        // As tall as its letters, with its margin: not the rules' 20 px.
        assert!(parts.iter().all(|p| p.h <= 16), "{parts:?}");
        // A stroke a little taller than the letters (a "j", a "|") is a letter and parts
        // nothing; one twice their height between them is a rule.
        let mut img = drawn(200, 40, &g);
        paint(&mut img, 200, 40..42, 8..21);
        assert_eq!(labels_in(&img, 200, b, G).len(), 1);
        let mut img = drawn(200, 40, &g);
        paint(&mut img, 200, 40..42, 5..25);
        assert_eq!(labels_in(&img, 200, b, G).len(), 2);
        // As tall as a rule but reaching past the letters one way only, it is a letter: a "y"
        // or a "Q"'s tail below them, an "l" above ("cyberdyne" was cut at its "y").
        for rows in [10..27, 3..20] {
            let mut img = drawn(200, 40, &g);
            paint(&mut img, 200, 40..42, rows.clone());
            assert_eq!(labels_in(&img, 200, b, G).len(), 1, "{rows:?}");
        }
        // A pill's outline around a word: erased, the word read alone, as tall as its letters.
        let g: Vec<(i32, i32)> = (0..4).map(|i| (10 + i * 8, 12)).collect();
        let mut img = drawn(200, 40, &g);
        paint(&mut img, 200, 4..46, 4..5);
        paint(&mut img, 200, 4..46, 27..28);
        paint(&mut img, 200, 4..5, 4..28);
        paint(&mut img, 200, 45..46, 4..28);
        let parts = labels_in(&img, 200, b, G);
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert!(
            parts[0].y >= 5 && parts[0].bottom() <= 27 && parts[0].x >= 5,
            "{parts:?}"
        );
        // Parentheses only a little taller than the letters are letters: "(Quit)".
        let mut img = drawn(200, 40, &g);
        for x in [6, 42] {
            paint(&mut img, 200, x..x + 2, 9..23);
        }
        let parts = labels_in(&img, 200, b, G);
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert!(parts[0].x <= 6 && parts[0].right() >= 44, "{parts:?}");
    }

    #[test]
    fn a_box_is_cut_into_labels_at_wide_gaps_and_into_lines_at_empty_rows() {
        let b = Bbox {
            x: 0,
            y: 0,
            w: 200,
            h: 40,
        };
        // "Data file" (glyphs 2 px apart, a 4 px word space) then "Osaka" 20 px further.
        let mut g: Vec<(i32, i32)> = (0..4).map(|i| (4 + i * 8, 5)).collect();
        g.extend((0..4).map(|i| (40 + i * 8, 5)));
        g.extend((0..5).map(|i| (92 + i * 8, 5)));
        let img = drawn(200, 40, &g);
        let parts = labels_in(&img, 200, b, G);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].right() <= 92 && parts[1].x >= 72, "{parts:?}");
        // The same words 4 px apart throughout: one label.
        let g: Vec<(i32, i32)> = (0..12).map(|i| (4 + i * 10, 5)).collect();
        assert_eq!(labels_in(&drawn(200, 40, &g), 200, b, G).len(), 1);
        // Two lines, one empty row between them: two labels, one above the other.
        let mut g: Vec<(i32, i32)> = (0..6).map(|i| (4 + i * 8, 4)).collect();
        g.extend((0..6).map(|i| (4 + i * 8, 16)));
        let parts = labels_in(&drawn(200, 40, &g), 200, b, G);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].y < parts[1].y);
        // A flat box is left as it is.
        assert_eq!(labels_in(&drawn(200, 40, &[]), 200, b, G), vec![b]);
        // A box across two fills (a dark title bar over a light menu), a word on each and no
        // row between them free of both: two lines, one on each fill.
        let mut img = drawn(200, 40, &[]);
        for y in 0..20 {
            for x in 0..200 {
                let at = (y * 200 + x) * 4;
                img[at..at + 3].copy_from_slice(&[60, 60, 70]);
            }
        }
        for i in 0..5 {
            for y in 6..16 {
                for x in 4 + i * 8..10 + i * 8 {
                    let at = (y * 200 + x) * 4;
                    img[at..at + 3].copy_from_slice(&[250, 250, 250]);
                }
            }
            for y in 22..32 {
                for x in 4 + i * 8..10 + i * 8 {
                    let at = (y * 200 + x) * 4;
                    img[at..at + 3].copy_from_slice(&[30, 30, 30]);
                }
            }
        }
        let parts = labels_in(&img, 200, b, G);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(
            parts[0].y + parts[0].h / 2 < 20 && parts[1].y + parts[1].h / 2 > 20,
            "{parts:?}"
        );
    }

    #[test]
    fn faint_words_beside_strong_ones_are_ink_too() {
        // Four black glyphs, then after an em four grey ones 80 from the white fill (under a
        // third of the black's 255): two labels.
        let mut img = vec![255u8; 200 * 40 * 4];
        for (x0, v) in [
            (6, 0),
            (14, 0),
            (22, 0),
            (30, 0),
            (70, 175),
            (78, 175),
            (86, 175),
            (94, 175),
        ] {
            paint_grey(&mut img, 200, x0..x0 + 6, 10..20, v);
        }
        let b = Bbox {
            x: 0,
            y: 0,
            w: 200,
            h: 40,
        };
        let parts = labels_in(&img, 200, b, G);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[1].x >= 60 && parts[1].right() >= 100, "{parts:?}");
    }

    #[test]
    fn a_mnemonic_underline_is_left_out_of_the_crop_and_nothing_else_is() {
        // Ink as drawn ('#'), and the row the crop ends on (None: it keeps its bottom).
        let table: [(&str, &[&str], Option<usize>); 6] = [
            (
                "'File', a rule under the F's stem (GTK's menu bar)",
                &[
                    "######..#..#.......",
                    "##.........#..###..",
                    "##......#..#.#...#.",
                    "#####...#..#.#####.",
                    "##......#..#.#.....",
                    "##......#..#.#...#.",
                    "##......#..#..###..",
                    "#######............",
                ],
                Some(7),
            ),
            (
                "'Edit', the rule under the E's bottom stroke",
                &[
                    "######......#..#...",
                    "##..........#......",
                    "##.......####..#..#",
                    "#####...#...#..#.##",
                    "##......#...#..#..#",
                    "##......#...#..#..#",
                    "######...####..#..#",
                    "######.............",
                ],
                None,
            ),
            (
                "'CRLF', the C's overshoot",
                &[
                    "..####...#####...#.......#####",
                    ".#....#..#....#..#.......#....",
                    "#........#....#..#.......#....",
                    "#........#####...#.......####.",
                    "#........#..#....#.......#....",
                    ".#....#..#...#...#.......#....",
                    "..####...#....#..######..#....",
                    "..####........................",
                ],
                None,
            ),
            (
                "'a_b', an underscore (a glyph of its own)",
                &[
                    "............#....",
                    "............#....",
                    ".###........####.",
                    "....#.......#...#",
                    ".####.......#...#",
                    "#...#.......#...#",
                    ".####.......####.",
                    "......######.....",
                ],
                None,
            ),
            (
                "'up', descenders",
                &[
                    "..................",
                    "..................",
                    "#...#..####.......",
                    "#...#..#...#......",
                    "#...#..#...#......",
                    "#...#..#...#......",
                    ".####..####.......",
                    ".......#..........",
                    ".......#..........",
                ],
                None,
            ),
            (
                "'Hi' underlined whole (a link): the rule is under the gap too",
                &[
                    "#...#..#", "#...#...", "#####..#", "#...#..#", "#...#..#", "#...#..#",
                    "#...#..#", "########",
                ],
                None,
            ),
        ];
        for (what, rows, want) in table {
            let bw = rows[0].len();
            let ink: Vec<bool> = rows
                .iter()
                .flat_map(|r| r.chars().map(|c| c == '#'))
                .collect();
            let glyphs = runs(&|x| rows.iter().any(|r| r.as_bytes()[x] == b'#'), bw, 1);
            assert_eq!(
                mnemonic_cut(&ink, bw, &glyphs, (0, rows.len())),
                want,
                "{what}"
            );
        }
    }

    #[test]
    fn an_underscore_a_row_under_the_letters_is_part_of_their_line() {
        let b = Bbox {
            x: 0,
            y: 0,
            w: 200,
            h: 40,
        };
        // "send_handle": letters 10 px tall on rows 5..15, an underscore 2 px wide between
        // the words on rows 16..18 (an empty row 15 between).
        let mut g: Vec<(i32, i32)> = (0..4).map(|i| (4 + i * 8, 5)).collect();
        g.extend((0..6).map(|i| (44 + i * 8, 5)));
        let mut img = drawn(200, 40, &g);
        paint(&mut img, 200, 34..44, 16..18);
        let parts = labels_in(&img, 200, b, G);
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert!(parts[0].bottom() >= 18, "{parts:?}");
        // Ink cut by the box's edge may be the tips of the next line's letters: not the
        // line's, so the two words stay apart (G parts them at 8 px).
        let b = Bbox { h: 17, ..b };
        assert_eq!(labels_in(&img, 200, b, G).len(), 2);
    }

    #[test]
    fn words_in_two_colours_are_two_labels_unless_the_line_is_monospace_or_short() {
        let b = Bbox {
            x: 0,
            y: 0,
            w: 200,
            h: 30,
        };
        // The product's gaps (perception's `learned::GAPS`), with and without the colour cut.
        let g = Gaps {
            wide: 1.3,
            near: 0.9,
            ratio: 6.5,
            borders: true,
            colour: 64,
        };
        let off = Gaps { colour: 0, ..g };
        // Glyphs (x, width, colour) 10 px tall.
        let draw = |glyphs: &[(usize, usize, u8)]| {
            let mut img = vec![255u8; 200 * 30 * 4];
            for &(x0, w, c) in glyphs {
                for y in 10..20 {
                    for x in x0..x0 + w {
                        img[(y * 200 + x) * 4..][..3].copy_from_slice(&[c, c, c]);
                    }
                }
            }
            img
        };
        // "Hiro Ortiz" in near black and "4:00 PM" in grey after a word space, letters of a
        // proportional font (widths 2–7 px, 1–2 px apart).
        let mut x = 4;
        let mut line = Vec::new();
        for (i, w) in [6, 2, 4, 5, 0, 7, 4, 3, 2, 5, 0, 5, 2, 5, 5, 0, 6, 7]
            .into_iter()
            .enumerate()
        {
            if w == 0 {
                x += 4;
                continue;
            }
            line.push((x, w, if i < 10 { 30 } else { 150 }));
            x += w + 1 + i % 2;
        }
        let parts = labels_in(&draw(&line), 200, b, g);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(
            parts[1].x > line[8].0 as i32 && parts[0].right() <= line[9].0 as i32,
            "{parts:?}"
        );
        // One colour: one label; the cut off: one label.
        let black: Vec<_> = line.iter().map(|&(x, w, _)| (x, w, 30)).collect();
        assert_eq!(labels_in(&draw(&black), 200, b, g).len(), 1);
        assert_eq!(labels_in(&draw(&line), 200, b, off).len(), 1);
        // Monospace (every glyph in an 8 px cell): "x = 4" in three colours, a cell apart, is
        // one line of code; its gutter, two cells and more to the left, is a label of its own.
        let cells = |cols: &[(usize, u8)]| -> Vec<(usize, usize, u8)> {
            cols.iter().map(|&(c, k)| (4 + c * 8, 5, k)).collect()
        };
        let code = cells(&[
            (4, 30),
            (5, 30),
            (7, 150),
            (9, 90),
            (10, 90),
            (11, 90),
            (12, 90),
        ]);
        assert_eq!(labels_in(&draw(&code), 200, b, g).len(), 1);
        let gutter = cells(&[
            (0, 150),
            (1, 150),
            (4, 30),
            (5, 30),
            (6, 30),
            (7, 30),
            (8, 30),
        ]);
        assert_eq!(labels_in(&draw(&gutter), 200, b, g).len(), 2);
        // Too few glyphs to tell monospace from proportional: not cut by colour.
        let short = [(4, 5, 30), (11, 5, 30), (22, 5, 150), (29, 5, 150)];
        assert_eq!(labels_in(&draw(&short), 200, b, g).len(), 1);
    }

    #[test]
    fn a_gap_counts_against_the_lines_own_letter_spacing() {
        let b = Bbox {
            x: 0,
            y: 0,
            w: 200,
            h: 40,
        };
        let g = Gaps {
            wide: 1.3,
            near: 0.9,
            ratio: 6.5,
            borders: true,
            colour: 0,
        };
        // A menu bar: letters 1 px apart, items 12 px (1.2 ink heights) apart: three labels.
        let mut x = 4;
        let mut glyphs = Vec::new();
        for _ in 0..3 {
            for _ in 0..4 {
                glyphs.push((x, 5));
                x += 7;
            }
            x += 11;
        }
        assert_eq!(labels_in(&drawn(200, 40, &glyphs), 200, b, g).len(), 3);
        // Monospace: letters 3 px apart, a space 9 px: "851.1 MB" stays one label.
        let mut glyphs: Vec<(i32, i32)> = (0..5).map(|i| (4 + i * 9, 5)).collect();
        glyphs.extend((0..2).map(|i| (4 + 5 * 9 + 6 + i * 9, 5)));
        assert_eq!(labels_in(&drawn(200, 40, &glyphs), 200, b, g).len(), 1);
    }

    #[test]
    fn two_lines_touching_in_the_map_are_two_boxes() {
        // Two 60×8 lines at rows 4..12 and 14..22, joined by a weak row of 0.35 between them.
        let (w, h) = (80u32, 28u32);
        let mut map = vec![0.0f32; (w * h) as usize];
        for y in (4..12).chain(14..22) {
            for x in 10..70 {
                map[(y * w + x) as usize] = 0.9;
            }
        }
        for y in 12..14 {
            for x in 10..14 {
                map[(y * w + x) as usize] = 0.35;
            }
        }
        let f = boxes_from_map(&map, w, h, w, h, DetParams::default());
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].rect.bottom() <= f[1].rect.bottom() && f[0].rect.y < f[1].rect.y);
    }
}
