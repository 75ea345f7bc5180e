//! The only module that speaks X11 protocol directly (x11rb): facts about the display that xcap does not expose — XTEST and the window manager.

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
