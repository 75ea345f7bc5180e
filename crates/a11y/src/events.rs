//! The applications' change events (children, text, states, names, windows), counted as they arrive on a thread of their own: a tree read before the last change from its application is read again; one where only states or text changed is refreshed in place.

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use zbus::Connection;

/// How many changes are remembered; past that, any tree kept is read again.
const KEEP: usize = 4096;

/// What a change event asks of a kept tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A node's states, text or name: refresh that node.
    Node,
    /// Something moved or was resized. Every use of a kept tree reads its boxes again (one
    /// call each, all at once; scrolled content moves without an event) and reads the tree
    /// again when one moved, so this asks for nothing more.
    Bounds,
    /// Children added or removed, a window opened, closed or activated: read again.
    Tree,
}

/// One change: its order, the application (bus name) and the object (path).
#[derive(Debug, Clone)]
pub struct Change {
    pub seq: u64,
    pub bus: String,
    pub path: String,
    pub kind: Kind,
    /// The event, as `Member:detail` (logs, tests).
    pub what: String,
}

/// Every change seen since the watcher started (the last [`KEEP`]).
#[derive(Debug, Default)]
pub struct Changes {
    inner: Mutex<(u64, std::collections::VecDeque<Change>)>,
    /// Whether the watcher is listening (no events: nothing can be kept).
    pub listening: std::sync::atomic::AtomicBool,
}

impl Changes {
    pub fn seq(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    pub fn push(&self, bus: &str, path: &str, kind: Kind, what: String) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0 += 1;
        let seq = g.0;
        if g.1.len() >= KEEP {
            g.1.pop_front();
        }
        g.1.push_back(Change {
            seq,
            bus: bus.to_string(),
            path: path.to_string(),
            kind,
            what,
        });
    }

    /// The changes of application `bus` after `since`; `None` when they are no longer all
    /// remembered.
    pub fn since(&self, since: u64, bus: &str) -> Option<Vec<Change>> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.1.front().is_some_and(|c| c.seq > since + 1) {
            return None;
        }
        Some(
            g.1.iter()
                .filter(|c| c.seq > since && c.bus == bus)
                .cloned()
                .collect(),
        )
    }
}

/// What an event means for a kept tree (`None`: nothing, e.g. a caret that moved).
pub fn kind_of(interface: &str, member: &str, detail: &str) -> Option<Kind> {
    match (interface, member) {
        ("org.a11y.atspi.Event.Object", "StateChanged") => {
            // Showing and visible change the boxes; defunct, the tree.
            if matches!(detail, "showing" | "visible" | "defunct") {
                Some(Kind::Tree)
            } else {
                Some(Kind::Node)
            }
        }
        ("org.a11y.atspi.Event.Object", "TextChanged") => Some(Kind::Node),
        ("org.a11y.atspi.Event.Object", "PropertyChange") => match detail {
            "accessible-name" | "accessible-value" | "accessible-description" => Some(Kind::Node),
            "accessible-parent" | "accessible-role" => Some(Kind::Tree),
            _ => None,
        },
        // Drawn content changed (a text view and its ancestors as one types): the elements
        // and their boxes did not; the ones kept are refreshed.
        ("org.a11y.atspi.Event.Object", "VisibleDataChanged") => Some(Kind::Node),
        ("org.a11y.atspi.Event.Object", "BoundsChanged") => Some(Kind::Bounds),
        ("org.a11y.atspi.Event.Object", "ChildrenChanged") => Some(Kind::Tree),
        ("org.a11y.atspi.Event.Window", _) => Some(Kind::Tree),
        _ => None,
    }
}

/// The events an application sends only when someone asked the registry for them.
const EVENTS: &[&str] = &[
    "object:state-changed",
    "object:children-changed",
    "object:text-changed",
    "object:property-change",
    "object:bounds-changed",
    "window:",
];

/// Listen on `conn` (a connection of the watcher's own) until it closes.
pub fn watch(conn: Connection, changes: Arc<Changes>) {
    let run = async move {
        for e in EVENTS {
            let _ = conn
                .call_method(
                    Some("org.a11y.atspi.Registry"),
                    "/org/a11y/atspi/registry",
                    Some("org.a11y.atspi.Registry"),
                    "RegisterEvent",
                    &(*e, Vec::<String>::new(), ""),
                )
                .await;
        }
        let mut streams = Vec::new();
        for iface in ["org.a11y.atspi.Event.Object", "org.a11y.atspi.Event.Window"] {
            let rule = format!("type='signal',interface='{iface}'");
            match zbus::MessageStream::for_match_rule(rule.as_str(), &conn, Some(KEEP)).await {
                Ok(s) => streams.push(s),
                Err(e) => {
                    tracing::debug!("accessibility events: {e}");
                    return;
                }
            }
        }
        changes
            .listening
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut all = futures_util::stream::select_all(streams);
        while let Some(m) = all.next().await {
            let Ok(m) = m else { continue };
            let h = m.header();
            let (Some(iface), Some(member), Some(path), Some(sender)) =
                (h.interface(), h.member(), h.path(), h.sender())
            else {
                continue;
            };
            // `(siiva{sv})` from GTK and Chromium, `(siiv(so))` from Qt.
            type Props = std::collections::HashMap<String, zbus::zvariant::OwnedValue>;
            let body = m.body();
            let detail: String = body
                .deserialize::<(String, i32, i32, zbus::zvariant::OwnedValue, Props)>()
                .map(|b| b.0)
                .or_else(|_| {
                    body.deserialize::<(
                        String,
                        i32,
                        i32,
                        zbus::zvariant::OwnedValue,
                        (String, zbus::zvariant::OwnedObjectPath),
                    )>()
                    .map(|b| b.0)
                })
                .unwrap_or_default();
            if let Some(kind) = kind_of(iface.as_str(), member.as_str(), &detail) {
                changes.push(
                    sender.as_str(),
                    path.as_str(),
                    kind,
                    format!("{member}:{detail}"),
                );
            }
        }
        changes
            .listening
            .store(false, std::sync::atomic::Ordering::SeqCst);
    };
    async_io::block_on(run);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_mean_refresh_a_node_or_read_again() {
        let o = "org.a11y.atspi.Event.Object";
        for (iface, member, detail, want) in [
            (o, "StateChanged", "checked", Some(Kind::Node)),
            (o, "StateChanged", "focused", Some(Kind::Node)),
            (o, "StateChanged", "showing", Some(Kind::Tree)),
            (o, "TextChanged", "insert", Some(Kind::Node)),
            (o, "ChildrenChanged", "add", Some(Kind::Tree)),
            (o, "VisibleDataChanged", "", Some(Kind::Node)),
            (o, "BoundsChanged", "", Some(Kind::Bounds)),
            (o, "PropertyChange", "accessible-name", Some(Kind::Node)),
            (o, "PropertyChange", "accessible-table-caption", None),
            (o, "TextCaretMoved", "", None),
            (
                "org.a11y.atspi.Event.Window",
                "Activate",
                "",
                Some(Kind::Tree),
            ),
        ] {
            assert_eq!(kind_of(iface, member, detail), want, "{member} {detail}");
        }
    }

    #[test]
    fn changes_are_told_per_application_until_forgotten() {
        let c = Changes::default();
        let start = c.seq();
        c.push(":1.5", "/a", Kind::Node, "TextChanged:insert".into());
        c.push(":1.6", "/b", Kind::Tree, "ChildrenChanged:add".into());
        let mine = c.since(start, ":1.5").unwrap();
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].path, "/a");
        assert!(c.since(c.seq(), ":1.5").unwrap().is_empty());
        for _ in 0..KEEP + 5 {
            c.push(":1.6", "/b", Kind::Node, String::new());
        }
        assert!(c.since(start, ":1.5").is_none(), "forgotten: read again");
    }
}
