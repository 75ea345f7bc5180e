//! The accessibility tree fused with OCR on real applications (Chromium, GTK 3, GTK 2, Qt) on the rig's accessibility bus: every control a target with its role and state, typed text verified exactly, ids kept across an unrelated change, password fields refused by role, a dialog read whole, a scrolled page read again.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

fn look(display: &str) -> Value {
    let o = output(bin().env("DISPLAY", display).args(["look", "--json"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn targets(v: &Value) -> Vec<Value> {
    v["targets"].as_array().cloned().unwrap_or_default()
}

/// The target with this role and text, if any.
fn control(v: &Value, role: &str, text: &str) -> Option<Value> {
    targets(v)
        .into_iter()
        .find(|t| t["role"] == role && t["text"] == text)
}

/// Look until `ready` holds (an app exposes its tree a moment after its window shows).
fn look_until(display: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let ok = wait_for(Duration::from_secs(15), || {
        last = look(display);
        ready(&last)
    });
    assert!(ok, "{what}: {}", describe(&last));
    last
}

/// The targets one per line, for a failure message.
fn describe(v: &Value) -> String {
    targets(v)
        .iter()
        .map(|t| {
            format!(
                "{} {:?} {} {} {}",
                t["id"], t["text"], t["role"], t["states"], t["source"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Centre of a target, in the picture's pixels as `look` gives them (the space `act` takes).
fn centre(t: &Value) -> (f64, f64) {
    picture_centre(t)
}

fn act(display: &str, batch: &str) -> (Option<i32>, Value, String) {
    let o = output(
        bin()
            .env("DISPLAY", display)
            .env("VOXDESK_MODE", "auto")
            .env("VOXDESK_ALLOW_APPS", "Chromium,Zenity")
            .args(["act", "--json", batch]),
    );
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (
        o.status.code(),
        v,
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

const FORM: &str = r#"<!doctype html><html><head><title>Join the club</title></head>
<body style="font:18px sans-serif;margin:30px">
<p><label for=n>Full name</label> <input id=n></p>
<p><label for=e>Email</label> <input id=e type=email></p>
<p><label for=t>Token</label> <input id=t type=password></p>
<p><input type=checkbox id=c><label for=c>I accept the terms</label></p>
<p><input type=radio name=r id=r1 checked><label for=r1>Small</label>
   <input type=radio name=r id=r2><label for=r2>Large</label></p>
<p><label for=s>Size</label> <select id=s><option>One<option>Two</select></p>
<p><button type=button onclick="document.title='Joined'">Join</button></p>
</body></html>"#;

fn form(display: &str, dir: &std::path::Path) -> Guard {
    let page = dir.join("form.html");
    std::fs::write(&page, FORM).unwrap();
    let mut c = chromium(&dir.join("profile"));
    c.args([
        "--window-position=0,0",
        "--window-size=900,700",
        &format!("--app=file://{}", page.display()),
    ]);
    let g = Guard(
        c.env("DISPLAY", display)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_for(Duration::from_secs(20), || {
        Command::new("xdotool")
            .env("DISPLAY", display)
            .args([
                "search",
                "--name",
                "Join the club",
                "windowactivate",
                "--sync",
            ])
            .status()
            .is_ok_and(|s| s.success())
    }));
    g
}

#[test]
fn every_control_of_a_chromium_form_is_a_target_with_its_role_and_state() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = tempfile::tempdir().unwrap();
    let _browser = form(d, dir.path());
    let v = look_until(d, "the form's controls from the tree", |v| {
        control(v, "push button", "Join").is_some()
    });
    let name = control(&v, "entry", "Full name").unwrap_or_else(|| panic!("{}", describe(&v)));
    assert_eq!(name["value"], "", "an empty field is a target: {name}");
    assert!(control(&v, "entry", "Email").is_some(), "{}", describe(&v));
    let token = control(&v, "password text", "Token").unwrap_or_else(|| panic!("{}", describe(&v)));
    assert!(
        token.get("value").is_none(),
        "a password's value is never read"
    );
    let terms = control(&v, "check box", "I accept the terms")
        .unwrap_or_else(|| panic!("{}", describe(&v)));
    assert_eq!(terms["states"], serde_json::json!(["unchecked"]));
    let small = control(&v, "radio button", "Small").unwrap();
    let large = control(&v, "radio button", "Large").unwrap();
    assert_eq!(small["states"], serde_json::json!(["checked"]));
    assert_eq!(large["states"], serde_json::json!(["unchecked"]));
    assert!(
        control(&v, "combo box", "Size").is_some(),
        "{}",
        describe(&v)
    );
    // Check boxes, radios and fields are targets of their own, not glued to their labels.
    let ids: Vec<&Value> = vec![&name["id"], &terms["id"], &small["id"], &large["id"]];
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids.len(), unique.len());
    // Only one target says "I accept the terms": the label OCR read is folded into the box.
    assert_eq!(
        targets(&v)
            .iter()
            .filter(|t| t["text"]
                .as_str()
                .is_some_and(|s| s.contains("accept the terms")))
            .count(),
        1,
        "{}",
        describe(&v).replace('\n', " | ")
    );

    // Typed text is verified exactly, non-ASCII too (the field's value, not OCR's reading).
    let (x, y) = centre(&name);
    let typed = "Zoë Ångström";
    let (code, r, err) = act(
        d,
        &format!(
            r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}},{{"action":"type","text":"{typed}"}}],"expect":{{"appears":["{typed}"]}}}}"#
        ),
    );
    assert_eq!(code, Some(0), "{r} {err}");
    assert_eq!(r["verification"]["verdict"], "verified", "{r}");
    assert!(
        r["verification"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("exactly"),
        "the tree's word: {r}"
    );
    let after = look_until(d, "the typed name in the field's value", |v| {
        control(v, "entry", "Full name").is_some_and(|t| t["value"] == typed)
    });
    // The box becomes checked, and the tree says so.
    let terms = control(&after, "check box", "I accept the terms").unwrap();
    let (x, y) = centre(&terms);
    let (code, r, err) = act(
        d,
        &format!(
            r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}}],"expect":{{"changes":true}}}}"#
        ),
    );
    assert_eq!(code, Some(0), "{r} {err}");
    assert!(
        r["verification"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("became checked"),
        "{r}"
    );
    look_until(d, "the box checked", |v| {
        control(v, "check box", "I accept the terms").is_some_and(|t| {
            t["states"] == serde_json::json!(["checked", "focused"])
                || t["states"] == serde_json::json!(["checked"])
        })
    });

    // A password field is refused by its role: "Token" is no password word to a label rule.
    let token = control(&after, "password text", "Token").unwrap();
    let (x, y) = centre(&token);
    let (code, r, err) = act(
        d,
        &format!(
            r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}},{{"action":"type","text":"s3cret"}}]}}"#
        ),
    );
    assert_ne!(code, Some(0), "{r} {err}");
    assert_eq!(r["refusal"]["rule"], "password-field", "{r}");
    assert!(
        r["refusal"]["message"]
            .as_str()
            .unwrap()
            .contains("password text"),
        "{r}"
    );
}

#[test]
fn ids_survive_an_unrelated_change_on_screen() {
    use voxdesk_core::config::{Mode, Settings};
    use voxdesk_desk::confirm::AssumeYes;
    use voxdesk_desk::tool::{ToolCall, ToolResult};
    use voxdesk_desk::{Desk, Host};
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = tempfile::tempdir().unwrap();
    let _browser = form(d, dir.path());
    let first = look_until(d, "the form from the tree", |v| {
        control(v, "push button", "Join").is_some()
    });
    let mut s = Settings::default();
    s.rails.mode = Mode::Observe;
    let latch = Arc::new(voxdesk_input::stop::StopLatch::default());
    let mut desk = Desk::new(&s, None, Box::new(AssumeYes), latch).expect("a desk in observe mode");
    let observe = |desk: &mut Desk| match desk.call(&ToolCall::Observe) {
        ToolResult::Observation(o) => o,
        other => panic!("{}", other.to_json()),
    };
    let id_of = |o: &voxdesk_desk::tool::ObservationView, role: &str, text: &str| {
        o.targets
            .iter()
            .find(|t| t.text == text && t.ax.as_ref().is_some_and(|a| a.role.name() == role))
            .map(|t| t.id)
            .unwrap_or_else(|| panic!("{role} {text:?} not a target"))
    };
    let a = observe(&mut desk);
    let before: Vec<u32> = [
        ("push button", "Join"),
        ("check box", "I accept the terms"),
        ("radio button", "Large"),
        ("entry", "Email"),
    ]
    .iter()
    .map(|(r, t)| id_of(&a, r, t))
    .collect();
    // Something unrelated changes: text typed into another field from outside.
    let email = control(&first, "entry", "Email").unwrap();
    let (bx, by, bw, bh) = screen_box(&first, &email);
    let (x, y) = (bx + bw / 2, by + bh / 2);
    let xd = |args: &[&str]| {
        Command::new("xdotool")
            .env("DISPLAY", d)
            .args(args)
            .status()
            .unwrap();
    };
    xd(&["mousemove", &x.to_string(), &y.to_string(), "click", "1"]);
    xd(&["type", "--delay", "20", "someone@example.org"]);
    std::thread::sleep(Duration::from_millis(500));
    let b = observe(&mut desk);
    let after: Vec<u32> = [
        ("push button", "Join"),
        ("check box", "I accept the terms"),
        ("radio button", "Large"),
        ("entry", "Email"),
    ]
    .iter()
    .map(|(r, t)| id_of(&b, r, t))
    .collect();
    assert_eq!(before, after, "the same controls keep their ids");
    let email = b
        .targets
        .iter()
        .find(|t| t.text == "Email")
        .and_then(|t| t.ax.as_ref())
        .and_then(|a| a.value.clone());
    assert_eq!(email.as_deref(), Some("someone@example.org"));
    assert_eq!(b.route.name(), "ax+ocr");
}

/// A page the wheel scrolls moves every element without an event on the bus (Chromium sends
/// none): the observation after the scroll must not keep the links where they were, nor take
/// the content coming into view for a menu that opened.
#[test]
fn a_scrolled_page_is_read_again_and_opens_nothing() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = tempfile::tempdir().unwrap();
    let items: String = (1..=60)
        .map(|i| format!("<p><a href=#>Entry {i}</a></p>"))
        .collect();
    let page = dir.path().join("long.html");
    std::fs::write(
        &page,
        format!("<!doctype html><html><head><title>Long list</title></head><body style=\"font:18px sans-serif;margin:30px\">{items}</body></html>"),
    )
    .unwrap();
    let mut c = chromium(&dir.path().join("profile"));
    c.args([
        "--window-position=0,0",
        "--window-size=900,600",
        &format!("--app=file://{}", page.display()),
    ]);
    let _browser = Guard(
        c.env("DISPLAY", d)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let first = look_until(d, "the list's links from the tree", |v| {
        control(v, "link", "Entry 1").is_some()
    });
    let batch = format!(
        r#"{{"observation_id":{},"actions":[{{"action":"scroll","direction":"down","amount":5}}],"expect":{{"changes":true}}}}"#,
        first["observation_id"]
    );
    let (code, r, err) = act(d, &batch);
    assert_eq!(code, Some(0), "{err}\n{r}");
    assert_eq!(r["verification"]["verdict"], "verified", "{r}");
    assert!(
        r["verification"].get("opened").is_none(),
        "a scroll opened nothing: {r}"
    );
    let after = &r["observation"];
    assert!(
        control(after, "link", "Entry 1").is_none(),
        "Entry 1 scrolled out of view, yet the tree kept it:\n{}",
        describe(after)
    );
    // The links the tree gives sit where OCR reads the same words (most of them: OCR may run
    // two rows together).
    let links: Vec<Value> = targets(after)
        .into_iter()
        .filter(|t| t["role"] == "link")
        .collect();
    let seen = links.iter().filter(|l| l["source"] == "ax+ocr").count();
    assert!(
        links.len() >= 10 && seen * 2 >= links.len(),
        "{seen} of {} links read on screen where the tree puts them:\n{}",
        links.len(),
        describe(after)
    );
}

/// A HOME of the app's own and settings in memory, so the desktop's state does not leak in.
fn gtk(dir: &std::path::Path, argv: &[&str]) -> Vec<String> {
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    let mut v = vec![
        "env".to_string(),
        format!("HOME={}", home.display()),
        format!("XDG_CONFIG_HOME={}", home.join(".config").display()),
        "GSETTINGS_BACKEND=memory".into(),
    ];
    v.extend(argv.iter().map(|s| s.to_string()));
    v
}

#[test]
fn gtk3_gtk2_and_qt_controls_are_targets_with_their_roles() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dir = tempfile::tempdir().unwrap();

    // GTK 3: mousepad's menus and its editor; its Save As dialog's empty name field.
    let argv = gtk(dir.path(), &["mousepad"]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mousepad = app(d, &argv, "Mousepad");
    let v = look_until(d, "mousepad's tree", |v| {
        control(v, "menu", "File").is_some()
    });
    assert!(
        targets(&v)
            .iter()
            .any(|t| t["role"] == "text" && t["states"].to_string().contains("editable")),
        "the editor: {}",
        describe(&v)
    );
    Command::new("xdotool")
        .env("DISPLAY", d)
        .args(["key", "ctrl+shift+s"])
        .status()
        .unwrap();
    let v = look_until(d, "the Save As dialog's name field", |v| {
        targets(v).iter().any(|t| {
            t["role"] == "text"
                && t["text"].as_str().is_some_and(|s| s.starts_with("Name"))
                && t["states"].to_string().contains("focused")
        })
    });
    assert!(
        control(&v, "push button", "Cancel").is_some(),
        "{}",
        describe(&v)
    );
    drop(mousepad);

    // GTK 2: pcmanfm's file icons are targets of their own, named by what is drawn under
    // them; its location bar holds the folder exactly.
    let folder = dir.path().join("files");
    std::fs::create_dir_all(&folder).unwrap();
    for f in ["alpha.txt", "beta.txt"] {
        std::fs::write(folder.join(f), f).unwrap();
    }
    let argv = gtk(dir.path(), &["pcmanfm", folder.to_str().unwrap()]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let pcmanfm = app(d, &argv, "Pcmanfm");
    let path = folder.display().to_string();
    let v = look_until(d, "pcmanfm's icons and location", |v| {
        control(v, "icon", "alpha.txt").is_some()
            && control(v, "icon", "beta.txt").is_some()
            && targets(v)
                .iter()
                .any(|t| t["role"] == "text" && t["value"] == path.as_str())
    });
    assert_ne!(
        control(&v, "icon", "alpha.txt").unwrap()["id"],
        control(&v, "icon", "beta.txt").unwrap()["id"]
    );
    drop(pcmanfm);

    // Qt: featherpad's tool buttons with their states, and its editor.
    let argv = gtk(dir.path(), &["featherpad"]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let _featherpad = app(d, &argv, "FeatherPad");
    let v = look_until(d, "featherpad's tree", |v| {
        control(v, "push button", "Open").is_some()
    });
    let undo = control(&v, "push button", "Undo").unwrap_or_else(|| panic!("{}", describe(&v)));
    assert_eq!(
        undo["states"],
        serde_json::json!(["disabled"]),
        "nothing to undo yet"
    );
    assert!(
        targets(&v)
            .iter()
            .any(|t| t["role"] == "text" && t["states"].to_string().contains("editable")),
        "{}",
        describe(&v)
    );
}

#[test]
fn a_dialog_is_read_whole_and_its_accepting_button_is_refused() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    // The question wraps over lines none of which a line-by-line reader calls destructive.
    let mut zenity = app(
        d,
        &[
            "zenity",
            "--question",
            "--title=Tidy up",
            "--text=The folder reports and its 12 files\nwill be removed from this computer.\nGo ahead?",
            "--ok-label=Go ahead",
            "--cancel-label=Keep them",
        ],
        "Zenity",
    );
    let v = look_until(d, "the dialog's buttons", |v| {
        control(v, "push button", "Go ahead").is_some()
    });
    let ok = control(&v, "push button", "Go ahead").unwrap();
    let (x, y) = centre(&ok);
    let (code, r, err) = act(
        d,
        &format!(r#"{{"actions":[{{"action":"click","x":{x},"y":{y}}}]}}"#),
    );
    assert_ne!(code, Some(0), "{r} {err}");
    assert_eq!(r["refusal"]["rule"], "destructive-dialog", "{r}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        zenity.0.try_wait().unwrap().is_none(),
        "the dialog is still open: nothing was clicked"
    );
}
