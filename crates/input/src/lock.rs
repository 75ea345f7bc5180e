//! The GUI lock: one voxdesk drives one screen. An owner record (pid, process start time, lease expiry) that the owner renews; a dead or expired owner is recovered, a live one never stolen.
//!
//! Why not `flock`: the kernel would free it on death, but never from a hung owner whose lease
//! lapsed, and it says nothing about *who* holds it. The check-and-replace is serialised by a
//! short `flock` on a guard file so two recoverers cannot both win.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// Process start time in clock ticks since boot (/proc/PID/stat field 22): tells a reused pid apart.
    pub start: u64,
    /// Lease end, ms since the Unix epoch.
    pub expires_ms: u64,
    pub display: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another voxdesk (pid {}) is driving display {} (lease valid for {} ms more); only one may at a time", .0.pid, .0.display, .1)]
    Held(Owner, u64),
    #[error("GUI lock {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A process's start time (`voxdesk_core::private::process_start`), re-exported where the lock
/// uses it.
pub use voxdesk_core::private::process_start;

/// Is the recorded owner still the live process that took the lock, within its lease?
pub fn is_live(o: &Owner, now: u64) -> bool {
    o.expires_ms > now && process_start(o.pid) == Some(o.start)
}

/// Where the lock for `display` lives: the private runtime dir (`$XDG_RUNTIME_DIR/voxdesk/`,
/// never the shared temp dir, where another user could plant a lock that refuses every desk).
pub fn lock_path(display: &str) -> std::io::Result<PathBuf> {
    let safe: String = display
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    Ok(voxdesk_core::private::runtime_dir()?.join(format!("gui-{safe}.lock")))
}

/// A held lock; renewed on a thread while alive, removed on drop.
pub struct GuiLock {
    path: PathBuf,
    me: Owner,
    stop: Arc<AtomicBool>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

struct Guard(File);
impl Guard {
    fn take(path: &Path) -> Result<Guard, LockError> {
        let io = |e| LockError::Io {
            path: path.display().to_string(),
            source: e,
        };
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(voxdesk_core::private::FILE_MODE)
            .open(path)
            .map_err(io)?;
        // SAFETY: flock on an fd we own; blocks only for another process's check-and-replace.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io(std::io::Error::last_os_error()));
        }
        Ok(Guard(f))
    }
}
impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: unlocking our own fd.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

fn write_owner(path: &Path, o: &Owner) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = voxdesk_core::private::create(&tmp)?;
    f.write_all(
        serde_json::to_string(o)
            .map_err(std::io::Error::other)?
            .as_bytes(),
    )?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn read_owner(path: &Path) -> Option<Owner> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

impl GuiLock {
    /// Take the lock for `display` with a lease of `lease_ms`, renewed every third of it.
    pub fn acquire(display: &str, lease_ms: u64) -> Result<GuiLock, LockError> {
        let path = lock_path(display).map_err(|e| LockError::Io {
            path: "the private runtime dir".into(),
            source: e,
        })?;
        Self::acquire_at(&path, display, lease_ms)
    }

    pub fn acquire_at(path: &Path, display: &str, lease_ms: u64) -> Result<GuiLock, LockError> {
        let io = |e| LockError::Io {
            path: path.display().to_string(),
            source: e,
        };
        if let Some(dir) = path.parent() {
            voxdesk_core::private::dir(dir).map_err(io)?;
        }
        let pid = std::process::id();
        let me = Owner {
            pid,
            start: process_start(pid).unwrap_or(0),
            expires_ms: now_ms() + lease_ms,
            display: display.to_string(),
        };
        {
            let _g = Guard::take(&path.with_extension("guard"))?;
            let now = now_ms();
            if let Some(o) = read_owner(path) {
                if o.pid != pid && is_live(&o, now) {
                    let left = o.expires_ms.saturating_sub(now);
                    return Err(LockError::Held(o, left));
                }
                // Dead, expired, or ours: recovered.
                if o.pid != pid {
                    tracing::warn!("recovering the GUI lock from stale owner pid {}", o.pid);
                }
            }
            write_owner(path, &me).map_err(io)?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let renewer = {
            let (path, me, stop) = (path.to_path_buf(), me.clone(), stop.clone());
            std::thread::Builder::new()
                .name("voxdesk-lock".into())
                .spawn(move || {
                    let every = Duration::from_millis((lease_ms / 3).max(50));
                    let mut slept = Duration::ZERO;
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(20));
                        slept += Duration::from_millis(20);
                        if slept >= every {
                            slept = Duration::ZERO;
                            let Ok(_g) = Guard::take(&path.with_extension("guard")) else {
                                continue;
                            };
                            // Renew only while the record is still ours.
                            if read_owner(&path)
                                .is_some_and(|o| o.pid == me.pid && o.start == me.start)
                            {
                                let _ = write_owner(
                                    &path,
                                    &Owner {
                                        expires_ms: now_ms() + lease_ms,
                                        ..me.clone()
                                    },
                                );
                            }
                        }
                    }
                })
                .ok()
        };
        Ok(GuiLock {
            path: path.to_path_buf(),
            me,
            stop,
            renewer,
        })
    }

    pub fn owner(&self) -> &Owner {
        &self.me
    }
}

impl Drop for GuiLock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.renewer.take() {
            let _ = h.join();
        }
        if let Ok(_g) = Guard::take(&self.path.with_extension("guard")) {
            if read_owner(&self.path)
                .is_some_and(|o| o.pid == self.me.pid && o.start == self.me.start)
            {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_owner_refuses_dead_or_expired_is_recovered() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("gui.lock");
        let me = std::process::id();
        // A live owner (pid 1 is always alive) with a fresh lease: refused, and says who.
        let init = Owner {
            pid: 1,
            start: process_start(1).unwrap(),
            expires_ms: now_ms() + 60_000,
            display: ":9".into(),
        };
        write_owner(&p, &init).unwrap();
        match GuiLock::acquire_at(&p, ":9", 1000) {
            Err(LockError::Held(o, left)) => {
                assert_eq!(o.pid, 1);
                assert!(left > 50_000);
            }
            other => panic!("expected Held, got {:?}", other.map(|l| l.owner().clone())),
        }
        // Expired lease: recovered.
        write_owner(
            &p,
            &Owner {
                expires_ms: now_ms() - 1,
                ..init.clone()
            },
        )
        .unwrap();
        let l = GuiLock::acquire_at(&p, ":9", 1000).unwrap();
        assert_eq!(read_owner(&p).unwrap().pid, me);
        drop(l);
        assert!(!p.exists(), "released on drop");
        // A pid that no longer runs (or was reused: start time differs): recovered.
        write_owner(
            &p,
            &Owner {
                start: init.start + 12345,
                ..init.clone()
            },
        )
        .unwrap();
        let _l = GuiLock::acquire_at(&p, ":9", 1000).unwrap();
        // Garbage in the file: recovered, not a crash.
        std::fs::write(&p, "{{{").unwrap();
        assert!(GuiLock::acquire_at(&p, ":9", 1000).is_ok());
    }

    #[test]
    fn renewal_extends_the_lease() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("gui.lock");
        let l = GuiLock::acquire_at(&p, ":9", 300).unwrap();
        let first = read_owner(&p).unwrap().expires_ms;
        std::thread::sleep(Duration::from_millis(400));
        let later = read_owner(&p).unwrap().expires_ms;
        assert!(later > first, "renewed: {first} -> {later}");
        drop(l);
    }
}
