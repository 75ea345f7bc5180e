//! What the speaker is playing, as the listener needs it: a wait-free record of the output's level every 10 ms (the echo reference), and the hush that pauses every voice from inside the audio callback.
//!
//! The audio callback only stores atomics here: no lock, no allocation, no log.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// 1.28 s of 10 ms levels: longer than any echo path.
const SLOTS: usize = 128;
/// Levels are stored as fixed point in the low bits, the time in ms in the high bits.
const LEVEL_BITS: u32 = 24;
const LEVEL_SCALE: f32 = (1u32 << (LEVEL_BITS - 1)) as f32;

pub struct Reference {
    base: Instant,
    slots: [AtomicU64; SLOTS],
    next: AtomicUsize,
    hushed: AtomicBool,
}

impl Default for Reference {
    fn default() -> Self {
        Reference {
            base: Instant::now(),
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            next: AtomicUsize::new(0),
            hushed: AtomicBool::new(false),
        }
    }
}

impl Reference {
    fn ms(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.base).as_millis() as u64 + 1
    }

    /// The output played a block at this RMS level (0..1) just now (the audio callback).
    pub fn record(&self, rms: f32) {
        let level = (rms.clamp(0.0, 1.0) * LEVEL_SCALE) as u64;
        let packed = (self.ms(Instant::now()) << LEVEL_BITS) | level;
        let i = self.next.fetch_add(1, Ordering::Relaxed) % SLOTS;
        self.slots[i].store(packed, Ordering::Relaxed);
    }

    /// The loudest block played between `from` and `to` (0 when nothing played).
    pub fn level(&self, from: Instant, to: Instant) -> f32 {
        let (a, b) = (self.ms(from), self.ms(to));
        self.slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&p| {
                let t = p >> LEVEL_BITS;
                t >= a && t <= b
            })
            .map(|p| (p & ((1 << LEVEL_BITS) - 1)) as f32 / LEVEL_SCALE)
            .fold(0.0, f32::max)
    }

    /// The loudest block played in each of `N` slices of `slice` ending at `to`, newest first:
    /// slice `k` is `(to - (k+1)·slice, to - k·slice]` (one pass over the ring).
    pub fn slices<const N: usize>(&self, to: Instant, slice: Duration) -> [f32; N] {
        let mut out = [0.0f32; N];
        let b = self.ms(to);
        let w = slice.as_millis().max(1) as u64;
        for s in &self.slots {
            let p = s.load(Ordering::Relaxed);
            let t = p >> LEVEL_BITS;
            if t == 0 || t > b {
                continue;
            }
            let k = ((b - t) / w) as usize;
            if k < N {
                let l = (p & ((1 << LEVEL_BITS) - 1)) as f32 / LEVEL_SCALE;
                out[k] = out[k].max(l);
            }
        }
        out
    }

    /// Has the output played anything audible within `within` of now?
    pub fn sounding(&self, within: Duration) -> bool {
        let now = Instant::now();
        self.level(now.checked_sub(within).unwrap_or(self.base), now) > 1e-3
    }

    /// Pause every voice now (their samples are held, not dropped).
    pub fn hush(&self) {
        self.hushed.store(true, Ordering::SeqCst);
    }
    /// Go on where they were paused.
    pub fn unhush(&self) {
        self.hushed.store(false, Ordering::SeqCst);
    }
    pub fn hushed(&self) -> bool {
        self.hushed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_found_by_time_and_the_loudest_wins() {
        let r = Reference::default();
        let t0 = Instant::now();
        assert_eq!(r.level(t0 - Duration::from_secs(1), t0), 0.0);
        r.record(0.1);
        r.record(0.4);
        r.record(0.2);
        let now = Instant::now();
        let l = r.level(now - Duration::from_millis(100), now);
        assert!((l - 0.4).abs() < 1e-3, "{l}");
        assert!(r.sounding(Duration::from_millis(100)));
        // Out of the window: nothing.
        assert_eq!(
            r.level(now + Duration::from_millis(5), now + Duration::from_secs(1)),
            0.0
        );
        // The ring wraps without losing the newest.
        for _ in 0..1000 {
            r.record(0.05);
        }
        let now = Instant::now();
        assert!((r.level(now - Duration::from_millis(50), now) - 0.05).abs() < 1e-3);
    }

    #[test]
    fn slices_put_each_block_in_its_own_lag() {
        let r = Reference::default();
        r.record(0.3);
        std::thread::sleep(Duration::from_millis(40));
        r.record(0.1);
        let s: [f32; 8] = r.slices(Instant::now(), Duration::from_millis(16));
        assert!((s[0] - 0.1).abs() < 1e-3, "{s:?}");
        let old = s.iter().skip(1).position(|&l| (l - 0.3).abs() < 1e-3);
        assert!(old.is_some_and(|k| k >= 1), "{s:?}");
    }

    #[test]
    fn hush_is_a_flag_anyone_can_read() {
        let r = Reference::default();
        assert!(!r.hushed());
        r.hush();
        assert!(r.hushed());
        r.unhush();
        assert!(!r.hushed());
    }
}
