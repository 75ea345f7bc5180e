//! Private files and directories: voxdesk's records and lock hold screenshots of the desktop and the text typed into it, so its directories are created 0700 and its files 0600, whatever the umask.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

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

/// Open `path` for appending, creating it with mode 0600.
pub fn append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)
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
    }
}
