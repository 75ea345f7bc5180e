//! The recogniser for the room: the stock acoustic model and the noise-adapted one decode each utterance side by side, and the utterance's signal-to-noise ratio picks whose hypothesis counts.

use super::sphinx::{self, Hypothesis, Recognizer, SphinxError};

/// Below this ratio of the speech's level to the room's noise, the noise-adapted model is
/// heard. Measured (`voxdesk bench voice --part accuracy`): pink noise 10 dB below an
/// utterance's RMS estimates at 11–16 dB here; the virtual sound card's quiet, and a quiet
/// room's laptop microphone, well above 30 dB. The adapted model is the better one in noise
/// and no worse on commands down to 20 dB; above it, the stock one is kept because it is the
/// better one for voices unlike those it was adapted on.
pub const NOISY_BELOW_DB: f32 = 20.0;

/// Which model's hypothesis counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    Stock,
    Noisy,
}

/// The model for an utterance `snr_db` above the room's noise (pure).
pub fn choose(snr_db: f32) -> Model {
    if snr_db < NOISY_BELOW_DB {
        Model::Noisy
    } else {
        Model::Stock
    }
}

/// How far the speech in `pcm` rises above a room whose noise is `noise` (RMS of a frame,
/// full scale 1.0), in dB (pure): the RMS of the frames louder than twice the noise (the
/// active speech, pauses left out), over the noise. A silent room is `f32::INFINITY`.
pub fn snr_db(pcm: &[i16], frame: usize, noise: f32) -> f32 {
    let floor = noise.max(1e-5);
    let (sum, n) = pcm
        .chunks(frame.max(1))
        .map(|c| {
            c.iter()
                .map(|&s| (f32::from(s) / 32768.0).powi(2))
                .sum::<f32>()
                / c.len() as f32
        })
        .filter(|ms| ms.sqrt() > 2.0 * floor)
        .fold((0.0f32, 0usize), |(s, n), ms| (s + ms, n + 1));
    if n == 0 {
        return 0.0;
    }
    if noise <= 1e-5 {
        return f32::INFINITY;
    }
    20.0 * ((sum / n as f32).sqrt() / floor).log10()
}

/// The stock recogniser, and the noise-adapted one when it starts.
pub struct Recognizers {
    stock: Recognizer,
    noisy: Option<Recognizer>,
}

impl Recognizers {
    pub fn new(model: &sphinx::Model) -> Result<Recognizers, SphinxError> {
        let stock = Recognizer::new(model)?;
        let noisy = Recognizer::noisy(model)
            .map_err(|e| tracing::warn!("listener: no noise-adapted model: {e}"))
            .ok();
        Ok(Recognizers { stock, noisy })
    }

    fn each(&mut self) -> impl Iterator<Item = &mut Recognizer> {
        std::iter::once(&mut self.stock).chain(self.noisy.as_mut())
    }

    pub fn set_grammar(&mut self, jsgf: &str, words: &[String]) -> Result<(), SphinxError> {
        for r in self.each() {
            r.set_grammar(jsgf, words)?;
        }
        Ok(())
    }

    pub fn is_open(&self) -> bool {
        self.stock.is_open()
    }

    /// Start an utterance in both; whether the stock one (the one that must hear) started.
    pub fn begin(&mut self) -> bool {
        if let Some(n) = &mut self.noisy {
            n.begin();
        }
        self.stock.begin()
    }

    pub fn feed(&mut self, pcm: &[i16]) {
        for r in self.each() {
            r.feed(pcm);
        }
    }

    /// Drop an open utterance undecoded (another recogniser hears it).
    pub fn abandon(&mut self) {
        for r in self.each() {
            r.abandon();
        }
    }

    /// End the open utterance: the hypothesis of the model its `snr_db` picks.
    pub fn finish(&mut self, snr_db: f32) -> Option<(Hypothesis, Model)> {
        let stock = self.stock.finish();
        let noisy = self.noisy.as_mut().and_then(Recognizer::finish);
        match (choose(snr_db), noisy) {
            (Model::Noisy, Some(h)) => Some((h, Model::Noisy)),
            _ => stock.map(|h| (h, Model::Stock)),
        }
    }

    /// Decode one utterance at once.
    pub fn decode(&mut self, pcm: &[i16], snr_db: f32) -> Option<(Hypothesis, Model)> {
        self.begin();
        self.feed(pcm);
        self.finish(snr_db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(amp: f32, n: usize) -> Vec<i16> {
        (0..n)
            .map(|i| (amp * 32767.0 * (i as f32 * 0.3).sin()) as i16)
            .collect()
    }

    #[test]
    fn the_ratio_is_the_active_speech_over_the_noise() {
        // A sine of amplitude a has RMS a/√2.
        let speech = tone(0.5, 256 * 20);
        let db = |noise: f32| snr_db(&speech, 256, noise);
        assert!(
            (db(0.5 / 2f32.sqrt() / 10.0) - 20.0).abs() < 0.2,
            "{}",
            db(0.0354)
        );
        assert!((db(0.5 / 2f32.sqrt() / 3.1623) - 10.0).abs() < 0.2);
        // Pauses do not lower it: half the frames silent.
        let mut paused = speech.clone();
        paused.extend(vec![0i16; 256 * 20]);
        assert!((snr_db(&paused, 256, 0.0354) - db(0.0354)).abs() < 0.01);
        // A silent room; nothing above the noise.
        assert_eq!(snr_db(&speech, 256, 0.0), f32::INFINITY);
        assert_eq!(snr_db(&tone(0.01, 2560), 256, 0.05), 0.0);
    }

    #[test]
    fn the_noisy_model_is_heard_below_the_threshold() {
        for (db, want) in [
            (5.0, Model::Noisy),
            (10.0, Model::Noisy),
            (19.9, Model::Noisy),
            (20.0, Model::Stock),
            (45.0, Model::Stock),
            (f32::INFINITY, Model::Stock),
        ] {
            assert_eq!(choose(db), want, "{db} dB");
        }
    }
}
