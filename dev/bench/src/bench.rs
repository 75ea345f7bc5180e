//! `voxdesk bench perception`: times capture, cold full-frame and incremental perception, scores recall (overall and by kind of text) and junk on ground-truth fixtures, and runs the `tesseract` CLI on the same images for comparison.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use voxdesk_eval::{self as eval, Found, GroundTruth, Score};
use voxdesk_perception::{engine, Perceiver};
use voxdesk_screen::frame::load_image;

pub struct BenchOptions {
    pub fixtures: PathBuf,
    pub runs: usize,
    pub cli: bool,
    pub misses: bool,
}

/// The product binary the benchmarks drive: the `voxdesk` beside this program (both built into
/// the same target dir), else the one on PATH. (Not this program itself: since the benchmarks
/// left the product binary, `current_exe` is `voxdesk-bench`.)
pub fn voxdesk_exe() -> std::path::PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|me| me.parent().map(|d| d.join("voxdesk")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| std::path::PathBuf::from("voxdesk"))
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
    /// Recall by the ground truth's kind of text (terminal, code, shortcut, badge, ...).
    kinds: std::collections::BTreeMap<String, Score>,
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
        let kinds: std::collections::BTreeSet<&str> = gt.labels.iter().map(|l| l.kind()).collect();
        for k in kinds {
            self.kinds
                .entry(k.to_string())
                .or_default()
                .add(eval::score(gt, found, |l| l.kind() == k, false));
        }
        if gt.scale < 1.5 {
            self.s1.add(eval::score(gt, found, |_| true, false));
        } else {
            self.s2.add(eval::score(gt, found, |_| true, false));
        }
    }
    /// One row per kind of text: labels, found, recall; then overall recall and precision.
    fn kind_table(&self) -> String {
        let mut t = format!(
            "{:<14} {:>7} {:>7} {:>8}\n",
            "kind", "labels", "found", "recall"
        );
        for (k, s) in self.kinds.iter().filter(|(k, _)| !eval::optional(k)) {
            t.push_str(&format!(
                "{:<14} {:>7} {:>7} {:>7.1}%\n",
                k,
                s.labels,
                s.found,
                s.recall().unwrap_or(0.0) * 100.0
            ));
        }
        t.push_str(&format!(
            "{:<14} {:>7} {:>7} {:>7.1}%\nprecision {:.1}% ({} of {} targets on no label)\n",
            "all",
            self.all.labels,
            self.all.found,
            self.all.recall().unwrap_or(0.0) * 100.0,
            (1.0 - self.all.junk_rate().unwrap_or(0.0)) * 100.0,
            self.all.junk,
            self.all.targets
        ));
        t
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
    let capture_row = match voxdesk_screen::capture::Capturer::new() {
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
    // The first fixtures (files, settings) alone, to compare with figures measured before the
    // widened set existed.
    let mut first = Tally::default();
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
                            "      missed {} {:?} ({:.0}px) got {:?}\n",
                            l.kind(),
                            l.text,
                            l.font_px,
                            near
                        ));
                    }
                    for j in eval::junk(gt, &found) {
                        per_image.push_str(&format!("      junk {:?} at {}\n", j.text, j.rect));
                    }
                }
                if f.name.starts_with("files-") || f.name.starts_with("settings-") {
                    first.times.extend(times.iter().copied());
                    first.add(gt, &found);
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
    table.push_str(&first.row("  files+settings only"));
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
    out.push_str("\nrecall by kind of text (targets: ≥ 95% each, precision ≥ 97%)\n");
    out.push_str(&ours.kind_table());
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
        let r = voxdesk_core::geometry::Rect::new(num(6), num(7), num(8), num(9));
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

/// `voxdesk bench act`: emergency-stop latency (also while the calling thread is blocked in OCR),
/// rail checking per batch, dispatch overhead per action. Needs a display; it presses only
/// Shift and the stop combination on whatever has focus, so run it on a virtual desktop.
pub fn act(runs: usize) -> Result<String> {
    use std::sync::Arc;
    use std::time::Duration;
    use voxdesk_core::action::parse_batch;
    use voxdesk_core::config::Settings;
    use voxdesk_core::geometry::{Mapping, Rect};
    use voxdesk_input::actuator::Actuator;
    use voxdesk_input::stop::{StopLatch, StopWatcher};
    use voxdesk_perception::Target;
    use voxdesk_safety::rails::{self, Decision, Screen};

    let mut out = String::new();
    let settings = Settings::default();
    let mut rails_cfg = settings.rails.clone();
    rails_cfg.allow_apps = vec!["bench".into()];
    let targets: Vec<Target> = (0..150)
        .map(|i| Target {
            id: i + 1,
            text: format!("Label {i}"),
            rect: Rect::new((i as i32 % 10) * 180, (i as i32 / 10) * 60, 80, 16),
            conf: 0.9,
            new: false,
            ax: None,
        })
        .collect();
    let mapping = Mapping::new((1280, 720), (1920, 1080), (0, 0), (1920, 1080))?;
    let keymap = voxdesk_core::keys::Keymap::us();
    let screen = Screen {
        observation_id: "o",
        latest_id: "o",
        targets: &targets,
        mapping,
        app: Some("bench"),
        focus: None,
        keymap: &keymap,
        line: None,
        window: None,
        popups: &[],
        dialogs: &[],
        terminal: false,
    };
    let batch = parse_batch(
        r#"{"actions":[{"action":"click","target":12},{"action":"type","text":"hello world"},{"action":"key","combo":"ctrl+s"},{"action":"scroll","direction":"down","amount":3,"target":40},{"action":"double_click","x":400,"y":300},{"action":"right_click","target":99},{"action":"wait","ms":10},{"action":"key","combo":"shift+tab"},{"action":"type","text":"notes.txt"},{"action":"click","target":150}]}"#,
    )?;
    // Rails: pure, so time many batches.
    let mut times = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        let c = rails::check(&batch, &screen, &rails_cfg, &settings.stop.combo);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(c.is_ok(), "bench batch refused: {:?}", c.err());
    }
    out.push_str(&format!(
        "rail check, 10 actions over 150 targets: median {:.4} ms, p95 {:.4} ms (target ≤ 1 ms)\n",
        median(&mut times.clone()),
        percentile(&mut times, 95.0)
    ));
    // The same in a terminal, each key judged on the command line it builds, 4096 characters
    // typed at the cap.
    let mut term_cfg = rails_cfg.clone();
    term_cfg.allow_apps = vec!["XTerm".into()];
    let line = voxdesk_safety::terminal::Line::default();
    let term = Screen {
        app: Some("XTerm"),
        line: Some(&line),
        ..screen
    };
    let long = "a".repeat(rails::MAX_TYPE_CHARS - 40);
    let term_batch = parse_batch(&format!(
        r#"{{"actions":[{{"action":"type","text":"ls -l notes"}},{{"action":"key","combo":"backspace"}},{{"action":"key","combo":"enter"}},{{"action":"type","text":"echo {long}"}},{{"action":"key","combo":"ctrl+u"}},{{"action":"type","text":"rm -rf build"}},{{"action":"key","combo":"ctrl+c"}},{{"action":"type","text":"cat /tmp/x"}},{{"action":"key","combo":"enter"}},{{"action":"wait","ms":10}}]}}"#
    ))?;
    let mut times = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        let c = rails::check(&term_batch, &term, &term_cfg, &settings.stop.combo);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(c.is_ok(), "terminal bench batch refused: {:?}", c.err());
    }
    out.push_str(&format!(
        "rail check, 10 actions into a terminal ({} keys) over 150 targets: median {:.4} ms, p95 {:.4} ms (target ≤ 1 ms)\n",
        4096 - 40 + 60,
        median(&mut times.clone()),
        percentile(&mut times, 95.0)
    ));

    // Dispatch overhead: ten Shift taps with no rate limit; overhead = wall time per action.
    let latch = Arc::new(StopLatch::default());
    let actuator = Actuator::start(latch.clone()).map_err(|e| anyhow::anyhow!(e))?;
    let taps = parse_batch(&format!(
        r#"{{"actions":[{}]}}"#,
        [r#"{"action":"key","combo":"shift"}"#; 10].join(",")
    ))?;
    let shift_batch = |b: &voxdesk_core::action::Batch| -> Result<rails::Approved> {
        let c = rails::check(b, &screen, &rails_cfg, &settings.stop.combo)
            .map_err(|r| anyhow::anyhow!("{r}"))?;
        match rails::approve(c, voxdesk_core::config::Mode::Auto, &rails_cfg, None) {
            Decision::Run(a) => Ok(a),
            other => anyhow::bail!("not approved: {other:?}"),
        }
    };
    let mut per_action = Vec::new();
    for _ in 0..runs.max(5) {
        let t = Instant::now();
        let n = actuator
            .run(shift_batch(&taps)?, Duration::ZERO)
            .iter()
            .count();
        per_action.push(t.elapsed().as_secs_f64() * 1000.0 / n.max(1) as f64);
    }
    out.push_str(&format!("dispatch overhead per action (key shift, no rate limit): median {:.2} ms (target ≤ 5 ms)\n", median(&mut per_action)));
    drop(actuator);

    // Emergency stop: hold the combination with XTEST (xdotool) during a long wait, with the
    // calling thread blocked in OCR the whole time.
    let hold = Duration::from_millis(settings.stop.hold_ms);
    let mut lat = Vec::new();
    let img = voxdesk_screen::frame::load_image(std::path::Path::new(
        "tests/fixtures/ui/files-light-1x.png",
    ))
    .ok();
    let mut perceiver = Perceiver::new(1)?;
    for _ in 0..runs.max(10) {
        let latch = Arc::new(StopLatch::default());
        let _w = StopWatcher::start(&settings.stop.combo, hold, latch.clone())
            .map_err(|e| anyhow::anyhow!(e))?;
        let actuator = Actuator::start(latch.clone()).map_err(|e| anyhow::anyhow!(e))?;
        let rx = actuator.run(
            shift_batch(&parse_batch(
                r#"{"actions":[{"action":"wait","ms":20000},{"action":"key","combo":"shift"}]}"#,
            )?)?,
            Duration::ZERO,
        );
        std::thread::sleep(Duration::from_millis(50));
        let down = Instant::now();
        let st = Command::new("xdotool")
            .args(["keydown", "ctrl+alt+Escape"])
            .status()
            .context("xdotool (apt-get install xdotool)")?;
        anyhow::ensure!(st.success(), "xdotool keydown failed");
        // Block this thread in real work while the stop happens.
        if let Some(img) = &img {
            let t = Instant::now();
            while t.elapsed() < hold + Duration::from_millis(200) {
                perceiver.clear_cache();
                let _ = perceiver.perceive(img.as_raw(), img.width(), img.height(), true);
            }
        }
        let _ = Command::new("xdotool")
            .args(["keyup", "ctrl+alt+Escape"])
            .status();
        let reports: Vec<_> = rx.iter().collect();
        anyhow::ensure!(
            latch.is_stopped() && reports.len() == 2,
            "the stop did not trigger"
        );
        let released = latch.released_at().context("nothing released")?;
        // From the moment the hold threshold was reached (key down + hold) to everything released.
        lat.push((released.saturating_duration_since(down + hold)).as_secs_f64() * 1000.0);
    }
    out.push_str(&format!(
        "emergency stop, threshold reached → released and queue empty, main thread blocked in OCR: median {:.1} ms, p95 {:.1} ms over {} stops (target p95 ≤ 50 ms)\n",
        median(&mut lat.clone()),
        percentile(&mut lat, 95.0),
        lat.len()
    ));
    Ok(out)
}

pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[i.min(v.len() - 1)]
}

/// `voxdesk bench loop`: on a virtual desktop, starts xcalc and measures the loop: overhead per
/// step (everything but planning), a 4-step task end to end, and resident memory over 100 steps.
pub fn loop_(runs: usize) -> Result<String> {
    let mut out = String::new();
    let mut calc = Command::new("xcalc")
        .args(["-geometry", "300x400+400+200"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting xcalc (apt-get install x11-apps)")?;
    let result = loop_on_xcalc(runs);
    let _ = calc.kill();
    let _ = calc.wait();
    out.push_str(&result?);
    Ok(out)
}

/// One task through a fresh desk, silent (no console, no voice).
struct BenchRun {
    end: voxdesk_agent::Ending,
    steps: Vec<voxdesk_record::session::StepRecord>,
    /// Starting the desk: GUI lock, stop watcher, actuator, capturer, OCR engines, record.
    start_ms: f64,
    /// The task itself, from the first observation to the session's end.
    task_ms: f64,
}

fn bench_task(
    settings: &voxdesk_core::config::Settings,
    root: &Path,
    task: &str,
    step_cap: usize,
) -> Result<BenchRun> {
    use voxdesk_agent::{drive, registry, Limits};
    use voxdesk_desk::{confirm::Nobody, Desk, RecordSpec};
    let mut driver = registry::driver("local", None, task)?;
    let spec = RecordSpec {
        root: root.to_path_buf(),
        task: task.into(),
        provider: driver.provider().into(),
        model: driver.model().into(),
        decomposition: driver.decomposition(),
        prompt_version: voxdesk_desk::PROMPT_VERSION.into(),
    };
    let latch = std::sync::Arc::new(voxdesk_input::stop::StopLatch::default());
    let t = Instant::now();
    let mut desk = Desk::new(settings, Some(spec), Box::new(Nobody), latch)?;
    let start_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let end = drive(
        driver.as_mut(),
        &mut desk,
        Limits {
            step_cap,
            no_progress: 3,
        },
    );
    let task_ms = t.elapsed().as_secs_f64() * 1000.0;
    let steps = desk.record().map(|r| r.steps.clone()).unwrap_or_default();
    Ok(BenchRun {
        end,
        steps,
        start_ms,
        task_ms,
    })
}

fn loop_on_xcalc(runs: usize) -> Result<String> {
    use voxdesk_core::config::{Mode, Settings};
    use voxdesk_record::session::Status;
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let _ = Command::new("xdotool")
        .args(["search", "--class", "XCalc", "windowactivate", "--sync"])
        .status();
    let mut settings = Settings::default();
    settings.rails.mode = Mode::Auto;
    settings.rails.allow_apps = vec!["XCalc".into()];
    let root = std::env::temp_dir().join(format!("voxdesk-bench-{}", std::process::id()));
    let task = "click 7, click +, click 5, click =";
    let mut e2e = Vec::new();
    let mut starts = Vec::new();
    let mut per_step = Vec::new();
    for _ in 0..runs.max(3) {
        let r = bench_task(&settings, &root, task, 20)?;
        e2e.push(r.task_ms);
        starts.push(r.start_ms);
        anyhow::ensure!(
            r.end.status == Status::Done,
            "bench task did not finish: {}",
            r.end.summary
        );
        for s in &r.steps {
            let p = &s.timings_ms;
            per_step.push(p.capture + p.ocr + p.act + p.settle + p.verify);
        }
    }
    let mut s = format!(
        "loop overhead per step (observe + rails + act + settle + verify, planner excluded): median {:.0} ms over {} steps (target ≤ 400 ms)\n4-step xcalc task end to end, offline planner (first observation to session end): median {:.0} ms over {} runs (target ≤ 3000 ms)\nstarting the desk (GUI lock, emergency stop, actuator, capture, OCR engines, record): median {:.0} ms\n",
        median(&mut per_step.clone()),
        per_step.len(),
        median(&mut e2e.clone()),
        e2e.len(),
        median(&mut starts)
    );
    // Memory over 100 steps: two sessions of 50 in one process; growth shows as the second
    // delta. ("DRG" cycles the DEG/RAD/GRAD indicator: every step changes the screen, and the
    // label stays unambiguous.)
    let half = vec!["click DRG"; 50].join(", ");
    let start = rss_mb();
    let r1 = bench_task(&settings, &root, &half, 60)?.end;
    let mid = rss_mb();
    let r2 = bench_task(&settings, &root, &half, 60)?.end;
    let end = rss_mb();
    anyhow::ensure!(
        r1.status == Status::Done && r2.status == Status::Done,
        "memory run did not finish: {} / {}",
        r1.summary,
        r2.summary
    );
    s.push_str(&format!(
        "resident memory over a 100-step run: {start:.0} MB at start, {mid:.0} MB after 50 steps, {end:.0} MB after 100 (growth over the second 50: {:+.1} MB) (target ≤ 200 MB, no growth trend)\n",
        end - mid
    ));
    let _ = std::fs::remove_dir_all(&root);
    // Narration must never hold the loop up: time `say` itself with the voice on (rendering
    // and playback happen on the voice thread).
    let mut voice = voxdesk_voice::narrate::Narrator::new(true, None, None);
    let mut says = Vec::new();
    for i in 0..20 {
        let t = Instant::now();
        voice.say(&format!("Clicking {i}."));
        says.push(t.elapsed().as_secs_f64() * 1e6);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    voice.cut();
    drop(voice);
    s.push_str(&format!(
        "narration: say() returns in {:.0} µs median over {} sentences (voice on; rendering and playback are on the voice thread)\n",
        median(&mut says),
        says.len()
    ));
    Ok(s)
}

pub fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}
