//! Records: the session record (`session.json`, rewritten atomically), the typed events and their sinks (`events.jsonl`), private file modes, the HTML report, and the session's secrets masked in all of them.

pub mod events;
pub mod redact;
pub mod report;
pub mod session;
pub mod sse;
