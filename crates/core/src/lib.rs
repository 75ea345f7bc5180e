//! voxdesk's core, shared by every layer above it and depending on none: the three coordinate spaces (`geometry`), what an accessibility tree says of an element (`semantic`), the `act` tool's vocabulary (`action`), the key events an action sends (`keys`), settings with their sources (`config`) and private files (`private`).
//!
//! The bottom layer: it depends on no other voxdesk crate, so nothing here can name one (Cargo
//! refuses the `use`):
//! ```compile_fail
//! use voxdesk_perception::Perceiver;
//! ```

pub mod action;
pub mod config;
pub mod geometry;
pub mod keys;
pub mod private;
pub mod semantic;
