//! The desk's eyes, one device handle: a frame of the screen, its targets (OCR fused with the focused window's accessibility tree), a region read as one line, the focused window and the windows shown. The real one owns the capturer, the OCR engines, the accessibility reader and the window list; the act pipeline's tests hand the desk a fake.

use voxdesk_a11y::{Limits, Reader};
use voxdesk_core::config::Settings;
use voxdesk_core::geometry::Rect;
use voxdesk_perception::engine::{self, EngineError};
use voxdesk_perception::{Perceiver, Perception, Target};
use voxdesk_screen::capture::{self, CaptureError, Capturer, FocusedWindow};
use voxdesk_screen::desktop::{Shown, Windows};
use voxdesk_screen::frame::Frame;

use super::DeskError;

/// Why a look failed.
#[derive(Debug, thiserror::Error)]
pub enum LookError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(transparent)]
    Perception(#[from] EngineError),
    /// A fake screen's own failure (tests).
    #[error("{0}")]
    Other(String),
}

/// What the desk looks with.
pub trait Eyes {
    /// One frame of the screen.
    fn capture(&mut self) -> Result<Frame, LookError>;
    /// The targets of `frame` (`full`: read every label, not only what changed since the last),
    /// fused with the accessibility tree of `window` (the focused one) when it has one.
    fn perceive(
        &mut self,
        frame: &Frame,
        full: bool,
        window: Option<&FocusedWindow>,
    ) -> Result<Perception, LookError>;
    /// The text in `region` of `frame`, read as one line (verification's second look).
    fn read_line(&self, frame: &Frame, region: Rect) -> Result<String, LookError>;
    /// The focused window, when it can be told.
    fn focused(&mut self) -> Option<FocusedWindow>;
    /// The windows shown (a menu or dialog that opened), when they can be listed.
    fn windows(&self) -> Option<Vec<Shown>>;
    /// Take `targets` as the last observation's (`voxdesk look`'s, from another process), so
    /// the next perception keeps their ids for the same controls.
    fn adopt(&mut self, _targets: Vec<Target>) {}
}

/// The real screen: capture (xcap), perception (the OCR engines and their cache) and the
/// window list (x11rb).
pub struct ScreenEyes {
    capturer: Capturer,
    perceiver: Perceiver,
    /// Without it only a menu drawn inside a window can be classed "something else opened".
    windows: Option<Windows>,
    /// The accessibility reader, or why there is none.
    a11y: Result<Reader, String>,
}

/// Why a window's targets come from OCR alone.
fn no_tree_why(window: &FocusedWindow) -> String {
    let browser = [
        "chromium", "chrome", "electron", "code", "slack", "discord", "brave",
    ]
    .iter()
    .any(|b| window.app.to_lowercase().contains(b));
    if browser {
        format!("{} exposes no accessibility tree: it was started without accessibility (start it with --force-renderer-accessibility, or turn on the desktop's assistive technologies: org.a11y.Status IsEnabled)", window.app)
    } else {
        format!("{} exposes no accessibility tree", window.app)
    }
}

/// Screen pixels (the tree's) to capture pixels (the frame's).
fn to_capture(r: &Rect, frame: &Frame) -> Rect {
    let s = frame.scale();
    let (ox, oy) = frame.monitor.origin;
    Rect::new(
        ((r.x - ox) as f64 * s).round() as i32,
        ((r.y - oy) as f64 * s).round() as i32,
        (r.w as f64 * s).round() as i32,
        (r.h as f64 * s).round() as i32,
    )
}

impl ScreenEyes {
    pub fn open(settings: &Settings) -> Result<ScreenEyes, DeskError> {
        let capturer = Capturer::new()?;
        let mut perceiver = Perceiver::new(engine::default_workers())?;
        perceiver.debug_to(settings.perception.debug_dir.clone());
        if settings.perception.reader == voxdesk_core::config::Reader::Learned {
            perceiver.use_learned(settings.models_dir.as_deref(), engine::default_workers())?;
        }
        let a11y = if settings.perception.accessibility {
            Reader::open(Limits {
                budget: std::time::Duration::from_millis(settings.perception.tree_budget_ms),
                ..Limits::default()
            })
            .map_err(|e| e.to_string())
        } else {
            Err("accessibility is off (perception.accessibility = false)".into())
        };
        if let Err(why) = &a11y {
            tracing::info!("targets from OCR alone: {why}");
        }
        Ok(ScreenEyes {
            capturer,
            perceiver,
            windows: Windows::open().ok(),
            a11y,
        })
    }
}

impl Eyes for ScreenEyes {
    fn capture(&mut self) -> Result<Frame, LookError> {
        Ok(self.capturer.capture()?)
    }

    fn perceive(
        &mut self,
        frame: &Frame,
        full: bool,
        window: Option<&FocusedWindow>,
    ) -> Result<Perception, LookError> {
        let (w, h) = frame.size();
        let (tree, why) = match (&mut self.a11y, window) {
            (Err(why), _) => (None, why.clone()),
            (Ok(_), None) => (None, "no window has the focus".to_string()),
            (Ok(reader), Some(fw)) => {
                let win = voxdesk_a11y::Window {
                    pid: fw.pid,
                    title: fw.title.clone(),
                    rect: fw
                        .rect
                        .map(|(x, y, ww, hh)| Rect::new(x, y, ww as i32, hh as i32)),
                };
                match reader.tree(&win) {
                    Ok(Some(mut t)) => {
                        for n in &mut t.nodes {
                            n.rect = to_capture(&n.rect, frame);
                        }
                        for d in &mut t.dialogs {
                            d.rect = to_capture(&d.rect, frame);
                        }
                        (Some(t), String::new())
                    }
                    Ok(None) => (None, no_tree_why(fw)),
                    Err(e) => {
                        tracing::info!("the accessibility tree of {}: {e}", fw.app);
                        (
                            None,
                            format!(
                                "the accessibility tree of {} could not be read: {e}",
                                fw.app
                            ),
                        )
                    }
                }
            }
        };
        let mut p = self
            .perceiver
            .perceive_with(frame.image.as_raw(), w, h, full, tree)?;
        p.no_tree = (!why.is_empty()).then_some(why);
        Ok(p)
    }

    fn read_line(&self, frame: &Frame, region: Rect) -> Result<String, LookError> {
        let (w, h) = frame.size();
        Ok(self
            .perceiver
            .read_line(frame.image.as_raw(), w, h, region)?)
    }

    fn focused(&mut self) -> Option<FocusedWindow> {
        capture::focused_window().ok().flatten()
    }

    fn windows(&self) -> Option<Vec<Shown>> {
        self.windows.as_ref().and_then(|w| w.list().ok())
    }
    fn adopt(&mut self, targets: Vec<Target>) {
        self.perceiver.adopt(targets);
    }
}
