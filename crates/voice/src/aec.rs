//! Echo cancelled on the samples: WebRTC's echo canceller AEC3 (`sonora`, its pure-Rust port) takes what the speaker plays (the output callback's mix) and removes it from the microphone on the mic's thread, before the detector, the recogniser or a realtime model hear it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::framer::Framer;
use super::reference::{Far, Reference};

/// The canceller's rate and frame: 10 ms at 16 kHz, mono.
pub const RATE: u32 = 16_000;
const FRAME_MS: u32 = 10;

/// Render frames kept while the capture side catches up (2 s): older ones are dropped.
const MAX_RENDER: usize = 200;

/// The microphone cleaned of the speaker, owned by the mic's thread.
pub struct Canceller {
    apm: sonora::AudioProcessing,
    reference: Arc<Reference>,
    /// The far end as it arrives from the output callback, cut into 10 ms frames at 16 kHz.
    far: Option<(Far, Framer)>,
    near: Framer,
    render: VecDeque<Vec<i16>>,
    scratch: Vec<f32>,
    out: Vec<i16>,
    logged: Instant,
}

impl Canceller {
    /// For a microphone at `device_rate` with `channels` interleaved.
    pub fn new(
        reference: Arc<Reference>,
        device_rate: u32,
        channels: usize,
    ) -> Result<Canceller, String> {
        use sonora::config::EchoCanceller;
        let config = sonora::Config {
            echo_canceller: Some(EchoCanceller::default()),
            ..Default::default()
        };
        let apm = sonora::AudioProcessing::builder()
            .config(config)
            .capture_config(sonora::StreamConfig::new(RATE, 1))
            .render_config(sonora::StreamConfig::new(RATE, 1))
            .build();
        Ok(Canceller {
            apm,
            reference,
            far: None,
            near: Framer::new(device_rate, RATE, FRAME_MS, channels)?,
            render: VecDeque::new(),
            scratch: Vec::new(),
            out: vec![0; (RATE * FRAME_MS / 1000) as usize],
            logged: Instant::now(),
        })
    }

    /// A chunk of the microphone (interleaved, at the device's rate) in; what it heard of the
    /// room, without what the speaker played, out (mono at [`RATE`], as f32 in −1..1). Before an
    /// output has opened, the microphone passes through resampled.
    pub fn push(&mut self, interleaved: &[f32], cleaned: &mut Vec<f32>) {
        if let Some(f) = self.reference.take_far() {
            match Framer::new(f.rate, RATE, FRAME_MS, 1) {
                Ok(framer) => self.far = Some((f, framer)),
                Err(e) => tracing::warn!("echo canceller: {e}"),
            }
        }
        // Everything the speaker has been given so far is rendered before the microphone's
        // newest frames are processed: the echo in them can only be of what came earlier.
        if let Some((far, framer)) = &mut self.far {
            self.scratch.clear();
            let n = far.samples.slots();
            if let Ok(c) = far.samples.read_chunk(n) {
                self.scratch.extend(c);
            }
            let render = &mut self.render;
            framer.push(&self.scratch, |pcm| render.push_back(pcm));
            while self.render.len() > MAX_RENDER {
                self.render.pop_front();
            }
        }
        let active = self.far.is_some();
        let (apm, render, out) = (&mut self.apm, &mut self.render, &mut self.out);
        self.near.push(interleaved, |pcm| {
            if !active {
                cleaned.extend(pcm.iter().map(|&s| f32::from(s) / 32768.0));
                return;
            }
            let mut sink = vec![0i16; pcm.len()];
            while let Some(r) = render.pop_front() {
                let _ = apm.process_render_i16(&r, &mut sink);
            }
            if apm.process_capture_i16(&pcm, out).is_err() {
                out.copy_from_slice(&pcm);
            }
            cleaned.extend(out.iter().map(|&s| f32::from(s) / 32768.0));
        });
        if active && self.logged.elapsed() > Duration::from_secs(10) {
            self.logged = Instant::now();
            let st = self.apm.statistics();
            tracing::debug!(
                "echo canceller: delay {:?} ms, ERLE {:?} dB, ERL {:?} dB",
                st.delay_ms,
                st.echo_return_loss_enhancement,
                st.echo_return_loss
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Speech-like sound: a buzz (glottal pulses at a gliding pitch) and a hiss, both through a
    /// resonance, in syllables a few per second.
    fn voice(n: usize, rate: f32, seed: u64) -> Vec<f32> {
        let mut x = seed.max(1) * 0x9e37_79b9;
        let (mut y1, mut y2, mut phase) = (0.0f32, 0.0f32, 0.0f32);
        (0..n)
            .map(|i| {
                let t = i as f32 / rate;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let w = (x >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
                let f0 = 120.0 + 30.0 * (t * 1.7 + seed as f32).sin();
                phase += f0 / rate;
                let pulse = if phase >= 1.0 {
                    phase -= 1.0;
                    1.0
                } else {
                    0.0
                };
                let syllable = (t * 4.0 + seed as f32).sin().max(0.0);
                let f = 500.0 + 400.0 * (t * 2.3 + seed as f32).sin();
                let r = 0.97f32;
                let c = 2.0 * r * (std::f32::consts::TAU * f / rate).cos();
                let y = c * y1 - r * r * y2 + pulse + 0.1 * w;
                y2 = y1;
                y1 = y;
                0.02 * syllable * y
            })
            .collect()
    }

    fn rms(v: &[f32]) -> f32 {
        (v.iter().map(|s| s * s).sum::<f32>() / v.len().max(1) as f32).sqrt()
    }

    #[test]
    fn before_an_output_opens_the_microphone_passes_through() {
        let r = Arc::new(Reference::default());
        let mut c = Canceller::new(r, RATE, 1).unwrap();
        let mic: Vec<f32> = (0..1600).map(|i| (i as f32 * 0.05).sin() * 0.3).collect();
        let mut out = Vec::new();
        c.push(&mic, &mut out);
        assert_eq!(out.len(), 1600);
        assert!((out[100] - mic[100]).abs() < 1e-3);
    }

    /// The speaker's sound, 60 ms late and 10 dB down, comes back through the microphone; the
    /// canceller learns the path and takes it out, and a voice in the room stays.
    #[test]
    fn the_speakers_echo_is_removed_and_the_room_is_kept() {
        let r = Arc::new(Reference::default());
        let mut c = Canceller::new(r.clone(), RATE, 1).unwrap();
        let mut far = r.far_producer(RATE);
        let seconds = 8;
        let n = RATE as usize * seconds;
        let played = voice(n, RATE as f32, 1);
        let delay = RATE as usize * 60 / 1000;
        let near_talker = voice(n, RATE as f32, 7);
        let (mut echo_in, mut echo_out, mut talk_in, mut talk_out) =
            (vec![], vec![], vec![], vec![]);
        let step = 160;
        for k in (0..n).step_by(step) {
            for &s in &played[k..k + step] {
                far.push(s).unwrap();
            }
            let talking = k >= 6 * RATE as usize;
            let mic: Vec<f32> = (k..k + step)
                .map(|i| {
                    let e = if i >= delay {
                        played[i - delay] * 0.316
                    } else {
                        0.0
                    };
                    e + if talking { near_talker[i] } else { 0.0 }
                })
                .collect();
            let mut out = Vec::new();
            c.push(&mic, &mut out);
            if (4 * RATE as usize..6 * RATE as usize).contains(&k) {
                echo_in.extend(mic);
                echo_out.extend(out);
            } else if talking {
                talk_in.extend(near_talker[k..k + step].iter().copied());
                talk_out.extend(out);
            }
        }
        let erle = 20.0 * (rms(&echo_in) / rms(&echo_out).max(1e-9)).log10();
        assert!(erle > 15.0, "echo reduced by only {erle:.1} dB");
        let kept = 20.0 * (rms(&talk_out) / rms(&talk_in)).log10();
        assert!(kept > -10.0, "the room's voice lost {kept:.1} dB");
    }
}
