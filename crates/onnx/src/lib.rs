//! ONNX Runtime for the learned models: the shared library a PyPI wheel ships (never downloaded at build or run time), found in voxdesk's models directory, loaded once per process through `ort`'s `load-dynamic`; a missing file is an error that names the file and the one command that installs it. The product's only `ort` user besides the model crates above it.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

pub use ort;

/// The library, as `cargo xtask models` unpacks it from `moonshine-cpp`'s wheel (its own
/// ONNX Runtime 1.22.1; `ort` without its newest API levels runs on it).
pub const RUNTIME: &str = "onnxruntime/libonnxruntime.so.1.22.1";

/// The one command that installs the runtime and the models (pinned versions, sha256 checked).
pub const INSTALL: &str = "cargo xtask models";

#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    #[error("{what} is missing: no {path} (install it with `{INSTALL}`, or point models.dir / VOXDESK_MODELS_DIR at a directory that has it)")]
    Missing { what: String, path: PathBuf },
    #[error("ONNX Runtime could not be loaded from {path}: {why}")]
    Load { path: PathBuf, why: String },
    #[error("{0}")]
    Model(String),
}

/// Where the models live: `dir` when the settings name one, else `$XDG_DATA_HOME/voxdesk/models`
/// (`~/.local/share/voxdesk/models`).
pub fn models_dir(dir: Option<&Path>) -> Option<PathBuf> {
    dir.map(Path::to_path_buf).or_else(|| {
        directories::ProjectDirs::from("", "", "voxdesk").map(|d| d.data_dir().join("models"))
    })
}

/// `path`, or the error that says it is missing and how to install it.
pub fn need(what: &str, path: PathBuf) -> Result<PathBuf, OnnxError> {
    if path.is_file() {
        Ok(path)
    } else {
        Err(OnnxError::Missing {
            what: what.to_string(),
            path,
        })
    }
}

static ENV: OnceLock<ort::environment::Environment> = OnceLock::new();
static STARTING: Mutex<()> = Mutex::new(());

/// The process's ONNX Runtime environment, loaded from `models`' runtime on first use (ONNX
/// Runtime allows one per process; later calls share it, whatever directory they name).
pub fn environment(models: &Path) -> Result<ort::environment::Environment, OnnxError> {
    if let Some(e) = ENV.get() {
        return Ok(e.clone());
    }
    let _one = STARTING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = ENV.get() {
        return Ok(e.clone());
    }
    let lib = need("ONNX Runtime", models.join(RUNTIME))?;
    let fail = |why: String| OnnxError::Load {
        path: lib.clone(),
        why,
    };
    let env = ort::init_from(&lib)
        .map_err(|e| fail(e.to_string()))?
        .with_name("voxdesk")
        .build()
        .map_err(|e| fail(e.to_string()))?;
    Ok(ENV.get_or_init(|| env).clone())
}

/// A session for the model file `path`, its work on `threads` threads (the recogniser runs off
/// the audio and async threads, on a thread of its own).
pub fn session(
    env: &ort::environment::Environment,
    path: &Path,
    threads: usize,
) -> Result<ort::session::Session, OnnxError> {
    session_with(env, path, None, threads, false)
}

/// [`session`] for a model whose inputs change size from run to run (a frame, a band, a text
/// box): no memory arena and no memory pattern, which would keep the largest run's buffers
/// (measured: the text detector on a 1920×1088 frame held over 1 GB with them).
pub fn session_lean(
    env: &ort::environment::Environment,
    path: &Path,
    threads: usize,
) -> Result<ort::session::Session, OnnxError> {
    session_with(env, path, None, threads, true)
}

/// [`session_lean`] for a model given as its bytes (a model changed after it was read: the
/// text recogniser cut to the classes it may choose); `path` names it in errors.
pub fn session_lean_bytes(
    env: &ort::environment::Environment,
    path: &Path,
    bytes: &[u8],
    threads: usize,
) -> Result<ort::session::Session, OnnxError> {
    session_with(env, path, Some(bytes), threads, true)
}

fn session_with(
    env: &ort::environment::Environment,
    path: &Path,
    bytes: Option<&[u8]>,
    threads: usize,
    lean: bool,
) -> Result<ort::session::Session, OnnxError> {
    let bad = |e: String| OnnxError::Model(format!("{}: {e}", path.display()));
    let mut b = ort::session::Session::builder(env).map_err(|e| bad(e.to_string()))?;
    if lean {
        b = b
            .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(false).build()])
            .map_err(|e| bad(e.to_string()))?
            .with_memory_pattern(false)
            .map_err(|e| bad(e.to_string()))?;
    }
    // Subnormal floats are read as zero and results that would be subnormal flushed to zero
    // (the threads that run the model: ONNX Runtime's pool and the caller). PP-OCRv6's
    // detector makes them in two of its 1×1 convolutions, where the CPU's slow path for them
    // took 160 of a window's 350 ms. Measured with `voxdesk bench eyes` (dev, stride 1): the
    // same 4215 labels found and 49 junk, cold 1645 → 1228 ms (finding 818 → 391); Moonshine
    // hears the same words in the same time.
    let mut b = b
        .with_flush_to_zero()
        .map_err(|e| bad(e.to_string()))?
        .with_intra_threads(threads.max(1))
        .map_err(|e| bad(e.to_string()))?
        .with_inter_threads(1)
        .map_err(|e| bad(e.to_string()))?;
    match bytes {
        Some(bytes) => b.commit_from_memory(bytes),
        None => b.commit_from_file(path),
    }
    .map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_runtime_names_the_file_and_the_install_command() {
        let dir = std::env::temp_dir().join("voxdesk-onnx-test-none");
        let e = environment(&dir).unwrap_err().to_string();
        assert!(e.contains("libonnxruntime.so.1.22.1"), "{e}");
        assert!(e.contains("cargo xtask models"), "{e}");
    }

    #[test]
    fn the_models_dir_is_the_setting_or_the_data_dir() {
        assert_eq!(models_dir(Some(Path::new("/m"))), Some(PathBuf::from("/m")));
        assert!(models_dir(None).is_some_and(|d| d.ends_with("voxdesk/models")));
    }
}
