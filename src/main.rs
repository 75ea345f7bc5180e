//! The `voxdesk` command line: parses arguments, runs one command, and decides in one place how errors are printed and which exit code they get.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use voxdesk::{bench, capture, doctor, frame, observation, perception, picture};

#[derive(Parser)]
#[command(
    name = "voxdesk",
    version,
    about = "A voice-driven desktop assistant that sees the screen as numbered targets."
)]
struct Cli {
    /// Settings file (default: $XDG_CONFIG_HOME/voxdesk/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Targets of a PNG or JPEG file.
    Ocr {
        /// Print exactly one JSON object.
        #[arg(long)]
        json: bool,
        image: PathBuf,
    },
    /// One observation of the live screen.
    Look {
        #[arg(long)]
        json: bool,
        /// Write the picture the model sees (downscaled, numbered boxes) to this PNG/JPEG file.
        #[arg(long, value_name = "OUT.png")]
        annotate: Option<PathBuf>,
        /// Cap for the model picture, WIDTHxHEIGHT (it is downscaled to fit, never upscaled).
        #[arg(long, value_name = "WxH", default_value = "1280x720", value_parser = parse_size)]
        picture_max: (u32, u32),
        /// Also write the raw capture (full resolution, PNG) to this file.
        #[arg(long, value_name = "OUT.png")]
        frame: Option<PathBuf>,
    },
    /// Preflight: what is missing and how to fix it, one cause per line.
    Doctor,
    /// Run a task with the loop: observe, plan, act, verify, until done or stopped.
    Run {
        /// Only `local` (the offline planner) exists so far.
        #[arg(long, default_value = "local")]
        provider: String,
        /// The provider's model; `local` has one, `offline-planner`.
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        mode: Option<String>,
        /// Print narration only, do not speak.
        #[arg(long)]
        quiet: bool,
        /// Also write each utterance as a WAV into this directory.
        #[arg(long, value_name = "DIR")]
        narration_wav: Option<PathBuf>,
        #[arg(long, default_value_t = 20)]
        step_cap: usize,
        task: String,
    },
    /// List recorded sessions.
    Sessions,
    /// Write a self-contained HTML report of a session (an id from `voxdesk sessions`, or a path).
    Report {
        id: String,
        /// Output file (default: report.html in the session's directory).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// The effective settings and where each came from (default, file, env, flag).
    Config {
        #[arg(long)]
        mode: Option<String>,
    },
    /// Run a batch of actions (the `act` tool's JSON) on the live screen, behind the rails.
    /// Exit 0: everything ran (or was recorded in observe mode); 3: refused, nothing ran;
    /// 2: unusable input; 4: stopped by the emergency stop; 1: an action failed.
    Act {
        /// observe (touch nothing), confirm (ask first), auto.
        #[arg(long)]
        mode: Option<String>,
        #[arg(long)]
        json: bool,
        /// Answer yes to the confirmation (for scripts; destructive actions still need
        /// `allow_destructive` in auto mode or confirm mode).
        #[arg(long)]
        yes: bool,
        /// {"observation_id":..,"actions":[..],"expect":{..}}; `-` reads standard input.
        batch: String,
    },
    /// Benchmarks that print a table.
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Capture, full and incremental perception, recall and junk on labelled fixtures, against the tesseract CLI.
    Perception {
        #[arg(long, default_value = "tests/fixtures/ui")]
        fixtures: PathBuf,
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Skip running the tesseract command-line tool for comparison.
        #[arg(long)]
        no_cli: bool,
        /// List every missed label.
        #[arg(long)]
        misses: bool,
    },
    /// The loop on xcalc: overhead per step, a 4-step task end to end, memory over 100 steps
    /// (run it on a virtual desktop: it starts xcalc and clicks it).
    Loop {
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Emergency-stop latency, rail checking and dispatch overhead (run it on a virtual desktop:
    /// it presses Shift and the stop combination).
    Act {
        #[arg(long, default_value_t = 20)]
        runs: usize,
    },
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WIDTHxHEIGHT, got {s:?}"))?;
    let w: u32 = w
        .trim()
        .parse()
        .map_err(|_| format!("bad width in {s:?}"))?;
    let h: u32 = h
        .trim()
        .parse()
        .map_err(|_| format!("bad height in {s:?}"))?;
    if !(64..=8192).contains(&w) || !(64..=8192).contains(&h) {
        return Err(format!("{s}: each side must be 64..8192"));
    }
    Ok((w, h))
}

/// Tesseract's OpenMP runtime reads OMP_THREAD_LIMIT once, when the library loads — before
/// `main` runs — so it cannot be set from inside the process. Without it each engine spawns a
/// thread per core and the two workers fight (measured: about 2x slower on 2 cores). Re-exec
/// once with the variable set.
fn ensure_single_threaded_omp() {
    if std::env::var_os("OMP_THREAD_LIMIT").is_some() {
        return;
    }
    use std::os::unix::process::CommandExt;
    if let Ok(exe) = std::env::current_exe() {
        let err = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env("OMP_THREAD_LIMIT", "1")
            .exec();
        // exec only returns on failure; carry on, slower.
        tracing::warn!("could not re-exec with OMP_THREAD_LIMIT=1: {err}");
    }
}

fn main() -> ExitCode {
    ensure_single_threaded_omp();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("VOXDESK_LOG")
                .unwrap_or_else(|_| "warn,enigo=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("voxdesk: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn settings(
    config: Option<&std::path::Path>,
    mode: Option<String>,
) -> Result<voxdesk::config::Loaded> {
    let flags: Vec<(&'static str, String)> = mode.into_iter().map(|m| ("rails.mode", m)).collect();
    Ok(voxdesk::config::load(
        config,
        |k| std::env::var(k).ok(),
        &flags,
    )?)
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.cmd {
        Cmd::Run {
            provider,
            model,
            mode,
            quiet,
            narration_wav,
            step_cap,
            task,
        } => {
            // Provider and model are named explicitly; there is no silent fallback to another.
            anyhow::ensure!(provider == "local", "provider {provider:?} is not available yet; use --provider local (the offline planner)");
            anyhow::ensure!(
                model.as_deref().is_none_or(|m| m == "offline-planner"),
                "provider local has one model, offline-planner (got {:?})",
                model.unwrap_or_default()
            );
            // A task the planner cannot read is refused before anything starts or is recorded.
            let mut planner = match voxdesk::planner::local::LocalPlanner::new(&task) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("voxdesk: error: the task: {e}");
                    return Ok(ExitCode::from(voxdesk::act::EXIT_BAD_INPUT));
                }
            };
            let loaded = settings(cli.config.as_deref(), mode)?;
            let opts = voxdesk::agent::RunOptions {
                task: task.clone(),
                step_cap,
                quiet,
                wav_dir: narration_wav,
                sessions_root: voxdesk::session::sessions_dir(),
            };
            let display = std::env::var("DISPLAY").unwrap_or_default();
            let _lock = if loaded.settings.rails.mode == voxdesk::config::Mode::Observe {
                None
            } else {
                Some(voxdesk::lock::GuiLock::acquire(
                    &display,
                    loaded.settings.lock_lease_ms,
                )?)
            };
            let mut agent = voxdesk::agent::Agent::new(&loaded.settings, &opts)?;
            let r = agent.run_with(&mut planner, &task, step_cap)?;
            println!("session: {}", r.session_dir.display());
            Ok(ExitCode::from(match r.status {
                voxdesk::session::Status::Done => 0,
                voxdesk::session::Status::Stopped => voxdesk::act::EXIT_STOPPED,
                _ => 1,
            }))
        }
        Cmd::Report { id, out } => {
            let dir = if std::path::Path::new(&id).join("session.json").is_file() {
                PathBuf::from(&id)
            } else {
                voxdesk::session::sessions_dir().join(&id)
            };
            anyhow::ensure!(
                dir.join("session.json").is_file(),
                "no session {id:?}: not a session directory, nor an id in {} (see `voxdesk sessions`)",
                voxdesk::session::sessions_dir().display()
            );
            let record = voxdesk::session::load(&dir)?;
            let out = out.unwrap_or_else(|| dir.join("report.html"));
            std::fs::write(&out, voxdesk::report::render(&dir, &record))
                .with_context(|| format!("writing {}", out.display()))?;
            println!("{}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sessions => {
            let dir = voxdesk::session::sessions_dir();
            let all = voxdesk::session::list(&dir);
            if all.is_empty() {
                eprintln!("no sessions yet in {}", dir.display());
            }
            for r in all {
                match r {
                    Ok(s) => println!(
                        "{}  {:<8} steps {:>3}  verified {}  {:?}",
                        s.id,
                        format!("{:?}", s.status).to_lowercase(),
                        s.steps.len(),
                        s.verified_rate()
                            .map(|v| format!("{:.0}%", v * 100.0))
                            .unwrap_or_else(|| "n/a".into()),
                        s.task
                    ),
                    Err(e) => println!("(unreadable) {e}"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Config { mode } => {
            print!("{}", settings(cli.config.as_deref(), mode)?.render());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Act {
            mode,
            json,
            yes,
            batch,
        } => {
            let loaded = settings(cli.config.as_deref(), mode)?;
            let text = if batch == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .context("reading the batch from standard input")?;
                s
            } else {
                batch
            };
            let batch = match voxdesk::action::parse_batch(&text) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("voxdesk: error: unusable batch: {e}");
                    return Ok(ExitCode::from(voxdesk::act::EXIT_BAD_INPUT));
                }
            };
            let report = match voxdesk::act::run(batch, &loaded.settings, yes) {
                Ok(r) => r,
                Err(e) if e.downcast_ref::<voxdesk::act::RefusedByLock>().is_some() => {
                    eprintln!("voxdesk: {e}");
                    return Ok(ExitCode::from(voxdesk::act::EXIT_REFUSED));
                }
                Err(e) => return Err(e),
            };
            if json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print!("{}", report.render());
            }
            Ok(ExitCode::from(report.exit_code()))
        }
        Cmd::Ocr { json, image } => {
            let t = Instant::now();
            let img = frame::load_image(&image)?;
            let load_ms = t.elapsed().as_secs_f64() * 1000.0;
            let (w, h) = img.dimensions();
            let mut p = perception::Perceiver::new(perception::engine::default_workers())?;
            let r = p.perceive(img.as_raw(), w, h, true)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&observation::ocr_dto(&r, &[("load", load_ms)]))?
                );
            } else {
                print!("{}", observation::render_targets(&r.targets));
                eprintln!(
                    "{} targets in {w}x{h}, perceived in {:.0} ms",
                    r.targets.len(),
                    r.timings.total_ms
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Look {
            json,
            annotate,
            picture_max,
            frame: frame_out,
        } => {
            let t = Instant::now();
            let f = capture::capture_primary()?;
            let capture_ms = t.elapsed().as_secs_f64() * 1000.0;
            let app = capture::focused_window().unwrap_or_else(|e| {
                tracing::warn!("focused window unknown: {e}");
                None
            });
            let (w, h) = f.size();
            let mut p = perception::Perceiver::new(perception::engine::default_workers())?;
            let r = p.perceive(f.image.as_raw(), w, h, true)?;
            if let Some(out) = &frame_out {
                f.image
                    .save_with_format(out, image::ImageFormat::Png)
                    .with_context(|| format!("writing {}", out.display()))?;
            }
            if let Some(out) = &annotate {
                let pic = picture::model_picture(
                    &f,
                    &r.targets,
                    picture::PictureConfig {
                        max_w: picture_max.0,
                        max_h: picture_max.1,
                        ..Default::default()
                    },
                )?;
                let is_jpeg = out.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                    e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg")
                });
                if is_jpeg {
                    std::fs::write(out, &pic.jpeg)
                        .with_context(|| format!("writing {}", out.display()))?;
                } else {
                    pic.image
                        .save_with_format(out, image::ImageFormat::Png)
                        .with_context(|| format!("writing {}", out.display()))?;
                }
            }
            let observation_id = format!(
                "obs-{:x}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or(0)
            );
            if json {
                let dto = observation::LookDto {
                    observation_id,
                    app: app.as_ref().map(|a| a.app.clone()),
                    window_title: app.as_ref().map(|a| a.title.clone()),
                    scale: f.scale(),
                    monitor: observation::MonitorDto {
                        name: f.monitor.name.clone(),
                        x: f.monitor.origin.0,
                        y: f.monitor.origin.1,
                        width: f.monitor.logical.0,
                        height: f.monitor.logical.1,
                    },
                    ocr: observation::ocr_dto(&r, &[("capture", capture_ms)]),
                };
                println!("{}", serde_json::to_string(&dto)?);
            } else {
                println!(
                    "observation {observation_id}: focused app {}",
                    app.as_ref().map(|a| a.app.as_str()).unwrap_or("(none)")
                );
                print!("{}", observation::render_targets(&r.targets));
                eprintln!(
                    "{} targets; capture {capture_ms:.0} ms, perception {:.0} ms",
                    r.targets.len(),
                    r.timings.total_ms
                );
                if let Some(out) = annotate {
                    eprintln!("annotated picture: {}", out.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Doctor => {
            let checks = doctor::run();
            print!("{}", doctor::render(&checks));
            Ok(if doctor::all_ok(&checks) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Cmd::Bench {
            what: BenchCmd::Loop { runs },
        } => {
            print!("{}", bench::loop_(runs)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            what: BenchCmd::Act { runs },
        } => {
            print!("{}", bench::act(runs)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench {
            what:
                BenchCmd::Perception {
                    fixtures,
                    runs,
                    no_cli,
                    misses,
                },
        } => {
            let table = bench::perception(&bench::BenchOptions {
                fixtures,
                runs: runs.max(1),
                cli: !no_cli,
                misses,
            })?;
            print!("{table}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
