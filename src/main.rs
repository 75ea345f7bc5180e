//! The `voxdesk` command line: parses arguments, runs one command, and decides in one place how errors are printed and which exit code they get.

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use cli::Exit;

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
    /// What the offline recogniser (Moonshine) hears in WAV files: the words, how sure, how long.
    Hear {
        /// One JSON object per file.
        #[arg(long)]
        json: bool,
        #[arg(required = true)]
        files: Vec<PathBuf>,
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
        /// local (the offline planner), gemini (Gemini Live), openai (OpenAI Realtime) or
        /// openai-compatible (any Chat Completions server: Ollama, vLLM, llama.cpp, OpenAI).
        #[arg(long, default_value = "local")]
        provider: String,
        /// The provider's model: `local` has one; the others need it named (here or, for the
        /// realtime ones, in the config), e.g. gemini-3.8-live, gpt-realtime, llama3.2.
        #[arg(long)]
        model: Option<String>,
        /// The endpoint's base: a realtime one's scheme, host and port, or a Chat Completions
        /// base such as http://127.0.0.1:11434/v1 (the documented path is added).
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
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
    /// Talk to voxdesk: the microphone streams to a realtime model (gemini, openai), or spoken
    /// commands are recognised offline against what is on screen (local: no key, no network);
    /// each task runs on the desk (its own recorded session), one after another.
    Listen {
        /// local (offline commands), gemini (Gemini Live), openai (OpenAI Realtime), or a text
        /// model (openai-compatible, anthropic/claude, gemini-text: offline commands, and other
        /// speech as its task).
        #[arg(long)]
        provider: String,
        /// The model, e.g. gemini-3.8-live, gpt-realtime, llama3.2 (or realtime.<provider>_model
        /// in the config for the realtime ones).
        #[arg(long)]
        model: Option<String>,
        /// The endpoint's base (scheme, host, port); the documented path is added.
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
        #[arg(long)]
        mode: Option<String>,
        /// Print only: the model's speech and voxdesk's own are not played.
        #[arg(long)]
        quiet: bool,
        /// Listen only while this key combination is held (e.g. ctrl+space).
        #[arg(long, value_name = "COMBO")]
        push_to_talk: Option<String>,
        /// Also write each of voxdesk's own sentences as a WAV into this directory.
        #[arg(long, value_name = "DIR")]
        narration_wav: Option<PathBuf>,
        #[arg(long, default_value_t = 20)]
        step_cap: usize,
    },
    /// Measure whether a realtime deployment finds the numbered boxes on a picture of this
    /// screen (one paid call, only when you run it); the verdict is cached for 30 days and decides
    /// whether observations carry pictures.
    Probe {
        #[arg(long)]
        provider: String,
        #[arg(long)]
        model: Option<String>,
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
    },
    /// The daemon: one process owns the screen's session, as an HTTP API with a live event
    /// stream and a web panel at / (token in the config dir's serve.token). `run` uses it when
    /// it runs.
    Serve {
        /// Address to listen on; anything beyond loopback is an explicit choice (warned).
        #[arg(long, default_value = "127.0.0.1:7878")]
        bind: String,
        /// Do not speak narration.
        #[arg(long)]
        quiet: bool,
        /// A confirmation not answered within this many ms is a no.
        #[arg(long, default_value_t = 60_000)]
        confirm_timeout_ms: u64,
        #[arg(long, default_value_t = 20)]
        step_cap: usize,
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
        /// Answer yes when a yes is asked (for scripts): every batch in confirm mode, a
        /// destructive one (a drag, an `rm` line) in auto mode. Refusals stay refusals.
        #[arg(long)]
        yes: bool,
        /// {"observation_id":..,"actions":[..],"expect":{..}}; `-` reads standard input.
        batch: String,
    },
    /// Benchmarks that print a table: a separate program (`voxdesk-bench`, built by `cargo
    /// build -p voxdesk-bench`), run from beside this one or from PATH; none of it ships here.
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
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

/// glibc raises its mmap threshold to the size of each large mmapped block that is freed (up to
/// 32 MiB); from then on such blocks come from the malloc arenas, which keep freed memory
/// resident. Every step allocates and frees blocks of 2-22 MB on short-lived threads (8 MB
/// frames and their copies for the PNG writers, each writer's 22 MB float buffer of the picture
/// downscale), so resident memory ratcheted up to the peak of those buffers spread over the
/// threads' arenas: measured 145 -> 160 MB over 100 steps with 33 MB live, the rest free heap.
/// A fixed threshold of 16 MiB keeps the writers' 22 MB buffers mmapped (returned to the kernel
/// when freed, on the writer threads, off the loop) while the loop's own 8 MB frames are reused
/// from the arena: a 1 MiB threshold also kept memory flat but page-faulted every frame anew,
/// ~20 ms a step (measured with `voxdesk bench loop`: 57 MB, flat, at 16 MiB).
fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is thread-safe and takes no pointers.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 16 << 20);
    }
}

fn main() -> ExitCode {
    ensure_single_threaded_omp();
    fix_mmap_threshold();
    logging();
    let cli = Cli::parse();
    match run(cli) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(e) => {
            eprintln!("voxdesk: error: {e:#}");
            ExitCode::from(Exit::Failed.code())
        }
    }
}

/// The log on stderr: what `VOXDESK_LOG` asks (default: warnings), and never a key or token at
/// any level: the crates that see them on the wire are capped below TRACE by a filter of their
/// own, which no directive of `VOXDESK_LOG` can lift (`voxdesk_core::private::log_cap`).
fn logging() {
    use tracing_subscriber::prelude::*;
    let asked = tracing_subscriber::EnvFilter::try_from_env("VOXDESK_LOG")
        .unwrap_or_else(|_| "warn,enigo=error".into());
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(voxdesk_core::private::log_cap()),
        )
        .with(asked)
        .init();
}

fn run(cli: Cli) -> Result<Exit> {
    let config = cli.config.as_deref();
    match cli.cmd {
        Cmd::Probe {
            provider,
            model,
            endpoint,
        } => cli::probe::probe(&provider, model.as_deref(), endpoint.as_deref(), config),
        Cmd::Listen {
            provider,
            model,
            endpoint,
            mode,
            quiet,
            push_to_talk,
            narration_wav,
            step_cap,
        } => {
            let args = cli::ListenArgs {
                provider,
                model,
                endpoint,
                mode,
                quiet,
                push_to_talk,
                narration_wav,
                step_cap,
            };
            // Offline commands, and with a text model named, other speech as its task.
            let text = voxdesk_agent::registry::PROVIDERS
                .iter()
                .any(|p| p.text && p.name == voxdesk_agent::registry::canonical(&args.provider));
            if args.provider == "local" || text {
                cli::listen_local::listen_local(args, config)
            } else {
                cli::listen::listen(args, config)
            }
        }
        Cmd::Run {
            provider,
            model,
            endpoint,
            mode,
            quiet,
            narration_wav,
            step_cap,
            task,
        } => cli::run::run(
            cli::run::RunArgs {
                provider,
                model,
                endpoint,
                mode,
                quiet,
                narration_wav,
                step_cap,
                task,
            },
            config,
        ),
        Cmd::Report { id, out } => cli::sessions::report(&id, out),
        Cmd::Sessions => cli::sessions::list(),
        Cmd::Serve {
            bind,
            quiet,
            confirm_timeout_ms,
            step_cap,
        } => cli::serve::serve(
            cli::serve::ServeArgs {
                bind,
                quiet,
                confirm_timeout_ms,
                step_cap,
            },
            config,
        ),
        Cmd::Config { mode } => {
            print!("{}", cli::settings(config, mode)?.render());
            Ok(Exit::Ok)
        }
        Cmd::Act {
            mode,
            json,
            yes,
            batch,
        } => cli::act::run(mode, json, yes, batch, config),
        Cmd::Hear { json, files } => {
            let models = cli::settings(config, None)?.settings.models_dir;
            cli::hear::run(json, &files, models)
        }
        Cmd::Ocr { json, image } => {
            let s = cli::settings(config, None)?.settings;
            cli::look::ocr(json, &image, &s)
        }
        Cmd::Look {
            json,
            annotate,
            picture_max,
            frame,
        } => cli::look::look(cli::look::LookArgs {
            json,
            annotate,
            picture_max,
            frame,
            perception: cli::settings(config, None)?.settings.perception,
        }),
        Cmd::Doctor => {
            let models = cli::settings(config, None)?.settings.models_dir;
            let checks = cli::doctor::run(models.as_deref(), true);
            print!("{}", cli::doctor::render(&checks));
            Ok(if cli::doctor::all_ok(&checks) {
                Exit::Ok
            } else {
                Exit::Failed
            })
        }
        Cmd::Bench { args } => cli::bench(&args),
    }
}
