//! Perception: turns frames into numbered, labelled targets, incrementally (only changed tiles are re-read) and with ids that stay stable across observations.
//!
//! Layout: `lines` finds label boxes in pixels, `recognize` reads them with the `engine` pool,
//! `tiles` decides what changed, `tracker` keeps ids stable. [`Perceiver`] owns the engines, the
//! strip cache and the previous frame, and is the only entry point.
//!
//! Perception sits on the core alone: it can name `voxdesk_core`, never the screen, the rails or
//! anything above (Cargo refuses the `use`):
//! ```
//! use voxdesk_core::geometry::Rect;
//! ```
//! ```compile_fail
//! use voxdesk_screen::capture::Capturer;
//! ```

pub mod consensus;
pub mod engine;
pub mod fuse;
pub mod label;
pub mod learned;
pub mod lines;
pub mod mono;
pub mod recognize;
pub mod rules;
pub mod tiles;
pub mod tracker;

use std::time::Instant;

pub use engine::EngineError;
use engine::EnginePool;
use label::Label;
use recognize::StripCache;
pub use tracker::Target;
use tracker::Tracker;
use voxdesk_core::geometry::Rect;

/// Where the time of one perception went, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    pub diff_ms: f64,
    pub detect_ms: f64,
    pub ocr_ms: f64,
    pub total_ms: f64,
}

/// The result of one perception pass.
#[derive(Debug, Clone)]
pub struct Perception {
    pub width: u32,
    pub height: u32,
    pub targets: Vec<Target>,
    pub timings: Timings,
    /// Tiles that differed from the previous frame (all of them on a full pass).
    pub changed_tiles: usize,
    pub total_tiles: usize,
    /// Label strips that had to go to Tesseract (the rest came from the cache).
    pub strips_read: usize,
    pub full: bool,
    /// The focused window's accessibility tree fused into the targets (capture pixels), when
    /// its application exposes one.
    pub tree: Option<voxdesk_core::semantic::Tree>,
    /// Why there is no tree (the application exposes none, accessibility is off, …).
    pub no_tree: Option<String>,
}

impl Perception {
    /// True when nothing on screen changed since the previous frame.
    pub fn unchanged(&self) -> bool {
        !self.full && self.changed_tiles == 0
    }
}

/// Owns OCR engines, the strip cache, the last frame and the id tracker.
pub struct Perceiver {
    pool: EnginePool,
    cache: StripCache,
    tracker: Tracker,
    prev: Option<(u32, u32, Vec<u8>)>,
    labels: Vec<Label>,
    targets: Vec<Target>,
    /// The generation of the tree the targets were fused with (`None`: no tree).
    fused_with: Option<u64>,
    /// Developer aid (`perception.debug_dir`): every strip handed to Tesseract is written here.
    debug_dir: Option<std::path::PathBuf>,
    /// The learned reader, when `perception.reader` is "learned": it finds and reads the labels
    /// in place of `lines` and Tesseract (which still reads single lines: `read_line`).
    learned: Option<learned::Learned>,
}

impl Perceiver {
    /// Start `workers` OCR engines (one per worker thread).
    pub fn new(workers: usize) -> Result<Perceiver, EngineError> {
        Ok(Perceiver {
            pool: EnginePool::new(workers)?,
            cache: StripCache::default(),
            tracker: Tracker::new(),
            prev: None,
            labels: Vec::new(),
            targets: Vec::new(),
            fused_with: None,
            debug_dir: None,
            learned: None,
        })
    }

    /// Find and read labels with the learned models (PP-OCRv6) from the models directory
    /// (`models`, else the default one), on `threads` threads, instead of the pixel rules and
    /// Tesseract. A missing model is an error that names it and the command that installs it.
    pub fn use_learned(
        &mut self,
        models: Option<&std::path::Path>,
        threads: usize,
    ) -> Result<(), EngineError> {
        let dir = voxdesk_ppocr::models_dir(models)
            .ok_or_else(|| EngineError::Learned("no models directory (set models.dir)".into()))?;
        self.learned = Some(learned::Learned::load(&dir, threads)?);
        // Tesseract now only reads typed text back (`read_line`): one engine is enough.
        self.pool.keep(1);
        self.cache.clear();
        self.prev = None;
        Ok(())
    }

    /// The learned reader's gaps between two labels (for the benchmark that chooses them;
    /// [`learned::GAPS`] otherwise).
    pub fn set_label_gaps(&mut self, gaps: learned::Gaps) {
        if let Some(l) = &mut self.learned {
            l.gaps = gaps;
            l.clear_cache();
        }
    }

    /// The scale the learned detector sees frames at (for the benchmark that chooses it).
    pub fn set_detect_scale(&mut self, scale: learned::DetectScale) {
        if let Some(l) = &mut self.learned {
            l.set_detect_scale(scale);
        }
    }

    /// Which reader finds and reads the labels: "learned" or "tesseract".
    pub fn reader(&self) -> &'static str {
        if self.learned.is_some() {
            "learned"
        } else {
            "tesseract"
        }
    }

    /// Write every strip handed to Tesseract into `dir` (for developers; none: nowhere).
    pub fn debug_to(&mut self, dir: Option<std::path::PathBuf>) {
        self.debug_dir = dir;
    }

    /// Forget cached strips (a "cold" pass reads everything again).
    pub fn clear_cache(&mut self) {
        self.cache.clear();
        if let Some(l) = &mut self.learned {
            l.clear_cache();
        }
    }

    /// Take `targets` (another process's observation of the same screen, `voxdesk look`'s) as
    /// the last observation's: the next pass reads everything and gives a target the id it had
    /// there while it is the same control, or the same text at about the same place.
    pub fn adopt(&mut self, targets: Vec<Target>) {
        if let Some(max) = targets.iter().map(|t| t.id).max() {
            self.tracker.reserve(max);
        }
        self.targets = targets;
        self.labels.clear();
        self.prev = None;
        self.fused_with = None;
    }

    /// The targets of the last perception.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// Perceive an RGBA frame. `full` forces a complete pass; otherwise only tiles that changed
    /// since the previous frame are re-read.
    pub fn perceive(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        full: bool,
    ) -> Result<Perception, EngineError> {
        self.perceive_with(rgba, width, height, full, None)
    }

    /// [`Perceiver::perceive`] with the focused window's accessibility tree (its nodes in
    /// capture pixels) fused into the targets ([`fuse::fuse`]).
    pub fn perceive_with(
        &mut self,
        rgba: &[u8],
        width: u32,
        height: u32,
        full: bool,
        tree: Option<voxdesk_core::semantic::Tree>,
    ) -> Result<Perception, EngineError> {
        if rgba.len() != width as usize * height as usize * 4 || width == 0 || height == 0 {
            return Err(EngineError::Image(format!(
                "frame buffer of {} bytes does not match {width}x{height} RGBA",
                rgba.len()
            )));
        }
        let t0 = Instant::now();
        let frame_rect = Rect::new(0, 0, width as i32, height as i32);
        let total_tiles = (width.div_ceil(tiles::TILE) * height.div_ceil(tiles::TILE)) as usize;
        let same_size = matches!(&self.prev, Some((w, h, _)) if *w == width && *h == height);
        let full = full || !same_size;
        let dirty: Vec<Rect> = match (&self.prev, full) {
            (Some((_, _, prev)), false) => tiles::changed_tiles(prev, rgba, width, height),
            _ => vec![frame_rect],
        };
        let t_diff = Instant::now();
        let changed_tiles = if full { total_tiles } else { dirty.len() };

        let mut timings = Timings {
            diff_ms: ms(t0, t_diff),
            ..Default::default()
        };
        let mut strips_read = 0;
        if !dirty.is_empty() {
            let (fresh, zones) = if let Some(learned) = &mut self.learned {
                let t = Instant::now();
                let prev = self.prev.as_ref().map(|(_, _, p)| &p[..]);
                let (fresh, zones, n, detect_ms) = match (prev, full) {
                    (Some(prev), false) => {
                        let changed = tiles::changed_boxes(prev, rgba, width, &dirty, 16);
                        learned.read_changes(rgba, width, height, &changed, &self.labels)?
                    }
                    _ => {
                        let (fresh, n, ms) = learned.read(rgba, width, height)?;
                        (fresh, vec![frame_rect], n, ms)
                    }
                };
                strips_read = n;
                timings.detect_ms = detect_ms;
                timings.ocr_ms = ms(t, Instant::now()) - detect_ms;
                (fresh, zones)
            } else {
                let regions = if full {
                    vec![frame_rect]
                } else {
                    tiles::bands(&dirty, width, height)
                };
                let mut lines = Vec::new();
                for r in regions {
                    lines.extend(lines::find_lines(rgba, width, height, r));
                }
                lines.retain(|l| tiles::touches(&l.rect, &dirty));
                let t_detect = Instant::now();
                timings.detect_ms = ms(t_diff, t_detect);
                let (fresh, n) = recognize::recognise(
                    rgba,
                    width,
                    height,
                    &lines,
                    &self.pool,
                    &mut self.cache,
                    self.debug_dir.as_deref(),
                )?;
                strips_read = n;
                timings.ocr_ms = ms(t_detect, Instant::now());
                (fresh, dirty.clone())
            };
            // Old labels in the zones read again are replaced; the rest keep their place.
            self.labels = if full {
                fresh
            } else {
                tiles::merge(&self.labels, fresh, &zones, |l| l.rect)
            };
        }
        let tree_gen = tree.as_ref().map(|t| t.generation);
        if !dirty.is_empty() || tree_gen != self.fused_with {
            let items = fuse::fuse(
                &self.labels,
                tree.as_ref().map(|t| &t.nodes[..]).unwrap_or(&[]),
                frame_rect,
            );
            self.targets = self.tracker.assign_items(&self.targets, items);
            self.fused_with = tree_gen;
        } else {
            // Nothing changed: same targets, none of them new any more.
            for t in &mut self.targets {
                t.new = false;
            }
        }
        match &mut self.prev {
            Some((w, h, buf)) if *w == width && *h == height => buf.copy_from_slice(rgba),
            _ => self.prev = Some((width, height, rgba.to_vec())),
        }
        timings.total_ms = ms(t0, Instant::now());
        Ok(Perception {
            width,
            height,
            targets: self.targets.clone(),
            timings,
            changed_tiles,
            total_tiles,
            strips_read,
            full,
            tree,
            no_tree: None,
        })
    }
}

impl Perceiver {
    /// Read one region of a frame as a single line of text, whatever the label boxes found in
    /// it: where typed text went, when the targets do not show it (text glued to a caret, a
    /// value in an input). Every word is kept, doubtful ones too: the caller compares the line
    /// with the text it expects, it does not take it as a label.
    pub fn read_line(
        &self,
        rgba: &[u8],
        width: u32,
        height: u32,
        rect: Rect,
    ) -> Result<String, EngineError> {
        let frame = Rect::new(0, 0, width as i32, height as i32);
        if rgba.len() != width as usize * height as usize * 4 || !rect.intersects(&frame) {
            return Err(EngineError::Image(format!(
                "no region {rect:?} in a {width}x{height} frame"
            )));
        }
        // Only the region's own pixels: a window border beside it is not a letter.
        let r = rect.intersection(&frame);
        let row = width as usize * 4;
        let mut own = Vec::with_capacity(r.w as usize * r.h as usize * 4);
        for y in r.y..r.bottom() {
            let at = y as usize * row + r.x as usize * 4;
            own.extend_from_slice(&rgba[at..at + r.w as usize * 4]);
        }
        let line = lines::LineBox {
            rect: Rect::new(0, 0, r.w, r.h),
            text_h: (r.h * 3 / 4).max(6),
            glyph: None,
            mono: false,
        };
        let strip = recognize::make_strip(&own, r.w as u32, r.h as u32, &line);
        let g = &strip.gray;
        if let Some(dir) = &self.debug_dir {
            // Developer aid: the exact image Tesseract reads.
            static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = g.save(dir.join(format!("line-{n:04}-{}-{}.png", rect.x, rect.y)));
        }
        let words = self
            .pool
            .with(0, |e| e.read_gray(g.as_raw(), g.width(), g.height()))?;
        Ok(words
            .iter()
            .filter(|w| !w.text.trim().is_empty())
            .map(|w| w.text.trim())
            .collect::<Vec<_>>()
            .join(" "))
    }
}

fn ms(a: Instant, b: Instant) -> f64 {
    (b - a).as_secs_f64() * 1000.0
}
