//! The only module that touches Tesseract (via leptess): a pool of engines, one per worker thread, reading grey strips into words.

use std::sync::Mutex;

use leptess::tesseract::TessApi;

/// One word as Tesseract reported it, in the pixels of the image it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct RawWord {
    pub text: String,
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    /// 0–100 as Tesseract reports it.
    pub conf: f32,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("Tesseract could not start with English data from {0} (install the Debian package tesseract-ocr-eng, or set TESSDATA_PREFIX)")]
    Init(String),
    #[error("Tesseract rejected the image: {0}")]
    Image(String),
    #[error("Tesseract failed to recognise: {0}")]
    Recognise(String),
}

/// A started Tesseract engine configured for pre-normalised text strips.
pub struct Engine {
    api: TessApi,
}

// Page segmentation: 7 = "a single text line". voxdesk hands over one label per image, already
// dark on white at a readable size, so Tesseract's own layout analysis is skipped.
const PSM_LINE: &str = "7";

impl Engine {
    pub fn new() -> Result<Engine, EngineError> {
        let datapath = tessdata_dir();
        let mut api = TessApi::new(datapath.as_deref(), "eng").map_err(|_| {
            EngineError::Init(
                datapath
                    .clone()
                    .unwrap_or_else(|| "the default location".into()),
            )
        })?;
        for (k, v) in [
            ("tessedit_pageseg_mode", PSM_LINE),
            // voxdesk normalises polarity itself; Tesseract's own retry on inverted text doubles the time of every low-confidence line.
            ("tessedit_do_invert", "0"),
            // Screen pixels have no physical resolution; without this Tesseract warns on every call and guesses.
            ("user_defined_dpi", "96"),
            ("debug_file", "/dev/null"),
        ] {
            let (k, v) = (
                std::ffi::CString::new(k).unwrap(),
                std::ffi::CString::new(v).unwrap(),
            );
            api.raw
                .set_variable(&k, &v)
                .map_err(|_| EngineError::Init(format!("could not set {k:?}")))?;
        }
        Ok(Engine { api })
    }

    /// Read an 8-bit grey image (dark text on white) into words.
    pub fn read_gray(&mut self, gray: &[u8], w: u32, h: u32) -> Result<Vec<RawWord>, EngineError> {
        self.api
            .raw
            .set_image(gray, w as i32, h as i32, 1, w as i32)
            .map_err(|e| EngineError::Image(format!("{e:?}")))?;
        self.api.raw.set_source_resolution(96);
        self.api
            .raw
            .recognize()
            .map_err(|e| EngineError::Recognise(format!("{e:?}")))?;
        let tsv = self
            .api
            .raw
            .get_tsv_text(0)
            .map_err(|e| EngineError::Recognise(format!("{e:?}")))?;
        Ok(parse_tsv(tsv.as_ref().to_str().unwrap_or("")))
    }
}

/// Where the English data lives: `$TESSDATA_PREFIX`, else the first Debian location that has `eng.traineddata`.
pub fn tessdata_dir() -> Option<String> {
    if let Ok(p) = std::env::var("TESSDATA_PREFIX") {
        return Some(p);
    }
    [
        "/usr/share/tesseract-ocr/5/tessdata",
        "/usr/share/tesseract-ocr/4.00/tessdata",
        "/usr/share/tessdata",
    ]
    .into_iter()
    .find(|d| std::path::Path::new(d).join("eng.traineddata").is_file())
    .map(String::from)
}

/// Words (level 5) of Tesseract's TSV output. Lines that do not parse are skipped, never a panic.
pub fn parse_tsv(tsv: &str) -> Vec<RawWord> {
    tsv.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            if f.len() < 12 || f[0] != "5" {
                return None;
            }
            let text = f[11].trim();
            if text.is_empty() {
                return None;
            }
            Some(RawWord {
                text: text.to_string(),
                x: f[6].parse().ok()?,
                y: f[7].parse().ok()?,
                w: f[8].parse().ok()?,
                h: f[9].parse().ok()?,
                conf: f[10].parse().ok()?,
            })
        })
        .collect()
}

/// A fixed set of engines, one per worker; a worker takes one for the duration of a job.
pub struct EnginePool {
    engines: Vec<Mutex<Engine>>,
}

impl EnginePool {
    /// Start `n` engines, in parallel: each spends ~0.2 s of CPU loading its model, which every
    /// `voxdesk look`/`act`/`run` pays before its first observation.
    pub fn new(n: usize) -> Result<EnginePool, EngineError> {
        let started: Vec<Result<Engine, EngineError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n.max(1)).map(|_| s.spawn(Engine::new)).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(EngineError::Init(
                            "an engine panicked while starting".into(),
                        ))
                    })
                })
                .collect()
        });
        let engines = started
            .into_iter()
            .map(|e| e.map(Mutex::new))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EnginePool { engines })
    }
    pub fn len(&self) -> usize {
        self.engines.len()
    }
    pub fn is_empty(&self) -> bool {
        self.engines.is_empty()
    }
    /// Run `f` with engine `i` (workers use distinct indices, so this never waits).
    pub fn with<R>(&self, i: usize, f: impl FnOnce(&mut Engine) -> R) -> R {
        let mut e = self.engines[i % self.engines.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        f(&mut e)
    }
}

/// How many OCR workers to run: one per core, at least one.
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_words_only_and_malformed_lines_skipped() {
        let tsv = "1\t1\t0\t0\t0\t0\t0\t0\t100\t40\t-1\t\n\
                   5\t1\t1\t1\t1\t1\t10\t4\t30\t12\t91.5\tSave\n\
                   5\t1\t1\t1\t1\t2\t44\t4\tx\t12\t90\tbad\n\
                   5\t1\t1\t1\t1\t3\t60\t4\t20\t12\t80\t \n\
                   garbage";
        let w = parse_tsv(tsv);
        assert_eq!(
            w,
            vec![RawWord {
                text: "Save".into(),
                x: 10,
                y: 4,
                w: 30,
                h: 12,
                conf: 91.5
            }]
        );
    }
}
