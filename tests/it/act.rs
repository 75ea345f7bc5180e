//! `voxdesk act` on the virtual desktop with real windows and real input: clicks land, rails refuse with nothing moving, the lock holds and recovers, the emergency stop interrupts a long type.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

fn xdotool(display: &str, args: &[&str]) -> String {
    let o = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(args)
        .output()
        .expect("xdotool");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn look(display: &str) -> serde_json::Value {
    let o = output(bin().env("DISPLAY", display).args(["look", "--json"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Centre of the first target with `text` (optionally inside a y-range of the screen), in the
/// picture's pixels as `look` gives them: the space `act` takes.
fn point_of(v: &serde_json::Value, text: &str, ys: std::ops::Range<i64>) -> (f64, f64) {
    let t = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["text"] == text && ys.contains(&screen_box(v, t).1))
        .unwrap_or_else(|| panic!("{text} not on screen"));
    picture_centre(t)
}

fn act(
    display: &str,
    extra_env: &[(&str, &str)],
    args: &[&str],
    batch: &str,
) -> (Option<i32>, serde_json::Value, String) {
    let mut c = bin();
    c.env("DISPLAY", display).env("VOXDESK_MODE", "auto");
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let o = output(c.arg("act").arg("--json").args(args).arg(batch));
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null);
    (o.status.code(), v, stderr)
}

/// The xcalc display's number: the target in the display strip at the top of the window.
fn display_value(display: &str) -> String {
    let v = look(display);
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            let (x, y, _, _) = screen_box(&v, t);
            (220..245).contains(&y) && x > 600
        })
        .map(|t| t["text"].as_str().unwrap().to_string())
        .next()
        .unwrap_or_default()
}

#[test]
fn click_on_a_target_lands_and_refusals_move_nothing() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = app(d, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    let env = [("VOXDESK_ALLOW_APPS", "XCalc")];
    assert_eq!(display_value(d), "0");
    let v = look(d);
    let (x, y) = point_of(&v, "5", 500..560);
    let (code, rep, err) = act(
        d,
        &env,
        &[],
        &format!(r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}}]}}"#),
    );
    assert_eq!(code, Some(0), "{rep} {err}");
    assert_eq!(rep["actions"][0]["outcome"], "done");
    assert_eq!(display_value(d), "5", "xcalc reacted to the click");

    // 21 actions: refused whole, nothing happens.
    let many = vec![format!(r#"{{"action":"click","x":{x},"y":{y}}}"#); 21].join(",");
    let (code, rep, _) = act(d, &env, &[], &format!(r#"{{"actions":[{many}]}}"#));
    assert_eq!(code, Some(3));
    assert_eq!(rep["refusal"]["rule"], "max-actions");
    assert_eq!(display_value(d), "5", "nothing ran");

    // A forbidden region: refused, and the pointer does not move.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[rails]\nforbidden_regions = [{x=400, y=480, w=300, h=120}]\n",
    )
    .unwrap();
    xdotool(d, &["mousemove", "50", "50"]);
    let (code, rep, _) = act(
        d,
        &env,
        &["--config", cfg.to_str().unwrap()],
        &format!(r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}}]}}"#),
    );
    assert_eq!(code, Some(3), "{rep}");
    assert_eq!(rep["refusal"]["rule"], "forbidden-region");
    assert!(
        xdotool(d, &["getmouselocation"]).starts_with("x:50 y:50"),
        "pointer moved: {}",
        xdotool(d, &["getmouselocation"])
    );
    assert_eq!(display_value(d), "5");

    // Not on the allowlist.
    let (code, rep, _) = act(
        d,
        &[("VOXDESK_ALLOW_APPS", "Firefox")],
        &[],
        &format!(r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}}]}}"#),
    );
    assert_eq!(
        (code, rep["refusal"]["rule"].as_str()),
        (Some(3), Some("app-allowlist"))
    );
    // Unusable input: exit 2.
    let (code, _, err) = act(
        d,
        &env,
        &[],
        r#"{"actions":[{"action":"scroll","direction":"sideways"}]}"#,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("action 1: `direction`"), "{err}");
}

/// `voxdesk act` takes the observation `voxdesk look` printed (another process), with its target
/// ids and its picture's pixels, while the screen still shows what the batch names; a target
/// that went away is a stale observation, and nothing runs.
#[test]
fn act_accepts_the_observation_look_printed_while_its_targets_are_there() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = app(d, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    let env = [("VOXDESK_ALLOW_APPS", "XCalc")];
    assert_eq!(display_value(d), "0");
    let v = look(d);
    let id_of = |text: &str| {
        v["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["text"] == text && screen_box(&v, t).1 > 300)
            .unwrap_or_else(|| panic!("{text} not on screen"))["id"]
            .clone()
    };
    let obs = v["observation_id"].as_str().unwrap().to_string();
    let click = |id: &serde_json::Value| {
        format!(r#"{{"observation_id":"{obs}","actions":[{{"action":"click","target":{id}}}]}}"#)
    };
    // Its target 7, by look's id.
    let (code, rep, err) = act(d, &env, &[], &click(&id_of("7")));
    assert_eq!(code, Some(0), "{rep} {err}");
    assert_eq!(display_value(d), "7");
    // The display changed; the 8 key did not: look's observation still names it.
    let (code, rep, err) = act(d, &env, &[], &click(&id_of("8")));
    assert_eq!(code, Some(0), "{rep} {err}");
    assert_eq!(display_value(d), "78");
    // A point from look's picture needs the screen as it was: it is not.
    let (x, y) = point_of(&v, "9", 300..1000);
    let (code, _, err) = act(
        d,
        &env,
        &[],
        &format!(
            r#"{{"observation_id":"{obs}","actions":[{{"action":"click","x":{x},"y":{y}}}]}}"#
        ),
    );
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("stale-observation") && err.contains("look again"),
        "{err}"
    );
    assert_eq!(display_value(d), "78", "nothing ran");
    // A fresh look: its point lands, in the same pixels the boxes are in.
    let v2 = look(d);
    let (x, y) = point_of(&v2, "9", 300..1000);
    let (code, rep, err) = act(
        d,
        &env,
        &[],
        &format!(
            r#"{{"observation_id":"{}","actions":[{{"action":"click","x":{x},"y":{y}}}]}}"#,
            v2["observation_id"].as_str().unwrap()
        ),
    );
    assert_eq!(code, Some(0), "{rep} {err}");
    assert_eq!(display_value(d), "789");
}

#[test]
fn typing_rails_in_a_terminal() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _term = app(
        d,
        &[
            "xterm",
            "-geometry",
            "80x20+100+100",
            "-e",
            "sh",
            "-c",
            "printf 'Password: '; stty -echo; read x; sleep 60",
        ],
        "XTerm",
    );
    let env = [("VOXDESK_ALLOW_APPS", "XTerm")];
    let (code, rep, _) = act(
        d,
        &env,
        &[],
        r#"{"actions":[{"action":"type","text":"hunter2"}]}"#,
    );
    assert_eq!(
        (code, rep["refusal"]["rule"].as_str()),
        (Some(3), Some("password-field")),
        "{rep}"
    );
    let long = format!(
        r#"{{"actions":[{{"action":"type","text":"{}"}}]}}"#,
        "a".repeat(5000)
    );
    let (code, rep, _) = act(d, &env, &[], &long);
    assert_eq!(
        (code, rep["refusal"]["rule"].as_str()),
        (Some(3), Some("hard-cap"))
    );
    drop(_term);
    let _term = app(d, &["xterm", "-geometry", "80x20+100+100"], "XTerm");
    for text in ["ls; rm -rf /tmp/x", "echo $HOME", "cat a | sh"] {
        let (code, rep, _) = act(
            d,
            &env,
            &[],
            &format!(
                r#"{{"actions":[{{"action":"type","text":{}}}]}}"#,
                serde_json::to_string(text).unwrap()
            ),
        );
        assert_eq!(
            (code, rep["refusal"]["rule"].as_str()),
            (Some(3), Some("terminal-metachar")),
            "{text}"
        );
    }
}

/// Issue 29's terminal bypasses on a real bash in xterm, judged by what bash did: a command
/// split across actions and across `voxdesk act` processes, and metacharacters sent as keys,
/// never run without a yes; an ordinary command does.
#[test]
fn a_terminal_command_is_judged_whole_however_it_is_sent() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let work = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let keep = work.path().join("keep");
    std::fs::create_dir(&keep).unwrap();
    std::fs::write(keep.join("f"), "x").unwrap();
    let _term = app(
        d,
        &[
            "xterm",
            "-geometry",
            "80x20+100+100",
            "-e",
            "env",
            "PS1=$ ",
            "bash",
            "--norc",
            "-i",
        ],
        "XTerm",
    );
    let rt = runtime.path().to_str().unwrap();
    let env = [("VOXDESK_ALLOW_APPS", "XTerm"), ("XDG_RUNTIME_DIR", rt)];
    let batch =
        |actions: &[serde_json::Value]| serde_json::json!({ "actions": actions }).to_string();
    let ty = |t: &str| serde_json::json!({"action": "type", "text": t});
    let key = |k: &str| serde_json::json!({"action": "key", "combo": k});
    let w = work.path().display().to_string();
    // The control: an ordinary command runs.
    let (code, rep, err) = act(
        d,
        &env,
        &[],
        &batch(&[
            ty(&format!("cd {w}")),
            key("enter"),
            ty("touch ok"),
            key("enter"),
        ]),
    );
    assert_eq!(code, Some(0), "{rep} {err}");
    assert!(
        wait_for(Duration::from_secs(5), || work.path().join("ok").exists()),
        "bash ran touch"
    );
    // `r` in one process, `m -rf keep` and Return in the next: the line is judged whole,
    // asked, no yes, nothing runs.
    let (code, rep, err) = act(d, &env, &[], &batch(&[ty("r")]));
    assert_eq!(code, Some(0), "{rep} {err}");
    let (code, rep, err) = act(
        d,
        &env,
        &[],
        &batch(&[ty("m -rf kee"), key("p"), key("enter")]),
    );
    assert_ne!(code, Some(0), "{rep} {err}");
    assert_eq!(rep["status"], "declined", "{rep}");
    // Metacharacters as keys, with the layout's shift: refused before anything is sent.
    for k in [";", "shift+\\", "shift+7", "shift+4"] {
        let (code, rep, _) = act(
            d,
            &env,
            &[],
            &batch(&[
                key("ctrl+c"),
                ty("echo a"),
                key(k),
                ty(" touch made"),
                key("enter"),
            ]),
        );
        assert_eq!(
            (code, rep["refusal"]["rule"].as_str()),
            (Some(3), Some("terminal-metachar")),
            "{k}: {rep}"
        );
    }
    // A Return typed as text is the Return key: judged as one.
    let (code, rep, _) = act(d, &env, &[], &batch(&[key("ctrl+c"), ty("rm -rf keep\r")]));
    assert_eq!(code, Some(3), "{rep}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(keep.join("f").exists(), "keep was not deleted");
    assert!(
        !work.path().join("made").exists(),
        "nothing ran after a metacharacter"
    );
}

/// A real question dialog (zenity, GTK) asking to delete a folder, with a plain Delete button:
/// neither a click on Delete nor Enter, Space or a typed return answers it, and the dialog is
/// still open; Cancel is clicked, and zenity's exit code says the answer was no.
#[test]
fn a_real_delete_question_is_never_answered_yes() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let mut z = app(
        d,
        &[
            "zenity",
            "--question",
            "--title=Folder",
            "--text=Delete the folder “keep” and everything in it?",
            "--ok-label=Delete",
            "--cancel-label=Cancel",
            "--width=460",
        ],
        "Zenity",
    );
    let env = [("VOXDESK_ALLOW_APPS", "Zenity")];
    let v = look(d);
    let (x, y) = point_of(&v, "Delete", 0..2000);
    let click = |x: f64, y: f64| format!(r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}}]}}"#);
    let (code, rep, err) = act(d, &env, &[], &click(x, y));
    assert_eq!(
        (code, rep["refusal"]["rule"].as_str()),
        (Some(3), Some("destructive-dialog")),
        "{rep} {err}"
    );
    for a in [
        r#"{"action":"key","combo":"enter"}"#,
        r#"{"action":"key","combo":"space"}"#,
        r#"{"action":"type","text":"\r"}"#,
        r#"{"action":"type","text":" "}"#,
    ] {
        let (code, rep, _) = act(d, &env, &[], &format!(r#"{{"actions":[{a}]}}"#));
        assert_eq!(
            (code, rep["refusal"]["rule"].as_str()),
            (Some(3), Some("destructive-dialog")),
            "{a}: {rep}"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        z.0.try_wait().unwrap().is_none(),
        "the question is still open"
    );
    // The control: the same clicks reach the dialog, and Cancel answers it.
    let (x, y) = point_of(&v, "Cancel", 0..2000);
    let (code, rep, err) = act(d, &env, &[], &click(x, y));
    assert_eq!(code, Some(0), "{rep} {err}");
    let mut status = None;
    assert!(wait_for(Duration::from_secs(5), || {
        status = z.0.try_wait().unwrap();
        status.is_some()
    }));
    assert_eq!(status.unwrap().code(), Some(1), "zenity was answered no");
}

/// Keys are judged for the application they reach: xcalc has the keyboard, a click lands on
/// an xterm beside it (which would take the keyboard), and the command typed after it is
/// refused, so bash never runs it.
#[test]
fn keys_after_a_click_on_another_window_never_reach_it() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let work = tempfile::tempdir().unwrap();
    let made = work.path().join("made");
    let _term = app(
        d,
        &[
            "xterm",
            "-geometry",
            "60x10+100+600",
            "-e",
            "env",
            "PS1=$ ",
            "bash",
            "--norc",
            "-i",
        ],
        "XTerm",
    );
    let _calc = app(d, &["xcalc", "-geometry", "300x400+900+200"], "XCalc");
    let env = [("VOXDESK_ALLOW_APPS", "XCalc")];
    // The xterm's middle, in model-picture pixels (1920x1080 → 1280x720).
    let (x, y) = (300.0 * 1280.0 / 1920.0, 680.0 * 720.0 / 1080.0);
    let batch = serde_json::json!({"actions": [
        {"action": "click", "x": x, "y": y},
        {"action": "type", "text": format!("touch {}\n", made.display())},
    ]})
    .to_string();
    let (code, rep, err) = act(d, &env, &[], &batch);
    assert_eq!(
        (code, rep["refusal"]["rule"].as_str()),
        (Some(3), Some("focus-elsewhere")),
        "{rep} {err}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(!made.exists(), "bash ran what was typed");
}

#[test]
fn a_second_session_is_refused_until_the_first_dies() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let runtime = tempfile::tempdir().unwrap();
    let rt = runtime.path().to_str().unwrap();
    let mut first = bin()
        .env("DISPLAY", d)
        .env("XDG_RUNTIME_DIR", rt)
        .args([
            "act",
            "--mode",
            "auto",
            r#"{"actions":[{"action":"wait","ms":20000}]}"#,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = runtime
        .path()
        .join("voxdesk")
        .join(format!("gui-{}.lock", d.replace(':', "_")));
    assert!(
        wait_for(Duration::from_secs(20), || lock.exists()),
        "first session took the lock"
    );
    // The lock names who drives the screen: private, like the records.
    let mode = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(lock.parent().unwrap()), 0o700);
    assert_eq!(mode(&lock), 0o600);
    let (code, _, err) = act(
        d,
        &[("XDG_RUNTIME_DIR", rt)],
        &[],
        r#"{"actions":[{"action":"wait","ms":1}]}"#,
    );
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.id())),
        "names the holder: {err}"
    );
    // kill -9: no cleanup ran, the record is still there, and it is recovered.
    let _ = Command::new("kill")
        .args(["-9", &first.id().to_string()])
        .status();
    let _ = first.wait();
    assert!(lock.exists());
    let (code, rep, err) = act(
        d,
        &[("XDG_RUNTIME_DIR", rt)],
        &[],
        r#"{"actions":[{"action":"wait","ms":1}]}"#,
    );
    assert_eq!(code, Some(0), "{rep} {err}");
}

#[test]
fn emergency_stop_interrupts_a_long_type_and_leaves_nothing_held() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _term = app(d, &["xterm", "-geometry", "80x20+100+100"], "XTerm");
    let batch = format!(
        r#"{{"actions":[{{"action":"type","text":"{}"}},{{"action":"wait","ms":100}}]}}"#,
        "b".repeat(3000)
    );
    let child = bin()
        .env("DISPLAY", d)
        .env("VOXDESK_MODE", "auto")
        .env("VOXDESK_ALLOW_APPS", "XTerm")
        .args(["act", "--json", &batch])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until typing is visibly under way, then hold the stop combination.
    assert!(
        wait_for(Duration::from_secs(30), || look(d)["targets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["text"].as_str().is_some_and(|s| s.contains("bbbb")))),
        "typing started"
    );
    hold_stop_combo(d);
    let o = child.wait_with_output().unwrap();
    let rep: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(o.status.code(), Some(4), "{rep}");
    assert_eq!(rep["status"], "stopped");
    assert_eq!(
        rep["actions"][0]["outcome"], "stopped",
        "interrupted mid-type"
    );
    assert_eq!(
        rep["actions"][1]["outcome"], "stopped",
        "the queue was dropped"
    );
    assert!(
        keys_down(d).is_empty(),
        "keys still held: {:?}",
        keys_down(d)
    );
}

/// The desk refuses to run a batch again right after it ran and could not be confirmed, until
/// the driver has looked (a model that retries blindly would type twice); judged by what the
/// terminal's program received.
#[test]
fn an_unconfirmed_batch_is_not_run_again_without_a_look() {
    use voxdesk_core::action::parse_batch;
    use voxdesk_desk::tool::{ActStatus, ToolCall, ToolResult};
    use voxdesk_desk::{confirm::Nobody, Desk, Host};
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = tempfile::tempdir().unwrap();
    let got = dir.path().join("got.txt");
    let cmd = format!("cat > {}", got.display());
    let _term = app(
        d,
        &[
            "xterm",
            "-geometry",
            "80x20+100+100",
            "-e",
            "sh",
            "-c",
            &cmd,
        ],
        "XTerm",
    );
    let env = |k: &str| match k {
        "VOXDESK_ALLOW_APPS" => Some("XTerm".to_string()),
        "VOXDESK_MODE" => Some("auto".to_string()),
        _ => None,
    };
    let settings = voxdesk_core::config::load(None, env, &[]).unwrap().settings;
    let mut desk = Desk::new(&settings, None, Box::new(Nobody), Default::default()).unwrap();
    let id = |r: &ToolResult| r.observation().unwrap().id.clone();
    let batch = |obs: &str| {
        parse_batch(&format!(
            r#"{{"observation_id":"{obs}","actions":[{{"action":"type","text":"abc"}}],"expect":{{"appears":"zzzqqq"}}}}"#
        ))
        .unwrap()
    };
    let first = desk.call(&ToolCall::Observe);
    let r = desk.call(&ToolCall::Act(batch(&id(&first))));
    let ToolResult::Act(a) = &r else {
        panic!("{r:?}")
    };
    assert_eq!(a.verdict.name(), "unconfirmed", "{:?}", a.verdict);
    assert!(!a.repeatable);
    // Straight again, on the screen it returned: refused, nothing typed.
    let again = desk.call(&ToolCall::Act(batch(&id(&r))));
    let ToolResult::Act(b) = &again else {
        panic!("{again:?}")
    };
    assert_eq!(b.status, ActStatus::Refused, "{:?}", b);
    assert_eq!(b.refusal.as_ref().unwrap().rule, "blind-repeat");
    // After a look the driver may decide to do it again.
    let look = desk.call(&ToolCall::Observe);
    let third = desk.call(&ToolCall::Act(batch(&id(&look))));
    let ToolResult::Act(c) = &third else {
        panic!("{third:?}")
    };
    assert_eq!(c.status, ActStatus::Ran, "{c:?}");
    drop(desk);
    xdotool(d, &["key", "Return"]);
    assert!(
        wait_for(Duration::from_secs(5), || std::fs::read_to_string(&got)
            .is_ok_and(|s| s.ends_with('\n'))),
        "cat never got the line"
    );
    assert_eq!(
        std::fs::read_to_string(&got).unwrap(),
        "abcabc\n",
        "typed exactly twice: once, then once more after a look"
    );
}
