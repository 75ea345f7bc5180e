//! `voxdesk bench eyes`: the readers (Tesseract behind the pixel rules, and the learned PP-OCRv6) side by side on the generated corpus, split by template (train, dev, test: the test part was tuned on by nothing), with recall per kind of text, precision, cold and incremental time and resident memory, in one run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Deserialize;

use voxdesk_eval::{self as eval, Found, GroundTruth, GtLabel, Score};
use voxdesk_perception::{engine, Perceiver};
use voxdesk_screen::frame::load_image;

use crate::bench::median;

pub struct EyesOptions {
    /// The rendered corpus (`cargo xtask corpus`): `NAME-THEME-SCALEx.png` + `.json`.
    pub corpus: Option<PathBuf>,
    /// The template → split table (`tests/fixtures/corpus/splits.json`).
    pub splits: PathBuf,
    /// The project's own fixtures, reported as their own part ("fixtures").
    pub fixtures: Option<PathBuf>,
    pub readers: Vec<String>,
    /// Only these splits (empty: all).
    pub only: Vec<String>,
    /// Every n-th template of each part, with all its images (1: all).
    pub stride: usize,
    pub misses: bool,
    /// Real applications with truth from their accessibility tree (`voxdesk bench apps`).
    pub apps: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Splits {
    templates: Vec<Template>,
}

#[derive(Deserialize)]
struct Template {
    name: String,
    #[serde(default)]
    family: String,
    split: String,
}

struct Image {
    name: String,
    template: String,
    split: String,
    png: PathBuf,
    gt: GroundTruth,
}

/// The kinds the issue names, each a filter over labels.
const KINDS: &[&str] = &[
    "small text",
    "dark",
    "low contrast",
    "on colour",
    "shortcut",
    "icon label",
    "terminal",
    "code",
    "cell",
];

fn in_kind(kind: &str, gt: &GroundTruth, l: &GtLabel) -> bool {
    match kind {
        // (0: not known, as in the apps' truth)
        "small text" => l.font_px > 0.0 && l.font_px < 12.0,
        "dark" => gt.theme == "dark",
        "low contrast" => l.contrast.is_some_and(|c| c < 3.0),
        "on colour" => l.on_colour,
        "icon label" => l.kind() == "icon",
        k => l.kind() == k,
    }
}

#[derive(Default)]
struct Part {
    all: Score,
    kinds: BTreeMap<&'static str, Score>,
    cold: Vec<f64>,
    detect: Vec<f64>,
    incr: Vec<f64>,
    /// Of an incremental pass: finding boxes, and reading them.
    incr_detect: Vec<f64>,
    incr_read: Vec<f64>,
    images: usize,
}

impl Part {
    fn add(&mut self, gt: &GroundTruth, found: &[Found]) {
        self.images += 1;
        self.all
            .add(eval::score(gt, found, |_| true, gt.complete()));
        for k in KINDS {
            self.kinds.entry(k).or_default().add(eval::score(
                gt,
                found,
                |l| in_kind(k, gt, l),
                false,
            ));
        }
    }
}

fn pct(s: &Score) -> String {
    match s.recall() {
        Some(r) => format!("{:.1}", r * 100.0),
        None => "–".into(),
    }
}

fn images(o: &EyesOptions) -> Result<Vec<Image>> {
    let mut out = Vec::new();
    let splits: Splits = match &o.corpus {
        Some(_) => serde_json::from_str(
            &std::fs::read_to_string(&o.splits)
                .with_context(|| format!("reading {}", o.splits.display()))?,
        )
        .with_context(|| format!("parsing {}", o.splits.display()))?,
        None => Splits {
            templates: Vec::new(),
        },
    };
    let split_of: BTreeMap<&str, (&str, &str)> = splits
        .templates
        .iter()
        .map(|t| (t.name.as_str(), (t.split.as_str(), t.family.as_str())))
        .collect();
    let mut add_dir = |dir: &Path, part: Option<&str>| -> Result<()> {
        let mut pngs: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| {
                format!(
                    "reading {} (render it with `cargo xtask corpus`)",
                    dir.display()
                )
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "png")
                    && !p.to_string_lossy().ends_with(".changed.png")
            })
            .collect();
        pngs.sort();
        for png in pngs {
            let stem = png
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let json = png.with_extension("json");
            if !json.is_file() {
                continue;
            }
            // NAME-THEME-SCALEx: the template is what precedes the last two dashes.
            let template = stem.rsplitn(3, '-').nth(2).unwrap_or(&stem).to_string();
            let split = match part {
                Some(p) => p.to_string(),
                None => match split_of.get(template.as_str()) {
                    Some((s, _)) => s.to_string(),
                    None => anyhow::bail!("{stem}: template {template} is in no split"),
                },
            };
            if !o.only.is_empty() && !o.only.contains(&split) {
                continue;
            }
            let gt: GroundTruth = serde_json::from_str(&std::fs::read_to_string(&json)?)
                .with_context(|| format!("parsing {}", json.display()))?;
            out.push(Image {
                name: stem,
                template,
                split,
                png,
                gt,
            });
        }
        Ok(())
    };
    if let Some(c) = &o.corpus {
        add_dir(c, None)?;
    }
    if let Some(f) = &o.fixtures {
        add_dir(f, Some("fixtures"))?;
    }
    if let Some(a) = &o.apps {
        add_dir(a, Some("apps"))?;
    }
    // Every n-th template of each part, with all its images: a stride over images would keep
    // only some of a template's variants (every other image is every 1x one, its 2x left out).
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    out.retain(|i| {
        let ts = seen.entry(i.split.clone()).or_default();
        let k = match ts.iter().position(|t| *t == i.template) {
            Some(k) => k,
            None => {
                ts.push(i.template.clone());
                ts.len() - 1
            }
        };
        k % o.stride.max(1) == 0
    });
    Ok(out)
}

/// Resident memory of this process now (`VmRSS`) or at its highest since [`reset_peak`]
/// (`VmHWM`), in MB (Linux).
fn rss_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// Start the high-water mark of resident memory again from what is resident now.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A one-widget change: the first label's box inverted (its pixels differ, nothing else does).
fn one_widget_changed(rgba: &[u8], w: u32, gt: &GroundTruth) -> Option<Vec<u8>> {
    let l = gt.labels.iter().find(|l| !eval::optional(l.kind()))?;
    let r = l.bbox.rect();
    let mut out = rgba.to_vec();
    for y in r.y.max(0)..r.bottom().min(gt.height as i32) {
        for x in r.x.max(0)..r.right().min(w as i32) {
            let at = (y as usize * w as usize + x as usize) * 4;
            for c in 0..3 {
                out[at + c] = 255 - out[at + c];
            }
        }
    }
    Some(out)
}

pub fn eyes(o: &EyesOptions) -> Result<String> {
    // Rules of the pixel reader turned off for this run, to measure what each one pays.
    let off: Vec<String> = std::env::var("VOXDESK_RULES_OFF")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if let Err(unknown) = voxdesk_perception::rules::turn_off(&off) {
        anyhow::bail!(
            "VOXDESK_RULES_OFF names no rule: {} (the rules: {})",
            unknown.join(", "),
            voxdesk_perception::rules::NAMES.join(", ")
        );
    }
    let imgs = images(o)?;
    anyhow::ensure!(!imgs.is_empty(), "no images to read");
    let parts: Vec<String> = {
        let mut p: Vec<String> = imgs.iter().map(|i| i.split.clone()).collect();
        p.sort_by_key(|s| match s.as_str() {
            "train" => 0,
            "dev" => 1,
            "test" => 2,
            "fixtures" => 3,
            _ => 4,
        });
        p.dedup();
        p
    };
    let mut out = format!(
        "{} images: {}\n",
        imgs.len(),
        parts
            .iter()
            .map(|p| format!("{p} {}", imgs.iter().filter(|i| &i.split == p).count()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut misses = String::new();
    for reader in &o.readers {
        reset_peak();
        let rss0 = rss_mb("VmRSS:");
        let t = Instant::now();
        let mut p = Perceiver::new(engine::default_workers())?;
        // "learned@1.3@0.75@0.9@6.5@1": the learned reader with other gaps between labels
        // (always at 1.3 ink heights; at 0.9 where 6.5 times the line's median glyph gap),
        // another scale for the detector ("0.75": one scale; "xh12": scaled per region to an
        // x-height of 12 px, "xh12:1.5" up to 1.5 times where text is smaller), and buttons' borders cut at (1) or not (0); any may be left empty
        // or off.
        let mut knobs = reader.split('@');
        let kind = knobs.next().unwrap_or_default();
        let parse = |g: &str| {
            g.parse::<f32>()
                .context("learned@WIDE@SCALE@NEAR@RATIO@BORDERS@COLOUR")
        };
        let mut next = || knobs.next().filter(|g| !g.is_empty());
        let wide = next().map(parse).transpose()?;
        let scale = match next() {
            Some(g) => Some(match g.strip_prefix("xh") {
                Some(xh) => {
                    let (xh, max) = xh.split_once(':').unwrap_or((xh, "1"));
                    voxdesk_perception::learned::DetectScale::ByText {
                        xh: parse(xh)?,
                        max: parse(max)?,
                    }
                }
                None => voxdesk_perception::learned::DetectScale::Fixed(parse(g)?),
            }),
            None => None,
        };
        let (near, ratio, borders, colour) = (
            next().map(parse).transpose()?,
            next().map(parse).transpose()?,
            next().map(parse).transpose()?,
            next().map(parse).transpose()?,
        );
        if kind == "learned" {
            let models = std::env::var_os("VOXDESK_MODELS_DIR").map(PathBuf::from);
            p.use_learned(models.as_deref(), engine::default_workers())?;
            let d = voxdesk_perception::learned::GAPS;
            p.set_label_gaps(voxdesk_perception::learned::Gaps {
                wide: wide.unwrap_or(d.wide),
                near: near.unwrap_or(d.near),
                ratio: ratio.unwrap_or(d.ratio),
                borders: borders.map_or(d.borders, |b| b != 0.0),
                colour: colour.map_or(d.colour, |c| c as u8),
            });
            if let Some(s) = scale {
                p.set_detect_scale(s);
            }
        } else {
            anyhow::ensure!(
                reader == "tesseract",
                "unknown reader {reader} (tesseract, learned)"
            );
        }
        let start_ms = t.elapsed().as_secs_f64() * 1000.0;
        let mut by: BTreeMap<String, Part> = BTreeMap::new();
        for img in &imgs {
            let pic = load_image(&img.png)?;
            let (w, h) = pic.dimensions();
            p.clear_cache();
            let r = p.perceive(pic.as_raw(), w, h, true)?;
            let found: Vec<Found> = r
                .targets
                .iter()
                .map(|t| Found {
                    text: t.text.clone(),
                    rect: t.rect,
                })
                .collect();
            let part = by.entry(img.split.clone()).or_default();
            part.cold.push(r.timings.total_ms);
            part.detect.push(r.timings.detect_ms);
            part.add(&img.gt, &found);
            if let Some(changed) = one_widget_changed(pic.as_raw(), w, &img.gt) {
                let r = p.perceive(&changed, w, h, false)?;
                part.incr.push(r.timings.total_ms);
                part.incr_detect.push(r.timings.detect_ms);
                part.incr_read.push(r.timings.ocr_ms);
            }
            if o.misses {
                for (l, near) in eval::misses(&img.gt, &found) {
                    misses.push_str(&format!(
                        "{reader}\t{}\t{}\tmissed\t{}\t{:?}\t{:.0}px\t{:?}\n",
                        img.split,
                        img.name,
                        l.kind(),
                        l.text,
                        l.font_px,
                        near
                    ));
                }
                for j in eval::junk(&img.gt, &found)
                    .into_iter()
                    .filter(|_| img.gt.complete())
                {
                    misses.push_str(&format!(
                        "{reader}\t{}\t{}\tjunk\t{:?}\t{}\n",
                        img.split, img.name, j.text, j.rect
                    ));
                }
            }
        }
        let peak = rss_mb("VmHWM:");
        out.push_str(&format!(
            "\nreader {reader}: started in {start_ms:.0} ms, resident {:.0} MB before, {:.0} MB peak (perception's share ≈ {:.0} MB)\n",
            rss0,
            peak,
            peak - rss0
        ));
        out.push_str(&format!("{:<14}", "recall %"));
        for p in &parts {
            out.push_str(&format!("{p:>10}"));
        }
        out.push('\n');
        let row = |name: &str, f: &dyn Fn(&Part) -> String| {
            let mut s = format!("{name:<14}");
            for p in &parts {
                s.push_str(&format!("{:>10}", by.get(p).map(f).unwrap_or_default()));
            }
            s.push('\n');
            s
        };
        out.push_str(&row("all", &|p| pct(&p.all)));
        for k in KINDS {
            out.push_str(&row(k, &|p| {
                p.kinds.get(k).map(pct).unwrap_or_else(|| "–".into())
            }));
        }
        out.push_str(&row("labels", &|p| p.all.labels.to_string()));
        out.push_str(&row("found", &|p| p.all.found.to_string()));
        out.push_str(&row("junk", &|p| {
            format!("{}/{}", p.all.junk, p.all.targets)
        }));
        out.push_str(&row("precision", &|p| match p.all.junk_rate() {
            Some(j) => format!("{:.1}", (1.0 - j) * 100.0),
            None => "–".into(),
        }));
        out.push_str(&row("cold ms", &|p| {
            format!("{:.0}", median(&mut p.cold.clone()))
        }));
        out.push_str(&row("  finding ms", &|p| {
            format!("{:.0}", median(&mut p.detect.clone()))
        }));
        out.push_str(&row("incr ms", &|p| {
            format!("{:.1}", median(&mut p.incr.clone()))
        }));
        out.push_str(&row("  finding ms", &|p| {
            format!("{:.1}", median(&mut p.incr_detect.clone()))
        }));
        out.push_str(&row("  reading ms", &|p| {
            format!("{:.1}", median(&mut p.incr_read.clone()))
        }));
        out.push_str(&row("images", &|p| p.images.to_string()));
    }
    if o.misses {
        let path = PathBuf::from("target/bench-eyes-misses.tsv");
        std::fs::write(&path, misses)?;
        out.push_str(&format!("\nmisses and junk: {}\n", path.display()));
    }
    Ok(out)
}
