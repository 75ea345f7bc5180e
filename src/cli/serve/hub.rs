//! The daemon's event hub: every session's events numbered once for the whole daemon, kept in a bounded ring for clients that reconnect with `Last-Event-ID`, and broadcast live, so a client sees each event once, in order, with no gap.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use voxdesk_record::events::{Sink, Stamped};

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
    /// The last id the client counts as seen: anything at or below it is not sent again.
    pub after: u64,
}

/// What a connecting client says it has seen, by its `Last-Event-ID` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// No header (or a blank one): a new client, for the live feed.
    Nothing,
    /// Everything up to this id.
    Upto(u64),
    /// An id this daemon never handed out: not a number, or beyond the newest (a client of the
    /// daemon before a restart).
    Unknown,
}

impl Seen {
    /// Read the header as sent (any bytes: the client names it).
    pub fn from_header(v: Option<&[u8]>) -> Seen {
        let Some(v) = v else {
            return Seen::Nothing;
        };
        let t = String::from_utf8_lossy(v);
        let t = t.trim();
        if t.is_empty() {
            return Seen::Nothing;
        }
        t.parse::<u64>().map_or(Seen::Unknown, Seen::Upto)
    }
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

    /// A client connecting, having seen what its `Last-Event-ID` says. An id this daemon never
    /// handed out (after a restart, or made up) resumes from the oldest event kept, told as a
    /// gap: what came between is unknown (it was never a reason to send nothing).
    pub fn subscribe(&self, seen: Seen) -> Start {
        let r = self.ring();
        let live = self.live.subscribe();
        let newest = r.next - 1;
        let (after, missed, gap) = match seen {
            Seen::Nothing => (newest, Vec::new(), false),
            Seen::Upto(a) if a <= newest => {
                let (missed, gap) = self.since_locked(&r, a);
                (a, missed, gap)
            }
            Seen::Upto(_) | Seen::Unknown => (0, self.since_locked(&r, 0).0, true),
        };
        Start {
            missed,
            live,
            gap,
            after,
        }
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
        // The next id wanted (none after the last u64) is older than the oldest kept.
        let gap = after
            .checked_add(1)
            .is_some_and(|want| want < first && want < r.next);
        (missed, gap)
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
    fn take(&mut self, e: &Stamped) -> Result<(), voxdesk_record::events::SinkError> {
        self.hub.publish(&self.session, e);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxdesk_record::events::Event;

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
        let mut s = hub.subscribe(Seen::Upto(3));
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
        assert!(hub.subscribe(Seen::Nothing).missed.is_empty());
        // Up to date: nothing missed, no gap.
        let s = hub.subscribe(Seen::Upto(6));
        assert!(s.missed.is_empty() && !s.gap);
    }

    #[test]
    fn what_is_no_longer_kept_is_reported_as_a_gap() {
        let hub = Hub::new(3);
        for i in 1..=6 {
            hub.publish("s", &ev(i, "x"));
        }
        let s = hub.subscribe(Seen::Upto(1));
        assert_eq!(s.missed.iter().map(|i| i.id).collect::<Vec<_>>(), [4, 5, 6]);
        assert!(s.gap);
        let s = hub.subscribe(Seen::Upto(3));
        assert!(!s.gap, "4 is the oldest kept and the next wanted");
        assert_eq!(hub.last_id(), 6);
    }

    #[test]
    fn last_event_id_u64_max_resumes_without_overflow() {
        // `after + 1` overflowed (a panic in debug builds) for the largest id a header can say.
        let hub = Hub::new(3);
        for i in 1..=5 {
            hub.publish("s", &ev(i, "x"));
        }
        let (missed, gap) = hub.since(u64::MAX);
        assert!(missed.is_empty() && !gap);
        let h = Seen::from_header(Some(b"18446744073709551615"));
        assert_eq!(h, Seen::Upto(u64::MAX));
        let s = hub.subscribe(h);
        // Not an id this daemon handed out: what is kept, told as a gap, not silence.
        assert_eq!(s.missed.iter().map(|i| i.id).collect::<Vec<_>>(), [3, 4, 5]);
        assert!(s.gap);
        assert_eq!(s.after, 0);
    }

    #[test]
    fn a_last_event_id_from_before_a_restart_resumes_from_what_is_kept() {
        // The daemon restarted and numbers from 1 again; the browser still says 5000. Every
        // live event used to be dropped as already seen.
        let hub = Hub::new(100);
        hub.publish("s", &ev(1, "a"));
        let mut s = hub.subscribe(Seen::Upto(5000));
        assert_eq!(s.missed.iter().map(|i| i.id).collect::<Vec<_>>(), [1]);
        assert!(s.gap);
        hub.publish("s", &ev(2, "b"));
        assert!(s.live.try_recv().unwrap().id > s.after);
    }

    #[test]
    fn a_last_event_id_header_is_read_whatever_it_holds() {
        let cases: &[(Option<&[u8]>, Seen)] = &[
            (None, Seen::Nothing),
            (Some(b""), Seen::Nothing),
            (Some(b"  "), Seen::Nothing),
            (Some(b"7"), Seen::Upto(7)),
            (Some(b" 7 "), Seen::Upto(7)),
            (Some(b"18446744073709551616"), Seen::Unknown),
            (Some(b"-1"), Seen::Unknown),
            (Some(b"1.5"), Seen::Unknown),
            (Some(b"abc"), Seen::Unknown),
            (Some(b"\xff\xfe"), Seen::Unknown),
        ];
        for (h, want) in cases {
            assert_eq!(Seen::from_header(*h), *want, "{h:?}");
        }
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;
    use voxdesk_record::events::Event;

    fn stamped(i: u64) -> Stamped {
        Stamped {
            seq: i,
            t_ms: 0,
            event: Event::Narration { text: "x".into() },
        }
    }

    fn hub_with(keep: usize, n: u64) -> Hub {
        let hub = Hub::new(keep);
        for i in 1..=n {
            hub.publish("s", &stamped(i));
        }
        hub
    }

    /// What a stream sends from `s`, as `api::next_event` does: what was missed, then the live
    /// feed, nothing at or below the last id sent.
    fn sent(mut s: Start) -> Vec<u64> {
        let mut last = s.after;
        let mut out = Vec::new();
        let live = std::iter::from_fn(|| s.live.try_recv().ok()).collect::<Vec<_>>();
        for i in s.missed.iter().chain(&live) {
            if i.id > last {
                out.push(i.id);
                last = i.id;
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_last_event_id_header_is_never_a_panic(
            header in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..24),
                "[ +-]?[0-9]{0,22}[ ]?".prop_map(String::into_bytes),
                ".{0,12}".prop_map(String::into_bytes),
            ],
            keep in 1usize..20,
            n in 0u64..60,
        ) {
            let hub = hub_with(keep, n);
            let s = hub.subscribe(Seen::from_header(Some(&header)));
            let ids: Vec<u64> = s.missed.iter().map(|i| i.id).collect();
            prop_assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{:?}", ids);
            prop_assert!(ids.iter().all(|&i| i > s.after && i <= n));
        }

        #[test]
        fn resuming_from_a_valid_id_has_no_gap_and_no_duplicate(
            keep in 1usize..30,
            n in 0u64..80,
            at in any::<prop::sample::Index>(),
            more in 0u64..40,
        ) {
            let hub = hub_with(keep, n);
            let after = at.index(n as usize + 1) as u64;
            let s = hub.subscribe(Seen::Upto(after));
            let first = n.saturating_sub(keep as u64) + 1;
            let gap = after + 1 < first;
            prop_assert_eq!(s.gap, gap);
            prop_assert_eq!(s.after, after);
            let total = n + more;
            for i in n + 1..=total {
                hub.publish("s", &stamped(i));
            }
            let from = if gap { first } else { after + 1 };
            prop_assert_eq!(sent(s), (from..=total).collect::<Vec<_>>());
            // A slow client catching up later from the same id (`since`, after a lag).
            let first = total.saturating_sub(keep as u64) + 1;
            let (rest, gap) = hub.since(after);
            prop_assert_eq!(gap, after + 1 < first && after < total);
            prop_assert_eq!(
                rest.iter().map(|i| i.id).collect::<Vec<_>>(),
                (after.max(first - 1) + 1..=total).collect::<Vec<_>>()
            );
        }
    }
}
