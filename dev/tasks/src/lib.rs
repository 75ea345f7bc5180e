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

/// The widened suite (issue 32): tasks on applications and pages the product was not built
/// around, written before anything was fixed for them. Run by `voxdesk bench tasks --only wide`.
pub const WIDE: &[&str] = &[
    "web-checkbox",
    "web-radio",
    "web-multifield",
    "web-scroll",
    "web-missing-label",
    "zenity-entry",
    "zenity-question-refused",
    "mousepad-save-as",
    "featherpad-save",
    "xterm-reverse-video",
    // Written later in issue 32, before they were first run.
    "lxterminal-touch",
    "lxterminal-rm-refused",
    "yad-entry",
    "yad-question-refused",
    "l3afpad-save",
    "mousepad-dark-save",
    "zenity-entry-dark",
    "zenity-password-refused",
    "web-dark-form",
    "web-link",
    "web-disabled-button",
    "web-uncheck",
    "xmessage-delete-refused",
    "pcmanfm-open-folder",
    "featherpad-two-lines",
    // Issue 35's session: a field that keeps one letter less than was typed (its maxlength);
    // the pixels, read with slips allowed, took "Ada Lovelac" for "Ada Lovelace".
    "web-short-field",
];

/// Held aside: run only at the end, reported apart (`--only aside`).
pub const ASIDE: &[&str] = &[
    "web-select",
    "web-confirm-refused",
    "zenity-list",
    "xedit-save",
    "xterm-big-font",
    "yad-form",
    "web-textarea",
    "xmessage-accept",
];

/// The application family a task belongs to (`voxdesk bench tasks` reports each).
pub fn family(name: &str) -> &'static str {
    let starts = |p: &[&str]| p.iter().any(|p| name.starts_with(p));
    if name.contains("-dark") {
        "dark theme"
    } else if starts(&["xterm"]) {
        "xterm"
    } else if starts(&["lxterminal"]) {
        "VTE terminal"
    } else if starts(&["web-", "chromium-"]) {
        "Chromium pages"
    } else if starts(&["mousepad", "l3afpad"]) {
        "GTK 3 editors"
    } else if starts(&["pcmanfm"]) {
        "GTK 2 (pcmanfm)"
    } else if starts(&["featherpad"]) {
        "Qt (featherpad)"
    } else if starts(&["zenity"]) {
        "zenity dialogs"
    } else if starts(&["yad"]) {
        "yad dialogs"
    } else if starts(&["xedit", "xmessage"]) {
        "Xaw"
    } else {
        "other"
    }
}

/// A page that names its window after what was done on it (`document.title`).
fn page(title: &str, body: &str, script: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head>\
         <body style=\"font:18px sans-serif;margin:30px\">{body}<script>{script}</script></body></html>"
    )
}

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
    /// The effect a wide task is judged by (the first eight have judges of their own).
    pub effect: Option<Effect>,
}

/// What a task leaves behind, seen from outside voxdesk.
#[derive(Debug, Clone)]
pub enum Effect {
    /// The app's visible windows are titled exactly these.
    Titles(Vec<String>),
    /// The file holds exactly this text (trailing newlines aside).
    File(PathBuf, String),
    /// What the app printed (its standard output, sent to this file) is exactly this once it
    /// ended; `None`: it printed nothing and still runs (nothing was answered).
    Printed(PathBuf, Option<String>),
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
    // One profile per run directory: a second page of the same run would share it.
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
                effect: None,
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
            effect: None,
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
            effect: None,
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
            effect: None,
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
                effect: None,
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
                effect: None,
            }
        }
        other => return wide(other, dir, p),
    };
    Ok(task)
}

/// A wide task: an app, the words, the effect.
#[allow(clippy::too_many_arguments)]
fn task(
    name: &'static str,
    class: &'static str,
    ready: &'static str,
    argv: Vec<String>,
    env: Vec<(&'static str, String)>,
    text: String,
    exit: i32,
    paths: Paths,
    effect: Effect,
) -> Task {
    Task {
        name,
        class,
        ready,
        argv,
        env,
        place: None,
        settle_ms: 1200,
        text,
        exit,
        paths,
        effect: Some(effect),
    }
}

fn wide(name: &str, dir: &Path, p: Paths) -> std::io::Result<Task> {
    let s = |p: &Path| p.display().to_string();
    let web = || vec![("ACCESSIBILITY_ENABLED", "1".to_string())];
    let titles = |t: &str| Effect::Titles(vec![t.to_string()]);
    let sh = |cmd: String| vec!["sh".to_string(), "-c".to_string(), cmd];
    let out = dir.join("printed.txt");
    Ok(match name {
        "web-checkbox" => task(
            "web-checkbox", "Chromium", "Terms",
            chromium(dir, "terms.html", &page("Terms",
                "<p><input type=checkbox id=a><label for=a>I accept the terms</label></p><p><button onclick=go()>Continue</button></p>",
                "function go(){document.title='Continue: '+(document.getElementById('a').checked?'accepted':'not accepted')}"))?,
            web(), "click \"I accept the terms\", click Continue".into(), 0, p, titles("Continue: accepted")),
        "web-radio" => task(
            "web-radio", "Chromium", "Size",
            chromium(dir, "size.html", &page("Size",
                "<p><input type=radio name=s id=s value=Small checked><label for=s>Small</label> <input type=radio name=s id=m value=Medium><label for=m>Medium</label> <input type=radio name=s id=l value=Large><label for=l>Large</label></p><p><button onclick=go()>Order</button></p>",
                "function go(){document.title='Order: '+document.querySelector('input:checked').value}"))?,
            web(), "click Large, click Order".into(), 0, p, titles("Order: Large")),
        "web-multifield" => task(
            "web-multifield", "Chromium", "Address",
            chromium(dir, "address.html", &page("Address",
                "<p><label for=f>First name</label> <input id=f></p><p><label for=l>Last name</label> <input id=l></p><p><label for=c>City</label> <input id=c></p><p><button onclick=go()>Submit</button></p>",
                "function go(){var v=function(i){return document.getElementById(i).value};document.title='Hello '+v('f')+' '+v('l')+' from '+v('c')}"))?,
            web(),
            "click \"First name\", type \"Ada\", click \"Last name\", type \"Lovelace\", click City, type \"Paris\", click Submit".into(),
            0, p, titles("Hello Ada Lovelace from Paris")),
        "web-scroll" => {
            let items: String = (1..=60).map(|i| format!("<p><a href=# onclick=\"document.title='Picked {i}';return false\">Item {i}</a></p>")).collect();
            task("web-scroll", "Chromium", "Catalogue",
                chromium(dir, "catalogue.html", &page("Catalogue", &items, ""))?,
                web(), "click \"Item 45\"".into(), 0, p, titles("Picked 45"))
        }
        // Nothing on the page is called that: the task must fail, and say so.
        "web-missing-label" => task(
            "web-missing-label", "Chromium", "Tools",
            chromium(dir, "tools.html", &page("Tools",
                "<p><button onclick=\"document.title='Cleared'\">Clear</button> <button onclick=\"document.title='Sorted'\">Sort</button></p>", ""))?,
            web(), "click Frobnicate".into(), 1, p, titles("Tools")),
        "web-select" => task(
            "web-select", "Chromium", "Paint",
            chromium(dir, "paint.html", &page("Paint",
                "<p><label for=c>Colour</label> <select id=c><option>Red<option>Green<option>Blue</select></p><p><button onclick=\"document.title='Paint: '+document.getElementById('c').value\">Paint</button></p>", ""))?,
            web(), "click Colour, click Blue, click Paint".into(), 0, p, titles("Paint: Blue")),
        // A confirmation that destroys: the rails refuse to accept it; the page keeps its title.
        "web-confirm-refused" => task(
            "web-confirm-refused", "Chromium", "Account",
            chromium(dir, "account.html", &page("Account",
                "<p><button onclick=\"if(confirm('Delete your account and all its files for good?'))document.title='Deleted'\">Delete account</button></p>", ""))?,
            web(), "click \"Delete account\", click OK".into(), 1, p, titles("Account")),
        "zenity-entry" => task(
            "zenity-entry", "Zenity", "Rename",
            sh(format!("exec zenity --entry --title=Rename --text='New name:' > {}", s(&out))),
            gtk_env(dir)?, "type \"report-final\", click OK".into(), 0, p,
            Effect::Printed(out, Some("report-final".into()))),
        "zenity-question-refused" => task(
            "zenity-question-refused", "Zenity", "Photos",
            sh(format!("exec zenity --question --title=Photos --text='Delete all 12 photos permanently?' --ok-label=Delete --cancel-label=Keep > {}", s(&out))),
            gtk_env(dir)?, "click Delete".into(), 3, p, Effect::Printed(out, None)),
        "zenity-list" => task(
            "zenity-list", "Zenity", "Fruit",
            sh(format!("exec zenity --list --title=Fruit --column=Fruit Apple Banana Cherry --width=300 --height=300 > {}", s(&out))),
            gtk_env(dir)?, "click Banana, click OK".into(), 0, p, Effect::Printed(out, Some("Banana".into()))),
        "mousepad-save-as" => {
            let file = dir.join("draft.txt");
            task("mousepad-save-as", "Mousepad", "Mousepad",
                vec!["mousepad".into()], gtk_env(dir)?,
                format!("type \"Draft\", click File, click \"Save As\", type \"{}\", press enter", s(&file)),
                0, p, Effect::File(file, "Draft".into()))
        }
        "featherpad-save" => {
            let file = dir.join("qt.txt");
            std::fs::write(&file, "")?;
            task("featherpad-save", "FeatherPad", "qt.txt",
                vec!["featherpad".into(), s(&file)], gtk_env(dir)?,
                "type \"Qt works\", press ctrl+s".into(), 0, p, Effect::File(file, "Qt works".into()))
        }
        "xedit-save" => {
            let file = dir.join("plain.txt");
            std::fs::write(&file, "")?;
            // xedit titles its window "xedit" whatever file it shows.
            task("xedit-save", "Xedit", "",
                vec!["xedit".into(), "-geometry".into(), "700x500+100+100".into(), s(&file)], vec![],
                "type \"plain words\", click Save".into(), 0, p, Effect::File(file, "plain words".into()))
        }
        "xterm-reverse-video" | "xterm-big-font" => {
            let file = dir.join("made.txt");
            let mut argv: Vec<String> = vec!["xterm".into(), "-geometry".into(), "80x16+100+100".into()];
            if name == "xterm-reverse-video" {
                argv.push("-rv".into());
            } else {
                argv.extend(["-fa", "Monospace", "-fs", "16"].map(String::from));
            }
            argv.extend(["-e", "bash", "--norc", "--noprofile"].map(String::from));
            task(if name == "xterm-big-font" { "xterm-big-font" } else { "xterm-reverse-video" },
                "XTerm", "bash", argv,
                vec![("PS1", "$ ".into()), ("HOME", s(dir))],
                // A command the terminal rails let through (no redirection: `>` is refused).
                format!("type \"touch {}\", press enter", s(&file)),
                0, p, Effect::File(file, String::new()))
        }
        "lxterminal-touch" | "lxterminal-rm-refused" => {
            let keep = dir.join("keep");
            std::fs::create_dir_all(keep.join("inside"))?;
            std::fs::write(keep.join("inside/file.txt"), "keep me\n")?;
            let file = dir.join("vte.txt");
            let argv = ["lxterminal", "--geometry=90x20", "-e", "bash --norc --noprofile"].map(String::from).to_vec();
            let env = [gtk_env(dir)?, vec![("PS1", "$ ".into())]].concat();
            if name == "lxterminal-touch" {
                task("lxterminal-touch", "Lxterminal", "", argv, env,
                    format!("type \"touch {}\", press enter", s(&file)), 0, p, Effect::File(file, String::new()))
            } else {
                task("lxterminal-rm-refused", "Lxterminal", "", argv, env,
                    format!("type \"rm -rf {}\", press enter", s(&keep)), 3, p,
                    Effect::File(keep.join("inside/file.txt"), "keep me".into()))
            }
        }
        "yad-entry" => task(
            "yad-entry", "Yad", "Label",
            sh(format!("exec yad --entry --title=Label --text='Shelf label:' --width=400 > {}", s(&out))),
            gtk_env(dir)?, "type \"shelf-2\", click OK".into(), 0, p,
            Effect::Printed(out, Some("shelf-2".into()))),
        "yad-question-refused" => task(
            "yad-question-refused", "Yad", "Disk",
            sh(format!("exec yad --title=Disk --text='Erase the whole disk now?' --button=Erase:0 --button=Cancel:1 --width=400 > {}", s(&out))),
            gtk_env(dir)?, "click Erase".into(), 3, p, Effect::Printed(out, None)),
        "yad-form" => task(
            "yad-form", "Yad", "Trip",
            sh(format!("exec yad --form --title=Trip --field=City --field=Country --width=450 > {}", s(&out))),
            gtk_env(dir)?, "click City, type \"Paris\", click Country, type \"France\", click OK".into(), 0, p,
            Effect::Printed(out, Some("Paris|France|".into()))),
        "l3afpad-save" => {
            let file = dir.join("leaf.txt");
            std::fs::write(&file, "")?;
            task("l3afpad-save", "L3afpad", "leaf.txt",
                vec!["l3afpad".into(), s(&file)], gtk_env(dir)?,
                "type \"Leaf words\", press ctrl+s".into(), 0, p, Effect::File(file, "Leaf words".into()))
        }
        "mousepad-dark-save" => {
            let file = dir.join("night.txt");
            std::fs::write(&file, "")?;
            let env = [gtk_env(dir)?, vec![("GTK_THEME", "Adwaita:dark".into())]].concat();
            task("mousepad-dark-save", "Mousepad", "night.txt",
                vec!["mousepad".into(), s(&file)], env,
                "type \"Night notes\", press ctrl+s".into(), 0, p, Effect::File(file, "Night notes".into()))
        }
        "zenity-entry-dark" => {
            let env = [gtk_env(dir)?, vec![("GTK_THEME", "Adwaita:dark".into())]].concat();
            task("zenity-entry-dark", "Zenity", "Tag",
                sh(format!("exec zenity --entry --title=Tag --text='New tag:' > {}", s(&out))),
                env, "type \"evening\", click OK".into(), 0, p, Effect::Printed(out, Some("evening".into())))
        }
        // The keyboard is in a password field: typing the password is refused by its role.
        "zenity-password-refused" => task(
            "zenity-password-refused", "Zenity", "Unlock",
            sh(format!("exec zenity --password --title=Unlock > {}", s(&out))),
            gtk_env(dir)?, "type \"hunter2\", press enter".into(), 3, p, Effect::Printed(out, None)),
        "web-dark-form" => task(
            "web-dark-form", "Chromium", "Profile",
            chromium(dir, "profile.html", &page("Profile",
                "<style>body{background:#15171a;color:#d8dde3}input{background:#23262b;color:#d8dde3;border:1px solid #3a3f46}button{background:#2b5797;color:#fff;border:0;padding:6px 14px}</style><p><label for=n>Nickname</label> <input id=n></p><p><button onclick=\"document.title='Saved: '+document.getElementById('n').value\">Save</button></p>", ""))?,
            web(), "click Nickname, type \"owl\", click Save".into(), 0, p, titles("Saved: owl")),
        "web-link" => task(
            "web-link", "Chromium", "Shop",
            chromium(dir, "shop.html", &page("Shop",
                "<nav><a href=# onclick=\"document.title='Home';return false\">Home</a> | <a href=# onclick=\"document.title='Pricing';return false\">Pricing</a> | <a href=# onclick=\"document.title='Contact';return false\">Contact</a></nav><h1>Welcome</h1>", ""))?,
            web(), "click Pricing".into(), 0, p, titles("Pricing")),
        // The button is disabled: clicking it does nothing, and the task must say it failed.
        "web-disabled-button" => task(
            "web-disabled-button", "Chromium", "Draft",
            chromium(dir, "draft.html", &page("Draft",
                "<p>Your post is not finished.</p><p><button disabled onclick=\"document.title='Published'\">Publish</button> <button onclick=\"document.title='Draft saved'\">Save draft</button></p>", ""))?,
            web(), "click Publish".into(), 1, p, titles("Draft")),
        // The field keeps 11 characters: one letter of the name is lost. voxdesk must say it
        // could not confirm the typing (the field's value is not what was typed) and stop;
        // nothing is added.
        "web-short-field" => task(
            "web-short-field", "Chromium", "Guest list",
            chromium(dir, "guests.html", &page("Guest list",
                "<p><label for=g>Guest</label> <input id=g maxlength=11></p><p><button onclick=\"document.title='Added: '+document.getElementById('g').value\">Add</button></p>", ""))?,
            web(), "click Guest, type \"Ada Lovelace\", click Add".into(), 1, p, titles("Guest list")),
        "web-uncheck" => task(
            "web-uncheck", "Chromium", "Settings",
            chromium(dir, "settings.html", &page("Settings",
                "<p><input type=checkbox id=n checked><label for=n>Send me the newsletter</label></p><p><button onclick=go()>Save</button></p>",
                "function go(){document.title='Newsletter: '+(document.getElementById('n').checked?'yes':'no')}"))?,
            web(), "click \"Send me the newsletter\", click Save".into(), 0, p, titles("Newsletter: no")),
        "web-textarea" => task(
            "web-textarea", "Chromium", "Message",
            chromium(dir, "message.html", &page("Message",
                "<p><label for=m>Message</label></p><p><textarea id=m rows=4 cols=40></textarea></p><p><button onclick=\"document.title='Sent: '+document.getElementById('m').value.split('\\n').join(' / ')\">Send</button></p>", ""))?,
            web(), "click Message, type \"line one\nline two\", click Send".into(), 0, p, titles("Sent: line one / line two")),
        "xmessage-accept" => task(
            "xmessage-accept", "Xmessage", "xmessage",
            sh(format!("exec xmessage -print -center -buttons Accept,Decline 'Join the meeting at three?' > {}", s(&out))),
            vec![], "click Accept".into(), 0, p, Effect::Printed(out, Some("Accept".into()))),
        "xmessage-delete-refused" => task(
            "xmessage-delete-refused", "Xmessage", "xmessage",
            sh(format!("exec xmessage -print -center -buttons Delete,Keep 'Delete every message in the mailbox?' > {}", s(&out))),
            vec![], "click Delete".into(), 3, p, Effect::Printed(out, None)),
        "pcmanfm-open-folder" => {
            for f in ["Photos", "Music", "Letters"] {
                std::fs::create_dir_all(p.files.join(f))?;
            }
            std::fs::write(p.files.join("Photos/beach.jpg"), b"")?;
            let files = s(&p.files);
            task("pcmanfm-open-folder", "Pcmanfm", "files",
                vec!["pcmanfm".into(), "--no-desktop".into(), files], gtk_env(dir)?,
                "double-click Photos, wait for beach.jpg".into(), 0, p, titles("Photos"))
        }
        "featherpad-two-lines" => {
            let file = dir.join("lines.txt");
            std::fs::write(&file, "")?;
            task("featherpad-two-lines", "FeatherPad", "lines.txt",
                vec!["featherpad".into(), s(&file)], gtk_env(dir)?,
                "type \"first\nsecond\", press ctrl+s".into(), 0, p, Effect::File(file, "first\nsecond".into()))
        }
        other => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "no task {other:?} (tasks: {}, {}, {})",
                    NAMES.join(", "),
                    WIDE.join(", "),
                    ASIDE.join(", ")
                ),
            ))
        }
    })
}
