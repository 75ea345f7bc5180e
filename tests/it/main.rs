//! Integration tests: the `voxdesk` binary on fixture images, real Tesseract, and — under `cargo xtask test` — a real X server with real windows.

mod act;
mod architecture;
mod desktop;
mod fonts;
mod narration;
mod perception;
mod run;
mod tasks;
mod util;
