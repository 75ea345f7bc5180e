//! Joins the pieces of one monospace line that were read as separate labels, telling monospace text by its characters' centres sitting on one grid.
//!
//! A terminal or editor line is one run of text, but its spaces are whole character cells and
//! its columns are padded with several (`ls -l`, `df`, `ps`), so the gap rules that keep two
//! buttons apart split it. What Tesseract read tells a monospace line apart reliably: every
//! character's centre sits on one grid of fixed pitch (side bearings move a glyph's edges, not
//! its centre), and the centres of two neighbouring characters of a word are one pitch apart.
//! Proportional text ("Copy", "Filesystem" in a UI font) fails this at once.
//!
//! Two pieces on one row join when both sit on one grid with the same pitch, the gap between
//! them is at most `MAX_GAP_CELLS` cells, no rule (a pane border) stands in it, and the left one
//! is not a gutter (an editor's line number). The grid comes from either piece, or, for pieces
//! too short to show a pitch ("$ ps", "-l"), from a monospace line close above or below.

use voxdesk_core::geometry::Rect;

use super::label::{nearly_all, Label};

/// A label as read, with the centres of its letters and digits (capture pixels) and the
/// centre-to-centre steps between neighbouring ones within its words. Only steps between two
/// letters (`letter_steps`) may establish a pitch: digits are tabular in proportional fonts too.
#[derive(Debug, Clone)]
pub struct Piece {
    pub label: Label,
    pub centres: Vec<f64>,
    pub steps: Vec<f64>,
    pub letter_steps: Vec<f64>,
    /// Already known to be monospace (its line box sat on a grid).
    pub mono: bool,
    /// Only punctuation that closes code ("}", "});"): a label only on a monospace grid.
    pub symbols: bool,
}

/// The widest gap between two pieces of one line, in cells (`ps` pads a column with up to 9
/// spaces; two panes side by side have a rule between them).
pub const MAX_GAP_CELLS: f64 = 12.0;
/// The fewest within-word steps that show a pitch by themselves (a 7-letter word in a small UI
/// font can step evenly by chance).
const MIN_STEPS: usize = 7;
/// How far a step may be from the pitch, as a share of it.
const STEP_TOLERANCE: f64 = 0.18;
/// How far a centre may be from the grid, in cells.
const CENTRE_TOLERANCE: f64 = 0.25;
/// How many line heights above or below a line another line's pitch still applies to it.
const REACH_LINES: i32 = 8;

/// The pitch `steps` show by themselves: nearly all within `STEP_TOLERANCE` of their median.
pub fn own_pitch(steps: &[f64]) -> Option<f64> {
    if steps.len() < MIN_STEPS {
        return None;
    }
    let mut s = steps.to_vec();
    s.sort_by(f64::total_cmp);
    let med = s[s.len() / 2];
    if med <= 0.0 {
        return None;
    }
    let near: Vec<f64> = s
        .into_iter()
        .filter(|v| (v - med).abs() <= STEP_TOLERANCE * med)
        .collect();
    nearly_all(near.len(), steps.len()).then(|| near.iter().sum::<f64>() / near.len() as f64)
}

/// A grid fitted to a run of centres: pitch, the centre of its first cell, and how many cells
/// the run spans.
#[derive(Debug, Clone, Copy)]
struct Grid {
    pitch: f64,
    phase: f64,
    span: f64,
}

impl Grid {
    /// How far `x` is from the nearest cell centre, in cells.
    fn off(&self, x: f64) -> f64 {
        let r = (x - self.phase) / self.pitch;
        (r - r.round()).abs()
    }
}

/// Do `centres` sit on one grid of about pitch `p`, and do `steps` agree with it? Each centre
/// gets its cell from the one before (so an error in `p` does not add up along the line), then
/// pitch and phase are fitted to all of them by least squares. A single character fits any
/// grid; the caller limits what that may join.
fn fits(centres: &[f64], steps: &[f64], p: f64) -> Option<Grid> {
    if p <= 0.0 {
        return None;
    }
    if centres.is_empty() {
        // Punctuation only: no centre to place, nothing against the grid.
        return Some(Grid {
            pitch: p,
            phase: 0.0,
            span: 0.0,
        });
    }
    let (c, dropped) = sifted(centres, p);
    let steps: Vec<f64> = steps.iter().copied().filter(|v| *v >= 0.6 * p).collect();
    let step_ok = steps
        .iter()
        .filter(|v| (*v - p).abs() <= STEP_TOLERANCE * p * 1.3)
        .count();
    // Four in five: a letter read twice or merged ("ttl" read "tt1l") breaks two steps, and the
    // centres are the stronger witness.
    if step_ok * 5 < steps.len() * 4 {
        return None;
    }
    let mut k = vec![0.0; c.len()];
    for i in 1..c.len() {
        k[i] = k[i - 1] + ((c[i] - c[i - 1]) / p).round().max(1.0);
    }
    let n = c.len() as f64;
    let (sk, sc) = (k.iter().sum::<f64>(), c.iter().sum::<f64>());
    let skk: f64 = k.iter().map(|v| v * v).sum();
    let skc: f64 = k.iter().zip(&c).map(|(a, b)| a * b).sum();
    let den = n * skk - sk * sk;
    // Fewer than three cells spanned say little about the pitch: keep the one given.
    let span = k.last().copied().unwrap_or(0.0);
    let fp = if den > 0.0 && span >= 3.0 {
        (n * skc - sk * sc) / den
    } else {
        p
    };
    if (fp - p).abs() > 0.1 * p {
        return None;
    }
    let phase = (sc - fp * sk) / n;
    let g = Grid {
        pitch: fp,
        phase,
        span,
    };
    on_grid(&g, &c, dropped).then_some(g)
}

/// `centres` sorted, without any two less than most of a cell `p` apart: boxes Tesseract placed
/// badly (a wide "M" boxed across its neighbour, a "d" squeezed against a ":"), where which of
/// the two is misplaced is not known. Also how many such pairs were set aside.
fn sifted(centres: &[f64], p: f64) -> (Vec<f64>, usize) {
    let mut c = centres.to_vec();
    c.sort_by(f64::total_cmp);
    let mut out = Vec::with_capacity(c.len());
    let mut pairs = 0;
    let mut i = 0;
    while i < c.len() {
        if i + 1 < c.len() && c[i + 1] - c[i] < 0.6 * p {
            pairs += 1;
            i += 2;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    (out, pairs)
}

/// Do (sifted) `centres` sit on `g`'s cells? Nearly all must; in five or more, one misplaced
/// box is allowed if it is the only one (none was set aside).
fn on_grid(g: &Grid, centres: &[f64], dropped: usize) -> bool {
    let on = centres
        .iter()
        .filter(|&&x| g.off(x) <= CENTRE_TOLERANCE)
        .count();
    let slack = usize::from(centres.len() + dropped >= 5 && dropped <= 1);
    nearly_all(on, centres.len()) || on + slack - dropped.min(slack) >= centres.len()
}

/// Do two runs sit on one grid of about pitch `p`? Each must fit it, and the centres of the
/// shorter one must fall on the grid of the longer one extended across the gap (fitting both
/// at once would bend the pitch to absorb a half-cell shift).
fn one_grid(a: &Piece, b: &Piece, p: f64) -> Option<f64> {
    let ga = fits(&a.centres, &a.steps, p)?;
    let gb = fits(&b.centres, &b.steps, p)?;
    let (long, short) = if ga.span >= gb.span {
        (ga, &b.centres)
    } else {
        (gb, &a.centres)
    };
    let (short, dropped) = sifted(short, p);
    on_grid(&long, &short, dropped).then_some(long.pitch)
}

/// A monospace label's text without the spaces Tesseract put where no cell is empty
/// ("README .md", whose "." stands in a wide cell of its own): between two letters or digits
/// whose centres are as many cells apart as the characters between them need, there is no
/// space. `centres` are the label's letters' and digits' centres, in order.
fn without_false_spaces(text: &str, centres: &[f64], pitch: f64) -> String {
    if text.chars().filter(|c| c.is_alphanumeric()).count() != centres.len() || pitch <= 0.0 {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // (alphanumeric index of the last letter or digit seen, characters since it)
    let mut seen: Option<usize> = None;
    let mut n = 0;
    for (i, &ch) in chars.iter().enumerate() {
        if ch == ' ' {
            let next = chars[i..].iter().position(|c| c.is_alphanumeric());
            let between = next.map(|k| {
                chars[i..i + k]
                    .iter()
                    .filter(|c| !c.is_whitespace())
                    .count()
            });
            if let (Some(a), Some(k)) = (seen, between) {
                let (before, after) = (centres[a], centres[a + 1]);
                let since = chars[..i]
                    .iter()
                    .rev()
                    .take_while(|c| !c.is_alphanumeric())
                    .filter(|c| !c.is_whitespace())
                    .count();
                // (Clearly no more: a box placed a little off must not take a space away.)
                if (after - before) / pitch <= (k + since + 1) as f64 + 0.2 {
                    continue;
                }
            }
            out.push(ch);
            continue;
        }
        if ch.is_alphanumeric() {
            seen = Some(n);
            n += 1;
        }
        out.push(ch);
    }
    out
}

/// Is `a` a gutter (an editor's line number): digits only, set `cells` or more cells before what
/// follows? (A number inside a line, such as a `ps` PID, joins what is before it first.)
fn gutter(a: &Piece, cells: f64) -> bool {
    cells >= 1.5 && a.label.text.chars().all(|c| c.is_ascii_digit())
}

/// Join monospace pieces into lines. `ruled(gap)` says whether a rule (a border, a pane
/// separator) stands in the gap rectangle between two pieces. Returns every label, joined or
/// not, with whether it is monospace (it, or a nearby line, showed a grid it sits on).
pub fn join(mut pieces: Vec<Piece>, ruled: impl Fn(&Rect) -> bool) -> Vec<(Label, bool)> {
    // Leftmost first: a line is joined from its start rightwards, whatever its pieces' tops.
    pieces.sort_by_key(|p| (p.label.rect.x, p.label.rect.y));
    let own: Vec<Option<f64>> = pieces.iter().map(|p| own_pitch(&p.letter_steps)).collect();
    // The grids of lines near `r` that showed a pitch by themselves, over the same columns (a
    // terminal is one grid: its rows share pitch and phase).
    let grids: Vec<Option<Grid>> = pieces
        .iter()
        .zip(&own)
        .map(|(q, g)| fits(&q.centres, &q.steps, (*g)?))
        .collect();
    let nearby = |r: &Rect| -> Vec<Grid> {
        pieces
            .iter()
            .zip(&grids)
            .filter_map(|(q, g)| {
                let g = (*g)?;
                let o = q.label.rect;
                let reach = REACH_LINES * r.h.max(1);
                let rows = o.y - r.bottom() < reach && r.y - o.bottom() < reach;
                // Over the same columns, or in the indentation before them (a closing brace).
                let columns = r.x < o.right() && o.x - r.right() < 8 * o.h.max(1);
                let similar = (o.h - r.h).abs() * 10 <= 3 * o.h.max(r.h);
                (rows && columns && similar).then_some(g)
            })
            .collect()
    };
    // Do `centres` fall on the cells of a grid shown nearby?
    let on_cells = |g: &Grid, centres: &[f64]| {
        let on = centres
            .iter()
            .filter(|&&x| g.off(x) <= CENTRE_TOLERANCE)
            .count();
        nearly_all(on, centres.len())
    };
    let same_row = |a: &Rect, b: &Rect| {
        let ov = a.bottom().min(b.bottom()) - a.y.max(b.y);
        // A piece of small letters only ("-n", "on") is as short as the x-height.
        ov * 5 >= a.h.min(b.h) * 3 && a.h.min(b.h) * 5 >= a.h.max(b.h) * 2
    };
    let mut used = vec![false; pieces.len()];
    let mut out = Vec::with_capacity(pieces.len());
    for i in 0..pieces.len() {
        if used[i] {
            continue;
        }
        used[i] = true;
        let mut cur = pieces[i].clone();
        let mut pitch = own[i];
        let mut first = true;
        loop {
            let r = cur.label.rect;
            let next = (0..pieces.len())
                .filter(|&j| !used[j])
                .filter(|&j| {
                    let b = pieces[j].label.rect;
                    b.x >= r.right() - 1 && same_row(&r, &b)
                })
                .min_by_key(|&j| pieces[j].label.rect.x);
            let Some(j) = next else { break };
            let b = &pieces[j];
            let gap = (b.label.rect.x - r.right()).max(0) as f64;
            let mut candidates: Vec<f64> = pitch.into_iter().chain(own[j]).collect();
            if candidates.is_empty() {
                // Neither shows a pitch: both must sit on the very cells of a line nearby.
                let all: Vec<f64> = cur.centres.iter().chain(&b.centres).copied().collect();
                candidates = nearby(&r.union(&b.label.rect))
                    .into_iter()
                    .filter(|g| on_cells(g, &all))
                    .map(|g| g.pitch)
                    .collect();
            }
            let all_c: Vec<f64> = cur.centres.iter().chain(&b.centres).copied().collect();
            let all_s: Vec<f64> = cur.steps.iter().chain(&b.steps).copied().collect();
            let found = candidates.into_iter().find_map(|p| {
                let cells = gap / p;
                (cells <= MAX_GAP_CELLS && !(first && gutter(&cur, cells)))
                    .then(|| one_grid(&cur, b, p))
                    .flatten()
            });
            // Two pieces whose lines already sat on a grid, one with boxes Tesseract squeezed
            // ("user," boxed 3 px a letter): the well-boxed one's grid, extended across the
            // gap, must hold the other's nearest character.
            let found = found.or_else(|| {
                if !(cur.mono && b.mono) {
                    return None;
                }
                let (&last, &head) = (cur.centres.last()?, b.centres.first()?);
                let held =
                    |g: Option<Grid>, x: f64| g.is_some_and(|g| g.off(x) <= CENTRE_TOLERANCE);
                let mut ps: Vec<f64> = pitch.into_iter().chain(own[j]).collect();
                ps.extend(nearby(&r.union(&b.label.rect)).iter().map(|g| g.pitch));
                ps.into_iter().find(|&p| {
                    let cells = gap / p;
                    cells <= MAX_GAP_CELLS
                        && !(first && gutter(&cur, cells))
                        && (held(fits(&cur.centres, &cur.steps, p), head)
                            || held(fits(&b.centres, &b.steps, p), last))
                })
            });
            // Two long pieces both boxed badly ("modified:   README.md", the ":" and "AD"
            // squeezed): three in four of each one's centres on the cells of one grid shown
            // nearby.
            let found = found.or_else(|| {
                let mostly = |c: &[f64], g: &Grid| {
                    let on = c.iter().filter(|&&x| g.off(x) <= CENTRE_TOLERANCE).count();
                    c.len() >= MIN_STEPS && on * 4 >= c.len() * 3
                };
                nearby(&r.union(&b.label.rect))
                    .into_iter()
                    .find(|g| {
                        let cells = gap / g.pitch;
                        cells <= MAX_GAP_CELLS
                            && !(first && gutter(&cur, cells))
                            && mostly(&cur.centres, g)
                            && mostly(&b.centres, g)
                    })
                    .map(|g| g.pitch)
            });
            let Some(p) = found else { break };
            let gap_rect = Rect::new(
                r.right(),
                r.y.min(b.label.rect.y),
                (b.label.rect.x - r.right()).max(0),
                r.bottom().max(b.label.rect.bottom()) - r.y.min(b.label.rect.y),
            );
            if gap_rect.w > 0 && ruled(&gap_rect) {
                break;
            }
            used[j] = true;
            let (na, nb) = (cur.label.text.chars().count(), b.label.text.chars().count());
            cur.label.conf =
                (cur.label.conf * na as f32 + b.label.conf * nb as f32) / (na + nb).max(1) as f32;
            cur.label.text = format!("{} {}", cur.label.text, b.label.text);
            cur.label.rect = r.union(&b.label.rect);
            cur.centres = all_c;
            cur.steps = all_s;
            cur.letter_steps.extend(b.letter_steps.iter().copied());
            cur.mono |= b.mono;
            cur.symbols &= b.symbols;
            pitch = Some(p);
            first = false;
        }
        let mono = cur.mono
            || pitch.is_some()
            || ((cur.centres.len() >= 2 || cur.symbols)
                && nearby(&cur.label.rect).into_iter().any(|g| {
                    fits(&cur.centres, &cur.steps, g.pitch).is_some() && on_cells(&g, &cur.centres)
                }));
        if cur.symbols && !mono {
            continue;
        }
        if let (true, Some(p)) = (mono, pitch) {
            cur.label.text = without_false_spaces(&cur.label.text, &cur.centres, p);
        }
        out.push((cur.label, mono));
    }
    out.sort_by_key(|(l, _)| (l.rect.y, l.rect.x));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece of `text` drawn on a grid of `pitch` starting at cell `cell` (x0 = 10), on row `y`;
    /// `jitter` moves each centre by a repeating small amount, as anti-aliasing does.
    fn mono(text: &str, cell: usize, y: i32, pitch: f64) -> Piece {
        let mut centres = Vec::new();
        let mut steps = Vec::new();
        let mut letter_steps = Vec::new();
        let mut prev: Option<(usize, f64)> = None;
        for (k, ch) in text.chars().enumerate() {
            if ch == ' ' {
                prev = None;
                continue;
            }
            let c = 10.0 + (cell + k) as f64 * pitch + pitch / 2.0 + [0.0, 0.4, -0.3][k % 3];
            if let Some((pk, pc)) = prev {
                steps.push(c - pc);
                let chars: Vec<char> = text.chars().collect();
                if chars[pk].is_alphabetic() && ch.is_alphabetic() {
                    letter_steps.push(c - pc);
                }
            }
            prev = Some((k, c));
            centres.push(c);
        }
        let x = (10.0 + cell as f64 * pitch) as i32;
        let w = (text.chars().count() as f64 * pitch) as i32;
        Piece {
            label: Label {
                text: text.into(),
                rect: Rect::new(x, y, w, 12),
                conf: 0.9,
            },
            centres,
            steps,
            letter_steps,
            mono: false,
            symbols: false,
        }
    }

    /// A piece of proportional text: characters of the given advances (in pixels).
    fn prop(text: &str, x: f64, y: i32, advances: &[f64]) -> Piece {
        let mut centres = Vec::new();
        let mut at = x;
        for a in advances {
            centres.push(at + a / 2.0);
            at += a;
        }
        let steps: Vec<f64> = centres.windows(2).map(|w| w[1] - w[0]).collect();
        Piece {
            label: Label {
                text: text.into(),
                rect: Rect::new(x as i32, y, (at - x) as i32, 12),
                conf: 0.9,
            },
            centres,
            letter_steps: steps.clone(),
            steps,
            mono: false,
            symbols: false,
        }
    }

    fn texts(v: &[(Label, bool)]) -> Vec<(&str, bool)> {
        v.iter().map(|(l, m)| (l.text.as_str(), *m)).collect()
    }

    #[test]
    fn padded_columns_of_one_monospace_line_join() {
        let p = 8.43;
        // "Filesystem      Size  Used" split at its padding.
        let got = join(
            vec![
                mono("Filesystem", 0, 100, p),
                mono("Size", 16, 100, p),
                mono("Used", 22, 100, p),
            ],
            |_| false,
        );
        assert_eq!(texts(&got), vec![("Filesystem Size Used", true)]);
    }

    #[test]
    fn one_badly_placed_box_does_not_break_a_line() {
        let p = 7.8;
        // Tesseract boxed the "M" of "COMMAND" in two: a centre half a cell after the one
        // before, and a step of half a pitch.
        let mut b = mono("COMMAND", 22, 100, p);
        b.centres.insert(3, b.centres[2] + 0.45 * p);
        b.steps = b.centres.windows(2).map(|w| w[1] - w[0]).collect();
        b.letter_steps = b.steps.clone();
        let got = join(vec![mono("STAT START TIME", 0, 100, p), b], |_| false);
        assert_eq!(texts(&got), vec![("STAT START TIME COMMAND", true)]);
        // As measured on a terminal: the first "M" boxed across both, so its centre is half a
        // cell late and the second one's half a cell after it; neither is known to be right.
        let mut m = mono("COMMAND", 22, 100, p);
        m.centres[2] += 0.55 * p;
        m.centres[3] += 0.05 * p;
        m.steps = m.centres.windows(2).map(|w| w[1] - w[0]).collect();
        m.letter_steps = m.steps.clone();
        let got = join(vec![mono("STAT START TIME", 0, 100, p), m], |_| false);
        assert_eq!(texts(&got), vec![("STAT START TIME COMMAND", true)]);
        // Two such boxes in a short piece are no grid.
        let mut c = mono("COMMAND", 22, 100, p);
        c.centres[1] += 0.45 * p;
        c.centres[4] += 0.45 * p;
        c.steps = c.centres.windows(2).map(|w| w[1] - w[0]).collect();
        let got = join(vec![mono("STAT START TIME", 0, 100, p), c], |_| false);
        assert_eq!(got.len(), 2);
    }

    #[test]
    fn short_pieces_borrow_the_pitch_of_a_line_nearby() {
        let p = 7.8;
        let got = join(
            vec![
                mono("64 bytes from 93.184.216.34:", 0, 100, p),
                mono("$", 0, 117, p),
                mono("ps", 2, 117, p),
                mono("aux", 5, 117, p),
            ],
            |_| false,
        );
        assert_eq!(
            texts(&got),
            vec![("64 bytes from 93.184.216.34:", true), ("$ ps aux", true)]
        );
        // Without the line nearby, nothing shows the grid: the pieces stay apart.
        let got = join(vec![mono("$", 0, 117, p), mono("ps", 2, 117, p)], |_| false);
        assert_eq!(texts(&got), vec![("$", false), ("ps", false)]);
    }

    #[test]
    fn two_badly_boxed_pieces_on_a_grid_nearby_join() {
        let p = 8.44;
        // "modified:   README.md" under a line that shows the pane's grid; Tesseract squeezed
        // "ed:" and boxed "AD" across each other: two in eight centres off the cells.
        let squeeze = |mut piece: Piece, at: &[usize]| {
            for &k in at {
                piece.centres[k] += p * 0.45;
            }
            piece.steps.clear();
            piece.letter_steps.clear();
            piece
        };
        let grid = mono("Changes not staged for commit:", 0, 83, p);
        let pieces = || {
            vec![
                grid.clone(),
                squeeze(mono("modified", 8, 100, p), &[6, 7]),
                squeeze(mono("READMEmd", 20, 100, p), &[2, 3]),
            ]
        };
        let got = join(pieces(), |_| false);
        assert_eq!(
            texts(&got),
            vec![
                ("Changes not staged for commit:", true),
                ("modified READMEmd", true)
            ]
        );
        // Half the centres off: no grid holds them.
        let mut v = pieces();
        v[2] = squeeze(mono("READMEmd", 20, 100, p), &[1, 2, 3, 5]);
        assert_eq!(join(v, |_| false).len(), 3);
    }

    #[test]
    fn a_space_where_no_cell_is_empty_is_none() {
        let p = 8.0;
        // Letters' and digits' centres at these cells.
        let at = |cells: &[f64]| -> Vec<f64> { cells.iter().map(|c| c * p + 4.0).collect() };
        let cases: &[(&str, &[f64], &str)] = &[
            // "README.md": the "." has a cell of its own, and no space is left for.
            (
                "README .md",
                &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 8.0],
                "README.md",
            ),
            // "ls .config": a cell for the space and one for the ".".
            (
                "ls .config",
                &[0.0, 1.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
                "ls .config",
            ),
            // "or directory" boxed a third of a cell short: a space, placed loosely.
            ("or d", &[0.0, 1.0, 2.34], "or d"),
            ("or d", &[0.0, 1.0, 2.1], "ord"),
            // Centres that do not match the text's letters: left as it is.
            ("README .md", &[0.0, 1.0], "README .md"),
        ];
        for (text, cells, want) in cases {
            assert_eq!(without_false_spaces(text, &at(cells), p), *want, "{text}");
        }
    }

    #[test]
    fn what_must_stay_apart_does() {
        let p = 8.43;
        // Off the grid: the right piece starts half a cell off.
        let mut off = mono("Size", 16, 100, p);
        for c in &mut off.centres {
            *c += p / 2.0;
        }
        off.label.rect.x += (p / 2.0) as i32;
        // Other pitch (a pane in another font), too far, a rule between, another row.
        let cases: Vec<(Vec<Piece>, bool)> = vec![
            (vec![mono("Filesystem", 0, 100, p), off], false),
            (
                vec![
                    mono("Filesystem", 0, 100, p),
                    mono("Size Used", 13, 100, 7.0),
                ],
                false,
            ),
            (
                vec![mono("Filesystem", 0, 100, p), mono("Size", 24, 100, p)],
                false,
            ),
            (
                vec![mono("Filesystem", 0, 100, p), mono("Size", 12, 100, p)],
                true,
            ),
            (
                vec![mono("Filesystem", 0, 100, p), mono("Size", 12, 130, p)],
                false,
            ),
        ];
        for (k, (pieces, ruled)) in cases.into_iter().enumerate() {
            let got = join(pieces, |_| ruled);
            assert_eq!(got.len(), 2, "case {k}: {:?}", texts(&got));
        }
        // A line number in the gutter stays its own column; "42:" in grep output does not.
        let got = join(
            vec![
                mono("12", 0, 100, p),
                mono("let mut lines = group_blobs();", 4, 100, p),
            ],
            |_| false,
        );
        assert_eq!(got.len(), 2);
        let got = join(
            vec![
                mono("42:", 0, 100, p),
                mono("// TODO: parse flags", 7, 100, p),
            ],
            |_| false,
        );
        assert_eq!(texts(&got), vec![("42: // TODO: parse flags", true)]);
    }

    #[test]
    fn a_lone_brace_is_a_label_only_among_monospace_lines() {
        let p = 8.43;
        let brace = || {
            let mut b = mono("}", 0, 118, p);
            b.centres.clear();
            b.symbols = true;
            b
        };
        let got = join(vec![mono("v.sort_unstable();", 4, 100, p), brace()], |_| {
            false
        });
        assert_eq!(texts(&got), vec![("v.sort_unstable();", true), ("}", true)]);
        assert!(join(vec![brace()], |_| false).is_empty());
    }

    #[test]
    fn proportional_text_shows_no_pitch_and_does_not_join() {
        // "Filesystem" and "Mounted" in a UI font: advances vary with the letters.
        let a = prop(
            "Filesystem",
            10.0,
            100,
            &[7.0, 3.0, 3.0, 7.5, 6.5, 6.5, 7.0, 4.5, 7.5, 11.0],
        );
        let b = prop("Mounted", 120.0, 100, &[10.5, 7.5, 7.5, 7.5, 4.5, 7.5, 7.5]);
        assert_eq!(own_pitch(&a.steps), None);
        assert_eq!(own_pitch(&b.steps), None);
        let got = join(vec![a, b], |_| false);
        assert_eq!(texts(&got), vec![("Filesystem", false), ("Mounted", false)]);
        // A short word in a small UI font steps evenly by chance ("lecture" at 12 px, under
        // an icon): six steps are too few to show a pitch, seven even ones show it.
        assert_eq!(own_pitch(&[5.5, 7.0, 5.5, 6.0, 6.5, 6.0]), None);
        assert_eq!(
            own_pitch(&[8.4, 8.5, 8.4, 8.3, 8.4, 8.5, 8.4]).map(|p| p.round()),
            Some(8.0)
        );
    }
}
