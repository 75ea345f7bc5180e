//! A sound device's monitor read by `parec` (the virtual speaker, or the microphone before any echo canceller), for the voice benchmarks: 10 ms chunks with their arrival, level and samples.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// A device's monitor (the speaker's, or the microphone as it is before any echo canceller),
/// read by `parec` in 10 ms chunks, each with its arrival, its level and its samples.
pub(crate) struct Monitor {
    child: std::process::Child,
    chunks: Arc<Mutex<Vec<Chunk>>>,
}

/// One 10 ms chunk at 24 kHz: when it arrived (its last sample), its RMS, its samples.
type Chunk = (Instant, f64, Vec<i16>);

/// Samples in a chunk (10 ms at 24 kHz).
const CHUNK: usize = 240;

impl Monitor {
    /// The speaker, `spk.monitor` on the virtual sound card.
    pub(crate) fn start() -> Result<Monitor> {
        Monitor::start_on("spk.monitor")
    }

    pub(crate) fn start_on(device: &str) -> Result<Monitor> {
        let mut child = Command::new("parec")
            .args([
                "-d",
                device,
                "--raw",
                "--format=s16le",
                "--rate=24000",
                "--channels=1",
                "--latency-msec=10",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting parec (apt-get install pulseaudio-utils)")?;
        let mut out = child.stdout.take().context("parec's output")?;
        let chunks: Arc<Mutex<Vec<Chunk>>> = Arc::default();
        let c2 = chunks.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; CHUNK * 2];
            while out.read_exact(&mut buf).is_ok() {
                let pcm: Vec<i16> = buf
                    .chunks_exact(2)
                    .map(|c| i16::from_le_bytes([c[0], c[1]]))
                    .collect();
                let rms =
                    (pcm.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / CHUNK as f64).sqrt();
                if let Ok(mut v) = c2.lock() {
                    v.push((Instant::now(), rms, pcm));
                    if v.len() > 12_000 {
                        v.drain(..2000);
                    }
                }
            }
        });
        Ok(Monitor { child, chunks })
    }

    /// When the speaker fell silent after `t0` and stayed silent for 200 ms (a chunk's audio
    /// ended 10 ms before it arrived).
    pub(crate) fn silent_after(&self, t0: Instant) -> Option<f64> {
        let v = self.chunks.lock().ok()?;
        let after: Vec<&Chunk> = v.iter().filter(|(t, _, _)| *t >= t0).collect();
        let loud_before = v
            .iter()
            .rev()
            .find(|(t, _, _)| *t < t0)
            .is_some_and(|c| c.1 > 300.0);
        if !loud_before {
            return None;
        }
        for (i, (t, rms, _)) in after.iter().enumerate() {
            if *rms < 100.0 && after[i..].iter().take(20).all(|c| c.1 < 100.0) {
                let end = t.checked_sub(Duration::from_millis(10)).unwrap_or(*t);
                return Some(end.saturating_duration_since(t0).as_secs_f64() * 1000.0);
            }
        }
        None
    }

    /// When a sound began after `t0`: the first loud sample of the first loud chunk (louder
    /// than 1 % of full scale, and three times the median of the 300 ms before `t0`: over an
    /// echo of voxdesk's own voice, the speech is what rises above it).
    pub(crate) fn onset(&self, t0: Instant) -> Option<Instant> {
        let v = self.chunks.lock().ok()?;
        let mut before: Vec<f64> = v
            .iter()
            .filter(|(at, _, _)| *at < t0 && t0.duration_since(*at) < Duration::from_millis(300))
            .map(|c| c.1)
            .collect();
        before.sort_by(f64::total_cmp);
        let floor = before.get(before.len() / 2).copied().unwrap_or(0.0);
        let loud = (3.0 * floor).max(328.0);
        let (at, _, pcm) = v.iter().find(|(at, l, _)| *at >= t0 && *l > loud)?;
        let edge = (3.0 * floor * std::f64::consts::SQRT_2).max(800.0);
        let i = pcm
            .iter()
            .position(|s| f64::from(s.unsigned_abs()) > edge)
            .unwrap_or(0);
        at.checked_sub(Duration::from_secs_f64((CHUNK - i) as f64 / 24_000.0))
    }

    /// When that sound ended: the last loud sample before 300 ms of quiet.
    pub(crate) fn end(&self, t0: Instant) -> Option<Instant> {
        let v = self.chunks.lock().ok()?;
        let fr: Vec<&Chunk> = v.iter().filter(|(at, _, _)| *at >= t0).collect();
        let first = fr.iter().position(|(_, l, _)| *l > 328.0)?;
        let mut last = first;
        for (i, (_, l, _)) in fr.iter().enumerate().skip(first) {
            if *l > 328.0 {
                last = i;
            } else if i > last + 30 {
                break;
            }
        }
        let (at, _, pcm) = fr[last];
        let j = pcm
            .iter()
            .rposition(|s| s.unsigned_abs() > 800)
            .unwrap_or(CHUNK);
        at.checked_sub(Duration::from_secs_f64((CHUNK - j) as f64 / 24_000.0))
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
