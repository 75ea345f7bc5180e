//! The only module that speaks X11 protocol directly (x11rb) besides capture and the stop watcher: facts about the display that xcap does not expose — XTEST, the window manager, and the windows shown (what tells a menu or dialog that opened).

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt};

/// What the X server says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct DisplayFacts {
    pub display: String,
    pub screen: (u16, u16),
    /// The XTEST extension (synthetic input) is present.
    pub xtest: bool,
    /// The EWMH window manager's name, if one runs.
    pub window_manager: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DisplayError {
    #[error("no X display: DISPLAY is not set")]
    NoDisplay,
    #[error("cannot reach the X server at {display}: {reason}")]
    Unreachable { display: String, reason: String },
    #[error("the X server at {display} failed a request: {reason}")]
    Request { display: String, reason: String },
}

/// Connect to `$DISPLAY` and read the facts voxdesk needs.
pub fn probe() -> Result<DisplayFacts, DisplayError> {
    let display = std::env::var("DISPLAY")
        .ok()
        .filter(|d| !d.is_empty())
        .ok_or(DisplayError::NoDisplay)?;
    let (conn, screen_num) =
        x11rb::connect(Some(&display)).map_err(|e| DisplayError::Unreachable {
            display: display.clone(),
            reason: e.to_string(),
        })?;
    let req = |e: &dyn std::fmt::Display| DisplayError::Request {
        display: display.clone(),
        reason: e.to_string(),
    };
    let screen = &conn.setup().roots[screen_num];
    let size = (screen.width_in_pixels, screen.height_in_pixels);
    let root = screen.root;
    let xtest = conn
        .query_extension(b"XTEST")
        .map_err(|e| req(&e))?
        .reply()
        .map_err(|e| req(&e))?
        .present;
    let window_manager = wm_name(&conn, root).map_err(|e| req(&e))?;
    Ok(DisplayFacts {
        display,
        screen: size,
        xtest,
        window_manager,
    })
}

/// EWMH: the root's `_NET_SUPPORTING_WM_CHECK` names a child window whose `_NET_WM_NAME` is the WM.
fn wm_name(
    conn: &impl Connection,
    root: u32,
) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let atom = |name: &[u8]| -> Result<u32, Box<dyn std::error::Error>> {
        Ok(conn.intern_atom(false, name)?.reply()?.atom)
    };
    let check = atom(b"_NET_SUPPORTING_WM_CHECK")?;
    let reply = conn
        .get_property(false, root, check, AtomEnum::WINDOW, 0, 1)?
        .reply()?;
    let Some(child) = reply.value32().and_then(|mut v| v.next()) else {
        return Ok(None);
    };
    let net_wm_name = atom(b"_NET_WM_NAME")?;
    let utf8 = atom(b"UTF8_STRING")?;
    let name = match conn
        .get_property(false, child, net_wm_name, utf8, 0, 256)?
        .reply()
    {
        Ok(r) => String::from_utf8_lossy(&r.value).into_owned(),
        // The check window can be gone between the two requests (WM restarting): no WM now.
        Err(_) => return Ok(None),
    };
    Ok(Some(if name.is_empty() {
        "unnamed window manager".into()
    } else {
        name
    }))
}

/// The keyboard layout the X server has now, as the actuator will meet it.
pub fn keymap() -> Result<voxdesk_core::keys::Keymap, DisplayError> {
    let display = std::env::var("DISPLAY")
        .ok()
        .filter(|d| !d.is_empty())
        .ok_or(DisplayError::NoDisplay)?;
    let req = |e: &dyn std::fmt::Display| DisplayError::Request {
        display: display.clone(),
        reason: e.to_string(),
    };
    let (conn, _) = x11rb::connect(Some(&display)).map_err(|e| DisplayError::Unreachable {
        display: display.clone(),
        reason: e.to_string(),
    })?;
    let setup = conn.setup();
    let (min, max) = (setup.min_keycode, setup.max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .map_err(|e| req(&e))?
        .reply()
        .map_err(|e| req(&e))?;
    Ok(voxdesk_core::keys::Keymap::from_table(
        &map.keysyms,
        map.keysyms_per_keycode as usize,
    ))
}

/// A window the X server shows: a top-level child of the root (a window manager's frame, a
/// menu, a tooltip), in root coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    pub id: u32,
    /// Override-redirect: a menu, a popup or a tooltip the window manager does not frame.
    pub popup: bool,
    pub x: i32,
    pub y: i32,
    pub w: u32,
    pub h: u32,
}

/// The windows on screen, read over a connection of its own: what tells a menu or a dialog that
/// opened from text that merely changed.
pub struct Windows {
    conn: x11rb::rust_connection::RustConnection,
    root: u32,
}

impl Windows {
    pub fn open() -> Result<Windows, DisplayError> {
        let display = std::env::var("DISPLAY")
            .ok()
            .filter(|d| !d.is_empty())
            .ok_or(DisplayError::NoDisplay)?;
        let (conn, n) = x11rb::connect(Some(&display)).map_err(|e| DisplayError::Unreachable {
            display: display.clone(),
            reason: e.to_string(),
        })?;
        let root = conn.setup().roots[n].root;
        Ok(Windows { conn, root })
    }

    /// Every viewable top-level window, bottom to top.
    pub fn list(&self) -> Result<Vec<Shown>, DisplayError> {
        let req = |e: &dyn std::fmt::Display| DisplayError::Request {
            display: std::env::var("DISPLAY").unwrap_or_default(),
            reason: e.to_string(),
        };
        let tree = self
            .conn
            .query_tree(self.root)
            .map_err(|e| req(&e))?
            .reply()
            .map_err(|e| req(&e))?;
        // Send every request before reading a reply: one round trip, not two per window.
        let mut cookies = Vec::with_capacity(tree.children.len());
        for &w in &tree.children {
            cookies.push((
                w,
                self.conn.get_window_attributes(w).map_err(|e| req(&e))?,
                self.conn.get_geometry(w).map_err(|e| req(&e))?,
            ));
        }
        let mut out = Vec::new();
        for (id, attrs, geom) in cookies {
            // A window can vanish between the two requests: then it is not shown.
            let (Ok(a), Ok(g)) = (attrs.reply(), geom.reply()) else {
                continue;
            };
            if a.map_state != x11rb::protocol::xproto::MapState::VIEWABLE {
                continue;
            }
            out.push(Shown {
                id,
                popup: a.override_redirect,
                x: g.x as i32,
                y: g.y as i32,
                w: g.width as u32,
                h: g.height as u32,
            });
        }
        Ok(out)
    }
}

/// Windows in `after` that `before` did not show, big enough to be a menu or a dialog rather
/// than a one-line tooltip or a cursor (at least 40x36: a menu of one item with its margins),
/// in words ("a menu or popup at (120, 40), 200x300").
pub fn opened(before: &[Shown], after: &[Shown]) -> Vec<String> {
    after
        .iter()
        .filter(|w| w.w >= 40 && w.h >= 36 && !before.iter().any(|b| b.id == w.id))
        .map(|w| {
            format!(
                "{} at ({}, {}), {}x{}",
                if w.popup {
                    "a menu or popup"
                } else {
                    "a new window"
                },
                w.x,
                w.y,
                w.w,
                w.h
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_windows_big_enough_to_be_a_menu_or_dialog_opened() {
        let w = |id, popup, w, h| Shown {
            id,
            popup,
            x: 10,
            y: 20,
            w,
            h,
        };
        let before = [w(1, false, 800, 600)];
        let after = [
            w(1, false, 800, 600),
            w(2, true, 200, 300),
            w(3, true, 30, 16),
            w(4, false, 400, 200),
        ];
        assert_eq!(
            opened(&before, &after),
            [
                "a menu or popup at (10, 20), 200x300",
                "a new window at (10, 20), 400x200"
            ]
        );
        assert!(
            opened(&after, &before).is_empty(),
            "a window closing opens nothing"
        );
    }
}
