//! Narration: every plan and result is printed and, unless quiet, spoken by a local text-to-speech voice (espeak-ng) without blocking the loop; a new utterance cuts off a stale one.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub struct Narrator {
    quiet: bool,
    speaking: Option<Child>,
    /// When set, every utterance is also written here as `NNN.wav` (for tests and the demo).
    wav_dir: Option<PathBuf>,
    count: usize,
    /// Everything said, in order.
    pub transcript: Vec<String>,
}

impl Narrator {
    pub fn new(quiet: bool, wav_dir: Option<PathBuf>) -> Narrator {
        Narrator {
            quiet,
            speaking: None,
            wav_dir,
            count: 0,
            transcript: Vec::new(),
        }
    }

    /// Print and speak `text`. Returns at once; a previous utterance still playing is cut off.
    pub fn say(&mut self, text: &str) {
        println!("🗣  {text}");
        self.transcript.push(text.to_string());
        self.count += 1;
        if let Some(dir) = &self.wav_dir {
            let _ = std::fs::create_dir_all(dir);
            let out = dir.join(format!("{:03}.wav", self.count));
            // Written synchronously but off the audio device: espeak-ng renders ~50x real time.
            let _ = Command::new("espeak-ng")
                .arg("-w")
                .arg(&out)
                .arg(text)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        if self.quiet {
            return;
        }
        self.cut();
        match Command::new("espeak-ng")
            .arg(text)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => self.speaking = Some(c),
            Err(e) => {
                tracing::warn!("no voice (espeak-ng: {e}); narration is printed only");
                self.quiet = true;
            }
        }
    }

    /// Stop speaking now (a new utterance, or the emergency stop).
    pub fn cut(&mut self) {
        if let Some(mut c) = self.speaking.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Narrator {
    fn drop(&mut self) {
        // Let the last utterance finish unless something cut it already.
        if let Some(mut c) = self.speaking.take() {
            let _ = c.wait();
        }
    }
}
