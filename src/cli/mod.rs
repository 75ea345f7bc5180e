//! The command line's shared parts: exit outcomes, loading settings, the console printer, the terminal's yes, and signals. One file per command beside this one.

pub mod act;
pub mod doctor;
pub mod hear;
pub mod listen;
pub mod listen_local;
pub mod look;
pub mod probe;
pub mod run;
pub mod serve;
pub mod sessions;

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::Result;

use voxdesk_desk::confirm::{Confirm, Question};
use voxdesk_input::stop::{Cause, StopLatch};
use voxdesk_record::events::{Event, Sink, Stamped};

/// How a command ended; `main` maps these to exit codes, the one place that does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    /// The task or an action failed.
    Failed,
    /// Unusable input (a task the planner cannot read, a malformed batch): nothing started.
    BadInput,
    /// Refused by a rule (a rail, the GUI lock, no yes): nothing ran.
    Refused,
    /// Stopped by the emergency stop or a signal.
    Stopped,
    /// A second SIGINT or SIGTERM: gone at once, the shell's code for that signal.
    Signalled(&'static str),
}

impl Exit {
    /// The one place outcomes become exit codes.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::BadInput => 2,
            Exit::Refused => 3,
            Exit::Stopped => 4,
            Exit::Signalled("SIGINT") => 130,
            Exit::Signalled(_) => 143,
        }
    }

    /// Leave now with this outcome's code (a second signal: nothing is left to wait for).
    pub fn now(self) -> ! {
        std::process::exit(self.code().into())
    }
}

/// `voxdesk listen`'s arguments (a realtime model's, or the offline recogniser's with `local`).
pub struct ListenArgs {
    pub provider: String,
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub mode: Option<String>,
    pub quiet: bool,
    pub push_to_talk: Option<String>,
    pub narration_wav: Option<std::path::PathBuf>,
    pub step_cap: usize,
}

/// Settings from defaults, the file, the environment, and `--mode`.
pub fn settings(
    config: Option<&Path>,
    mode: Option<String>,
) -> Result<voxdesk_core::config::Loaded> {
    let flags: Vec<(&'static str, String)> = mode.into_iter().map(|m| ("rails.mode", m)).collect();
    Ok(voxdesk_core::config::load(
        config,
        |k| std::env::var(k).ok(),
        &flags,
    )?)
}

/// Said before a session in observe mode (the default) starts: it plans and records, and a
/// user who hears "Clicking 7" must not think it clicked.
pub fn say_if_observing(settings: &voxdesk_core::config::Settings) {
    if settings.rails.mode == voxdesk_core::config::Mode::Observe {
        println!(
            "observe mode: voxdesk plans and records each step but clicks and types nothing (--mode confirm or --mode auto to act)"
        );
    }
}

/// The desk for a recorded session, asking on the terminal; `None` (said on stderr) when the GUI
/// lock refuses it: another session owns the screen (exit 3).
pub fn open_desk(
    settings: &voxdesk_core::config::Settings,
    record: voxdesk_desk::RecordSpec,
    latch: std::sync::Arc<voxdesk_input::stop::StopLatch>,
) -> anyhow::Result<Option<voxdesk_desk::Desk>> {
    match voxdesk_desk::Desk::new(settings, Some(record), Box::new(TerminalConfirm), latch) {
        Ok(d) => Ok(Some(d)),
        Err(e @ voxdesk_desk::DeskError::RefusedByLock(_)) => {
            eprintln!("voxdesk: {e}");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Prints every narration as it is emitted.
pub struct Console;

impl Sink for Console {
    fn take(&mut self, e: &Stamped) -> Result<(), voxdesk_record::events::SinkError> {
        match &e.event {
            Event::Narration { text } => println!("🗣  {text}"),
            Event::Transcript { who, text } => println!("{who}: {text}"),
            _ => {}
        }
        Ok(())
    }
}

/// Asks on the terminal. No terminal: no yes. The read runs on its own thread so the stop
/// latch (the emergency stop, Ctrl-C) ends the question at once.
pub struct TerminalConfirm;

impl Confirm for TerminalConfirm {
    fn ask(&mut self, q: &Question, stop: &StopLatch) -> bool {
        if !std::io::stdin().is_terminal() {
            return false;
        }
        eprintln!("planned:");
        for (i, s) in q.steps.iter().enumerate() {
            eprintln!("  {}. {s}", i + 1);
        }
        eprint!("{} [y/N] ", q.text());
        let _ = std::io::stderr().flush();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let ok = std::io::stdin().lock().read_line(&mut line).is_ok();
            let _ = tx.send(ok && matches!(line.trim().to_lowercase().as_str(), "y" | "yes"));
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(yes) => return yes && !stop.is_stopped(),
                Err(mpsc::RecvTimeoutError::Timeout) if !stop.is_stopped() => {}
                Err(_) => {
                    eprintln!();
                    return false;
                }
            }
        }
    }
}

/// Call `f` with the signal's name on every SIGINT or SIGTERM, on a thread of its own.
pub fn on_signals(mut f: impl FnMut(&'static str) + Send + 'static) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("voxdesk-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                f(if sig == SIGINT { "SIGINT" } else { "SIGTERM" });
            }
        })?;
    Ok(())
}

/// SIGINT or SIGTERM stops the session like the emergency stop (the queue is dropped, every key
/// and button released, the session recorded as stopped); a second one exits at once.
pub fn stop_on_signals(latch: Arc<StopLatch>) -> Result<()> {
    on_signals(move |name| {
        if latch.is_stopped() {
            eprintln!("voxdesk: {name} again: exiting now");
            Exit::Signalled(name).now();
        }
        eprintln!("voxdesk: {name}: stopping (again to exit at once)");
        latch.trigger(Cause::Signal(name));
    })
}

/// `voxdesk bench …`: the benchmarks are a dev tool of their own (`voxdesk-bench`, never linked
/// into this binary), run from beside this program, else from PATH, with the arguments as given.
pub fn bench(args: &[std::ffi::OsString]) -> Result<Exit> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("voxdesk-bench")))
        .filter(|p| p.is_file());
    let program = beside.unwrap_or_else(|| "voxdesk-bench".into());
    let status = std::process::Command::new(&program).args(args).status();
    match status {
        Ok(s) if s.success() => Ok(Exit::Ok),
        Ok(_) => Ok(Exit::Failed),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(anyhow::anyhow!(
            "the benchmarks are a dev tool of their own: build them with `cargo build --release -p voxdesk-bench` (no `voxdesk-bench` beside this program or on PATH)"
        )),
        Err(e) => Err(anyhow::anyhow!("running {}: {e}", program.display())),
    }
}

/// Whether a text model gets pictures: `text.pictures`, or its deployment measured by
/// `voxdesk probe` to see them.
pub fn text_pictures(spec: &mut voxdesk_text::Spec, s: &voxdesk_core::config::Settings) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let dir = voxdesk_realtime::launch::capability_dir();
    voxdesk_text::capability::decide(spec, s.text_pictures, dir.as_deref(), now);
}

#[cfg(test)]
mod tests {
    use super::Exit;

    /// Scripts depend on these: pinned.
    #[test]
    fn exit_codes_are_decided_here() {
        let codes = [
            (Exit::Ok, 0),
            (Exit::Failed, 1),
            (Exit::BadInput, 2),
            (Exit::Refused, 3),
            (Exit::Stopped, 4),
            (Exit::Signalled("SIGINT"), 130),
            (Exit::Signalled("SIGTERM"), 143),
        ];
        for (e, c) in codes {
            assert_eq!(e.code(), c, "{e:?}");
        }
    }
}
