//! What the speaker is playing, as the listener needs it: a wait-free record of the output's level every 10 ms (the echo guard's reference), the mixed samples themselves for the echo canceller (a wait-free ring the output callback fills), and the hush that pauses every voice from inside the audio callback.
//!
//! The audio callback only stores atomics here: no lock, no allocation, no log.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
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
    /// The mixed output's samples for the echo canceller, handed once from the output's opening
    /// to the microphone's thread (never touched by the audio callback: it holds the producer).
    far: Mutex<Option<Far>>,
    far_new: AtomicBool,
}

/// What the speaker plays, mono at the output's rate, in the order it is played.
pub struct Far {
    pub samples: rtrb::Consumer<f32>,
    pub rate: u32,
}

impl Default for Reference {
    fn default() -> Self {
        Reference {
            base: Instant::now(),
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            next: AtomicUsize::new(0),
            hushed: AtomicBool::new(false),
            far: Mutex::new(None),
            far_new: AtomicBool::new(false),
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

    /// An output opened at `rate`: the ring its callback fills with the mono mix (1 s), for
    /// [`Reference::take_far`].
    pub fn far_producer(&self, rate: u32) -> rtrb::Producer<f32> {
        let (p, c) = rtrb::RingBuffer::new(rate.max(1) as usize);
        if let Ok(mut f) = self.far.lock() {
            *f = Some(Far { samples: c, rate });
        }
        self.far_new.store(true, Ordering::Release);
        p
    }

    /// The far end, once an output has opened (again): a flag read when nothing is new.
    pub fn take_far(&self) -> Option<Far> {
        if !self.far_new.swap(false, Ordering::AcqRel) {
            return None;
        }
        self.far.lock().ok()?.take()
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
    fn the_far_end_is_handed_over_once_per_opened_output() {
        let r = Reference::default();
        assert!(r.take_far().is_none());
        let mut p = r.far_producer(48_000);
        p.push(0.5).unwrap();
        let mut f = r.take_far().expect("the far end");
        assert_eq!(f.rate, 48_000);
        assert_eq!(f.samples.pop(), Ok(0.5));
        assert!(r.take_far().is_none());
        let _p2 = r.far_producer(44_100);
        assert_eq!(r.take_far().map(|f| f.rate), Some(44_100));
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
