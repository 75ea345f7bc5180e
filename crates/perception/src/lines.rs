//! Finds where the text labels are in a frame: edge blobs grouped into single-line labels, split where a gap is wider than a word space.
//!
//! Tesseract's own page layout glues separate widgets (a menubar, a table row) into one line and
//! loses light text on coloured fills, so voxdesk decides for itself where text is. UI text is
//! axis-aligned on flat backgrounds: a column-to-column colour jump marks a glyph stroke, strokes
//! join into glyph blobs, blobs that share a baseline band and sit closer than a word space apart
//! form one label. Everything here is pure (pixels in, rectangles out).
//!
//! The heuristics, each for a kind of screen text it was found on:
//! - Rings and pill ends around text are outlines, not glyphs; a faint stroke taller than the
//!   letters is a button's border.
//! - A vertical rule reaching well above and below the text between two pieces of it is a
//!   separator, however narrow the gap: two keys of a keypad, two cells, a label and its field.
//! - A monospace line, its runs on one character grid shared with the lines around it, is one box
//!   whatever its spaces.
//! - The end specks of a flat stroke are joined into a bar; bars and dots are clustered into flat
//!   glyphs named by their shape ("-", "=", "÷", a lone ".", a bar over two legs "π"): glyphs
//!   Tesseract reads badly alone or cannot spell.

use super::label::nearly_all;
use super::rules::on as rule;
use voxdesk_core::geometry::Rect;

/// A colour jump between neighbouring columns at least this large (0–255, max over channels)
/// counts as a stroke edge. Measured: 20 keeps 10 px grey-on-white text, which anti-aliases
/// down to jumps of ~30, while flat gradients stay below it.
const EDGE_THRESHOLD: u8 = 20;
/// Edge pixels closer than this (in a row) are one stroke run.
const RUN_GAP: usize = 2;
/// Blobs taller than this (capture pixels) are not text (panels, photos, scrollbars).
const MAX_TEXT_HEIGHT: i32 = 120;
/// Blobs shorter than this never start a label (but may join one: dots, commas, dashes).
const MIN_SEED_HEIGHT: i32 = 5;
/// A gap wider than this many line heights separates two labels (a word space is ~0.3–0.5).
const LABEL_GAP: f64 = 0.8;
/// The first pass chains more loosely (its height estimate is rough); the second pass splits.
const CHAIN_GAP: f64 = 1.6;
/// How far left of a label's first letter a speck may be and still lead it (capture pixels).
const LEAD_SPAN: i32 = 16;
/// Blobs up to this tall may be punctuation (a comma at scale 2 is 7 px) and join any label.
const PUNCT_MAX_H: i32 = 8;

/// One label-sized box of text, in capture pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineBox {
    pub rect: Rect,
    /// Median glyph-blob height: the text size, used to scale the crop for recognition.
    pub text_h: i32,
    /// A lone glyph already identified from its shape: flat strokes and dots ("-", "=", "÷",
    /// "."), or "π". Tesseract reads these badly alone ("=" as "—") or cannot spell them ("÷",
    /// "π" are not in its English alphabet).
    pub glyph: Option<char>,
    /// The glyphs sit on one fixed pitch (a monospace font: a terminal or code line). Such a
    /// line is one run of text: its spaces are characters, not gaps between widgets.
    pub mono: bool,
}

#[derive(Debug, Clone, Copy)]
struct Blob {
    x0: i32,
    y0: i32,
    x1: i32, // exclusive
    y1: i32, // exclusive
}

impl Blob {
    fn h(&self) -> i32 {
        self.y1 - self.y0
    }
    fn w(&self) -> i32 {
        self.x1 - self.x0
    }
}

/// Find text labels inside `region` of an RGBA frame of width `width` (4 bytes per pixel).
pub fn find_lines(rgba: &[u8], width: u32, height: u32, region: Rect) -> Vec<LineBox> {
    let region = region.intersection(&Rect::new(0, 0, width as i32, height as i32));
    if region.is_empty() || region.w < 2 {
        return Vec::new();
    }
    let (blobs, rules) = edge_blobs(rgba, width as usize, region);
    let mut lines = group_blobs(blobs.clone(), &rules, |b| {
        faint(rgba, width as usize, height as usize, b)
    });
    if rule("flat-glyphs") {
        lines.extend(flat_glyphs(rgba, width as usize, &blobs, &lines));
    }
    for l in &mut lines {
        if l.glyph.is_none() && rule("pi") && is_pi(rgba, width as usize, height as usize, &l.rect)
        {
            l.glyph = Some('π');
        }
    }
    for l in lines.iter_mut().filter(|l| l.glyph.is_none()) {
        l.text_h = core_height(rgba, width as usize, &l.rect).unwrap_or(l.text_h);
    }
    lines
}

/// The x-height of the text in `r`: the rows where stroke edges are dense (at least a third of
/// the densest row). Blob heights overestimate it when letters touch and ascenders join in.
fn core_height(rgba: &[u8], width: usize, r: &Rect) -> Option<i32> {
    let mut counts = Vec::with_capacity(r.h as usize);
    for y in r.y..r.bottom() {
        let row = &rgba[(y as usize * width + r.x as usize) * 4
            ..(y as usize * width + r.right() as usize) * 4];
        let n = row
            .chunks_exact(4)
            .zip(row.chunks_exact(4).skip(1))
            .filter(|(a, b)| {
                a[0].abs_diff(b[0])
                    .max(a[1].abs_diff(b[1]))
                    .max(a[2].abs_diff(b[2]))
                    >= EDGE_THRESHOLD
            })
            .count();
        counts.push(n);
    }
    let max = *counts.iter().max()?;
    if max == 0 {
        return None;
    }
    Some(counts.iter().filter(|&&c| c * 3 >= max).count() as i32)
}

/// Does the lone glyph in `r` draw a "π": a bar across its top that overhangs two legs hanging
/// from it? Calculators label their pi key with it, and Tesseract's English model has no "π"
/// (it reads "x" or "T"). A "T" has one leg, an "n" or "П" has no overhang on the left and right,
/// an "m" has three legs.
fn is_pi(rgba: &[u8], width: usize, height: usize, r: &Rect) -> bool {
    if r.h < 5 || r.h > 40 || r.w < 5 || r.w * 2 > r.h * 3 || r.w * 5 < r.h * 3 {
        return false;
    }
    let px = |x: i32, y: i32| rgb_at(rgba, width, x, y);
    let frame = Rect::new(0, 0, width as i32, height as i32);
    let area = r.expand_within(1, &frame);
    // Background: the most common colour on the ring around the glyph.
    let mut counts: std::collections::HashMap<[u8; 3], u32> = Default::default();
    for x in area.x..area.right() {
        *counts.entry(px(x, area.y)).or_default() += 1;
        *counts.entry(px(x, area.bottom() - 1)).or_default() += 1;
    }
    for y in area.y..area.bottom() {
        *counts.entry(px(area.x, y)).or_default() += 1;
        *counts.entry(px(area.right() - 1, y)).or_default() += 1;
    }
    let Some(bg) = counts
        .into_iter()
        .max_by_key(|&(c, n)| (n, c))
        .map(|(c, _)| c)
    else {
        return false;
    };
    let ink = |x: i32, y: i32| {
        let c = px(x, y);
        (0..3).map(|k| c[k].abs_diff(bg[k])).max().unwrap_or(0) >= 2 * EDGE_THRESHOLD
    };
    // Runs of ink per row, in the glyph's rows only.
    let rows: Vec<Vec<(i32, i32)>> = (area.y..area.bottom())
        .map(|y| {
            let mut runs = Vec::new();
            let mut start = None;
            for x in area.x..=area.right() {
                match (x < area.right() && ink(x, y), start) {
                    (true, None) => start = Some(x),
                    (false, Some(s)) => {
                        runs.push((s, x));
                        start = None;
                    }
                    _ => {}
                }
            }
            runs
        })
        .skip_while(|runs| runs.is_empty())
        .collect();
    // Leading empty rows are gone; without any ink (text fainter than the ink threshold) there
    // is nothing to judge.
    let Some(last) = rows.iter().rposition(|runs| !runs.is_empty()) else {
        return false;
    };
    let rows = &rows[..=last];
    let (x0, x1) = rows
        .iter()
        .flat_map(|runs| runs.iter())
        .fold((i32::MAX, i32::MIN), |(a, b), &(s, e)| (a.min(s), b.max(e)));
    let (w, h) = (x1 - x0, rows.len() as i32);
    if h < 5 || w < 5 {
        return false;
    }
    // The bar: a run across three quarters of the glyph, within its top quarter.
    let Some((bar_row, (bar0, bar1))) = rows
        .iter()
        .take((h as usize / 4).max(1))
        .enumerate()
        .find_map(|(i, runs)| {
            runs.iter()
                .find(|(s, e)| (e - s) * 4 >= w * 3)
                .map(|&b| (i, b))
        })
    else {
        return false;
    };
    // The legs: below the bar (a row down, past any hook at its end), two runs on most rows,
    // inside the bar's ends on the upper half.
    let legs = &rows[(bar_row + 2).min(rows.len())..];
    if legs.len() < 3 {
        return false;
    }
    let two = legs.iter().filter(|runs| runs.len() == 2).count();
    let inside = legs[..legs.len().div_ceil(2)]
        .iter()
        .filter(|runs| runs.len() == 2)
        .all(|runs| runs[0].0 > bar0 && runs[1].1 < bar1);
    two * 5 >= legs.len() * 3 && inside
}

/// Column runs of edge pixels at least this long are borders and separators, not letter strokes
/// (the stem of an "l" in 13 px text at scale 2 is ~20 px). Erasing them keeps a button's text
/// from joining its border, and a grid of buttons from becoming one tall blob.
const RULE_RUN: usize = 23;

/// Erase them, and say where they were (region coordinates, one column wide each): a rule
/// between two pieces of text is a separator, whatever the gap (two keys of a keypad, two cells).
fn erase_vertical_rules(mask: &mut [bool], w: usize, h: usize) -> Vec<Blob> {
    let mut ends: Vec<(usize, usize)> = Vec::new();
    let mut rules = Vec::new();
    for x in 0..w {
        let mut y = 0;
        while y < h {
            if !mask[y * w + x] {
                y += 1;
                continue;
            }
            let start = y;
            while y < h && mask[y * w + x] {
                y += 1;
            }
            if y - start >= RULE_RUN {
                for yy in start..y {
                    mask[yy * w + x] = false;
                }
                ends.push((x, start));
                ends.push((x, y - 1));
                rules.push(Blob {
                    x0: x as i32,
                    y0: start as i32,
                    x1: x as i32 + 1,
                    y1: y as i32,
                });
            }
        }
    }
    // A rounded corner where the rule turns is left behind as a small arc that reads as "4" or
    // "(": clear a few pixels around each end of every erased rule.
    for (x, y) in ends {
        for yy in y.saturating_sub(CORNER)..(y + CORNER + 1).min(h) {
            for xx in x.saturating_sub(CORNER)..(x + CORNER + 1).min(w) {
                mask[yy * w + xx] = false;
            }
        }
    }
    rules
}

/// Does a rule stand between a label ending at `x0` and a blob starting at `x1`, reaching
/// clearly above and below the text of both (`y0..y1`)? Then they are two widgets (two keys, two
/// cells, a label and its field), however close. A text caret is about as tall as its line and
/// is not one.
fn fenced(x0: i32, x1: i32, y0: i32, y1: i32, rules: &[Blob]) -> bool {
    let m = ((y1 - y0) / 4).max(2);
    rules
        .iter()
        .any(|r| r.x0 >= x0 - 1 && r.x0 <= x1 && r.y0 <= y0 - m && r.y1 >= y1 + m)
}

/// Specks this close (capture pixels, horizontally and vertically) are one flat glyph.
const SPECK_GAP: i32 = 4;
/// The longest flat stroke a glyph has ("=" of 20 px text is ~12 px): the two end specks of a
/// longer one are a rule's, not a glyph's.
const MAX_BAR: i32 = 24;

/// Glyphs made only of flat strokes and dots ("-", "=", "÷" in a bitmap font) reach the
/// column-jump mask only as specks at the ends of each stroke and never seed a label. The two
/// end specks of one stroke are joined into a bar (checked on the pixels between them), bars and
/// dots that cluster into a small glyph-sized box away from every label become a label of their
/// own, identified from how its bars and dots are arranged when that is unambiguous.
fn flat_glyphs(rgba: &[u8], width: usize, blobs: &[Blob], lines: &[LineBox]) -> Vec<LineBox> {
    let specks: Vec<Blob> = blobs
        .iter()
        .filter(|b| b.h() < MIN_SEED_HEIGHT)
        .copied()
        .collect();
    let near_label = |b: &Blob| {
        lines.iter().any(|l| {
            let m = (l.text_h / 2).max(2);
            b.x1 > l.rect.x - m
                && b.x0 < l.rect.right() + m
                && b.y1 > l.rect.y - m
                && b.y0 < l.rect.bottom() + m
        })
    };
    let mut free: Vec<Blob> = specks.into_iter().filter(|b| !near_label(b)).collect();
    free.sort_by_key(|b| (b.y0, b.x0));
    let parts = join_bars(rgba, width, &free);
    // Single-link clustering; parts are few once every label's are taken out.
    let mut cluster: Vec<usize> = (0..parts.len()).collect();
    fn root(c: &mut [usize], mut i: usize) -> usize {
        while c[i] != i {
            c[i] = c[c[i]];
            i = c[i];
        }
        i
    }
    let mut by_x: Vec<usize> = (0..parts.len()).collect();
    by_x.sort_by_key(|&i| parts[i].x0);
    for (k, &i) in by_x.iter().enumerate() {
        for &j in &by_x[k + 1..] {
            let (a, b) = (&parts[i], &parts[j]);
            if b.x0 - a.x1 > MAX_BAR {
                break;
            }
            let dx = (b.x0 - a.x1).max(a.x0 - b.x1);
            let dy = (b.y0 - a.y1).max(a.y0 - b.y1);
            if dx <= SPECK_GAP && dy <= SPECK_GAP {
                let (ri, rj) = (root(&mut cluster, i), root(&mut cluster, j));
                cluster[ri.max(rj)] = ri.min(rj);
            }
        }
    }
    let mut groups: std::collections::HashMap<usize, Vec<Blob>> = Default::default();
    for (i, b) in parts.iter().enumerate() {
        groups.entry(root(&mut cluster, i)).or_default().push(*b);
    }
    let mut out: Vec<LineBox> = groups
        .into_values()
        .filter_map(|g| {
            let rect = g.iter().fold(Rect::default(), |r, b| {
                r.union(&Rect::new(b.x0, b.y0, b.w(), b.h()))
            });
            let dot = g.len() == 1 && is_dot(rgba, width, &g[0]);
            let glyph = if dot { Some('.') } else { flat_glyph_shape(&g) };
            let lone_bar = g.len() == 1 && glyph.is_some() && alone(&rect, blobs);
            let glyph_sized = (3..=16).contains(&rect.h) && (4..=MAX_BAR).contains(&rect.w);
            ((g.len() >= 2 && glyph_sized) || lone_bar).then_some(LineBox {
                rect,
                text_h: rect.h.max(MIN_SEED_HEIGHT),
                glyph,
                mono: false,
            })
        })
        .collect();
    out.sort_by_key(|l| (l.rect.y, l.rect.x));
    out
}

/// The colour of pixel (x, y) of an RGBA frame `width` pixels wide.
fn rgb_at(rgba: &[u8], width: usize, x: i32, y: i32) -> [u8; 3] {
    let i = (y as usize * width + x as usize) * 4;
    [rgba[i], rgba[i + 1], rgba[i + 2]]
}

/// Is the stroke in `b` faint against the colour beside it: a border (measured: a dialog
/// button's side is 25–50 levels off its background, text 85 or more, placeholder text too)?
fn faint(rgba: &[u8], width: usize, height: usize, b: &Blob) -> bool {
    let cy = (b.y0 + b.y1) / 2;
    let contrast = |x: i32| {
        if x < 0 || x as usize >= width || cy < 0 || cy as usize >= height {
            return u8::MAX;
        }
        let bg = rgb_at(rgba, width, x, cy);
        let mut most = 0;
        for y in b.y0.max(0)..b.y1.min(height as i32) {
            for x in b.x0.max(0)..b.x1.min(width as i32) {
                let p = rgb_at(rgba, width, x, y);
                most = most.max((0..3).map(|k| p[k].abs_diff(bg[k])).max().unwrap_or(0));
            }
        }
        most
    };
    contrast(b.x0 - 2).min(contrast(b.x1 + 1)) < 64
}

/// Two colours as far apart as an edge (ink against its background).
fn far(a: [u8; 3], b: [u8; 3]) -> bool {
    a.iter()
        .zip(b)
        .map(|(p, q)| p.abs_diff(q))
        .max()
        .unwrap_or(0)
        >= EDGE_THRESHOLD
}

/// Is this speck a dot: at most 3 px of ink in a row, with the same colour on both sides of it
/// (the end of a rule has its stroke on one side) and above and below it?
fn is_dot(rgba: &[u8], width: usize, b: &Blob) -> bool {
    let px = |x: i32, y: i32| rgb_at(rgba, width, x, y);
    let height = (rgba.len() / 4 / width) as i32;
    if !(3..=5).contains(&b.w()) || b.h() > 3 || b.y0 < 2 || b.y1 + 2 > height {
        return false;
    }
    let bg = px(b.x0, b.y0);
    // Ink between sides of one colour, and that colour above and below too: a grip mark on a
    // window's bottom handle has the handle's border lines there.
    (b.y0..b.y1)
        .all(|y| !far(px(b.x1 - 1, y), bg) && (b.x0 + 1..b.x1 - 1).any(|x| far(px(x, y), bg)))
        && (b.x0..b.x1).all(|x| !far(px(x, b.y0 - 2), bg) && !far(px(x, b.y1 + 1), bg))
}

/// A lone bar is a "-" (a lone dot a ".") only with nothing else around it for its own length:
/// the overline of a "√", a strikethrough or a stroke of an icon has ink close by.
fn alone(bar: &Rect, blobs: &[Blob]) -> bool {
    let m = bar.w.max(LONE_BAR_MARGIN);
    let around = Rect::new(bar.x - m, bar.y - m, bar.w + 2 * m, bar.h + 2 * m);
    blobs.iter().all(|b| {
        let r = Rect::new(b.x0, b.y0, b.w(), b.h());
        let inside =
            bar.x <= r.x && bar.y <= r.y && r.right() <= bar.right() && r.bottom() <= bar.bottom();
        inside || !r.intersects(&around)
    })
}

/// The least clear space (capture pixels) a lone bar needs on every side to count as a "-".
const LONE_BAR_MARGIN: i32 = 8;

/// Join pairs of specks that are the two ends of one horizontal stroke into one blob spanning
/// the stroke: the same rows, at most `MAX_BAR` apart, and one flat ink colour between them that
/// differs from what lies outside the left end. Other specks are kept as they are.
fn join_bars(rgba: &[u8], width: usize, specks: &[Blob]) -> Vec<Blob> {
    let px = |x: i32, y: i32| rgb_at(rgba, width, x, y);
    let mut used = vec![false; specks.len()];
    let mut out = Vec::with_capacity(specks.len());
    for i in 0..specks.len() {
        if used[i] {
            continue;
        }
        let a = specks[i];
        // Specks are sorted by (y0, x0): the stroke's right end is a later one on the same rows.
        let partner = (i + 1..specks.len())
            .take_while(|&j| specks[j].y0 == a.y0)
            .filter(|&j| !used[j] && specks[j].y1 == a.y1)
            .find(|&j| {
                let b = specks[j];
                if b.x0 <= a.x0 + 1 || b.x0 - a.x0 > MAX_BAR {
                    return false;
                }
                // An edge at x is a jump between x and x+1: the stroke's ink is a.x0+1 ..= b.x0.
                (a.y0..a.y1).all(|y| {
                    let ink = px(a.x0 + 1, y);
                    far(px(a.x0, y), ink) && (a.x0 + 1..=b.x0).all(|x| !far(px(x, y), ink))
                })
            });
        match partner {
            Some(j) => {
                used[j] = true;
                out.push(Blob {
                    x0: a.x0,
                    y0: a.y0,
                    x1: specks[j].x1,
                    y1: a.y1,
                });
            }
            None => out.push(a),
        }
    }
    out
}

/// The character a cluster of flat parts draws, when its arrangement says so unambiguously:
/// one bar is "-", two stacked bars of about one length are "=", a bar with a dot centred above
/// and one below, each clear of it, is "÷" (a "+" whose stem the bar's row cuts in two is not). Parts are blobs of the edge mask, so a stroke's blob is one column wider
/// on each side than its ink.
fn flat_glyph_shape(parts: &[Blob]) -> Option<char> {
    let is_bar = |b: &Blob| b.w() - 2 >= 3 * b.h() && b.w() - 2 >= 3;
    let is_dot = |b: &Blob, bar: &Blob| {
        let ink_w = (b.w() - 2).max(1);
        ink_w <= 2 * b.h() && b.h() <= 2 * ink_w && ink_w * 2 <= bar.w() - 2
    };
    let centre = |b: &Blob| b.x0 + b.x1;
    match parts {
        [bar] if is_bar(bar) && bar.h() <= 3 => Some('-'),
        [a, b] if is_bar(a) && is_bar(b) => {
            let (top, low) = if a.y0 <= b.y0 { (a, b) } else { (b, a) };
            let same_len = (top.w() - low.w()).abs() * 4 <= top.w().max(low.w());
            let aligned = (centre(top) - centre(low)).abs() <= top.w().min(low.w()) / 2;
            (same_len && aligned && low.y0 > top.y1).then_some('=')
        }
        [_, _, _] => {
            let mut p = parts.to_vec();
            p.sort_by_key(|b| b.y0);
            let (up, bar, down) = (&p[0], &p[1], &p[2]);
            let centred = |d: &Blob| (centre(d) - centre(bar)).abs() <= (bar.w() - 2) / 2;
            (is_bar(bar)
                && is_dot(up, bar)
                && is_dot(down, bar)
                && up.y1 < bar.y0
                && down.y0 > bar.y1
                && centred(up)
                && centred(down))
            .then_some('÷')
        }
        _ => None,
    }
}

/// Radius of a widget's rounded corner (at scale 2) that is cleared with its rule.
const CORNER: usize = 7;

/// Connected components of stroke runs, via union-find over runs of adjacent rows.
fn edge_blobs(rgba: &[u8], width: usize, region: Rect) -> (Vec<Blob>, Vec<Blob>) {
    let (rx, ry, rw, rh) = (
        region.x as usize,
        region.y as usize,
        region.w as usize,
        region.h as usize,
    );
    // Runs per row: (x0, x1 exclusive) in region coordinates.
    let mut runs: Vec<(u32, u32)> = Vec::new();
    let mut row_start: Vec<usize> = Vec::with_capacity(rh + 1);
    // Edge mask of the whole region first, so that vertical rules can be erased before blobs form.
    let mut mask = vec![false; rw * rh];
    for y in 0..rh {
        let row = &rgba[((ry + y) * width + rx) * 4..((ry + y) * width + rx + rw) * 4];
        let m = &mut mask[y * rw..(y + 1) * rw];
        for x in 0..rw - 1 {
            let a = &row[x * 4..x * 4 + 3];
            let b = &row[x * 4 + 4..x * 4 + 7];
            m[x] = a[0]
                .abs_diff(b[0])
                .max(a[1].abs_diff(b[1]))
                .max(a[2].abs_diff(b[2]))
                >= EDGE_THRESHOLD;
        }
    }
    let erased = if rule("vertical-rules") {
        erase_vertical_rules(&mut mask, rw, rh)
    } else {
        Vec::new()
    };
    let rules: Vec<Blob> = erased
        .into_iter()
        .map(|r| Blob {
            x0: r.x0 + rx as i32,
            y0: r.y0 + ry as i32,
            x1: r.x1 + rx as i32,
            y1: r.y1 + ry as i32,
        })
        .collect();
    for y in 0..rh {
        row_start.push(runs.len());
        let edge = &mask[y * rw..(y + 1) * rw];
        let mut x = 0;
        while x < rw {
            if !edge[x] {
                x += 1;
                continue;
            }
            let start = x;
            let mut end = x + 1; // exclusive end of the last edge pixel seen
            let mut k = x + 1;
            while k < rw && k <= end + RUN_GAP {
                if edge[k] {
                    end = k + 1;
                }
                k += 1;
            }
            // +1: an edge at x is a jump between x and x+1, so the stroke covers x+1 too.
            runs.push((start as u32, (end + 1).min(rw) as u32));
            x = end;
        }
    }
    row_start.push(runs.len());

    let mut parent: Vec<u32> = (0..runs.len() as u32).collect();
    fn find(p: &mut [u32], mut i: u32) -> u32 {
        while p[i as usize] != i {
            p[i as usize] = p[p[i as usize] as usize];
            i = p[i as usize];
        }
        i
    }
    for y in 1..rh {
        let (mut i, ie) = (row_start[y - 1], row_start[y]);
        let (mut j, je) = (row_start[y], row_start[y + 1]);
        while i < ie && j < je {
            let (a0, a1) = runs[i];
            let (b0, b1) = runs[j];
            // 8-connectivity: runs touching diagonally join.
            if a0 <= b1 && b0 <= a1 {
                let (ra, rb) = (find(&mut parent, i as u32), find(&mut parent, j as u32));
                if ra != rb {
                    parent[ra.max(rb) as usize] = ra.min(rb);
                }
            }
            if a1 < b1 {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    let mut slot: Vec<u32> = vec![u32::MAX; runs.len()];
    let mut blobs: Vec<Blob> = Vec::new();
    for y in 0..rh {
        for (r, &(x0, x1)) in runs
            .iter()
            .enumerate()
            .take(row_start[y + 1])
            .skip(row_start[y])
        {
            let root = find(&mut parent, r as u32) as usize;
            let (x0, x1, yy) = (
                x0 as i32 + rx as i32,
                x1 as i32 + rx as i32,
                (y + ry) as i32,
            );
            if slot[root] == u32::MAX {
                slot[root] = blobs.len() as u32;
                blobs.push(Blob {
                    x0,
                    y0: yy,
                    x1,
                    y1: yy + 1,
                });
            } else {
                let b = &mut blobs[slot[root] as usize];
                b.x0 = b.x0.min(x0);
                b.x1 = b.x1.max(x1);
                b.y1 = yy + 1;
            }
        }
    }
    (blobs, rules)
}

/// A blob that is a vertical rule (a border, a separator, the rounded end of a filled button or
/// chip) rather than a glyph: thin, and clearly taller than the text beside it.
fn is_rule(b: &Blob, text_h: i32) -> bool {
    // 1.8: taller than any letter of the label (ascender + descender over a median letter is ~1.5).
    is_thin(b) && b.h() as f64 > 1.8 * text_h as f64
}

/// The curved end of a pill or one side of a circle drawn around text (a badge, an avatar's
/// initials): at most half as wide as tall and over twice the letters' height, or a wide arc
/// over 1.5 times it. A bracket of the text's own font is thin and 1.5–1.9 times its x-height.
fn is_arc(b: &Blob, letter_h: i32, tall_h: i32) -> bool {
    // A pill's end is a wide arc (its radius is half its height) and may be only 1.5 times the
    // letters' height; a bracket is a thin one. The wide arc is judged against the tall
    // letter-shaped blob (`tall_h`: capitals, ascenders, letters merged in a run): beside
    // x-height letters ("v.is_empty() {") a bracket is 1.6 times their core height, and about
    // one tall letter.
    let wide = b.w() * 5 >= b.h() * 2;
    // (+4: a blob of the edge mask is a column wider than the arc's ink on each side.)
    b.w() * 2 <= b.h() + 4
        && (b.h() > 2 * letter_h || (wide && b.h() * 2 >= letter_h.max(tall_h) * 3))
}

/// The heights of `chain`'s seed-sized blobs, counting the two halves of a stem cut by a bar
/// (a "+" at scale 2: two specks one above the other) as one: halves would pass for the
/// letters' height and make every letter beside them look like a pill's end.
fn stacked_heights(chain: &[Blob]) -> Vec<i32> {
    let mut hs = Vec::new();
    let mut used = vec![false; chain.len()];
    for i in 0..chain.len() {
        if used[i] {
            continue;
        }
        let a = chain[i];
        let mut h = a.h();
        if a.h() <= PUNCT_MAX_H && a.w() <= a.h() {
            let below = (0..chain.len()).find(|&j| {
                let b = chain[j];
                !used[j]
                    && j != i
                    && b.h() <= PUNCT_MAX_H
                    && b.w() <= b.h()
                    && b.y0 >= a.y1
                    && b.y0 - a.y1 <= 2
                    && (b.x1.min(a.x1) - b.x0.max(a.x0)) * 5 >= 4 * a.w().min(b.w())
            });
            if let Some(j) = below {
                used[j] = true;
                h = chain[j].y1 - a.y0;
            }
        }
        used[i] = true;
        if h >= MIN_SEED_HEIGHT {
            hs.push(h);
        }
    }
    hs
}

/// Narrow for its height: a stroke or a border side with its rounded corners.
fn is_thin(b: &Blob) -> bool {
    b.w() <= 8.max(b.h() / 4)
}

fn median(v: &mut [i32]) -> i32 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// The widest space inside one monospace line that still joins it, in character cells: column
/// alignment in `ls -l` and `df` output pads with several spaces (measured: up to 6; `ps`
/// pads more and stays split).
const MONO_MAX_GAP_CELLS: f64 = 8.0;
/// How far (in cells) a glyph run's edge may sit from the grid of a monospace line (the
/// letters' own side bearings and anti-aliasing move it by about a pixel at 14 px).
const MONO_TOLERANCE: f64 = 0.18;
/// The fewest glyph runs that establish a pitch on their own (fewer fit some grid by chance).
const MONO_MIN_RUNS: usize = 6;
/// How many line heights above or below a line another line's grid still applies to it (a
/// terminal is one grid; a short line such as `hello` cannot show its pitch by itself).
const MONO_GRID_REACH: i32 = 8;
/// The fewest glyph runs of a piece that carry a nearby grid on to further lines.
const MONO_CARRY_RUNS: usize = 3;

/// Left and right edges of the glyph runs of a piece: the blobs tall enough to seed a label.
/// Letters of a monospace word touch and form one blob, but every blob starts where a character
/// cell does and ends where one does.
fn run_edges(blobs: &[Blob]) -> (Vec<i32>, Vec<i32>) {
    // A narrow upright glyph ("|", "(", "[", "!", "l") stands centred in its cell: its edges
    // are no cell's (measured: half as wide as tall or narrower, 4.6 points of code recall).
    let seeds = || {
        blobs
            .iter()
            .filter(|b| b.h() >= MIN_SEED_HEIGHT && b.w() * 2 > b.h())
    };
    let mut a: Vec<i32> = seeds().map(|b| b.x0).collect();
    let mut z: Vec<i32> = seeds().map(|b| b.x1).collect();
    for v in [&mut a, &mut z] {
        v.sort_unstable();
        v.dedup();
    }
    (a, z)
}

/// A monospace grid in capture pixels: the character advance, and where run starts and run
/// ends fall (each has its own offset: the letters' left and right bearings). The offsets are
/// positions near the line that showed the grid, so that an error in the pitch does not add up
/// over the whole width of the screen.
#[derive(Debug, Clone, Copy)]
struct Grid {
    pitch: f64,
    start: f64,
    end: f64,
}

/// A grid established by a line of its own: the grid, the line's box (left, top, right,
/// bottom) and its text height.
type Established = (Grid, (i32, i32, i32, i32), i32);

/// The phase that edges `xs` share: their circular mean, as a position near `xs[0]`.
fn phase(xs: &[i32], p: f64) -> f64 {
    let Some(&x0) = xs.first() else {
        return 0.0;
    };
    let (mut sx, mut sy) = (0.0, 0.0);
    for &x in xs {
        let a = std::f64::consts::TAU * ((x - x0) as f64 / p);
        sx += a.cos();
        sy += a.sin();
    }
    x0 as f64 + sy.atan2(sx) / std::f64::consts::TAU * p
}

/// How many of `xs` lie within `MONO_TOLERANCE` cells of `phase + k * p`, and their summed
/// distance from it (in cells).
fn on_grid(xs: &[i32], p: f64, phase: f64) -> (usize, f64) {
    let mut on = 0;
    let mut dev = 0.0;
    for &x in xs {
        let r = (x as f64 - phase) / p;
        let d = (r - r.round()).abs();
        dev += d;
        if d <= MONO_TOLERANCE {
            on += 1;
        }
    }
    (on, dev)
}

impl Grid {
    /// Do these runs sit on this grid: all (but one in ten) of their starts, and half of their
    /// ends? Ends are the weaker witness: a letter whose right side is a flat stroke ("F", "r",
    /// "7") ends, in the column-jump mask, where its stem does.
    fn fits(&self, edges: &(Vec<i32>, Vec<i32>)) -> bool {
        let (s, _) = on_grid(&edges.0, self.pitch, self.start);
        let (e, _) = on_grid(&edges.1, self.pitch, self.end);
        // One start may miss among five or more: a "T" or "7" starts, in the mask, at its stem.
        let n = edges.0.len();
        // Among four, one may miss when every end is on the grid (a "-" before a letter).
        let ends_all = e == edges.1.len();
        (nearly_all(s, n) || (n >= 5 && s + 1 >= n) || (n >= 4 && s + 1 >= n && ends_all))
            && e * 2 >= edges.1.len()
    }
}

/// The grid of a monospace run: nearly every run starts and ends on one grid whose pitch is a
/// plausible character advance for text `text_h` tall (0.55–1.15 of it: a monospace advance is
/// 0.6 em, capitals 0.66–0.73 em). `None` for proportional text, whose word edges fall anywhere,
/// and for runs too few to tell.
fn mono_grid(edges: &(Vec<i32>, Vec<i32>), text_h: i32) -> Option<Grid> {
    let (starts, ends) = (&edges.0, &edges.1);
    let n = starts.len();
    if n < MONO_MIN_RUNS || ends.is_empty() {
        return None;
    }
    let x0 = starts[0];
    // Coarse search over the first 24 cells or so (a pitch error adds up along a line), then a
    // least-squares pitch over every run with the cell indices the coarse pitch gives.
    let h = text_h.max(MIN_SEED_HEIGHT) as f64;
    let near = starts
        .iter()
        .take_while(|&&x| ((x - x0) as f64) < 24.0 * 1.15 * h)
        .count()
        .max(MONO_MIN_RUNS.min(n));
    let mut best: Option<(usize, f64, f64)> = None;
    let mut p = 0.55 * h;
    while p <= 1.15 * h {
        let (on, dev) = on_grid(&starts[..near], p, phase(&starts[..near], p));
        if best.is_none_or(|(bo, bd, _)| on > bo || (on == bo && dev < bd)) {
            best = Some((on, dev, p));
        }
        p += 0.04;
    }
    let (_, _, mut p) = best?;
    for _ in 0..2 {
        let k: Vec<f64> = starts
            .iter()
            .map(|&x| ((x - x0) as f64 / p).round())
            .collect();
        let m = n as f64;
        let (sk, sx) = (
            k.iter().sum::<f64>(),
            starts.iter().map(|&x| x as f64).sum::<f64>(),
        );
        let skk: f64 = k.iter().map(|v| v * v).sum();
        let skx: f64 = k.iter().zip(starts).map(|(a, &b)| a * b as f64).sum();
        let den = m * skk - sk * sk;
        if den <= 0.0 {
            return None;
        }
        p = (m * skx - sk * sx) / den;
        if !(0.5 * h..=1.2 * h).contains(&p) {
            return None;
        }
    }
    let g = Grid {
        pitch: p,
        start: phase(starts, p),
        end: phase(ends, p),
    };
    // At least twenty edges (or all of them) on the grid: a handful of words fits some grid by
    // chance.
    let (s, _) = on_grid(starts, p, g.start);
    let (e, _) = on_grid(ends, p, g.end);
    let all = n + ends.len();
    (nearly_all(s, n) && e * 10 >= ends.len() * 7 && s + e + 2 >= all.min(20)).then_some(g)
}

/// Join pieces of one monospace line that the gap rules split: a space in a monospace font is
/// a whole character cell, as wide as a word space of proportional text is not, and columns
/// are padded with several. Two pieces on one row join when the edges of both sit on one grid
/// (their own, or that of a monospace line close above or below of the same text size: a
/// terminal is one grid) and the gap between them is at most `MONO_MAX_GAP_CELLS` cells.
/// Returns each piece with its text height and whether it is monospace.
fn join_monospace(mut pieces: Vec<(Vec<Blob>, i32)>) -> Vec<(Vec<Blob>, i32, bool)> {
    let band = |p: &[Blob]| {
        p.iter().filter(|b| b.h() >= MIN_SEED_HEIGHT).fold(
            None,
            |acc: Option<(i32, i32, i32, i32)>, b| {
                Some(acc.map_or((b.x0, b.y0, b.x1, b.y1), |(x0, y0, x1, y1)| {
                    (x0.min(b.x0), y0.min(b.y0), x1.max(b.x1), y1.max(b.y1))
                }))
            },
        )
    };
    pieces.retain(|(p, _)| !p.is_empty());
    pieces.sort_by_key(|(p, _)| band(p).map_or(i32::MAX, |b| b.0));
    let bands: Vec<Option<(i32, i32, i32, i32)>> = pieces.iter().map(|(p, _)| band(p)).collect();
    let edges: Vec<(Vec<i32>, Vec<i32>)> = pieces.iter().map(|(p, _)| run_edges(p)).collect();
    let own: Vec<Option<Grid>> = pieces
        .iter()
        .zip(&edges)
        .map(|((_, h), e)| mono_grid(e, *h))
        .collect();
    // Grids established by a line of their own, with where they are and their text size.
    let mut established: Vec<Established> = own
        .iter()
        .enumerate()
        .filter_map(|(i, g)| Some(((*g)?, bands[i]?, pieces[i].1)))
        .collect();
    // Text heights of short pieces are rough (one tall "@" moves the median), so the size test
    // is the pitch's: a plausible advance for this text too.
    fn near(
        est: &[Established],
        b: (i32, i32, i32, i32),
        text_h: i32,
    ) -> impl Iterator<Item = Grid> + '_ {
        let reach = MONO_GRID_REACH * (b.3 - b.1).max(1);
        let h = text_h.max(MIN_SEED_HEIGHT) as f64;
        est.iter()
            .filter(move |(g, gb, _)| {
                (0.5 * h..=1.2 * h).contains(&g.pitch)
                    && gb.0 < b.2
                    && b.0 < gb.2
                    && gb.1 - b.3 < reach
                    && b.1 - gb.3 < reach
            })
            .map(|(g, _, _)| *g)
    }
    // A terminal pane is one grid from top to bottom: a piece of several runs that fits a
    // grid nearby carries it on to the lines beyond (a pane of short lines and padded columns
    // has few lines that show the grid by themselves).
    let mut carried = vec![false; pieces.len()];
    loop {
        let before = established.len();
        for i in 0..pieces.len() {
            let Some(b) = bands[i] else { continue };
            if own[i].is_some() || carried[i] || edges[i].0.len() < MONO_CARRY_RUNS {
                continue;
            }
            let found = near(&established, b, pieces[i].1).find(|g| g.fits(&edges[i]));
            if let Some(g) = found {
                carried[i] = true;
                established.push((g, b, pieces[i].1));
            }
        }
        if established.len() == before {
            break;
        }
    }
    let nearby = |b: (i32, i32, i32, i32), text_h: i32| near(&established, b, text_h);
    let mut used = vec![false; pieces.len()];
    let mut out = Vec::with_capacity(pieces.len());
    for i in 0..pieces.len() {
        if used[i] {
            continue;
        }
        used[i] = true;
        let (mut blobs, mut text_h) = pieces[i].clone();
        let Some(mut cur) = bands[i] else {
            out.push((blobs, text_h, false));
            continue;
        };
        let mut cur_edges = edges[i].clone();
        let mut grid = own[i];
        loop {
            // The nearest unused piece to the right on the same row, of the same text size.
            let next = (0..pieces.len())
                .filter(|&j| !used[j])
                .filter_map(|j| bands[j].map(|b| (j, b)))
                .filter(|&(j, b)| {
                    let ov = cur.3.min(b.3) - cur.1.max(b.1);
                    b.0 >= cur.2 - 1
                        && ov * 5 >= (cur.3 - cur.1).min(b.3 - b.1) * 3
                        && (pieces[j].1 - text_h).abs() * 5 <= text_h.max(pieces[j].1) * 2
                })
                .min_by_key(|&(_, b)| b.0);
            let Some((j, b)) = next else { break };
            let mut both = cur_edges.clone();
            both.0.extend(&edges[j].0);
            both.1.extend(&edges[j].1);
            both.0.sort_unstable();
            both.1.sort_unstable();
            let h = text_h.max(pieces[j].1);
            let whole = (cur.0, cur.1.min(b.1), b.2, cur.3.max(b.3));
            // Both sides must sit on the grid: the one the joined run shows, or that of a line
            // nearby, or either side's own.
            let found = mono_grid(&both, h)
                .into_iter()
                .chain(grid)
                .chain(own[j])
                .chain(nearby(whole, h))
                .find(|g| {
                    g.fits(&cur_edges)
                        && g.fits(&edges[j])
                        && ((b.0 - cur.2) as f64) <= MONO_MAX_GAP_CELLS * g.pitch
                });
            // A short piece first on its row, then a wide gap: a column of its own (the line
            // numbers in an editor's gutter), not the start of the line beside it.
            let first_on_row = || {
                !bands.iter().flatten().any(|o| {
                    o.2 <= cur.0 && cur.0 - o.2 < 8 * (cur.3 - cur.1) && o.3 > cur.1 && o.1 < cur.3
                })
            };
            // Across a wide gap (column padding) a grid that fits a side by chance is no
            // evidence: one of the two sides must show the grid by itself.
            let shown = grid.is_some() || own[j].is_some();
            // The gap as inked: the small marks around it count ("-o, --output" is one cell
            // apart although its hyphens and comma seed nothing).
            let ink_right = blobs.iter().map(|b| b.x1).max().unwrap_or(cur.2);
            let ink_left = pieces[j].0.iter().map(|b| b.x0).min().unwrap_or(b.0);
            let found = found.filter(|g| {
                let gap = (ink_left - ink_right).min(b.0 - cur.2) as f64;
                let width = (cur.2 - cur.0) as f64;
                (gap <= 1.5 * g.pitch || shown)
                    && !(gap >= 2.0 * g.pitch && width <= 4.0 * g.pitch && first_on_row())
            });
            let Some(g) = found else { break };
            used[j] = true;
            blobs.extend(pieces[j].0.iter().copied());
            cur_edges = both;
            text_h = h;
            cur = whole;
            grid = Some(g);
        }
        // A short piece alone is monospace when a nearby line's grid fits it.
        let mono = grid.is_some()
            || (cur_edges.0.len() >= 2 && nearby(cur, text_h).any(|g| g.fits(&cur_edges)));
        blobs.sort_by_key(|b| b.x0);
        out.push((blobs, text_h, mono));
    }
    out
}

/// Chain blobs left to right into labels (first pass: same baseline band, gap below a word space),
/// then split each chain at rules and at gaps measured against its own letters (second pass).
fn group_blobs(
    mut blobs: Vec<Blob>,
    rules: &[Blob],
    faint: impl Fn(&Blob) -> bool,
) -> Vec<LineBox> {
    blobs.retain(|b| b.h() <= MAX_TEXT_HEIGHT && b.w() <= 8 * MAX_TEXT_HEIGHT);
    blobs.sort_by_key(|b| (b.x0, b.y0));

    struct Open {
        blobs: Vec<Blob>,
        y0: i32,
        y1: i32,
        x1: i32,
        core_h: i32,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut chains: Vec<Vec<Blob>> = Vec::new();
    let mut loose: Vec<Blob> = Vec::new();
    for b in blobs {
        // Close labels that this blob (and every later one) is already too far right of.
        let mut k = 0;
        while k < open.len() {
            let o = &open[k];
            if (b.x0 - o.x1) as f64 > CHAIN_GAP * o.core_h.max(MIN_SEED_HEIGHT) as f64 + 1.0 {
                chains.push(open.swap_remove(k).blobs);
            } else {
                k += 1;
            }
        }
        // Join the open label whose band this blob shares most. A blob much shorter than the
        // label (but not punctuation) is text of another row or size, not part of this one.
        // A speck on equal overlap goes to the label of much smaller letters: a speck of "BL"
        // (the foot of its "L") belongs to the initials, not to the circle drawn around them.
        let mut best: Option<(usize, i32)> = None;
        for (k, o) in open.iter().enumerate() {
            let ov = b.y1.min(o.y1) - b.y0.max(o.y0);
            let need = (b.h().min(o.core_h) as f64 * 0.5).ceil() as i32;
            let gap = b.x0 - o.x1;
            let size_ok = (b.h() as f64) <= 2.2 * o.core_h as f64 + 2.0
                && (b.h() <= PUNCT_MAX_H || b.h() * 2 >= o.core_h);
            if ov >= need.max(1)
                && size_ok
                && (gap as f64) <= CHAIN_GAP * o.core_h as f64 + 1.0
                && !fenced(o.x1, b.x0, o.y0.min(b.y0), o.y1.max(b.y1), rules)
                && best.is_none_or(|(bk, bo)| {
                    ov > bo
                        || (ov == bo && b.h() < MIN_SEED_HEIGHT && o.core_h * 3 <= open[bk].core_h)
                })
            {
                best = Some((k, ov));
            }
        }
        match best {
            Some((k, _)) => {
                let o = &mut open[k];
                o.blobs.push(b);
                o.x1 = o.x1.max(b.x1);
                if b.h() >= MIN_SEED_HEIGHT {
                    o.y0 = o.y0.min(b.y0);
                    o.y1 = o.y1.max(b.y1);
                }
                let mut hs: Vec<i32> = o
                    .blobs
                    .iter()
                    .map(|b| b.h())
                    .filter(|&h| h >= MIN_SEED_HEIGHT)
                    .collect();
                // Punctuation-sized parts (the two halves of a "+" whose bar cuts its stem) must
                // not shrink the label's height, or the next letter no longer fits it.
                if hs.iter().any(|&h| h > PUNCT_MAX_H) {
                    hs.retain(|&h| h > PUNCT_MAX_H);
                }
                o.core_h = median(&mut hs).max(MIN_SEED_HEIGHT);
            }
            None => {
                // Specks seen before any label could take them wait here: the left arm of a
                // leading "+" or a leading "-" comes before the first letter of its label.
                loose.retain(|s| s.x1 >= b.x0 - LEAD_SPAN);
                if b.h() >= 3 {
                    let mut blobs: Vec<Blob> = Vec::new();
                    // A leading "-" at scale 2 is two end specks 3 px tall: the first opened a
                    // label of its own, too short for this letter to join. Specks only, just
                    // before it in its band: they lead it.
                    // (It may have been closed already: its ends are far apart for its height.)
                    if b.h() >= MIN_SEED_HEIGHT {
                        let leads = |specks: &[Blob]| {
                            specks.iter().all(|s| {
                                let cy = (s.y0 + s.y1) / 2;
                                s.h() < MIN_SEED_HEIGHT
                                    && cy >= b.y0
                                    && cy < b.y1
                                    && s.x1 >= b.x0 - LEAD_SPAN
                                    && s.x1 <= b.x0
                            })
                        };
                        while let Some(k) = open.iter().position(|o| leads(&o.blobs)) {
                            blobs.extend(open.swap_remove(k).blobs);
                        }
                        // Only the last few closed: blobs come left to right.
                        let recent = chains.len().saturating_sub(8);
                        while let Some(k) = chains[recent..].iter().rposition(|c| leads(c)) {
                            blobs.extend(chains.swap_remove(recent + k));
                        }
                    }
                    loose.retain(|s| {
                        let cy = (s.y0 + s.y1) / 2;
                        let leads = cy >= b.y0 && cy < b.y1 && s.x0 < b.x0;
                        if leads {
                            blobs.push(*s);
                        }
                        !leads
                    });
                    blobs.push(b);
                    open.push(Open {
                        blobs,
                        y0: b.y0,
                        y1: b.y1,
                        x1: b.x1,
                        core_h: b.h(),
                    });
                } else {
                    loose.push(b);
                }
            }
        }
    }
    chains.extend(open.into_iter().map(|o| o.blobs));

    let mut out = Vec::new();
    let mut pieces: Vec<(Vec<Blob>, i32)> = Vec::new();
    for chain in chains {
        let mut hs: Vec<i32> = chain
            .iter()
            .map(|b| b.h())
            .filter(|&h| h >= MIN_SEED_HEIGHT)
            .collect();
        let text_h = median(&mut hs);
        if text_h < MIN_SEED_HEIGHT {
            continue;
        }
        // Rules are judged against the letters, not the median blob: with a button's two sides
        // in a two-letter label ("OK") half the blobs are sides. Blobs over 1.5 times the lower
        // quartile (sides, pill ends) are left out of the letters' height.
        let rule_h = {
            let mut hs = stacked_heights(&chain);
            hs.sort_unstable();
            let lq = hs[hs.len() / 4];
            let mut core: Vec<i32> = hs.iter().copied().filter(|&h| h * 2 <= lq * 3).collect();
            median(&mut core).max(MIN_SEED_HEIGHT)
        };
        // Gaps are judged against the letter height (upper quartile: capitals and ascenders,
        // which nearly every label has), not the median blob, which at scale 2 is often an
        // x-height letter and would cut "Mar 3, 2024" at its word spaces.
        let letters: Vec<i32> = hs
            .iter()
            .copied()
            .filter(|&h| h as f64 <= 1.8 * text_h as f64)
            .collect();
        let letter_h = letters
            .get(letters.len() * 3 / 4)
            .copied()
            .unwrap_or(text_h)
            .max(text_h);
        // The tallest letter-shaped blob (wider than an arc can be): a bracket is about as tall,
        // a pill's end is much taller than anything inside it.
        let tall_h = chain
            .iter()
            .filter(|b| b.w() * 2 > b.h() + 4 && b.h() as f64 <= 1.8 * text_h as f64)
            .map(|b| b.h())
            .max()
            .unwrap_or(0);
        // Second pass: rules (borders, fill edges) end a label and belong to none; a gap wider
        // than a word space of *this* text ends it too.
        let mut part: Vec<Blob> = Vec::new();
        let mut parts: Vec<Vec<Blob>> = Vec::new();
        let mut leading: Vec<Blob> = Vec::new();
        for b in chain {
            // A faint stroke taller than the letters is a button's border, however short.
            let border = is_thin(&b) && b.h() * 2 >= rule_h * 3 && faint(&b);
            if is_rule(&b, rule_h) || is_arc(&b, rule_h, tall_h) || border {
                // The far half of a circle around initials starts inside them (blobs come in
                // order of their left edge): it ends nothing, what it encloses goes on.
                if !part.iter().any(|p| p.x1 > b.x0 && p.h() >= MIN_SEED_HEIGHT) {
                    parts.push(std::mem::take(&mut part));
                    leading.clear();
                }
                continue;
            }
            let glyph_band = part.iter().filter(|p| p.h() >= MIN_SEED_HEIGHT).fold(
                None,
                |acc: Option<(i32, i32)>, p| {
                    Some(acc.map_or((p.y0, p.y1), |(a, z)| (a.min(p.y0), z.max(p.y1))))
                },
            );
            if b.h() < MIN_SEED_HEIGHT {
                // A speck belongs to the label only inside its letters' band (a full stop, a
                // dot of an i); rounded button corners above and below would bridge two labels.
                // Before the first letter that band is not known yet: the speck waits for it.
                let cy = (b.y0 + b.y1) / 2;
                // A short upright stroke level with the letters' middle is a chip's rounded
                // end showing through, not punctuation (a "." or "," sits low, a "-" is flat).
                let upright = |(a, z): (i32, i32)| {
                    b.h() >= 2 * b.w()
                        && b.h() >= 3
                        && cy >= a + (z - a) / 4
                        && cy < z - (z - a) / 4
                };
                match glyph_band {
                    Some(band) if upright(band) => {}
                    Some((a, z)) if cy >= a && cy < z => part.push(b),
                    // A comma hangs from the baseline: its top inside the band, the rest
                    // below it, not far.
                    Some((a, z)) if b.y0 > a && b.y0 < z - 1 && b.y1 <= z + (z - a) / 2 => {
                        part.push(b)
                    }
                    Some(_) => {}
                    None => leading.push(b),
                }
                continue;
            }
            if let Some(x1) = part.iter().map(|p| p.x1).max() {
                if (b.x0 - x1) as f64 > LABEL_GAP * letter_h as f64 + 1.0 {
                    parts.push(std::mem::take(&mut part));
                }
            }
            if !part.iter().any(|p| p.h() >= MIN_SEED_HEIGHT) {
                // Only specks in the middle of the first letter's height: one at its top or
                // bottom is the end of that letter's own bar (the top of a "7"), already read
                // with it, while a leading "+" or "-" sits in the middle.
                let gap = LABEL_GAP * letter_h as f64 + 1.0;
                let (mid0, mid1) = (b.y0 + b.h() / 4, b.y1 - b.h() / 4);
                // Flat ones only (the arm of a "+", a "-"): an upright one is a chip's end. A
                // stroke reaches the mask as its two end specks, upright each: level specks
                // a letter or less apart are one flat stroke.
                let bar_of = |s: &Blob| {
                    leading.iter().fold(*s, |u, o| {
                        let level = (o.y0 - s.y0).abs() <= 1 && (o.y1 - s.y1).abs() <= 1;
                        let near = (o.x0 - s.x1).max(s.x0 - o.x1) <= letter_h;
                        if level && near {
                            Blob {
                                x0: u.x0.min(o.x0),
                                x1: u.x1.max(o.x1),
                                ..u
                            }
                        } else {
                            u
                        }
                    })
                };
                let bars: Vec<Blob> = leading.iter().map(bar_of).collect();
                part.extend(leading.drain(..).zip(bars).filter_map(|(s, bar)| {
                    let cy = (s.y0 + s.y1) / 2;
                    (cy >= mid0
                        && cy < mid1
                        && (b.x0 - bar.x1) as f64 <= gap
                        && bar.h() < 2 * bar.w())
                    .then_some(s)
                }));
            }
            leading.clear();
            part.push(b);
        }
        parts.push(part);
        pieces.extend(parts.into_iter().map(|p| (p, text_h)));
    }
    let joined = join_monospace(pieces);
    // The two curved ends of a pill or the two halves of a circle, chained on their own because
    // the text between them is much shorter, are the container's outline: not a label.
    let seed_box = |p: &[Blob]| {
        p.iter()
            .filter(|b| b.h() >= MIN_SEED_HEIGHT)
            .fold(None, |acc: Option<Rect>, b| {
                let r = Rect::new(b.x0, b.y0, b.w(), b.h());
                Some(acc.map_or(r, |a| a.union(&r)))
            })
    };
    let boxes: Vec<Option<Rect>> = joined.iter().map(|(p, _, _)| seed_box(p)).collect();
    let outline = |i: usize| {
        let seeds: Vec<&Blob> = joined[i]
            .0
            .iter()
            .filter(|b| b.h() >= MIN_SEED_HEIGHT)
            .collect();
        let Some(o) = boxes[i] else { return false };
        seeds.len() == 2
            && seeds.iter().all(|b| b.w() * 2 <= b.h() + 2)
            && boxes.iter().enumerate().any(|(j, r)| {
                j != i
                    && r.is_some_and(|r| {
                        r.x >= o.x && r.right() <= o.right() && r.y > o.y && r.bottom() < o.bottom()
                    })
            })
    };
    let outlines: Vec<bool> = (0..joined.len()).map(outline).collect();
    for (i, (p, text_h, mono)) in joined.into_iter().enumerate() {
        if outlines[i] {
            continue;
        }
        let mut r = Rect::default();
        for b in &p {
            if b.h() >= MIN_SEED_HEIGHT || p.len() <= 3 {
                r = r.union(&Rect::new(b.x0, b.y0, b.w(), b.h()));
            } else {
                // Punctuation widens the box but must not stretch it vertically.
                r = r.union(&Rect::new(b.x0, r.y.max(b.y0).min(b.y1 - 1), b.w(), 1));
            }
        }
        // A tiny speck is not a label, nor is a lone vertical line.
        if r.w < 3 || r.h < MIN_SEED_HEIGHT || r.h > MAX_TEXT_HEIGHT {
            continue;
        }
        if p.len() == 1 && is_thin(&p[0]) && r.h >= 20 && r.h >= 5 * r.w {
            continue;
        }
        // Only tall thin strokes (the sides of buttons stacked in a grid): borders, not text.
        if r.h > 24 && p.iter().all(|b| is_thin(b) || b.h() < MIN_SEED_HEIGHT) {
            continue;
        }
        out.push(LineBox {
            rect: r,
            text_h,
            glyph: None,
            mono,
        });
    }
    out.sort_by_key(|l| (l.rect.y, l.rect.x));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paint black rectangles ("glyphs") on a white RGBA canvas.
    fn canvas(w: u32, h: u32, glyphs: &[Rect], bg: [u8; 3], fg: [u8; 3]) -> Vec<u8> {
        let mut px = Vec::with_capacity((w * h * 4) as usize);
        for _ in 0..w * h {
            px.extend_from_slice(&[bg[0], bg[1], bg[2], 255]);
        }
        for g in glyphs {
            for y in g.y..g.bottom() {
                for x in g.x..g.right() {
                    let i = ((y as u32 * w + x as u32) * 4) as usize;
                    px[i..i + 3].copy_from_slice(&fg);
                }
            }
        }
        px
    }

    /// A word of `n` 6x10 glyphs with 2 px letter gaps starting at x.
    fn word(x: i32, y: i32, n: i32) -> Vec<Rect> {
        (0..n).map(|i| Rect::new(x + i * 8, y, 6, 10)).collect()
    }

    #[test]
    fn faint_button_sides_keep_two_buttons_apart() {
        // Two buttons side by side, 18 px tall around 10 px letters of a proportional font,
        // their sides a pale grey.
        let letters = |x0: i32, widths: &[i32]| {
            let mut x = x0;
            widths
                .iter()
                .map(|&w| {
                    let r = Rect::new(x, 24, w, 10);
                    x += w + 2;
                    r
                })
                .collect::<Vec<_>>()
        };
        let text = [letters(20, &[7, 4, 6, 9]), letters(76, &[5, 8, 6, 4, 7])].concat();
        let mut px = canvas(160, 60, &text, [255; 3], [20; 3]);
        let sides = [12, 58, 68, 118].map(|x| Rect::new(x, 20, 2, 18));
        for r in &sides {
            for y in r.y..r.bottom() {
                for x in r.x..r.right() {
                    let i = ((y * 160 + x) * 4) as usize;
                    px[i..i + 3].copy_from_slice(&[215; 3]);
                }
            }
        }
        let lines = find_lines(&px, 160, 60, Rect::new(0, 0, 160, 60));
        let rects: Vec<Rect> = lines.iter().map(|l| l.rect).collect();
        assert_eq!(
            rects,
            vec![Rect::new(19, 24, 34, 10), Rect::new(75, 24, 40, 10)]
        );
    }

    #[test]
    fn the_halves_of_a_cut_stem_count_as_one_height() {
        let b = |x0, y0, w, h| Blob {
            x0,
            y0,
            x1: x0 + w,
            y1: y0 + h,
        };
        // "Ctrl+H" at scale 2: the "+" stem cut by its bar into two specks.
        let chain = [
            b(0, 0, 40, 19),
            b(43, 4, 4, 6),
            b(43, 11, 4, 5),
            b(49, 1, 8, 17),
        ];
        assert_eq!(stacked_heights(&chain), vec![19, 12, 17]);
        // A colon's dots are apart: two specks, not one stem.
        let colon = [b(0, 0, 8, 14), b(10, 3, 2, 2), b(10, 9, 2, 2)];
        assert_eq!(stacked_heights(&colon), vec![14]);
    }

    #[test]
    fn flat_stroke_glyphs_alone_become_labels_named_by_their_shape() {
        let bg = [255, 255, 255];
        let fg = [0, 0, 0];
        let full = |g: &[Rect]| {
            let px = canvas(200, 100, g, bg, fg);
            find_lines(&px, 200, 100, Rect::new(0, 0, 200, 100))
        };
        let glyphs = |g: &[Rect]| full(g).iter().map(|l| l.glyph).collect::<Vec<_>>();
        // A bitmap "=": two 6x1 bars, two rows apart, alone on a key; and the same with the
        // longer bars and narrower gap of a 17 px font.
        let eq = [Rect::new(100, 50, 6, 1), Rect::new(100, 53, 6, 1)];
        let lines = full(&eq);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].rect.contains(Rect::new(101, 50, 4, 4).centre()));
        assert_eq!(lines[0].glyph, Some('='));
        assert_eq!(
            glyphs(&[Rect::new(100, 50, 8, 1), Rect::new(100, 53, 8, 1)]),
            [Some('=')]
        );
        // A lone bar with clear space around it is a "-"; one with ink close by is not.
        assert_eq!(glyphs(&[Rect::new(100, 50, 4, 1)]), [Some('-')]);
        assert!(full(&[Rect::new(100, 50, 16, 1), Rect::new(96, 56, 2, 9)])
            .iter()
            .all(|l| l.glyph != Some('-')));
        // A lone dot is a "."; the end of a rule, whose stroke goes on to one side, is not.
        assert_eq!(glyphs(&[Rect::new(100, 50, 2, 2)]), [Some('.')]);
        assert!(full(&[Rect::new(100, 50, 60, 2)]).is_empty());
        // "÷": a bar with a dot above and below, each clear of it.
        let div = [
            Rect::new(100, 50, 1, 2),
            Rect::new(96, 54, 9, 1),
            Rect::new(100, 57, 1, 2),
        ];
        assert_eq!(glyphs(&div), [Some('÷')]);
        // A "+" whose arm's row cuts its 4 px stem in two is no "÷": it is left to Tesseract.
        let plus = [
            Rect::new(99, 50, 2, 4),
            Rect::new(96, 54, 8, 1),
            Rect::new(99, 55, 2, 4),
        ];
        assert!(full(&plus).iter().all(|l| l.glyph != Some('÷')));
        // Next to a word, the bars are that label's business, not a label of their own.
        let mut g = word(60, 46, 4);
        g.extend(eq);
        let lines = full(&g);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].glyph, None);
    }

    #[test]
    fn a_bar_over_two_legs_is_pi_and_its_lookalikes_are_not() {
        let bg = [255, 255, 255];
        let fg = [0, 0, 0];
        let glyph = |g: &[Rect]| {
            let px = canvas(60, 40, g, bg, fg);
            find_lines(&px, 60, 40, Rect::new(0, 0, 60, 40))
                .iter()
                .map(|l| l.glyph)
                .collect::<Vec<_>>()
        };
        // π: an 8 px bar, legs hanging from inside its ends.
        let pi = [
            Rect::new(20, 10, 9, 1),
            Rect::new(22, 11, 1, 7),
            Rect::new(26, 11, 1, 7),
        ];
        assert_eq!(glyph(&pi), [Some('π')]);
        // "T" (one leg), "П" (legs at the bar's ends), "m"-like (three legs).
        let t = [Rect::new(20, 10, 9, 1), Rect::new(24, 11, 1, 7)];
        let pe = [
            Rect::new(20, 10, 9, 1),
            Rect::new(20, 11, 1, 7),
            Rect::new(28, 11, 1, 7),
        ];
        let three = [
            Rect::new(20, 10, 9, 1),
            Rect::new(21, 11, 1, 7),
            Rect::new(24, 11, 1, 7),
            Rect::new(27, 11, 1, 7),
        ];
        for g in [&t[..], &pe, &three] {
            assert!(glyph(g).iter().all(|c| *c != Some('π')), "{g:?}");
        }
        // Ink too faint to judge (an edge, but under the ink threshold): no π, and no panic.
        let px = canvas(60, 40, &pi, bg, [225, 225, 225]);
        assert!(find_lines(&px, 60, 40, Rect::new(0, 0, 60, 40))
            .iter()
            .all(|l| l.glyph != Some('π')));
    }

    #[test]
    fn a_speck_before_the_first_letter_leads_its_label() {
        // A "+" drawn as a 7x1 arm over a 1 px stem that the arm's row cuts in two, then a 6x10
        // letter: the arm's left end comes before any letter and still belongs to the label.
        let g = [
            Rect::new(23, 12, 1, 3),
            Rect::new(20, 15, 7, 1),
            Rect::new(23, 16, 1, 3),
            Rect::new(30, 10, 6, 10),
        ];
        let px = canvas(80, 30, &g, [255; 3], [0; 3]);
        let lines = find_lines(&px, 80, 30, Rect::new(0, 0, 80, 30));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].rect.x <= 20, "{lines:?}");
    }

    #[test]
    fn a_leading_hyphen_at_scale_two_leads_its_label() {
        // "-rw" at scale 2 as measured: a 10x3 hyphen (its end specks 3 px tall), a 7 px gap,
        // then letters 16 px tall.
        let g = [
            Rect::new(23, 17, 10, 3),
            Rect::new(40, 10, 12, 16),
            Rect::new(54, 10, 12, 16),
        ];
        let px = canvas(100, 40, &g, [255; 3], [0; 3]);
        let lines = find_lines(&px, 100, 40, Rect::new(0, 0, 100, 40));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].rect.x <= 23, "{lines:?}");
    }

    #[test]
    fn a_drawn_border_between_two_keys_separates_them_whatever_the_gap() {
        // Two keys of a keypad, their labels a word space apart (6 px), a 1 px border between
        // them from the top of the keypad to its bottom: two labels. Without the border, one.
        let prop = |x0: i32| {
            let mut x = x0;
            [7, 5, 6]
                .iter()
                .map(|&w| {
                    let r = Rect::new(x, 20, w, 10);
                    x += w + 2;
                    r
                })
                .collect::<Vec<Rect>>()
        };
        let mut g = prop(10);
        let end = g.last().unwrap().right();
        g.extend(prop(end + 6));
        let plain = canvas(120, 50, &g, [255; 3], [0; 3]);
        assert_eq!(
            find_lines(&plain, 120, 50, Rect::new(0, 0, 120, 50)).len(),
            1
        );
        let mut with_border = g.clone();
        with_border.push(Rect::new(end + 3, 2, 1, 46));
        let px = canvas(120, 50, &with_border, [255; 3], [0; 3]);
        let lines = find_lines(&px, 120, 50, Rect::new(0, 0, 120, 50));
        let rects: Vec<Rect> = lines.iter().map(|l| l.rect).collect();
        assert_eq!(rects.len(), 2, "{rects:?}");
        assert!(
            rects.iter().all(|r| r.right() <= end + 3 || r.x >= end + 4),
            "{rects:?}"
        );
    }

    #[test]
    fn words_with_word_spaces_are_one_label_wide_gaps_split() {
        // "File Edit" (space 4 px) then a 30 px gap, then "View", in a proportional font:
        // letters of unequal widths (equal cells side by side would be monospace, whose
        // spaces join across 30 px).
        let prop = |x0: i32| {
            let mut x = x0;
            [7, 3, 4, 6]
                .iter()
                .map(|&w| {
                    let r = Rect::new(x, 10, w, 10);
                    x += w + 2;
                    r
                })
                .collect::<Vec<Rect>>()
        };
        let mut g = prop(10);
        g.extend(prop(10 + 28 + 4));
        g.extend(prop(10 + 28 + 4 + 28 + 30));
        let px = canvas(300, 40, &g, [255; 3], [0; 3]);
        let lines = find_lines(&px, 300, 40, Rect::new(0, 0, 300, 40));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!((lines[0].rect.x - 10).abs() <= 1, "{lines:?}");
        assert!(
            lines[0].rect.right() >= 10 + 28 + 4 + 26
                && lines[0].rect.right() <= 10 + 28 + 4 + 28 + 2,
            "{lines:?}"
        );
        assert!((lines[1].rect.x - (10 + 28 + 4 + 28 + 30)).abs() <= 1);
    }

    #[test]
    fn polarity_and_colour_do_not_matter() {
        let g = word(20, 5, 3);
        for (bg, fg) in [
            ([255; 3], [0; 3]),
            ([30; 3], [230; 3]),
            ([40, 110, 220], [255; 3]),
        ] {
            let px = canvas(100, 20, &g, bg, fg);
            let lines = find_lines(&px, 100, 20, Rect::new(0, 0, 100, 20));
            assert_eq!(lines.len(), 1, "bg {bg:?}");
        }
    }

    #[test]
    fn separate_rows_are_separate_labels_and_rules_are_dropped() {
        let mut g = word(10, 10, 3);
        g.extend(word(10, 30, 3));
        g.push(Rect::new(4, 0, 1, 60)); // a vertical separator
        let px = canvas(100, 60, &g, [255; 3], [0; 3]);
        let lines = find_lines(&px, 100, 60, Rect::new(0, 0, 100, 60));
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines.iter().all(|l| l.rect.x >= 9 && l.rect.h <= 12),
            "{lines:?}"
        );
    }

    #[test]
    fn region_restricts_and_empty_inputs_are_fine() {
        let g = word(10, 10, 3);
        let px = canvas(100, 40, &g, [255; 3], [0; 3]);
        assert!(find_lines(&px, 100, 40, Rect::new(50, 0, 50, 40)).is_empty());
        assert!(find_lines(&px, 100, 40, Rect::new(0, 0, 0, 0)).is_empty());
        assert!(find_lines(&px, 100, 40, Rect::new(90, 30, 500, 500)).is_empty());
        let blank = canvas(64, 64, &[], [200; 3], [0; 3]);
        assert!(find_lines(&blank, 64, 64, Rect::new(0, 0, 64, 64)).is_empty());
    }
}
