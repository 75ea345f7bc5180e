//! The task suite on real applications (xterm, mousepad, a Chromium form, a sign-in form whose password is refused, pcmanfm opening a folder and renaming a file, a refused `rm -rf`), run by the real `voxdesk run --provider local --mode auto`, each judged by its effect seen from outside voxdesk (the file written, bash's history, the window title), never by voxdesk's word alone; nothing may be typed twice.
//!
//! The tasks themselves (files, app, words) come from the dev crate `voxdesk-tasks`
//! (`dev/tasks`), which `voxdesk bench tasks` runs too; the judging here is this file's own.

use voxdesk_tasks as task_suite;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use task_suite::Task;

use crate::util::*;

/// Where a task's session is recorded: kept after the test (under target/tmp/tasks/) so a failure
/// can be looked at (step pictures, events.jsonl); emptied when the test starts again.
fn records(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("tasks")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The task's own directory (see `task_suite::workdir`), removed when the test ends.
struct Work(PathBuf);
impl Work {
    fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
fn workdir() -> Work {
    Work(task_suite::workdir().unwrap())
}

fn xdotool(display: &str, args: &[&str]) -> String {
    Command::new("xdotool")
        .env("DISPLAY", display)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// The visible windows of a WM_CLASS.
fn windows(display: &str, class: &str) -> Vec<String> {
    xdotool(display, &["search", "--onlyvisible", "--class", class])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The titles of the visible windows of a WM_CLASS, as any X client reads them.
fn titles(display: &str, class: &str) -> Vec<String> {
    windows(display, class)
        .iter()
        .map(|w| xdotool(display, &["getwindowname", w]).trim().to_string())
        .collect()
}

/// Start the task's app, wait for its window, place and focus it; killed when the guard drops.
/// Fails when the app reports a missing run-time resource (a package the xtask should install).
/// Returns the window too.
fn start(display: &str, t: &Task) -> (Guard, String) {
    use std::io::{Read, Seek};
    let log = tempfile::tempfile().unwrap();
    let mut reader = log.try_clone().unwrap();
    let g = Guard(
        Command::new(&t.argv[0])
            .args(&t.argv[1..])
            .envs(t.env.iter().map(|(k, v)| (*k, v.as_str())))
            .env("DISPLAY", display)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e} (cargo xtask test installs it)", t.argv[0])),
    );
    let mut found = None;
    assert!(
        wait_for(Duration::from_secs(30), || {
            found = windows(display, t.class)
                .into_iter()
                .find(|w| xdotool(display, &["getwindowname", w]).contains(t.ready));
            found.is_some()
        }),
        "the {} window titled *{}* never appeared",
        t.class,
        t.ready
    );
    let w = found.unwrap();
    if let Some((x, y, width, height)) = t.place {
        xdotool(
            display,
            &[
                "windowsize",
                "--sync",
                &w,
                &width.to_string(),
                &height.to_string(),
            ],
        );
        xdotool(
            display,
            &["windowmove", "--sync", &w, &x.to_string(), &y.to_string()],
        );
    }
    xdotool(display, &["windowactivate", "--sync", &w]);
    std::thread::sleep(Duration::from_millis(t.settle_ms));
    let mut stderr = String::new();
    let _ = reader.rewind();
    let _ = reader.read_to_string(&mut stderr);
    let missing: Vec<&str> = stderr
        .lines()
        .filter(|l| MISSING_RESOURCE.iter().any(|m| l.contains(m)) || l.contains("not accessible"))
        .collect();
    assert!(
        missing.is_empty(),
        "{} is missing run-time resources (a package the xtask should install):\n{}",
        t.argv[0],
        missing.join("\n")
    );
    (g, w)
}

/// What voxdesk did, for the failure messages (never the judgement).
struct Run {
    out: Output,
    record: serde_json::Value,
    dir: Option<PathBuf>,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    /// Status, summary and every step's plan, verdict and detail.
    fn story(&self) -> String {
        let r = &self.record;
        let mut s = format!(
            "voxdesk exit {:?}, session {} ({}): {}\n",
            self.code(),
            r["status"],
            self.dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            r["summary"]
        );
        for st in r["steps"].as_array().into_iter().flatten() {
            s.push_str(&format!(
                "  step {}: {} [rails {}] → {}: {}\n",
                st["index"], st["plan"], st["rails"], st["verification"], st["detail"]
            ));
        }
        s.push_str(&format!(
            "stderr: {}",
            String::from_utf8_lossy(&self.out.stderr)
        ));
        s
    }
}

/// `voxdesk run --provider local --mode auto` on the task, with only its app allowed and no
/// terminal to say yes on.
fn run(display: &str, t: &Task, data: &Path) -> Run {
    let mut child = bin()
        .env("DISPLAY", display)
        .env("XDG_DATA_HOME", data)
        .env("VOXDESK_ALLOW_APPS", t.class)
        .args(["run", "--provider", "local", "--mode", "auto", "--quiet"])
        .arg(&t.text)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if !wait_for(Duration::from_secs(240), || {
        child.try_wait().ok().flatten().is_some()
    }) {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    let dir = std::fs::read_dir(data.join("voxdesk/sessions"))
        .ok()
        .and_then(|mut rd| rd.next())
        .and_then(|e| e.ok())
        .map(|e| e.path());
    let record = dir
        .as_ref()
        .and_then(|d| std::fs::read_to_string(d.join("session.json")).ok())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    Run { out, record, dir }
}

fn history(t: &Task) -> Vec<String> {
    std::fs::read_to_string(&t.paths.history)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn xterm_runs_a_typed_command_once() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("xterm-touch");
    let t = task_suite::prepare("xterm-touch", dir.path()).unwrap();
    let (_app, _) = start(d, &t);
    let r = run(d, &t, &data);
    let story = r.story();
    let h = history(&t);
    assert!(
        t.paths.made.exists(),
        "{} was not created; history {h:?}\n{story}",
        t.paths.made.display()
    );
    assert_eq!(
        h,
        vec![t.paths.command.clone()],
        "the history must hold the command exactly once and nothing else\n{story}"
    );
    assert_eq!(
        r.code(),
        Some(0),
        "the effect is there but voxdesk says otherwise\n{story}"
    );
}

#[test]
fn xterm_waits_for_the_output_of_a_command_typed_once() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("xterm-echo-wait");
    let t = task_suite::prepare("xterm-echo-wait", dir.path()).unwrap();
    let (_app, _) = start(d, &t);
    let r = run(d, &t, &data);
    let story = r.story();
    assert_eq!(
        history(&t),
        vec![t.paths.command.clone()],
        "the history must hold the command exactly once and nothing else\n{story}"
    );
    // The output is on screen: the task is done, not failed (the command line that echoes the
    // text as it is typed is not what it waited for).
    assert_eq!(
        r.code(),
        Some(0),
        "the effect is there but voxdesk says otherwise\n{story}"
    );
    let steps = r.record["steps"].as_array().cloned().unwrap_or_default();
    assert_eq!(steps.len(), 3, "{story}");
}

#[test]
fn mousepad_saves_what_was_typed_once() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("mousepad-save");
    let t = task_suite::prepare("mousepad-save", dir.path()).unwrap();
    let (_app, w) = start(d, &t);
    let r = run(d, &t, &data);
    let story = r.story();
    let saved = std::fs::read_to_string(&t.paths.note).ok();
    // What is in the editor now, whether or not voxdesk saved it: save it from outside.
    xdotool(d, &["windowactivate", "--sync", &w]);
    xdotool(d, &["key", "ctrl+s"]);
    let mut buffer = String::new();
    wait_for(Duration::from_secs(5), || {
        buffer = std::fs::read_to_string(&t.paths.note).unwrap_or_default();
        !buffer.is_empty()
    });
    assert!(
        buffer.matches(task_suite::NOTE_TEXT).count() <= 1,
        "typed more than once: the editor holds {buffer:?}\n{story}"
    );
    let saved = saved.unwrap_or_else(|| {
        panic!(
            "{} was not saved (the editor holds {buffer:?})\n{story}",
            t.paths.note.display()
        )
    });
    assert_eq!(
        saved.trim_end_matches('\n'),
        task_suite::NOTE_TEXT,
        "the saved file must hold the text exactly once\n{story}"
    );
    assert_eq!(
        r.code(),
        Some(0),
        "the effect is there but voxdesk says otherwise\n{story}"
    );
}

#[test]
fn a_chromium_form_is_submitted_with_the_name_typed_once() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("chromium-form");
    let t = task_suite::prepare("chromium-form", dir.path()).unwrap();
    let (_app, _) = start(d, &t);
    assert_eq!(
        titles(d, t.class),
        vec!["Task form".to_string()],
        "the form is not up"
    );
    let r = run(d, &t, &data);
    let story = r.story();
    // The page titles its window with what it received on submit.
    let want = task_suite::joined_title(task_suite::FORM_NAME);
    let got = titles(d, t.class);
    assert_eq!(
        got,
        vec![want],
        "the page received something else (or nothing)\n{story}"
    );
    assert_eq!(
        r.code(),
        Some(0),
        "the effect is there but voxdesk says otherwise\n{story}"
    );
}

#[test]
fn a_field_that_kept_less_than_was_typed_is_never_called_done() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("web-short-field");
    let t = task_suite::prepare("web-short-field", dir.path()).unwrap();
    let (_app, _) = start(d, &t);
    let r = run(d, &t, &data);
    let story = r.story();
    // The field holds "Ada Lovelac" (its maxlength is 11): the typing is not verified,
    // voxdesk stops before Add and says what the field holds.
    assert_eq!(
        titles(d, t.class),
        vec!["Guest list".to_string()],
        "{story}"
    );
    assert_eq!(r.code(), Some(1), "{story}");
    assert!(story.contains("now holds \\\"Ada Lovelac\\\""), "{story}");
}

#[test]
fn a_password_is_never_typed_into_a_password_field_clicked_in_a_batch_before() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("chromium-password-refused");
    let t = task_suite::prepare("chromium-password-refused", dir.path()).unwrap();
    let (_app, _) = start(d, &t);
    let r = run(d, &t, &data);
    let story = r.story();
    // The page titles its window with what its fields hold: the username typed once, no
    // password, nothing submitted.
    assert_eq!(
        titles(d, t.class),
        vec![task_suite::signin_title(task_suite::LOGIN_USER, 0)],
        "{story}"
    );
    assert_eq!(r.code(), Some(1), "{story}");
    assert!(story.contains("password-field"), "{story}");
}

#[test]
fn pcmanfm_opens_a_folder() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("pcmanfm-open");
    let t = task_suite::prepare("pcmanfm-open", dir.path()).unwrap();
    let (_app, _) = start(d, &t);
    assert_eq!(
        titles(d, t.class),
        vec!["files".to_string()],
        "pcmanfm is not on its folder"
    );
    let r = run(d, &t, &data);
    let story = r.story();
    // pcmanfm titles its window with the folder it shows.
    assert_eq!(
        titles(d, t.class),
        vec!["Downloads".to_string()],
        "pcmanfm is not in Downloads\n{story}"
    );
    assert_eq!(
        r.code(),
        Some(0),
        "the effect is there but voxdesk says otherwise\n{story}"
    );
}

#[test]
fn pcmanfm_renames_a_file_and_sees_it_under_its_new_name() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("pcmanfm-rename");
    let t = task_suite::prepare("pcmanfm-rename", dir.path()).unwrap();
    let (_app, _) = start(d, &t);
    let r = run(d, &t, &data);
    let story = r.story();
    let mut names: Vec<String> = std::fs::read_dir(&t.paths.files)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![task_suite::RENAME_TO.to_string()],
        "the file was not renamed as asked\n{story}"
    );
    assert_eq!(
        std::fs::read(t.paths.files.join(task_suite::RENAME_TO)).unwrap(),
        b"1\n",
        "{story}"
    );
    // Its typing is confirmed though a caret touches its last letter, and the wait is met by
    // the file's label, not by the name still typed in a dialog.
    assert_eq!(
        r.code(),
        Some(0),
        "the effect is there but voxdesk says otherwise\n{story}"
    );
}

#[test]
fn a_destructive_command_is_refused_and_nothing_is_typed() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = workdir();
    let data = records("xterm-rm-refused");
    let t = task_suite::prepare("xterm-rm-refused", dir.path()).unwrap();
    let w = start(d, &t);
    let r = run(d, &t, &data);
    let story = r.story();
    assert!(
        t.paths.keep.join("inside/file.txt").is_file(),
        "the directory was removed\n{story}"
    );
    // Nothing was typed, not even without Enter: a probe typed now must run on an empty line.
    xdotool(d, &["windowactivate", "--sync", &w.1]);
    xdotool(d, &["type", "--delay", "30", "echo probe"]);
    xdotool(d, &["key", "Return"]);
    assert!(
        wait_for(Duration::from_secs(10), || !history(&t).is_empty()),
        "the probe never ran"
    );
    assert_eq!(
        history(&t),
        vec!["echo probe".to_string()],
        "something was typed into the terminal\n{story}"
    );
    // In auto mode without `allow_destructive` the rails ask, and nobody is there to say yes:
    // refused, nothing ran (exit 3).
    assert_eq!(r.code(), Some(3), "{story}");
    let events = r
        .dir
        .as_ref()
        .and_then(|d| std::fs::read_to_string(d.join("events.jsonl")).ok())
        .unwrap_or_default();
    assert!(
        events.contains("\"event\":\"confirmation_asked\"")
            || events.contains("\"event\":\"refusal\""),
        "no refusal or question recorded\n{story}"
    );
    assert!(
        r.record["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|s| s["rails"] != "approved"),
        "a step was approved\n{story}"
    );
}

/// A 3840x2160 desktop at 2x scale (GTK's `GDK_SCALE=2`, a 24 pt terminal font): the same
/// words work and are judged the same way, from outside (the file saved, the file made).
#[test]
fn a_4k_desktop_at_2x_scale_saves_and_runs_what_was_typed_once() {
    let Some(_rig) = rig() else { return };
    let x = PrivateX::sized("3840x2160x24", &[], true);
    let d = x.display.as_str();
    let dir = workdir();
    // mousepad at 2x: type, save.
    let file = dir.path().join("big.txt");
    std::fs::write(&file, "").unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    let editor = Task {
        name: "mousepad-4k",
        class: "Mousepad",
        ready: "big.txt",
        argv: vec!["mousepad".into(), file.display().to_string()],
        env: vec![
            ("HOME", home.display().to_string()),
            (
                "XDG_CONFIG_HOME",
                home.join(".config").display().to_string(),
            ),
            ("GSETTINGS_BACKEND", "memory".into()),
            ("GDK_SCALE", "2".into()),
        ],
        place: Some((200, 200, 1800, 1200)),
        settle_ms: 1500,
        text: "type \"Sharp words\", press ctrl+s".into(),
        exit: 0,
        paths: task_suite::prepare("xterm-touch", dir.path())
            .unwrap()
            .paths,
        effect: None,
    };
    let data = records("mousepad-4k");
    let (_app, _) = start(d, &editor);
    let r = run(d, &editor, &data);
    let saved = std::fs::read_to_string(&file).unwrap_or_default();
    assert_eq!(saved.trim_end_matches('\n'), "Sharp words", "{}", r.story());
    assert_eq!(r.code(), Some(0), "{}", r.story());
    // xterm with a 2x font: a command typed once, run once.
    let made = dir.path().join("made4k");
    let term = Task {
        name: "xterm-4k",
        class: "XTerm",
        ready: "bash",
        argv: [
            "xterm",
            "-fa",
            "Monospace",
            "-fs",
            "24",
            "-geometry",
            "80x20+200+200",
            "-e",
            "bash",
            "--norc",
            "--noprofile",
        ]
        .map(String::from)
        .to_vec(),
        env: vec![
            ("PS1", "$ ".into()),
            ("HOME", dir.path().display().to_string()),
        ],
        place: None,
        settle_ms: 800,
        text: format!("type \"touch {}\", press enter", made.display()),
        exit: 0,
        paths: task_suite::prepare("xterm-touch", dir.path())
            .unwrap()
            .paths,
        effect: None,
    };
    let data = records("xterm-4k");
    let (_term, _) = start(d, &term);
    let r = run(d, &term, &data);
    assert!(
        made.exists(),
        "{} was not made\n{}",
        made.display(),
        r.story()
    );
    assert_eq!(r.code(), Some(0), "{}", r.story());
}
