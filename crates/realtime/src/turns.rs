//! The bookkeeping a realtime session keeps between the wire and the desk, pure: which of the model's audio may still play (the fence against an interrupted turn's late chunks), how much of each audio item was actually played (for OpenAI's truncate), and which tool calls are pending, dispatched or answered (each once).

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

/// The longest a `goAway` is waited out: whatever time the server names (a decoder caps it
/// too), the session adds this to a clock, which panics past its range.
pub const GO_AWAY_MAX: Duration = Duration::from_secs(86_400);

/// After a `goAway` naming `left` (`None`: not said), how long the session may stay on the
/// connection to let a running call finish: half a second short of what is left, 5 s when
/// nothing is said, never more than [`GO_AWAY_MAX`].
pub fn go_away_within(left: Option<Duration>) -> Duration {
    left.unwrap_or(Duration::from_secs(5))
        .saturating_sub(Duration::from_millis(500))
        .min(GO_AWAY_MAX)
}

/// Whether the model's audio may play. After an interruption, the interrupted turn's late
/// chunks are dropped: Gemini has no response id, so until that turn's `turnComplete`; OpenAI's
/// audio carries its response id, and an interrupted id stays fenced off for good.
#[derive(Debug, Default)]
pub struct Fence {
    /// Gemini: an interruption was seen and its turn has not completed yet.
    cut: bool,
    /// OpenAI: responses interrupted (their audio never plays again).
    cut_responses: HashSet<String>,
}

impl Fence {
    /// The person spoke over the model (Gemini `interrupted`, which may also come after
    /// `turnComplete`, while audio is still playing: it then fences nothing new).
    pub fn interrupted(&mut self, turn_active: bool) {
        self.cut = turn_active;
    }

    /// Gemini: the turn ended; the next turn's audio plays.
    pub fn turn_complete(&mut self) {
        self.cut = false;
    }

    /// May this Gemini audio chunk play?
    pub fn gemini_plays(&self) -> bool {
        !self.cut
    }

    /// OpenAI: the response was interrupted (speech started, or cancelled by us).
    pub fn cut_response(&mut self, response_id: &str) {
        if !response_id.is_empty() {
            self.cut_responses.insert(response_id.to_string());
        }
    }

    /// May this OpenAI audio delta play?
    pub fn openai_plays(&self, response_id: &str) -> bool {
        !self.cut_responses.contains(response_id)
    }
}

/// How much of each assistant audio item was received and how much actually played, so an
/// interruption truncates the server's copy at what the person heard: the speaker reports the
/// samples it played, item by item, in the order they were queued. One response may hold several
/// audio items (a preamble, then the answer); each is counted apart.
#[derive(Debug, Default)]
pub struct Played {
    /// (item id, samples received, samples played), in queue order.
    items: Vec<(String, u64, u64)>,
    rate: u32,
}

impl Played {
    pub fn new(rate: u32) -> Played {
        Played {
            items: Vec::new(),
            rate,
        }
    }

    /// `samples` of `item` were queued for the speaker.
    pub fn received(&mut self, item: &str, samples: u64) {
        match self.items.iter_mut().find(|i| i.0 == item) {
            Some(i) => i.1 += samples,
            None => self.items.push((item.to_string(), samples, 0)),
        }
    }

    /// The speaker played `samples` more, from the oldest item not yet fully played on.
    pub fn played(&mut self, mut samples: u64) {
        for i in &mut self.items {
            let left = i.1 - i.2;
            let take = left.min(samples);
            i.2 += take;
            samples -= take;
            if samples == 0 {
                break;
            }
        }
    }

    /// The item being heard now (the oldest not fully played), and the milliseconds of it
    /// played: what an interruption truncates it at. `None` when everything queued was played.
    pub fn playing(&self) -> Option<(&str, f64, f64)> {
        let ms = |n: u64| n as f64 * 1000.0 / self.rate.max(1) as f64;
        self.items
            .iter()
            .find(|i| i.2 < i.1)
            .map(|i| (i.0.as_str(), ms(i.2), ms(i.1)))
    }

    /// The queue was flushed (an interruption): nothing more of these items will play.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

/// A tool call the model made, waiting for the desk.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub id: String,
    pub name: String,
    pub args: serde_json::Value,
}

/// Why a call is not taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error("call {0:?} was already received")]
    Duplicate(String),
    #[error("a call without an id")]
    NoId,
    #[error("no call {0:?} is waiting for an answer")]
    NotDispatched(String),
}

/// The model's tool calls: queued in order, dispatched to the desk one at a time, answered
/// once each. A call the model cancels before it is dispatched never runs; one already
/// dispatched has acted on the screen, and its answer is still sent (the model must learn what
/// happened). An id seen before is never dispatched again (a replay after a reconnect).
#[derive(Debug, Default)]
pub struct Calls {
    queue: VecDeque<Pending>,
    /// Dispatched to the desk, not yet answered.
    running: Option<String>,
    /// Every id ever received, for duplicates.
    seen: HashSet<String>,
}

impl Calls {
    /// Queue a call from the model.
    pub fn receive(&mut self, call: Pending) -> Result<(), CallError> {
        if call.id.is_empty() {
            return Err(CallError::NoId);
        }
        if !self.seen.insert(call.id.clone()) {
            return Err(CallError::Duplicate(call.id));
        }
        self.queue.push_back(call);
        Ok(())
    }

    /// The model no longer wants these: those not dispatched are dropped. Returns the ids
    /// dropped.
    pub fn cancel(&mut self, ids: &[String]) -> Vec<String> {
        let mut dropped = Vec::new();
        self.queue.retain(|c| {
            let gone = ids.contains(&c.id);
            if gone {
                dropped.push(c.id.clone());
            }
            !gone
        });
        dropped
    }

    /// Drop every call not dispatched (the emergency stop, a spoken "stop").
    pub fn cancel_all(&mut self) -> Vec<String> {
        self.queue.drain(..).map(|c| c.id).collect()
    }

    /// The next call for the desk, if none is running.
    pub fn dispatch(&mut self) -> Option<Pending> {
        if self.running.is_some() {
            return None;
        }
        let c = self.queue.pop_front()?;
        self.running = Some(c.id.clone());
        Some(c)
    }

    /// The desk answered the running call: it may be sent, once.
    pub fn answered(&mut self, id: &str) -> Result<(), CallError> {
        if self.running.as_deref() != Some(id) {
            return Err(CallError::NotDispatched(id.to_string()));
        }
        self.running = None;
        Ok(())
    }

    /// Is the desk working on a call?
    pub fn busy(&self) -> bool {
        self.running.is_some()
    }

    /// Calls waiting to be dispatched.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> Pending {
        Pending {
            id: id.into(),
            name: "act".into(),
            args: json!({}),
        }
    }

    #[test]
    fn gemini_audio_is_fenced_from_interruption_to_turn_complete() {
        let mut f = Fence::default();
        assert!(f.gemini_plays());
        f.interrupted(true);
        assert!(!f.gemini_plays(), "late chunks of the cut turn are dropped");
        f.turn_complete();
        assert!(f.gemini_plays(), "the next turn plays");
        // `interrupted` after `turnComplete` (playout still running): the flush happens, but no
        // later turn is fenced off.
        f.interrupted(false);
        assert!(f.gemini_plays());
    }

    #[test]
    fn an_interrupted_openai_response_never_plays_again() {
        let mut f = Fence::default();
        f.cut_response("r1");
        f.cut_response("");
        assert!(!f.openai_plays("r1"));
        assert!(f.openai_plays("r2"));
        assert!(f.openai_plays(""));
    }

    #[test]
    fn played_audio_is_counted_per_item_in_queue_order() {
        let mut p = Played::new(24_000);
        assert_eq!(p.playing(), None);
        p.received("preamble", 2_400);
        p.received("answer", 24_000);
        p.received("answer", 24_000);
        p.played(1_200);
        assert_eq!(p.playing(), Some(("preamble", 50.0, 100.0)));
        // The preamble ends; 0.5 s of the answer plays.
        p.played(1_200 + 12_000);
        assert_eq!(p.playing(), Some(("answer", 500.0, 2000.0)));
        // The speaker cannot have played more than it was given.
        p.played(1_000_000);
        assert_eq!(p.playing(), None);
        p.received("next", 480);
        p.clear();
        assert_eq!(p.playing(), None);
    }

    #[test]
    fn a_go_away_of_u64_max_seconds_is_waited_out_for_a_day_at_most() {
        assert_eq!(
            go_away_within(Some(Duration::from_secs(50))),
            Duration::from_millis(49_500)
        );
        assert_eq!(go_away_within(None), Duration::from_millis(4_500));
        assert_eq!(go_away_within(Some(Duration::ZERO)), Duration::ZERO);
        for huge in [
            Duration::MAX,
            Duration::from_secs(15_000_000_000_000_000_000),
        ] {
            assert_eq!(go_away_within(Some(huge)), GO_AWAY_MAX);
        }
    }

    #[test]
    fn calls_run_one_at_a_time_each_once() {
        let mut c = Calls::default();
        c.receive(call("a")).unwrap();
        c.receive(call("b")).unwrap();
        assert_eq!(c.receive(call("a")), Err(CallError::Duplicate("a".into())));
        assert_eq!(c.receive(call("")), Err(CallError::NoId));
        assert_eq!(c.dispatch().map(|p| p.id), Some("a".into()));
        assert_eq!(c.dispatch(), None, "one at a time");
        assert_eq!(c.answered("b"), Err(CallError::NotDispatched("b".into())));
        c.answered("a").unwrap();
        assert_eq!(
            c.answered("a"),
            Err(CallError::NotDispatched("a".into())),
            "once"
        );
        assert_eq!(c.dispatch().map(|p| p.id), Some("b".into()));
        c.answered("b").unwrap();
        assert_eq!(c.dispatch(), None);
        // A replay of an answered call (after a reconnect) is not run again.
        assert_eq!(c.receive(call("b")), Err(CallError::Duplicate("b".into())));
    }

    #[test]
    fn cancelled_calls_not_dispatched_never_run() {
        let mut c = Calls::default();
        for id in ["a", "b", "c"] {
            c.receive(call(id)).unwrap();
        }
        assert_eq!(c.dispatch().map(|p| p.id), Some("a".into()));
        // "a" already acted: it is not dropped; "b" is.
        assert_eq!(c.cancel(&["a".into(), "b".into()]), vec!["b".to_string()]);
        assert!(c.busy());
        c.answered("a").unwrap();
        assert_eq!(c.cancel_all(), vec!["c".to_string()]);
        assert_eq!(c.dispatch(), None);
        assert_eq!(c.waiting(), 0);
    }
}
