//! Each terminal window's command line as voxdesk's keys left it, kept beside the GUI lock (0600) so the next process on this display goes on from there; unreadable means every line unknown.

use std::path::PathBuf;

use voxdesk_safety::terminal::Line;

/// Each terminal window's command line, kept beside the GUI lock so the next voxdesk on this
/// display (another `act`, a new session) goes on from where this one's keys left it: a command
/// typed by one process and run by the next is still judged whole. A file that cannot be read
/// makes every terminal's line unknown (Return then needs a yes), never an empty one.
pub(crate) struct Lines {
    path: PathBuf,
    by_window: std::collections::BTreeMap<String, Line>,
    /// The line of a window not in the file: empty, or unknown when the file was unreadable.
    unseen: Line,
}

impl Lines {
    /// Lines kept in memory only (no file): a test's, and where `load` starts.
    pub(crate) fn memory() -> Lines {
        Lines {
            path: PathBuf::new(),
            by_window: Default::default(),
            unseen: Line::default(),
        }
    }

    pub(crate) fn load(display: &str) -> Lines {
        let mut lines = Lines::memory();
        match voxdesk_input::lock::lock_path(display) {
            Ok(p) => lines.path = p.with_extension("lines.json"),
            Err(e) => {
                tracing::warn!("no private runtime dir ({e}); every terminal line is unknown");
                lines.unseen.lose();
                return lines;
            }
        }
        // Believed only when it is ours and private, like serve.json.
        match voxdesk_core::private::read_own(&lines.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(
                    "{}: {e}; every terminal line is unknown",
                    lines.path.display()
                );
                lines.unseen.lose();
            }
            Ok(bytes) => match serde_json::from_slice::<
                std::collections::BTreeMap<String, Option<String>>,
            >(&bytes)
            {
                Ok(m) => {
                    lines.by_window = m.into_iter().map(|(w, t)| (w, Line::restored(t))).collect();
                }
                Err(e) => {
                    tracing::warn!(
                        "{}: {e}; every terminal line is unknown",
                        lines.path.display()
                    );
                    lines.unseen.lose();
                }
            },
        }
        lines
    }

    pub(crate) fn get(&self, window: &str) -> &Line {
        self.by_window.get(window).unwrap_or(&self.unseen)
    }

    pub(crate) fn set(&mut self, window: &str, line: Line) {
        // An empty line is what a window not in the file has: only the others are kept (X
        // reuses window ids; a stale entry only errs towards a yes).
        if line.text() == Some("") && self.unseen.text() == Some("") {
            self.by_window.remove(window);
        } else {
            self.by_window.insert(window.to_string(), line);
        }
        let saved: std::collections::BTreeMap<&str, Option<&str>> = self
            .by_window
            .iter()
            .map(|(w, l)| (w.as_str(), l.text()))
            .collect();
        if self.path.as_os_str().is_empty() {
            return;
        }
        let written = self
            .path
            .parent()
            .map_or(Ok(()), voxdesk_core::private::dir)
            .and_then(|_| {
                let tmp = self.path.with_extension("tmp");
                voxdesk_core::private::write(
                    &tmp,
                    &serde_json::to_vec(&saved).unwrap_or_default(),
                )?;
                std::fs::rename(&tmp, &self.path)
            });
        if let Err(e) = written {
            tracing::warn!("{}: {e}", self.path.display());
        }
    }
}
