//! The daemon's event hub: every session's events numbered once for the whole daemon, kept in a bounded ring for clients that reconnect with `Last-Event-ID`, and broadcast live, so a client sees each event once, in order, with no gap.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use voxdesk::record::events::{Sink, Stamped};

/// Events kept for reconnecting clients (a long session's worth).
pub const KEEP: usize = 20_000;
/// Live events a slow client may fall behind before it catches up from the ring.
const LIVE: usize = 1024;

/// One event as the stream sends it.
#[derive(Debug)]
pub struct Item {
    /// The daemon's own number: the SSE id.
    pub id: u64,
    /// The event's name (the SSE event type).
    pub kind: String,
    /// `{"session": …, "seq": …, "t_ms": …, "event": …, …}`.
    pub data: String,
}

struct Ring {
    next: u64,
    items: VecDeque<Arc<Item>>,
}

pub struct Hub {
    ring: Mutex<Ring>,
    live: broadcast::Sender<Arc<Item>>,
    keep: usize,
}

/// Where a client starts: what it missed, then the live feed; `gap` when some of what it
/// missed is no longer kept.
pub struct Start {
    pub missed: Vec<Arc<Item>>,
    pub live: broadcast::Receiver<Arc<Item>>,
    pub gap: bool,
}

impl Hub {
    pub fn new(keep: usize) -> Hub {
        Hub {
            ring: Mutex::new(Ring {
                next: 1,
                items: VecDeque::new(),
            }),
            live: broadcast::channel(LIVE).0,
            keep,
        }
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, Ring> {
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number, keep and send one event. Sent under the ring's lock, so the live order is the
    /// numbering order and `subscribe` can never fall between keeping and sending.
    pub fn publish(&self, session: &str, e: &Stamped) -> u64 {
        let mut v = serde_json::to_value(e).unwrap_or_else(
            |err| serde_json::json!({"event": "unserializable", "error": err.to_string()}),
        );
        let kind = v
            .get("event")
            .and_then(|k| k.as_str())
            .unwrap_or("event")
            .to_string();
        if let Some(o) = v.as_object_mut() {
            o.insert("session".into(), session.into());
        }
        let mut r = self.ring();
        let id = r.next;
        r.next += 1;
        let item = Arc::new(Item {
            id,
            kind,
            data: v.to_string(),
        });
        if r.items.len() == self.keep {
            r.items.pop_front();
        }
        r.items.push_back(item.clone());
        let _ = self.live.send(item);
        id
    }

    /// A client connecting, having seen everything up to `after` (its `Last-Event-ID`).
    pub fn subscribe(&self, after: Option<u64>) -> Start {
        let r = self.ring();
        let live = self.live.subscribe();
        let (missed, gap) = match after {
            None => (Vec::new(), false),
            Some(a) => self.since_locked(&r, a),
        };
        Start { missed, live, gap }
    }

    /// Everything after `after` still kept (a slow client catching up), and whether some of
    /// it is gone.
    pub fn since(&self, after: u64) -> (Vec<Arc<Item>>, bool) {
        let r = self.ring();
        self.since_locked(&r, after)
    }

    fn since_locked(&self, r: &Ring, after: u64) -> (Vec<Arc<Item>>, bool) {
        let first = r.items.front().map_or(r.next, |i| i.id);
        let missed: Vec<Arc<Item>> = r.items.iter().filter(|i| i.id > after).cloned().collect();
        (missed, after + 1 < first && after + 1 < r.next)
    }

    /// The newest id handed out (0: none yet).
    pub fn last_id(&self) -> u64 {
        self.ring().next - 1
    }
}

/// The desk's sink into the hub for one session.
pub struct HubSink {
    pub hub: Arc<Hub>,
    pub session: String,
}

impl Sink for HubSink {
    fn take(&mut self, e: &Stamped) -> Result<(), String> {
        self.hub.publish(&self.session, e);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxdesk::record::events::Event;

    fn ev(seq: u64, text: &str) -> Stamped {
        Stamped {
            seq,
            t_ms: 0,
            event: Event::Narration { text: text.into() },
        }
    }

    #[test]
    fn a_reconnecting_client_gets_exactly_what_it_missed_then_the_live_feed() {
        let hub = Hub::new(100);
        for i in 1..=5 {
            assert_eq!(hub.publish("s1", &ev(i, "x")), i);
        }
        let mut s = hub.subscribe(Some(3));
        assert_eq!(s.missed.iter().map(|i| i.id).collect::<Vec<_>>(), [4, 5]);
        assert!(!s.gap);
        hub.publish("s1", &ev(6, "live"));
        let live = s.live.try_recv().unwrap();
        assert_eq!(live.id, 6);
        assert_eq!(live.kind, "narration");
        let v: serde_json::Value = serde_json::from_str(&live.data).unwrap();
        assert_eq!(v["session"], "s1");
        assert_eq!(v["text"], "live");
        // A new client (no Last-Event-ID) starts with the live feed only.
        assert!(hub.subscribe(None).missed.is_empty());
        // Up to date: nothing missed, no gap.
        let s = hub.subscribe(Some(6));
        assert!(s.missed.is_empty() && !s.gap);
    }

    #[test]
    fn what_is_no_longer_kept_is_reported_as_a_gap() {
        let hub = Hub::new(3);
        for i in 1..=6 {
            hub.publish("s", &ev(i, "x"));
        }
        let s = hub.subscribe(Some(1));
        assert_eq!(s.missed.iter().map(|i| i.id).collect::<Vec<_>>(), [4, 5, 6]);
        assert!(s.gap);
        let s = hub.subscribe(Some(3));
        assert!(!s.gap, "4 is the oldest kept and the next wanted");
        assert_eq!(hub.last_id(), 6);
    }
}
