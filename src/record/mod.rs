//! Records: the session record (`session.json`, rewritten atomically), the typed events and their sinks (`events.jsonl`), private file modes, and the HTML report.

pub mod events;
pub mod report;
pub mod session;
