//! Session records: `$XDG_DATA_HOME/voxdesk/sessions/<id>/` (private: 0700, files 0600) with `session.json` rewritten atomically after every step and a PNG per step beside `events.jsonl`; a session left running by a dead process reads back as aborted.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use voxdesk_core::private;
use voxdesk_core::private::process_start;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Done,
    Failed,
    Aborted,
    Stopped,
}

impl Status {
    /// Its name in records, events and the command line ("done").
    pub fn name(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Done => "done",
            Status::Failed => "failed",
            Status::Aborted => "aborted",
            Status::Stopped => "stopped",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a step's effect was judged: the verdict's name in records and events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verification {
    /// The expected change was seen.
    Verified,
    /// Nothing changed, or the check failed.
    Failed,
    /// The screen changed, but not as expected.
    Unconfirmed,
    /// Nothing could be checked (nothing ran, or nothing was expected).
    Unverified,
}

impl Verification {
    pub fn name(self) -> &'static str {
        match self {
            Verification::Verified => "verified",
            Verification::Failed => "failed",
            Verification::Unconfirmed => "unconfirmed",
            Verification::Unverified => "unverified",
        }
    }
}

/// What the rails made of a step: its `rails` field in records and events. Serialized as one
/// string: "approved", "recorded" (observe mode), "confirmation" (no yes), "not planned", or
/// the refusing rule's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RailsVerdict {
    Approved,
    Recorded,
    Confirmation,
    NotPlanned,
    Refused(String),
}

impl RailsVerdict {
    pub fn name(&self) -> &str {
        match self {
            RailsVerdict::Approved => "approved",
            RailsVerdict::Recorded => "recorded",
            RailsVerdict::Confirmation => "confirmation",
            RailsVerdict::NotPlanned => "not planned",
            RailsVerdict::Refused(rule) => rule,
        }
    }

    fn parse(s: &str) -> RailsVerdict {
        match s {
            "approved" => RailsVerdict::Approved,
            "recorded" => RailsVerdict::Recorded,
            "confirmation" => RailsVerdict::Confirmation,
            "not planned" => RailsVerdict::NotPlanned,
            rule => RailsVerdict::Refused(rule.to_string()),
        }
    }
}

impl std::fmt::Display for RailsVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for RailsVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for RailsVerdict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(RailsVerdict::parse(&String::deserialize(d)?))
    }
}

/// Milliseconds spent in each phase of a step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    pub capture: f64,
    pub ocr: f64,
    pub plan: f64,
    pub act: f64,
    pub settle: f64,
    pub verify: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub index: usize,
    pub observation_id: String,
    /// The actions as the planner gave them (the `act` tool's JSON).
    pub actions: serde_json::Value,
    /// "approved", "recorded" (observe mode), or the refusing rule.
    pub rails: RailsVerdict,
    pub verification: Verification,
    pub detail: String,
    pub timings_ms: PhaseTimes,
    /// Screenshot files, relative to the session directory.
    pub screenshot: Option<String>,
    pub verify_screenshot: Option<String>,
    /// Where clicks landed, in model-picture pixels (for the report).
    #[serde(default)]
    pub click_points: Vec<[f64; 2]>,
    /// The plan in words, as narrated ("Clicking Save").
    #[serde(default)]
    pub plan: String,
    /// The model picture's size, and the part of it worth looking at (every target and click,
    /// with a margin) as [x, y, w, h], both in model-picture pixels: the report zooms to it.
    #[serde(default)]
    pub picture: Option<[f64; 2]>,
    #[serde(default)]
    pub focus: Option<[f64; 4]>,
    /// The model's tokens spent planning this step (turn-based models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
}

/// Tokens a model read and wrote, and in how many requests, as its server counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub requests: u64,
}

impl Tokens {
    pub fn add(&mut self, input: u64, output: u64) {
        self.input += input;
        self.output += output;
        self.requests += 1;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    pub id: String,
    pub status: Status,
    pub task: String,
    pub provider: String,
    pub model: String,
    pub prompt_version: String,
    pub mode: String,
    pub pid: u32,
    /// Process start time (clock ticks), to tell a reused pid apart.
    pub pid_start: u64,
    pub started_ms: u64,
    pub ended_ms: Option<u64>,
    pub summary: String,
    pub steps: Vec<StepRecord>,
    /// The model's tokens over the whole session (turn-based models; zero otherwise).
    #[serde(default)]
    pub tokens: Tokens,
}

impl SessionRecord {
    /// Refused as a whole: nothing was ever approved, and a rule (or a missing yes) refused a
    /// step (observe mode's recorded steps and unplanned steps refuse nothing).
    pub fn refused_throughout(&self) -> bool {
        self.steps.iter().all(|s| s.rails != RailsVerdict::Approved)
            && self.steps.iter().any(|s| {
                matches!(
                    s.rails,
                    RailsVerdict::Refused(_) | RailsVerdict::Confirmation
                )
            })
    }

    /// Verified steps ÷ steps that were checked; `None` ("n/a") when nothing was checked.
    pub fn verified_rate(&self) -> Option<f64> {
        let checked: Vec<&StepRecord> = self
            .steps
            .iter()
            .filter(|s| s.verification != Verification::Unverified)
            .collect();
        (!checked.is_empty()).then(|| {
            checked
                .iter()
                .filter(|s| s.verification == Verification::Verified)
                .count() as f64
                / checked.len() as f64
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session records at {path}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a session record: {message}")]
    Parse { path: String, message: String },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> SessionError + '_ {
    move |e| SessionError::Io {
        path: path.display().to_string(),
        source: e,
    }
}

/// `$XDG_DATA_HOME/voxdesk/sessions`.
pub fn sessions_dir() -> PathBuf {
    directories::ProjectDirs::from("", "", "voxdesk")
        .map(|d| d.data_dir().join("sessions"))
        .unwrap_or_else(|| std::env::temp_dir().join("voxdesk-sessions"))
}

/// Write `bytes` to `path` so that a reader sees the old or the new file, never half of one:
/// write a temporary file, fsync it, rename it over, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut f = private::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// A session being recorded by this process.
pub struct Recorder {
    pub dir: PathBuf,
    pub record: SessionRecord,
}

impl Recorder {
    /// Create the session's directory (private) and its first `session.json`.
    pub fn create(
        root: &Path,
        task: &str,
        provider: &str,
        model: &str,
        prompt_version: &str,
        mode: &str,
    ) -> Result<Recorder, SessionError> {
        let now = now_ms();
        let id = format!("{}-{:x}", now, std::process::id());
        let dir = root.join(&id);
        // voxdesk's own data directory holds nothing but records: private as well.
        if let Some(parent) = root.parent().filter(|p| p.ends_with("voxdesk")) {
            private::dir(parent).map_err(io(parent))?;
        }
        private::dir(root).map_err(io(root))?;
        private::dir(&dir).map_err(io(&dir))?;
        let pid = std::process::id();
        let record = SessionRecord {
            id,
            status: Status::Running,
            task: task.into(),
            provider: provider.into(),
            model: model.into(),
            prompt_version: prompt_version.into(),
            mode: mode.into(),
            pid,
            pid_start: process_start(pid).unwrap_or(0),
            started_ms: now,
            ended_ms: None,
            summary: String::new(),
            steps: Vec::new(),
            tokens: Tokens::default(),
        };
        let mut r = Recorder { dir, record };
        r.save()?;
        Ok(r)
    }

    pub fn events_path(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    /// Rewrite `session.json` atomically.
    pub fn save(&mut self) -> Result<(), SessionError> {
        let p = self.dir.join("session.json");
        let json = serde_json::to_vec_pretty(&self.record).map_err(|e| SessionError::Io {
            path: p.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        write_atomic(&p, &json).map_err(io(&p))
    }

    pub fn push_step(&mut self, step: StepRecord) -> Result<(), SessionError> {
        self.record.steps.push(step);
        self.save()
    }

    pub fn finish(&mut self, status: Status, summary: &str) -> Result<(), SessionError> {
        self.record.status = status;
        self.record.summary = summary.into();
        self.record.ended_ms = Some(now_ms());
        self.save()
    }
}

/// Why a step picture named by a `session.json` is not read.
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    #[error("the picture {0:?} is not a file name inside the session directory")]
    Outside(String),
    #[error("the picture {name:?}: {source}")]
    Io {
        name: String,
        source: std::io::Error,
    },
}

/// The bytes of the step picture `name` of the session in `dir`. A `session.json` is data, not
/// an authority: the name must stay inside the session directory (relative, no `..`, and not
/// leading out through a symlink) and be a regular file, or nothing is read.
pub fn picture(dir: &Path, name: &str) -> Result<Vec<u8>, PictureError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::Component;
    let outside = || PictureError::Outside(name.to_string());
    let rel = Path::new(name);
    if name.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(outside());
    }
    let io = |source| PictureError::Io {
        name: name.to_string(),
        source,
    };
    let root = dir.canonicalize().map_err(io)?;
    let real = root.join(rel).canonicalize().map_err(io)?;
    if !real.starts_with(&root) || real == root {
        return Err(outside());
    }
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&real)
        .map_err(io)?;
    if !f.metadata().map_err(io)?.file_type().is_file() {
        return Err(outside());
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}

/// Wall-clock milliseconds since the epoch, as records and events stamp them.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Load a session. One left `running` by a process that no longer runs is aborted — and saved as
/// such, so the history never shows a phantom that no stop button could clear.
pub fn load(dir: &Path) -> Result<SessionRecord, SessionError> {
    let p = dir.join("session.json");
    let text = std::fs::read_to_string(&p).map_err(io(&p))?;
    let mut r: SessionRecord = serde_json::from_str(&text).map_err(|e| SessionError::Parse {
        path: p.display().to_string(),
        message: e.to_string(),
    })?;
    if r.status == Status::Running && process_start(r.pid) != Some(r.pid_start) {
        r.status = Status::Aborted;
        r.summary = if r.summary.is_empty() {
            "the process driving this session died".into()
        } else {
            r.summary
        };
        let json = serde_json::to_vec_pretty(&r).map_err(|e| SessionError::Io {
            path: p.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        write_atomic(&p, &json).map_err(io(&p))?;
    }
    Ok(r)
}

/// Every session under `root`, newest first. Unreadable ones are reported, not skipped silently.
pub fn list(root: &Path) -> Vec<Result<SessionRecord, SessionError>> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.reverse();
    dirs.iter().map(|d| load(d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names records and events carry are an interface (`events.jsonl`, `session.json`,
    /// the panel): pinned here, so a rename in the code cannot change them silently.
    #[test]
    fn the_serialized_names_are_pinned() {
        let name = |v: serde_json::Value| v.as_str().unwrap().to_string();
        let statuses = [
            (Status::Running, "running"),
            (Status::Done, "done"),
            (Status::Failed, "failed"),
            (Status::Aborted, "aborted"),
            (Status::Stopped, "stopped"),
        ];
        for (s, n) in statuses {
            assert_eq!(name(serde_json::to_value(s).unwrap()), n);
            assert_eq!(s.name(), n);
            assert_eq!(serde_json::from_value::<Status>(n.into()).unwrap(), s);
        }
        let verdicts = [
            (Verification::Verified, "verified"),
            (Verification::Failed, "failed"),
            (Verification::Unconfirmed, "unconfirmed"),
            (Verification::Unverified, "unverified"),
        ];
        for (v, n) in verdicts {
            assert_eq!(name(serde_json::to_value(v).unwrap()), n);
            assert_eq!(v.name(), n);
            assert_eq!(serde_json::from_value::<Verification>(n.into()).unwrap(), v);
        }
        let rails = [
            (RailsVerdict::Approved, "approved"),
            (RailsVerdict::Recorded, "recorded"),
            (RailsVerdict::Confirmation, "confirmation"),
            (RailsVerdict::NotPlanned, "not planned"),
            (
                RailsVerdict::Refused("terminal-metachar".into()),
                "terminal-metachar",
            ),
        ];
        for (r, n) in rails {
            assert_eq!(name(serde_json::to_value(&r).unwrap()), n);
            assert_eq!(serde_json::from_value::<RailsVerdict>(n.into()).unwrap(), r);
        }
    }

    fn step(i: usize, v: &str) -> StepRecord {
        StepRecord {
            index: i,
            observation_id: format!("o{i}"),
            actions: serde_json::json!([{"action":"click","target":1}]),
            rails: RailsVerdict::Approved,
            verification: serde_json::from_value(v.into()).unwrap(),
            detail: String::new(),
            timings_ms: PhaseTimes::default(),
            screenshot: None,
            verify_screenshot: None,
            click_points: vec![],
            plan: String::new(),
            picture: None,
            focus: None,
            tokens: None,
        }
    }

    #[test]
    fn records_round_trip_and_rates() {
        let d = tempfile::tempdir().unwrap();
        let mut r =
            Recorder::create(d.path(), "click 7", "local", "offline", "tools.v1", "auto").unwrap();
        r.push_step(step(1, "verified")).unwrap();
        r.push_step(step(2, "unverified")).unwrap();
        r.push_step(step(3, "failed")).unwrap();
        let back = load(&r.dir).unwrap();
        assert_eq!(back.status, Status::Running, "this process is alive");
        assert_eq!(back.steps.len(), 3);
        assert_eq!(
            back.verified_rate(),
            Some(0.5),
            "unverified steps are excluded"
        );
        r.finish(Status::Done, "done").unwrap();
        assert_eq!(load(&r.dir).unwrap().status, Status::Done);
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&r.dir), 0o700, "the session directory is private");
        assert_eq!(mode(&r.dir.join("session.json")), 0o600);
        let mut none = back.clone();
        none.steps = vec![step(1, "unverified")];
        assert_eq!(none.verified_rate(), None, "n/a, never 0%");
    }

    #[test]
    fn a_picture_is_read_only_from_inside_its_session() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("s1");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("step-001.png"), b"png").unwrap();
        std::fs::write(dir.join("sub/x.png"), b"sub").unwrap();
        std::fs::write(d.path().join("secret"), b"secret").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), dir.join("out.png")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
        std::os::unix::fs::symlink(dir.join("step-001.png"), dir.join("in.png")).unwrap();
        assert_eq!(picture(&dir, "step-001.png").unwrap(), b"png");
        assert_eq!(picture(&dir, "sub/x.png").unwrap(), b"sub");
        // A link that stays inside is the file it names.
        assert_eq!(picture(&dir, "in.png").unwrap(), b"png");
        for bad in [
            "/etc/passwd",
            "../secret",
            "sub/../../secret",
            "./step-001.png",
            "out.png",
            "etc/passwd",
            "",
            ".",
            "sub",
        ] {
            let e = picture(&dir, bad).unwrap_err();
            assert!(
                matches!(e, PictureError::Outside(_)),
                "{bad:?} was not refused as outside: {e}"
            );
        }
        assert!(matches!(
            picture(&dir, "none.png"),
            Err(PictureError::Io { .. })
        ));
    }

    #[test]
    fn a_dead_owner_reads_back_as_aborted_and_is_saved_so() {
        let d = tempfile::tempdir().unwrap();
        let mut r =
            Recorder::create(d.path(), "t", "local", "offline", "tools.v1", "auto").unwrap();
        r.record.pid_start += 999; // as if the pid now belonged to someone else
        r.save().unwrap();
        assert_eq!(load(&r.dir).unwrap().status, Status::Aborted);
        let on_disk: SessionRecord =
            serde_json::from_str(&std::fs::read_to_string(r.dir.join("session.json")).unwrap())
                .unwrap();
        assert_eq!(on_disk.status, Status::Aborted);
        std::fs::create_dir_all(d.path().join("broken")).unwrap();
        std::fs::write(d.path().join("broken/session.json"), b"{ half").unwrap();
        let all = list(d.path());
        assert_eq!(all.len(), 2);
        assert!(
            all.iter().any(|r| r.is_err()),
            "a broken record is reported"
        );
    }
}
