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
    /// Each character of `text` (whitespace aside) with its box's edges.
    pub glyphs: Vec<Glyph>,
}

/// One character as Tesseract boxed it, in image pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Glyph {
    pub ch: char,
    pub x0: i32,
    pub x1: i32,
    /// The box's top and bottom edges (bottom exclusive).
    pub y0: i32,
    pub y1: i32,
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
    #[error("the learned text reader: {0}")]
    Learned(String),
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
            // Every character's box in the hOCR output (`parse_hocr`).
            ("hocr_char_boxes", "1"),
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
        let hocr = self
            .api
            .raw
            .get_hocr_text(0)
            .map_err(|e| EngineError::Recognise(format!("{e:?}")))?;
        Ok(parse_hocr(hocr.as_ref().to_str().unwrap_or("")))
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

/// Words of Tesseract's hOCR output with the box of every character (`hocr_char_boxes`).
/// Anything that does not parse is skipped, never a panic.
///
/// Why hOCR rather than TSV: only hOCR carries the characters' own boxes, and a monospace line
/// shows itself by its characters' centres sitting on one grid (see `recognize::Grid`).
pub fn parse_hocr(hocr: &str) -> Vec<RawWord> {
    let mut out = Vec::new();
    for chunk in hocr.split("class='ocrx_word'").skip(1) {
        let Some(word) = parse_word(chunk) else {
            continue;
        };
        if !word.text.is_empty() {
            out.push(word);
        }
    }
    out
}

/// One `ocrx_word` span: `chunk` starts just after its class attribute and runs to the next
/// word's.
fn parse_word(chunk: &str) -> Option<RawWord> {
    let head = title(chunk)?;
    let [wx0, wy0, wx1, wy1] = bbox(head.strip_prefix("bbox ")?)?;
    let conf: f32 = head
        .split(';')
        .find_map(|f| f.trim().strip_prefix("x_wconf "))?
        .trim()
        .parse()
        .ok()?;
    let mut text = String::new();
    let mut glyphs = Vec::new();
    for c in chunk.split("class='ocrx_cinfo'").skip(1) {
        let t = title(c)?;
        let [x0, y0, x1, y1] = bbox(t.strip_prefix("x_bboxes ")?)?;
        let conf = t
            .split(';')
            .find_map(|f| f.trim().strip_prefix("x_conf "))
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(0.0);
        let inner = c.split_once('>')?.1.split_once("</span>")?.0;
        let ch = unescape(inner);
        if ch.trim().is_empty() {
            continue;
        }
        text.push_str(&ch);
        glyphs.extend(ch.chars().next().map(|ch| Glyph {
            ch,
            x0,
            x1,
            y0,
            y1,
            conf,
        }));
    }
    if glyphs.is_empty() {
        // Without character boxes the word's text is the span's own content.
        let inner = chunk.split_once('>')?.1.split_once("</span>")?.0;
        text = unescape(inner.trim());
    }
    Some(RawWord {
        text: text.trim().to_string(),
        x: wx0,
        y: wy0,
        w: wx1 - wx0,
        h: wy1 - wy0,
        conf,
        glyphs,
    })
}

/// The value of `title='…'` in the start tag at the beginning of `s`.
fn title(s: &str) -> Option<&str> {
    const KEY: &str = "title='";
    let tag = s.split_once('>')?.0;
    let at = tag.find(KEY)? + KEY.len();
    let end = tag[at..].find('\'')?;
    Some(&tag[at..at + end])
}

/// The first four integers of `s` (up to a ';').
fn bbox(s: &str) -> Option<[i32; 4]> {
    let mut it = s
        .split(';')
        .next()?
        .split_whitespace()
        .map(|v| v.parse().ok());
    Some([it.next()??, it.next()??, it.next()??, it.next()??])
}

/// HTML entities as Tesseract writes them.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
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
    /// Stop all but the first `n` engines (at least one), and free their memory.
    pub fn keep(&mut self, n: usize) {
        self.engines.truncate(n.max(1));
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
    fn hocr_words_with_their_characters_and_broken_spans_skipped() {
        let hocr = "<div class='ocr_page' title='bbox 0 0 200 40'>\n\
            <span class='ocr_line' title=\"bbox 10 4 100 16\">\n\
            <span class='ocrx_word' id='word_1_1' title='bbox 10 4 40 16; x_wconf 91'>\n\
             <span class='ocrx_cinfo' title='x_bboxes 10 4 17 16; x_conf 99.1'>S</span>\n\
             <span class='ocrx_cinfo' title='x_bboxes 18 6 24 16; x_conf 98'>&amp;</span>\n\
             <span class='ocrx_cinfo' title='x_bboxes 25 6 31 16; x_conf 98'>&lt;</span>\n\
            </span>\n\
            <span class='ocrx_word' id='word_1_2' title='bbox 50 x 60 16; x_wconf 90'>bad</span>\n\
            <span class='ocrx_word' id='word_1_3' title='bbox 70 4 90 16; x_wconf 80' lang='eng'>Ok</span>\n\
            <span class='ocrx_word' id='word_1_4' title='bbox 95 4 99 16; x_wconf 80'> </span>";
        let w = parse_hocr(hocr);
        assert_eq!(
            w,
            vec![
                RawWord {
                    text: "S&<".into(),
                    x: 10,
                    y: 4,
                    w: 30,
                    h: 12,
                    conf: 91.0,
                    glyphs: [
                        ('S', 10, 4, 17, 99.1),
                        ('&', 18, 6, 24, 98.0),
                        ('<', 25, 6, 31, 98.0)
                    ]
                    .map(|(ch, x0, y0, x1, conf)| Glyph {
                        ch,
                        x0,
                        x1,
                        y0,
                        y1: 16,
                        conf
                    })
                    .to_vec(),
                },
                RawWord {
                    text: "Ok".into(),
                    x: 70,
                    y: 4,
                    w: 20,
                    h: 12,
                    conf: 80.0,
                    glyphs: vec![],
                }
            ]
        );
        assert!(parse_hocr("garbage <span class='ocrx_word' title='bbox 1 2'>").is_empty());
    }
}
