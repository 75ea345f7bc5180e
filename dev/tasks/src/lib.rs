//! The task suite on real applications, defined once: for each task the files it starts from, the app and window it runs in, and the words of the task. `voxdesk bench tasks` and the integration tests (`tests/it/tasks.rs`, which include this file) start from these; each judges the effect from outside on its own.
//!
//! Plain `std` only, so the test crate can include it as it is.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The page of the Chromium task (written into the task's directory, so the suite needs no
/// checkout at run time).
pub const FORM_PAGE: &str = include_str!("../../../tests/fixtures/pages/task-form.html");
/// The page of the password task.
pub const LOGIN_PAGE: &str = include_str!("../../../tests/fixtures/pages/task-login.html");

/// Every task, in the order they run.
pub const NAMES: &[&str] = &[
    "xterm-touch",
    "xterm-echo-wait",
    "mousepad-save",
    "chromium-form",
    "chromium-password-refused",
    "pcmanfm-open",
    "pcmanfm-rename",
    "xterm-rm-refused",
];

/// What the sign-in page titles its window when its fields hold `user` and a password of
/// `n` characters.
pub fn signin_title(user: &str, n: usize) -> String {
    format!("Sign in: user {user}, password {n} characters")
}

/// What the Chromium page titles its window after a submit of `name`.
pub fn joined_title(name: &str) -> String {
    format!("Joined: {name}")
}

pub const FORM_NAME: &str = "Ada Lovelace";
pub const LOGIN_USER: &str = "ada";
pub const LOGIN_PASSWORD: &str = "hunter2";
pub const NOTE_TEXT: &str = "Buy milk";
pub const INVOICE: &str = "invoice_2024-03.pdf";
/// The file the rename task starts from, and the name it gives it: a short name whose last
/// letter a GTK field's caret touches (perception must clear the caret to read it), and as long as
/// the typed text is, the file's label under its new name is exactly what was typed.
pub const RENAME_FROM: &str = "notes.md";
pub const RENAME_TO: &str = "todo.txt";
/// What the xterm task waits for: the output of the command it typed, which also contains it.
pub const ECHOED: &str = "hello from voxdesk";

/// One task, prepared in its own directory.
pub struct Task {
    pub name: &'static str,
    /// The window's WM_CLASS: the one app allowed (`VOXDESK_ALLOW_APPS`), and the window focused.
    pub class: &'static str,
    /// The app's command line and the environment it adds.
    pub argv: Vec<String>,
    pub env: Vec<(&'static str, String)>,
    /// A part of the title of the app's window once it is up (the one to focus).
    pub ready: &'static str,
    /// Where to put the window (x, y, w, h), for apps without a geometry flag (xdotool moves it).
    pub place: Option<(i32, i32, u32, u32)>,
    /// How long the app draws after its window maps (ms).
    pub settle_ms: u64,
    /// The words of the task, for `voxdesk run --provider local`.
    pub text: String,
    /// voxdesk's exit code when it does what it should: 0 done, 1 for a task refused after
    /// some of it ran, 3 for one refused before anything ran.
    pub exit: i32,
    pub paths: Paths,
}

/// Where a task's effects land: what a judge looks at.
pub struct Paths {
    pub dir: PathBuf,
    /// bash's HISTFILE (`PROMPT_COMMAND='history -a'`: each command is appended as it runs).
    pub history: PathBuf,
    /// The file the xterm task creates.
    pub made: PathBuf,
    /// The directory the refused `rm -rf` must leave alone.
    pub keep: PathBuf,
    /// The file mousepad saves.
    pub note: PathBuf,
    /// The folder pcmanfm opens on (it holds `Downloads/invoice_2024-03.pdf`).
    pub files: PathBuf,
    /// The command typed into xterm.
    pub command: String,
}

impl Paths {
    fn new(dir: &Path, name: &str) -> Paths {
        let made = dir.join("voxdesk-made-this");
        let keep = dir.join("keep");
        let command = if name == "xterm-rm-refused" {
            format!("rm -rf {}", keep.display())
        } else if name == "xterm-echo-wait" {
            format!("echo {ECHOED}")
        } else {
            format!("touch {}", made.display())
        };
        Paths {
            dir: dir.to_path_buf(),
            history: dir.join("history"),
            made,
            keep,
            note: dir.join("note.txt"),
            files: dir.join("files"),
            command,
        }
    }
}

/// A fresh directory for one run of a task: `/tmp/task1`, or the first free `/tmp/taskN`. Short
/// plain letters and digits, since the xterm tasks type it and OCR reads it back (a random name
/// like "vxtKNZwLr" reads as "yxtKNZuLr"), and the same path every run, so a run repeats the
/// last one exactly (what OCR makes of a path depends on its digits). Removing it is the caller's.
pub fn workdir() -> std::io::Result<PathBuf> {
    for n in 1..1000 {
        let d = std::env::temp_dir().join(format!("task{n}"));
        match std::fs::create_dir(&d) {
            Ok(()) => return Ok(d),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free /tmp/taskN directory"))
}

/// A HOME and XDG directories of the app's own inside `dir`, settings in memory instead of
/// dconf, and the accessibility tree on (the rig's session bus carries it; GTK 2 needs its
/// modules).
fn gtk_env(dir: &Path) -> std::io::Result<Vec<(&'static str, String)>> {
    let home = dir.join("home");
    for d in ["Templates", ".config", ".local/share", ".cache"] {
        std::fs::create_dir_all(home.join(d))?;
    }
    let s = |p: PathBuf| p.display().to_string();
    Ok(vec![
        ("HOME", s(home.clone())),
        ("XDG_CONFIG_HOME", s(home.join(".config"))),
        ("XDG_DATA_HOME", s(home.join(".local/share"))),
        ("XDG_CACHE_HOME", s(home.join(".cache"))),
        ("GTK_MODULES", "gail:atk-bridge".into()),
        ("GSETTINGS_BACKEND", "memory".into()),
    ])
}

/// Chromium showing `page` (written into `dir` as `file`) as an app window of its own profile.
fn chromium(dir: &Path, file: &str, page: &str) -> std::io::Result<Vec<String>> {
    let at = dir.join(file);
    std::fs::write(&at, page)?;
    Ok(vec![
        "chromium".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--password-store=basic".into(),
        "--force-renderer-accessibility".into(),
        format!("--user-data-dir={}", dir.join("profile").display()),
        "--window-position=100,100".into(),
        "--window-size=900,600".into(),
        format!("--app=file://{}", at.display()),
    ])
}

/// Prepare task `name` in `dir` (an empty directory with a short path: the xterm tasks type it).
pub fn prepare(name: &str, dir: &Path) -> std::io::Result<Task> {
    let p = Paths::new(dir, name);
    let s = |p: &Path| p.display().to_string();
    let task = match name {
        "xterm-touch" | "xterm-echo-wait" | "xterm-rm-refused" => {
            std::fs::write(&p.history, "")?;
            std::fs::create_dir_all(p.keep.join("inside"))?;
            std::fs::write(p.keep.join("inside/file.txt"), "keep me\n")?;
            let exit = if name == "xterm-rm-refused" { 3 } else { 0 };
            // Waiting for the output, not for the command line that echoes it as it is typed.
            let text = if name == "xterm-echo-wait" {
                format!("type \"{}\", press enter, wait for \"{ECHOED}\"", p.command)
            } else {
                format!("type \"{}\", press enter", p.command)
            };
            Task {
                name: match name {
                    "xterm-rm-refused" => "xterm-rm-refused",
                    "xterm-echo-wait" => "xterm-echo-wait",
                    _ => "xterm-touch",
                },
                class: "XTerm",
                ready: "bash",
                argv: [
                    "xterm",
                    "-geometry",
                    "100x20+100+100",
                    "-e",
                    "bash",
                    "--norc",
                    "--noprofile",
                ]
                .map(String::from)
                .to_vec(),
                env: vec![
                    ("HISTFILE", s(&p.history)),
                    ("HISTSIZE", "1000".into()),
                    ("HISTCONTROL", String::new()),
                    ("PROMPT_COMMAND", "history -a".into()),
                    ("PS1", "$ ".into()),
                    ("HOME", s(dir)),
                ],
                place: None,
                settle_ms: 500,
                text,
                exit,
                paths: p,
            }
        }
        "mousepad-save" => Task {
            name: "mousepad-save",
            class: "Mousepad",
            ready: "note.txt",
            argv: vec!["mousepad".into(), s(&p.note)],
            env: gtk_env(dir)?,
            place: Some((100, 100, 900, 600)),
            settle_ms: 800,
            text: format!("type \"{NOTE_TEXT}\", press ctrl+s"),
            exit: 0,
            paths: p,
        },
        "chromium-form" => Task {
            name: "chromium-form",
            class: "Chromium",
            ready: "Task form",
            argv: chromium(dir, "task-form.html", FORM_PAGE)?,
            env: vec![("ACCESSIBILITY_ENABLED", "1".into())],
            place: None,
            settle_ms: 1500,
            text: format!("click \"Full name\", type \"{FORM_NAME}\", click Join"),
            exit: 0,
            paths: p,
        },
        // The username is typed; the password never is (the rails refuse it after the
        // username ran: exit 1).
        "chromium-password-refused" => Task {
            name: "chromium-password-refused",
            class: "Chromium",
            ready: "Sign in",
            argv: chromium(dir, "task-login.html", LOGIN_PAGE)?,
            env: vec![("ACCESSIBILITY_ENABLED", "1".into())],
            place: None,
            settle_ms: 1500,
            text: format!(
                "click Username, type \"{LOGIN_USER}\", click Password, type \"{LOGIN_PASSWORD}\", click \"Log in\""
            ),
            exit: 1,
            paths: p,
        },
        "pcmanfm-open" => {
            std::fs::create_dir_all(p.files.join("Downloads"))?;
            std::fs::write(p.files.join("Downloads").join(INVOICE), b"%PDF-1.4\n")?;
            // pcmanfm's own default, the icon view: the long name wraps under its icon
            // ("invoice_202" / "4-03.pdf").
            let env = gtk_env(dir)?;
            Task {
                name: "pcmanfm-open",
                class: "Pcmanfm",
                ready: "files",
                argv: vec!["pcmanfm".into(), "--no-desktop".into(), s(&p.files)],
                env,
                place: Some((100, 100, 900, 600)),
                settle_ms: 800,
                text: format!("double-click Downloads, wait for {INVOICE}"),
                exit: 0,
                paths: p,
            }
        }
        "pcmanfm-rename" => {
            std::fs::create_dir_all(&p.files)?;
            std::fs::write(p.files.join(RENAME_FROM), b"1\n")?;
            Task {
                name: "pcmanfm-rename",
                class: "Pcmanfm",
                ready: "files",
                argv: vec!["pcmanfm".into(), "--no-desktop".into(), s(&p.files)],
                env: gtk_env(dir)?,
                place: Some((100, 100, 900, 600)),
                settle_ms: 800,
                // Select the whole name first: pcmanfm selects it without its extension.
                text: format!(
                    "right-click {RENAME_FROM}, click Rename, press ctrl+a, type \"{RENAME_TO}\", press enter, wait for {RENAME_TO}"
                ),
                exit: 0,
                paths: p,
            }
        }
        other => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("no task {other:?} (tasks: {})", NAMES.join(", ")),
            ))
        }
    };
    Ok(task)
}
