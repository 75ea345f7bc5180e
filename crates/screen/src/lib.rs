//! The screen: capturing it, the frame and its measured monitor, read-only X11 facts, the picture a model sees, and finding text among its targets.

pub mod capture;
pub mod desktop;
pub mod frame;
pub mod picture;
pub mod text;
