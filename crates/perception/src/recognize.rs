//! Reads label boxes: crops each one, normalises it to dark text on white at a size Tesseract reads well, reads the strips on the workers (one engine each), and maps the words back into labels in capture pixels.
//!
//! Why crops instead of the whole screen: Tesseract's layout analysis glues widgets together (a
//! menubar becomes one line); one clean one-line strip per label, read as a single line (psm 7),
//! cannot be glued to anything. Why normalise by distance from the background colour: it makes light-on-dark,
//! dark-on-light and white-on-blue the same problem, with no separate "invert" pass.
//!
//! The heuristics, each for a kind of screen text it was found on:
//! - The background is the fill around the letters when it surrounds them (bold light initials
//!   outnumber their circle's colour in their own box).
//! - Ink beside and above or below the letters (a badge's rounded corners) is cleared; a window
//!   edge through a strip and a block cursor after it are cleared.
//! - A hairline bitmap strip read as nothing is read again a pixel bolder.
//! - Centred wrapped lines are joined into one name; a word broken where the names' column ends is
//!   joined without a space.
//! - Underscores are found in the strip itself, a lone brace by its shape; shortcut slips are
//!   undone.
//! - In a monospace line one cell read as two characters is kept once, zeros read as "@" are
//!   undone, curly quotes are straightened, and a space stands only where a whole cell is blank.
//!
//! Each rule can be turned off for a measurement (`rules`); rules that `voxdesk bench eyes` found
//! not to pay for themselves on the corpus and the real apps have been deleted (issue 35).
//! - `read_line`: a changed region read as one line, for verification.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use image::{imageops, GrayImage};

use super::consensus::{self, Shape};
use super::engine::{EngineError, EnginePool, Glyph, RawWord};
use super::label::Label;
use super::lines::LineBox;
use super::mono::{self, Piece};
use super::rules::on as rule;
use voxdesk_core::geometry::Rect;

/// Text is scaled so that its median glyph height (≈ x-height) becomes about this many pixels.
/// Tesseract's LSTM reads 10–11 px UI labels badly at native size (first letters go missing).
const TARGET_TEXT_H: f64 = 16.0;
const MAX_UPSCALE: f64 = 4.0;
/// White margin around each strip, in strip pixels. Tesseract reads a strip as one line scaled
/// to a fixed height, so its cost grows with width ÷ height (measured: 400x50 blank 9.7 ms,
/// 400x100 5.7 ms): margins are cheap above and below, costly left and right.
const STRIP_BORDER_X: u32 = 4;
const STRIP_BORDER_Y: u32 = 10;
/// Words further apart than this many word heights are separate labels.
const WORD_GAP: f64 = 0.9;
/// Confidence of a glyph identified from the arrangement of its strokes (see `lines::LineBox::glyph`):
/// as sure as a clear Tesseract word, since the arrangement admits one reading only.
const SHAPE_CONF: f32 = 0.9;
/// A word at least this sure (0–100) that still makes no label gets a hairline strip read again.
const RETRY_MIN_CONF: f32 = 50.0;
/// Words Tesseract itself doubts this much are dropped (0–100).
const MIN_WORD_CONF: f32 = 25.0;
/// The confidence (0–100) of a doubted word read again by its glyphs' twins (`agree`).
const TWINS_CONF: f32 = 80.0;
/// Characters all at least this sure make a word, whatever Tesseract scores the word.
const SURE_GLYPH_CONF: f32 = 95.0;
/// On a monospace line, one character of such a word may be this sure (0–100).
const MONO_DOUBT_CONF: f32 = 85.0;

/// One normalised crop, ready to stack.
pub struct Strip {
    pub gray: GrayImage,
    /// The same crop with every stroke a pixel bolder (unsmoothed text only), read when `gray`
    /// gives a definite glyph but no label.
    pub bolder: Option<GrayImage>,
    /// Capture-pixel origin of the crop and the factor it was scaled by.
    pub origin: (i32, i32),
    pub scale: f64,
    /// White margin added around the scaled crop (x, y), in strip pixels.
    pub border: (u32, u32),
    /// A monospace line (`LineBox::mono`): its words are one label however wide its spaces.
    pub mono: bool,
    /// Where an outline drawn round some of the text was cleared: its two ends, in capture
    /// pixels. Words on either side of one are two labels (two pill buttons in a row).
    pub fences: Vec<i32>,
    key: u64,
}

/// Crop `line` out of the frame (with a little background around it) and normalise it.
pub fn make_strip(rgba: &[u8], width: u32, height: u32, line: &LineBox) -> Strip {
    let frame = Rect::new(0, 0, width as i32, height as i32);
    let tight = line.rect.intersection(&frame);
    // Pixels further than this from the label's letters belong to something else (a chip's
    // rounded end, the next button's border) and are painted background.
    let keep = tight.expand_within((line.text_h * 2 / 5).max(1), &frame);
    let pad = (line.text_h / 2).clamp(2, 10);
    let crop = tight.expand_within(pad, &frame);
    let keep = keep.intersection(&crop);
    let (cw, ch) = (crop.w as usize, crop.h as usize);
    let px = |x: i32, y: i32| -> [u8; 3] {
        let i = (y as usize * width as usize + x as usize) * 4;
        [rgba[i], rgba[i + 1], rgba[i + 2]]
    };
    // Background: the most common colour behind the letters (quantised). Text covers a
    // minority of its own box, so on a chip or a button the fill wins.
    let inside = colours(|f| {
        for y in tight.y..tight.bottom() {
            for x in tight.x..tight.right() {
                f(px(x, y));
            }
        }
    });
    // Bold light letters on a fill (initials in a circle at scale 2) can outnumber the fill in
    // their own box: a colour that surrounds the box almost alone and fills a quarter of it is
    // the background.
    let around = colours(|f| {
        for y in crop.y..crop.bottom() {
            for x in crop.x..crop.right() {
                if !(x >= tight.x && x < tight.right() && y >= tight.y && y < tight.bottom()) {
                    f(px(x, y));
                }
            }
        }
    });
    let surrounds = around
        .top
        .filter(|_| rule("surround-bg"))
        .filter(|(q, n, _)| {
            let within = inside.hist.get(q).map_or(0, |v| v.0);
            inside.top.is_some_and(|t| t.0 != *q)
                && n * 10 >= around.total * 9
                && within * 4 >= inside.total
        });
    let (n, sum) = surrounds
        .or(inside.top)
        .map(|(_, n, sum)| (n, sum))
        .unwrap_or((1, [255; 3]));
    let bg: Vec<i32> = sum.iter().map(|s| (s / n.max(1)) as i32).collect();
    // Ink = distance from the background colour, stretched so the strongest strokes are black.
    let mut dist = vec![0u8; cw * ch];
    for y in keep.y..keep.bottom() {
        for x in keep.x..keep.right() {
            let c = px(x, y);
            let d = (0..3)
                .map(|k| (c[k] as i32 - bg[k]).abs())
                .max()
                .unwrap_or(0) as u8;
            dist[(y - crop.y) as usize * cw + (x - crop.x) as usize] = d;
        }
    }
    // What surrounds a chip or button (the page around its rounded ends) is not ink: clear
    // everything that has the crop's outer colour and is connected to the crop's edge.
    let (kx, ky) = ((keep.x - crop.x) as usize, (keep.y - crop.y) as usize);
    if rule("surroundings") {
        clear_surroundings(
            &mut dist,
            cw,
            (kx, ky, keep.w as usize, keep.h as usize),
            |x, y| px(crop.x + x as i32, crop.y + y as i32),
        );
    }
    if rule("rules-blocks") {
        clear_rules_and_blocks(
            &mut dist,
            cw,
            (kx, ky, keep.w as usize, keep.h as usize),
            line.text_h,
        );
    }
    // The line's own box, in the crop.
    let inner = (
        (tight.x - crop.x) as usize,
        (tight.y - crop.y) as usize,
        tight.w as usize,
        tight.h as usize,
    );
    // A field's frame around the line is ink too. A caret made the box as tall as the line;
    // without it, what lies further above or below the letters than `keep` allows is the
    // field's frame, and its sides are rules through the rows left ("[" read before the word).
    let caret = if rule("glued-caret") {
        clear_glued_caret(&mut dist, cw, inner)
    } else {
        None
    };
    if let Some((top, bottom)) = caret {
        let m = (line.text_h * 2 / 5).max(1) as usize;
        let (from, to) = (top.saturating_sub(m), (bottom + m).min(ch - 1));
        for (y, row) in dist.chunks_exact_mut(cw).enumerate() {
            if y < from || y > to {
                row.fill(0);
            }
        }
        clear_rules_and_blocks(
            &mut dist,
            cw,
            (kx, from, keep.w as usize, to - from + 1),
            line.text_h,
        );
    }
    if rule("corners") {
        clear_corners(&mut dist, cw, inner, line.text_h);
    }
    let outlines = if rule("outlines") {
        clear_outlines(&mut dist, cw, line.text_h)
    } else {
        Vec::new()
    };
    let mut hist = [0u32; 256];
    for &d in &dist {
        hist[d as usize] += 1;
    }
    // The 99th percentile of ink among pixels that are ink at all sets full black.
    let inked: u32 = hist[16..].iter().sum();
    let mut top = 255u32;
    let mut acc = 0u32;
    for d in (16..256).rev() {
        acc += hist[d];
        if acc * 100 >= inked.max(1) {
            top = d as u32;
            break;
        }
    }
    let top = top.max(48);
    let bitmap = is_bitmap_text(&hist, top);
    let scale = (TARGET_TEXT_H / line.text_h.max(1) as f64).clamp(1.0, MAX_UPSCALE);
    let (bx, by) = (STRIP_BORDER_X, STRIP_BORDER_Y);
    let darken = line.mono && rule("mono-darken");
    let render = |dist: &[u8]| {
        let gray = GrayImage::from_fn(cw as u32, ch as u32, |x, y| {
            let d = dist[y as usize * cw + x as usize] as u32;
            let v = (d * 255 / top).min(255);
            // Monospace code and terminal text has one-pixel strokes that anti-aliasing leaves
            // half grey (an underscore, the dot of a ":"), which Tesseract drops: darken them.
            // (Not the background's own grain: a fill a level or two off its quantised mean
            // would turn grey, and its edge against the white margin read as a stroke.)
            let v = if darken && v >= 5 {
                ((v as f64 / 255.0).sqrt() * 255.0) as u32
            } else if darken {
                0
            } else {
                v
            };
            image::Luma([255 - v as u8])
        });
        let gray = if scale > 1.01 {
            let up = imageops::resize(
                &gray,
                (cw as f64 * scale).round() as u32,
                (ch as f64 * scale).round() as u32,
                imageops::FilterType::Triangle,
            );
            if bitmap && rule("bitmap-blur") {
                // An old bitmap font (xcalc, xterm's "fixed") upscaled stays blocky, and
                // Tesseract, trained on smooth type, misreads it ("7" as "?", "e" as "=").
                // Soften it into the anti-aliased shapes it knows.
                imageops::blur(&up, (BITMAP_BLUR * scale) as f32)
            } else {
                up
            }
        } else {
            gray
        };
        // Tesseract misses letters that touch the image edge: give every strip a white margin.
        let mut framed = GrayImage::from_pixel(
            gray.width() + 2 * bx,
            gray.height() + 2 * by,
            image::Luma([255]),
        );
        imageops::replace(&mut framed, &gray, bx as i64, by as i64);
        framed
    };
    let framed = render(&dist);
    // Unsmoothed hairlines (an outline font such as URW Gothic rendered without anti-aliasing:
    // xcalc's fallback when its `8x13` is missing) come out of the softening light grey, and
    // Tesseract reads a lone "1" as "]". An unsmoothed strip that reads as no label is read once
    // more with its strokes a pixel bolder (see `read_strips`).
    let bolder = (bitmap && rule("bolder")).then(|| {
        let mut bold = dist.clone();
        thicken_right(&mut bold, cw);
        render(&bold)
    });
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (framed.width(), framed.height()).hash(&mut h);
    framed.as_raw().hash(&mut h);
    Strip {
        key: h.finish(),
        gray: framed,
        bolder,
        origin: (crop.x, crop.y),
        scale,
        border: (bx, by),
        mono: line.mono,
        fences: outlines
            .iter()
            .flat_map(|&(a, b)| [a, b])
            .map(|x| crop.x + x as i32)
            .collect(),
    }
}

/// Colours counted quantised to 5 bits a channel, with each bin's pixel sum.
struct Colours {
    hist: HashMap<u16, (u32, [u32; 3])>,
    total: u32,
    /// The most common bin, its count and its pixels' sum.
    top: Option<(u16, u32, [u32; 3])>,
}

/// A colour's bin: 5 bits a channel.
fn quantised(c: [u8; 3]) -> u16 {
    ((c[0] as u16 >> 3) << 10) | ((c[1] as u16 >> 3) << 5) | (c[2] as u16 >> 3)
}

/// Count the colours `each` hands over.
fn colours(each: impl FnOnce(&mut dyn FnMut([u8; 3]))) -> Colours {
    let mut hist: HashMap<u16, (u32, [u32; 3])> = HashMap::new();
    let mut total = 0;
    each(&mut |c: [u8; 3]| {
        let e = hist.entry(quantised(c)).or_insert((0, [0; 3]));
        e.0 += 1;
        total += 1;
        for (sum, v) in e.1.iter_mut().zip(c) {
            *sum += v as u32;
        }
    });
    let top = hist
        .iter()
        .max_by_key(|(q, v)| (v.0, **q))
        .map(|(q, v)| (*q, v.0, v.1));
    Colours { hist, total, top }
}

/// Ink that lies wholly beside the letters' box and wholly above or below it is no letter's:
/// the rounded corners of a badge around a lone "7" (Tesseract reads the four specks and the
/// digit as "a."). `tight` is the letters' box (x, y, w, h) in the crop.
fn clear_corners(dist: &mut [u8], cw: usize, tight: (usize, usize, usize, usize), text_h: i32) {
    // Specks only, no flat stroke half a letter wide: an underscore that ends a wrapped name
    // lies beside and below its letters too.
    let speck = text_h.max(4) / 2;
    let ch = dist.len() / cw.max(1);
    let (tx0, ty0, tx1, ty1) = (
        tight.0 as i32,
        tight.1 as i32,
        (tight.0 + tight.2) as i32,
        (tight.1 + tight.3) as i32,
    );
    let (label, boxes) = components(cw, ch, |i| dist[i] >= 40);
    let cleared: Vec<bool> = boxes
        .iter()
        .enumerate()
        .map(|(id, &(x0, y0, x1, y1))| {
            let (x1, y1) = (x1 + 1, y1 + 1);
            // (A corner's arc may reach a pixel into the letters' columns.)
            let beside = x1 <= tx0 + 1 || x0 + 1 >= tx1;
            let over_or_under = y1 <= ty0 || y0 >= ty1;
            let (w, h) = (x1 - x0, y1 - y0);
            let underscore = w >= speck && w >= 3 * h;
            id > 0 && beside && over_or_under && w <= speck && h <= speck && !underscore
        })
        .collect();
    for (d, &id) in dist.iter_mut().zip(&label) {
        if cleared[id as usize] {
            *d = 0;
        }
    }
}

/// A component's box: x0, y0, x1, y1, edges included.
type InkBox = (i32, i32, i32, i32);

/// The 8-connected components of the pixels of a `w`×`h` grid that `ink(index)` picks: each
/// pixel's component (0 for none; components count from 1) and each component's box (box 0
/// stands for none).
fn components(w: usize, h: usize, ink: impl Fn(usize) -> bool) -> (Vec<u32>, Vec<InkBox>) {
    const EIGHT: [(i32, i32); 8] = [
        (-1, -1),
        (0, -1),
        (1, -1),
        (-1, 0),
        (1, 0),
        (-1, 1),
        (0, 1),
        (1, 1),
    ];
    connected(w, h, ink, &EIGHT)
}

/// The components of the picked pixels, joined across `neighbours` (8 for ink; 4 for the
/// background between 8-connected ink, its complement).
fn connected(
    w: usize,
    h: usize,
    ink: impl Fn(usize) -> bool,
    neighbours: &[(i32, i32)],
) -> (Vec<u32>, Vec<InkBox>) {
    let mut label = vec![0u32; w * h];
    let mut boxes: Vec<InkBox> = vec![(0, 0, 0, 0)];
    let mut stack = Vec::new();
    for start in 0..w * h {
        if label[start] != 0 || !ink(start) {
            continue;
        }
        let id = boxes.len() as u32;
        let (sx, sy) = ((start % w) as i32, (start / w) as i32);
        let mut b = (sx, sy, sx, sy);
        label[start] = id;
        stack.push((sx, sy));
        while let Some((x, y)) = stack.pop() {
            b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
            for &(dx, dy) in neighbours {
                let (nx, ny) = (x + dx, y + dy);
                if nx >= 0 && ny >= 0 && nx < w as i32 && ny < h as i32 {
                    let k = ny as usize * w + nx as usize;
                    if label[k] == 0 && ink(k) {
                        label[k] = id;
                        stack.push((nx, ny));
                    }
                }
            }
        }
        boxes.push(b);
    }
    (label, boxes)
}

/// Does a rule (a pane border, a separator) stand in `r`: a column of it whose pixels nearly all
/// differ from the most common colour of `r`?
fn ruled(rgba: &[u8], width: u32, height: u32, r: &Rect) -> bool {
    let r = r.intersection(&Rect::new(0, 0, width as i32, height as i32));
    if r.w <= 0 || r.h <= 0 {
        return false;
    }
    let bg = background(rgba, width, height, &r);
    (r.x..r.right()).any(|x| {
        let far = (r.y..r.bottom())
            .filter(|&y| {
                let i = (y as usize * width as usize + x as usize) * 4;
                (0..3).any(|k| rgba[i + k].abs_diff(bg[k]) > 40)
            })
            .count() as i32;
        far * 10 >= r.h * 9
    })
}

/// The most common colour (quantised to 5 bits a channel) in `r`: the fill behind a label.
fn background(rgba: &[u8], width: u32, height: u32, r: &Rect) -> [u8; 3] {
    let r = r.intersection(&Rect::new(0, 0, width as i32, height as i32));
    let mut hist: HashMap<u16, (u32, [u8; 3])> = HashMap::new();
    for y in (r.y..r.bottom()).step_by(2) {
        for x in (r.x..r.right()).step_by(2) {
            let i = (y as usize * width as usize + x as usize) * 4;
            let c = [rgba[i], rgba[i + 1], rgba[i + 2]];
            let q = ((c[0] as u16 >> 3) << 10) | ((c[1] as u16 >> 3) << 5) | (c[2] as u16 >> 3);
            hist.entry(q).or_insert((0, c)).0 += 1;
        }
    }
    hist.into_iter()
        .max_by_key(|(q, v)| (v.0, *q))
        .map_or([255; 3], |(_, v)| v.1)
}

/// Blur, in multiples of the upscale factor, that turns an upscaled bitmap font smooth.
const BITMAP_BLUR: f64 = 0.3;

/// Is the ink in this crop unsmoothed (a bitmap font: pixels are background or full ink, with
/// almost nothing in between)? `hist` is the histogram of distances from the background.
fn is_bitmap_text(hist: &[u32; 256], top: u32) -> bool {
    let top = top as usize;
    let ink: u32 = hist[(top * 4 / 5).min(255)..].iter().sum();
    let between: u32 = hist[(top / 5).max(16)..(top * 4 / 5).min(255)].iter().sum();
    ink >= 8 && between * 10 < ink
}

/// Widen every stroke by one pixel to its right, so that hairlines come closer to the weight of
/// the text Tesseract was trained on; the gap between two bars (an "=") stays as it is.
fn thicken_right(dist: &mut [u8], stride: usize) {
    for row in dist.chunks_exact_mut(stride) {
        for x in (1..row.len()).rev() {
            row[x] = row[x].max(row[x - 1]);
        }
    }
}

/// Ink that is no letter, cleared from a crop's `region`: a vertical rule running through the
/// whole region (a window's edge beside a terminal line: letters never reach 40 % of a text
/// height above and below the line) and a solid block the size of a character cell after the
/// last letter (a terminal's block cursor, which Tesseract reads as a letter and spoils the word
/// beside it). A thin bar (a text caret, "l", "|") is left alone: it is too narrow to be a block.
fn clear_rules_and_blocks(
    dist: &mut [u8],
    stride: usize,
    region: (usize, usize, usize, usize),
    text_h: i32,
) {
    const INK: u8 = 48;
    let (x0, y0, w, h) = region;
    if w < 3 || h < 3 {
        return;
    }
    let inked = |dist: &[u8], x: usize, y: usize| dist[y * stride + x] >= INK;
    // The vertical span of ink in each column, when it is one solid run.
    let span = |dist: &[u8], x: usize| -> Option<(usize, usize)> {
        let (mut first, mut last, mut n) = (None, 0, 0);
        for y in (y0..y0 + h).filter(|&y| inked(dist, x, y)) {
            first.get_or_insert(y);
            last = y;
            n += 1;
        }
        let a = first?;
        (n == last - a + 1).then_some((a, last))
    };
    for x in x0..x0 + w {
        if span(dist, x) == Some((y0, y0 + h - 1)) {
            for y in y0..y0 + h {
                dist[y * stride + x] = 0;
            }
        }
    }
    // The block cursor sits after the last letter: only the rightmost ink is looked at.
    let min_h = (text_h.max(1) as usize * 3).div_ceil(5);
    let Some(last) = (x0..x0 + w)
        .rev()
        .find(|&x| (y0..y0 + h).any(|y| inked(dist, x, y)))
    else {
        return;
    };
    let Some((a, b)) = span(dist, last).filter(|(a, b)| b - a + 1 >= min_h) else {
        return;
    };
    let mut first = last;
    while first > x0
        && span(dist, first - 1).is_some_and(|(c, d)| c.abs_diff(a) <= 1 && d.abs_diff(b) <= 1)
    {
        first -= 1;
    }
    let width = last - first + 1;
    if width >= 3 && width * 20 >= (b - a + 1) * 7 {
        for cx in first..=last {
            for y in y0..y0 + h {
                dist[y * stride + cx] = 0;
            }
        }
    }
}

/// A drawn outline around the text (an Xaw pill button, a box drawn round a word), cleared from
/// a crop: one connected stroke wider than two letters and taller than the letters, whose top
/// and bottom rows each run along most of its width. Letters never are (an underline glued to
/// descenders has a long bottom but no top), and Tesseract reads an outline as "(", "[" or
/// nothing at all ("(Accept)(Decline)" was read as no text). A dense block far taller than
/// the letters beside them goes too.
/// Returns each outline's columns (first, last), in the crop.
fn clear_outlines(dist: &mut [u8], stride: usize, text_h: i32) -> Vec<(usize, usize)> {
    const INK: u8 = 48;
    let mut cleared = Vec::new();
    let h = dist.len() / stride.max(1);
    let text_h = text_h.max(1) as usize;
    let mut seen = vec![false; dist.len()];
    let mut stack = Vec::new();
    let mut pixels = Vec::new();
    for start in 0..dist.len() {
        if seen[start] || dist[start] < INK {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        pixels.clear();
        while let Some(i) = stack.pop() {
            pixels.push(i);
            let (x, y) = (i % stride, i / stride);
            for dy in -1i32..=1 {
                for dx in -1i32..=1 {
                    let (nx, ny) = (x as i32 + dx, y as i32 + dy);
                    if nx < 0 || ny < 0 || nx as usize >= stride || ny as usize >= h {
                        continue;
                    }
                    let j = ny as usize * stride + nx as usize;
                    if !seen[j] && dist[j] >= INK {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        let (mut x0, mut x1, mut y0, mut y1) = (usize::MAX, 0, usize::MAX, 0);
        for &i in &pixels {
            let (x, y) = (i % stride, i / stride);
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
        let (w, bh) = (x1 - x0 + 1, y1 - y0 + 1);
        // A solid or stippled block more than twice as tall as the letters and at least half
        // a letter wide (a scroll bar's thumb, an icon beside the text) is no glyph either.
        if bh * 5 >= text_h * 11 && w * 2 >= text_h && pixels.len() * 20 >= w * bh * 7 {
            for &i in &pixels {
                dist[i] = 0;
            }
            continue;
        }
        if w < 2 * text_h || bh * 5 < text_h * 7 {
            continue;
        }
        // How much of the width the top (bottom) two rows cover.
        let cover = |rows: std::ops::RangeInclusive<usize>| {
            let mut cols = vec![false; w];
            for &i in &pixels {
                if rows.contains(&(i / stride)) {
                    cols[i % stride - x0] = true;
                }
            }
            cols.iter().filter(|c| **c).count()
        };
        if cover(y0..=y0 + 1) * 2 >= w && cover(y1 - 1..=y1) * 2 >= w {
            for &i in &pixels {
                dist[i] = 0;
            }
            cleared.push((x0, x1));
        }
    }
    cleared
}

/// A text caret glued to the last letter (a GTK field's "a.txt|": Tesseract reads "[ao"),
/// cleared from a crop's `region`: the rightmost ink, one or two pixels wide, one solid bar that
/// starts above the strokes of the letters before it and ends at least two pixels below them
/// all (a caret is as tall as the line, ascent and descent), within a pixel of the last letter.
/// A final "l" ends on the baseline with the other letters; a "|" after a space is not glued.
fn clear_glued_caret(
    dist: &mut [u8],
    stride: usize,
    region: (usize, usize, usize, usize),
) -> Option<(usize, usize)> {
    const INK: u8 = 48;
    let (x0, y0, w, h) = region;
    if w < 4 || h < 3 {
        return None;
    }
    let inked = |dist: &[u8], x: usize, y: usize| dist[y * stride + x] >= INK;
    // The vertical extent of a column's ink, and whether it is one solid run.
    let extent = |dist: &[u8], x: usize| -> Option<(usize, usize, bool)> {
        let ys: Vec<usize> = (y0..y0 + h).filter(|&y| inked(dist, x, y)).collect();
        let (a, b) = (*ys.first()?, *ys.last()?);
        Some((a, b, ys.len() == b - a + 1))
    };
    let last = (x0..x0 + w).rev().find(|&x| extent(dist, x).is_some())?;
    let Some((a, b, true)) = extent(dist, last) else {
        return None;
    };
    let mut first = last;
    while first > x0 && extent(dist, first - 1) == Some((a, b, true)) {
        first -= 1;
    }
    if last - first + 1 > 2 || first < x0 + 2 {
        return None;
    }
    // Glued: ink in one of the two columns before the bar.
    if extent(dist, first - 1).is_none() && extent(dist, first - 2).is_none() {
        return None;
    }
    // Taller than the letters just before it (not a field's border at the line's start).
    let from = first.saturating_sub(b - a + 1).max(x0);
    let (top, bottom) = (from..first)
        .filter_map(|x| extent(dist, x))
        .fold((usize::MAX, 0), |(t, bo), (c, d, _)| (t.min(c), bo.max(d)));
    if top == usize::MAX || a >= top || b < bottom + 2 {
        return None;
    }
    for x in first..=last {
        for y in y0..y0 + h {
            dist[y * stride + x] = 0;
        }
    }
    Some((top, bottom))
}

/// Flood from the crop's edge over pixels of the edge's dominant colour (when that is not the
/// label's background) and mark them as no ink.
fn clear_surroundings(
    dist: &mut [u8],
    stride: usize,
    region: (usize, usize, usize, usize),
    px: impl Fn(usize, usize) -> [u8; 3],
) {
    let (x0, y0, w, h) = region;
    if w < 3 || h < 3 {
        return;
    }
    let (x1, y1) = (x0 + w - 1, y0 + h - 1);
    let ring: Vec<(usize, usize)> = (x0..=x1)
        .flat_map(|x| [(x, y0), (x, y1)])
        .chain((y0 + 1..y1).flat_map(|y| [(x0, y), (x1, y)]))
        .collect();
    // Only when the region's edge is largely ink (i.e. not the label's background) is there a
    // surrounding to clear.
    let inked: Vec<&(usize, usize)> = ring
        .iter()
        .filter(|&&(x, y)| dist[y * stride + x] >= 48)
        .collect();
    if inked.len() * 5 < ring.len() {
        return;
    }
    let mut counts: HashMap<u16, (u32, [u8; 3])> = HashMap::new();
    for &&(x, y) in &inked {
        let c = px(x, y);
        counts.entry(quantised(c)).or_insert((0, c)).0 += 1;
    }
    let Some(&(_, outer)) = counts
        .iter()
        .max_by_key(|(q, v)| (v.0, **q))
        .map(|(_, v)| v)
    else {
        return;
    };
    let close = |c: [u8; 3]| (0..3).all(|k| c[k].abs_diff(outer[k]) < 40);
    let mut seen = vec![false; stride * (y1 + 1)];
    let mut stack: Vec<(usize, usize)> =
        ring.into_iter().filter(|&(x, y)| close(px(x, y))).collect();
    while let Some((x, y)) = stack.pop() {
        let i = y * stride + x;
        if seen[i] {
            continue;
        }
        seen[i] = true;
        if !close(px(x, y)) {
            continue;
        }
        dist[i] = 0;
        if x > x0 {
            stack.push((x - 1, y));
        }
        if x < x1 {
            stack.push((x + 1, y));
        }
        if y > y0 {
            stack.push((x, y - 1));
        }
        if y < y1 {
            stack.push((x, y + 1));
        }
    }
}

/// Words recognised per strip content, so a label whose pixels did not change is never read twice.
#[derive(Default)]
pub struct StripCache {
    map: HashMap<u64, Vec<RawWord>>,
    /// The shapes of a monospace strip's glyphs, in the order of its words (`agree`).
    shapes: HashMap<u64, Vec<(usize, usize, Shape)>>,
}

/// Bound on cached strips; past it the cache starts over (a screen has a few hundred labels).
const CACHE_CAP: usize = 8192;

impl StripCache {
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn clear(&mut self) {
        self.map.clear();
        self.shapes.clear();
    }
}

/// Recognise `lines` of a frame with the engines in `pool`, reusing `cache`. Returns the labels
/// and how many strips actually went to Tesseract.
pub fn recognise(
    rgba: &[u8],
    width: u32,
    height: u32,
    lines: &[LineBox],
    pool: &EnginePool,
    cache: &mut StripCache,
    debug_dir: Option<&std::path::Path>,
) -> Result<(Vec<Label>, usize), EngineError> {
    // Glyphs already identified from their shape need no OCR.
    let shaped = lines.iter().filter_map(|l| {
        l.glyph.map(|c| Label {
            text: c.to_string(),
            rect: l.rect,
            conf: SHAPE_CONF,
        })
    });
    let shaped: Vec<Label> = shaped.collect();
    let strips: Vec<Strip> = lines
        .iter()
        .filter(|l| l.glyph.is_none())
        .map(|l| make_strip(rgba, width, height, l))
        .collect();
    let todo: Vec<usize> = {
        let mut seen = std::collections::HashSet::new();
        (0..strips.len())
            .filter(|&i| !cache.map.contains_key(&strips[i].key) && seen.insert(strips[i].key))
            .collect()
    };
    // Balance the uncached strips over the workers by area, largest first.
    let n = pool.len().min(todo.len()).max(1);
    let mut order = todo.clone();
    order.sort_by_key(|&i| {
        std::cmp::Reverse(strips[i].gray.width() as u64 * strips[i].gray.height() as u64)
    });
    let mut groups: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); n];
    for i in order {
        let g = groups.iter_mut().min_by_key(|g| g.0).expect("n >= 1");
        g.0 += strips[i].gray.width() as u64 * strips[i].gray.height() as u64;
        g.1.push(i);
    }
    let results: Vec<WorkerResult> = std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.1.is_empty())
            .map(|(wi, g)| {
                let strips = &strips;
                s.spawn(move || {
                    pool.with(wi, |engine| read_strips(engine, strips, &g.1, debug_dir))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EngineError::Recognise("an OCR worker panicked".into()))
                })
            })
            .collect()
    });
    if cache.map.len() + todo.len() > CACHE_CAP {
        cache.clear();
    }
    for r in results {
        for (i, words) in r? {
            cache.map.insert(strips[i].key, words);
        }
    }
    let live: Vec<&LineBox> = lines.iter().filter(|l| l.glyph.is_none()).collect();
    let mut words: Vec<Vec<RawWord>> = strips
        .iter()
        .map(|s| cache.map.get(&s.key).cloned().unwrap_or_default())
        .collect();
    // A gap with a drawn rule in it, or an end of an outline cleared from a strip.
    let fences: Vec<(i32, i32, i32)> = strips
        .iter()
        .flat_map(|s| {
            let (y0, y1) = (
                s.origin.1,
                s.origin.1 + (s.gray.height() as f64 / s.scale) as i32,
            );
            s.fences.iter().map(move |&x| (x, y0, y1))
        })
        .collect();
    let ruled = |r: &Rect| {
        fences
            .iter()
            .any(|&(x, y0, y1)| x >= r.x && x < r.right() && y0 < r.bottom() && r.y < y1)
            || ruled(rgba, width, height, r)
    };
    let mut joined = mono::join(pieces_of(&strips, &words), ruled);
    if rule("consensus") && agree(&strips, &mut words, &live, &joined, &mut cache.shapes) {
        joined = mono::join(pieces_of(&strips, &words), ruled);
    }
    let mut labels = shaped;
    let mut lined = Vec::new();
    for (mut label, mono) in joined {
        if mono {
            if rule("mono-zeros") {
                label.text = mono_zeros(&label.text);
            }
            if rule("quotes") {
                label.text = ascii_quotes(&label.text);
            }
            lined.push(label);
        } else {
            labels.push(label);
        }
    }
    // Monospace lines are rows of a terminal or an editor, never a wrapped name.
    let mut labels = if rule("join-wrapped") {
        join_wrapped(labels, |r| background(rgba, width, height, r))
    } else {
        labels
    };
    labels.extend(lined);
    Ok((labels, todo.len()))
}

/// Each strip's words grouped into pieces.
fn pieces_of(strips: &[Strip], words: &[Vec<RawWord>]) -> Vec<Piece> {
    strips
        .iter()
        .zip(words)
        .flat_map(|(s, w)| words_to_labels(w, s))
        .collect()
}

/// Let the glyphs of the screen's monospace lines outvote a look-alike reading of their twins
/// (`consensus`). A strip is monospace if its line box sat on a grid or the join found it on
/// one. Returns whether any character changed.
fn agree(
    strips: &[Strip],
    words: &mut [Vec<RawWord>],
    lines: &[&LineBox],
    joined: &[(Label, bool)],
    cached: &mut HashMap<u64, Vec<(usize, usize, Shape)>>,
) -> bool {
    let mono_rects: Vec<Rect> = joined
        .iter()
        .filter(|(_, m)| *m)
        .map(|(l, _)| l.rect)
        .collect();
    let mut all = Vec::new();
    let mut at = Vec::new();
    let mut doubtful = Vec::new();
    for (si, s) in strips.iter().enumerate() {
        let c = lines[si].rect.centre();
        if !(s.mono || mono_rects.iter().any(|r| r.contains(c))) {
            continue;
        }
        let shapes = cached
            .entry(s.key)
            .or_insert_with(|| shapes_of(s, &words[si]));
        for &(wi, gi, sh) in shapes.iter() {
            if words[si][wi].conf >= MIN_WORD_CONF {
                all.push((sh, words[si][wi].glyphs[gi].ch));
                at.push((si, wi, gi));
            } else {
                doubtful.push((si, wi, gi, sh));
            }
        }
    }
    // Twice: a glyph's twins may themselves be misreadings the first round puts right (the
    // "1" of "x1" read "l" on every line outvotes the "1" of "[3, 1, 2]" until it is a "1").
    let read: Vec<char> = all.iter().map(|a| a.1).collect();
    for _ in 0..2 {
        let votes = consensus::vote(&all, &read);
        let mut k = 0;
        while k < at.len() {
            // One word's glyphs at a time: a vote must fit the word as voted.
            let (si, wi, _) = at[k];
            let end = k + at[k..]
                .iter()
                .take_while(|a| (a.0, a.1) == (si, wi))
                .count();
            let w = &mut words[si][wi];
            let voted: Vec<char> = (k..end).map(|j| votes[j].unwrap_or(read[j])).collect();
            for j in k..end {
                let gi = at[j].2;
                // Each round starts again from what Tesseract read.
                let c = match votes[j] {
                    Some(c) if consensus::fits_word(&voted, j - k, read[j]) => c,
                    _ => read[j],
                };
                if c == w.glyphs[gi].ch {
                    continue;
                }
                tracing::debug!(word = %w.text, from = %w.glyphs[gi].ch, to = %c, "twins outvoted a reading");
                w.glyphs[gi].ch = c;
                all[j].1 = c;
            }
            w.text = w.glyphs.iter().map(|g| g.ch).collect();
            k = end;
        }
    }
    let mut changed = all.iter().zip(&read).any(|(a, r)| a.1 != *r);
    // A word Tesseract doubted ("-rw-r--r--" alone read "-Tw-r--r--") is read by its glyphs'
    // twins when every one of them has twins that agree.
    let bank: Vec<(Shape, char)> = all
        .iter()
        .zip(&at)
        .map(|((sh, _), &(si, wi, gi))| (*sh, words[si][wi].glyphs[gi].ch))
        .collect();
    let mut k = 0;
    while k < doubtful.len() {
        let (si, wi, _, _) = doubtful[k];
        let end = k + doubtful[k..]
            .iter()
            .take_while(|d| (d.0, d.1) == (si, wi))
            .count();
        let w = &mut words[si][wi];
        let read: Option<Vec<char>> = doubtful[k..end]
            .iter()
            .map(|d| consensus::read_by_twins(&d.3, &bank))
            .collect();
        if let Some(read) = read.filter(|r| r.len() == w.glyphs.len()) {
            tracing::debug!(word = %w.text, "a doubted word read by its glyphs' twins");
            for (g, c) in w.glyphs.iter_mut().zip(read) {
                g.ch = c;
            }
            w.text = w.glyphs.iter().map(|g| g.ch).collect();
            w.conf = TWINS_CONF;
            changed = true;
        }
        k = end;
    }
    changed
}

/// The shape of each glyph of a strip's words, with its word's and its own index.
fn shapes_of(s: &Strip, words: &[RawWord]) -> Vec<(usize, usize, Shape)> {
    let bottoms = words
        .iter()
        .flat_map(|w| &w.glyphs)
        .filter(|c| on_baseline(c));
    let Some(base) = lowest_common(bottoms.map(|c| c.y1)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (wi, w) in words.iter().enumerate() {
        if w.text.chars().count() != w.glyphs.len() {
            continue;
        }
        for (gi, g) in w.glyphs.iter().enumerate() {
            if let Some(sh) = Shape::of(&s.gray, g, base, s.scale) {
                out.push((wi, gi, sh));
            }
        }
    }
    out
}

/// A letter or digit that sits on the baseline (no descender).
fn on_baseline(c: &Glyph) -> bool {
    c.ch.is_alphanumeric() && !"gjpqyQ".contains(c.ch)
}

/// The most common of `v`; of equally common ones the smallest (highest up on screen).
fn lowest_common(v: impl Iterator<Item = i32>) -> Option<i32> {
    let mut n: HashMap<i32, usize> = HashMap::new();
    for b in v {
        *n.entry(b).or_default() += 1;
    }
    n.into_iter().max_by_key(|(b, k)| (*k, -*b)).map(|(b, _)| b)
}

/// A terminal or an editor draws the quotes typed, straight ones: Tesseract reads a "'" as a
/// curly one (and then takes one at a word's start for a border).
fn ascii_quotes(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '‘' | '’' => '\'',
            '“' | '”' => '"',
            c => c,
        })
        .collect()
}

/// In a monospace line (code, a terminal), a dotted or slashed zero is read as "@" or "O": after a letter or digit and before anything but one ("x0:", "self.y0 }"),
/// neither makes sense there. An address ("ada@host") or a word ("IO", "ZOOM") is left alone.
fn mono_zeros(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    (0..c.len())
        .map(|i| {
            let after = i > 0 && (c[i - 1].is_ascii_lowercase() || c[i - 1].is_ascii_digit());
            let before = c.get(i + 1).is_none_or(|n| !n.is_alphanumeric());
            if matches!(c[i], '@' | 'O') && after && before {
                '0'
            } else {
                c[i]
            }
        })
        .collect()
}

/// A wrapped name (an icon's file name under the icon) is drawn as lines centred on one axis,
/// set closer than a line height apart and of different widths: join them into one label, as
/// the name is one thing to click. Lines of one width on one axis are left-aligned rows (table
/// cells, log lines), not a wrap, unless the upper one ends where a name breaks ("-", "_",
/// "/"); and a line on another fill (a badge under a time) is another widget. A line broken
/// after "-", "_", "." or "/" joins without a space.
fn join_wrapped(mut labels: Vec<Label>, bg: impl Fn(&Rect) -> [u8; 3]) -> Vec<Label> {
    // A line that ends in a break character was broken there: it goes on below, whatever the
    // widths.
    let broken = |t: &str| t.ends_with(['-', '_', '/']);
    labels.sort_by_key(|l| (l.rect.y, l.rect.x));
    let mut used = vec![false; labels.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..labels.len() {
        if used[i] {
            continue;
        }
        used[i] = true;
        let mut group = vec![i];
        let mut last = labels[i].rect;
        let axis = 2 * last.x + last.w;
        loop {
            let below = (i + 1..labels.len()).find(|&j| {
                let r = labels[j].rect;
                !used[j]
                    // Below the line's middle (word boxes overlap a little), within a line
                    // height of it.
                    && r.y * 2 >= 2 * last.y + last.h
                    && (r.y - last.bottom()) * 5 <= last.h * 4
                    && ((2 * r.x + r.w) - axis).abs() <= 6.max(last.h / 2)
                    && (((r.w - last.w).abs() >= 3
                        // Lines that start (or end) within two pixels of the same x are rows
                        // aligned to that side (a first letter's ink starts a pixel or two off
                        // the column's edge: "bjorn" over "jonas"), however close their
                        // middles: a centred wrap moves both ends.
                        && (r.x - last.x).abs() > 2
                        && (r.right() - last.right()).abs() > 2)
                        || broken(&labels[group[group.len() - 1]].text))
                    && (r.h - last.h).abs() * 2 <= r.h.max(last.h)
            });
            let Some(j) = below else { break };
            let (a, b) = (bg(&last), bg(&labels[j].rect));
            if (0..3).any(|k| a[k].abs_diff(b[k]) > 40) {
                break;
            }
            used[j] = true;
            group.push(j);
            last = labels[j].rect;
        }
        groups.push(group);
    }
    // The names' column: as wide as the widest line that has a line below it, of about that
    // line's height (a grid of icons wraps all its names at one width).
    let column = |h: i32| {
        groups
            .iter()
            .flat_map(|g| &g[..g.len() - 1])
            .map(|&k| labels[k].rect)
            .filter(|r| (r.h - h).abs() * 4 <= h.max(r.h))
            .map(|r| r.w)
            .max()
            .unwrap_or(0)
    };
    let mut out = Vec::with_capacity(groups.len());
    for g in &groups {
        let mut joined = labels[g[0]].clone();
        for w in g.windows(2) {
            let (up, down) = (&labels[w[0]], &labels[w[1]]);
            // After a break character, or a word too long for the column broken where the
            // column ends ("data_export_fina" over "l.zip"): no space.
            let full = !up.text.contains(' ') && up.rect.w + up.rect.h / 3 >= column(up.rect.h);
            let glue = if up.text.ends_with(['-', '_', '.', '/']) || full {
                ""
            } else {
                " "
            };
            joined.text = format!("{}{glue}{}", joined.text, down.text);
            joined.rect = joined.rect.union(&down.rect);
            joined.conf = joined.conf.min(down.conf);
        }
        out.push(joined);
    }
    out
}

/// What one worker read: each strip's index and its words.
type WorkerResult = Result<Vec<(usize, Vec<RawWord>)>, EngineError>;

static DUMP_SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Read each strip on its own as a single text line (psm 7: no page layout analysis). Measured
/// against stacking strips into one image (psm 6) and side by side in rows: no faster, and rows
/// lost 7 points of recall.
fn read_strips(
    engine: &mut super::engine::Engine,
    strips: &[Strip],
    idx: &[usize],
    debug_dir: Option<&std::path::Path>,
) -> Result<Vec<(usize, Vec<RawWord>)>, EngineError> {
    let mut out = Vec::with_capacity(idx.len());
    for &i in idx {
        let g = &strips[i].gray;
        if let Some(dir) = debug_dir {
            // Developer aid (`perception.debug_dir`): the exact image Tesseract reads.
            let n = DUMP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = g.save(dir.join(format!(
                "strip-{n:04}-{}-{}{}.png",
                strips[i].origin.0,
                strips[i].origin.1,
                if strips[i].mono { "-mono" } else { "" }
            )));
        }
        let mut words = engine.read_gray(g.as_raw(), g.width(), g.height())?;
        if let Some(b) = &strips[i].bolder {
            // Tesseract saw a definite glyph that makes no label (a hairline "1" read as "]"):
            // read the bolder strokes. A strip it saw nothing in (an icon) is left alone.
            let definite = words.iter().any(|w| w.conf >= RETRY_MIN_CONF);
            if definite && words_to_labels(&words, &strips[i]).is_empty() {
                if let Some(dir) = debug_dir {
                    let (x, y) = strips[i].origin;
                    let _ = b.save(dir.join(format!("bolder-{x}-{y}.png")));
                }
                words = engine.read_gray(b.as_raw(), b.width(), b.height())?;
            }
        }
        // One cell read as two characters is undone before words are judged by their
        // characters' confidences.
        let pitch = strips[i].mono.then(|| strip_pitch(&words)).flatten();
        if let Some(p) = pitch.filter(|_| rule("drop-doubled")) {
            words.iter_mut().for_each(|w| drop_doubled(w, p));
        }
        for w in &mut words {
            // Tesseract can score a word 0 whose every character it is sure of (the halves of
            // "voxdesk_core::geometry::" split at "::"): the characters' word is taken. On a
            // monospace line one character may be less sure ("build-01$" scored 20 for a
            // dotted zero at 89): no dictionary word is expected there.
            let mut confs: Vec<f32> = w.glyphs.iter().map(|g| g.conf).collect();
            confs.sort_by(f32::total_cmp);
            let sure = match confs[..] {
                [] => 0.0,
                [least, next, ..] if strips[i].mono && least >= MONO_DOUBT_CONF => next,
                [least, ..] => least,
            };
            if w.conf < MIN_WORD_CONF && sure >= SURE_GLYPH_CONF && rule("sure-glyph") {
                w.conf = confs[0].max(MIN_WORD_CONF);
            }
        }
        if let [w] = &mut words[..] {
            // A brace alone on its line (a block's end at column 0) is read as "+" without the
            // code around it.
            if matches!(w.text.as_str(), "+" | "{" | "}") && rule("brace") {
                if let Some(c) = brace_shape(&strips[i].gray) {
                    w.text = c.to_string();
                    w.conf = w.conf.max(90.0);
                    for gl in &mut w.glyphs {
                        gl.ch = c;
                    }
                }
            }
        }
        // (The pitch again: reading once and the glued "|" change glyphs.)
        let pitch = strips[i].mono.then(|| strip_pitch(&words)).flatten();
        if let Some(p) = pitch.filter(|_| rule("split-spaces")) {
            words = split_at_spaces(words, &strips[i].gray, p);
        }
        out.push((i, words));
    }
    Ok(out)
}

/// The pitch of a monospace strip's characters: the median step between neighbouring
/// characters within words, when at least two steps and two in three show it (the strip is
/// already known to be monospace).
fn strip_pitch(words: &[RawWord]) -> Option<f64> {
    let mut steps: Vec<f64> = words
        .iter()
        .filter(|w| whole(w))
        .flat_map(|w| w.glyphs.windows(2).map(|p| centre(&p[1]) - centre(&p[0])))
        .collect();
    steps.sort_by(f64::total_cmp);
    let pitch = *steps.get(steps.len() / 2)?;
    let on = steps
        .iter()
        .filter(|&&v| (v - pitch).abs() <= 0.18 * pitch)
        .count();
    (on >= 2 && on * 3 >= steps.len() * 2).then_some(pitch)
}

/// A glyph's centre column.
fn centre(g: &Glyph) -> f64 {
    (g.x0 + g.x1) as f64 / 2.0
}

/// Does each of the word's non-space characters have its own glyph box?
fn whole(w: &RawWord) -> bool {
    w.text.chars().filter(|c| !c.is_whitespace()).count() == w.glyphs.len()
}

/// One cell of a monospace word read as two characters ("#[test]" read "#([test]", "v[" read
/// "vi[", "--verbose" read "--Vverbose"): a bracket and a bracket or thin letter, or one letter
/// twice, less than 0.6 pitch apart and together not much wider than a cell, are one character
/// when the word has more characters than cells. (Two other letters that close are a box
/// misplaced beside a real letter, and both stay.)
fn drop_doubled(w: &mut RawWord, pitch: f64) {
    if !whole(w) {
        return;
    }
    let bracket = |c: char| "()[]{}".contains(c);
    let thin = |c: char| bracket(c) || "il|!".contains(c);
    // Only where there are more characters than the word's cells: squeezed boxes beside one
    // another ("());" boxed in under four cells) are each a character.
    let span = |w: &RawWord| {
        let x0 = w.glyphs.iter().map(|g| g.x0).min().unwrap_or(0);
        let x1 = w.glyphs.iter().map(|g| g.x1).max().unwrap_or(0);
        ((x1 - x0) as f64 / pitch).round() as usize
    };
    let mut k = 1;
    while k < w.glyphs.len() && w.glyphs.len() > span(w) {
        let (a, b) = (&w.glyphs[k - 1], &w.glyphs[k]);
        let same = a.ch.is_alphabetic() && a.ch.to_lowercase().eq(b.ch.to_lowercase());
        // ("()" squeezed together is an empty call, both characters.)
        let pair = "([{".contains(a.ch) && ")]}".contains(b.ch);
        let doubled = ((bracket(a.ch) || bracket(b.ch)) && thin(a.ch) && thin(b.ch) && !pair
            || same)
            && centre(b) - centre(a) < 0.6 * pitch
            && ((b.x1.max(a.x1) - a.x0.min(b.x0)) as f64) <= 1.25 * pitch;
        if doubled {
            // One letter in two cases ("Vv", "lL"): the case of the letters around it, else
            // lower case, the case of most code and commands.
            let lower = if a.ch.is_lowercase() { k - 1 } else { k };
            let around = w.glyphs[..k - 1]
                .iter()
                .rev()
                .chain(&w.glyphs[k + 1..])
                .find(|g| g.ch.is_alphabetic())
                .map(|g| g.ch.is_lowercase());
            let less = if same && a.ch != b.ch {
                if around == Some(false) {
                    lower
                } else {
                    2 * k - 1 - lower
                }
            } else if a.conf < b.conf {
                k - 1
            } else {
                k
            };
            w.glyphs.remove(less);
            w.text = w.glyphs.iter().map(|g| g.ch).collect();
        } else {
            k += 1;
        }
    }
}

/// Split the words of a monospace strip where a space cell lies inside one ("-h /" read as
/// the one word "-h/"): two neighbouring characters whose centres are 1.6 pitches apart or more
/// have an empty cell between them, when the strip shows blank columns there (an underscore
/// Tesseract did not box is ink).
fn split_at_spaces(words: Vec<RawWord>, gray: &GrayImage, pitch: f64) -> Vec<RawWord> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let cuts: Vec<usize> = w
            .glyphs
            .windows(2)
            .enumerate()
            .filter(|(_, p)| {
                centre(&p[1]) - centre(&p[0]) >= 1.6 * pitch
                    && blank_run(gray, p[0].x1, p[1].x0, w.y, w.y + w.h) as f64 >= 0.6 * pitch
            })
            .map(|(k, _)| k + 1)
            .collect();
        if cuts.is_empty() || !whole(&w) {
            out.push(w);
            continue;
        }
        let mut from = 0;
        for to in cuts.into_iter().chain([w.glyphs.len()]) {
            let glyphs = w.glyphs[from..to].to_vec();
            let x0 = glyphs.iter().map(|g| g.x0).min().unwrap_or(w.x);
            let x1 = glyphs.iter().map(|g| g.x1).max().unwrap_or(w.x + w.w);
            out.push(RawWord {
                text: glyphs.iter().map(|g| g.ch).collect(),
                x: x0,
                y: w.y,
                w: x1 - x0,
                h: w.h,
                conf: w.conf,
                glyphs,
            });
            from = to;
        }
    }
    out
}

/// A lone "{" or "}" told by its shape: about twice as tall as wide, a stem with hooks at both
/// ends bent one way and a spike at its middle pointing the other. A "+" is as wide as tall.
fn brace_shape(gray: &GrayImage) -> Option<char> {
    let ink = |x: u32, y: u32| gray.get_pixel(x, y).0[0] < 160;
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    for (x, y, p) in gray.enumerate_pixels() {
        if p.0[0] < 160 {
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
        }
    }
    if x0 > x1 {
        return None;
    }
    let (w, h) = ((x1 - x0 + 1) as f64, (y1 - y0 + 1) as f64);
    if h < 1.6 * w || w < 3.0 {
        return None;
    }
    // Mean ink column of the rows between fractions `a` and `b` of the height.
    let centre = |a: f64, b: f64| {
        let (mut sum, mut n) = (0.0, 0.0);
        for y in (y0 as f64 + a * h) as u32..=(y0 as f64 + b * h).min(y1 as f64) as u32 {
            for x in x0..=x1 {
                if ink(x, y) {
                    sum += x as f64;
                    n += 1.0;
                }
            }
        }
        (n > 0.0).then(|| sum / n)
    };
    let stem = (centre(0.2, 0.35)? + centre(0.65, 0.8)?) / 2.0;
    let (top, mid, bottom) = (centre(0.0, 0.1)?, centre(0.42, 0.58)?, centre(0.9, 1.0)?);
    let d = 0.12 * w;
    if mid > stem + d && top < stem - d && bottom < stem - d {
        Some('}')
    } else if mid < stem - d && top > stem + d && bottom > stem + d {
        Some('{')
    } else {
        None
    }
}

/// Group one strip's words into labels (split at gaps wider than a word space) in capture
/// pixels, each with its characters' centres for the monospace join.
fn words_to_labels(words: &[RawWord], strip: &Strip) -> Vec<Piece> {
    let mut words: Vec<&RawWord> = words
        .iter()
        .filter(|w| w.conf >= MIN_WORD_CONF && w.w > 0 && w.h > 0)
        .collect();
    words.sort_by_key(|w| w.x);
    let mut groups: Vec<Vec<&RawWord>> = Vec::new();
    for w in words {
        let split = match groups.last().and_then(|g| g.last()) {
            None => true,
            Some(prev) => {
                let gap = w.x - (prev.x + prev.w);
                let wh = prev.h.max(w.h) as f64;
                let same_row = (w.y + w.h / 2 - (prev.y + prev.h / 2)).abs() < (wh * 0.6) as i32;
                let fenced = strip.fences.iter().any(|&f| {
                    let f = ((f - strip.origin.0) as f64 * strip.scale).round() as i32
                        + strip.border.0 as i32;
                    prev.x + prev.w <= f && f <= w.x
                });
                (gap as f64 > WORD_GAP * wh && !strip.mono) || !same_row || fenced
            }
        };
        if split {
            groups.push(vec![w]);
        } else if let Some(g) = groups.last_mut() {
            g.push(w);
        }
    }
    groups
        .into_iter()
        .filter_map(|g| {
            // The baseline: the bottom most letters without descenders share (a word's box can
            // swallow an underscore; without character boxes, the words' bottoms).
            let bottoms = g.iter().flat_map(|w| {
                let glyphs = w.glyphs.iter().filter(|c| on_baseline(c)).map(|c| c.y1);
                let word = w.glyphs.is_empty().then_some(w.y + w.h);
                glyphs.chain(word)
            });
            let base = lowest_common(bottoms)
                .or_else(|| lowest_common(g.iter().map(|w| w.y + w.h)))
                .unwrap_or(0);
            let top = g.iter().map(|w| w.y).min().unwrap_or(0);
            // A character's width: the median glyph's (a word's box can swallow a neighbour).
            let mut widths: Vec<i32> = g
                .iter()
                .flat_map(|w| w.glyphs.iter().map(|g| g.x1 - g.x0))
                .collect();
            widths.sort_unstable();
            let cw = widths.get(widths.len() / 2).copied().unwrap_or(base - top);
            // A monospace run's pitch, from letters side by side within its words: Tesseract
            // splits a path's "::" in two ("crate: :geometry"). Measured: gluing every word
            // pair one cell apart also glues proportional words ("Backupnow").
            let mut steps: Vec<f64> = g
                .iter()
                .flat_map(|w| {
                    w.glyphs
                        .windows(2)
                        .filter(|p| p[0].ch.is_alphabetic() && p[1].ch.is_alphabetic())
                        .map(|p| (p[1].x0 + p[1].x1 - p[0].x0 - p[0].x1) as f64 / 2.0)
                })
                .collect();
            steps.sort_by(f64::total_cmp);
            // Most steps one pitch: a box Tesseract swallowed a neighbour into is off.
            let pitch = steps.get(steps.len() / 2).copied().filter(|&m| {
                let on = steps.iter().filter(|&&v| (v - m).abs() <= 0.18 * m).count();
                steps.len() >= 6 && on * 4 >= steps.len() * 3
            });
            let mut joined = String::new();
            for (k, w) in g.iter().enumerate() {
                if k > 0 {
                    let a = g[k - 1];
                    let underscore =
                        rule("underscore") && underscore_between(&strip.gray, a, w, cw, top, base);
                    // In a monospace run a space is a whole empty cell: words whose
                    // characters are one cell apart are one word Tesseract split at a "."
                    // or a ":" ("README .md", "crate: :geometry").
                    let adjacent = match (
                        pitch.filter(|_| rule("mono-adjacent")),
                        a.glyphs.last(),
                        w.glyphs.first(),
                    ) {
                        (Some(p), Some(l), Some(f)) if l.ch == ':' && f.ch == ':' => {
                            ((f.x0 + f.x1 - l.x0 - l.x1) as f64 / 2.0) < 1.5 * p
                        }
                        // Boxes can swallow the space ("or directory" with the "d" boxed
                        // from the "r"): the strip's own columns tell.
                        (Some(p), Some(l), Some(f)) if strip.mono => {
                            blank_run(&strip.gray, l.x0.max(l.x1 - 1), f.x1, top, base)
                                < (0.5 * p) as i32
                        }
                        _ => false,
                    };
                    joined.push_str(match underscore {
                        // Tesseract read the underscore itself and a space beside it.
                        true if joined.ends_with('_') || w.text.starts_with('_') => "",
                        true => "_",
                        false if adjacent => "",
                        false => " ",
                    });
                }
                joined.push_str(&w.text);
            }
            if strip.mono && rule("quotes") {
                joined = ascii_quotes(&joined);
            }
            let mut text = if rule("clean-text") {
                clean_text(&joined)
            } else {
                joined.trim().to_string()
            };
            if rule("key-names") {
                text = key_names(&text);
            }
            // A name broken after an underscore (an icon's wrapped file name): the "_" ends the
            // line, where Tesseract drops it or `clean_text` takes it for a border.
            if let Some(last) = g.last().and_then(|w| w.glyphs.last()) {
                if !text.ends_with('_')
                    && rule("underscore")
                    && underscore_in(&strip.gray, last.x1, last.x1 + cw, cw, top, base)
                {
                    text.push('_');
                }
            }
            let conf = g.iter().map(|w| w.conf).sum::<f32>() / g.len() as f32 / 100.0;
            // Brackets and semicolons alone ("}", "});") close code blocks; they are kept only
            // if the monospace join finds them on a grid (`Piece::symbols`).
            let symbols = !plausible(&text, conf);
            if symbols
                && !(conf >= 0.7
                    && (1..=3).contains(&text.chars().count())
                    && text.chars().all(|c| "{}[]();,".contains(c)))
            {
                return None;
            }
            let mut r = Rect::default();
            for w in &g {
                r = r.union(&Rect::new(w.x, w.y, w.w, w.h));
            }
            let s = strip.scale;
            let (bx, by) = (strip.border.0 as f64, strip.border.1 as f64);
            let x0 = strip.origin.0 + ((r.x as f64 - bx) / s).floor() as i32;
            let y0 = strip.origin.1 + ((r.y as f64 - by) / s).floor() as i32;
            let x1 = strip.origin.0 + ((r.right() as f64 - bx) / s).ceil() as i32;
            let y1 = strip.origin.1 + ((r.bottom() as f64 - by) / s).ceil() as i32;
            let to_capture = |x: f64| strip.origin.0 as f64 + (x - bx) / s;
            let mut centres = Vec::new();
            let mut steps = Vec::new();
            let mut letter_steps = Vec::new();
            // Letters and digits only: Tesseract places the box of a "." or ":" loosely.
            for w in &g {
                let mut prev: Option<(char, f64)> = None;
                for &Glyph {
                    ch, x0: a, x1: b, ..
                } in &w.glyphs
                {
                    if !ch.is_alphanumeric() {
                        prev = None;
                        continue;
                    }
                    let c = to_capture((a + b) as f64 / 2.0);
                    if let Some((pch, pc)) = prev {
                        steps.push(c - pc);
                        if pch.is_alphabetic() && ch.is_alphabetic() {
                            letter_steps.push(c - pc);
                        }
                    }
                    prev = Some((ch, c));
                    centres.push(c);
                }
            }
            Some(Piece {
                label: Label {
                    text,
                    rect: Rect::new(x0, y0, (x1 - x0).max(1), (y1 - y0).max(1)),
                    conf: conf.clamp(0.0, 1.0),
                },
                centres,
                steps,
                letter_steps,
                mono: strip.mono,
                symbols,
            })
        })
        .collect()
}

/// The most columns side by side with no ink between rows `top` and `base` of `gray`, from column
/// `lo` to `hi`.
fn blank_run(gray: &GrayImage, lo: i32, hi: i32, top: i32, base: i32) -> i32 {
    let (lo, hi) = (lo.max(0), hi.min(gray.width() as i32));
    let (top, base) = (top.max(0), base.min(gray.height() as i32));
    let (mut best, mut run) = (0, 0);
    for x in lo..hi {
        let ink = (top..base).any(|y| gray.get_pixel(x as u32, y as u32).0[0] < 128);
        run = if ink { 0 } else { run + 1 };
        best = best.max(run);
    }
    best
}

/// Is the space Tesseract put between words `a` and `b` an underscore? It reads the "_" of
/// `find_lines` as a space and may swallow it into either word's box, so the strip itself is
/// looked at: a low flat stroke about a character long (one or two cells) with nothing above
/// its middle, between `a`'s last letter and `b`'s first. An underline (a link) runs on under the
/// letters; a descender's hook has its letter above it.
fn underscore_between(
    gray: &GrayImage,
    a: &RawWord,
    b: &RawWord,
    cw: i32,
    top: i32,
    base: i32,
) -> bool {
    let lo = a.glyphs.last().map_or(a.x, |g| g.x0);
    let hi = b.glyphs.first().map_or(b.x + b.w, |g| g.x1);
    underscore_in(gray, lo, hi, cw, top, base)
}

/// Is there an underscore (`underscore_between`) starting or ending between columns `lo` and `hi`?
fn underscore_in(gray: &GrayImage, lo: i32, hi: i32, cw: i32, top: i32, base: i32) -> bool {
    let h = base - top;
    if cw <= 0 || h <= 0 {
        return false;
    }
    let ink = |x: i32, y: i32| {
        x >= 0
            && y >= 0
            && (x as u32) < gray.width()
            && (y as u32) < gray.height()
            && gray.get_pixel(x as u32, y as u32).0[0] < 200
    };
    // An underscore hangs just under the baseline, above where descenders end (a third of the
    // letters' height under it); a rule under the line (an editor's current-line frame) lies
    // lower.
    let low = |x: i32| (base + 1..=base + (h * 3 / 10).max(2)).any(|y| ink(x, y));
    let above = |x: i32| (top..base - 1).any(|y| ink(x, y));
    let mut x = lo;
    while x < hi {
        if !low(x) {
            x += 1;
            continue;
        }
        let (mut l, mut r) = (x, x);
        while low(l - 1) {
            l -= 1;
        }
        while low(r + 1) {
            r += 1;
        }
        let len = r - l + 1;
        let (m0, m1) = (l + len / 5, r - len / 5);
        if len * 10 >= cw * 6 && len * 10 <= cw * 26 && !(m0..=m1).any(above) {
            return true;
        }
        x = r + 1;
    }
    false
}

/// Trim border fragments that a crop can pick up at its ends (`|`, stray brackets, quotes).
fn clean_text(t: &str) -> String {
    let mut s = t.trim();
    loop {
        let before = s.len();
        s = s.trim_matches(|c: char| {
            matches!(c, '|' | '¦' | '‘' | '’' | '“' | '”' | '_' | '—') || c.is_whitespace()
        });
        // An unmatched bracket at an end is a border fragment, unless it is the whole label
        // (a calculator's "(" key).
        for (open, close) in [('(', ')'), ('[', ']'), ('{', '}')] {
            if s.starts_with(open) && !s.contains(close) && s.len() > open.len_utf8() {
                s = &s[open.len_utf8()..];
            }
            if s.ends_with(close) && !s.contains(open) && s.len() > close.len_utf8() {
                s = &s[..s.len() - close.len_utf8()];
            }
        }
        if s.len() == before {
            break;
        }
    }
    s.to_string()
}

/// Keyboard shortcuts as menus print them ("Ctrl+S", "Shift+Ctrl+Z", "F11"), with the slips
/// Tesseract makes on them undone: the "l" of "Ctrl" read as "i", "1" or dropped ("Ctri+S",
/// "Ctr+O"), and the ones of a function key read as "l" or "i" ("Fil"). Only words shaped like a
/// shortcut are touched: keys joined by "+", or a lone function key.
fn key_names(text: &str) -> String {
    let fkey = |p: &str| -> Option<String> {
        let rest = p.strip_prefix('F')?;
        if rest.is_empty() || rest.len() > 2 {
            return None;
        }
        let digits: String = rest
            .chars()
            .map(|c| match c {
                'l' | 'I' | 'i' | '|' => '1',
                c => c,
            })
            .collect();
        let n: u32 = digits.parse().ok()?;
        (1..=24).contains(&n).then(|| format!("F{digits}"))
    };
    let ctrl = |p: &str| {
        matches!(
            p,
            "Ctri" | "Ctr1" | "CtrI" | "Ctr|" | "Ctr" | "Ctl" | "Cirl" | "Ctrl"
        )
        .then(|| "Ctrl".to_string())
    };
    let fix_word = |w: &str| -> String {
        if w.contains('+') && w.len() > 1 {
            let parts: Vec<&str> = w.split('+').collect();
            // Every part but the key itself must be a modifier for this to be a shortcut.
            let n = parts.len();
            let modifiers = parts[..n - 1].iter().filter(|p| !p.is_empty());
            let known = |p: &&&str| {
                ctrl(p).is_some() || matches!(**p, "Shift" | "Alt" | "Super" | "Meta" | "Cmd")
            };
            if modifiers.clone().count() > 0 && modifiers.clone().all(|p| known(&p)) {
                return parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        // Menus print a letter key in capitals: a small one is a slip.
                        let letter = |p: &str| {
                            (p.len() == 1 && p.chars().all(|c| c.is_ascii_lowercase()))
                                .then(|| p.to_ascii_uppercase())
                        };
                        ctrl(p)
                            .or_else(|| {
                                (i == n - 1)
                                    .then(|| fkey(p).or_else(|| letter(p)))
                                    .flatten()
                            })
                            .unwrap_or_else(|| p.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join("+");
            }
            return w.to_string();
        }
        w.to_string()
    };
    let words: Vec<&str> = text.split(' ').collect();
    if words.len() == 1 {
        if let Some(f) = fkey(words[0]) {
            return f;
        }
    }
    words
        .into_iter()
        .map(fix_word)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Single symbols that are whole labels on keypads and toolbars.
const SYMBOL_KEYS: &str = "+-*/=×÷%<>()";

/// Is this plausibly text rather than an icon read as letters?
fn plausible(text: &str, conf: f32) -> bool {
    let n = text.chars().count();
    let alnum = text.chars().filter(|c| c.is_alphanumeric()).count();
    if n == 1 && SYMBOL_KEYS.contains(text) {
        // Calculator and editor keys ("+", "=") are labels too, but icons read as these often.
        return conf >= 0.80;
    }
    if alnum == 0 {
        return false;
    }
    if n == 1 {
        // A lone digit is a common whole label (keypads, pagination, badges); a lone letter is
        // more often an icon read as text.
        let digit = text.chars().all(|c| c.is_ascii_digit());
        return conf >= if digit { 0.6 } else { 0.75 };
    }
    if n <= 3 && conf < 0.55 {
        return false;
    }
    // Spaces are no evidence either way ("v[v.len() / 2]", "-> i32 {" are code, not junk).
    alnum * 2 >= text.chars().filter(|c| !c.is_whitespace()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// White paper with black rectangles (x, y, w, h).
    fn paper(w: u32, h: u32, ink: &[(u32, u32, u32, u32)]) -> GrayImage {
        let mut g = GrayImage::from_pixel(w, h, image::Luma([255]));
        for &(x0, y0, rw, rh) in ink {
            for y in y0..y0 + rh {
                for x in x0..x0 + rw {
                    g.put_pixel(x, y, image::Luma([0]));
                }
            }
        }
        g
    }

    /// A word of monospace glyphs 10 px apart (8 px wide), one per character of `cells`, where a
    /// space is an empty cell; boxed by Tesseract as one word without the spaces.
    fn mono_word(cells: &str, conf: f32) -> RawWord {
        let glyphs: Vec<Glyph> = cells
            .chars()
            .enumerate()
            .filter(|(_, c)| *c != ' ')
            .map(|(k, ch)| Glyph {
                ch,
                x0: k as i32 * 10,
                x1: k as i32 * 10 + 8,
                y0: 10,
                y1: 30,
                conf: 99.0,
            })
            .collect();
        RawWord {
            text: glyphs.iter().map(|g| g.ch).collect(),
            x: 0,
            y: 10,
            w: cells.len() as i32 * 10,
            h: 20,
            conf,
            glyphs,
        }
    }

    #[test]
    fn a_caret_glued_to_the_last_letter_is_cleared_and_a_final_l_is_not() {
        // 40x16 crops: letters x-height rows 6..=11 on the baseline 11, a tall "t" 3..=11.
        let (w, h) = (40usize, 16usize);
        let ink = |d: &mut Vec<u8>, x: usize, y0: usize, y1: usize| {
            for y in y0..=y1 {
                d[y * w + x] = 255;
            }
        };
        let word = || {
            let mut d = vec![0u8; w * h];
            for x in 12..17 {
                ink(&mut d, x, 6, 11); // "a"
            }
            ink(&mut d, 20, 3, 11); // "t"
            d
        };
        let cleared = |d: &mut Vec<u8>| {
            let before = d.clone();
            clear_glued_caret(d, w, (0, 0, w, h));
            *d != before
        };
        // A caret right after the "t", taller than the line both ways: cleared.
        let mut caret = word();
        ink(&mut caret, 21, 2, 14);
        assert!(cleared(&mut caret));
        assert_eq!(caret, word());
        // A final "l": as tall, but it stands on the baseline like the others.
        let mut final_l = word();
        ink(&mut final_l, 22, 2, 11);
        assert!(!cleared(&mut final_l));
        // A "|" after a space is a character of the text, not a caret.
        let mut pipe = word();
        ink(&mut pipe, 26, 2, 14);
        assert!(!cleared(&mut pipe));
        // A field's border at the line's start, taller still, does not hide the caret.
        let mut field = word();
        ink(&mut field, 0, 0, 15);
        ink(&mut field, 21, 2, 14);
        assert!(cleared(&mut field));
        // Three pixels wide is no caret (a block cursor is the other rule's).
        let mut wide = word();
        for x in 21..24 {
            ink(&mut wide, x, 2, 14);
        }
        assert!(!cleared(&mut wide));
    }

    #[test]
    fn a_space_cell_inside_a_monospace_word_splits_it() {
        // (cells as drawn, ink in the space cell, words after)
        let cases: [(&str, bool, &[&str]); 5] = [
            ("-hx /", false, &["-hx", "/"]),
            ("-hx /", true, &["-hx/"]),
            ("abcd", false, &["abcd"]),
            ("abc  de", false, &["abc", "de"]),
            // Two steps show no pitch: left alone.
            ("-h /", false, &["-h/"]),
        ];
        for (cells, ink, want) in cases {
            let ink_at: Vec<(u32, u32, u32, u32)> = cells
                .chars()
                .enumerate()
                .filter(|(_, c)| *c != ' ' || ink)
                .map(|(k, _)| (k as u32 * 10, 10, 8, 20))
                .collect();
            let gray = paper(100, 40, &ink_at);
            let w = vec![mono_word(cells, 60.0)];
            let got = match strip_pitch(&w) {
                Some(p) => split_at_spaces(w, &gray, p),
                None => w,
            };
            let texts: Vec<&str> = got.iter().map(|w| w.text.as_str()).collect();
            assert_eq!(texts, want, "{cells:?} ink {ink}");
            for w in &got {
                assert_eq!(w.conf, 60.0);
                assert_eq!(w.x, w.glyphs[0].x0, "{cells:?}");
            }
        }
    }

    #[test]
    fn underscores_are_low_strokes_a_cell_long_with_nothing_above() {
        // Letters' bodies from y 10 to 30 (baseline 30), one cell 10 px wide, in two words with
        // a cell between them at x 40..50.
        let body = [(0, 10, 38, 20), (52, 10, 38, 20)];
        let with = |extra: &[(u32, u32, u32, u32)]| {
            let mut ink = body.to_vec();
            ink.extend_from_slice(extra);
            underscore_in(&paper(100, 50, &ink), 30, 60, 10, 10, 30)
        };
        assert!(with(&[(40, 32, 10, 2)]), "an underscore in the gap");
        assert!(!with(&[]), "a plain space");
        assert!(
            !with(&[(0, 32, 90, 2)]),
            "a link's underline runs under the letters"
        );
        assert!(
            !with(&[(30, 32, 6, 2)]),
            "a descender's hook has its letter above it"
        );
        assert!(!with(&[(40, 46, 10, 2)]), "a rule well under the line");
    }

    #[test]
    fn zeros_in_monospace_lines() {
        for (read, want) in [
            (
                "struct Blob { x@: i32, yO: i32 }",
                "struct Blob { x0: i32, y0: i32 }",
            ),
            ("self.y@ }", "self.y0 }"),
            ("ada@voxdesk:~$ ls", "ada@voxdesk:~$ ls"),
            ("IO ZOOM Off", "IO ZOOM Off"),
            ("1.2 3O%", "1.2 30%"),
        ] {
            assert_eq!(mono_zeros(read), want);
        }
    }

    #[test]
    fn a_lone_brace_is_told_by_its_shape() {
        // A "}" 10 wide and 30 tall: hooks bent left at both ends, a spike right at the middle.
        let close = [(0, 0, 6, 2), (5, 0, 2, 30), (0, 28, 6, 2), (7, 14, 5, 2)];
        let g = paper(20, 40, &close.map(|(x, y, w, h)| (x + 4, y + 5, w, h)));
        assert_eq!(brace_shape(&g), Some('}'));
        let open = close.map(|(x, y, w, h)| (20 - x - w, y + 5, w, h));
        assert_eq!(brace_shape(&paper(20, 40, &open)), Some('{'));
        // A "+" is as wide as tall.
        let plus = [(2, 10, 16, 2), (9, 3, 2, 16)];
        assert_eq!(brace_shape(&paper(20, 40, &plus)), None);
        // A ")" is a stem without a spike.
        assert_eq!(brace_shape(&paper(20, 40, &[(8, 5, 2, 30)])), None);
    }

    #[test]
    fn bold_light_letters_on_a_fill_are_the_ink() {
        // Initials at scale 2: four white strokes filling two thirds of their box, on a blue
        // circle that surrounds them. The fill is the background, so the strokes come out dark.
        let (w, h) = (60u32, 40u32);
        let mut rgba = Vec::with_capacity((w * h * 4) as usize);
        for y in 0..h as i32 {
            for x in 0..w as i32 {
                let stroke = (12..28).contains(&y) && (20..38).contains(&x) && (x - 20) % 5 < 3;
                let c = if stroke {
                    [255, 255, 255]
                } else {
                    [40, 90, 200]
                };
                rgba.extend_from_slice(&[c[0], c[1], c[2], 255]);
            }
        }
        let line = LineBox {
            rect: Rect::new(20, 12, 18, 16),
            text_h: 16,
            glyph: None,
            mono: false,
        };
        let s = make_strip(&rgba, w, h, &line);
        let at = |x: i32, y: i32| {
            let sx = ((x - s.origin.0) as f64 * s.scale) as u32 + s.border.0;
            let sy = ((y - s.origin.1) as f64 * s.scale) as u32 + s.border.1;
            s.gray.get_pixel(sx, sy).0[0]
        };
        assert!(at(21, 20) < 100, "a stroke is ink: {}", at(21, 20));
        assert!(
            at(24, 20) > 150,
            "the fill between strokes is paper: {}",
            at(24, 20)
        );
    }

    #[test]
    fn ink_in_the_corners_beside_the_letters_is_cleared() {
        // A 20x20 crop, the letters' box at (8, 6) 5x8: a badge's corner speck up left, a dot
        // above the letters (an "i"), a speck beside them at their height (a full stop).
        let (cw, ch) = (20usize, 20usize);
        let mut d = vec![0u8; cw * ch];
        let mut put = |x: usize, y: usize| d[y * cw + x] = 200;
        for (x, y) in [(2, 2), (3, 2), (9, 3), (15, 12), (10, 8), (11, 8)] {
            put(x, y);
        }
        // An underscore ending the line, beside and below the letters.
        for x in 14..18 {
            put(x, 15);
        }
        clear_corners(&mut d, cw, (8, 6, 5, 8), 8);
        let at = |x: usize, y: usize| d[y * cw + x];
        assert_eq!((at(2, 2), at(3, 2)), (0, 0), "corner speck");
        assert_eq!(at(9, 3), 200, "dot above the letters");
        assert_eq!(at(15, 12), 200, "speck beside, at the letters' height");
        assert_eq!(at(10, 8), 200, "the letters");
        assert_eq!(at(16, 15), 200, "an underscore, four pixels wide at 12 px");
    }

    #[test]
    fn monospace_quotes_are_straight() {
        assert_eq!(
            ascii_quotes("rm: cannot remove ‘old.log’: “x”"),
            "rm: cannot remove 'old.log': \"x\""
        );
    }

    #[test]
    fn a_space_in_a_monospace_line_is_a_blank_cell() {
        // "or d": a blank of a whole cell (12 px) between "r" and "d"; "ab": two pixels.
        let g = paper(60, 20, &[(0, 5, 8, 10), (20, 5, 8, 10), (30, 5, 8, 10)]);
        assert_eq!(blank_run(&g, 7, 30, 5, 15), 12);
        assert_eq!(blank_run(&g, 27, 38, 5, 15), 2);
        // Ink above or below the band (an underline) is no letter.
        assert_eq!(blank_run(&g, 7, 30, 6, 14), 12);
    }

    fn w(text: &str, x: i32, wd: i32, conf: f32) -> RawWord {
        RawWord {
            text: text.into(),
            x,
            y: 10,
            w: wd,
            h: 20,
            conf,
            glyphs: vec![],
        }
    }

    #[test]
    fn words_split_at_wide_gaps_and_map_back_through_the_scale() {
        let strip = Strip {
            gray: GrayImage::new(1, 1),
            bolder: None,
            origin: (100, 50),
            scale: 2.0,
            border: (0, 0),
            mono: false,
            fences: vec![],
            key: 0,
        };
        let words = [
            w("Save", 0, 40, 95.0),
            w("As", 48, 20, 90.0),
            w("Open", 120, 40, 90.0),
        ];
        let labels = words_to_labels(&words, &strip);
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[0].label.text, "Save As");
        assert_eq!(labels[0].label.rect, Rect::new(100, 55, 34, 10));
        assert_eq!(labels[1].label.text, "Open");
        assert!((labels[0].label.conf - 0.925).abs() < 1e-6);
    }

    #[test]
    fn junk_is_dropped() {
        let strip = Strip {
            gray: GrayImage::new(1, 1),
            bolder: None,
            origin: (0, 0),
            scale: 1.0,
            border: (0, 0),
            mono: false,
            fences: vec![],
            key: 0,
        };
        for (t, c) in [
            ("©", 90.0),
            ("|", 99.0),
            ("e", 50.0),
            ("~=-", 90.0),
            ("ab", 10.0),
        ] {
            assert!(words_to_labels(&[w(t, 0, 10, c)], &strip).is_empty(), "{t}");
        }
        assert_eq!(
            words_to_labels(&[w("7", 0, 10, 90.0)], &strip).len(),
            1,
            "lone digits are labels (calculator keys)"
        );
        // A closing brace is kept for the monospace join to judge, marked as only symbols.
        let brace = words_to_labels(&[w("}", 0, 10, 90.0)], &strip);
        assert!(brace.len() == 1 && brace[0].symbols);
        assert!(!words_to_labels(&[w("v[v.len() / 2]", 0, 10, 80.0)], &strip)[0].symbols);
    }

    #[test]
    fn thickening_widens_strokes_and_keeps_the_gap_between_bars() {
        // A 1 px stem, then rows of an "=" (bar, gap, bar), 6 px wide.
        let mut d = vec![
            0, 0, 255, 0, 0, 0, //
            255, 255, 255, 255, 0, 0, //
            0, 0, 0, 0, 0, 0, //
            255, 255, 255, 255, 0, 0,
        ];
        thicken_right(&mut d, 6);
        assert_eq!(&d[0..6], &[0, 0, 255, 255, 0, 0]);
        assert_eq!(&d[12..18], &[0; 6], "the gap row stays empty");
        assert_eq!(&d[18..24], &[255, 255, 255, 255, 255, 0]);
    }

    #[test]
    fn shortcut_slips_are_undone_and_other_words_left_alone() {
        assert_eq!(key_names("Ctri+S"), "Ctrl+S");
        assert_eq!(key_names("Shift+Ctr+O"), "Shift+Ctrl+O");
        assert_eq!(key_names("Ctri++"), "Ctrl++");
        assert_eq!(key_names("Alt+Fl2"), "Alt+F12");
        assert_eq!(key_names("Fil"), "F11");
        assert_eq!(key_names("Ctri+Shift+T new tab"), "Ctrl+Shift+T new tab");
        assert_eq!(key_names("Ctrl+w"), "Ctrl+W");
        for same in [
            "a+b+c",
            "Film",
            "Fil and more",
            "a+b",
            "C++",
            "Ctri",
            "F99",
            "Size (KB)",
        ] {
            assert_eq!(key_names(same), same);
        }
    }

    #[test]
    fn wrapped_lines_on_one_axis_join_and_rows_do_not() {
        let l = |text: &str, x, y, w| Label {
            text: text.into(),
            rect: Rect::new(x, y, w, 10),
            conf: 0.9,
        };
        // "invoice_2024-" over "03.pdf", centred under an icon; a left-aligned row pair;
        // a table's column, its cells' ink a pixel off its edge ("j" reaches left of "b").
        let got = join_wrapped(
            vec![
                l("invoice_2024-", 100, 50, 80),
                l("03.pdf", 118, 64, 44),
                l("cc -c main.c", 400, 50, 80),
                l("cc -c util.c", 400, 64, 80),
                l("Name", 600, 50, 40),
                l("Size", 600, 64, 30),
                l("bjorn", 800, 50, 34),
                l("jonas", 799, 64, 37),
            ],
            |_| [255; 3],
        );
        let mut texts: Vec<&str> = got.iter().map(|l| l.text.as_str()).collect();
        texts.sort_unstable();
        assert_eq!(
            texts,
            [
                "Name",
                "Size",
                "bjorn",
                "cc -c main.c",
                "cc -c util.c",
                "invoice_2024-03.pdf",
                "jonas",
            ]
        );
        let name = got.iter().find(|l| l.text.starts_with("invoice"));
        assert_eq!(name.map(|l| l.rect), Some(Rect::new(100, 50, 80, 24)));
    }

    #[test]
    fn one_cell_read_as_two_characters_keeps_one() {
        // Boxes as Tesseract gave them on the code and terminal fixtures: (character, left,
        // right, confidence), and the strip's pitch.
        type Case = (&'static [(char, i32, i32, f32)], f64, &'static str);
        let cases: &[Case] = &[
            (
                &[
                    ('#', 13, 28, 99.0),
                    ('(', 25, 31, 95.8),
                    ('[', 31, 38, 98.8),
                    ('t', 41, 52, 99.0),
                    ('e', 55, 67, 99.0),
                    ('s', 70, 80, 99.0),
                    ('t', 82, 94, 98.8),
                    (']', 98, 104, 99.0),
                ],
                13.8,
                "#[test]",
            ),
            (
                &[
                    ('v', 13, 24, 99.0),
                    ('i', 21, 30, 93.1),
                    ('[', 28, 33, 97.3),
                    ('v', 36, 46, 98.9),
                    ('.', 51, 54, 99.0),
                    ('l', 59, 68, 95.9),
                    ('e', 69, 80, 99.0),
                    ('n', 81, 91, 98.8),
                    ('(', 95, 100, 98.9),
                    (')', 106, 111, 99.0),
                ],
                11.3,
                "v[v.len()",
            ),
            (
                &[
                    ('-', 85, 95, 98.7),
                    ('-', 102, 113, 99.0),
                    ('V', 116, 126, 90.3),
                    ('v', 118, 135, 96.6),
                    ('e', 136, 152, 99.0),
                    ('r', 155, 169, 99.0),
                    ('b', 172, 187, 99.0),
                    ('o', 189, 205, 99.0),
                    ('s', 208, 222, 98.7),
                    ('e', 225, 239, 99.0),
                ],
                17.3,
                "--verbose",
            ),
            (
                &[
                    ('l', 259, 268, 89.1),
                    ('L', 266, 278, 93.3),
                    ('i', 283, 296, 98.8),
                    ('n', 300, 312, 99.0),
                    ('e', 316, 330, 98.9),
                    ('s', 334, 346, 99.0),
                ],
                16.3,
                "lines",
            ),
            // Squeezed boxes, every cell a character: "one());" and "GAP:".
            (
                &[
                    ('o', 620, 634, 99.0),
                    ('n', 637, 650, 99.0),
                    ('e', 653, 668, 98.9),
                    ('(', 674, 681, 99.0),
                    (')', 678, 694, 99.0),
                    (')', 690, 698, 98.9),
                    (';', 707, 730, 96.0),
                ],
                16.8,
                "one());",
            ),
            (
                &[
                    ('G', 175, 187, 99.0),
                    ('A', 188, 201, 99.0),
                    ('P', 195, 208, 99.0),
                    (':', 203, 223, 99.0),
                ],
                13.5,
                "GAP:",
            ),
        ];
        for &(glyphs, pitch, want) in cases {
            let mut w = RawWord {
                text: glyphs.iter().map(|c| c.0).collect(),
                x: glyphs[0].1,
                y: 0,
                w: 100,
                h: 20,
                conf: 80.0,
                glyphs: glyphs
                    .iter()
                    .map(|&(ch, x0, x1, conf)| Glyph {
                        ch,
                        x0,
                        x1,
                        y0: 0,
                        y1: 20,
                        conf,
                    })
                    .collect(),
            };
            drop_doubled(&mut w, pitch);
            assert_eq!(w.text, want);
            assert_eq!(w.glyphs.len(), want.chars().count());
        }
    }

    #[test]
    fn a_word_broken_where_the_names_column_ends_joins_without_a_space() {
        let l = |text: &str, x, y, w| Label {
            text: text.into(),
            rect: Rect::new(x, y, w, 12),
            conf: 0.9,
        };
        // Names wrapped at a 100 px column: one word too long for it is broken at its end;
        // a short first line is a break between words, whether it holds one word or two.
        let got = join_wrapped(
            vec![
                l("data_export_fina", 100, 50, 100),
                l("l.zip", 138, 64, 24),
                l("lecture 03", 300, 50, 60),
                l("notes.pdf", 304, 64, 53),
                l("Holiday", 500, 50, 46),
                l("photos from Lyon", 480, 64, 86),
            ],
            |_| [255; 3],
        );
        let texts: Vec<&str> = got.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "data_export_final.zip",
                "lecture 03 notes.pdf",
                "Holiday photos from Lyon"
            ]
        );
    }

    #[test]
    fn clean_text_trims_border_fragments() {
        assert_eq!(clean_text("| Save |"), "Save");
        assert_eq!(clean_text("(Open"), "Open");
        assert_eq!(clean_text("Size (KB)"), "Size (KB)");
        assert_eq!(clean_text("[x]"), "[x]");
        assert_eq!(
            clean_text("("),
            "(",
            "a lone bracket is a key, not a fragment"
        );
        assert_eq!(clean_text(")"), ")");
    }

    #[test]
    fn strip_normalises_light_on_dark_to_dark_on_white() {
        // 40x20 dark frame with a light 10x8 block in the middle.
        let (wd, ht) = (40u32, 20u32);
        let mut px = vec![0u8; (wd * ht * 4) as usize];
        for y in 0..ht {
            for x in 0..wd {
                let i = ((y * wd + x) * 4) as usize;
                let v = if [16, 17, 21, 22].contains(&x) && (6..14).contains(&y) {
                    230
                } else {
                    30
                };
                px[i..i + 4].copy_from_slice(&[v, v, v, 255]);
            }
        }
        let s = make_strip(
            &px,
            wd,
            ht,
            &LineBox {
                rect: Rect::new(15, 6, 10, 8),
                text_h: 8,
                glyph: None,
                mono: false,
            },
        );
        assert_eq!(s.gray.get_pixel(0, 0).0[0], 255, "background becomes white");
        assert_eq!(
            s.gray.get_pixel(STRIP_BORDER_X + 1, STRIP_BORDER_Y + 1).0[0],
            255,
            "background becomes white"
        );
        assert!(
            s.gray.pixels().map(|p| p.0[0]).min().unwrap() < 40,
            "text becomes dark"
        );
        assert!(s.scale > 1.0, "small text is upscaled");
    }
}
