//! The offline recogniser, the only pocketsphinx user: one decoder on Debian's US English model, a JSGF grammar swapped as the screen changes, pronunciations added for words its dictionary lacks (from espeak-ng's letter-to-sound rules), and one utterance decoded at a time with its score per frame.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pocketsphinx_sys as ps;

use super::phonemes;

/// Where Debian's `pocketsphinx-en-us` puts the model.
const MODEL_DIR: &str = "/usr/share/pocketsphinx/model/en-us";

/// Which model the decoders load, and extra decoder flags (`voice.sphinx_model`,
/// `voice.sphinx_args` in the settings).
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub dir: PathBuf,
    pub args: Vec<String>,
}

impl Default for Model {
    /// Debian's model, no extra flags.
    fn default() -> Model {
        Model {
            dir: PathBuf::from(MODEL_DIR),
            args: Vec::new(),
        }
    }
}

impl Model {
    /// From the settings: their model directory, else Debian's.
    pub fn from_settings(v: &voxdesk_core::config::Voice) -> Model {
        Model {
            dir: v
                .sphinx_model
                .clone()
                .unwrap_or_else(|| PathBuf::from(MODEL_DIR)),
            args: v.sphinx_args.clone(),
        }
    }
}

/// The noise-adapted model's parts (`models/sphinx-noisy/make.sh`): the decoder flag for each,
/// and the rest of the model (topology, dictionary, features) is Debian's.
const NOISY: [(&str, &str, &[u8]); 4] = [
    (
        "-mean",
        "means",
        include_bytes!("../../../models/sphinx-noisy/means"),
    ),
    (
        "-var",
        "variances",
        include_bytes!("../../../models/sphinx-noisy/variances"),
    ),
    (
        "-sendump",
        "sendump",
        include_bytes!("../../../models/sphinx-noisy/sendump"),
    ),
    (
        "-tmat",
        "transition_matrices",
        include_bytes!("../../../models/sphinx-noisy/transition_matrices"),
    ),
];

// The calls pocketsphinx-sys 0.5 does not declare, or declares with an older signature
// (pocketsphinx.h, 5prealpha).
extern "C" {
    #[link_name = "ps_seg_iter"]
    fn seg_iter(ps: *mut ps::ps_decoder_t) -> *mut ps::ps_seg_t;
    fn ps_add_word(
        ps: *mut ps::ps_decoder_t,
        word: *const c_char,
        phones: *const c_char,
        update: c_int,
    ) -> c_int;
    fn ps_lookup_word(ps: *mut ps::ps_decoder_t, word: *const c_char) -> *mut c_char;
}

#[derive(Debug, thiserror::Error)]
pub enum SphinxError {
    #[error("no speech model at {0} (apt-get install pocketsphinx-en-us)")]
    NoModel(String),
    #[error("the noise-adapted model could not be written for pocketsphinx: {0}")]
    Unpack(String),
    #[error("the recogniser did not start (pocketsphinx rejected its configuration)")]
    Init,
    #[error("the grammar was refused: {0}")]
    Grammar(String),
}

/// A hypothesis and how well the audio fits it.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    pub text: String,
    /// The words' acoustic score per 10 ms frame of the words alone (pocketsphinx's log
    /// units): low when the grammar had to force speech it does not describe.
    pub per_frame: f64,
    pub frames: i32,
    /// The same frames' score per frame under a free loop of phones (any sound at all), when
    /// the phone model is installed: the best this audio could score. The gap between the two
    /// says how much the grammar had to force it, whatever the noise or the voice.
    pub phone_per_frame: Option<f64>,
}

impl Hypothesis {
    /// How far the words fall below the free phone loop, per frame (0: as well as any sound
    /// could fit; the more negative, the more forced). Without the phone model: the words'
    /// own score.
    pub fn confidence(&self) -> f64 {
        match self.phone_per_frame {
            Some(p) => self.per_frame - p,
            None => self.per_frame,
        }
    }
}

pub struct Recognizer {
    decoder: *mut ps::ps_decoder_t,
    config: *mut ps::cmd_ln_t,
    /// A second decoder on a free loop of phones (`en-us-phone.lm.bin`), for the confidence.
    phones: Option<(*mut ps::ps_decoder_t, *mut ps::cmd_ln_t)>,
    /// Words added so far, with the pronunciation given.
    added: HashMap<String, String>,
    /// Whether a word is in the dictionary (looked up once).
    known: HashMap<String, bool>,
    grammar: Option<String>,
    /// An utterance is being fed (`begin` … `finish`).
    open: bool,
}

// The decoder is used from one thread at a time (the listener's); it holds no thread-local state.
unsafe impl Send for Recognizer {}

fn cstr(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

impl Recognizer {
    /// Start the decoder on `model`.
    pub fn new(model: &Model) -> Result<Recognizer, SphinxError> {
        Recognizer::with_model(&model.dir, &model.args)
    }

    /// The same model adapted to noise (`models/sphinx-noisy/`, built in): its Gaussians and
    /// mixture weights moved by MAP adaptation on commands spoken under pink, white and brown
    /// noise. Better in a noisy room, worse at free dictation in a quiet one.
    pub fn noisy(model: &Model) -> Result<Recognizer, SphinxError> {
        // pocketsphinx reads its model from files, once, when the decoder starts: they live in
        // a private temporary folder until then.
        let tmp = tempfile::Builder::new()
            .prefix("voxdesk-sphinx-")
            .tempdir()
            .map_err(|e| SphinxError::Unpack(format!("a temporary folder: {e}")))?;
        let mut args = Vec::new();
        for (flag, name, bytes) in NOISY {
            let p = tmp.path().join(name);
            std::fs::write(&p, bytes)
                .map_err(|e| SphinxError::Unpack(format!("{}: {e}", p.display())))?;
            args.push(flag.to_string());
            args.push(p.to_string_lossy().into_owned());
        }
        args.extend(model.args.iter().cloned());
        Recognizer::with_model(&model.dir, &args)
    }

    /// A decoder on the model in `dir`, with `overrides` of its parts (`-mean FILE`, …).
    pub fn with_model(dir: &Path, overrides: &[String]) -> Result<Recognizer, SphinxError> {
        let hmm = dir.join("en-us");
        let dict = dir.join("cmudict-en-us.dict");
        if !hmm.join("mdef").exists() || !dict.exists() {
            return Err(SphinxError::NoModel(dir.display().to_string()));
        }
        let base = [
            "-hmm".to_string(),
            hmm.to_string_lossy().into_owned(),
            "-dict".into(),
            dict.to_string_lossy().into_owned(),
        ];
        let extra: Vec<String> = overrides.to_vec();
        let (decoder, config) = init(base.iter().chain(&extra)).ok_or(SphinxError::Init)?;
        let lm = dir.join("en-us-phone.lm.bin");
        let phones = if lm.exists() {
            let loop_args = [
                "-allphone".to_string(),
                lm.to_string_lossy().into_owned(),
                // Context-independent phones: several times faster, and a bound is all it gives.
                "-allphone_ci".into(),
                "yes".into(),
                "-backtrace".into(),
                "yes".into(),
                "-lw".into(),
                "2.0".into(),
                "-beam".into(),
                "1e-20".into(),
                "-pbeam".into(),
                "1e-20".into(),
            ];
            init(base[..2].iter().chain(&loop_args).chain(&extra))
        } else {
            None
        };
        Ok(Recognizer {
            decoder,
            config,
            phones,
            added: HashMap::new(),
            known: HashMap::new(),
            grammar: None,
            open: false,
        })
    }

    fn in_dictionary(&mut self, word: &str) -> bool {
        if let Some(&k) = self.known.get(word) {
            return k;
        }
        let w = cstr(word);
        let k = unsafe {
            let p = ps_lookup_word(self.decoder, w.as_ptr());
            if p.is_null() {
                false
            } else {
                libc::free(p.cast());
                true
            }
        };
        self.known.insert(word.to_string(), k);
        k
    }

    /// Listen for `jsgf` from now on. Words it uses that the dictionary lacks are added first,
    /// pronounced by espeak-ng's rules (or spelled letter by letter without it).
    pub fn set_grammar(&mut self, jsgf: &str, words: &[String]) -> Result<(), SphinxError> {
        if self.grammar.as_deref() == Some(jsgf) {
            return Ok(());
        }
        // The search cannot change mid-utterance.
        self.abandon();
        let missing: Vec<String> = words
            .iter()
            .filter(|w| !self.added.contains_key(*w))
            .filter(|w| !w.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .into_iter()
            .filter(|w| !self.in_dictionary(w))
            .collect();
        if !missing.is_empty() {
            let prons = pronounce(&missing);
            let n = prons.len();
            for (i, (w, phones)) in prons.into_iter().enumerate() {
                let (cw, cp) = (cstr(&w), cstr(&phones));
                // The search is rebuilt once, with the last word.
                let update = c_int::from(i + 1 == n);
                let r = unsafe { ps_add_word(self.decoder, cw.as_ptr(), cp.as_ptr(), update) };
                if r < 0 {
                    tracing::debug!("recogniser: {w:?} /{phones}/ was not added");
                }
                self.known.insert(w.clone(), true);
                self.added.insert(w, phones);
            }
        }
        let (name, g) = (cstr("voxdesk"), cstr(jsgf));
        unsafe {
            if ps::ps_set_jsgf_string(self.decoder, name.as_ptr(), g.as_ptr()) < 0 {
                return Err(SphinxError::Grammar(
                    "pocketsphinx could not compile it".into(),
                ));
            }
            if ps::ps_set_search(self.decoder, name.as_ptr()) < 0 {
                return Err(SphinxError::Grammar("the search could not be set".into()));
            }
        }
        self.grammar = Some(jsgf.to_string());
        Ok(())
    }

    /// The pronunciation voxdesk added for a word, if it did.
    pub fn added(&self, word: &str) -> Option<&str> {
        self.added.get(word).map(String::as_str)
    }

    /// Decode one utterance (16 kHz mono PCM16) at once.
    pub fn decode(&mut self, pcm: &[i16]) -> Option<Hypothesis> {
        self.begin();
        self.feed(pcm);
        self.finish()
    }

    /// Start an utterance, fed as it is heard so that little is left to decode when it ends.
    /// An utterance already open is dropped.
    pub fn begin(&mut self) -> bool {
        self.abandon();
        if self.grammar.is_none() {
            return false;
        }
        unsafe {
            if ps::ps_start_utt(self.decoder, std::ptr::null()) < 0 {
                return false;
            }
            if let Some((d, _)) = self.phones {
                if ps::ps_start_utt(d, std::ptr::null()) < 0 {
                    ps::ps_end_utt(self.decoder);
                    return false;
                }
            }
        }
        self.open = true;
        true
    }

    pub fn is_open(&self) -> bool {
        self.open
    }

    /// More of the open utterance.
    pub fn feed(&mut self, pcm: &[i16]) {
        if !self.open {
            return;
        }
        unsafe {
            ps::ps_process_raw(self.decoder, pcm.as_ptr(), pcm.len(), 0, 0);
            if let Some((d, _)) = self.phones {
                ps::ps_process_raw(d, pcm.as_ptr(), pcm.len(), 0, 0);
            }
        }
    }

    /// Drop the open utterance, if any.
    pub fn abandon(&mut self) {
        if std::mem::take(&mut self.open) {
            unsafe {
                ps::ps_end_utt(self.decoder);
                if let Some((d, _)) = self.phones {
                    ps::ps_end_utt(d);
                }
            }
        }
    }

    /// End the open utterance: what it was, and how well it fits.
    pub fn finish(&mut self) -> Option<Hypothesis> {
        if !std::mem::take(&mut self.open) {
            return None;
        }
        unsafe {
            let (text, segs) = end(self.decoder)?;
            let phones = self.phones.and_then(|(d, _)| end(d));
            // The acoustic score of the words alone, per 10 ms frame: silence before and
            // after (a pre-roll, the end-of-speech wait) does not dilute it.
            let words: Vec<&Seg> = segs.iter().filter(|s| !s.filler).collect();
            let (sum, frames) = words
                .iter()
                .fold((0i64, 0i32), |(a, n), s| (a + s.ascr, n + s.frames()));
            // The free phone loop over the same stretch of audio.
            let phone_per_frame = match (phones, words.first(), words.last()) {
                (Some((_, ph)), Some(first), Some(last)) => {
                    let (a, b) = (first.start, last.end);
                    let (s, n) = ph
                        .iter()
                        .filter(|p| p.end >= a && p.start <= b)
                        .fold((0i64, 0i32), |(s, n), p| (s + p.ascr, n + p.frames()));
                    (n > 0).then(|| s as f64 / f64::from(n))
                }
                _ => None,
            };
            Some(Hypothesis {
                text,
                per_frame: sum as f64 / f64::from(frames.max(1)),
                frames,
                phone_per_frame,
            })
        }
    }
}

impl Drop for Recognizer {
    fn drop(&mut self) {
        unsafe {
            ps::ps_free(self.decoder);
            ps::cmd_ln_free_r(self.config);
            if let Some((d, c)) = self.phones {
                ps::ps_free(d);
                ps::cmd_ln_free_r(c);
            }
        }
    }
}

/// A decoder with `args` (after the common ones), or `None` when pocketsphinx refuses them.
fn init<'a>(
    args: impl Iterator<Item = &'a String>,
) -> Option<(*mut ps::ps_decoder_t, *mut ps::cmd_ln_t)> {
    let mut all: Vec<CString> = ["voxdesk", "-logfn", "/dev/null", "-samprate", "16000"]
        .iter()
        .map(|a| cstr(a))
        .collect();
    all.extend(args.map(|a| cstr(a)));
    let argv: Vec<*const c_char> = all.iter().map(|a| a.as_ptr()).collect();
    unsafe {
        let config = ps::cmd_ln_parse_r(
            std::ptr::null_mut(),
            ps::ps_args(),
            argv.len() as i32,
            argv.as_ptr(),
            1,
        );
        if config.is_null() {
            return None;
        }
        let decoder = ps::ps_init(config);
        if decoder.is_null() {
            ps::cmd_ln_free_r(config);
            return None;
        }
        Some((decoder, config))
    }
}

/// One segment of a decoded utterance.
struct Seg {
    filler: bool,
    start: i32,
    end: i32,
    ascr: i64,
}

impl Seg {
    fn frames(&self) -> i32 {
        (self.end - self.start + 1).max(0)
    }
}

/// End the utterance on `d`: the hypothesis and its segments.
unsafe fn end(d: *mut ps::ps_decoder_t) -> Option<(String, Vec<Seg>)> {
    if ps::ps_end_utt(d) < 0 {
        return None;
    }
    let mut score: i32 = 0;
    let mut uttid: *const c_char = std::ptr::null();
    let hyp = ps::ps_get_hyp(d, &mut score, &mut uttid);
    let text = if hyp.is_null() {
        String::new()
    } else {
        CStr::from_ptr(hyp).to_string_lossy().into_owned()
    };
    let mut segs = Vec::new();
    let mut seg = seg_iter(d);
    while !seg.is_null() {
        let w = ps::ps_seg_word(seg);
        let filler = w.is_null() || matches!(*w as u8, b'<' | b'[' | b'+');
        let (mut sf, mut ef) = (0, 0);
        ps::ps_seg_frames(seg, &mut sf, &mut ef);
        let (mut ascr, mut lscr, mut lback) = (0, 0, 0);
        ps::ps_seg_prob(seg, &mut ascr, &mut lscr, &mut lback);
        segs.push(Seg {
            filler,
            start: sf,
            end: ef,
            ascr: i64::from(ascr),
        });
        seg = ps::ps_seg_next(seg);
    }
    Some((text, segs))
}

/// Pronunciations for `words`: espeak-ng's (American English) mapped to the CMU phones, one
/// process for all of them, one word per line; a word it cannot give is spelled letter by letter.
pub fn pronounce(words: &[String]) -> Vec<(String, String)> {
    let lines = espeak_phonemes(words).unwrap_or_default();
    words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let phones = lines
                .get(i)
                .and_then(|l| phonemes::arpabet(l))
                .or_else(|| phonemes::letters(w))?;
            Some((w.clone(), phones))
        })
        .collect()
}

/// espeak-ng's phoneme mnemonics for each word (one output line per input line), or `None`
/// when it does not run or its lines do not match the words.
fn espeak_phonemes(words: &[String]) -> Option<Vec<String>> {
    use std::io::Write;
    let mut child = Command::new("espeak-ng")
        .args(["-q", "-x", "-v", "en-us"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut input = child.stdin.take()?;
    let text: String = words.iter().map(|w| format!("{w}\n")).collect();
    // Written from a thread: a long list must not fill both pipes at once.
    let writer = std::thread::spawn(move || input.write_all(text.as_bytes()));
    let o = child.wait_with_output().ok()?;
    let _ = writer.join();
    if !o.status.success() {
        return None;
    }
    let lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    (lines.len() == words.len()).then_some(lines)
}
