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

/// Does `r` touch any dirty tile?
pub fn touches(r: &Rect, dirty: &[Rect]) -> bool {
    dirty.iter().any(|d| d.intersects(r))
}

/// The label set after an incremental pass: old labels away from every dirty tile stay, labels
/// re-read from the bands replace everything that touched a dirty tile.
pub fn merge<T: Clone>(
    old: &[T],
    fresh: Vec<T>,
    dirty: &[Rect],
    rect: impl Fn(&T) -> Rect,
) -> Vec<T> {
    let mut out: Vec<T> = old
        .iter()
        .filter(|t| !touches(&rect(t), dirty))
        .cloned()
        .collect();
    out.extend(fresh.into_iter().filter(|t| touches(&rect(t), dirty)));
    out
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
            for r in &old {
                // clean old labels survive, dirty ones do not (unless re-read identically)
                if !touches(r, &dirty) { prop_assert!(out.contains(r)); }
            }
            for r in &out {
                prop_assert!((old.contains(r) && !touches(r, &dirty)) || (fresh.contains(r) && touches(r, &dirty)));
            }
            let n_fresh_dirty = fresh.iter().filter(|r| touches(r, &dirty)).count();
            let n_old_clean = old.iter().filter(|r| !touches(r, &dirty)).count();
            prop_assert_eq!(out.len(), n_fresh_dirty + n_old_clean);
            if dirty.is_empty() { prop_assert_eq!(out, old); }
        }
    }
}
