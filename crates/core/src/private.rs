//! Private files and directories: voxdesk's records and lock hold screenshots of the desktop and the text typed into it, so its directories are created 0700 and its files 0600, whatever the umask; its runtime files live in a private runtime dir, never the shared temp dir; and the crates that see keys and tokens on the wire never log them.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const DIR_MODE: u32 = 0o700;
pub const FILE_MODE: u32 = 0o600;

/// Create `dir` and its missing parents with mode 0700. `dir` itself is made 0700 even when it
/// already existed (an older voxdesk created it 0755).
pub fn dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
}

/// Create or truncate `path` with mode 0600 and write `bytes`.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Create or truncate `path` with mode 0600.
pub fn create(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    // A file that existed keeps its old mode through open(): make it private too.
    f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    Ok(f)
}

/// Create the missing parts of a directory the person named (`--narration-wav DIR`) with mode
/// 0700; one that exists is theirs and keeps its mode.
pub fn dir_keep(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// This process's user.
pub fn uid() -> u32 {
    // SAFETY: geteuid takes nothing, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

fn untrusted(path: &Path, why: String) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("{} is not trusted: {why}", path.display()),
    )
}

/// `Ok` when `path` is a directory (not a symlink) of this user's that nobody else may enter.
pub fn check_dir(path: &Path) -> std::io::Result<()> {
    let m = std::fs::symlink_metadata(path)?;
    if !m.file_type().is_dir() {
        return Err(untrusted(path, "it is not a directory".into()));
    }
    if m.uid() != uid() {
        return Err(untrusted(path, format!("it belongs to uid {}", m.uid())));
    }
    if m.mode() & 0o077 != 0 {
        return Err(untrusted(
            path,
            format!("others may use it (mode {:o})", m.mode() & 0o777),
        ));
    }
    Ok(())
}

/// voxdesk's private runtime directory, created 0700: `$XDG_RUNTIME_DIR/voxdesk`, or without one
/// `$XDG_STATE_HOME/voxdesk/run` (`~/.local/state/voxdesk/run`) — never the shared temp dir,
/// where anyone can plant a file under a name voxdesk would read or write. Refused (an error
/// that says why) when it is a symlink, another user's, or open to others.
pub fn runtime_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("voxdesk"))
        .or_else(|| {
            directories::BaseDirs::new()
                .and_then(|b| b.state_dir().map(|s| s.join("voxdesk").join("run")))
        })
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no private runtime dir: set XDG_RUNTIME_DIR (or HOME)",
            )
        })?;
    dir_keep(&dir)?;
    check_dir(&dir)?;
    Ok(dir)
}

/// The bytes of `path`, only when it is a regular file of this user's with mode 0600, not
/// reached through a symlink (a file someone else could have written is never believed).
pub fn read_own(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                untrusted(path, "it is a symlink".into())
            } else {
                e
            }
        })?;
    let m = f.metadata()?;
    if !m.file_type().is_file() {
        return Err(untrusted(path, "it is not a regular file".into()));
    }
    if m.uid() != uid() {
        return Err(untrusted(path, format!("it belongs to uid {}", m.uid())));
    }
    if m.mode() & 0o777 != FILE_MODE {
        return Err(untrusted(
            path,
            format!("its mode is {:o}, not 600", m.mode() & 0o777),
        ));
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The crates that see keys and tokens on the wire, and what they may log at most whatever
/// `VOXDESK_LOG` asks: at TRACE tungstenite prints the whole WebSocket upgrade request
/// (`x-goog-api-key`, `Authorization`) and every frame; the HTTP stack sees the daemon's bearer
/// token. Nothing of theirs at DEBUG or above names one.
pub const WIRE_CRATES: &[&str] = &[
    "tungstenite",
    "tokio_tungstenite",
    "hyper",
    "hyper_util",
    "reqwest",
    "h2",
    "http",
    "native_tls",
    "tokio_native_tls",
    "axum",
    "tower",
    "tower_http",
];

/// The cap every log line passes besides `VOXDESK_LOG`'s own filter (`src/main.rs`): the wire
/// crates at DEBUG at most, everything else as asked.
pub fn log_cap() -> tracing_subscriber::filter::Targets {
    use tracing_subscriber::filter::LevelFilter;
    WIRE_CRATES.iter().fold(
        tracing_subscriber::filter::Targets::new().with_default(LevelFilter::TRACE),
        |t, c| t.with_target(*c, LevelFilter::DEBUG),
    )
}

/// Open `path` for appending, creating it with mode 0600.
pub fn append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)
}

/// Start time of a live process (clock ticks since boot), or None when it does not exist: with
/// the pid it tells the process that wrote a lock, a record or `serve.json` from a later one
/// that reuses its pid.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_hold_whatever_the_umask() {
        let d = tempfile::tempdir().unwrap();
        let inner = d.path().join("a/b");
        std::fs::create_dir_all(d.path().join("a")).unwrap();
        std::fs::set_permissions(d.path().join("a"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        dir(&inner).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&inner), 0o700);
        let f = inner.join("x.json");
        std::fs::write(&f, b"old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&f, b"new").unwrap();
        assert_eq!(mode(&f), 0o600, "an existing file is made private");
        assert_eq!(std::fs::read(&f).unwrap(), b"new");
        drop(append(&inner.join("e.jsonl")).unwrap());
        assert_eq!(mode(&inner.join("e.jsonl")), 0o600);
        // A directory the person named keeps its mode; what is made in it is private.
        let theirs = d.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir_keep(&theirs.join("new")).unwrap();
        assert_eq!(mode(&theirs), 0o755);
        assert_eq!(mode(&theirs.join("new")), 0o700);
    }

    #[test]
    fn only_a_private_file_of_ours_is_believed() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("serve.json");
        write(&f, b"{}").unwrap();
        assert_eq!(read_own(&f).unwrap(), b"{}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_own(&f).unwrap_err().to_string();
        assert!(e.contains("mode is 644"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = d.path().join("link.json");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = read_own(&link).unwrap_err().to_string();
        assert!(e.contains("symlink"), "{e}");
        assert!(read_own(d.path()).is_err(), "a directory is not a file");
        assert_eq!(
            read_own(&d.path().join("none")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        // Another user's file (root's, when the tests do not run as root).
        if uid() != 0 {
            let e = read_own(Path::new("/etc/hostname"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("belongs to uid 0") || e.contains("mode"), "{e}");
        }
    }

    #[test]
    fn a_directory_open_to_others_or_a_symlink_is_not_private() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run");
        dir(&p).unwrap();
        check_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(check_dir(&p).unwrap_err().to_string().contains("mode 755"));
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(check_dir(&link).is_err());
    }

    #[test]
    fn the_wire_crates_never_log_at_trace() {
        use tracing::Level;
        let cap = log_cap();
        for target in [
            "tungstenite::handshake::client",
            "tokio_tungstenite",
            "hyper::proto::h1::role",
            "reqwest::connect",
        ] {
            assert!(!cap.would_enable(target, &Level::TRACE), "{target}");
            assert!(cap.would_enable(target, &Level::DEBUG), "{target}");
        }
        assert!(cap.would_enable("voxdesk", &Level::TRACE));
    }
}
