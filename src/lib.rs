//! voxdesk: a voice-driven desktop assistant that sees the screen as numbered targets, acts behind safety rails and verifies every step.
//!
//! Layout (one job per module):
//! - `agent`: the loop as a state machine (observe → plan → act → settle → verify).
//! - `narrate`: printed and spoken narration (espeak-ng), never blocking the loop.
//! - `act`: the `voxdesk act` command — observe, rails, confirm, actuate, report.
//! - `action`: the closed set of actions and the `act` tool's JSON parser.
//! - `config`: settings from defaults, file, env and flags, each with its source.
//! - `rails`: the safety checks; the only place an approved batch is made.
//! - `actuator`: the only enigo and device_query user — the input thread and the emergency stop.
//! - `lock`: the GUI lock (one voxdesk per screen).
//! - `report`: the self-contained HTML report of a session.
//! - `session`: session records (atomic session.json, event log, aborted detection).
//! - `verify`: verified / failed / unverified after an act (pure).
//! - `geometry`: the three coordinate spaces and the one place that converts between them.
//! - `frame`: a captured or loaded screen image plus the measured monitor facts; safe image loading.
//! - `capture`: the only xcap user — primary-monitor frames and the focused window.
//! - `desktop`: the only raw X11 (x11rb) user — XTEST and window-manager facts.
//! - `perception`: frames → targets (line finding, Tesseract, tiles, stable ids).
//! - `packet`: the versioned perception packet (prompts/packet.v1.md) a model planner receives.
//! - `planner`: the planner boundary (tools observe/act/done and their schema) and the offline planner.
//! - `picture`: the downscaled, annotated JPEG the model sees.
//! - `observation`: the JSON shapes other tools consume (`ocr`, `look`).
//! - `eval`: scoring targets against ground-truth labels (benchmarks, tests).
//! - `bench`: `voxdesk bench …` tables.
//! - `doctor`: preflight checks.

pub mod act;
pub mod action;
pub mod actuator;
pub mod agent;
pub mod bench;
pub mod capture;
pub mod config;
pub mod desktop;
pub mod doctor;
pub mod eval;
pub mod frame;
pub mod geometry;
pub mod lock;
pub mod narrate;
pub mod observation;
pub mod packet;
pub mod perception;
pub mod picture;
pub mod planner;
pub mod rails;
pub mod report;
pub mod session;
pub mod verify;
