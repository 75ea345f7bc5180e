//! The listener: its own thread on the microphone's 16 kHz frames (never in the audio callback) that runs the voice-activity detector, pauses, resumes or interrupts voxdesk's voice when the person speaks over it, cuts utterances, recognises them offline against the grammar of what is on screen, and halts the session at a stop word without waiting for anyone.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::acoustic::{self, Recognizers};
use super::denoise::Denoiser;
use super::echo::{self, EchoPath};
use super::floor::{self, Floor, Tuning};
use super::grammar::{self, Heard, Mode};
use super::mic::{self, Frame};
use super::narrate::{Barge, Cue};
use super::sphinx;
use voxdesk_input::stop::{Cause, StopLatch};

/// The detector's rate and frame (earshot takes 256 samples at 16 kHz).
pub const RATE: u32 = 16_000;
/// The learned recogniser's transcripts with a mean log-probability below this are guesses: not
/// understood, never acted on (its sure hearings of commands measured -0.04 to -0.6; out of
/// noise it wanders below -0.7).
pub const EARS_REJECT_BELOW: f64 = -1.0;

/// Decoding held to the screen's commands: the phrase is taken when its tokens' mean
/// log-probability is at least this (measured on the bench's tuned half: sentences that are no
/// command scored -3.5 to -7 held to the calculator's commands; commands said clean mostly
/// above -1.5).
pub const HELD_FLOOR: f32 = -1.5;

/// A question asked back waits this long for its answer.
const ASK_FOR: Duration = Duration::from_secs(10);
const FRAME: usize = 256;
/// Audio kept from before an utterance was noticed.
const PREROLL_FRAMES: usize = 20;
/// A hypothesis whose words score this far below a free loop of phones, per frame, was forced
/// into the grammar: not understood (`Hypothesis::confidence`). Measured with
/// `voxdesk bench voice --part accuracy` and `tests/it/voice.rs`: commands heard right score
/// -1 to -36 (median -17, 5th percentile -31); free speech mostly falls into the grammar's
/// filler words, and what is forced into a command scores -20 to -58 (over the sound card:
/// "what is the weather like today" -37, "please tell me a joke…" -36). A trade: a few
/// commands said badly are refused rather than anything forced into one.
pub const REJECT_BELOW: f64 = -32.0;
/// `type WORDS` needs a surer hearing: typing free words is the riskiest thing a voice can ask
/// for, and its open word list is what noise and other speech fall into. Measured
/// (`voxdesk bench voice --part accuracy`): "type hello world" said clearly scores -7 to -12;
/// pink noise and out-of-grammar sentences forced into `type …` score -16 to -37, most below -20.
pub const TYPE_REJECT_BELOW: f64 = -20.0;
/// The noise-adapted model explains noise better, so what it forces scores higher: its
/// commands need -25 and its `type` -15. Measured (`voxdesk bench voice --part accuracy`,
/// pink noise 10 dB below the speech): commands heard right by it score -3 to -22 (most
/// above -20); what it forced into `type …` -15 to -40, into other commands -20 to -45.
/// A stop word keeps the lenient bar: a stop missed is worse than one heard by mistake.
pub const NOISY_LIMITS: Limits = Limits {
    command: -25.0,
    typing: -15.0,
    stop: REJECT_BELOW,
};

/// Transcripts of more words than this are never held to one command (the longest the
/// grammar makes, "double click on …" with a three-word label, has six).
const HELD_MAX_WORDS: usize = 6;

/// How sure the model must be of "type" leading a sentence it first wrote otherwise (mean
/// log-probability of the word's tokens, held to begin with it).
const LEAD_FLOOR: f32 = -3.5;

/// How sure a hypothesis must be (its confidence per frame) to be acted on, by what it asks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub command: f64,
    pub typing: f64,
    pub stop: f64,
}

impl Limits {
    /// The stock model's, with `command` as the threshold for commands (typing needs at least
    /// `TYPE_REJECT_BELOW`, and a stop no more than a command).
    pub fn stock(command: f64) -> Limits {
        Limits {
            command,
            typing: command.max(TYPE_REJECT_BELOW),
            stop: command,
        }
    }

    pub fn of(model: acoustic::Model, reject_below: f64) -> Limits {
        match model {
            acoustic::Model::Stock => Limits::stock(reject_below),
            acoustic::Model::Noisy => NOISY_LIMITS,
        }
    }
}

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error(transparent)]
    Recogniser(#[from] super::sphinx::SphinxError),
    #[error("the listener's thread: {0}")]
    Thread(#[from] std::io::Error),
}

pub struct Spec {
    /// Words that halt the session (configurable; "stop" and "cancel" by default).
    pub stop_words: Vec<String>,
    /// Recognise speech offline (otherwise only barge-in).
    pub recognise: bool,
    pub mode: Mode,
    /// Listen only while this is set (push-to-talk); `None`: always.
    pub push_to_talk: Option<Arc<AtomicBool>>,
    pub tuning: Tuning,
    pub reject_below: f64,
    /// Clean the microphone's frames of steady noise before the recogniser hears them.
    pub denoise: bool,
    /// Write each utterance heard as a WAV here (to listen to what was not understood).
    pub dump_dir: Option<std::path::PathBuf>,
    /// The recogniser's model.
    pub model: sphinx::Model,
    /// The models directory: with Moonshine installed there, commands and answers are heard
    /// by it (free speech, "type" word for word); stop words asleep or beside a cloud model
    /// stay with pocketsphinx's grammar. None, or not installed: pocketsphinx for everything.
    pub ears: Option<std::path::PathBuf>,
    /// Speech that is no command, heard surely by the learned ears, is a task for a planner
    /// ([`Note::Task`]) instead of "not understood".
    pub free_speech: bool,
}

impl Spec {
    pub fn new(stop_words: Vec<String>, recognise: bool, mode: Mode) -> Spec {
        Spec {
            stop_words,
            recognise,
            mode,
            push_to_talk: None,
            tuning: Tuning::default(),
            reject_below: REJECT_BELOW,
            denoise: true,
            dump_dir: None,
            model: sphinx::Model::default(),
            ears: None,
            free_speech: false,
        }
    }

    /// With the settings' voice knobs (`voice.*`: rejection, cleaning, the dump, the model).
    pub fn tuned(mut self, v: &voxdesk_core::config::Voice) -> Spec {
        self.reject_below = v.reject_below.unwrap_or(REJECT_BELOW);
        self.denoise = v.denoise;
        self.dump_dir = v.dump_dir.clone();
        self.model = sphinx::Model::from_settings(v);
        self
    }
}

/// What the listener tells its owner.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// Someone started speaking (a moment to read the screen for the grammar).
    Started,
    /// An utterance understood: its words, what they mean, and when the speech ended.
    Heard {
        text: String,
        meaning: Heard,
        per_frame: f64,
        ended: Instant,
    },
    /// Speech that sounded like two or three commands of different meanings: the question to
    /// ask ("click plus, or click not?"); the next utterance answers it.
    Ask {
        question: String,
        choices: Vec<String>,
    },
    /// Speech that is no command, heard surely, with a planner to hand it to
    /// ([`Spec::free_speech`]): the task in the person's words.
    Task {
        text: String,
        ended: Instant,
    },
    /// Speech that fits nothing that can be said here.
    NotUnderstood {
        text: String,
        per_frame: f64,
    },
    /// The voice was paused because someone spoke over it; resumed (a false alarm); dropped.
    Paused,
    Resumed,
    Interrupted {
        at: Instant,
    },
    /// The microphone's state changed (sleep and wake, push-to-talk).
    Listening(bool),
}

enum Ctl {
    Labels(Vec<String>),
    Mode(Mode),
    Latch(Arc<StopLatch>),
}

/// Counters, read at any time.
#[derive(Debug, Default)]
pub struct Stats {
    pub frames: AtomicU64,
    pub utterances: AtomicU64,
    pub pauses: AtomicU64,
    pub false_alarms: AtomicU64,
    pub interruptions: AtomicU64,
    /// Utterances whose words the noise-adapted model gave.
    pub heard_in_noise: AtomicU64,
    /// Microseconds spent on the detector and the floor (not recognising).
    pub detect_us: AtomicU64,
    /// Microseconds spent cleaning frames of noise.
    pub denoise_us: AtomicU64,
}

pub struct Listener {
    ctl: mpsc::Sender<Ctl>,
    notes: Mutex<mpsc::Receiver<Note>>,
    frames: mpsc::SyncSender<Frame>,
    thread: Option<JoinHandle<()>>,
    pub stats: Arc<Stats>,
}

impl Listener {
    /// Start the listener. `barge`: voxdesk's voice, paused and interrupted when the person
    /// speaks over it. `on_interrupt`: also told (a realtime session fences the model's audio
    /// and tells the server what was heard).
    pub fn start(
        spec: Spec,
        barge: Option<Barge>,
        latch: Arc<StopLatch>,
        on_interrupt: Option<Box<dyn FnMut() + Send>>,
    ) -> Result<Listener, ListenError> {
        let recognizer = if spec.recognise {
            Some(Recognizers::new(&spec.model)?)
        } else {
            None
        };
        // Loaded here, before the thread starts, so a missing model is said at once.
        let ears = match (&spec.ears, spec.recognise) {
            (Some(dir), true) => match voxdesk_moonshine::Moonshine::load(dir, 2) {
                Ok(m) => Some(m),
                Err(e) => {
                    tracing::warn!("listener: {e}; commands are heard by pocketsphinx's grammar");
                    None
                }
            },
            _ => None,
        };
        // Only the recogniser hears cleaned frames: without one, cleaning would be wasted. A
        // cleaner that cannot start leaves the listener hearing the room as it is.
        let denoiser = if spec.denoise && recognizer.is_some() {
            Denoiser::new(floor::FRAME_MS)
                .map_err(|e| tracing::warn!("listener: frames not cleaned of noise: {e}"))
                .ok()
        } else {
            None
        };
        let (ctl, ctl_rx) = mpsc::channel();
        let (note_tx, notes) = mpsc::channel();
        let (frames, frames_rx) = mpsc::sync_channel::<Frame>(256);
        let stats = Arc::new(Stats::default());
        let st = stats.clone();
        let thread = std::thread::Builder::new()
            .name("voxdesk-listen".into())
            .spawn(move || {
                let mut w = Worker {
                    vad: earshot::Detector::default_boxed(),
                    denoiser,
                    floor: Floor::new(spec.tuning.clone()),
                    echo: EchoPath::default(),
                    recognizer,
                    ears,
                    grammar: None,
                    lexicon: crate::sounds::Lexicon::default(),
                    sentences: None,
                    asking: None,
                    held: None,
                    labels: Vec::new(),
                    mode: spec.mode,
                    asleep: false,
                    ptt_was: None,
                    stop_words: spec.stop_words,
                    reject_below: spec.reject_below,
                    dump_dir: spec.dump_dir,
                    barge,
                    latch,
                    on_interrupt,
                    notes: note_tx,
                    preroll: VecDeque::with_capacity(PREROLL_FRAMES),
                    utterance: None,
                    stats: st,
                    push_to_talk: spec.push_to_talk,
                    free_speech: spec.free_speech,
                };
                w.rebuild();
                w.run(frames_rx, ctl_rx);
            })?;
        Ok(Listener {
            ctl,
            notes: Mutex::new(notes),
            frames,
            thread: Some(thread),
            stats,
        })
    }

    /// The next note, waiting at most `within`.
    pub fn next(&self, within: Duration) -> Option<Note> {
        let rx = self.notes.lock().unwrap_or_else(|p| p.into_inner());
        rx.recv_timeout(within).ok()
    }

    /// The microphone's tap for this listener: 16 ms frames at 16 kHz.
    pub fn mic_tap(&self) -> mic::Tap {
        let tx = self.frames.clone();
        mic::Tap {
            rate: RATE,
            frame_ms: floor::FRAME_MS,
            sink: Box::new(move |f| tx.try_send(f).is_ok()),
        }
    }

    /// Feed one frame by hand (benchmarks and tests of recorded speech), waiting for room.
    pub fn feed(&self, f: Frame) -> bool {
        self.frames.send(f).is_ok()
    }

    /// The labels on screen now: the grammar's slots.
    pub fn set_labels(&self, labels: Vec<String>) {
        let _ = self.ctl.send(Ctl::Labels(labels));
    }
    pub fn set_mode(&self, m: Mode) {
        let _ = self.ctl.send(Ctl::Mode(m));
    }
    /// The latch a stop word sets from now on (a new task's).
    pub fn set_latch(&self, l: Arc<StopLatch>) {
        let _ = self.ctl.send(Ctl::Latch(l));
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // The thread ends when every frame sender is gone; the mic holds one, so a closed
        // control channel also ends it.
        let (tx, _) = mpsc::channel();
        self.ctl = tx;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Worker {
    vad: Box<earshot::Detector>,
    denoiser: Option<Denoiser>,
    floor: Floor,
    echo: EchoPath,
    recognizer: Option<Recognizers>,
    free_speech: bool,
    /// The learned recogniser, for commands and answers (see [`Spec::ears`]).
    ears: Option<voxdesk_moonshine::Moonshine>,
    grammar: Option<grammar::Grammar>,
    /// How words sound, learnt as the learned recogniser's transcripts and the screen's
    /// labels bring new ones.
    lexicon: crate::sounds::Lexicon,
    /// The sentences the grammar allows with their sounds (made when first needed).
    sentences: Option<Vec<crate::sounds::Candidate>>,
    /// The sentences the grammar allows as the learned recogniser may write them, and what
    /// each means (decoding held to them: made when first needed).
    held: Option<(voxdesk_moonshine::Phrases, Vec<(String, Heard)>)>,
    /// A question asked back: the commands it offered, and when.
    asking: Option<(Vec<(String, Heard)>, Instant)>,
    labels: Vec<String>,
    mode: Mode,
    asleep: bool,
    ptt_was: Option<bool>,
    stop_words: Vec<String>,
    reject_below: f64,
    dump_dir: Option<std::path::PathBuf>,
    barge: Option<Barge>,
    latch: Arc<StopLatch>,
    on_interrupt: Option<Box<dyn FnMut() + Send>>,
    notes: mpsc::Sender<Note>,
    preroll: VecDeque<Vec<i16>>,
    utterance: Option<Vec<i16>>,
    stats: Arc<Stats>,
    push_to_talk: Option<Arc<AtomicBool>>,
}

impl Worker {
    fn run(&mut self, frames: mpsc::Receiver<Frame>, ctl: mpsc::Receiver<Ctl>) {
        loop {
            loop {
                match ctl.try_recv() {
                    Ok(Ctl::Labels(l)) => {
                        if l != self.labels {
                            self.labels = l;
                            self.rebuild();
                        }
                    }
                    Ok(Ctl::Mode(m)) => {
                        if m != self.mode {
                            self.mode = m;
                            self.rebuild();
                        }
                    }
                    Ok(Ctl::Latch(l)) => self.latch = l,
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => return,
                }
            }
            match frames.recv_timeout(Duration::from_millis(50)) {
                Ok(f) => self.frame(f),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn mode_now(&self) -> Mode {
        if self.asleep && self.mode == Mode::Commands {
            Mode::Asleep
        } else {
            self.mode
        }
    }

    fn rebuild(&mut self) {
        let mode = self.mode_now();
        let g = grammar::build(&self.labels, &self.stop_words, mode);
        self.sentences = None;
        self.held = None;
        // A question about what the screen showed is not answered on another.
        self.asking = None;
        let Some(r) = &mut self.recognizer else {
            self.grammar = Some(g);
            return;
        };
        let t = Instant::now();
        let was_open = r.is_open();
        match r.set_grammar(&g.jsgf, &g.words) {
            Ok(()) => {
                // Speech under way is decoded again against the new grammar.
                if was_open && !r.is_open() {
                    if let Some(u) = &self.utterance {
                        if r.begin() {
                            r.feed(u);
                        }
                    }
                }
                tracing::debug!(
                    "listener: grammar of {} words set in {:.1} ms",
                    g.words.len(),
                    t.elapsed().as_secs_f64() * 1000.0
                );
            }
            Err(e) => tracing::warn!("listener: {e}"),
        }
        self.grammar = Some(g);
    }

    fn frame(&mut self, f: Frame) {
        if f.pcm.len() != FRAME {
            return;
        }
        self.stats.frames.fetch_add(1, Ordering::Relaxed);
        // The recogniser hears the frames cleaned of noise; the detector and the floor hear them
        // as they are: cleaning takes ~50 ms, which barge-in and the end of an utterance must
        // not wait for (measured: barge-in 59 → 110 ms median when the detector heard them
        // cleaned), and what comes out late is still in time for the recogniser, which gets
        // the last of the speech before the quiet that ends it is counted.
        match &mut self.denoiser {
            None => self.clean(f.pcm.clone()),
            Some(d) => {
                let t = Instant::now();
                let mut clean = Vec::with_capacity(2);
                d.push(&f.pcm, |pcm| clean.push(pcm));
                self.stats
                    .denoise_us
                    .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                for pcm in clean {
                    self.clean(pcm);
                }
            }
        }
        self.heard(f);
    }

    /// A frame of what the recogniser hears: kept for the next utterance's start, or fed to
    /// the one under way.
    fn clean(&mut self, pcm: Vec<i16>) {
        if self.preroll.len() == PREROLL_FRAMES {
            self.preroll.pop_front();
        }
        let by_ears = self.by_ears();
        if let Some(u) = &mut self.utterance {
            u.extend_from_slice(&pcm);
            // Decoded as it is heard: at its end little is left to do. (The learned
            // recogniser hears the whole utterance once it has ended.)
            if let (Some(r), false) = (&mut self.recognizer, by_ears) {
                r.feed(&pcm);
            }
        }
        self.preroll.push_back(pcm);
    }

    /// One frame as the microphone gave it, for the detector and the floor.
    fn heard(&mut self, f: Frame) {
        // Push-to-talk: pressing it is speaking over the voice; releasing it ends listening.
        if let Some(p) = &self.push_to_talk {
            let held = p.load(Ordering::Relaxed);
            if self.ptt_was != Some(held) {
                self.ptt_was = Some(held);
                if held {
                    if let Some(b) = &self.barge {
                        if b.reference.sounding(Duration::from_millis(100)) {
                            b.interrupt();
                            self.interrupted();
                        }
                    }
                }
                self.cue(held);
            }
            if !held {
                self.preroll.clear();
                if let Some(u) = self.utterance.take() {
                    // Released mid-sentence: what was said so far is the utterance.
                    self.recognise(u, f.at);
                }
                return;
            }
        }
        let t = Instant::now();
        let score = self.vad.predict_i16(&f.pcm);
        let level = rms(&f.pcm);
        let (echo_ref, playing, hushed) = match &self.barge {
            Some(b) => {
                // What was played in each 16 ms slice before this frame; the echo path's delay
                // picks the one the microphone is hearing now (learnt while nobody speaks over it).
                let played: [f32; echo::LAGS] = b
                    .reference
                    .slices(f.at, Duration::from_millis(u64::from(floor::FRAME_MS)));
                let hushed = b.reference.hushed();
                let learn = !hushed && !self.floor.in_utterance();
                let was = self.echo.lag();
                let echo_ref = self.echo.step(level, &played, learn);
                if self.echo.lag() != was {
                    tracing::debug!(
                        "listener: the echo arrives {:?} frames after it is played",
                        self.echo.lag()
                    );
                }
                (
                    echo_ref,
                    hushed || b.reference.sounding(Duration::from_millis(100)),
                    hushed,
                )
            }
            None => (0.0, false, false),
        };
        let events = self.floor.step(&floor::Frame {
            score,
            level,
            echo_ref,
            playing,
            hushed,
        });
        if playing && level > 0.003 {
            tracing::trace!(
                "listener: frame score {score:.2} level {level:.4} echo {echo_ref:.4} coupling {:.3} hushed {hushed} → {events:?}",
                self.floor.coupling()
            );
        }
        self.stats
            .detect_us
            .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
        let at = f.at;
        for e in events {
            match e {
                floor::Event::Pause => {
                    self.stats.pauses.fetch_add(1, Ordering::Relaxed);
                    if let Some(b) = &self.barge {
                        b.pause();
                    }
                    let _ = self.notes.send(Note::Paused);
                }
                floor::Event::Resume => {
                    self.stats.false_alarms.fetch_add(1, Ordering::Relaxed);
                    if let Some(b) = &self.barge {
                        b.resume();
                    }
                    let _ = self.notes.send(Note::Resumed);
                }
                floor::Event::Interrupt => {
                    if let Some(b) = &self.barge {
                        b.interrupt();
                    }
                    self.interrupted();
                }
                floor::Event::Start => {
                    let u: Vec<i16> = self.preroll.iter().flatten().copied().collect();
                    let by_ears = self.by_ears();
                    if let (Some(r), false) = (&mut self.recognizer, by_ears) {
                        if r.begin() {
                            r.feed(&u);
                        }
                    }
                    self.utterance = Some(u);
                    let _ = self.notes.send(Note::Started);
                }
                floor::Event::End { .. } => {
                    if let Some(u) = self.utterance.take() {
                        self.recognise(u, at);
                    }
                }
            }
        }
    }

    /// An utterance heard by Moonshine, on this thread (never the audio callback or tokio), read
    /// back by the grammar of the screen's labels; a guess (mean log-probability below
    /// [`EARS_REJECT_BELOW`]) is not understood, never acted on.
    fn recognise_by_ears(&mut self, pcm: Vec<i16>, ended: Instant) {
        self.stats.utterances.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = &mut self.recognizer {
            if r.is_open() {
                r.abandon();
            }
        }
        if self.held.is_none() {
            if let Some(g) = &self.grammar {
                // Commands and answers only: a stop word is taken as Moonshine writes it (or
                // by sound), never forced out of noise.
                let said: Vec<(String, Heard)> = crate::sounds::sentences(g)
                    .into_iter()
                    .filter(|(_, m)| !matches!(m, Heard::Stop(_)))
                    .flat_map(|(s, m)| {
                        crate::sounds::written(&s)
                            .into_iter()
                            .map(move |w| (w, m.clone()))
                    })
                    .collect();
                let texts: Vec<String> = said.iter().map(|(s, _)| s.clone()).collect();
                self.held = Some((voxdesk_moonshine::Phrases::new(&texts), said));
            }
        }
        let commands = self.mode_now() == Mode::Commands;
        let (Some(ears), Some(g)) = (&mut self.ears, &self.grammar) else {
            return;
        };
        let samples: Vec<f32> = pcm.iter().map(|&x| f32::from(x) / 32768.0).collect();
        // Held to the screen's commands only when the free transcript is none of them (and
        // is no dictation); held to begin with "type" when its first word sounds like it
        // ("Tie good morning"): the model's ear then says whether that is what it heard.
        let typing = voxdesk_moonshine::Phrases::new(&["type".to_string()]);
        let within = self.held.as_ref().map(|h| &h.0);
        let hold = |text: &str| {
            let exact = if commands {
                g.interpret_transcript(text)
            } else {
                g.interpret(&grammar::words_of(text))
            };
            if !matches!(exact, Heard::Nothing) || starts_typing(text) {
                return voxdesk_moonshine::Hold::Free;
            }
            if commands && sounds_like_typing(text) {
                return voxdesk_moonshine::Hold::Lead(&typing);
            }
            // A sentence longer than any one command is none held to one (and with a
            // planner to hand, it is a task: not worth the wait of a second decoding).
            if grammar::words_of(text).split_whitespace().count() > HELD_MAX_WORDS {
                return voxdesk_moonshine::Hold::Free;
            }
            within.map_or(voxdesk_moonshine::Hold::Free, voxdesk_moonshine::Hold::To)
        };
        let (mut t, choice) = match ears.transcribe_within(&samples, &hold) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("listener: {e}");
                return;
            }
        };
        // Dictation the model's ear confirms: its words as it heard them after "type".
        let choice = match choice {
            Some(c) if c.text.is_some() => {
                let text = c.text.clone().unwrap_or_default();
                tracing::debug!(
                    "listener: {:?} held to begin with \"type\": {text:?} (log p {:.2}, worst {:.2})",
                    t.text,
                    c.logprob,
                    c.worst
                );
                if c.logprob >= LEAD_FLOOR {
                    t.text = text;
                }
                None
            }
            c => c,
        };
        let held = choice.as_ref().and_then(|c| {
            let (words, meaning) = self.held.as_ref()?.1.get(c.phrase)?;
            Some((words.clone(), meaning.clone(), c.clone()))
        });
        let held_said = held.as_ref().map(|(w, _, c)| (w.clone(), c.clone()));
        if let Some((w, _, c)) = &held {
            tracing::debug!(
                "listener: held to the screen's commands, Moonshine heard {w:?} (log p {:.2}, worst {:.2})",
                c.logprob,
                c.worst
            );
        }
        if let Some(dir) = &self.dump_dir {
            let n = self.stats.utterances.load(Ordering::Relaxed);
            let _ = write_wav(&dir.join(format!("{n:03}.wav")), &pcm);
        }
        let meaning = {
            // A free transcript the model was unsure of is not taken as written (the held
            // decoding and the sound may still find the command in it).
            let exact = if f64::from(t.logprob) < EARS_REJECT_BELOW {
                Heard::Nothing
            } else if self.mode_now() == Mode::Commands {
                g.interpret_transcript(&t.text)
            } else {
                g.interpret(&grammar::words_of(&t.text))
            };
            match (exact, self.asking.take()) {
                // A question was asked back: this answers it, or it is dropped.
                (h, Some((choices, at))) if at.elapsed() < ASK_FOR => {
                    self.answer(&t.text, h, &choices)
                }
                // The words as written, read by sound (a chain too), when the model was sure
                // enough of them; else the command the model's ear chose among the screen's;
                // else asked back between the two or three it sounded like; else nothing.
                (Heard::Nothing, _) if !starts_typing(&t.text) => {
                    let sure = f64::from(t.logprob) >= EARS_REJECT_BELOW;
                    let by_sound = if sure {
                        self.by_sound(&t.text)
                    } else {
                        Err(crate::sounds::Doubt::Far)
                    };
                    match (by_sound, held) {
                        (Ok(h), _) => h,
                        // A task for the planner, in the person's words.
                        _ if sure
                            && self.free_speech
                            && commands
                            && grammar::words_of(&t.text).split_whitespace().count() >= 2 =>
                        {
                            let text = t.text.trim().to_string();
                            tracing::debug!("listener: a task for the planner: {text:?}");
                            let _ = self.notes.send(Note::Task { text, ended });
                            return;
                        }
                        (_, Some((_, m, c))) if c.logprob >= HELD_FLOOR => m,
                        (Err(crate::sounds::Doubt::Between(rivals)), _) if self.ask(&rivals) => {
                            return
                        }
                        _ => Heard::Nothing,
                    }
                }
                (h, _) => h,
            }
        };
        tracing::debug!(
            "listener: Moonshine heard {:?} ({:.2} s, log p {:.2}, {:.0} ms) → {meaning:?}",
            t.text,
            pcm.len() as f64 / f64::from(RATE),
            t.logprob,
            t.ms
        );
        // What was heard, and what it was held to when that was asked.
        let text = match &held_said {
            Some((w, c)) => format!("{} ⟨{w} {:.2}/{:.2}⟩", t.text, c.logprob, c.worst),
            None => t.text,
        };
        self.act_on(text, meaning, f64::from(t.logprob), ended);
    }

    /// Ask back between two or three commands a transcript sounded like (commands only);
    /// false when there is nothing to ask.
    fn ask(&mut self, rivals: &[String]) -> bool {
        let Some(cands) = &self.sentences else {
            return false;
        };
        if self.mode_now() != Mode::Commands || !(2..=3).contains(&rivals.len()) {
            return false;
        }
        let choices: Vec<(String, Heard)> = rivals
            .iter()
            .filter_map(|r| cands.iter().find(|c| &c.words == r))
            .map(|c| (c.words.clone(), c.meaning.clone()))
            .collect();
        let question = match choices.as_slice() {
            [a, b] => format!("{}, or {}?", a.0, b.0),
            [a, b, c] => format!("{}, {}, or {}?", a.0, b.0, c.0),
            _ => return false,
        };
        let _ = self.notes.send(Note::Ask {
            question,
            choices: choices.iter().map(|c| c.0.clone()).collect(),
        });
        self.asking = Some((choices, Instant::now()));
        true
    }

    /// The answer to a question asked back: one of its choices, said whole or by the words
    /// that tell it from the others ("plus"), else nothing (the question is dropped).
    fn answer(&mut self, transcript: &str, exact: Heard, choices: &[(String, Heard)]) -> Heard {
        if let Some((_, h)) = choices.iter().find(|(_, h)| *h == exact) {
            return h.clone();
        }
        if matches!(exact, Heard::Stop(_)) {
            return exact;
        }
        let words = grammar::words_of(transcript);
        let missing = self.lexicon.missing(words.split_whitespace());
        for (w, p) in crate::sphinx::pronounce(&missing) {
            self.lexicon.add(&w, &p);
        }
        let names: Vec<&str> = choices.iter().map(|(c, _)| c.as_str()).collect();
        match crate::sounds::choose(&self.lexicon, &words, &names) {
            Some(i) => choices[i].1.clone(),
            None => Heard::Nothing,
        }
    }

    /// A transcript whose words are no command, read by how it sounds: the one command of the
    /// screen it sounds nearly like, when no command of another meaning is as near.
    fn by_sound(&mut self, transcript: &str) -> Result<Heard, crate::sounds::Doubt> {
        let Some(g) = &self.grammar else {
            return Err(crate::sounds::Doubt::Far);
        };
        let t = Instant::now();
        let words = grammar::words_of(transcript);
        if self.sentences.is_none() {
            let sentences = crate::sounds::sentences(g);
            let all: Vec<&str> = sentences
                .iter()
                .flat_map(|(s, _)| s.split_whitespace())
                .collect();
            let missing = self.lexicon.missing(all);
            for (w, p) in crate::sphinx::pronounce(&missing) {
                self.lexicon.add(&w, &p);
            }
            self.sentences = Some(crate::sounds::candidates(g, &self.lexicon));
        }
        let missing = self.lexicon.missing(words.split_whitespace());
        for (w, p) in crate::sphinx::pronounce(&missing) {
            self.lexicon.add(&w, &p);
        }
        let cands = self.sentences.as_deref().unwrap_or_default();
        let read = crate::sounds::read(g, &self.lexicon, cands, &words);
        tracing::debug!(
            "listener: {words:?} by sound → {read:?} ({} sentences, {:.1} ms)",
            cands.len(),
            t.elapsed().as_secs_f64() * 1000.0
        );
        read
    }

    fn interrupted(&mut self) {
        self.stats.interruptions.fetch_add(1, Ordering::Relaxed);
        if let Some(cb) = &mut self.on_interrupt {
            cb();
        }
        let _ = self.notes.send(Note::Interrupted { at: Instant::now() });
    }

    fn cue(&self, listening: bool) {
        if let Some(b) = &self.barge {
            b.cue(if listening {
                Cue::Listening
            } else {
                Cue::NotListening
            });
        }
        let _ = self.notes.send(Note::Listening(listening));
    }

    /// Is this utterance for the learned recogniser (commands and answers, when it loaded)?
    fn by_ears(&self) -> bool {
        self.ears.is_some() && matches!(self.mode_now(), Mode::Commands | Mode::Confirm)
    }

    fn recognise(&mut self, pcm: Vec<i16>, ended: Instant) {
        if self.by_ears() {
            return self.recognise_by_ears(pcm, ended);
        }
        self.stats.utterances.fetch_add(1, Ordering::Relaxed);
        let (Some(r), Some(g)) = (&mut self.recognizer, &self.grammar) else {
            return;
        };
        let t = Instant::now();
        // The speech (cleaned) over the room's noise (as the microphone hears it).
        let snr = acoustic::snr_db(&pcm, FRAME, self.floor.noise());
        let h = if r.is_open() {
            r.finish(snr)
        } else {
            r.decode(&pcm, snr)
        };
        let Some((h, model)) = h else {
            // Nothing in the grammar fits any of it: said, as any speech not understood is.
            if matches!(self.mode_now(), Mode::Commands | Mode::Confirm) {
                let _ = self.notes.send(Note::NotUnderstood {
                    text: String::new(),
                    per_frame: 0.0,
                });
            }
            return;
        };
        if model == acoustic::Model::Noisy {
            self.stats.heard_in_noise.fetch_add(1, Ordering::Relaxed);
        }
        let decode_ms = t.elapsed().as_secs_f64() * 1000.0;
        if let Some(dir) = &self.dump_dir {
            // What was heard, to listen to when it was not understood.
            let n = self.stats.utterances.load(Ordering::Relaxed);
            let _ = write_wav(&dir.join(format!("{n:03}.wav")), &pcm);
        }
        let confidence = h.confidence();
        let meaning = judge(g, &h.text, confidence, Limits::of(model, self.reject_below));
        tracing::debug!(
            "listener: heard {:?} ({:.2} s, {model:?} model at {snr:.0} dB over the noise; words {:.1}/frame, phones {:?}/frame, confidence {confidence:.1}, {decode_ms:.0} ms) → {meaning:?}",
            h.text,
            pcm.len() as f64 / f64::from(RATE),
            h.per_frame,
            h.phone_per_frame
        );
        self.act_on(h.text, meaning, confidence, ended);
    }

    /// What an utterance means, acted on here and told: a stop at once (the loop may be busy
    /// typing), sleep and wake, speech not understood said only where a command was awaited.
    fn act_on(&mut self, text: String, meaning: Heard, per_frame: f64, ended: Instant) {
        match &meaning {
            Heard::Nothing => {
                // Asleep or beside a cloud model, other speech is simply not for us.
                if matches!(self.mode_now(), Mode::Commands | Mode::Confirm) {
                    let _ = self.notes.send(Note::NotUnderstood { text, per_frame });
                }
                return;
            }
            Heard::Stop(_) => {
                self.latch.trigger(Cause::Requested);
                if let Some(b) = &self.barge {
                    b.interrupt();
                }
                self.floor.reset_pause();
            }
            Heard::Sleep if !self.asleep => {
                self.asleep = true;
                self.rebuild();
                self.cue(false);
            }
            Heard::Wake if self.asleep => {
                self.asleep = false;
                self.rebuild();
                self.cue(true);
            }
            _ => {}
        }
        let _ = self.notes.send(Note::Heard {
            text,
            meaning,
            per_frame,
            ended,
        });
    }
}

/// Does a transcript begin with "type" (dictation: its words are taken as written, never by
/// sound)?
fn starts_typing(transcript: &str) -> bool {
    grammar::words_of(transcript).split_whitespace().next() == Some("type")
}

/// Does a transcript of two words or more begin with a word that sounds nearly like "type"
/// ("tie", "tight", "tape"): one phone off at most.
fn sounds_like_typing(transcript: &str) -> bool {
    let words = grammar::words_of(transcript);
    let mut w = words.split_whitespace();
    let (Some(first), Some(_)) = (w.next(), w.next()) else {
        return false;
    };
    if first == "type" {
        return false;
    }
    let Some((_, phones)) = crate::sphinx::pronounce(&[first.to_string()]).pop() else {
        return false;
    };
    let mut lex = crate::sounds::Lexicon::default();
    lex.add(first, &phones);
    lex.add("type", "T AY P");
    crate::sounds::distance(&lex.sentence(first), &lex.sentence("type")) <= 1.0
}

/// What a hypothesis means, or nothing when the recogniser was not sure enough of it: its
/// words scored `confidence` per frame against a free loop of phones (pure).
pub fn judge(g: &grammar::Grammar, text: &str, confidence: f64, limits: Limits) -> Heard {
    if text.trim().is_empty() {
        return Heard::Nothing;
    }
    let m = g.interpret(text);
    let need = match &m {
        Heard::Stop(_) => limits.stop,
        Heard::Command(t) if t.starts_with("type ") => limits.typing,
        _ => limits.command,
    };
    if confidence < need {
        Heard::Nothing
    } else {
        m
    }
}

/// RMS of a PCM16 frame, full scale 1.0.
pub fn rms(pcm: &[i16]) -> f32 {
    if pcm.is_empty() {
        return 0.0;
    }
    let s: f64 = pcm.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    ((s / pcm.len() as f64).sqrt() / 32768.0) as f32
}

/// The samples of a 16-bit PCM WAV file (any rate, any channels) as the recogniser takes them:
/// 16 kHz mono. Anything else is an error that says how to convert it.
pub fn read_wav(path: &std::path::Path) -> Result<Vec<i16>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (rate, channels, pcm) = parse_wav(&bytes).map_err(|e| {
        format!(
            "{}: {e} (voxdesk reads 16-bit PCM WAV; convert with `sox IN -b 16 OUT.wav`)",
            path.display()
        )
    })?;
    let samples: Vec<f32> = pcm.iter().map(|&x| f32::from(x) / 32768.0).collect();
    let mut framer = crate::mic::Framer::new(rate, RATE, 20, channels)?;
    let mut out = Vec::with_capacity(samples.len() * RATE as usize / rate.max(1) as usize);
    framer.push(&samples, |f| out.extend(f));
    // The last partial frame, padded with silence.
    let pad = vec![0.0f32; channels * (rate as usize / 50)];
    framer.push(&pad, |f| out.extend(f));
    Ok(out)
}

/// A RIFF WAVE file's rate, channels and 16-bit samples (interleaved); pure.
pub fn parse_wav(b: &[u8]) -> Result<(u32, usize, Vec<i16>), String> {
    if b.len() < 12 || &b[..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return Err("not a RIFF WAVE file".into());
    }
    let (mut at, mut fmt) = (12usize, None);
    while at + 8 <= b.len() {
        let id = &b[at..at + 4];
        let len = u32::from_le_bytes([b[at + 4], b[at + 5], b[at + 6], b[at + 7]]) as usize;
        let body = &b[at + 8..(at + 8).saturating_add(len).min(b.len())];
        match id {
            b"fmt " if body.len() >= 16 => {
                let u16_at = |i: usize| u16::from_le_bytes([body[i], body[i + 1]]);
                let rate = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
                // PCM, or WAVE_FORMAT_EXTENSIBLE (whose subformat sox writes as PCM).
                let (format, channels, bits) = (u16_at(0), u16_at(2), u16_at(14));
                if !(format == 1 || format == 0xFFFE) || bits != 16 {
                    return Err(format!("format {format}, {bits} bits: not 16-bit PCM"));
                }
                if channels == 0 || rate == 0 {
                    return Err("no channels or no rate".into());
                }
                fmt = Some((rate, channels as usize));
            }
            b"data" => {
                let (rate, channels) = fmt.ok_or("the data comes before its format")?;
                let pcm = body
                    .chunks_exact(2)
                    .map(|c| i16::from_le_bytes([c[0], c[1]]))
                    .collect();
                return Ok((rate, channels, pcm));
            }
            _ => {}
        }
        at = at + 8 + len + (len & 1);
    }
    Err("no data".into())
}

/// A 16 kHz mono WAV of `pcm`.
pub fn write_wav(path: &std::path::Path, pcm: &[i16]) -> std::io::Result<()> {
    let data = (pcm.len() * 2) as u32;
    let mut b = Vec::with_capacity(44 + pcm.len() * 2);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    for v in [1u16, 1] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for v in [RATE, RATE * 2] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for v in [2u16, 16] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data.to_le_bytes());
    for s in pcm {
        b.extend_from_slice(&s.to_le_bytes());
    }
    voxdesk_core::private::write(path, &b)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_wav_is_read_back_as_written_and_a_broken_one_is_an_error() {
        let dir = std::env::temp_dir().join(format!("voxdesk-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wav = dir.join("a.wav");
        let pcm: Vec<i16> = (0..1600).map(|i| ((i % 50) * 100) as i16).collect();
        write_wav(&wav, &pcm).unwrap();
        let (rate, ch, back) = parse_wav(&std::fs::read(&wav).unwrap()).unwrap();
        assert_eq!((rate, ch), (RATE, 1));
        assert_eq!(back, pcm);
        assert!(read_wav(&wav).unwrap().len() >= pcm.len());
        for bad in [
            &b""[..],
            b"RIFF\0\0\0\0WAVE",
            b"RIFF\0\0\0\0WAVEdata\x04\0\0\0abcd",
            b"not a wav at all",
        ] {
            assert!(parse_wav(bad).is_err(), "{bad:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    use super::*;

    #[test]
    fn a_first_word_one_phone_from_type_may_be_dictation() {
        for (t, want) in [
            ("Tie good morning.", true),
            ("Tight, good morning.", true),
            ("Tape the box", true),
            ("Type good morning", false),
            ("Tie.", false),
            ("What is the weather like today?", false),
            ("Click seven.", false),
        ] {
            assert_eq!(sounds_like_typing(t), want, "{t:?}");
        }
    }

    #[test]
    fn judged_by_confidence_and_typing_needs_more() {
        let labels: Vec<String> = ["7", "+", "Save"].iter().map(|s| s.to_string()).collect();
        let g = grammar::build(&labels, &["stop".to_string()], Mode::Commands);
        let cmd = |t: &str| Heard::Command(t.to_string());
        for (text, confidence, want) in [
            ("click seven", -10.0, cmd("click 7")),
            ("click seven", -31.0, cmd("click 7")),
            ("click seven", -33.0, Heard::Nothing),
            ("type seven", -12.0, cmd("type \"seven\"")),
            ("type seven", -25.0, Heard::Nothing),
            ("stop", -30.0, Heard::Stop("stop".into())),
            ("", 0.0, Heard::Nothing),
            ("   ", -1.0, Heard::Nothing),
        ] {
            assert_eq!(
                judge(&g, text, confidence, Limits::stock(REJECT_BELOW)),
                want,
                "{text:?} at {confidence}"
            );
        }
        // A stricter threshold is stricter for typing too.
        assert_eq!(
            judge(&g, "type seven", -15.0, Limits::stock(-10.0)),
            Heard::Nothing
        );
        // The noise-adapted model's: stricter for commands and typing, as lenient for a stop.
        let noisy = Limits::of(acoustic::Model::Noisy, REJECT_BELOW);
        for (text, confidence, want) in [
            ("click seven", -20.0, cmd("click 7")),
            ("click seven", -27.0, Heard::Nothing),
            ("type seven", -12.0, cmd("type \"seven\"")),
            ("type seven", -16.6, Heard::Nothing),
            ("stop", -31.0, Heard::Stop("stop".into())),
            ("stop", -33.0, Heard::Nothing),
        ] {
            assert_eq!(
                judge(&g, text, confidence, noisy),
                want,
                "{text:?} at {confidence}"
            );
        }
    }
}
