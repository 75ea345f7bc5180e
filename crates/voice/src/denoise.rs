//! Speech enhancement for the listener in a noisy room: RNNoise (the `nnnoiseless` port) on the microphone's 16 kHz frames, resampled to its 48 kHz and back with the mic's own framer; frames in, as many frames out, some 50 ms later (the resamplers' and RNNoise's buffering).

use nnnoiseless::DenoiseState;

use super::mic::Framer;

const RATE: u32 = 16_000;
const RNN_RATE: u32 = 48_000;
/// RNNoise's frame: 480 samples at 48 kHz.
const RNN_MS: u32 = 10;

pub struct Denoiser {
    up: Framer,
    down: Framer,
    rnn: Box<DenoiseState<'static>>,
    out: Vec<f32>,
    started: bool,
}

impl Denoiser {
    /// A denoiser for frames of `frame_ms` at 16 kHz.
    pub fn new(frame_ms: u32) -> Result<Denoiser, String> {
        Ok(Denoiser {
            up: Framer::new(RATE, RNN_RATE, RNN_MS, 1)?,
            down: Framer::new(RNN_RATE, RATE, frame_ms, 1)?,
            rnn: DenoiseState::new(),
            out: vec![0.0; DenoiseState::FRAME_SIZE],
            started: false,
        })
    }

    /// Take one frame of PCM16; call `emit` with each cleaned frame ready (none while the
    /// resamplers fill, then one per frame taken, on average).
    pub fn push(&mut self, pcm: &[i16], mut emit: impl FnMut(Vec<i16>)) {
        let input: Vec<f32> = pcm.iter().map(|&s| f32::from(s) / 32768.0).collect();
        let (rnn, out, down, started) = (
            &mut self.rnn,
            &mut self.out,
            &mut self.down,
            &mut self.started,
        );
        self.up.push(&input, |f48| {
            // RNNoise works on samples at the scale of 16-bit PCM.
            let x: Vec<f32> = f48.iter().map(|&s| f32::from(s)).collect();
            rnn.process_frame(out, &x);
            if !*started {
                // Its first frame fades in.
                *started = true;
                out.iter_mut().for_each(|s| *s = 0.0);
            }
            let y: Vec<f32> = out.iter().map(|&s| s / 32768.0).collect();
            down.push(&y, &mut emit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<i16> {
        let mut x = seed.max(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 48) as i16) / 16
            })
            .collect()
    }

    fn rms(v: &[i16]) -> f64 {
        (v.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / v.len().max(1) as f64).sqrt()
    }

    #[test]
    fn frames_in_make_as_many_frames_out_and_steady_noise_is_lowered() {
        let mut d = Denoiser::new(16).unwrap();
        let input = noise(256 * 400, 7);
        let mut out: Vec<i16> = Vec::new();
        let mut frames = 0;
        for f in input.chunks(256) {
            d.push(f, |o| {
                assert_eq!(o.len(), 256);
                frames += 1;
                out.extend(o);
            });
        }
        // A few frames are still in the resamplers.
        assert!((395..=400).contains(&frames), "{frames}");
        // After a second to learn it, white noise is brought down by far more than 6 dB.
        let (a, b) = (rms(&input[256 * 100..]), rms(&out[256 * 100..]));
        assert!(b < a / 2.0, "{a} → {b}");
    }

    #[test]
    fn silence_stays_silent() {
        let mut d = Denoiser::new(16).unwrap();
        let mut peak = 0i16;
        for _ in 0..100 {
            d.push(&[0i16; 256], |o| {
                peak = peak.max(o.iter().map(|s| s.saturating_abs()).max().unwrap_or(0))
            });
        }
        assert!(peak <= 1, "{peak}");
    }
}
