//! Moonshine base (English, MIT) through ONNX Runtime: the encoder once per utterance, then greedy decoding with the decoder's key/value cache, 13 tokens per second of audio at most; the words come back with the model's mean log-probability, so callers can tell a sure hearing from a guess. Runs on the caller's thread: never the audio callback, never the async runtime.

pub mod vocab;
pub mod within;

use std::path::{Path, PathBuf};
use std::time::Instant;

use voxdesk_onnx::ort;
use voxdesk_onnx::ort::session::{Session, SessionInputValue};
use voxdesk_onnx::ort::value::{DynValue, Tensor};
use voxdesk_onnx::{need, OnnxError};

pub use vocab::Vocab;
pub use within::Phrases;

/// The sample rate the model takes (mono, floats in [-1, 1]).
pub const RATE: usize = 16_000;
/// Where `cargo xtask models` puts the English base model, inside the models directory.
pub const MODEL: &str = "moonshine-base-en";
/// `<s>`, `</s>`.
const START: i64 = 1;
const END: i64 = 2;
/// The decoder's attention heads and head width (base: 8 × 52 = 416).
const HEADS: usize = 8;
const HEAD_DIM: usize = 52;
/// The most tokens per second of audio (Moonshine's own library: ceil(seconds × 13)).
const TOKENS_PER_SECOND: f64 = 13.0;
/// The shortest utterance the encoder takes (one frame needs 895 samples) and the longest the
/// model was trained for.
const MIN_SAMPLES: usize = 1_600;
const MAX_SAMPLES: usize = 64 * RATE;
/// An utterance that came back empty is tried once more this much shorter (measured: one clean
/// 12 s clip gave nothing until 0.3 s were trimmed).
const RETRY_TRIM: usize = RATE * 3 / 10;

#[derive(Debug, thiserror::Error)]
pub enum RecogniseError {
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    #[error(transparent)]
    Vocab(#[from] vocab::VocabError),
    #[error("reading {path}: {why}")]
    Read { path: PathBuf, why: String },
    #[error("the recogniser failed: {0}")]
    Run(String),
}

fn run_err(e: impl std::fmt::Display) -> RecogniseError {
    RecogniseError::Run(e.to_string())
}

/// What was heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub text: String,
    /// Tokens decoded (the end token not counted).
    pub tokens: usize,
    /// Mean natural-log probability the model gave the tokens it chose, the end token
    /// included (0 is certain; a guess is well below -1).
    pub logprob: f32,
    /// Time to transcribe, encoder and decoder.
    pub ms: f64,
}

/// The loaded model. One per listener; `transcribe` takes `&mut self` (ONNX sessions run one
/// call at a time).
pub struct Moonshine {
    encoder: Session,
    decoder: Session,
    past: Vec<String>,
    vocab: Vocab,
    /// Each token's letters (for decoding held to phrases).
    letters: Vec<Option<String>>,
}

/// The phrase the model finds likeliest among those it was held to, with the mean and the
/// lowest log-probability of its tokens (the end included).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub phrase: usize,
    pub logprob: f32,
    pub worst: f32,
    /// Held only to lead with the phrase ([`Hold::Lead`]): the whole transcript, the phrase
    /// and the words the model heard after it, free.
    pub text: Option<String>,
}

/// How the free transcript is followed up (see [`Moonshine::transcribe_within`]).
pub enum Hold<'a> {
    /// It stands.
    Free,
    /// Decoded again held to one of these phrases, whole.
    To(&'a Phrases),
    /// Decoded again held to begin with one of these phrases ("type"), the rest free.
    Lead(&'a Phrases),
}

impl Moonshine {
    /// Load the model from `models` (the models directory: its runtime and `moonshine-base-en`),
    /// its work on `threads` threads.
    pub fn load(models: &Path, threads: usize) -> Result<Moonshine, RecogniseError> {
        let dir = models.join(MODEL);
        let encoder = need("Moonshine's encoder", dir.join("encoder_model.ort"))?;
        let decoder = need("Moonshine's decoder", dir.join("decoder_model_merged.ort"))?;
        let tokenizer = need("Moonshine's tokenizer", dir.join("tokenizer.json"))?;
        let text = std::fs::read_to_string(&tokenizer).map_err(|e| RecogniseError::Read {
            path: tokenizer.clone(),
            why: e.to_string(),
        })?;
        let vocab = Vocab::from_json(&text)?;
        let env = voxdesk_onnx::environment(models)?;
        let encoder = voxdesk_onnx::session(&env, &encoder, threads)?;
        let decoder = voxdesk_onnx::session(&env, &decoder, threads)?;
        let past: Vec<String> = decoder
            .inputs()
            .iter()
            .map(|i| i.name().to_string())
            .filter(|n| n.starts_with("past_key_values."))
            .collect();
        if past.is_empty() {
            return Err(RecogniseError::Run(
                "the decoder takes no key/value cache: not Moonshine's merged decoder".into(),
            ));
        }
        let letters = vocab.letters();
        Ok(Moonshine {
            encoder,
            decoder,
            past,
            vocab,
            letters,
        })
    }

    /// The words in `samples` (16 kHz mono, [-1, 1]). Too short an utterance is an empty
    /// transcript; a longer one than the model takes is cut to its last 64 s.
    pub fn transcribe(&mut self, samples: &[f32]) -> Result<Transcript, RecogniseError> {
        Ok(self.transcribe_within(samples, &|_| Hold::Free)?.0)
    }

    /// [`Moonshine::transcribe`], and, when `hold` says so of the free transcript, the phrase
    /// the model finds likeliest for the same sound among those it names (decoding held to
    /// them: see [`within`]), whole or leading the sentence.
    pub fn transcribe_within<'a>(
        &mut self,
        samples: &[f32],
        hold: &dyn Fn(&str) -> Hold<'a>,
    ) -> Result<(Transcript, Option<Choice>), RecogniseError> {
        let t0 = Instant::now();
        let samples = &samples[samples.len().saturating_sub(MAX_SAMPLES)..];
        if samples.len() < MIN_SAMPLES {
            let t = Transcript {
                text: String::new(),
                tokens: 0,
                logprob: 0.0,
                ms: 0.0,
            };
            return Ok((t, None));
        }
        let hidden = self.encode(samples)?;
        let limit = max_tokens(samples.len());
        let (mut ids, mut logprob, _) = self.decode(&hidden, limit, None, false)?;
        if ids.is_empty() && samples.len() >= MIN_SAMPLES + RETRY_TRIM {
            let trimmed = self.encode(&samples[RETRY_TRIM..])?;
            (ids, logprob, _) = self.decode(&trimmed, limit, None, false)?;
        }
        let ids32: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
        let text = once(&self.vocab.text(&ids32)).to_string();
        let choice = match hold(&text) {
            Hold::To(p) if p.count > 0 => {
                let (ids, mean, worst) = self.decode(&hidden, limit, Some(p), false)?;
                ids.last().map(|&phrase| Choice {
                    phrase: phrase as usize,
                    logprob: mean,
                    worst,
                    text: None,
                })
            }
            Hold::Lead(p) if p.count > 0 => {
                let (ids, mean, worst) = self.decode(&hidden, limit, Some(p), true)?;
                (!ids.is_empty()).then(|| {
                    let ids32: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
                    Choice {
                        phrase: 0,
                        logprob: mean,
                        worst,
                        text: Some(once(&self.vocab.text(&ids32)).to_string()),
                    }
                })
            }
            _ => None,
        };
        let t = Transcript {
            text,
            tokens: ids.len(),
            logprob,
            ms: t0.elapsed().as_secs_f64() * 1000.0,
        };
        Ok((t, choice))
    }

    fn encode(&mut self, samples: &[f32]) -> Result<DynValue, RecogniseError> {
        let input =
            Tensor::from_array(([1usize, samples.len()], samples.to_vec())).map_err(run_err)?;
        let mut out = self
            .encoder
            .run(ort::inputs!["input_values" => input])
            .map_err(run_err)?;
        out.remove("last_hidden_state")
            .ok_or_else(|| run_err("the encoder gave no last_hidden_state"))
    }

    /// Greedy decoding, free or held to `within`: token ids (held: the chosen phrase's index
    /// as the last id; empty when no phrase was finished), the mean and lowest
    /// log-probability of each choice. Held to `lead` with a phrase only: the ids of the
    /// phrase and of the free words after it, the probabilities the phrase's (empty when no
    /// phrase was finished).
    fn decode(
        &mut self,
        hidden: &DynValue,
        limit: usize,
        mut within: Option<&Phrases>,
        lead: bool,
    ) -> Result<(Vec<i64>, f32, f32), RecogniseError> {
        let mut past: Vec<DynValue> = Vec::with_capacity(self.past.len());
        for _ in &self.past {
            past.push(
                Tensor::<f32>::from_array(([1usize, HEADS, 0, HEAD_DIM], Vec::<f32>::new()))
                    .map_err(run_err)?
                    .into_dyn(),
            );
        }
        let (mut ids, mut sum, mut picks, mut worst) = (Vec::new(), 0.0f64, 0usize, 0.0f32);
        let mut last = START;
        let mut node = 0usize;
        let mut led: Option<(f32, f32)> = None;
        for step in 0..limit + 1 {
            if within.is_some_and(|p| lead && !p.ends(node).is_empty()) {
                // The phrase leads; what follows is the model's own.
                led = Some(((sum / picks.max(1) as f64) as f32, worst));
                within = None;
            }
            let cached = step > 0;
            let mut inputs: Vec<(std::borrow::Cow<'_, str>, SessionInputValue<'_>)> = ort::inputs![
                "input_ids" => Tensor::from_array(([1usize, 1], vec![last])).map_err(run_err)?,
                "encoder_hidden_states" => hidden,
                "use_cache_branch" => Tensor::from_array(([1usize], vec![cached])).map_err(run_err)?,
            ];
            for (name, v) in self.past.iter().zip(past.iter()) {
                inputs.push((name.as_str().into(), v.into()));
            }
            let mut out = self.decoder.run(inputs).map_err(run_err)?;
            let (tok, lp) = {
                let (_, logits) = out["logits"].try_extract_tensor::<f32>().map_err(run_err)?;
                match within {
                    None => pick(logits),
                    Some(p) => {
                        let allowed =
                            within::best_allowed(p, node, &self.letters, logits, END as usize);
                        let Some((tok, next)) = allowed else {
                            return Ok((Vec::new(), f32::NEG_INFINITY, f32::NEG_INFINITY));
                        };
                        node = next;
                        (tok as i64, log_softmax(logits, tok))
                    }
                }
            };
            sum += lp as f64;
            picks += 1;
            worst = worst.min(lp);
            if tok == END {
                if let Some(p) = within {
                    // The phrase finished here (the first of those that share its letters).
                    return Ok(match p.ends(node).first() {
                        Some(&i) => (vec![i as i64], (sum / picks as f64) as f32, worst),
                        None => (Vec::new(), f32::NEG_INFINITY, worst),
                    });
                }
                break;
            }
            if step == limit {
                if within.is_some() {
                    return Ok((Vec::new(), f32::NEG_INFINITY, worst));
                }
                break;
            }
            ids.push(tok);
            last = tok;
            // A decoder caught in a loop (noise heard as "stop stop stop …"): one is kept.
            if within.is_none() {
                if let Some(keep) = looping(&ids) {
                    ids.truncate(keep);
                    break;
                }
            }
            // The decoder's own keys and values grow every step; the encoder's are computed
            // once, at the first.
            for (i, name) in self.past.iter().enumerate() {
                if !cached || name.contains(".decoder.") {
                    let present = name.replacen("past_key_values.", "present.", 1);
                    past[i] = out
                        .remove(present.as_str())
                        .ok_or_else(|| run_err(format!("the decoder gave no {present}")))?;
                }
            }
        }
        if lead {
            return Ok(match led {
                Some((mean, worst)) => (ids, mean, worst),
                None => (Vec::new(), f32::NEG_INFINITY, worst),
            });
        }
        Ok((ids, (sum / picks.max(1) as f64) as f32, worst))
    }
}

/// The log-probability of token `id` under `logits`.
pub fn log_softmax(logits: &[f32], id: usize) -> f32 {
    let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if !top.is_finite() {
        return f32::NEG_INFINITY;
    }
    let sum: f64 = logits.iter().map(|&v| ((v - top) as f64).exp()).sum();
    logits
        .get(id)
        .map_or(f32::NEG_INFINITY, |&l| l - top - sum.ln() as f32)
}

/// When `ids` ends in the same run of up to six tokens three times over, the length that keeps
/// the first of them.
pub fn looping(ids: &[i64]) -> Option<usize> {
    (1..=6).find_map(|n| {
        let l = ids.len();
        (l >= 3 * n
            && ids[l - n..] == ids[l - 2 * n..l - n]
            && ids[l - n..] == ids[l - 3 * n..l - 2 * n])
            .then(|| l - 2 * n)
    })
}

/// A transcript that is one phrase of two words or more said over and over ("Click plus click
/// plus" out of noise), whatever its capitals and punctuation: the phrase once. Acting on it
/// twice would be the worse mistake; two one-word repeats ("seven seven") may be meant.
pub fn once(text: &str) -> &str {
    let words: Vec<(usize, String)> = text
        .split_whitespace()
        .map(|w| {
            let at = w.as_ptr() as usize - text.as_ptr() as usize + w.len();
            let norm: String = w
                .chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect();
            (at, norm)
        })
        .collect();
    let l = words.len();
    (2..=l / 2)
        .find(|&b| {
            l % b == 0
                && words
                    .chunks(b)
                    .all(|c| c.iter().zip(&words[..b]).all(|(x, y)| x.1 == y.1))
        })
        .map_or(text, |b| {
            text[..words[b - 1].0].trim_end_matches([',', ';'])
        })
}

/// The most tokens `samples` may hold.
pub fn max_tokens(samples: usize) -> usize {
    (samples as f64 / RATE as f64 * TOKENS_PER_SECOND).ceil() as usize
}

/// The most likely token of `logits` and its log-probability.
pub fn pick(logits: &[f32]) -> (i64, f32) {
    let (best, top) = logits
        .iter()
        .enumerate()
        .fold((0usize, f32::NEG_INFINITY), |b, (i, &v)| {
            if v > b.1 {
                (i, v)
            } else {
                b
            }
        });
    if !top.is_finite() {
        return (END, f32::NEG_INFINITY);
    }
    let sum: f64 = logits.iter().map(|&v| ((v - top) as f64).exp()).sum();
    (best as i64, -(sum.ln() as f32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_budget_is_thirteen_a_second_rounded_up() {
        for (samples, want) in [(0, 0), (1, 1), (16_000, 13), (30_560, 25), (160_000, 130)] {
            assert_eq!(max_tokens(samples), want, "{samples}");
        }
    }

    #[test]
    fn the_pick_is_the_argmax_with_its_log_probability() {
        let (t, lp) = pick(&[0.0, 10.0, 0.0]);
        assert_eq!(t, 1);
        assert!(lp > -0.001 && lp <= 0.0, "{lp}");
        let (t, lp) = pick(&[1.0, 1.0]);
        assert_eq!(t, 0);
        assert!((lp - (0.5f32).ln()).abs() < 1e-5, "{lp}");
        // Nothing usable: the end, never a panic.
        assert_eq!(pick(&[]).0, END);
        assert_eq!(pick(&[f32::NAN, f32::NAN]).0, END);
    }

    #[test]
    fn a_loop_ends_with_one_of_it_and_a_repeated_phrase_is_said_once() {
        assert_eq!(looping(&[5, 5, 5]), Some(1));
        assert_eq!(looping(&[9, 5, 6, 5, 6, 5, 6]), Some(3));
        assert_eq!(looping(&[5, 5]), None);
        assert_eq!(looping(&[1, 2, 3, 4]), None);
        for (heard, kept) in [
            ("Click plus click plus", "Click plus"),
            ("Click plus. Click plus.", "Click plus."),
            ("stop, stop, stop", "stop, stop, stop"),
            ("Seven seven", "Seven seven"),
            ("Click plus, click", "Click plus, click"),
            ("", ""),
        ] {
            assert_eq!(once(heard), kept, "{heard:?}");
        }
    }

    #[test]
    fn a_missing_model_names_what_and_how_to_install() {
        let dir = std::env::temp_dir().join("voxdesk-moonshine-test-none");
        let e = Moonshine::load(&dir, 1)
            .err()
            .expect("no model there")
            .to_string();
        assert!(e.contains("encoder_model.ort"), "{e}");
        assert!(e.contains("cargo xtask models"), "{e}");
    }
}
