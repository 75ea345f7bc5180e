//! Which parts of the screen changed since the last frame: a tile grid compared pixel for pixel, the bands to re-read, and the merge of old and new labels.

use voxdesk_core::geometry::Rect;

/// Tile edge in capture pixels. 128 keeps the per-tile bookkeeping negligible and a one-widget
/// change to one or two tiles.
pub const TILE: u32 = 128;
/// Rows re-scanned above and below a changed tile so that a label crossing a tile edge is read whole.
pub const MARGIN: i32 = 48;

/// Tiles whose pixels differ between two RGBA frames of the same size.
pub fn changed_tiles(prev: &[u8], cur: &[u8], width: u32, height: u32) -> Vec<Rect> {
    assert_eq!(
        prev.len(),
        cur.len(),
        "frames of different sizes are compared whole, not by tile"
    );
    let mut out = Vec::new();
    let stride = width as usize * 4;
    for ty in (0..height).step_by(TILE as usize) {
        let th = TILE.min(height - ty);
        for tx in (0..width).step_by(TILE as usize) {
            let tw = TILE.min(width - tx);
            let changed = (ty..ty + th).any(|y| {
                let a = y as usize * stride + tx as usize * 4;
                let b = a + tw as usize * 4;
                prev[a..b] != cur[a..b]
            });
            if changed {
                out.push(Rect::new(tx as i32, ty as i32, tw as i32, th as i32));
            }
        }
    }
    out
}

/// Full-width horizontal bands covering the dirty tiles plus [`MARGIN`] rows, merged where they
/// touch. Full width, because a label that crosses into a changed tile must be read whole.
pub fn bands(dirty: &[Rect], width: u32, height: u32) -> Vec<Rect> {
    let mut spans: Vec<(i32, i32)> = dirty
        .iter()
        .map(|r| {
            (
                (r.y - MARGIN).max(0),
                (r.bottom() + MARGIN).min(height as i32),
            )
        })
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(i32, i32)> = Vec::new();
    for (a, b) in spans {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
        .into_iter()
        .map(|(a, b)| Rect::new(0, a, width as i32, b - a))
        .collect()
}

/// Edge of the cells [`content`] looks at.
pub const CELL: i32 = 32;

/// Where anything is drawn within `region`: a cell of one flat colour holds no text, so the
/// learned detector need not look at it. Rows of cells with something in them are joined into
/// bands (a cell's worth of margin each way), each only as wide as what is drawn in it; a text
/// line crosses no empty row, so no band cuts one. Pure.
pub fn content(rgba: &[u8], width: u32, height: u32, region: Rect) -> Vec<Rect> {
    let frame = Rect::new(0, 0, width as i32, height as i32);
    let r = region.intersection(&frame);
    if r.w <= 0 || r.h <= 0 {
        return Vec::new();
    }
    let stride = width as usize * 4;
    let busy = |x0: i32, y0: i32| -> bool {
        let (x1, y1) = ((x0 + CELL).min(r.right()), (y0 + CELL).min(r.bottom()));
        let at = y0 as usize * stride + x0 as usize * 4;
        let first = &rgba[at..at + 3];
        (y0..y1).any(|y| {
            let row =
                &rgba[y as usize * stride + x0 as usize * 4..y as usize * stride + x1 as usize * 4];
            row.chunks_exact(4).any(|p| &p[..3] != first)
        })
    };
    // Per row of cells: the x extent of its busy cells.
    let mut rows: Vec<(i32, Option<(i32, i32)>)> = Vec::new();
    let mut y = r.y;
    while y < r.bottom() {
        let mut ext: Option<(i32, i32)> = None;
        let mut x = r.x;
        while x < r.right() {
            if busy(x, y) {
                let x1 = (x + CELL).min(r.right());
                ext = Some(match ext {
                    Some((a, _)) => (a, x1),
                    None => (x, x1),
                });
            }
            x += CELL;
        }
        rows.push((y, ext));
        y += CELL;
    }
    let mut out: Vec<Rect> = Vec::new();
    let mut open: Option<(i32, i32, i32, i32)> = None; // y0, y1, x0, x1
    for (y, ext) in rows {
        match (ext, &mut open) {
            (Some((a, b)), Some(o)) => {
                o.1 = (y + CELL).min(r.bottom());
                o.2 = o.2.min(a);
                o.3 = o.3.max(b);
            }
            (Some((a, b)), None) => open = Some((y, (y + CELL).min(r.bottom()), a, b)),
            (None, Some(_)) => {
                let (y0, y1, x0, x1) = open.take().expect("matched");
                out.push(Rect::new(x0, y0, x1 - x0, y1 - y0));
            }
            (None, None) => {}
        }
    }
    if let Some((y0, y1, x0, x1)) = open {
        out.push(Rect::new(x0, y0, x1 - x0, y1 - y0));
    }
    out.into_iter()
        .map(|b| Rect::new(b.x - CELL, b.y - CELL, b.w + 2 * CELL, b.h + 2 * CELL).intersection(&r))
        .collect()
}

/// `region` cut into windows of rows of at most about `max_area` pixels, for a reader whose
/// working memory grows with what it looks at. Each window overlaps the next by `overlap` rows
/// and owns the rows up to the middle of each overlap: a line of text less than `overlap` tall
/// lies whole in the window that owns its middle. One window when the region is small. Pure.
pub fn windows(region: Rect, max_area: i32, overlap: i32) -> Vec<(Rect, std::ops::Range<i32>)> {
    let rows = (max_area / region.w.max(1)).max(2 * overlap);
    if region.h <= rows {
        return vec![(region, region.y..region.bottom())];
    }
    let step = rows - overlap;
    let mut out = Vec::new();
    let mut y = region.y;
    loop {
        let end = (y + rows).min(region.bottom());
        let own_from = if y == region.y { y } else { y + overlap / 2 };
        let last = end == region.bottom();
        let own_to = if last {
            end
        } else {
            end - overlap + overlap / 2
        };
        out.push((Rect::new(region.x, y, region.w, end - y), own_from..own_to));
        if last {
            return out;
        }
        y += step;
    }
}

/// Where pixels changed, tighter than the tiles: within each dirty tile the box of the pixels
/// that differ, and boxes that come within `join` pixels of each other made one. Pure.
pub fn changed_boxes(prev: &[u8], cur: &[u8], width: u32, dirty: &[Rect], join: i32) -> Vec<Rect> {
    let stride = width as usize * 4;
    let mut boxes: Vec<Rect> = dirty
        .iter()
        .filter_map(|t| {
            let (mut x0, mut y0, mut x1, mut y1) = (i32::MAX, i32::MAX, i32::MIN, i32::MIN);
            for y in t.y..t.bottom() {
                let at = y as usize * stride + t.x as usize * 4;
                let (a, b) = (
                    &prev[at..at + t.w as usize * 4],
                    &cur[at..at + t.w as usize * 4],
                );
                if a == b {
                    continue;
                }
                let first = a
                    .chunks_exact(4)
                    .zip(b.chunks_exact(4))
                    .position(|(p, q)| p != q);
                let last = a
                    .chunks_exact(4)
                    .zip(b.chunks_exact(4))
                    .rposition(|(p, q)| p != q);
                if let (Some(f), Some(l)) = (first, last) {
                    x0 = x0.min(t.x + f as i32);
                    x1 = x1.max(t.x + l as i32 + 1);
                    y0 = y0.min(y);
                    y1 = y1.max(y + 1);
                }
            }
            (x1 > x0).then(|| Rect::new(x0, y0, x1 - x0, y1 - y0))
        })
        .collect();
    // Join boxes that come close, until none do.
    let near = |a: &Rect, b: &Rect| grow(a, join).intersects(b);
    let mut merged = true;
    while merged {
        merged = false;
        'outer: for i in 0..boxes.len() {
            for j in i + 1..boxes.len() {
                if near(&boxes[i], &boxes[j]) {
                    let b = boxes.swap_remove(j);
                    boxes[i] = boxes[i].union(&b);
                    merged = true;
                    break 'outer;
                }
            }
        }
    }
    boxes
}

/// `r` grown by `by` pixels on every side.
pub fn grow(r: &Rect, by: i32) -> Rect {
    Rect::new(r.x - by, r.y - by, r.w + 2 * by, r.h + 2 * by)
}

/// Does `r` touch any dirty tile?
pub fn touches(r: &Rect, dirty: &[Rect]) -> bool {
    dirty.iter().any(|d| d.intersects(r))
}

/// The label set after an incremental pass: labels re-read from the bands replace everything
/// that touched a dirty tile, and any old label standing where one of them stands (half of the
/// smaller box shared: the same line read again from a wider look, a box a few pixels taller);
/// the other old labels stay.
pub fn merge<T: Clone>(
    old: &[T],
    fresh: Vec<T>,
    dirty: &[Rect],
    rect: impl Fn(&T) -> Rect,
) -> Vec<T> {
    let fresh: Vec<T> = fresh
        .into_iter()
        .filter(|t| touches(&rect(t), dirty))
        .collect();
    let mut out: Vec<T> = old
        .iter()
        .filter(|t| {
            let r = rect(t);
            !touches(&r, dirty) && !fresh.iter().any(|f| same_place(&r, &rect(f)))
        })
        .cloned()
        .collect();
    out.extend(fresh);
    out
}

/// Do two boxes share at least half of the smaller one?
pub fn same_place(a: &Rect, b: &Rect) -> bool {
    if !a.intersects(b) {
        return false;
    }
    let i = a.intersection(b);
    let area = |r: &Rect| r.w as i64 * r.h as i64;
    2 * area(&i) >= area(a).min(area(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_pixel_change_dirties_one_tile() {
        let (w, h) = (300u32, 200u32);
        let a = vec![0u8; (w * h * 4) as usize];
        let mut b = a.clone();
        let i = ((150 * w + 260) * 4) as usize;
        b[i] = 1;
        assert_eq!(
            changed_tiles(&a, &b, w, h),
            vec![Rect::new(256, 128, 44, 72)]
        );
        assert!(changed_tiles(&a, &a, w, h).is_empty());
    }

    #[test]
    fn content_is_where_something_is_drawn_in_bands_as_wide_as_it() {
        let (w, h) = (640u32, 480u32);
        let mut img = vec![255u8; (w * h * 4) as usize];
        let mut dot = |x: u32, y: u32| {
            let i = ((y * w + x) * 4) as usize;
            img[i] = 0;
        };
        // A "word" at (100..180, 40..52) and another at (300..340, 300..310).
        for y in 40..52 {
            for x in 100..180 {
                if x % 3 == 0 {
                    dot(x, y);
                }
            }
        }
        for x in 300..340 {
            dot(x, 305);
        }
        let full = Rect::new(0, 0, w as i32, h as i32);
        let bands = content(&img, w, h, full);
        assert_eq!(
            bands,
            vec![Rect::new(64, 0, 160, 96), Rect::new(256, 256, 128, 96)]
        );
        // Every drawn pixel is inside a band; a flat frame has none.
        let px = |x, y| Rect::new(x, y, 1, 1);
        assert!(bands[0].intersects(&px(100, 40)) && bands[0].intersects(&px(179, 51)));
        assert!(content(&vec![7u8; (w * h * 4) as usize], w, h, full).is_empty());
    }

    #[test]
    fn bands_merge_and_clip() {
        let d = [
            Rect::new(0, 0, 128, 128),
            Rect::new(512, 128, 128, 128),
            Rect::new(0, 640, 128, 128),
        ];
        assert_eq!(
            bands(&d, 1920, 700),
            vec![Rect::new(0, 0, 1920, 304), Rect::new(0, 592, 1920, 108)]
        );
    }

    #[test]
    fn changed_boxes_are_tight_and_join_when_close() {
        let (w, h) = (300u32, 300u32);
        let a = vec![0u8; (w * h * 4) as usize];
        let mut b = a.clone();
        let mut set = |x: u32, y: u32| b[((y * w + x) * 4 + 1) as usize] = 9;
        // One change across the edge of two tiles, one far away.
        for x in 120..140 {
            set(x, 10);
            set(x, 14);
        }
        set(280, 250);
        let dirty = changed_tiles(&a, &b, w, h);
        assert_eq!(dirty.len(), 3);
        let mut boxes = changed_boxes(&a, &b, w, &dirty, 4);
        boxes.sort_by_key(|r| r.x);
        assert_eq!(
            boxes,
            vec![Rect::new(120, 10, 20, 5), Rect::new(280, 250, 1, 1)]
        );
        // Far enough apart, two boxes stay two; nothing changed, no box.
        assert_eq!(changed_boxes(&a, &b, w, &dirty, 240).len(), 1);
        assert!(changed_boxes(&a, &a, w, &dirty, 4).is_empty());
    }

    #[test]
    fn windows_own_every_row_once_and_overlap() {
        let r = Rect::new(10, 100, 1000, 1000);
        assert_eq!(windows(r, 2_000_000, 64), vec![(r, 100..1100)]);
        let w = windows(r, 300_000, 64);
        assert!(w.len() > 1);
        assert!(w.iter().all(|(win, _)| win.w == 1000 && win.h <= 300));
        // The owned rows tile the region exactly, each inside its window with the overlap's
        // half to spare on every inner side.
        let mut y = 100;
        for (win, own) in &w {
            assert_eq!(own.start, y);
            assert!(own.start >= win.y && own.end <= win.bottom());
            y = own.end;
        }
        assert_eq!(y, 1100);
        for pair in w.windows(2) {
            assert_eq!(pair[0].0.bottom() - pair[1].0.y, 64);
        }
    }

    #[test]
    fn an_old_label_where_a_fresh_one_stands_is_replaced_not_kept_beside_it() {
        let dirty = [Rect::new(0, 20, 100, 10)];
        // The line above the change, read again a few pixels taller from a wider look: the
        // old box does not touch the change, the fresh one does.
        let old = [Rect::new(0, 4, 140, 14), Rect::new(0, 40, 60, 12)];
        let fresh = vec![Rect::new(0, 6, 138, 16)];
        assert_eq!(
            merge(&old, fresh, &dirty, |r| *r),
            vec![Rect::new(0, 40, 60, 12), Rect::new(0, 6, 138, 16)]
        );
        // A neighbour overlapping by its margin only stays.
        assert!(!same_place(
            &Rect::new(0, 0, 100, 14),
            &Rect::new(0, 11, 100, 14)
        ));
    }

    proptest! {
        #[test]
        fn merge_keeps_what_is_clean_and_takes_what_is_dirty(
            old in proptest::collection::vec((0i32..1000, 0i32..800, 1i32..200, 1i32..60), 0..40),
            fresh in proptest::collection::vec((0i32..1000, 0i32..800, 1i32..200, 1i32..60), 0..40),
            dirty in proptest::collection::vec((0i32..8, 0i32..7), 0..6),
        ) {
            let old: Vec<Rect> = old.into_iter().map(|(x, y, w, h)| Rect::new(x, y, w, h)).collect();
            let fresh: Vec<Rect> = fresh.into_iter().map(|(x, y, w, h)| Rect::new(x, y, w, h)).collect();
            let dirty: Vec<Rect> = dirty.into_iter().map(|(tx, ty)| Rect::new(tx * 128, ty * 128, 128, 128)).collect();
            let out = merge(&old, fresh.clone(), &dirty, |r| *r);
            let kept: Vec<&Rect> = fresh.iter().filter(|r| touches(r, &dirty)).collect();
            let replaced = |r: &Rect| touches(r, &dirty) || kept.iter().any(|f| same_place(r, f));
            for r in &old {
                // clean old labels survive unless a re-read one stands in their place
                if !replaced(r) { prop_assert!(out.contains(r)); }
            }
            for r in &out {
                prop_assert!((old.contains(r) && !replaced(r)) || kept.contains(&r));
            }
            let n_old_clean = old.iter().filter(|r| !replaced(r)).count();
            prop_assert_eq!(out.len(), kept.len() + n_old_clean);
            if dirty.is_empty() { prop_assert_eq!(out, old); }
        }
    }
}
