//! Reads a doubtful character of a monospace line the way the screen's other copies of the same glyph were read ("ls -1" beside "lines.rs": that glyph is an "l").
//!
//! Tesseract reads each strip alone, so a glyph it cannot tell from a look-alike ("l" and "1",
//! "0" and "O" or "6", "v" and "V") is guessed from the few characters around it. A terminal or
//! an editor draws every copy of a character with one font at one size, the same at each of
//! the few sub-pixel positions the renderer places glyphs at. So every glyph of the screen's monospace lines gets a signature (its box's ink on a
//! small grid, with the box's size and height over the baseline), and a glyph read as one
//! character whose twins were mostly read as a look-alike takes the look-alike.
//!
//! Only look-alikes change (a set per kind of confusion), only when the twins outvote the
//! glyph's own reading two to one and at least three twins agree: a lone misreading in a line
//! of its own font loses, a font with few copies of a glyph changes nothing.
//!
//! The rules beyond the vote: two rounds, each from Tesseract's reading; no change that makes a
//! letter between letters a digit or back; a word Tesseract doubted is read by its glyphs' twins
//! when all of them agree.

use std::collections::HashMap;

use image::GrayImage;

use super::engine::Glyph;

/// The grid a glyph's ink is sampled on: one `u16` per row.
const SIG_W: usize = 16;
const SIG_H: usize = 24;
/// Grid cells two signatures of one glyph may differ in (of 384): the edges of anti-aliased
/// strokes fall either side of the threshold as the strip's scale moves them (measured: a
/// dotted zero and its twins differ in up to 64, all of them edge cells; strays tell glyphs
/// apart).
const MAX_BITS: u32 = 64;
/// Cells of ink with no ink of the other glyph beside them (see `Shape::distance`).
const MAX_STRAY: u32 = 1;
/// Twins that must agree, and by how much they must outnumber the glyph's own reading.
const MIN_VOTES: usize = 3;
const MAJORITY: usize = 2;

/// Characters Tesseract takes for one another on screen; only within a set does a vote change
/// a reading (besides upper and lower case of one letter). No x-height letter beside a tall
/// glyph ("o" with "0"): their boxes differ, so only a misread box could make them twins.
const LOOK_ALIKES: &[&str] = &[
    "0O@Q6D9",
    "1lI|!itjL",
    "5S$",
    "2Z",
    "8B3",
    "-~_",
    ".,",
    ":;",
];

/// A glyph's appearance: ink on a `SIG_W`×`SIG_H` grid stretched over its box, and the box's
/// width, height and top over the baseline in capture pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// One row per `u16`, bit x set where cell x is ink.
    rows: [u16; SIG_H],
    /// The same rows four to a word, and grown (see `distance`).
    packed: [u64; SIG_H / 4],
    grown: [u64; SIG_H / 4],
    w: f32,
    h: f32,
    top: f32,
}

impl Shape {
    /// The shape of glyph `g` of a strip (`gray`, dark ink on white) whose baseline is at `base`
    /// and which was scaled by `scale` from capture pixels. None for an empty box.
    pub fn of(gray: &GrayImage, g: &Glyph, base: i32, scale: f64) -> Option<Shape> {
        let (x0, y0) = (g.x0.max(0), g.y0.max(0));
        let (x1, y1) = (
            g.x1.min(gray.width() as i32),
            g.y1.min(gray.height() as i32),
        );
        let (bw, bh) = (x1 - x0, y1 - y0);
        if bw <= 0 || bh <= 0 {
            return None;
        }
        // Each cell's ink at its centre, interpolated between the four pixels around it.
        let (raw, stride) = (gray.as_raw(), gray.width() as usize);
        let px = |x: i32, y: i32| 255.0 - raw[y as usize * stride + x as usize] as f32;
        let mut rows = [0u16; SIG_H];
        for (cy, row) in rows.iter_mut().enumerate() {
            let fy = y0 as f32 + (cy as f32 + 0.5) * bh as f32 / SIG_H as f32 - 0.5;
            let ya = (fy.floor() as i32).clamp(y0, y1 - 1);
            let yb = (ya + 1).min(y1 - 1);
            let ty = (fy - ya as f32).clamp(0.0, 1.0);
            for cx in 0..SIG_W {
                let fx = x0 as f32 + (cx as f32 + 0.5) * bw as f32 / SIG_W as f32 - 0.5;
                let xa = (fx.floor() as i32).clamp(x0, x1 - 1);
                let xb = (xa + 1).min(x1 - 1);
                let tx = (fx - xa as f32).clamp(0.0, 1.0);
                let top = px(xa, ya) * (1.0 - tx) + px(xb, ya) * tx;
                let bottom = px(xa, yb) * (1.0 - tx) + px(xb, yb) * tx;
                if top * (1.0 - ty) + bottom * ty > 127.5 {
                    *row |= 1 << cx;
                }
            }
        }
        let s = scale as f32;
        Some(Shape {
            rows,
            packed: pack(&rows),
            // Grown by a pixel of the strip up and down: a flat glyph (a "-" 3 px tall) is
            // stretched over many rows, and its edges move by as many. Across, by a cell: the
            // width of a thin glyph's foot tells "1" from "l".
            grown: pack(&grow(
                &rows,
                ((SIG_H as f32 / bh as f32).round() as usize).max(1),
            )),
            w: bw as f32 / s,
            h: bh as f32 / s,
            top: (base - y0) as f32 / s,
        })
    }

    /// How many cells differ, and how many of those have no ink of the other glyph beside
    /// them either: a stroke drawn a cell wider is no stray, a dot or a flag the other lacks is.
    fn distance(&self, o: &Shape) -> (u32, u32) {
        let (mut differ, mut stray) = (0, 0);
        for k in 0..SIG_H / 4 {
            differ += (self.packed[k] ^ o.packed[k]).count_ones();
            stray += (self.packed[k] & !o.grown[k]).count_ones()
                + (o.packed[k] & !self.grown[k]).count_ones();
        }
        (differ, stray)
    }

    /// Is `o` the same glyph drawn again? Same box to within a pixel of the capture (a little
    /// more for big text) and nearly the same ink.
    fn twin(&self, o: &Shape) -> bool {
        let tol = 0.9f32.max(0.06 * self.h.max(o.h));
        (self.w - o.w).abs() <= tol
            && (self.h - o.h).abs() <= tol
            && (self.top - o.top).abs() <= tol
            && {
                let (differ, stray) = self.distance(o);
                differ <= MAX_BITS && stray <= MAX_STRAY
            }
    }
}

/// Each row's ink grown by a cell left and right and `gy` cells up and down.
fn grow(r: &[u16; SIG_H], gy: usize) -> [u16; SIG_H] {
    let wide = r.map(|v| v | v << 1 | v >> 1);
    let mut g = [0u16; SIG_H];
    for (y, out) in g.iter_mut().enumerate() {
        let (lo, hi) = (y.saturating_sub(gy), (y + gy).min(SIG_H - 1));
        *out = wide[lo..=hi].iter().fold(0, |a, &v| a | v);
    }
    g
}

fn pack(r: &[u16; SIG_H]) -> [u64; SIG_H / 4] {
    let mut p = [0u64; SIG_H / 4];
    for (y, &v) in r.iter().enumerate() {
        p[y / 4] |= (v as u64) << (16 * (y % 4));
    }
    p
}

/// Could Tesseract have read `a` for `b`?
fn look_alike(a: char, b: char) -> bool {
    a != b
        && ((a.is_alphabetic() && a.to_lowercase().eq(b.to_lowercase()))
            || LOOK_ALIKES
                .iter()
                .any(|set| set.contains(a) && set.contains(b)))
}

/// For each glyph of `all` (its shape and the character it reads as now), the character its
/// twins elsewhere on screen outvote `own[i]`, what Tesseract read it as, with, if any.
pub fn vote(all: &[(Shape, char)], own: &[char]) -> Vec<Option<char>> {
    // A screen repeats a few hundred shapes thousands of times: glyphs drawn alike (same ink,
    // same box to a quarter of a pixel) are one group with a count per reading.
    let quarter = |v: f32| (v * 4.0).round() as i32;
    let mut index: HashMap<([u16; SIG_H], i32, i32, i32), usize> = HashMap::new();
    let mut groups: Vec<(Shape, Vec<(char, usize)>)> = Vec::new();
    let mut group_of = Vec::with_capacity(all.len());
    for (shape, ch) in all {
        let key = (
            shape.rows,
            quarter(shape.w),
            quarter(shape.h),
            quarter(shape.top),
        );
        let g = *index.entry(key).or_insert_with(|| {
            groups.push((*shape, Vec::new()));
            groups.len() - 1
        });
        add(&mut groups[g].1, *ch, 1);
        group_of.push(g);
    }
    // Groups binned by height and top to the pixel, so each one's twins are looked for in the
    // nine bins around its own (the tolerance is under a pixel up to 15 px tall glyphs).
    let bin = |sh: &Shape| (sh.h.round() as i32, sh.top.round() as i32);
    let mut bins: HashMap<(i32, i32), Vec<usize>> = HashMap::new();
    for (gi, (shape, _)) in groups.iter().enumerate() {
        bins.entry(bin(shape)).or_default().push(gi);
    }
    let reach = |sh: &Shape| ((0.06 * sh.h).ceil() as i32).max(1);
    // Every reading of each group and of its twins.
    let tallies: Vec<Vec<(char, usize)>> = groups
        .iter()
        .enumerate()
        .map(|(gi, (shape, own))| {
            let mut t = own.clone();
            let (bh, bt) = bin(shape);
            let r = reach(shape);
            for dh in -r..=r {
                for dt in -r..=r {
                    for &gj in bins.get(&(bh + dh, bt + dt)).into_iter().flatten() {
                        if gj != gi && shape.twin(&groups[gj].0) {
                            for &(c, n) in &groups[gj].1 {
                                add(&mut t, c, n);
                            }
                        }
                    }
                }
            }
            t
        })
        .collect();
    all.iter()
        .zip(&group_of)
        .zip(own)
        .map(|(((_, now), &g), ch)| {
            // The twins' readings, this glyph's own aside.
            let mut t = tallies[g].clone();
            if let Some(e) = t.iter_mut().find(|(k, _)| k == now) {
                e.1 -= 1;
            }
            // Its own reading counts once for itself and once per twin read alike.
            let mine = t.iter().find(|(k, _)| k == ch).map_or(0, |e| e.1) + 1;
            let (best, n) = t
                .iter()
                .filter(|(k, _)| k != ch)
                .max_by_key(|(_, n)| *n)
                .copied()?;
            (n >= MIN_VOTES && n >= MAJORITY * mine && look_alike(*ch, best)).then_some(best)
        })
        .collect()
}

fn add(counts: &mut Vec<(char, usize)>, c: char, n: usize) {
    match counts.iter_mut().find(|(k, _)| *k == c) {
        Some(e) => e.1 += n,
        None => counts.push((c, n)),
    }
}

/// What a glyph reads as by its twins alone: the reading nearly all of them share (at least
/// `MIN_VOTES` twins, nine in ten), if any.
pub fn read_by_twins(shape: &Shape, bank: &[(Shape, char)]) -> Option<char> {
    let mut counts = Vec::new();
    for (o, c) in bank {
        if shape.twin(o) {
            add(&mut counts, *c, 1);
        }
    }
    let total: usize = counts.iter().map(|e| e.1).sum();
    let (best, n) = counts.into_iter().max_by_key(|e| e.1)?;
    (n >= MIN_VOTES && n * 10 >= total * 9).then_some(best)
}

/// May the `i`th character of a word, read as `was`, become what it was voted (`word[i]`)? A
/// letter between two letters stays a letter and a digit between two digits a digit:
/// Tesseract's systematic misreading of one glyph ("TODO" read "T0D0" on every line) outvotes
/// the few right readings of its twins.
pub fn fits_word(word: &[char], i: usize, was: char) -> bool {
    let c = word[i];
    let (prev, next) = (i.checked_sub(1).map(|p| word[p]), word.get(i + 1).copied());
    let both = |f: fn(&char) -> bool| prev.as_ref().is_some_and(f) && next.as_ref().is_some_and(f);
    !(was.is_alphabetic() && c.is_ascii_digit() && both(|c| c.is_alphabetic())
        || was.is_ascii_digit() && c.is_alphabetic() && both(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shape drawn from rows of '#' and '.', its box `w`×`h` at `top` over the baseline.
    fn shape(rows: &[&str], w: f32, h: f32, top: f32) -> Shape {
        let mut img = GrayImage::from_pixel(SIG_W as u32, SIG_H as u32, image::Luma([255]));
        for (y, r) in rows.iter().enumerate() {
            for (x, c) in r.chars().enumerate() {
                if c == '#' {
                    img.put_pixel(x as u32, y as u32, image::Luma([0]));
                }
            }
        }
        let g = Glyph {
            ch: '?',
            x0: 0,
            x1: SIG_W as i32,
            y0: 0,
            y1: SIG_H as i32,
            conf: 90.0,
        };
        let mut s = Shape::of(&img, &g, SIG_H as i32, 1.0).expect("box");
        (s.w, s.h, s.top) = (w, h, top);
        s
    }

    fn ell() -> Vec<&'static str> {
        let mut r = vec!["####........"; 14];
        r.extend(["#######.....", "#######....."]);
        r
    }

    fn one() -> Vec<&'static str> {
        let mut r = vec!["...###......"; 14];
        r[0] = "######......";
        r.extend(["############", "############"]);
        r
    }

    #[test]
    fn a_glyph_takes_the_reading_of_most_of_its_twins() {
        let (l, n1) = (
            shape(&ell(), 5.0, 11.0, 11.0),
            shape(&one(), 6.0, 10.0, 10.0),
        );
        // Three "l" twins, one of them read as "1"; three real "1"s.
        let all = vec![
            (l, 'l'),
            (l, 'l'),
            (l, 'l'),
            (l, '1'),
            (n1, '1'),
            (n1, '1'),
            (n1, '1'),
        ];
        let own: Vec<char> = all.iter().map(|a| a.1).collect();
        let v = vote(&all, &own);
        assert_eq!(v, vec![None, None, None, Some('l'), None, None, None]);
    }

    #[test]
    fn too_few_twins_or_no_look_alike_change_nothing() {
        let l = shape(&ell(), 5.0, 11.0, 11.0);
        let cases: &[(&[char], Option<char>)] = &[
            // Two twins only.
            (&['l', 'l', '1'], None),
            // The glyph's own reading has support of its own: 3 against 2.
            (&['l', 'l', 'l', '1', '1'], None),
            // Not a look-alike: a vote never turns an "l" into an "m".
            (&['m', 'm', 'm', 'l'], None),
            // Case of one letter: "L" read where its twins were "l".
            (&['l', 'l', 'l', 'L'], Some('l')),
            (&['0', '0', '0', 'O'], Some('0')),
        ];
        for (chars, want) in cases {
            let all: Vec<(Shape, char)> = chars.iter().map(|&c| (l, c)).collect();
            let own: Vec<char> = all.iter().map(|a| a.1).collect();
            assert_eq!(
                vote(&all, &own).last().copied().flatten(),
                *want,
                "{chars:?}"
            );
        }
    }

    #[test]
    fn a_second_round_starts_from_what_tesseract_read() {
        // Round one turned this "1" into an "l" on twins that were misread "1"s; those are
        // "1" now. Judged from its own reading, "1", it stays one.
        let l = shape(&ell(), 5.0, 11.0, 11.0);
        let all = vec![
            (l, 'l'),
            (l, '1'),
            (l, '1'),
            (l, '1'),
            (l, '1'),
            (l, 'l'),
            (l, 'l'),
        ];
        let mut own: Vec<char> = all.iter().map(|a| a.1).collect();
        own[0] = '1';
        assert_eq!(vote(&all, &own)[0], None);
    }

    #[test]
    fn a_doubted_glyph_reads_as_nearly_all_its_twins() {
        let l = shape(&ell(), 5.0, 11.0, 11.0);
        let n1 = shape(&one(), 6.0, 10.0, 10.0);
        let cases: &[(&[char], Option<char>)] = &[
            (&['l', 'l', 'l'], Some('l')),
            // Too few twins to say.
            (&['l', 'l'], None),
            // Twins that disagree say nothing: 3 of 4 is not nine in ten.
            (&['l', 'l', 'l', '1'], None),
        ];
        for (chars, want) in cases {
            let mut bank: Vec<(Shape, char)> = chars.iter().map(|&c| (l, c)).collect();
            // Other glyphs are no twins.
            bank.extend([(n1, 'l'), (n1, 'l'), (n1, 'l'), (n1, 'l')]);
            assert_eq!(read_by_twins(&l, &bank), *want, "{chars:?}");
        }
    }

    #[test]
    fn a_vote_fits_its_word() {
        // The word as voted, the character voted, what it was read as.
        let cases = [
            // "TODO" with its O's twins read as zeros elsewhere: between letters, a letter.
            ("T0DO", 1, 'O', false),
            // "Mar11" read "Marii": both vote digit, so each has a digit beside it.
            ("Mar11", 3, 'i', true),
            ("Mar11", 4, 'i', true),
            ("sda1", 3, 'i', true),
            ("ls -l", 4, '1', true),
            ("4O96", 1, '0', false),
            ("x1", 1, 'l', true),
        ];
        for (w, i, was, want) in cases {
            let voted: Vec<char> = w.chars().collect();
            assert_eq!(fits_word(&voted, i, was), want, "{w} {i} {was}");
        }
    }

    #[test]
    fn twins_need_the_same_box_and_ink() {
        let l = shape(&ell(), 5.0, 11.0, 11.0);
        let cases = [
            // A wider box: an "O" beside a "0" of the same font.
            (shape(&ell(), 6.5, 11.0, 11.0), false),
            // Lower on the line.
            (shape(&ell(), 5.0, 11.0, 8.0), false),
            // Other ink.
            (shape(&one(), 5.0, 11.0, 11.0), false),
            // The same box a little off (anti-aliasing, the strip's scale).
            (shape(&ell(), 5.6, 10.5, 11.2), true),
        ];
        for (o, want) in cases {
            assert_eq!(l.twin(&o), want, "{o:?}");
        }
    }
}
