//! The only module that uses xcap: grabs the primary monitor as a [`Frame`] and names the focused window's application.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::frame::{Frame, Monitor};

#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("no X display: DISPLAY is not set (voxdesk drives an X11 desktop; run it inside one)")]
    NoDisplay,
    #[error(
        "this is a Wayland session: voxdesk drives X11 only (log in to an \"Xorg\"/X11 session)"
    )]
    Wayland,
    #[error("the X server did not list any monitor: {0}")]
    NoMonitor(String),
    #[error("screen capture failed: {0}")]
    Failed(String),
    #[error("screen capture returned an empty {0}x{1} image")]
    Empty(u32, u32),
}

/// Is this a Wayland session? (XWayland sets DISPLAY too, but cannot see or drive native windows.)
pub fn is_wayland(env: impl Fn(&str) -> Option<String>) -> bool {
    env("XDG_SESSION_TYPE").is_some_and(|v| v.eq_ignore_ascii_case("wayland"))
        || env("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty())
}

fn preflight() -> Result<(), CaptureError> {
    let env = |k: &str| std::env::var(k).ok();
    if is_wayland(env) {
        return Err(CaptureError::Wayland);
    }
    if env("DISPLAY").is_none_or(|d| d.is_empty()) {
        return Err(CaptureError::NoDisplay);
    }
    Ok(())
}

/// Run an xcap call, turning a panic inside it (the X connection vanishing) into an error.
fn guarded<T>(
    what: &str,
    f: impl FnOnce() -> Result<T, xcap::XCapError>,
) -> Result<T, CaptureError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(CaptureError::Failed(format!("{what}: {e}"))),
        Err(_) => Err(CaptureError::Failed(format!(
            "{what}: the X connection failed"
        ))),
    }
}

/// The primary monitor (or the first one when none is marked primary).
fn primary() -> Result<(xcap::Monitor, Monitor), CaptureError> {
    preflight()?;
    let monitors = guarded("listing monitors", xcap::Monitor::all)
        .map_err(|e| CaptureError::NoMonitor(e.to_string()))?;
    let pick = monitors
        .iter()
        .position(|m| m.is_primary().unwrap_or(false))
        .unwrap_or(0);
    let m = monitors
        .into_iter()
        .nth(pick)
        .ok_or_else(|| CaptureError::NoMonitor("no monitors".into()))?;
    let info = Monitor {
        name: m.name().unwrap_or_default(),
        origin: (
            guarded("monitor x", || m.x())?,
            guarded("monitor y", || m.y())?,
        ),
        logical: (
            guarded("monitor width", || m.width())?,
            guarded("monitor height", || m.height())?,
        ),
    };
    Ok((m, info))
}

/// Capture the primary monitor. The frame records the monitor's logical origin and size; the
/// scale is measured from the image it returned.
pub fn capture_primary() -> Result<Frame, CaptureError> {
    let (m, monitor) = primary()?;
    let image = guarded("capturing", || m.capture_image())?;
    if image.width() == 0 || image.height() == 0 {
        return Err(CaptureError::Empty(image.width(), image.height()));
    }
    Ok(Frame { image, monitor })
}

/// A capturer that keeps the monitor handle between frames (listing monitors costs round trips).
pub struct Capturer {
    monitor: xcap::Monitor,
    info: Monitor,
}

impl Capturer {
    pub fn new() -> Result<Capturer, CaptureError> {
        let (monitor, info) = primary()?;
        Ok(Capturer { monitor, info })
    }
    pub fn monitor(&self) -> &Monitor {
        &self.info
    }
    pub fn capture(&self) -> Result<Frame, CaptureError> {
        let image = guarded("capturing", || self.monitor.capture_image())?;
        if image.width() == 0 || image.height() == 0 {
            return Err(CaptureError::Empty(image.width(), image.height()));
        }
        Ok(Frame {
            image,
            monitor: self.info.clone(),
        })
    }
}

/// The focused top-level window, as the window manager reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct FocusedWindow {
    /// WM_CLASS, e.g. "XTerm", "XCalc", "firefox".
    pub app: String,
    pub title: String,
    pub pid: Option<u32>,
}

/// The focused window, `Ok(None)` when none has focus. Fails without a window manager
/// (xcap's window list needs `_NET_CLIENT_LIST_STACKING`).
pub fn focused_window() -> Result<Option<FocusedWindow>, CaptureError> {
    preflight()?;
    let windows = guarded("listing windows", xcap::Window::all)?;
    for w in windows {
        if w.is_focused().unwrap_or(false) {
            return Ok(Some(FocusedWindow {
                app: w.app_name().unwrap_or_default(),
                title: w.title().unwrap_or_default(),
                pid: w.pid().ok(),
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wayland_detection() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
        };
        assert!(is_wayland(env(&[
            ("XDG_SESSION_TYPE", "wayland"),
            ("DISPLAY", ":0")
        ])));
        assert!(is_wayland(env(&[("WAYLAND_DISPLAY", "wayland-0")])));
        assert!(!is_wayland(env(&[
            ("XDG_SESSION_TYPE", "x11"),
            ("DISPLAY", ":0")
        ])));
        assert!(!is_wayland(env(&[("WAYLAND_DISPLAY", "")])));
    }
}
