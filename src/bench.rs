//! `voxdesk bench perception`: times capture, cold full-frame and incremental perception, scores recall and junk on ground-truth fixtures, and runs the `tesseract` CLI on the same images for comparison.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::eval::{self, Found, GroundTruth, Score};
use crate::frame::load_image;
use crate::perception::{engine, Perceiver};

pub struct BenchOptions {
    pub fixtures: PathBuf,
    pub runs: usize,
    pub cli: bool,
    pub misses: bool,
}

pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

struct Fixture {
    name: String,
    png: PathBuf,
    gt: Option<GroundTruth>,
    changed: Option<PathBuf>,
}

fn fixtures(dir: &Path) -> Result<Vec<Fixture>> {
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading fixtures in {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !name.ends_with(".png") || name.ends_with(".changed.png") {
            continue;
        }
        let stem = name.trim_end_matches(".png").to_string();
        let gt_path = dir.join(format!("{stem}.json"));
        let gt = if gt_path.is_file() {
            Some(
                serde_json::from_str(&std::fs::read_to_string(&gt_path)?)
                    .with_context(|| format!("parsing {}", gt_path.display()))?,
            )
        } else {
            None
        };
        let changed = Some(dir.join(format!("{stem}.changed.png"))).filter(|p| p.is_file());
        out.push(Fixture {
            name: stem,
            png: p,
            gt,
            changed,
        });
    }
    Ok(out)
}

/// Per-category scores of one method over all fixtures.
#[derive(Default)]
struct Tally {
    times: Vec<f64>,
    all: Score,
    small: Score,
    dark: Score,
    colour: Score,
    s1: Score,
    s2: Score,
}

impl Tally {
    fn add(&mut self, gt: &GroundTruth, found: &[Found]) {
        self.all.add(eval::score(gt, found, |_| true, true));
        self.small
            .add(eval::score(gt, found, |l| l.font_px < 13.0, false));
        self.colour
            .add(eval::score(gt, found, |l| l.on_colour, false));
        if gt.theme == "dark" {
            self.dark.add(eval::score(gt, found, |_| true, false));
        }
        if gt.scale < 1.5 {
            self.s1.add(eval::score(gt, found, |_| true, false));
        } else {
            self.s2.add(eval::score(gt, found, |_| true, false));
        }
    }
    fn row(&mut self, name: &str) -> String {
        let pct = |s: &Score| {
            s.recall()
                .map(|r| format!("{:.1}%", r * 100.0))
                .unwrap_or_else(|| "n/a".into())
        };
        let junk = self
            .all
            .junk_rate()
            .map(|r| format!("{:.1}%", r * 100.0))
            .unwrap_or_else(|| "n/a".into());
        format!(
            "{:<26} {:>9.1} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}\n",
            name,
            median(&mut self.times),
            pct(&self.all),
            pct(&self.small),
            pct(&self.dark),
            pct(&self.colour),
            pct(&self.s1),
            pct(&self.s2),
            junk
        )
    }
}

pub fn perception(opts: &BenchOptions) -> Result<String> {
    let fx = fixtures(&opts.fixtures)?;
    anyhow::ensure!(
        !fx.is_empty(),
        "no fixtures (*.png) in {}",
        opts.fixtures.display()
    );
    let mut out = String::new();
    let workers = engine::default_workers();
    let t = Instant::now();
    let mut p = Perceiver::new(workers)?;
    out.push_str(&format!(
        "engines: {workers} (started in {:.0} ms), runs per image: {}, fixtures: {}\n\n",
        t.elapsed().as_secs_f64() * 1000.0,
        opts.runs,
        fx.len()
    ));

    // Capture, when there is a display.
    let capture_row = match crate::capture::Capturer::new() {
        Ok(c) => {
            let mut times = Vec::new();
            let mut size = (0, 0);
            for _ in 0..opts.runs.max(10) {
                let t = Instant::now();
                let f = c.capture()?;
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                size = f.size();
            }
            format!(
                "capture {}x{}: median {:.1} ms over {} grabs (target ≤ 15 ms)\n",
                size.0,
                size.1,
                median(&mut times),
                times.len()
            )
        }
        Err(e) => format!("capture: n/a ({e})\n"),
    };
    out.push_str(&capture_row);

    let mut ours = Tally::default();
    let mut per_image = String::new();
    let mut incr_times = Vec::new();
    let mut real_times = Vec::new();
    for f in &fx {
        let img = load_image(&f.png)?;
        let (w, h) = img.dimensions();
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..opts.runs {
            p.clear_cache();
            let r = p.perceive(img.as_raw(), w, h, true)?;
            times.push(r.timings.total_ms);
            last = Some(r);
        }
        let last = last.expect("runs >= 1");
        let found: Vec<Found> = last
            .targets
            .iter()
            .map(|t| Found {
                text: t.text.clone(),
                rect: t.rect,
            })
            .collect();
        let med = median(&mut times.clone());
        match &f.gt {
            Some(gt) => {
                let s = eval::score(gt, &found, |_| true, true);
                per_image.push_str(&format!(
                    "  {:<24} {:>4}x{:<4} {:>7.1} ms  recall {:>5.1}% ({}/{})  junk {:>4.1}% ({}/{})\n",
                    f.name,
                    w,
                    h,
                    med,
                    s.recall().unwrap_or(0.0) * 100.0,
                    s.found,
                    s.labels,
                    s.junk_rate().unwrap_or(0.0) * 100.0,
                    s.junk,
                    s.targets
                ));
                if opts.misses {
                    for (l, near) in eval::misses(gt, &found) {
                        per_image.push_str(&format!(
                            "      missed {:?} ({:.0}px) got {:?}\n",
                            l.text, l.font_px, near
                        ));
                    }
                    for j in eval::junk(gt, &found) {
                        per_image.push_str(&format!("      junk {:?} at {}\n", j.text, j.rect));
                    }
                }
                ours.times.extend(times);
                ours.add(gt, &found);
            }
            None => {
                per_image.push_str(&format!(
                    "  {:<24} {:>4}x{:<4} {:>7.1} ms  {} targets (real app, no ground truth)\n",
                    f.name,
                    w,
                    h,
                    med,
                    found.len()
                ));
                real_times.extend(times);
            }
        }
        if let Some(changed) = &f.changed {
            let img2 = load_image(changed)?;
            for _ in 0..opts.runs {
                p.perceive(img.as_raw(), w, h, true)?;
                let r = p.perceive(img2.as_raw(), w, h, false)?;
                incr_times.push(r.timings.total_ms);
            }
        }
    }
    let header = format!(
        "{:<26} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}\n",
        "method", "median ms", "recall", "<13px", "dark", "colour", "scale1", "scale2", "junk"
    );
    let mut table = header.clone();
    table.push_str(&ours.row("voxdesk full (cold)"));
    if opts.cli {
        for (name, psm) in [
            ("tesseract CLI (default)", "3"),
            ("tesseract CLI --psm 11", "11"),
        ] {
            let mut tally = Tally::default();
            for f in fx.iter().filter(|f| f.gt.is_some()) {
                let gt = f.gt.as_ref().expect("filtered");
                for run in 0..opts.runs.min(3) {
                    let t = Instant::now();
                    let found = tesseract_cli(&f.png, psm)?;
                    tally.times.push(t.elapsed().as_secs_f64() * 1000.0);
                    if run == 0 {
                        tally.add(gt, &found);
                    }
                }
            }
            table.push_str(&tally.row(name));
        }
    }
    out.push_str(&format!("\nfull-frame perception, {} labelled images (targets: ≤ 200 ms, ≥ 95% recall, < 3% junk)\n", fx.iter().filter(|f| f.gt.is_some()).count()));
    out.push_str(&table);
    if !incr_times.is_empty() {
        out.push_str(&format!("\nincremental perception after a one-widget change: median {:.1} ms over {} runs (target ≤ 50 ms)\n", median(&mut incr_times), incr_times.len()));
    }
    if !real_times.is_empty() {
        out.push_str(&format!(
            "real application screenshots: median {:.1} ms full (cold)\n",
            median(&mut real_times)
        ));
    }
    out.push_str("\nper image:\n");
    out.push_str(&per_image);
    Ok(out)
}

/// Run the `tesseract` command-line tool and take its lines (block/paragraph/line) as targets.
pub fn tesseract_cli(png: &Path, psm: &str) -> Result<Vec<Found>> {
    let out = Command::new("tesseract")
        .arg(png)
        .arg("stdout")
        .args(["--psm", psm, "tsv"])
        .output()
        .context("running the tesseract command (apt-get install tesseract-ocr)")?;
    anyhow::ensure!(
        out.status.success(),
        "tesseract failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tsv = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<((u32, u32, u32), Found)> = Vec::new();
    for row in tsv.lines() {
        let f: Vec<&str> = row.split('\t').collect();
        if f.len() < 12 || f[0] != "5" || f[11].trim().is_empty() {
            continue;
        }
        let num = |i: usize| f[i].parse::<i32>().unwrap_or(0);
        let key = (num(2) as u32, num(3) as u32, num(4) as u32);
        let r = crate::geometry::Rect::new(num(6), num(7), num(8), num(9));
        match lines.iter_mut().find(|(k, _)| *k == key) {
            Some((_, found)) => {
                found.text.push(' ');
                found.text.push_str(f[11].trim());
                found.rect = found.rect.union(&r);
            }
            None => lines.push((
                key,
                Found {
                    text: f[11].trim().to_string(),
                    rect: r,
                },
            )),
        }
    }
    Ok(lines.into_iter().map(|(_, f)| f).collect())
}
