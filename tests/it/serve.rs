//! `voxdesk serve` as a client sees it, over real HTTP against the real daemon process: the token (none, wrong, in the query where it is not allowed), 400/413 with a reason, 409, a session that runs on xcalc and is judged by the calculator's display, confirmation yes/no/timeout, stop mid-session, health with no side effects, a daemon killed mid-session and restarted (aborted), SIGTERM draining every stream before the daemon exits by itself, and the event stream resumed after a dropped connection with nothing lost; the panel in headless Chromium.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;

pub(crate) struct Daemon {
    pub(crate) url: String,
    pub(crate) token: String,
    child: Guard,
    runtime: PathBuf,
}

pub(crate) struct Dirs {
    pub(crate) config: tempfile::TempDir,
    pub(crate) data: tempfile::TempDir,
    pub(crate) runtime: tempfile::TempDir,
}

pub(crate) fn dirs() -> Dirs {
    Dirs {
        config: tempfile::tempdir().unwrap(),
        data: tempfile::tempdir().unwrap(),
        runtime: tempfile::tempdir().unwrap(),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start the daemon on `display` with its own config, records and runtime dir.
fn daemon(display: &str, d: &Dirs, extra: &[&str]) -> Daemon {
    daemon_with(display, d, extra, &[], None)
}

/// The daemon with more environment, and its stderr (its log) in `log`.
pub(crate) fn daemon_with(
    display: &str,
    d: &Dirs,
    extra: &[&str],
    env: &[(&str, &str)],
    log: Option<&Path>,
) -> Daemon {
    let port = free_port();
    let mut c = bin();
    c.env("DISPLAY", display)
        .env("XDG_CONFIG_HOME", d.config.path())
        .env("XDG_DATA_HOME", d.data.path())
        .env("XDG_RUNTIME_DIR", d.runtime.path())
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .envs(env.iter().copied())
        .args(["serve", "--quiet", "--bind", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(match log {
            Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
            None => Stdio::inherit(),
        });
    let mut child = c.spawn().expect("voxdesk serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains(&format!("127.0.0.1:{port}")), "{line}");
    let token = std::fs::read_to_string(d.config.path().join("voxdesk/serve.token"))
        .unwrap()
        .trim()
        .to_string();
    Daemon {
        url: format!("http://127.0.0.1:{port}"),
        token,
        child: Guard(child),
        runtime: d.runtime.path().to_path_buf(),
    }
}

pub(crate) fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

impl Daemon {
    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        let r = http()
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .unwrap();
        (r.status().as_u16(), r.json().unwrap_or(Value::Null))
    }
    pub(crate) fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = http()
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .unwrap();
        (r.status().as_u16(), r.json().unwrap_or(Value::Null))
    }
    fn start(&self, task: &str, mode: &str) -> (u16, Value) {
        self.post(
            "/observe/sessions",
            json!({"task": task, "provider": "local", "model": "offline-planner", "mode": mode}),
        )
    }
    /// Wait until session `id` is no longer running; its record.
    pub(crate) fn ended(&self, id: &str, within: Duration) -> Value {
        let mut last = Value::Null;
        wait_for(within, || {
            last = self.get(&format!("/observe/sessions/{id}")).1;
            last["status"] != "running"
        });
        last
    }
}

/// A client of the event stream on a thread: every event (id, name, data) it received.
pub(crate) struct Listener {
    got: Arc<Mutex<Vec<(u64, String, Value)>>>,
    _t: std::thread::JoinHandle<()>,
}

pub(crate) fn listen(
    d: &Daemon,
    last_event_id: Option<u64>,
    stop_after: Option<usize>,
) -> Listener {
    let mut req = http()
        .get(format!("{}/observe/events?token={}", d.url, d.token))
        .timeout(Duration::from_secs(600));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id.to_string());
    }
    let r = req.send().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let got: Arc<Mutex<Vec<(u64, String, Value)>>> = Arc::default();
    let g = got.clone();
    let t = std::thread::spawn(move || {
        let mut rd = BufReader::new(r);
        let (mut id, mut ev, mut data) = (0u64, String::new(), String::new());
        let mut line = String::new();
        loop {
            line.clear();
            if rd.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if let Some(v) = l.strip_prefix("id:") {
                id = v.trim().parse().unwrap_or(0);
            } else if let Some(v) = l.strip_prefix("event:") {
                ev = v.trim().to_string();
            } else if let Some(v) = l.strip_prefix("data:") {
                data = v.trim().to_string();
            } else if l.is_empty() && !ev.is_empty() {
                let mut all = g.lock().unwrap();
                all.push((
                    id,
                    ev.clone(),
                    serde_json::from_str(&data).unwrap_or(Value::Null),
                ));
                ev.clear();
                if stop_after.is_some_and(|n| all.len() >= n) {
                    // Dropped mid-stream, as a phone losing its network would.
                    return;
                }
            }
        }
    });
    Listener { got, _t: t }
}

impl Listener {
    pub(crate) fn events(&self) -> Vec<(u64, String, Value)> {
        self.got.lock().unwrap().clone()
    }
    pub(crate) fn wait(&self, within: Duration, f: impl Fn(&(u64, String, Value)) -> bool) -> bool {
        wait_for(within, || self.events().iter().any(&f))
    }
}

fn calc(display: &str) -> Guard {
    let g = app(display, &["xcalc", "-geometry", "300x400+400+200"], "XCalc");
    // The pointer off the keypad: a test's first "click AC" on a display already at 0 changes
    // only the key's hover border, which is no change at all when an earlier test left the
    // pointer resting on that key (identical frames are never a change).
    let _ = Command::new("xdotool")
        .env("DISPLAY", display)
        .args(["mousemove", "5", "5"])
        .status();
    g
}

/// The calculator's display: the topmost text on screen (xcalc's buttons are digits too).
fn calc_display(display: &str) -> String {
    let o = output(bin().env("DISPLAY", display).args(["look", "--json"]));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .min_by_key(|t| t["box"][1].as_i64())
        .map(|t| t["text"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

fn screen_hash(display: &str) -> Vec<u8> {
    Command::new("xwd")
        .env("DISPLAY", display)
        .args(["-root", "-silent"])
        .output()
        .unwrap()
        .stdout
}

fn pointer(display: &str) -> String {
    String::from_utf8_lossy(
        &Command::new("xdotool")
            .env("DISPLAY", display)
            .arg("getmouselocation")
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned()
}

#[test]
fn only_the_token_opens_the_api_and_bad_requests_are_refused_with_a_reason() {
    let Some(rig) = rig() else { return };
    let d = dirs();
    let dm = daemon(&rig, &d, &[]);
    // The token file is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(d.config.path().join("voxdesk/serve.token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let c = http();
    let status = |r: reqwest::blocking::RequestBuilder| r.send().unwrap().status().as_u16();
    let u = |p: &str| format!("{}{p}", dm.url);
    assert_eq!(status(c.get(u("/observe/health"))), 401, "no token");
    assert_eq!(
        status(c.get(u("/observe/sessions")).bearer_auth("wrong")),
        401
    );
    assert_eq!(
        status(c.get(u(&format!("/observe/sessions?token={}", dm.token)))),
        401,
        "the query token is for the event stream only"
    );
    assert_eq!(
        status(
            c.post(u(&format!("/observe/sessions?token={}", dm.token)))
                .body("{}")
        ),
        401
    );
    assert_eq!(
        status(
            c.get(u(&format!("/observe/events?token={}", dm.token)))
                .timeout(Duration::from_secs(2))
        ),
        200
    );
    assert_eq!(
        status(c.get(u("/observe/health")).bearer_auth(&dm.token)),
        200
    );

    // Malformed, incomplete and oversized bodies: 400/413 with the reason, nothing recorded.
    let post = |body: String| {
        let r = c
            .post(u("/observe/sessions"))
            .bearer_auth(&dm.token)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .unwrap();
        let code = r.status().as_u16();
        (code, r.text().unwrap_or_default())
    };
    let cases: &[(&str, u16, &str)] = &[
        ("{\"task\": ", 400, "not a session request"),
        ("[1,2]", 400, "not a session request"),
        ("{\"task\":\"click 7\",\"model\":\"offline-planner\"}", 400, "provider"),
        ("{\"task\":\"click 7\",\"provider\":\"local\"}", 400, "model"),
        ("{\"provider\":\"local\",\"model\":\"offline-planner\"}", 400, "task"),
        ("{\"task\":\"click 7\",\"provider\":\"vertex\",\"model\":\"x\"}", 400, "unknown provider"),
        ("{\"task\":\"click 7\",\"provider\":\"local\",\"model\":\"offline-planner\",\"mode\":\"yolo\"}", 400, "mode"),
        ("{\"task\":\"click 7\",\"provider\":\"local\",\"model\":\"offline-planner\",\"colour\":1}", 400, "unknown field"),
        ("{\"task\":\"dance wildly\",\"provider\":\"local\",\"model\":\"offline-planner\"}", 400, "task"),
    ];
    for (body, code, needle) in cases {
        let (got, text) = post(body.to_string());
        assert_eq!(got, *code, "{body}: {text}");
        assert!(text.to_lowercase().contains(needle), "{body}: {text}");
    }
    let big = json!({"task": "x".repeat(40_000), "provider": "local", "model": "offline-planner"});
    let (got, text) = post(big.to_string());
    assert_eq!(got, 413, "{text}");
    let (code, list) = dm.get("/observe/sessions");
    assert_eq!(code, 200);
    assert_eq!(
        list["sessions"].as_array().unwrap().len(),
        0,
        "nothing was recorded"
    );
    assert_eq!(dm.get("/observe/sessions/..%2F..%2Fetc").0, 404);
    assert_eq!(dm.post("/observe/sessions/nope/stop", json!({})).0, 404);

    // Health says what it knows and touches nothing: the pointer and the screen stay. (A
    // window of an earlier test may still be closing: a change is looked at again, from a
    // screen that held still; three changes in a row convict health.)
    let mut changed = 0;
    for _ in 0..3 {
        let mut s0 = screen_hash(&rig);
        wait_for(Duration::from_secs(5), || {
            std::thread::sleep(Duration::from_millis(300));
            let now = screen_hash(&rig);
            std::mem::replace(&mut s0, now) == s0
        });
        let p0 = pointer(&rig);
        for _ in 0..20 {
            let (code, h) = dm.get("/observe/health");
            assert_eq!(code, 200);
            assert_eq!(h["ocr_engine"], true, "{h}");
            assert_eq!(h["providers"]["gemini"]["needs_key"], true);
            assert!(
                h["providers"]["gemini"].get("key").is_none(),
                "never the key"
            );
            assert!(h["emergency_stop"]["combo"].is_string());
        }
        assert_eq!(pointer(&rig), p0, "health moved the pointer");
        if screen_hash(&rig) == s0 {
            break;
        }
        changed += 1;
    }
    assert!(changed < 3, "health changed the screen");
    assert!(
        dm.runtime.join("voxdesk/serve.json").exists(),
        "it says where it listens"
    );
}

#[test]
fn a_session_runs_on_xcalc_streams_its_events_and_a_second_one_is_refused() {
    let Some(rig) = rig() else { return };
    let _calc = calc(&rig);
    let d = dirs();
    let dm = daemon(&rig, &d, &[]);
    let all = listen(&dm, None, None);
    let partial = listen(&dm, None, Some(6));
    let (code, s) = dm.start(
        "click AC, click 7, click +, click 5, click =, wait for 12",
        "auto",
    );
    assert_eq!(code, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    assert_eq!(s["status"], "running");
    let (code, busy) = dm.start("click 8", "auto");
    assert_eq!(code, 409, "{busy}");
    assert!(busy["error"].as_str().unwrap().contains(&id));
    // The dropped client comes back with the last id it saw and misses nothing.
    assert!(wait_for(Duration::from_secs(30), || partial.events().len() >= 6));
    let seen = partial.events();
    let resumed = listen(&dm, Some(seen.last().unwrap().0), None);
    let r = dm.ended(&id, Duration::from_secs(60));
    assert_eq!(r["status"], "done", "{r}");
    assert!(all.wait(Duration::from_secs(5), |e| e.1 == "session_ended"));
    assert!(resumed.wait(Duration::from_secs(5), |e| e.1 == "session_ended"));
    let full: Vec<u64> = all.events().iter().map(|e| e.0).collect();
    let mut joined: Vec<u64> = seen.iter().map(|e| e.0).collect();
    joined.extend(resumed.events().iter().map(|e| e.0));
    assert_eq!(joined, full, "resumed with nothing lost or repeated");
    assert!(
        full.windows(2).all(|w| w[1] == w[0] + 1),
        "in order, no gap: {full:?}"
    );
    let kinds: Vec<String> = all.events().iter().map(|e| e.1.clone()).collect();
    for k in [
        "session_started",
        "plan",
        "step",
        "narration",
        "session_ended",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{k} in {kinds:?}");
    }
    assert!(all.events().iter().all(|e| e.2["session"] == id.as_str()));
    // Judged by the calculator, not by voxdesk's word.
    assert_eq!(calc_display(&rig), "12", "xcalc shows 12");
    // The step's picture and the report.
    let png = http()
        .get(format!("{}/observe/sessions/{id}/steps/1.png", dm.url))
        .bearer_auth(&dm.token)
        .send()
        .unwrap();
    assert_eq!(png.status().as_u16(), 200);
    assert!(png.bytes().unwrap().starts_with(b"\x89PNG"));
    let report = http()
        .get(format!("{}/observe/sessions/{id}/report", dm.url))
        .bearer_auth(&dm.token)
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(report.contains("click 7, click +"), "the report");
    let (_, list) = dm.get("/observe/sessions");
    assert_eq!(list["sessions"][0]["id"], id.as_str());
    assert_eq!(list["sessions"][0]["status"], "done");
}

#[test]
fn a_confirmation_is_answered_yes_no_or_times_out_as_no_and_a_stop_ends_a_session() {
    let Some(rig) = rig() else { return };
    let _calc = calc(&rig);
    let d = dirs();
    let dm = daemon(&rig, &d, &["--confirm-timeout-ms", "3000"]);
    let ev = listen(&dm, None, None);
    let clear = |dm: &Daemon| {
        let (c, s) = dm.start("click AC", "auto");
        assert_eq!(c, 201, "{s}");
        dm.ended(s["id"].as_str().unwrap(), Duration::from_secs(30));
    };
    clear(&dm);
    // No: nothing is clicked.
    let (c, s) = dm.start("click 8", "confirm");
    assert_eq!(c, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    assert!(
        ev.wait(Duration::from_secs(30), |e| e.1 == "confirmation_asked"
            && e.2["session"] == id.as_str())
    );
    let (_, now) = dm.get(&format!("/observe/sessions/{id}"));
    assert!(now["pending_confirmation"]["question"].is_string(), "{now}");
    assert_eq!(
        dm.post(
            &format!("/observe/sessions/{id}/confirm"),
            json!({"yes": "maybe"})
        )
        .0,
        400
    );
    assert_eq!(
        dm.post(
            &format!("/observe/sessions/{id}/confirm"),
            json!({"yes": false})
        )
        .0,
        200
    );
    let r = dm.ended(&id, Duration::from_secs(30));
    assert_ne!(r["status"], "done", "{r}");
    assert_eq!(calc_display(&rig), "0", "nothing was clicked");
    let late = dm.post(
        &format!("/observe/sessions/{id}/confirm"),
        json!({"yes": true}),
    );
    assert_eq!(late.0, 409, "{late:?}");
    // Unanswered: a no after the timeout.
    let (c, s) = dm.start("click 9", "confirm");
    assert_eq!(c, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    let r = dm.ended(&id, Duration::from_secs(30));
    assert_ne!(r["status"], "done", "{r}");
    assert!(
        ev.wait(Duration::from_secs(5), |e| e.1 == "confirmation_answered"
            && e.2["session"] == id.as_str()
            && e.2["yes"] == false)
    );
    assert_eq!(calc_display(&rig), "0");
    // Yes: it runs, and the calculator shows it.
    let (c, s) = dm.start("click 6", "confirm");
    assert_eq!(c, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    assert!(
        ev.wait(Duration::from_secs(30), |e| e.1 == "confirmation_asked"
            && e.2["session"] == id.as_str())
    );
    assert_eq!(
        dm.post(
            &format!("/observe/sessions/{id}/confirm"),
            json!({"yes": true})
        )
        .0,
        200
    );
    let r = dm.ended(&id, Duration::from_secs(30));
    assert_eq!(r["status"], "done", "{r}");
    assert_eq!(calc_display(&rig), "6", "xcalc shows 6");
    clear(&dm);
    // Stop mid-session: it ends stopped and the click after the wait never happens.
    let (c, s) = dm.start("wait 15 s, click 4", "auto");
    assert_eq!(c, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        dm.post(&format!("/observe/sessions/{id}/stop"), json!({}))
            .0,
        200
    );
    let r = dm.ended(&id, Duration::from_secs(10));
    assert_eq!(r["status"], "stopped", "{r}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(calc_display(&rig), "0", "the click never ran");
    assert_eq!(
        dm.post(&format!("/observe/sessions/{id}/stop"), json!({}))
            .0,
        409
    );
}

/// Shutdown is designed in: SIGTERM stops the running session (recorded as stopped), every
/// event stream is sent what it has not seen (the session's end) and then ends, and the
/// daemon exits by itself with 0, its `serve.json` gone.
#[test]
fn sigterm_stops_the_session_drains_every_stream_and_the_daemon_exits_by_itself() {
    let Some(rig) = rig() else { return };
    let _calc = calc(&rig);
    let d = dirs();
    let log = d.data.path().join("daemon.log");
    let mut dm = daemon_with(&rig, &d, &[], &[], Some(&log));
    let stream = listen(&dm, None, None);
    let (c, s) = dm.start("wait 20 s, click 3", "auto");
    assert_eq!(c, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    assert!(
        stream.wait(Duration::from_secs(30), |e| e.1 == "session_started"),
        "{:?}",
        stream.events()
    );
    let pid = dm.child.0.id();
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let mut exited = None;
    wait_for(Duration::from_secs(30), || {
        exited = dm.child.0.try_wait().unwrap();
        exited.is_some()
    });
    let status = exited.expect("the daemon exits by itself after SIGTERM");
    assert!(status.success(), "{status}");
    assert!(
        wait_for(Duration::from_secs(10), || stream._t.is_finished()),
        "the event stream ended"
    );
    let ended: Vec<_> = stream
        .events()
        .into_iter()
        .filter(|e| e.1 == "session_ended")
        .collect();
    assert_eq!(ended.len(), 1, "{:?}", stream.events());
    assert_eq!(ended[0].2["status"], "stopped", "{:?}", ended[0]);
    assert!(!dm.runtime.join("voxdesk/serve.json").exists());
    // It went because the streams ended, not because it gave up waiting for them.
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!log.contains("still open"), "{log}");
    let record = voxdesk_record::session::load(&d.data.path().join("voxdesk/sessions").join(&id));
    assert_eq!(
        record.map(|r| r.status).ok(),
        Some(voxdesk_record::session::Status::Stopped)
    );
}

#[test]
fn a_daemon_killed_mid_session_shows_it_aborted_after_a_restart() {
    let Some(rig) = rig() else { return };
    let _calc = calc(&rig);
    let d = dirs();
    let dm = daemon(&rig, &d, &[]);
    let (c, s) = dm.start("wait 20 s, click 3", "auto");
    assert_eq!(c, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(1000));
    let pid = dm.child.0.id();
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    drop(dm);
    let dm = daemon(&rig, &d, &[]);
    let (_, r) = dm.get(&format!("/observe/sessions/{id}"));
    assert_eq!(r["status"], "aborted", "{r}");
    let (_, h) = dm.get("/observe/health");
    assert!(h["session"].is_null(), "{h}");
    // And the screen is free again for a new session.
    let (c, s) = dm.start("click 1", "auto");
    assert_eq!(c, 201, "{s}");
    assert_eq!(
        dm.ended(s["id"].as_str().unwrap(), Duration::from_secs(30))["status"],
        "done"
    );
}

#[test]
fn voxdesk_run_uses_the_daemon_when_one_runs() {
    let Some(rig) = rig() else { return };
    let _calc = calc(&rig);
    let d = dirs();
    let dm = daemon(&rig, &d, &[]);
    let o = output(
        bin()
            .env("DISPLAY", &*rig)
            .env("XDG_CONFIG_HOME", d.config.path())
            .env("XDG_DATA_HOME", d.data.path())
            .env("XDG_RUNTIME_DIR", &dm.runtime)
            .args(["run", "--quiet", "--mode", "auto", "click AC, click 5"]),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(err.contains("running on the daemon"), "{err}");
    assert!(out.contains("recorded by the daemon"), "{out}");
    let (_, list) = dm.get("/observe/sessions");
    assert_eq!(
        list["sessions"].as_array().unwrap().len(),
        1,
        "one session, the daemon's"
    );
    assert_eq!(calc_display(&rig), "5");
}

/// The panel in Debian's Chromium driven by playwright-core: log in, start a session, answer
/// its confirmation, see steps arrive, stop one, and screenshots at phone and desktop sizes.
#[test]
fn the_panel_works_in_headless_chromium() {
    let Some(rig) = rig() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/panel/panel.mjs");
    let modules =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/panel/node_modules/playwright-core");
    if !modules.exists() {
        let msg = "playwright-core is not installed in tests/panel (cargo xtask test installs it)";
        assert!(std::env::var("CI").is_err(), "{msg}");
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let _calc = calc(&rig);
    let d = dirs();
    let dm = daemon(&rig, &d, &[]);
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/panel-shots");
    std::fs::create_dir_all(&shots).unwrap();
    let o = output(
        Command::new("node")
            .arg(&script)
            .env("PANEL_URL", &dm.url)
            .env("PANEL_TOKEN", &dm.token)
            .env("PANEL_SHOTS", &shots)
            .env("DISPLAY", &*rig),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{out}\n{err}");
    // Judged from outside: the confirmed session clicked 7 on the calculator.
    assert_eq!(calc_display(&rig), "7", "{out}");
    let (_, list) = dm.get("/observe/sessions");
    let statuses: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert!(
        statuses.contains(&"done") && statuses.contains(&"stopped"),
        "{statuses:?}"
    );
    for f in ["phone.png", "desktop.png", "phone-confirm.png"] {
        assert!(shots.join(f).exists(), "{f}");
    }
}

/// The panel and every answer are framed by no one and run no script but the panel's own; a
/// session's record cannot make the daemon serve or embed a file outside the session (`steps/1.png`
/// served `/etc/passwd` once a `session.json` named it); the token is in no log line at TRACE.
#[test]
fn the_panel_is_framed_by_no_one_and_a_record_cannot_name_a_file_outside_its_session() {
    let Some(rig) = rig() else { return };
    let d = dirs();
    let log = d.config.path().join("daemon.log");
    let dm = daemon_with(
        &rig,
        &d,
        &[],
        &[("VOXDESK_LOG", "trace,hyper=trace,axum=trace")],
        Some(&log),
    );
    let c = http();
    let csp = |r: &reqwest::blocking::Response| {
        r.headers()
            .get("content-security-policy")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let r = c.get(format!("{}/", dm.url)).send().unwrap();
    let panel = csp(&r);
    assert!(panel.contains("frame-ancestors 'none'"), "{panel:?}");
    let script = panel
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .unwrap_or_default();
    assert_eq!(script.trim(), "script-src 'self'", "{panel}");
    assert_eq!(r.headers()["x-frame-options"], "DENY");
    assert!(!r.text().unwrap().contains("<script>"), "an inline script");
    let js = c.get(format!("{}/panel.js", dm.url)).send().unwrap();
    assert_eq!(js.status().as_u16(), 200);
    assert!(js.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    // An API answer, even a refusal, is no page to frame.
    let r = c.get(format!("{}/observe/health", dm.url)).send().unwrap();
    assert_eq!(r.status().as_u16(), 401);
    assert!(csp(&r).contains("frame-ancestors 'none'"), "{:?}", csp(&r));

    // A record planted among the daemon's sessions, naming files outside it.
    let outside = d.data.path().join("outside.txt");
    std::fs::write(&outside, "OUTSIDE-SECRET-BYTES").unwrap();
    let dir = d.data.path().join("voxdesk/sessions/1-planted");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link.png")).unwrap();
    std::fs::write(dir.join("step-004.png"), "INSIDE").unwrap();
    let names = [
        outside.display().to_string(),
        "../../../outside.txt".into(),
        "link.png".into(),
        "step-004.png".into(),
    ];
    let steps: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            json!({"index": i + 1, "observation_id": "o", "actions": [], "rails": "approved",
               "verification": "verified", "detail": "",
               "timings_ms": {"capture": 0.0, "ocr": 0.0, "plan": 0.0, "act": 0.0, "settle": 0.0, "verify": 0.0},
               "screenshot": n, "verify_screenshot": n})
        })
        .collect();
    std::fs::write(
        dir.join("session.json"),
        json!({"id": "1-planted", "status": "done", "task": "t", "provider": "local",
            "model": "m", "prompt_version": "v", "mode": "auto", "pid": 1, "pid_start": 0,
            "started_ms": 1, "ended_ms": 2, "summary": "", "steps": steps})
        .to_string(),
    )
    .unwrap();
    let get = |path: &str| {
        c.get(format!("{}{path}", dm.url))
            .bearer_auth(&dm.token)
            .send()
            .unwrap()
    };
    for n in 1..=3 {
        let r = get(&format!("/observe/sessions/1-planted/steps/{n}.png"));
        let code = r.status().as_u16();
        let body = r.text().unwrap();
        assert_eq!(code, 404, "step {n} ({}) was served: {body}", names[n - 1]);
        assert!(!body.contains("OUTSIDE-SECRET"), "{body}");
    }
    let r = get("/observe/sessions/1-planted/steps/4.png");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.text().unwrap(), "INSIDE");
    let r = get("/observe/sessions/1-planted/report");
    let policy = csp(&r);
    assert!(
        policy.contains("sandbox") && policy.contains("frame-ancestors 'none'"),
        "{policy:?}"
    );
    let html = r.text().unwrap();
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    assert!(
        !html.contains(&b64("OUTSIDE-SECRET-BYTES")),
        "the report embeds a file outside"
    );
    assert!(
        html.contains(&b64("INSIDE")),
        "the report lost its own picture"
    );
    // The token, by header and in the event stream's query, logged nowhere.
    let _ = c
        .get(format!("{}/observe/events?token={}", dm.url, dm.token))
        .timeout(Duration::from_millis(500))
        .send()
        .map(|mut r| std::io::copy(&mut r, &mut std::io::sink()));
    let token = dm.token.clone();
    drop(dm);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains(&token), "the token was logged");
}
