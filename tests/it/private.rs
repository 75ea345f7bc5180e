//! Private by default, from outside the process: a `serve.json` planted in the shared temp dir (or one not to be believed) never gets the daemon's token; pictures of the screen and narration are written 0600 in 0700 dirs whatever the umask, and the scratch audio is not in the shared temp dir; a password the rails refused appears in no event, stream, record, report, console line or log, and no key or token is logged even at TRACE.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::model_server::*;
use crate::serve::{daemon_with, dirs, http, listen};
use crate::util::*;

const SOON: Duration = Duration::from_secs(30);

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A command run under `umask 000`, as a careless shell would.
fn umask0(c: &Command) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg("umask 000; exec \"$0\" \"$@\"")
        .arg(c.get_program())
        .args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    sh
}

/// A loopback listener that keeps the head of every request it gets.
struct Trap {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Trap {
    fn start() -> Trap {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let heads: Arc<Mutex<Vec<String>>> = Arc::default();
        let h = heads.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut r = BufReader::new(s);
                let mut head = String::new();
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 && line.trim() != "" {
                    head.push_str(&line);
                    line.clear();
                }
                h.lock().unwrap().push(head);
                // Dropped unanswered.
            }
        });
        Trap { port, heads }
    }
    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// `voxdesk run` with XDG_RUNTIME_DIR unset reads no `serve.json` from the shared temp dir
/// (it sent the daemon's bearer token to whatever URL a planted file named), and one in its
/// private runtime dir that is not 0600 or names no loopback address is refused, said in one
/// line, and gets nothing.
#[test]
fn a_planted_or_untrusted_serve_json_never_gets_the_token() {
    let trap = Trap::start();
    let home = tempfile::tempdir().unwrap();
    let shared_tmp = tempfile::tempdir().unwrap();
    let me = std::process::id();
    // A "daemon" that runs: this test process.
    let planted = json!({"url": format!("http://127.0.0.1:{}", trap.port), "pid": me,
        "pid_start": voxdesk_input::lock::process_start(me).unwrap()});
    std::fs::create_dir_all(shared_tmp.path().join("voxdesk")).unwrap();
    std::fs::write(
        shared_tmp.path().join("voxdesk/serve.json"),
        planted.to_string(),
    )
    .unwrap();
    let run = || {
        output(
            bin()
                .env_remove("XDG_RUNTIME_DIR")
                .env_remove("DISPLAY")
                .env("HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path().join("config"))
                .env("XDG_DATA_HOME", home.path().join("data"))
                .env("XDG_STATE_HOME", home.path().join("state"))
                .env("TMPDIR", shared_tmp.path())
                .args(["run", "--quiet", "--mode", "observe", "click 1"]),
        )
    };
    let o = run();
    let token =
        std::fs::read_to_string(home.path().join("config/voxdesk/serve.token")).unwrap_or_default();
    let heads = trap.heads();
    assert!(
        heads.is_empty(),
        "the planted serve.json was followed (token {token:?}): {heads:#?}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The private runtime dir: made 0700 where no one else can plant a file.
    let private = home.path().join("state/voxdesk/run");
    assert_eq!(mode(&private), 0o700);
    // A file there that is not 0600, or names no loopback address: refused in one line.
    for (url, file_mode, why) in [
        (format!("http://127.0.0.1:{}", trap.port), 0o644, "not 600"),
        (
            format!("http://localhost:{}", trap.port),
            0o600,
            "not http:// on a loopback address",
        ),
    ] {
        let p = private.join("serve.json");
        let mut v = planted.clone();
        v["url"] = json!(url);
        std::fs::write(&p, v.to_string()).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(file_mode)).unwrap();
        let o = run();
        assert_clean_failure(&o, why);
        assert!(trap.heads().is_empty(), "{url}: {:#?}", trap.heads());
    }
}

/// Pictures of the screen (`look --annotate`, `--frame`) and narration (`--narration-wav`) are
/// written 0600, in a 0700 dir when voxdesk makes it, under `umask 000`; narration's scratch WAV
/// is in the private runtime dir, not the shared temp dir (here a file, where nothing can be
/// written: narration still renders).
#[test]
fn pictures_and_narration_are_private_whatever_the_umask() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = app(d, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    let dir = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut look = bin();
    look.env("DISPLAY", d)
        .args(["look", "--annotate"])
        .arg(out.join("a.png"))
        .arg("--frame")
        .arg(out.join("f.png"));
    let o = umask0(&look).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut jpeg = bin();
    jpeg.env("DISPLAY", d)
        .args(["look", "--annotate"])
        .arg(out.join("a.jpg"));
    assert!(umask0(&jpeg).output().unwrap().status.success());
    for f in ["a.png", "f.png", "a.jpg"] {
        assert_eq!(mode(&out.join(f)), 0o600, "{f}");
    }

    let wavs = out.join("new/wavs");
    let shared_tmp = dir.path().join("not-a-dir");
    std::fs::write(&shared_tmp, b"").unwrap();
    let run = |extra: &[&str]| {
        let mut c = bin();
        c.env("DISPLAY", d)
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_RUNTIME_DIR", runtime.path())
            .env("TMPDIR", &shared_tmp)
            .env("VOXDESK_ALLOW_APPS", "XCalc")
            .args(["run", "--mode", "observe"])
            .args(extra)
            .arg("click 5");
        let o = umask0(&c).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        err
    };
    let err = run(&["--quiet", "--narration-wav", wavs.to_str().unwrap()]);
    let written: Vec<PathBuf> = files_in(&wavs);
    assert!(!written.is_empty(), "no narration written: {err}");
    for f in &written {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    assert_eq!(mode(&wavs), 0o700);
    assert_eq!(mode(&out.join("new")), 0o700);
    assert_eq!(
        mode(&out),
        0o777,
        "a directory the person made keeps its mode"
    );
    // Spoken: the scratch WAV is rendered in the private runtime dir and removed.
    let err = run(&[]);
    assert!(!err.contains("no voice"), "narration did not render: {err}");
    assert_eq!(mode(&runtime.path().join("voxdesk")), 0o700);
    let left: Vec<PathBuf> = files_in(&runtime.path().join("voxdesk"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "wav"))
        .collect();
    assert!(left.is_empty(), "scratch audio left behind: {left:?}");
}

const SECRET: &str = "hunter2-Zq9";
const KEY: &str = "test-key-gemini";

/// An xterm asking for a password (nothing clicked: the rails cannot tell where the keyboard
/// is, and a password prompt shows).
fn password_prompt(display: &str, got: &Path) -> Guard {
    let script = format!(
        "printf 'Password: '; stty -echo; read x; echo \"$x\" > {}; sleep 120",
        got.display()
    );
    app(
        display,
        &[
            "xterm",
            "-geometry",
            "80x20+100+100",
            "-e",
            "sh",
            "-c",
            &script,
        ],
        "XTerm",
    )
}

/// The model's side: look, type the password (refused by the rails), give up.
fn model_types_a_password(server: &Server) {
    let mut c = server.accept(SOON);
    assert_eq!(c.header("x-goog-api-key"), Some(KEY));
    c.expect("setup", SOON, |v| v.get("setup").is_some());
    c.send_binary(json!({"setupComplete": {}}));
    let turn = c.expect("the task turn", SOON, |v| v.get("clientContent").is_some());
    let obs = first_observation(
        turn["clientContent"]["turns"][0]["parts"][0]["text"]
            .as_str()
            .unwrap(),
    );
    c.send(
        json!({"toolCall": {"functionCalls": [{"id": "fc1", "name": "act", "args": {
        "observation_id": obs["observation_id"],
        "actions": [{"action": "type", "text": SECRET}],
        "expect": {"changes": true}}}]}}),
    );
    let r = c.expect("the act's answer", SOON, |v| {
        v.pointer("/toolResponse/functionResponses/0").is_some()
    });
    let r = &r["toolResponse"]["functionResponses"][0]["response"];
    assert_eq!(r["refusal"]["rule"], "password-field", "{r}");
    c.send(
        json!({"toolCall": {"functionCalls": [{"id": "fc2", "name": "done",
        "args": {"success": false, "summary": "I could not sign in."}}]}}),
    );
    c.expect("done's answer", SOON, |v| {
        v.pointer("/toolResponse/functionResponses/0").is_some()
    });
    c.send(json!({"serverContent": {"turnComplete": true}}));
}

/// Every byte of every file under `dir`, with where it was (a secret found names its file).
fn grep_dir(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    for f in files_in(dir) {
        let mut bytes = Vec::new();
        if std::fs::File::open(&f)
            .and_then(|mut h| h.read_to_end(&mut bytes))
            .is_ok()
            && bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        {
            hits.push(f);
        }
    }
    hits
}

fn session_dir(data: &Path) -> PathBuf {
    std::fs::read_dir(data.join("voxdesk/sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("session.json").is_file())
        .expect("a recorded session")
}

/// The record of a refusal: masked where the text was, the rule kept.
fn assert_masked(session: &Path) {
    let events = std::fs::read_to_string(session.join("events.jsonl")).unwrap();
    assert!(
        events.contains("password-field") && events.contains("•••• (11 characters)"),
        "{events}"
    );
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("session.json")).unwrap())
            .unwrap();
    let step = &rec["steps"][0];
    assert_eq!(step["rails"], "password-field", "{rec}");
    assert_eq!(
        step["actions"]["actions"][0]["text"], "•••• (11 characters)",
        "{rec}"
    );
}

/// A password typed by a realtime model and refused by the rails, through `voxdesk run` at
/// `VOXDESK_LOG=trace` (directives naming the wire crates too): the secret is in no event
/// (events.jsonl), record (session.json), report, console line or log line, nothing was typed,
/// and the model's key is in no log line either (at TRACE tungstenite printed the upgrade
/// request, `x-goog-api-key` with it).
#[test]
fn a_refused_password_and_the_key_are_in_no_record_console_or_log() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let data = tempfile::tempdir().unwrap();
    let got = data.path().join("typed.txt");
    let _term = password_prompt(d, &got);
    let server = Server::start("gemini");
    let child = bin()
        .env("DISPLAY", d)
        .env("XDG_DATA_HOME", data.path())
        .env("XDG_CONFIG_HOME", data.path().join("config"))
        .env("XDG_CACHE_HOME", data.path().join("cache"))
        .env("XDG_RUNTIME_DIR", data.path())
        .env("VOXDESK_ALLOW_APPS", "XTerm")
        .env("GEMINI_API_KEY", KEY)
        .env("VOXDESK_GEMINI_URL", server.base())
        .env(
            "VOXDESK_LOG",
            "trace,tungstenite=trace,tokio_tungstenite=trace,hyper=trace",
        )
        .args([
            "run",
            "--quiet",
            "--mode",
            "auto",
            "--provider",
            "gemini",
            "--model",
            "gemini-3.8-live",
            "sign in to the terminal",
        ])
        // Files, not pipes: a log at TRACE would fill a pipe no one reads yet.
        .stdout(std::fs::File::create(data.path().join("stdout")).unwrap())
        .stderr(std::fs::File::create(data.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    model_types_a_password(&server);
    let mut child = Guard(child);
    let status = child.0.wait().unwrap();
    let out = ["stdout", "stderr"]
        .map(|f| std::fs::read_to_string(data.path().join(f)).unwrap())
        .join("\n");
    assert_ne!(status.code(), Some(101), "{out}");
    // The log was on, the wire crates' own lines in it (below TRACE).
    assert!(out.contains("Client handshake done"), "no debug log: {out}");
    assert!(!out.contains(KEY), "the key was logged");
    assert!(!out.contains(SECRET), "the password was printed or logged");
    let session = session_dir(data.path());
    let report = output(
        bin()
            .env("XDG_DATA_HOME", data.path())
            .arg("report")
            .arg(&session),
    );
    assert!(report.status.success());
    assert!(session.join("report.html").is_file());
    assert_masked(&session);
    let hits = grep_dir(&session, SECRET);
    assert!(hits.is_empty(), "the password is in {hits:?}");
    assert!(
        !got.exists(),
        "something was typed into the password prompt"
    );
}

/// The same through the daemon: nothing of the password on its event stream, in its API's
/// answers, its report or its log at TRACE, and neither the key nor the daemon's token in the log.
#[test]
fn a_refused_password_is_never_streamed_by_the_daemon() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let dd = dirs();
    let got = dd.runtime.path().join("typed.txt");
    let _term = password_prompt(d, &got);
    let server = Server::start("gemini");
    let log = dd.config.path().join("daemon.log");
    let base = server.base();
    let dm = daemon_with(
        d,
        &dd,
        &[],
        &[
            ("VOXDESK_ALLOW_APPS", "XTerm"),
            ("GEMINI_API_KEY", KEY),
            ("VOXDESK_GEMINI_URL", &base),
            ("VOXDESK_LOG", "trace,tungstenite=trace,hyper=trace"),
        ],
        Some(&log),
    );
    let events = listen(&dm, None, None);
    let (code, s) = dm.post(
        "/observe/sessions",
        json!({"task": "sign in to the terminal", "provider": "gemini",
               "model": "gemini-3.8-live", "mode": "auto"}),
    );
    assert_eq!(code, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    model_types_a_password(&server);
    let rec = dm.ended(&id, Duration::from_secs(60));
    assert_eq!(rec["status"], "failed", "{rec}");
    assert!(
        events.wait(SOON, |e| e.1 == "session_ended"),
        "{:?}",
        events.events()
    );
    let streamed = serde_json::to_string(&events.events()).unwrap();
    assert!(streamed.contains("password-field"), "{streamed}");
    assert!(
        !streamed.contains(SECRET),
        "the password was streamed: {streamed}"
    );
    assert!(!rec.to_string().contains(SECRET), "{rec}");
    let report = http()
        .get(format!("{}/observe/sessions/{id}/report", dm.url))
        .bearer_auth(&dm.token)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(report.contains("password-field") && !report.contains(SECRET));
    let session = dd.data.path().join("voxdesk/sessions").join(&id);
    assert_masked(&session);
    assert!(grep_dir(&session, SECRET).is_empty());
    let token = dm.token.clone();
    drop(dm);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("DEBUG"), "no debug log: {logged}");
    for (what, s) in [
        ("password", SECRET),
        ("key", KEY),
        ("token", token.as_str()),
    ] {
        assert!(!logged.contains(s), "the {what} was logged");
    }
    assert!(
        !got.exists(),
        "something was typed into the password prompt"
    );
}
