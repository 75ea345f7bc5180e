//! The desk's eyes, one device handle: a frame of the screen, its targets, a region read as one line, the focused window and the windows shown. The real one owns the capturer, the OCR engines and the window list; the act pipeline's tests hand the desk a fake.

use voxdesk_core::config::Settings;
use voxdesk_core::geometry::Rect;
use voxdesk_perception::engine::{self, EngineError};
use voxdesk_perception::{Perceiver, Perception};
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
    /// The targets of `frame` (`full`: read every label, not only what changed since the last).
    fn perceive(&mut self, frame: &Frame, full: bool) -> Result<Perception, LookError>;
    /// The text in `region` of `frame`, read as one line (verification's second look).
    fn read_line(&self, frame: &Frame, region: Rect) -> Result<String, LookError>;
    /// The focused window, when it can be told.
    fn focused(&mut self) -> Option<FocusedWindow>;
    /// The windows shown (a menu or dialog that opened), when they can be listed.
    fn windows(&self) -> Option<Vec<Shown>>;
}

/// The real screen: capture (xcap), perception (the OCR engines and their cache) and the
/// window list (x11rb).
pub struct ScreenEyes {
    capturer: Capturer,
    perceiver: Perceiver,
    /// Without it only a menu drawn inside a window can be classed "something else opened".
    windows: Option<Windows>,
}

impl ScreenEyes {
    pub fn open(settings: &Settings) -> Result<ScreenEyes, DeskError> {
        let capturer = Capturer::new()?;
        let mut perceiver = Perceiver::new(engine::default_workers())?;
        perceiver.debug_to(settings.perception.debug_dir.clone());
        Ok(ScreenEyes {
            capturer,
            perceiver,
            windows: Windows::open().ok(),
        })
    }
}

impl Eyes for ScreenEyes {
    fn capture(&mut self) -> Result<Frame, LookError> {
        Ok(self.capturer.capture()?)
    }

    fn perceive(&mut self, frame: &Frame, full: bool) -> Result<Perception, LookError> {
        let (w, h) = frame.size();
        Ok(self.perceiver.perceive(frame.image.as_raw(), w, h, full)?)
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
}
