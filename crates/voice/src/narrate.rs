//! The local voice: a sink for the session's narration events, spoken on a voice thread (espeak-ng renders, rodio plays on the default output) that never blocks the loop; a new utterance cuts off a stale one, the stop latch silences it.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cpal::traits::StreamTrait;

use super::reference::Reference;
use voxdesk_input::stop::StopLatch;
use voxdesk_record::events::{Event, Sink, Stamped};

/// The longest the end of a run waits for its last sentence to finish playing.
const LAST_WORDS: Duration = Duration::from_secs(15);

pub struct Narrator {
    voice: Option<Voice>,
    count: usize,
}

enum Cmd {
    /// Render `text`; write it to the path if one is given; play it unless a newer one is queued.
    Say(String, Option<PathBuf>),
    /// Stop playing now.
    Cut,
    /// The model's speech: PCM16 mono at this rate, queued after what it said before.
    Pcm(u32, Vec<i16>),
    /// The model was interrupted: its queued speech is dropped now.
    Flush,
    /// The person spoke over the voice: everything queued or paused is dropped, and the hush
    /// lifted for what comes next.
    Interrupt,
    /// Someone may be speaking over the voice: the sound server stops playing what it holds
    /// (the hush stops what comes next); `Resume` plays it on.
    Pause,
    Resume,
    /// A short sound marking the microphone's state.
    Cue(Cue),
    /// The narrator is gone: finish the last words and end.
    End,
}

/// The microphone's state, heard: a rising pair of notes when it starts listening, a falling
/// pair when it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cue {
    Listening,
    NotListening,
}

/// What the listener needs of the voice: the echo reference, and pausing, resuming and
/// dropping what is being said.
#[derive(Clone)]
pub struct Barge {
    tx: mpsc::Sender<Cmd>,
    pub reference: Arc<Reference>,
}

impl Barge {
    /// Pause every voice now, in the audio callback (nothing is dropped yet).
    pub fn pause(&self) {
        self.reference.hush();
        let _ = self.tx.send(Cmd::Pause);
    }
    /// A false alarm: go on where the voice was paused.
    pub fn resume(&self) {
        self.reference.unhush();
        let _ = self.tx.send(Cmd::Resume);
    }
    /// The person really spoke over it: drop what was being said and what was queued.
    pub fn interrupt(&self) {
        self.reference.hush();
        let _ = self.tx.send(Cmd::Interrupt);
    }
    pub fn cue(&self, c: Cue) {
        let _ = self.tx.send(Cmd::Cue(c));
    }
}

/// The voice thread: the one owner of the audio output.
struct Voice {
    tx: Option<mpsc::Sender<Cmd>>,
    /// Utterances sent but not yet taken up by the thread; a non-zero count makes the current one stale.
    queued: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
    wav_dir: Option<PathBuf>,
    /// Samples of the model's speech played so far (counted as the device takes them).
    played: Arc<AtomicU64>,
    reference: Arc<Reference>,
}

/// The model's way to the speaker: the same voice thread, the only owner of the audio output.
pub struct Speaker {
    tx: mpsc::Sender<Cmd>,
    played: Arc<AtomicU64>,
    seen: u64,
}

impl Speaker {
    /// Queue the model's speech.
    pub fn play(&mut self, rate: u32, pcm: &[i16]) {
        let _ = self.tx.send(Cmd::Pcm(rate, pcm.to_vec()));
    }
    /// Drop everything queued of the model's speech, now.
    pub fn flush(&mut self) {
        let _ = self.tx.send(Cmd::Flush);
    }
    /// Samples played since the last call.
    pub fn take_played(&mut self) -> u64 {
        let now = self.played.load(Ordering::Relaxed);
        let d = now.saturating_sub(self.seen);
        self.seen = now;
        d
    }
}

impl Narrator {
    /// `speak`: play on the default output. `wav_dir`: also write every utterance there as
    /// `NNN.wav` (tests, the demo). `stop`: playback stops the moment this latch is set, even
    /// while the loop is busy elsewhere (sentences said after it, such as "stopped", still play).
    pub fn new(speak: bool, wav_dir: Option<PathBuf>, stop: Option<Arc<StopLatch>>) -> Narrator {
        let voice = if !speak && wav_dir.is_none() {
            None
        } else {
            Voice::start(speak, wav_dir, stop)
        };
        Narrator { voice, count: 0 }
    }

    /// Speak `text`. Returns at once; a previous utterance still playing is cut off.
    pub fn say(&mut self, text: &str) {
        self.count += 1;
        if let Some(v) = &self.voice {
            let wav = v
                .wav_dir
                .as_ref()
                .map(|d| d.join(format!("{:03}.wav", self.count)));
            v.send(Cmd::Say(text.to_string(), wav));
        }
    }

    /// The model's way to the same speaker (none when nothing is spoken).
    pub fn speaker(&self) -> Option<Speaker> {
        let v = self.voice.as_ref()?;
        Some(Speaker {
            tx: v.tx.clone()?,
            played: v.played.clone(),
            seen: 0,
        })
    }

    /// The listener's handle on this voice (none when nothing is spoken).
    pub fn barge(&self) -> Option<Barge> {
        let v = self.voice.as_ref()?;
        Some(Barge {
            tx: v.tx.clone()?,
            reference: v.reference.clone(),
        })
    }

    /// Stop speaking now (the emergency stop).
    pub fn cut(&mut self) {
        if let Some(v) = &self.voice {
            v.send(Cmd::Cut);
        }
    }
}

impl Sink for Narrator {
    fn take(&mut self, e: &Stamped) -> Result<(), voxdesk_record::events::SinkError> {
        match &e.event {
            Event::Narration { text } => self.say(text),
            Event::EmergencyStop { .. } => self.cut(),
            _ => {}
        }
        Ok(())
    }
}

/// One narrator for every task's desk (`voxdesk listen`: a desk per spoken task, one voice).
pub struct Shared(pub Arc<std::sync::Mutex<Narrator>>);

impl Sink for Shared {
    fn take(&mut self, e: &Stamped) -> Result<(), voxdesk_record::events::SinkError> {
        match self.0.lock() {
            Ok(mut n) => n.take(e),
            Err(_) => Ok(()),
        }
    }
}

impl Voice {
    fn start(speak: bool, wav_dir: Option<PathBuf>, stop: Option<Arc<StopLatch>>) -> Option<Voice> {
        let (tx, rx) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let q = queued.clone();
        let played = Arc::new(AtomicU64::new(0));
        let counter = played.clone();
        let reference = Arc::new(Reference::default());
        let r = reference.clone();
        let thread = std::thread::Builder::new()
            .name("voxdesk-voice".into())
            .spawn(move || voice_thread(rx, q, speak, stop, counter, r))
            .map_err(|e| tracing::warn!("no voice thread ({e}); narration is printed only"))
            .ok()?;
        Some(Voice {
            tx: Some(tx),
            queued,
            thread: Some(thread),
            wav_dir,
            played,
            reference,
        })
    }

    fn send(&self, cmd: Cmd) {
        if let Some(tx) = &self.tx {
            if matches!(cmd, Cmd::Say(..)) {
                self.queued.fetch_add(1, Ordering::SeqCst);
            }
            let _ = tx.send(cmd);
        }
    }
}

impl Drop for Voice {
    fn drop(&mut self) {
        // The thread finishes the last sentence (bounded) and exits; other holders of the
        // channel (the listener's `Barge`, the model's `Speaker`) may outlive this.
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Cmd::End);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn voice_thread(
    rx: mpsc::Receiver<Cmd>,
    queued: Arc<AtomicUsize>,
    speak: bool,
    mut latch: Option<Arc<StopLatch>>,
    played: Arc<AtomicU64>,
    reference: Arc<Reference>,
) {
    let mut output: Option<Output> = None;
    // The model's speech, on its own player: a flush drops it without touching narration.
    let mut model: Option<rodio::Player> = None;
    let mut tried_output = !speak;
    let mut warned_tts = false;
    let mut playing: Option<(rodio::Player, Instant, Duration)> = None;
    // The sentence being rendered holds what was said: it is written in the private runtime
    // dir (0700), never under a predictable name in the shared temp dir.
    let scratch = voxdesk_core::private::runtime_dir()
        .map(|d| d.join(format!("voice-{}.wav", std::process::id())));
    loop {
        // Poll the stop latch while waiting (the loop may be busy in OCR or an action); once it
        // has fired, or with none to watch, just wait.
        let cmd = match latch.as_ref().map_or_else(
            || rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            |_| rx.recv_timeout(Duration::from_millis(10)),
        ) {
            Ok(c) => c,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if latch.as_ref().is_some_and(|l| l.is_stopped()) {
                    latch = None; // once: later sentences (the stop itself) may play
                    playing = None;
                    model = None;
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let (text, wav) = match cmd {
            Cmd::End => break,
            Cmd::Cut => {
                playing = None; // dropping a Player stops it
                model = None;
                reference.unhush();
                continue;
            }
            Cmd::Flush => {
                if let Some(m) = model.take() {
                    m.stop();
                }
                continue;
            }
            Cmd::Interrupt => {
                playing = None;
                if let Some(m) = model.take() {
                    m.stop();
                }
                // What the sound server still holds of it is dropped with the stream; the next
                // words open a new one.
                if output.take().is_some() {
                    tried_output = !speak;
                }
                reference.unhush();
                continue;
            }
            Cmd::Pause => {
                if let Some(o) = &output {
                    if let Err(e) = o.stream.pause() {
                        tracing::debug!("audio output: no pause ({e}); the hush alone");
                    }
                }
                continue;
            }
            Cmd::Resume => {
                if let Some(o) = &output {
                    let _ = o.stream.play();
                }
                continue;
            }
            Cmd::Cue(c) => {
                if !speak {
                    continue;
                }
                if !tried_output {
                    tried_output = true;
                    match open_output(&reference) {
                        Ok(o) => output = Some(o),
                        Err(e) => tracing::warn!("no audio output ({e}); cues are not heard"),
                    }
                }
                if let Some(out) = &output {
                    // Cues are not taps: the listener need not hear them as echo to ignore them.
                    out.mixer.add(cue(c));
                }
                continue;
            }
            Cmd::Pcm(rate, pcm) => {
                if !speak {
                    played.fetch_add(pcm.len() as u64, Ordering::Relaxed);
                    continue;
                }
                if !tried_output {
                    tried_output = true;
                    match open_output(&reference) {
                        Ok(o) => output = Some(o),
                        Err(e) => tracing::warn!("no audio output ({e}); the model is not heard"),
                    }
                }
                let (Some(out), Some(rate)) = (&output, std::num::NonZero::new(rate)) else {
                    played.fetch_add(pcm.len() as u64, Ordering::Relaxed);
                    continue;
                };
                let player = model.get_or_insert_with(|| rodio::Player::connect_new(&out.mixer));
                let samples: Vec<f32> = pcm.iter().map(|&s| f32::from(s) / 32768.0).collect();
                player.append(Tap::new(
                    Counted {
                        inner: rodio::buffer::SamplesBuffer::new(
                            std::num::NonZero::<u16>::MIN,
                            rate,
                            samples,
                        ),
                        played: played.clone(),
                    },
                    reference.clone(),
                ));
                continue;
            }
            Cmd::Say(text, wav) => (text, wav),
        };
        let stale = queued.fetch_sub(1, Ordering::SeqCst) > 1;
        if stale && wav.is_none() {
            continue; // a newer sentence is waiting: this one would be cut off at once
        }
        let path = match (&wav, &scratch) {
            (Some(w), _) => w.as_path(),
            (None, Ok(s)) => s.as_path(),
            (None, Err(e)) => {
                if !warned_tts {
                    tracing::warn!(
                        "no voice (no private runtime dir: {e}); narration is printed only"
                    );
                    warned_tts = true;
                }
                continue;
            }
        };
        if let Some(dir) = path.parent().filter(|_| wav.is_some()) {
            let _ = voxdesk_core::private::dir_keep(dir);
        }
        let bytes = match render(&text, path) {
            Ok(b) => b,
            Err(e) => {
                if !warned_tts {
                    tracing::warn!("no voice ({e}); narration is printed only");
                    warned_tts = true;
                }
                continue;
            }
        };
        if wav.is_none() {
            let _ = std::fs::remove_file(path);
        }
        if stale || !speak {
            continue;
        }
        if !tried_output {
            tried_output = true;
            match open_output(&reference) {
                Ok(o) => output = Some(o),
                Err(e) => tracing::warn!("no audio output ({e}); narration is printed only"),
            }
        }
        let Some(out) = &output else { continue };
        playing = None;
        match rodio::Decoder::new(Cursor::new(bytes)) {
            Ok(source) => {
                use rodio::Source;
                let len = source.total_duration().unwrap_or(LAST_WORDS);
                let player = rodio::Player::connect_new(&out.mixer);
                player.append(Tap::new(source, reference.clone()));
                playing = Some((player, Instant::now(), len));
            }
            Err(e) => tracing::warn!("voice: cannot decode espeak-ng's output: {e}"),
        }
    }
    // The run is over: let the model's last words and the last sentence finish, bounded.
    if let Some(m) = model {
        let until = Instant::now() + LAST_WORDS;
        while !m.empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if let Some((player, started, len)) = playing {
        let until = started + len.min(LAST_WORDS) + Duration::from_millis(300);
        while !player.empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A source that counts the samples the device has taken from it (an atomic add: the audio
/// callback never locks or allocates for it).
struct Counted {
    inner: rodio::buffer::SamplesBuffer,
    played: Arc<AtomicU64>,
}

impl Iterator for Counted {
    type Item = rodio::Sample;
    fn next(&mut self) -> Option<rodio::Sample> {
        let s = self.inner.next()?;
        self.played.fetch_add(1, Ordering::Relaxed);
        Some(s)
    }
}

impl rodio::Source for Counted {
    fn current_span_len(&self) -> Option<usize> {
        self.inner.current_span_len()
    }
    fn channels(&self) -> rodio::ChannelCount {
        self.inner.channels()
    }
    fn sample_rate(&self) -> rodio::SampleRate {
        self.inner.sample_rate()
    }
    fn total_duration(&self) -> Option<Duration> {
        self.inner.total_duration()
    }
}

/// Every voice goes through a tap: its level is recorded for the echo guard every 10 ms, and
/// while the reference is hushed it plays silence without moving on (a pause, in the callback).
struct Tap<S> {
    inner: S,
    reference: Arc<Reference>,
    sum: f32,
    n: usize,
    block: usize,
}

impl<S: rodio::Source> Tap<S> {
    fn new(inner: S, reference: Arc<Reference>) -> Tap<S> {
        let block =
            (inner.sample_rate().get() as usize * usize::from(inner.channels().get())) / 100;
        Tap {
            inner,
            reference,
            sum: 0.0,
            n: 0,
            block: block.max(1),
        }
    }
}

impl<S: rodio::Source> Iterator for Tap<S> {
    type Item = rodio::Sample;
    fn next(&mut self) -> Option<rodio::Sample> {
        if self.reference.hushed() {
            return Some(0.0);
        }
        let s = self.inner.next()?;
        self.sum += s * s;
        self.n += 1;
        if self.n >= self.block {
            self.reference.record((self.sum / self.n as f32).sqrt());
            self.sum = 0.0;
            self.n = 0;
        }
        Some(s)
    }
}

impl<S: rodio::Source> rodio::Source for Tap<S> {
    fn current_span_len(&self) -> Option<usize> {
        // Silence may be inserted (a pause): the span's length is not known ahead.
        None
    }
    fn channels(&self) -> rodio::ChannelCount {
        self.inner.channels()
    }
    fn sample_rate(&self) -> rodio::SampleRate {
        self.inner.sample_rate()
    }
    fn total_duration(&self) -> Option<Duration> {
        self.inner.total_duration()
    }
}

/// A cue: two 70 ms notes, rising (listening) or falling (not listening), quiet.
fn cue(c: Cue) -> rodio::buffer::SamplesBuffer {
    const RATE: u32 = 24_000;
    let notes = match c {
        Cue::Listening => [660.0, 880.0],
        Cue::NotListening => [880.0, 660.0],
    };
    let n = (RATE / 1000 * 70) as usize;
    let mut v = Vec::with_capacity(2 * n);
    for f in notes {
        for i in 0..n {
            let t = i as f32 / RATE as f32;
            // A short fade in and out: no click.
            let env = ((i.min(n - i) as f32) / (RATE as f32 * 0.01)).min(1.0);
            v.push((t * f * std::f32::consts::TAU).sin() * 0.2 * env);
        }
    }
    rodio::buffer::SamplesBuffer::new(
        std::num::NonZero::<u16>::MIN,
        std::num::NonZero::new(RATE).unwrap_or(std::num::NonZero::<u32>::MIN),
        v,
    )
}

/// Why the voice could not speak: the text-to-speech program, or the audio output.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    #[error("{0}")]
    Espeak(String),
    #[error("{0}")]
    Output(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

fn output(e: impl std::fmt::Display) -> AudioError {
    AudioError::Output(e.to_string())
}

/// Does the text-to-speech voice run? Its version line when it does.
pub fn probe_voice() -> Result<String, AudioError> {
    let o = Command::new("espeak-ng")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| AudioError::Espeak(format!("espeak-ng not found ({e})")))?;
    if !o.status.success() {
        return Err(AudioError::Espeak("espeak-ng --version failed".into()));
    }
    let v = String::from_utf8_lossy(&o.stdout);
    Ok(v.split("  Data at")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string())
}

/// Does the default audio output open? (Opened and closed again at once, for `voxdesk doctor`.)
pub fn probe_output() -> Result<(), AudioError> {
    open_output(&Reference::default()).map(drop)
}

/// Render `text` to a WAV file at `path` with espeak-ng and return its bytes.
/// Render `text` to a WAV at `path` with espeak-ng, and its bytes. The file is made 0600
/// before espeak-ng writes into it (it keeps the mode of a file it truncates), whatever the umask.
fn render(text: &str, path: &Path) -> Result<Vec<u8>, AudioError> {
    drop(voxdesk_core::private::create(path)?);
    let st = Command::new("espeak-ng")
        .arg("-w")
        .arg(path)
        .arg("--")
        .arg(text)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| AudioError::Espeak(format!("espeak-ng: {e}")))?;
    if !st.success() {
        return Err(AudioError::Espeak(format!("espeak-ng exited with {st}")));
    }
    Ok(std::fs::read(path)?)
}

/// voxdesk's audio output: rodio's mixer played by a cpal stream of our own, so that a pause
/// can stop the stream itself. The hush only keeps new samples out; what the sound server
/// already holds (through ALSA's PulseAudio plugin, up to ~150 ms) was heard after it, and
/// pausing the stream (a cork) silences that at once.
struct Output {
    mixer: rodio::mixer::Mixer,
    stream: cpal::Stream,
}

/// Open the default output (through ALSA, which routes to PulseAudio where it runs) at its own
/// rate, channels and (small) buffer size. cpal reports harmless underrun bursts while a stream
/// opens; they go to the debug log, at most one a second.
fn open_output(reference: &Reference) -> Result<Output, AudioError> {
    use cpal::traits::{DeviceTrait, HostTrait};
    let dev = cpal::default_host()
        .default_output_device()
        .ok_or_else(|| output("no default audio output"))?;
    let cfg = dev.default_output_config().map_err(output)?;
    let channels = std::num::NonZero::new(cfg.channels())
        .ok_or_else(|| output("the output has no channels"))?;
    let rate = std::num::NonZero::new(cfg.sample_rate())
        .ok_or_else(|| output("the output has no sample rate"))?;
    let (mixer, source) = rodio::mixer::mixer(channels, rate);
    let mut last: Option<Instant> = None;
    let err = move |e: cpal::Error| {
        if last.is_none_or(|t| t.elapsed() > Duration::from_secs(1)) {
            last = Some(Instant::now());
            tracing::debug!("audio output: {e}");
        }
    };
    let mut config = cfg.config();
    // The device's own (small) buffer, not rodio's 2048 frames: a flush is heard within it.
    config.buffer_size = cpal::BufferSize::Default;
    let far = reference.far_producer(rate.get());
    let stream = match cfg.sample_format() {
        cpal::SampleFormat::F32 => play::<f32>(&dev, config, source, far, err),
        cpal::SampleFormat::I16 => play::<i16>(&dev, config, source, far, err),
        cpal::SampleFormat::I32 => play::<i32>(&dev, config, source, far, err),
        cpal::SampleFormat::U16 => play::<u16>(&dev, config, source, far, err),
        other => {
            return Err(output(format!(
                "the audio output takes {other:?} samples, which voxdesk does not write"
            )))
        }
    }
    .map_err(output)?;
    stream.play().map_err(output)?;
    Ok(Output { mixer, stream })
}

/// A stream that plays the mixer, in the device's sample type.
/// The mix, downmixed to mono, also goes into `far` for the echo canceller (a wait-free push;
/// what does not fit is dropped).
fn play<T: cpal::SizedSample + cpal::FromSample<f32>>(
    dev: &cpal::Device,
    config: cpal::StreamConfig,
    mut source: rodio::mixer::MixerSource,
    mut far: rtrb::Producer<f32>,
    err: impl FnMut(cpal::Error) + Send + 'static,
) -> Result<cpal::Stream, cpal::Error> {
    use cpal::traits::DeviceTrait;
    let channels = usize::from(config.channels.max(1));
    dev.build_output_stream(
        config,
        move |data: &mut [T], _: &_| {
            for frame in data.chunks_mut(channels) {
                let mut sum = 0.0;
                for d in frame.iter_mut() {
                    let s = source.next().unwrap_or(0.0);
                    sum += s;
                    *d = T::from_sample(s);
                }
                let _ = far.push(sum / channels as f32);
            }
        },
        err,
        None,
    )
}
