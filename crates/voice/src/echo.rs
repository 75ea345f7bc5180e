//! The echo path's delay (pure): which of the recent 16 ms slices of what the speaker played the microphone is hearing now, found as the lag whose played levels follow the microphone's best, so the echo guard compares speech with the echo of that moment instead of the loudest of the last second.
//!
//! Time is counted in frames (16 ms each); nothing here reads a clock.

/// Lags looked at: 0 to 63 frames (0–1 s) between playing a block and hearing it. The sound
/// server's buffer grows on a busy machine (measured: with PulseAudio's latency at 250 ms the
/// echo arrived past a 240 ms window and paused the voice four times in three sentences).
pub const LAGS: usize = 64;
/// Frames later than the lag found that the echo may still arrive: a busy machine's sound
/// server grows its buffer while the voice plays, and the lag, learnt over seconds, follows
/// late (CI: learnt at 3 frames, the echo of a loud word came 8-9 frames after it was
/// played and paused the voice). About 100 ms.
pub const LATE: usize = 6;
/// Played frames needed before a lag is trusted.
const WARM: u32 = 60;
/// How quickly old frames are forgotten (about 3 s).
const DECAY: f64 = 1.0 / 190.0;
/// A lag is trusted only when the levels follow each other this well (Pearson's r).
const MIN_R: f64 = 0.5;

/// Running (exponentially forgotten) sums for one lag: enough for Pearson's r.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    y: f64,
    yy: f64,
    xy: f64,
}

#[derive(Debug, Clone)]
pub struct EchoPath {
    n: f64,
    x: f64,
    xx: f64,
    lags: [Sums; LAGS],
    frames: u32,
    lag: Option<usize>,
}

impl Default for EchoPath {
    fn default() -> Self {
        EchoPath {
            n: 0.0,
            x: 0.0,
            xx: 0.0,
            lags: [Sums::default(); LAGS],
            frames: 0,
            lag: None,
        }
    }
}

impl EchoPath {
    /// The lag found so far (frames), if one is trusted.
    pub fn lag(&self) -> Option<usize> {
        self.lag
    }

    /// Take one microphone frame: its level, and what was played `k` frames before it for
    /// every lag `k` (the loudest 10 ms block in that 16 ms slice). `learn`: the voice plays
    /// unpaused, so what the microphone hears is mostly its echo. Returns the played level to
    /// compare with the echo: the loudest from the slice before the aligned one to [`LATE`]
    /// slices after it when the lag is known, the loudest of every lag otherwise.
    pub fn step(&mut self, mic: f32, played: &[f32; LAGS], learn: bool) -> f32 {
        let loud = played.iter().copied().fold(0.0, f32::max);
        if learn && loud > 0.01 {
            let x = f64::from(mic);
            let keep = 1.0 - DECAY;
            self.n = self.n * keep + 1.0;
            self.x = self.x * keep + x;
            self.xx = self.xx * keep + x * x;
            for (s, &y) in self.lags.iter_mut().zip(played) {
                let y = f64::from(y);
                s.y = s.y * keep + y;
                s.yy = s.yy * keep + y * y;
                s.xy = s.xy * keep + x * y;
            }
            self.frames = self.frames.saturating_add(1);
            if self.frames >= WARM {
                self.lag = self.best();
            }
        }
        match self.lag {
            Some(k) => played[k.saturating_sub(1)..(k + 2 + LATE).min(LAGS)]
                .iter()
                .copied()
                .fold(0.0, f32::max),
            None => loud,
        }
    }

    fn best(&self) -> Option<usize> {
        let n = self.n;
        let vx = self.xx - self.x * self.x / n;
        let (k, r) = self
            .lags
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let vy = s.yy - s.y * s.y / n;
                let c = s.xy - self.x * s.y / n;
                let r = if vx > 1e-12 && vy > 1e-12 {
                    c / (vx * vy).sqrt()
                } else {
                    0.0
                };
                (k, r)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        (r >= MIN_R).then_some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A speech-like envelope: syllables of varying loudness with gaps.
    fn envelope(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let u = (x >> 40) as f32 / (1u64 << 24) as f32;
                if u < 0.3 {
                    0.0
                } else {
                    0.05 + 0.25 * u
                }
            })
            .collect()
    }

    fn window(env: &[f32], t: usize) -> [f32; LAGS] {
        std::array::from_fn(|k| if t >= k { env[t - k] } else { 0.0 })
    }

    #[test]
    fn the_delay_is_found_and_the_aligned_level_is_given() {
        for delay in [0usize, 3, 7, 12] {
            let env = envelope(400, 42 + delay as u64);
            let mut p = EchoPath::default();
            for t in 0..300 {
                let mic = if t >= delay {
                    0.3 * env[t - delay]
                } else {
                    0.0
                } + 0.001;
                p.step(mic, &window(&env, t), true);
            }
            assert_eq!(p.lag(), Some(delay), "delay {delay}");
            let w = window(&env, 350);
            let got = p.step(0.0, &w, false);
            let lo = delay.saturating_sub(1);
            let want = w[lo..(delay + 2 + LATE).min(LAGS)]
                .iter()
                .copied()
                .fold(0.0, f32::max);
            assert_eq!(got, want);
        }
    }

    #[test]
    fn until_it_is_known_the_loudest_of_every_lag_is_used() {
        let env = envelope(100, 7);
        let mut p = EchoPath::default();
        let w = window(&env, 50);
        assert_eq!(p.lag(), None);
        assert_eq!(p.step(0.1, &w, true), w.iter().copied().fold(0.0, f32::max));
        // A microphone that does not follow the speaker (a headset) finds no lag.
        let mut p = EchoPath::default();
        let other = envelope(400, 99);
        for (t, &o) in other.iter().enumerate().take(300) {
            p.step(o, &window(&env.repeat(4), t), true);
        }
        assert_eq!(p.lag(), None);
    }

    #[test]
    fn silence_teaches_nothing() {
        let mut p = EchoPath::default();
        for _ in 0..500 {
            assert_eq!(p.step(0.2, &[0.0; LAGS], true), 0.0);
        }
        assert_eq!(p.lag(), None);
    }
}
