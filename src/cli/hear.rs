//! `voxdesk hear FILE.wav…`: what the learned recogniser (Moonshine) hears in recorded speech, with how sure it was and how long it took — the offline ears checked without a microphone.

use std::path::PathBuf;

use anyhow::Result;

use super::Exit;
use voxdesk_moonshine::Moonshine;

pub fn run(json: bool, files: &[PathBuf], models: Option<PathBuf>) -> Result<Exit> {
    let Some(dir) = voxdesk_onnx::models_dir(models.as_deref()) else {
        eprintln!("voxdesk: error: no models directory: set models.dir or HOME");
        return Ok(Exit::Failed);
    };
    let t = std::time::Instant::now();
    let mut m = match Moonshine::load(&dir, 2) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::Failed);
        }
    };
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    let mut failed = false;
    for f in files {
        let pcm = match voxdesk_voice::listen::read_wav(f) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("voxdesk: error: {e}");
                failed = true;
                continue;
            }
        };
        let samples: Vec<f32> = pcm.iter().map(|&s| s as f32 / 32768.0).collect();
        match m.transcribe(&samples) {
            Ok(h) if json => println!(
                "{}",
                serde_json::json!({"file": f, "text": h.text, "logprob": h.logprob,
                    "tokens": h.tokens, "ms": h.ms, "seconds": samples.len() as f64 / 16_000.0,
                    "load_ms": load_ms})
            ),
            Ok(h) => println!(
                "{}\t{:?}\t(log p {:.2}, {} tokens, {:.0} ms)",
                f.display(),
                h.text,
                h.logprob,
                h.tokens,
                h.ms
            ),
            Err(e) => {
                eprintln!("voxdesk: error: {}: {e}", f.display());
                failed = true;
            }
        }
    }
    Ok(if failed { Exit::Failed } else { Exit::Ok })
}
