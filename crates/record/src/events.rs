//! The closed set of events a session emits, and the bus that hands each one to its sinks (the console, the voice, `events.jsonl`, later the daemon's stream); `events.jsonl` is this enum serialized, one stable shape.
//!
//! Nothing in the loop prints or speaks: it emits, and the sinks subscribed to the bus do.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::session::{now_ms, RailsVerdict, Status, Verification};

/// The loop's states. Transitions between them are events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum State {
    Observe,
    Plan,
    Act,
    Settle,
    Verify,
    Done,
    Failed,
    Stopped,
}

/// Everything a session can tell its sinks. Serialized with the variant name in `event`
/// (snake_case) and the fields beside it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    SessionStarted {
        session: String,
        task: String,
        provider: String,
        model: String,
        mode: String,
        prompt_version: String,
    },
    Transition {
        from: State,
        to: State,
        why: String,
    },
    /// A new observation, with the perception packet a model planner reads.
    Observed {
        observation_id: String,
        app: Option<String>,
        targets: usize,
        packet_version: String,
        packet: String,
    },
    /// What the driver is about to do: in words and as the `act` tool's JSON.
    Plan {
        say: String,
        actions: serde_json::Value,
    },
    /// One act, judged.
    Step {
        index: usize,
        observation_id: String,
        rails: RailsVerdict,
        verdict: Verification,
        detail: String,
        ms: f64,
    },
    Refusal {
        rule: String,
        action: Option<usize>,
        message: String,
    },
    ConfirmationAsked {
        question: String,
        reasons: Vec<String>,
    },
    ConfirmationAnswered {
        yes: bool,
    },
    Recovery {
        class: String,
        action: String,
        ran: bool,
    },
    /// A sentence for the person: printed by the console, spoken by the voice.
    Narration {
        text: String,
    },
    /// What the person said or the model said aloud (realtime sessions), as transcribed.
    Transcript {
        who: String,
        text: String,
    },
    /// One model request's token use, as its server counted it (turn-based models).
    Tokens {
        input: u64,
        output: u64,
    },
    EmergencyStop {
        cause: String,
    },
    SessionEnded {
        status: Status,
        summary: String,
    },
}

/// An event with its place in the session: a sequence number (for a reconnecting client to
/// resume from) and the wall-clock time.
#[derive(Debug, Clone, Serialize)]
pub struct Stamped {
    pub seq: u64,
    pub t_ms: u64,
    #[serde(flatten)]
    pub event: Event,
}

/// Why a sink could not take an event.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("writing {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("encoding an event: {0}")]
    Encode(#[from] serde_json::Error),
    /// A sink of its own kind (a test's, a network's) that failed.
    #[error("{0}")]
    Failed(String),
}

/// Something that takes events. A sink that fails says why; the bus keeps the first failure.
pub trait Sink: Send {
    fn take(&mut self, e: &Stamped) -> Result<(), SinkError>;
}

/// Hands every event to every sink, in order of subscription.
#[derive(Default)]
pub struct Bus {
    sinks: Vec<Box<dyn Sink>>,
    seq: u64,
    failure: Option<String>,
    /// The session's opening event, handed to sinks that subscribe after it (a late sink
    /// still learns which session it is hearing).
    started: Option<Stamped>,
}

impl Bus {
    pub fn subscribe(&mut self, mut sink: Box<dyn Sink>) {
        if let Some(e) = &self.started {
            if let Err(why) = sink.take(e) {
                self.failure.get_or_insert(why.to_string());
            }
        }
        self.sinks.push(sink);
    }

    pub fn emit(&mut self, event: Event) {
        self.seq += 1;
        let e = Stamped {
            seq: self.seq,
            t_ms: now_ms(),
            event,
        };
        if matches!(e.event, Event::SessionStarted { .. }) {
            self.started = Some(e.clone());
        }
        for s in &mut self.sinks {
            if let Err(why) = s.take(&e) {
                self.failure.get_or_insert(why.to_string());
            }
        }
    }

    /// The first failure of any sink since the last call.
    pub fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }
}

/// Appends each event to `events.jsonl` as one JSON line, flushed.
pub struct JsonlSink {
    path: PathBuf,
    file: File,
}

impl JsonlSink {
    pub fn open(path: &Path) -> std::io::Result<JsonlSink> {
        Ok(JsonlSink {
            path: path.to_path_buf(),
            file: voxdesk_core::private::append(path)?,
        })
    }
}

impl Sink for JsonlSink {
    fn take(&mut self, e: &Stamped) -> Result<(), SinkError> {
        let line = serde_json::to_string(e)?;
        writeln!(self.file, "{line}")
            .and_then(|_| self.file.flush())
            .map_err(|source| SinkError::Write {
                path: self.path.display().to_string(),
                source,
            })
    }
}

/// Keeps every event in memory (tests, benchmarks).
#[derive(Clone, Default)]
pub struct Memory(pub std::sync::Arc<std::sync::Mutex<Vec<Stamped>>>);

impl Sink for Memory {
    fn take(&mut self, e: &Stamped) -> Result<(), SinkError> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Broken;
    impl Sink for Broken {
        fn take(&mut self, _: &Stamped) -> Result<(), SinkError> {
            Err(SinkError::Failed("disk full".into()))
        }
    }

    #[test]
    fn one_stable_shape_and_failures_are_kept() {
        let mem = Memory::default();
        let mut bus = Bus::default();
        bus.subscribe(Box::new(mem.clone()));
        bus.subscribe(Box::new(Broken));
        bus.emit(Event::Transition {
            from: State::Observe,
            to: State::Plan,
            why: "first observation".into(),
        });
        bus.emit(Event::Recovery {
            class: "unexpected window or menu".into(),
            action: "escape".into(),
            ran: true,
        });
        let got = mem.0.lock().unwrap().clone();
        assert_eq!(got.len(), 2, "every sink gets every event");
        let v = serde_json::to_value(&got[0]).unwrap();
        assert_eq!(v["seq"], 1);
        assert_eq!(v["event"], "transition");
        assert_eq!(v["from"], "Observe");
        assert_eq!(v["to"], "Plan");
        let line = serde_json::to_string(&got[1]).unwrap();
        assert!(line.contains("\"event\":\"recovery\"") && line.contains("\"ran\":true"));
        assert_eq!(bus.take_failure().as_deref(), Some("disk full"));
        assert_eq!(bus.take_failure(), None, "reported once");
    }

    #[test]
    fn a_late_sink_still_learns_which_session_it_hears() {
        let mut bus = Bus::default();
        bus.emit(Event::SessionStarted {
            session: "s1".into(),
            task: "t".into(),
            provider: "local".into(),
            model: "offline-planner".into(),
            mode: "auto".into(),
            prompt_version: "v".into(),
        });
        bus.emit(Event::Narration { text: "a".into() });
        let late = Memory::default();
        bus.subscribe(Box::new(late.clone()));
        bus.emit(Event::Narration { text: "b".into() });
        let got = late.0.lock().unwrap().clone();
        assert_eq!(got.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 3]);
        assert!(matches!(got[0].event, Event::SessionStarted { .. }));
    }
}
