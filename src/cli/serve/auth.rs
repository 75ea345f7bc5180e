//! The daemon's one secret: a token generated on first start into the config dir (0600), and the check every request passes — `Authorization: Bearer <token>`, or `?token=` on the event stream only (a browser's EventSource cannot set headers), compared in constant time.

use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;

/// `$XDG_CONFIG_HOME/voxdesk/serve.token`.
pub fn token_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "voxdesk").map(|d| d.config_dir().join("serve.token"))
}

/// The token at `path`, created (32 random bytes, hex) when there is none. An existing token
/// file is made private again whatever its mode was.
pub fn load_or_create(path: &Path) -> std::io::Result<String> {
    if let Ok(t) = std::fs::read_to_string(path) {
        let t = t.trim().to_string();
        if t.len() >= 32 {
            std::fs::set_permissions(
                path,
                std::os::unix::fs::PermissionsExt::from_mode(voxdesk_core::private::FILE_MODE),
            )?;
            return Ok(t);
        }
    }
    if let Some(dir) = path.parent() {
        voxdesk_core::private::dir(dir)?;
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    voxdesk_core::private::write(path, format!("{token}\n").as_bytes())?;
    Ok(token)
}

/// Where a request's credential came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /observe/events`: the header or `?token=`.
    Stream,
    /// Everything else: the header only.
    Other,
}

/// Does this request carry the token? `header`: the Authorization header's value; `query`: the
/// raw query string.
pub fn allowed(token: &str, header: Option<&str>, query: Option<&str>, route: Route) -> bool {
    let same = |given: &str| bool::from(given.as_bytes().ct_eq(token.as_bytes()));
    if let Some(h) = header {
        if let Some(given) = h.strip_prefix("Bearer ") {
            return same(given.trim());
        }
        return false;
    }
    if route == Route::Stream {
        if let Some(q) = query {
            for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
                if k == "token" {
                    return same(&v);
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn only_the_token_and_only_where_it_may_be_given() {
        let bearer = format!("Bearer {T}");
        let q = format!("token={T}");
        let cases: &[(Option<&str>, Option<&str>, Route, bool)] = &[
            (Some(&bearer), None, Route::Other, true),
            (Some(&bearer), None, Route::Stream, true),
            (None, None, Route::Other, false),
            (Some("Bearer wrong"), None, Route::Other, false),
            (Some(T), None, Route::Other, false),
            (Some("Basic abc"), None, Route::Stream, false),
            (None, Some(&q), Route::Stream, true),
            // The query token is for the event stream only.
            (None, Some(&q), Route::Other, false),
            (None, Some("token=nope"), Route::Stream, false),
            (None, Some("x=1"), Route::Stream, false),
            // A wrong header is not rescued by a right query.
            (Some("Bearer wrong"), Some(&q), Route::Stream, false),
        ];
        for (i, (h, q, r, want)) in cases.iter().enumerate() {
            assert_eq!(allowed(T, *h, *q, *r), *want, "case {i}");
        }
    }

    #[test]
    fn the_token_is_made_once_and_kept_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("cfg").join("serve.token");
        let a = load_or_create(&p).unwrap();
        assert_eq!(a.len(), 64);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(load_or_create(&p).unwrap(), a);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
