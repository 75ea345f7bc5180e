//! `voxdesk-bench`: the benchmarks behind `voxdesk bench …` (a dev tool, never part of the product binary): each prints a table of medians.

mod bench;
mod bench_a11y;
mod bench_apps;
mod bench_ears;
mod bench_eyes;
mod bench_listen;
mod bench_script;
mod bench_serve;
mod bench_tasks;
mod bench_text;
mod bench_voice;
mod loopback;
mod monitor;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "voxdesk bench", about = "Benchmarks that print a table.")]
struct Cli {
    #[command(subcommand)]
    what: BenchCmd,
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
    /// The readers side by side on the generated corpus (train, dev, test split by template)
    /// and the project's fixtures: recall per kind, precision, time, memory.
    Eyes {
        /// The rendered corpus (`cargo xtask corpus`); none: the fixtures alone.
        #[arg(long)]
        corpus: Option<PathBuf>,
        #[arg(long, default_value = "tests/fixtures/corpus/splits.json")]
        splits: PathBuf,
        #[arg(long, default_value = "tests/fixtures/ui")]
        fixtures: PathBuf,
        /// Leave the project's fixtures out.
        #[arg(long)]
        no_fixtures: bool,
        /// Readers, comma separated: tesseract, learned.
        #[arg(long, default_value = "tesseract,learned")]
        readers: String,
        /// Only these splits, comma separated (train, dev, test, fixtures).
        #[arg(long, default_value = "")]
        only: String,
        /// Every n-th template of each part, with all its images (light and dark, 1x and 2x).
        #[arg(long, default_value_t = 1)]
        stride: usize,
        /// Write every miss and junk target to target/bench-eyes-misses.tsv.
        #[arg(long)]
        misses: bool,
        /// Real applications captured with truth from their accessibility tree (`voxdesk
        /// bench apps`), reported as their own part ("apps": recall only).
        #[arg(long)]
        apps: Option<PathBuf>,
    },
    /// Capture the task suite's applications on the virtual desktop with truth from their
    /// accessibility tree, for `eyes --apps` (run it with `cargo xtask rig -- …`).
    Apps {
        #[arg(long, default_value = "target/corpus-apps")]
        out: PathBuf,
    },
    /// The loop on xcalc: overhead per step, a 4-step task end to end, memory over 100 steps
    /// (run it on a virtual desktop: it starts xcalc and clicks it).
    Loop {
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// A realtime session against a loopback Gemini Live server, on the virtual desktop and
    /// sound card: mic → socket, tool call → response, interrupted → silent, memory over a
    /// long session with two resumptions (run it with `cargo xtask rig --`).
    Voice {
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// How long the simulated session lasts (600 for the ten minutes).
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// realtime (the loopback model server), local (barge-in, echo, spoken commands,
        /// stop, the listener's CPU, accuracy), sound (local without the accuracy), accuracy
        /// (spoken commands only, no sound card) or all.
        #[arg(long, default_value = "all")]
        part: String,
    },
    /// The daemon under load on loopback (run it on a virtual desktop: it starts xcalc and a
    /// daemon of its own): event-stream clients and health requests while sessions run.
    Serve {
        #[arg(long, default_value_t = 50)]
        clients: usize,
        /// Health requests per second.
        #[arg(long, default_value_t = 200)]
        rate: u32,
        #[arg(long, default_value_t = 30)]
        seconds: u64,
    },
    /// Emergency-stop latency, rail checking and dispatch overhead (run it on a virtual desktop:
    /// it presses Shift and the stop combination).
    Act {
        #[arg(long, default_value_t = 20)]
        runs: usize,
    },
    /// A text model's driver against an instant loopback Chat Completions server on xcalc:
    /// voxdesk's time per step apart from the model's, request size, end of speech → request
    /// sent (run it on a virtual desktop: `cargo xtask rig -- …`).
    Text {
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// The task suite on real applications (xterm, mousepad, a Chromium form, pcmanfm, a refused
    /// `rm -rf`), judged from outside (run it on a virtual desktop: `cargo xtask rig -- …`).
    Tasks {
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Only this task, or a group: wide, aside, all.
        #[arg(long)]
        only: Option<String>,
        /// Who drives: `local` (`voxdesk run --provider local`) or `script` (scripted tool
        /// calls, `voxdesk look` then `voxdesk act` by look's ids, the way a model writes them).
        #[arg(long, default_value = "local")]
        driver: String,
    },
}

/// The settings' voice knobs (`VOXDESK_DENOISE=0`, `VOXDESK_REJECT_BELOW`, …), read once.
pub fn voice_knobs() -> &'static voxdesk_core::config::Voice {
    static KNOBS: std::sync::OnceLock<voxdesk_core::config::Voice> = std::sync::OnceLock::new();
    KNOBS.get_or_init(|| {
        voxdesk_core::config::load(None, |k| std::env::var(k).ok(), &[])
            .map(|l| l.settings.voice)
            .unwrap_or_else(|e| {
                eprintln!("voxdesk bench: settings: {e} (using the defaults)");
                voxdesk_core::config::Settings::default().voice
            })
    })
}

fn main() -> ExitCode {
    // What `VOXDESK_LOG` asks, on stderr (default: warnings), as in voxdesk itself; the wire
    // crates capped below TRACE in the same way.
    use tracing_subscriber::prelude::*;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(voxdesk_core::private::log_cap()),
        )
        .with(
            tracing_subscriber::EnvFilter::try_from_env("VOXDESK_LOG")
                .unwrap_or_else(|_| "warn,enigo=error".into()),
        )
        .init();
    let cli = Cli::parse();
    match run(cli.what) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("voxdesk bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(what: BenchCmd) -> Result<()> {
    print!(
        "{}",
        match what {
            BenchCmd::Loop { runs } => bench::loop_(runs)?,
            BenchCmd::Voice {
                runs,
                seconds,
                part,
            } => bench_voice::voice(runs, seconds, &part)?,
            BenchCmd::Act { runs } => bench::act(runs)?,
            BenchCmd::Text { runs } => bench_text::text(runs)?,
            BenchCmd::Serve {
                clients,
                rate,
                seconds,
            } => bench_serve::serve(clients, rate, seconds)?,
            BenchCmd::Tasks { runs, only, driver } => {
                bench_tasks::tasks(runs, only.as_deref(), &driver)?
            }
            BenchCmd::Eyes {
                corpus,
                splits,
                fixtures,
                no_fixtures,
                readers,
                only,
                stride,
                misses,
                apps,
            } => {
                let list = |s: &str| -> Vec<String> {
                    s.split(',')
                        .map(str::trim)
                        .filter(|x| !x.is_empty())
                        .map(String::from)
                        .collect()
                };
                bench_eyes::eyes(&bench_eyes::EyesOptions {
                    corpus,
                    splits,
                    fixtures: (!no_fixtures).then_some(fixtures),
                    readers: list(&readers),
                    only: list(&only),
                    stride,
                    misses,
                    apps,
                })?
            }
            BenchCmd::Apps { out } => bench_apps::apps(&out)?,
            BenchCmd::Perception {
                fixtures,
                runs,
                no_cli,
                misses,
            } => {
                let mut out = bench::perception(&bench::BenchOptions {
                    fixtures,
                    runs: runs.max(1),
                    cli: !no_cli,
                    misses,
                })?;
                // The accessibility part needs a desktop with its bus (the rig).
                if std::env::var("DISPLAY").is_ok_and(|d| !d.is_empty()) {
                    out.push_str(&bench_a11y::a11y(runs.max(5))?);
                }
                out
            }
        }
    );
    Ok(())
}
