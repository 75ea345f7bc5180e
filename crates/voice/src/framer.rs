//! Interleaved device samples → mono → a model's rate (rubato) → frames of PCM16 (pure, testable): what the mic's thread and the echo canceller cut their audio with.

use std::time::Duration;

/// Interleaved device samples → mono → the model's rate → frames of PCM16 (pure, testable).
pub struct Framer {
    channels: usize,
    resampler: Option<(rubato::Fft<f32>, Vec<f32>, Vec<f32>)>,
    /// Mono samples at the device rate waiting for a full resampler chunk.
    mono: Vec<f32>,
    /// Samples at the model's rate waiting for a full frame.
    out: Vec<i16>,
    frame: usize,
    from: u32,
    to: u32,
}

impl Framer {
    pub fn new(from: u32, to: u32, frame_ms: u32, channels: usize) -> Result<Framer, String> {
        let frame = (to as usize * frame_ms as usize) / 1000;
        let resampler = if from == to {
            None
        } else {
            let chunk = (from as usize * frame_ms as usize) / 1000;
            let r = rubato::Fft::<f32>::new(
                from as usize,
                to as usize,
                chunk,
                1,
                rubato::FixedSync::Input,
            )
            .map_err(|e| format!("no resampler from {from} Hz to {to} Hz: {e}"))?;
            use rubato::Resampler;
            let out = vec![0.0; r.output_frames_max()];
            Some((r, Vec::with_capacity(chunk), out))
        };
        Ok(Framer {
            channels: channels.max(1),
            resampler,
            mono: Vec::new(),
            out: Vec::new(),
            frame: frame.max(1),
            from: from.max(1),
            to: to.max(1),
        })
    }

    /// How long a frame lasts.
    pub fn frame_duration(&self) -> Duration {
        Duration::from_secs_f64(self.frame as f64 / f64::from(self.to))
    }

    /// The audio held back after the last frame emitted (short of a resampler chunk or of a
    /// frame): how long before the newest sample pushed that frame ended.
    pub fn held(&self) -> Duration {
        Duration::from_secs_f64(
            self.out.len() as f64 / f64::from(self.to)
                + self.mono.len() as f64 / f64::from(self.from),
        )
    }

    /// Take interleaved samples; call `emit` with each full frame.
    pub fn push(&mut self, interleaved: &[f32], mut emit: impl FnMut(Vec<i16>)) {
        for f in interleaved.chunks(self.channels) {
            self.mono.push(f.iter().sum::<f32>() / f.len() as f32);
        }
        match &mut self.resampler {
            None => self.out.extend(self.mono.drain(..).map(to_i16)),
            Some((r, input, output)) => {
                use audioadapter_buffers::direct::SequentialSliceOfVecs;
                use rubato::Resampler;
                loop {
                    let need = r.input_frames_next();
                    if self.mono.len() < need {
                        break;
                    }
                    input.clear();
                    input.extend(self.mono.drain(..need));
                    let ins = [std::mem::take(input)];
                    let mut outs = [std::mem::take(output)];
                    let cap = outs[0].len();
                    let res = match (
                        SequentialSliceOfVecs::new(&ins[..], 1, need),
                        SequentialSliceOfVecs::new_mut(&mut outs[..], 1, cap),
                    ) {
                        (Ok(i), Ok(mut o)) => r.process_into_buffer(&i, &mut o, None),
                        _ => break,
                    };
                    let [i] = ins;
                    let [o] = outs;
                    *input = i;
                    *output = o;
                    if let Ok((_, written)) = res {
                        self.out
                            .extend(output[..written].iter().copied().map(to_i16));
                    }
                }
            }
        }
        while self.out.len() >= self.frame {
            let rest = self.out.split_off(self.frame);
            emit(std::mem::replace(&mut self.out, rest));
        }
    }
}

fn to_i16(s: f32) -> i16 {
    (s.clamp(-1.0, 1.0) * 32767.0) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(rate: u32, ms: u32, channels: usize) -> Vec<f32> {
        let n = (rate * ms / 1000) as usize;
        (0..n)
            .flat_map(|i| {
                let s = (i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin() * 0.5;
                std::iter::repeat_n(s, channels)
            })
            .collect()
    }

    #[test]
    fn what_is_held_after_the_last_frame_is_its_age() {
        // Same rate: 40 ms in, two 16 ms frames out and 8 ms held.
        let mut f = Framer::new(16_000, 16_000, 16, 1).unwrap();
        let mut n = 0;
        f.push(&tone(16_000, 40, 1), |_| n += 1);
        assert_eq!((n, f.frame_duration()), (2, Duration::from_millis(16)));
        assert_eq!(f.held(), Duration::from_millis(8));
        // Resampled: never more held than a frame and a resampler chunk (16 ms each).
        let mut f = Framer::new(48_000, 16_000, 16, 2).unwrap();
        for ms in [5, 40, 3, 16, 27] {
            f.push(&tone(48_000, ms, 2), |_| {});
            assert!(f.held() < Duration::from_millis(32), "{:?}", f.held());
        }
    }

    #[test]
    fn frames_have_the_models_rate_and_length_whatever_the_device() {
        for (from, to, channels) in [
            (48_000, 16_000, 2),
            (44_100, 24_000, 1),
            (16_000, 16_000, 1),
        ] {
            let mut f = Framer::new(from, to, 20, channels).unwrap();
            let mut frames = Vec::new();
            // One second, in uneven pieces as a callback delivers it.
            let t = tone(from, 1000, channels);
            for piece in t.chunks(channels * 441) {
                f.push(piece, |pcm| frames.push(pcm));
            }
            assert!(frames.iter().all(|p| p.len() == (to / 50) as usize));
            // One second in, within a frame or two of delay.
            let samples: usize = frames.iter().map(Vec::len).sum();
            assert!(
                samples as i64 >= i64::from(to) - 3 * i64::from(to / 50),
                "{from}->{to}: {samples}"
            );
            // The tone survives: its loudness is about 0.5 * 32767 / sqrt(2).
            let all: Vec<i16> = frames.concat();
            let mid = &all[all.len() / 4..all.len() * 3 / 4];
            let rms =
                (mid.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / mid.len() as f64).sqrt();
            assert!((10_000.0..13_500.0).contains(&rms), "{from}->{to}: {rms}");
        }
    }
}
