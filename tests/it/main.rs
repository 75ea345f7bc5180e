//! Integration tests: the `voxdesk` binary on fixture images, real Tesseract, and — under `cargo xtask test` — a real X server with real windows.

mod a11y;
mod act;
mod architecture;
mod desktop;
mod fonts;
mod model_server;
mod narration;
mod perception;
mod private;
mod realtime;
mod run;
mod serve;
mod tasks;
mod text;
mod text_server;
mod util;
mod voice;
