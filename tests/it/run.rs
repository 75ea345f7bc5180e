//! `voxdesk run` with the offline planner on the virtual desktop: a task that verifies, one that cannot find its label, a session killed -9, and the emergency stop mid-task.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

fn calc(display: &str) -> Guard {
    app(display, &["xcalc", "-geometry", "300x400+400+200"], "XCalc")
}

/// `voxdesk run --quiet` on xcalc with `args` (a mode, the task).
fn run_with(display: &str, data: &Path, args: &[&str]) -> Command {
    let mut c = bin();
    c.env("DISPLAY", display)
        .env("XDG_DATA_HOME", data)
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .args(["run", "--quiet"])
        .args(args);
    c
}

fn run_cmd(display: &str, data: &Path, task: &str) -> Command {
    run_with(display, data, &["--mode", "auto", task])
}

fn only_session(data: &Path) -> PathBuf {
    let root = data.join("voxdesk/sessions");
    let dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// Wait until the session has been created, then a little longer so its first wait is running.
fn wait_until_under_way(data: &Path) {
    let sessions = data.join("voxdesk/sessions");
    assert!(
        wait_for(Duration::from_secs(30), || std::fs::read_dir(&sessions)
            .map(|rd| rd.count() == 1)
            .unwrap_or(false)),
        "the session never started"
    );
    std::thread::sleep(Duration::from_millis(1500));
}

fn record(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap()
}

#[test]
fn the_calculator_task_verifies_and_every_record_written_parses() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    // The task, then `wait for 12`: the answer must appear on the display.
    let mut child = run_cmd(
        d,
        data.path(),
        "click 7, click +, click 5, click =, wait for 12",
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    // Read session.json as often as possible while it is being rewritten: every read must parse.
    let mut reads = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(rd) = std::fs::read_dir(data.path().join("voxdesk/sessions")) {
            for e in rd.flatten() {
                if let Ok(text) = std::fs::read_to_string(e.path().join("session.json")) {
                    serde_json::from_str::<serde_json::Value>(&text)
                        .unwrap_or_else(|err| panic!("half-written session.json: {err}\n{text}"));
                    reads += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(reads > 5, "only {reads} reads");
    assert!(
        out.contains("Clicking 7.") && out.contains("Done: \"12\" is on screen."),
        "narration: {out}"
    );
    let dir = only_session(data.path());
    let r = record(&dir);
    assert_eq!(r["status"], "done");
    assert_eq!(r["provider"], "local");
    assert_eq!(r["prompt_version"], "tools.v4+packet.v4");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    assert!(
        steps.iter().all(|s| s["verification"] == "verified"),
        "{steps:?}"
    );
    assert!(dir.join("step-001.png").is_file() && dir.join("step-001-verify.png").is_file());
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(events
        .lines()
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
    assert!(events.contains("\"event\":\"transition\""));
    // The packet a model would read shows each past step with its verdict.
    assert!(
        events.contains("→ verified: the screen changed"),
        "the packet's history has no verdicts"
    );
    // The record is private: it holds screenshots of the desktop.
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&data.path().join("voxdesk")), 0o700);
    assert_eq!(mode(&data.path().join("voxdesk/sessions")), 0o700);
    assert_eq!(mode(&dir), 0o700);
    for f in std::fs::read_dir(&dir).unwrap() {
        let f = f.unwrap().path();
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }

    // The report, looked at in a real browser.
    let o = output(
        bin()
            .env("XDG_DATA_HOME", data.path())
            .arg("report")
            .arg(&dir),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = dir.join("report.html");
    let text = std::fs::read_to_string(&html).unwrap();
    assert_eq!(text.matches("badge verified").count(), 5);
    assert!(text.contains("class=\"dot\""), "click points marked");
    let shot = data.path().join("report.png");
    let profile = tempfile::tempdir().unwrap();
    let st = chromium(profile.path())
        .args(["--headless", "--window-size=1400,1200"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("chromium (apt-get install chromium)");
    assert!(st.success());
    let img = image::open(&shot).unwrap().into_rgb8();
    // The green "verified" badge and an embedded screenshot's desktop blue are both rendered.
    let has = |c: [u8; 3]| {
        img.pixels()
            .any(|p| p.0.iter().zip(c).all(|(a, b)| a.abs_diff(b) < 12))
    };
    assert!(has([0x16, 0xa3, 0x4a]), "no verified badge rendered");
    assert!(has([0x3a, 0x6e, 0xa5]), "no screenshot rendered");
}

#[test]
fn a_missing_label_is_looked_for_by_scrolling_and_fails_without_pressing_anything() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let o = output(&mut run_cmd(d, data.path(), "click Frobnicate"));
    assert_eq!(o.status.code(), Some(1));
    let r = record(&only_session(data.path()));
    assert_eq!(r["status"], "failed");
    // It looks further down the window (a calculator does not scroll: a scroll that moves
    // nothing ends the search), and never presses anything.
    let steps = r["steps"].as_array().unwrap();
    assert!((1..=7).contains(&steps.len()), "{steps:?}");
    for s in steps {
        let actions = s["actions"]["actions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            actions.iter().all(|a| a["action"] == "scroll"),
            "only scrolls: {s}"
        );
    }
    let summary = r["summary"].as_str().unwrap();
    assert!(
        summary.contains("\"Frobnicate\" is not on screen"),
        "{summary}"
    );
}

#[test]
fn a_session_killed_mid_run_reloads_as_aborted() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let mut child = run_cmd(d, data.path(), "wait 20 s, click 8")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until_under_way(data.path());
    let _ = Command::new("kill")
        .args(["-9", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let dir = only_session(data.path());
    assert_eq!(record(&dir)["status"], "running", "nothing could update it");
    let o = output(bin().env("XDG_DATA_HOME", data.path()).arg("sessions"));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("aborted"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(record(&dir)["status"], "aborted", "saved as aborted");
}

#[test]
fn the_emergency_stop_ends_the_session_as_stopped() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let child = run_cmd(d, data.path(), "wait 15 s, click 8")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_under_way(data.path());
    hold_stop_combo(d);
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(record(&only_session(data.path()))["status"], "stopped");
}

/// Chromium showing `tests/fixtures/pages/menu.html` as an app window: a "File" menu that lacks
/// the item the task asks for.
fn menu_page(display: &str, profile: &Path) -> Guard {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pages/menu.html");
    let g = Guard(
        chromium(profile)
            .env("DISPLAY", display)
            .args(["--window-position=100,100", "--window-size=900,600"])
            .arg(format!("--app=file://{}", page.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium (apt-get install chromium)"),
    );
    let find = || {
        Command::new("xdotool")
            .env("DISPLAY", display)
            .args(["search", "--onlyvisible", "--name", "Menu test"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    assert!(
        wait_for(Duration::from_secs(30), || !find().is_empty()),
        "the Chromium window never appeared"
    );
    let id = find().lines().next().unwrap_or_default().to_string();
    let _ = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(["windowactivate", "--sync", &id])
        .status();
    // The page is drawn a moment after the window maps.
    std::thread::sleep(Duration::from_millis(1500));
    g
}

fn look(display: &str) -> Vec<String> {
    let o = output(bin().env("DISPLAY", display).args(["look", "--json"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_wrong_menu_is_closed_with_escape_once_and_the_click_is_not_repeated() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let profile = tempfile::tempdir().unwrap();
    let _page = menu_page(d, profile.path());
    assert!(look(d).iter().any(|t| t == "File"), "{:?}", look(d));
    let data = tempfile::tempdir().unwrap();
    let o = output(
        bin()
            .env("DISPLAY", d)
            .env("XDG_DATA_HOME", data.path())
            .env("VOXDESK_ALLOW_APPS", "Chromium")
            .args(["run", "--quiet", "--mode", "auto", "open File then Save As"]),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let dir = only_session(data.path());
    let r = record(&dir);
    assert_eq!(r["status"], "failed");
    let summary = r["summary"].as_str().unwrap();
    // Clicking File was expected to bring up "Save As"; the menu the page drew instead is
    // named, closed, and the click is not tried again.
    assert!(
        summary.contains("Clicking File was done, but I could not confirm it")
            && summary.contains("\"Save As\" did not appear")
            && summary.contains("a menu or popup drawn at"),
        "{summary}"
    );
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["verification"], "unconfirmed", "{steps:?}");
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let escapes = events
        .lines()
        .filter(|l| l.contains("\"recovery\"") && l.contains("\"ran\":true"))
        .count();
    assert_eq!(escapes, 1, "{events}");
    let now = look(d);
    assert!(
        now.iter().any(|t| t == "File") && !now.iter().any(|t| t == "Print"),
        "the menu is still open: {now:?}"
    );
}

/// A task the offline planner cannot read, or a report of a session that does not exist: one
/// clear line, and nothing started or recorded (no desktop needed).
#[test]
fn an_unreadable_task_or_unknown_session_is_refused_and_records_nothing() {
    let data = tempfile::tempdir().unwrap();
    for task in ["frobnicate the thing", "", "click"] {
        let o = output(
            bin()
                .env("XDG_DATA_HOME", data.path())
                .env_remove("DISPLAY")
                .args(["run", task]),
        );
        assert_eq!(o.status.code(), Some(2), "{task:?}");
        assert_clean_failure(&o, "the task");
    }
    assert!(
        !data.path().join("voxdesk").exists(),
        "a session was recorded"
    );
    let o = output(
        bin()
            .env("XDG_DATA_HOME", data.path())
            .args(["report", "no-such-session"]),
    );
    assert_clean_failure(&o, "no session \"no-such-session\"");
}

/// With `record.screenshots = false` a session keeps no picture of the desktop; it still records
/// every step.
#[test]
fn a_session_without_screenshots_keeps_none() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let o = output(
        run_cmd(d, data.path(), "click 7, wait for 7").env("VOXDESK_RECORD_SCREENSHOTS", "false"),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let dir = only_session(data.path());
    assert_eq!(record(&dir)["steps"].as_array().unwrap().len(), 2);
    let pngs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
        .collect();
    assert!(pngs.is_empty(), "{pngs:?}");
}

/// SIGINT mid-typing and SIGTERM mid-wait: the queue is dropped, nothing is left held, the
/// session is recorded as stopped, exit 4.
#[test]
fn sigint_and_sigterm_stop_the_session_with_nothing_held() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _term = app(d, &["xterm", "-geometry", "80x20+100+100"], "XTerm");
    let long = format!("type \"{}\"", "b".repeat(2500));
    for (sig, task) in [("INT", long.as_str()), ("TERM", "wait 20 s, type hello")] {
        let data = tempfile::tempdir().unwrap();
        let child = bin()
            .env("DISPLAY", d)
            .env("XDG_DATA_HOME", data.path())
            .env("VOXDESK_ALLOW_APPS", "XTerm")
            .args(["run", "--quiet", "--mode", "auto", task])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if sig == "INT" {
            assert!(
                wait_for(Duration::from_secs(30), || look(d)
                    .iter()
                    .any(|t| t.contains("bbbb"))),
                "typing never started"
            );
        } else {
            wait_until_under_way(data.path());
        }
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status();
        let o = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(4),
            "SIG{sig}: {out} {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let dir = only_session(data.path());
        let r = record(&dir);
        assert_eq!(r["status"], "stopped", "SIG{sig}");
        assert!(
            r["summary"]
                .as_str()
                .unwrap()
                .contains(&format!("SIG{sig}")),
            "{}",
            r["summary"]
        );
        let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        assert!(events.contains("\"event\":\"emergency_stop\""), "{events}");
        assert!(
            keys_down(d).is_empty(),
            "SIG{sig}: keys still held: {:?}",
            keys_down(d)
        );
    }
}

/// The X server dies mid-task: the run ends on its own (no hang, no panic): the emergency stop can
/// no longer be watched, so the session stops, and its record says so (regression: Xlib, under
/// device_query, used to exit the process and leave the record at `running`).
#[test]
fn a_display_that_goes_away_mid_run_leaves_a_true_record() {
    if rig().is_none() {
        return;
    }
    let mut x = PrivateX::start(&[], true);
    let data = tempfile::tempdir().unwrap();
    let mut child = bin()
        .env("DISPLAY", &x.display)
        .env("XDG_DATA_HOME", data.path())
        .args([
            "run",
            "--quiet",
            "--mode",
            "auto",
            "wait 2 s, wait 2 s, wait 2 s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_under_way(data.path());
    x.kill();
    let finished = wait_for(Duration::from_secs(60), || {
        child.try_wait().ok().flatten().is_some()
    });
    if !finished {
        let _ = child.kill();
        panic!("voxdesk run hung after the display went away");
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let o = output(bin().env("XDG_DATA_HOME", data.path()).arg("sessions"));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(!listed.contains("running"), "{listed}");
    let r = record(&only_session(data.path()));
    assert_eq!(r["status"], "stopped", "{r}");
    assert!(
        r["summary"]
            .as_str()
            .unwrap()
            .contains("display going away"),
        "{}",
        r["summary"]
    );
}

/// The default mode, observe, plans and records but touches nothing: the calculator still shows
/// no 77, the console says so before it starts, and the record and the last words say that
/// nothing was done (they said "done: 2 steps").
#[test]
fn observe_mode_touches_nothing_and_says_so() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let o = output(run_with(d, data.path(), &["click 7, click 7"]).env_remove("VOXDESK_MODE"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.starts_with(
            "observe mode: voxdesk plans and records each step but clicks and types nothing"
        ),
        "{out}"
    );
    let said = "Observe mode, so nothing was clicked or typed: 2 steps recorded.";
    assert!(out.contains(said), "{out}");
    let r = record(&only_session(data.path()));
    assert_eq!(r["summary"], said);
    assert!(r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["rails"] == "recorded"));
    let seen = look(d);
    assert!(!seen.iter().any(|t| t.contains("77")), "{seen:?}");
}
