//! The microphone: cpal's input (the default or a named device) into a pre-allocated wait-free ring (the audio callback never allocates, locks, logs or blocks), then on the mic's own thread resampled (rubato) to the model's rate and cut into PCM16 mono frames; samples the ring could not hold and frames nobody took are counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};

pub use crate::framer::Framer;

/// What the mic thread hands on: one frame of PCM16 mono at the asked rate, and when its last
/// sample arrived (the time of the read that completed it, less the audio read after it).
pub struct Frame {
    pub pcm: Vec<i16>,
    pub at: Instant,
}

/// Counters, read at any time.
#[derive(Debug, Default)]
pub struct MicStats {
    /// Samples the callback could not put in the ring (the reader fell behind).
    pub overrun_samples: AtomicU64,
    /// Frames the consumer refused (its queue was full).
    pub dropped_frames: AtomicU64,
    pub frames: AtomicU64,
}

/// A running microphone. Dropping it stops the stream and the thread.
pub struct Mic {
    run: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pub stats: Arc<MicStats>,
    /// The device's own rate, as opened.
    pub device_rate: u32,
    pub device_name: String,
}

/// Why the microphone cannot start: one line naming the device or the fix.
#[derive(Debug, thiserror::Error)]
pub enum MicError {
    #[error(
        "no microphone: the audio system has no default input (is PulseAudio or PipeWire running?)"
    )]
    NoDevice,
    #[error("no input device named {0:?}")]
    NotFound(String),
    #[error("the microphone cannot be opened: {0}")]
    Open(String),
    #[error("the microphone delivers {0:?} samples, which voxdesk does not read")]
    Format(String),
}

/// The ring holds this much audio at the device's rate (the reader drains it every 5 ms).
const RING_SECONDS: f64 = 0.5;

/// One consumer of the microphone: frames of `frame_ms` at `rate` handed to `sink`; `sink`
/// returning false counts the frame dropped (a full queue), it never blocks the mic.
pub struct Tap {
    pub rate: u32,
    pub frame_ms: u32,
    pub sink: FrameSink,
}

/// Where a tap's frames go; false: the frame was dropped (its queue was full).
pub type FrameSink = Box<dyn FnMut(Frame) -> bool + Send>;

impl Mic {
    /// Start capturing for one consumer.
    pub fn start(
        device: Option<&str>,
        rate: u32,
        frame_ms: u32,
        sink: impl FnMut(Frame) -> bool + Send + 'static,
    ) -> Result<Mic, MicError> {
        Mic::start_taps(
            device,
            vec![Tap {
                rate,
                frame_ms,
                sink: Box::new(sink),
            }],
        )
    }

    /// Start capturing for several consumers (the model's stream and the local listener), each
    /// at its own rate and frame length, from the one device.
    pub fn start_taps(device: Option<&str>, taps: Vec<Tap>) -> Result<Mic, MicError> {
        Mic::start_cleaned(device, taps, None)
    }

    /// [`Mic::start_taps`], with what the speaker plays (`echo`: the narrator's reference)
    /// cancelled from the microphone before any tap hears it (see [`crate::aec`]).
    pub fn start_cleaned(
        device: Option<&str>,
        taps: Vec<Tap>,
        echo: Option<Arc<crate::reference::Reference>>,
    ) -> Result<Mic, MicError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let run = Arc::new(AtomicBool::new(true));
        let stats = Arc::new(MicStats::default());
        let (r, s) = (run.clone(), stats.clone());
        let device = device.map(str::to_string);
        let thread = std::thread::Builder::new()
            .name("voxdesk-mic".into())
            .spawn(move || {
                // The stream lives on this thread (cpal streams are not Send).
                let opened = open(device.as_deref(), s.clone());
                let (stream, mut ring, device_rate, channels, name) = match opened {
                    Ok(o) => o,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let mut canceller = match echo {
                    Some(r) => match crate::aec::Canceller::new(r, device_rate, channels) {
                        Ok(c) => Some(c),
                        Err(e) => {
                            let _ = ready_tx.send(Err(MicError::Open(e)));
                            return;
                        }
                    },
                    None => None,
                };
                let _ = ready_tx.send(Ok((device_rate, name)));
                // With the canceller, the taps take its output: mono at its rate.
                let (from, channels) = match canceller {
                    Some(_) => (crate::aec::RATE, 1),
                    None => (device_rate, channels),
                };
                let mut framers: Vec<(Framer, FrameSink)> = Vec::new();
                for t in taps {
                    match Framer::new(from, t.rate, t.frame_ms, channels) {
                        Ok(f) => framers.push((f, t.sink)),
                        Err(e) => {
                            tracing::warn!("mic: {e}");
                            return;
                        }
                    }
                }
                let mut chunk = Vec::with_capacity(ring.buffer().capacity());
                let mut cleaned = Vec::with_capacity(ring.buffer().capacity());
                let mut done: Vec<Vec<i16>> = Vec::new();
                while r.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                    chunk.clear();
                    let n = ring.slots();
                    if let Ok(c) = ring.read_chunk(n) {
                        chunk.extend(c);
                    }
                    let now = Instant::now();
                    let heard = match &mut canceller {
                        Some(c) => {
                            cleaned.clear();
                            c.push(&chunk, &mut cleaned);
                            &cleaned
                        }
                        None => &chunk,
                    };
                    for (framer, sink) in &mut framers {
                        framer.push(heard, |pcm| done.push(pcm));
                        // Each frame is stamped with when its last sample arrived, not when
                        // it was read: one read may complete several frames (more of them on
                        // a busy machine), and the echo guard lines a frame up with what was
                        // played by this time (measured: frames read together all stamped
                        // `now` were compared with a later moment of the voice, and the tail
                        // of a word it had just played looked like a person: false pauses).
                        let (held, len) = (framer.held(), framer.frame_duration());
                        let n = done.len();
                        for (i, pcm) in done.drain(..).enumerate() {
                            let age = held + len * (n - 1 - i) as u32;
                            let at = now.checked_sub(age).unwrap_or(now);
                            s.frames.fetch_add(1, Ordering::Relaxed);
                            if !sink(Frame { pcm, at }) {
                                s.dropped_frames.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
                drop(stream);
            })
            .map_err(|e| MicError::Open(e.to_string()))?;
        let (device_rate, device_name) = ready_rx
            .recv()
            .map_err(|_| MicError::Open("the mic thread ended".into()))??;
        Ok(Mic {
            run,
            thread: Some(thread),
            stats,
            device_rate,
            device_name,
        })
    }
}

impl Drop for Mic {
    fn drop(&mut self) {
        self.run.store(false, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

type Opened = (cpal::Stream, rtrb::Consumer<f32>, u32, usize, String);

fn open(device: Option<&str>, stats: Arc<MicStats>) -> Result<Opened, MicError> {
    let host = cpal::default_host();
    let dev = match device {
        None => host.default_input_device().ok_or(MicError::NoDevice)?,
        Some(want) => host
            .input_devices()
            .map_err(|e| MicError::Open(e.to_string()))?
            .find(|d| d.description().is_ok_and(|n| n.to_string() == want))
            .ok_or_else(|| MicError::NotFound(want.to_string()))?,
    };
    let name = dev
        .description()
        .map(|d| d.to_string())
        .unwrap_or_else(|_| "default".into());
    let cfg = dev
        .default_input_config()
        .map_err(|e| MicError::Open(e.to_string()))?;
    let rate = cfg.sample_rate();
    let channels = usize::from(cfg.channels()).max(1);
    let cap = (f64::from(rate) * RING_SECONDS) as usize * channels;
    let format = cfg.sample_format();
    let attempt = |buffer: cpal::BufferSize| {
        let (producer, consumer) = rtrb::RingBuffer::<f32>::new(cap);
        let mut config = cfg.config();
        config.buffer_size = buffer;
        build_stream(&dev, config, format, producer, stats.clone()).map(|s| (s, consumer))
    };
    // A small device buffer keeps the mic's latency low; a device that refuses picks its own.
    // 20 ms, measured idle through ALSA's PulseAudio plugin (`voxdesk bench voice`): 10 ms made
    // cpal's capture thread spin on poll (16 % of a core), 20 ms costs 3.5 %, 40 ms and the
    // device's default 7-8 %.
    let (stream, consumer) = match attempt(cpal::BufferSize::Fixed(rate / 50)) {
        Ok(x) => x,
        Err(e) => {
            tracing::debug!("mic: a 20 ms buffer was refused ({e}); using the device's own");
            attempt(cpal::BufferSize::Default)?
        }
    };
    stream.play().map_err(|e| MicError::Open(e.to_string()))?;
    Ok((stream, consumer, rate, channels, name))
}

fn build_stream(
    dev: &cpal::Device,
    config: cpal::StreamConfig,
    format: cpal::SampleFormat,
    mut p: rtrb::Producer<f32>,
    stats: Arc<MicStats>,
) -> Result<cpal::Stream, MicError> {
    let err = |e: cpal::Error| tracing::debug!("mic: {e}");
    match format {
        cpal::SampleFormat::F32 => dev.build_input_stream(
            config,
            move |data: &[f32], _: &_| push(&mut p, data.iter().copied(), &stats),
            err,
            None,
        ),
        cpal::SampleFormat::I16 => dev.build_input_stream(
            config,
            move |data: &[i16], _: &_| {
                push(&mut p, data.iter().map(|&s| f32::from(s) / 32768.0), &stats)
            },
            err,
            None,
        ),
        other => return Err(MicError::Format(format!("{other:?}"))),
    }
    .map_err(|e| MicError::Open(e.to_string()))
}

/// The audio callback's whole job: copy into the ring, count what does not fit.
fn push(p: &mut rtrb::Producer<f32>, data: impl ExactSizeIterator<Item = f32>, stats: &MicStats) {
    let n = data.len();
    let room = p.slots().min(n);
    for s in data.take(room) {
        let _ = p.push(s);
    }
    if room < n {
        stats
            .overrun_samples
            .fetch_add((n - room) as u64, Ordering::Relaxed);
    }
}
