//! voxdesk: a voice-driven desktop assistant that sees the screen as numbered targets, acts behind safety rails and verifies every step.
//!
//! Layout, by layer (each uses only those above it in this list):
//! - `geometry`, `config`, `action`, `keys`, `private`: the three coordinate spaces; settings with
//!   their sources; the `act` tool's vocabulary; the key events an action sends; private files.
//! - `screen`: capture (the only xcap user), the frame, read-only X11 facts, the model picture,
//!   finding text among targets.
//! - `perception`: frames → targets (line finding, Tesseract, tiles, stable ids, scoring).
//! - `input`: the one actuator (enigo), the emergency stop (held keys over x11rb), the GUI lock.
//! - `safety`: the rails (pure) and the phrase rules they match text against.
//! - `record`: session records, the typed events and their sinks, the HTML report.
//! - `desk`: the tool host (`observe`/`act`/`done`), the packet, verification, confirmation.
//! - `agent`: the one policy, the loop that drives a host, the offline planner, the registry.
//! - `voice`: the local voice (a narration sink).
//! - `realtime`: the realtime models' wire formats (Gemini Live, OpenAI Realtime).
//!
//! The command line (`src/cli/`, in the binary) sits on top: one file per command.

pub mod action;
pub mod agent;
pub mod config;
pub mod desk;
pub mod geometry;
pub mod input;
pub mod keys;
pub mod perception;
pub mod private;
pub mod realtime;
pub mod record;
pub mod safety;
pub mod screen;
pub mod voice;
