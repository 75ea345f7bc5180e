//! Turn-based models over HTTP, against an in-process Chat Completions server (`text_server`) on the real rig: a local model with no key drives xcalc (streamed words, a tool call split across chunks, the picture and the screen as text), and a server that rate-limits, sends broken arguments, answers in words or cuts its stream gets a clear end with nothing run twice.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::model_server::target;
use super::text_server::{
    anthropic_streamed, gemini_streamed, observation, streamed, Answer, TextServer,
};
use super::util::{app, bin, rig, Guard};

fn calc(display: &str) -> Guard {
    app(display, &["xcalc", "-geometry", "300x400+400+200"], "XCalc")
}

fn text_cmd(display: &str, data: &Path, base: &str, task: &str) -> Command {
    provider_cmd(display, data, "openai-compatible", "llama3.2", base, task)
}

fn provider_cmd(
    display: &str,
    data: &Path,
    provider: &str,
    model: &str,
    base: &str,
    task: &str,
) -> Command {
    let mut c = bin();
    c.env("DISPLAY", display)
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", data.join("config"))
        .env("XDG_CACHE_HOME", data.join("cache"))
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .args([
            "run",
            "--quiet",
            "--mode",
            "auto",
            "--provider",
            provider,
            "--endpoint",
            base,
            "--model",
            model,
            task,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn finish(c: &mut Command) -> (i32, String) {
    let o = c.output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), text)
}

fn session_record(data: &Path) -> Value {
    let root = data.join("voxdesk/sessions");
    let dir = std::fs::read_dir(&root)
        .unwrap()
        .next()
        .expect("a session was recorded")
        .unwrap()
        .path();
    serde_json::from_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap()
}

/// The display's text, read by a separate look.
fn display_shows(display: &str, text: &str) -> bool {
    let o = bin()
        .env("DISPLAY", display)
        .args(["look", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    v["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["text"] == text)
}

fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

#[test]
fn a_local_model_with_no_key_drives_the_calculator_over_chat_completions() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = TextServer::start("openai-chat");
    server.then(|body| {
        let obs = observation(body);
        let batch = json!({
            "observation_id": obs["observation_id"],
            "actions": [
                {"action": "click", "target": target(&obs, "7")},
                {"action": "click", "target": target(&obs, "+")},
                {"action": "click", "target": target(&obs, "5")},
                {"action": "click", "target": target(&obs, "=")},
            ],
            "expect": {"shows": ["12"]}
        });
        Answer::Events(streamed("Adding seven and five.", &[("act", batch)]))
    });
    server.then(|_| {
        Answer::Events(streamed(
            "",
            &[(
                "done",
                json!({"success": true, "summary": "Seven and five make 12."}),
            )],
        ))
    });
    let (code, out) = finish(
        text_cmd(d, data.path(), &server.base(), "add 7 and 5").env("VOXDESK_TEXT_PICTURES", "1"),
    );
    assert_eq!(code, 0, "{out}");
    assert!(display_shows(d, "12"), "xcalc does not show 12\n{out}");
    assert!(
        out.contains("tokens: 2400 in, 80 out over 2 requests"),
        "{out}"
    );

    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{out}");
    for s in &seen {
        assert_eq!(s.path, "/v1/chat/completions");
        assert_eq!(
            s.header("authorization"),
            None,
            "no key is sent when none is set"
        );
        assert_eq!(s.body["model"], "llama3.2");
        assert_eq!(s.body["stream"], true);
        let tools: Vec<&str> = s.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["observe", "act", "done"]);
    }
    // The first: the instruction, then the task with the screen as text and its picture.
    let m = messages(&seen[0].body);
    assert_eq!(m[0]["role"], "system");
    assert!(m[0]["content"]
        .as_str()
        .unwrap()
        .contains("version text.v1"));
    let first = &m[1]["content"];
    assert!(first[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Task: add 7 and 5\n"));
    assert!(first[1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .starts_with("data:image/jpeg;base64,/9j/"));
    // The second: the model's call as it made it, then its answer from the desk.
    let m = messages(&seen[1].body);
    let call = m.iter().find(|x| x["role"] == "assistant").unwrap();
    assert_eq!(call["tool_calls"][0]["id"], "call_0_x");
    assert_eq!(call["content"], "Adding seven and five.");
    let answer = m.iter().find(|x| x["role"] == "tool").unwrap();
    assert_eq!(answer["tool_call_id"], "call_0_x");
    let result: Value = serde_json::from_str(answer["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["verification"]["verdict"], "verified", "{result}");
    // The newest picture only: the first one was dropped from the second request.
    let pictures = m
        .iter()
        .filter(|x| x["content"].to_string().contains("data:image/jpeg"))
        .count();
    assert_eq!(pictures, 1);

    let rec = session_record(data.path());
    assert_eq!(rec["provider"], "openai-compatible");
    assert_eq!(rec["model"], "llama3.2");
    assert_eq!(rec["status"], "done", "{rec}");
    // Token use: per step (the request that planned it) and for the session.
    assert_eq!(
        rec["tokens"],
        json!({"input": 2400, "output": 80, "requests": 2})
    );
    assert_eq!(
        rec["steps"][0]["tokens"],
        json!({"input": 1200, "output": 40, "requests": 1})
    );
}

#[test]
fn a_rate_limit_broken_arguments_and_words_without_a_call_end_clearly_and_nothing_runs() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = TextServer::start("openai-chat");
    // 429 with retry-after: tried again at once.
    server.then(|_| {
        Answer::Json(
            429,
            vec![("retry-after", "0".into())],
            json!({"error": {"message": "slow down", "type": "rate_limit"}}),
        )
    });
    // Arguments that are not JSON: answered as a bad call, nothing runs.
    server.then(|_| {
        let mut events = streamed("", &[]);
        events.insert(
            0,
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_bad", "type": "function", "function": {"name": "act", "arguments": "{\"observation_id\": \"x\", \"actions\": ["}}]}}]}).to_string(),
        );
        Answer::Events(events)
    });
    // Words, no call: asked once more, then the task ends failed with them.
    server.then(|_| Answer::Events(streamed("The calculator looks fine to me.", &[])));
    server.then(|_| Answer::Events(streamed("I would rather not click anything.", &[])));
    let (code, out) = finish(&mut text_cmd(d, data.path(), &server.base(), "add 7 and 5"));
    assert_ne!(code, 0, "{out}");
    let seen = server.requests();
    assert_eq!(seen.len(), 4, "{out}");
    let third = messages(&seen[2].body);
    let bad = third
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the bad call answered");
    assert_eq!(bad["tool_call_id"], "call_bad");
    assert!(
        bad["content"].as_str().unwrap().contains("bad-call"),
        "{bad}"
    );
    let fourth = messages(&seen[3].body);
    assert!(fourth.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .contains("Answer with one tool call"));
    let rec = session_record(data.path());
    assert_eq!(rec["status"], "failed", "{rec}");
    assert!(
        rec.to_string()
            .contains("I would rather not click anything."),
        "the model's words are in the record: {rec}"
    );
    assert_eq!(
        rec["steps"].as_array().map_or(0, Vec::len),
        0,
        "something ran: {rec}"
    );

    // A stream cut before its end: the task ends failed, said so, and nothing ran.
    let data = tempfile::tempdir().unwrap();
    let server = TextServer::start("openai-chat");
    server.then(|body| {
        let obs = observation(body);
        let batch = json!({"observation_id": obs["observation_id"],
            "actions": [{"action": "click", "target": target(&obs, "7")}]});
        let mut events = streamed("", &[("act", batch)]);
        events.truncate(2);
        Answer::Cut(events)
    });
    let (code, out) = finish(&mut text_cmd(d, data.path(), &server.base(), "click 7"));
    assert_ne!(code, 0, "{out}");
    assert_eq!(
        server.requests().len(),
        1,
        "a broken stream is not sent again: {out}"
    );
    assert!(
        out.contains("broke off") || out.contains("before [DONE]"),
        "{out}"
    );
    let rec = session_record(data.path());
    assert_eq!(rec["status"], "failed", "{rec}");
    assert_eq!(
        rec["steps"].as_array().map_or(0, Vec::len),
        0,
        "the half-sent call ran: {rec}"
    );

    // A plain remote endpoint and no model: one line naming the fix, nothing started.
    let (code, out) = finish(bin().env("DISPLAY", d).args([
        "run",
        "--provider",
        "openai-compatible",
        "--endpoint",
        "http://10.1.2.3:11434/v1",
        "--model",
        "m",
        "x",
    ]));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("use https://10.1.2.3"), "{out}");
    let (code, out) =
        finish(
            bin()
                .env("DISPLAY", d)
                .args(["run", "--provider", "openai-compatible", "x"]),
        );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("needs a model"), "{out}");
}

fn calc_batch(obs: &Value) -> Value {
    json!({
        "observation_id": obs["observation_id"],
        "actions": [
            {"action": "click", "target": target(obs, "7")},
            {"action": "click", "target": target(obs, "+")},
            {"action": "click", "target": target(obs, "5")},
            {"action": "click", "target": target(obs, "=")},
        ],
        "expect": {"shows": ["12"]}
    })
}

/// The seed's provider by its own name (`claude`, Anthropic's Messages API) and Gemini's
/// generateContent each drive the calculator, their keys in their own headers only, the
/// model's calls and answers in their APIs' shapes (Gemini's thought signature sent back).
#[test]
fn claude_and_gemini_text_drive_the_calculator_with_their_keys_in_their_headers() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);

    let data = tempfile::tempdir().unwrap();
    let server = TextServer::start("anthropic");
    server.then(|body| {
        Answer::Events(anthropic_streamed(
            "Adding seven and five.",
            &[("act", calc_batch(&observation(body)))],
        ))
    });
    server.then(|_| {
        Answer::Events(anthropic_streamed(
            "",
            &[("done", json!({"success": true, "summary": "It shows 12."}))],
        ))
    });
    let (code, out) = finish(
        provider_cmd(
            d,
            data.path(),
            "claude",
            "claude-sonnet-4-6",
            &format!("http://127.0.0.1:{}", server.port),
            "add 7 and 5",
        )
        .env("ANTHROPIC_API_KEY", "test-key-anthropic"),
    );
    assert_eq!(code, 0, "{out}");
    assert!(display_shows(d, "12"), "xcalc does not show 12\n{out}");
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{out}");
    for s in &seen {
        assert_eq!(s.path, "/v1/messages");
        assert_eq!(s.header("x-api-key"), Some("test-key-anthropic"));
        assert_eq!(s.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(s.header("authorization"), None);
        assert_eq!(s.body["model"], "claude-sonnet-4-6");
        assert!(s.body["system"].as_str().unwrap().contains("text.v1"));
    }
    let m = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["content"][1]["type"], "tool_use");
    assert_eq!(m[1]["content"][1]["id"], "toolu_0");
    assert_eq!(m[2]["content"][0]["type"], "tool_result");
    assert_eq!(m[2]["content"][0]["tool_use_id"], "toolu_0");
    let rec = session_record(data.path());
    assert_eq!(rec["provider"], "anthropic");
    assert_eq!(rec["status"], "done", "{rec}");

    let data = tempfile::tempdir().unwrap();
    let server = TextServer::start("gemini-text");
    server.then(|body| {
        Answer::Events(gemini_streamed(
            "Adding seven and five.",
            &[("act", calc_batch(&observation(body)))],
        ))
    });
    server.then(|_| {
        Answer::Events(gemini_streamed(
            "",
            &[("done", json!({"success": true, "summary": "It shows 12."}))],
        ))
    });
    let (code, out) = finish(
        provider_cmd(
            d,
            data.path(),
            "gemini-text",
            "gemini-3-flash",
            &format!("http://127.0.0.1:{}", server.port),
            "add 7 and 5",
        )
        .env("GEMINI_API_KEY", "test-key-gemini"),
    );
    assert_eq!(code, 0, "{out}");
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{out}");
    for s in &seen {
        assert_eq!(
            s.path,
            "/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(s.header("x-goog-api-key"), Some("test-key-gemini"));
    }
    let c = seen[1].body["contents"].as_array().unwrap();
    assert_eq!(c[1]["role"], "model");
    assert_eq!(c[1]["parts"][1]["thoughtSignature"], "c2lnbmF0dXJl");
    assert_eq!(c[2]["parts"][0]["functionResponse"]["name"], "act");
    assert_eq!(
        c[2]["parts"][0]["functionResponse"]["response"]["output"]["verification"]["verdict"],
        "verified"
    );
    assert_eq!(session_record(data.path())["status"], "done");
}

/// The seed's API example, word for word in its provider and model: `POST /observe/sessions`
/// with `"provider": "claude"` starts a session on the daemon, driven by the Messages API
/// (here the in-process server, named by `ANTHROPIC_BASE_URL` in the daemon's environment).
#[test]
fn the_seeds_curl_example_starts_a_claude_session_on_the_daemon() {
    use super::serve::{daemon_with, dirs};
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let server = TextServer::start("anthropic");
    server.then(|body| {
        Answer::Events(anthropic_streamed(
            "Adding seven and five.",
            &[("act", calc_batch(&observation(body)))],
        ))
    });
    server.then(|_| {
        Answer::Events(anthropic_streamed(
            "",
            &[("done", json!({"success": true, "summary": "It shows 12."}))],
        ))
    });
    let dirs = dirs();
    let base = format!("http://127.0.0.1:{}", server.port);
    let dm = daemon_with(
        d,
        &dirs,
        &[],
        &[
            ("ANTHROPIC_BASE_URL", base.as_str()),
            ("ANTHROPIC_API_KEY", "test-key-anthropic"),
        ],
        None,
    );
    let (code, s) = dm.post(
        "/observe/sessions",
        // The seed's body, and auto mode (the daemon's own default asks the panel first).
        json!({"task": "add 7 and 5 on the calculator", "provider": "claude", "model": "claude-sonnet-4-6", "mode": "auto"}),
    );
    assert_eq!(code, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    let r = dm.ended(&id, std::time::Duration::from_secs(60));
    assert_eq!(r["status"], "done", "{r}");
    assert_eq!(r["provider"], "anthropic");
    assert_eq!(r["model"], "claude-sonnet-4-6");
    assert!(display_shows(d, "12"));
    assert_eq!(server.requests().len(), 2);
    // An unknown provider is refused with the known ones named.
    let (code, e) = dm.post(
        "/observe/sessions",
        json!({"task": "x", "provider": "vertex", "model": "m"}),
    );
    assert_eq!(code, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("anthropic"), "{e}");
}

/// `voxdesk listen --provider openai-compatible`: a task said aloud into the virtual sound card
/// (flite's rms voice) is heard by the learned ears, is no command, and reaches the model as the
/// task's text; the model's plan clicks the calculator. A command said after it ("click
/// plus") is still done offline, with no request.
#[test]
fn a_spoken_task_reaches_a_local_model_as_text_and_its_plan_clicks_the_calculator() {
    use super::voice::{into_mic, say_to, Listening, FLITE};
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let server = TextServer::start("openai-chat");
    server.then(|body| {
        Answer::Events(streamed(
            "Adding seven and five.",
            &[("act", calc_batch(&observation(body)))],
        ))
    });
    server.then(|_| {
        Answer::Events(streamed(
            "",
            &[("done", json!({"success": true, "summary": "It shows 12."}))],
        ))
    });
    let dir = tempfile::tempdir().unwrap();
    let base = server.base();
    let l = Listening::start_args(
        d,
        dir.path(),
        "XCalc",
        &[],
        &[
            "--provider",
            "openai-compatible",
            "--endpoint",
            &base,
            "--model",
            "llama3.2",
        ],
    );
    let wav = dir.path().join("say.wav");
    say_to(FLITE, "add seven and five on the calculator", &wav);
    into_mic(&wav);
    assert!(
        super::util::wait_for(std::time::Duration::from_secs(60), || l
            .text()
            .contains("session: ")),
        "no session: {}",
        l.text()
    );
    let out = l.end();
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{out}");
    let first = messages(&seen[0].body)[1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    assert!(
        first.starts_with("task: add seven and five on the calculator")
            || first.starts_with("task: add 7 and 5 on the calculator"),
        "the task as said: {first}\n{out}"
    );
    assert!(out.contains("(Done)"), "{out}");
    assert!(display_shows(d, "12"), "xcalc does not show 12\n{out}");
}

/// `voxdesk probe` on a text deployment: a server whose model finds the numbered boxes is
/// recorded as seeing pictures, and `run` then sends the screen's picture to it; one that drops
/// the picture (its model guesses) is recorded as not seeing them, and gets text only.
#[test]
fn the_probe_records_whether_a_deployment_sees_pictures_and_run_follows_it() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let o = bin()
        .env("DISPLAY", d)
        .args(["look", "--json"])
        .output()
        .unwrap();
    let look: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<(String, u64)> = look["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["text"].as_str().unwrap_or_default().to_string(),
                t["id"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    for (sees, answer) in [(true, "by the picture"), (false, "a guess")] {
        let data = tempfile::tempdir().unwrap();
        let server = TextServer::start("openai-chat");
        for _ in 0..3 {
            let ids = ids.clone();
            server.then(move |body| {
                let q = body["messages"][1]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let label = q.split('"').nth(1).unwrap_or_default().to_string();
                let n = match (sees, body.to_string().contains("data:image/jpeg;base64,")) {
                    (true, true) => ids
                        .iter()
                        .find(|(t, _)| *t == label)
                        .map_or(0, |(_, id)| *id),
                    _ => 3,
                };
                Answer::Events(streamed(&format!("{n}"), &[]))
            });
        }
        let mut probe = bin();
        probe
            .env("DISPLAY", d)
            .env("XDG_CACHE_HOME", data.path().join("cache"))
            .env("XDG_CONFIG_HOME", data.path().join("config"))
            .args([
                "probe",
                "--provider",
                "openai-compatible",
                "--endpoint",
                &server.base(),
                "--model",
                "llava",
            ]);
        let (code, out) = finish(&mut probe);
        assert_eq!(code, 0, "{answer}: {out}");
        assert_eq!(server.requests().len(), 3, "{out}");
        assert!(server
            .requests()
            .iter()
            .all(|r| r.body.to_string().contains("data:image/jpeg")));
        assert_eq!(out.contains("sees the pictures"), sees, "{answer}: {out}");
        // The next task follows the record.
        server.then(|_| {
            Answer::Events(streamed(
                "",
                &[("done", json!({"success": true, "summary": "ok"}))],
            ))
        });
        let mut run = provider_cmd(
            d,
            data.path(),
            "openai-compatible",
            "llava",
            &server.base(),
            "look at the calculator",
        );
        let (code, out) = finish(&mut run);
        assert_eq!(code, 0, "{out}");
        let first = server.requests()[3].body.to_string();
        assert_eq!(
            first.contains("data:image/jpeg"),
            sees,
            "{answer}: pictures follow the record"
        );
    }
}

/// Speaking over voxdesk while a text model's request is in flight (its plan still being said)
/// abandons the request: the task ends stopped at once, not when the slow model answers, and
/// nothing more is asked of it.
#[test]
fn speaking_over_the_narration_abandons_the_request_in_flight() {
    use super::voice::{into_mic, say_to, Listening, FLITE, FLITE_SLT};
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let server = TextServer::start("openai-chat");
    server.then(|body| {
        Answer::Events(streamed(
            "I will add seven and five, one key at a time, and then I will read the display back to you.",
            &[("act", calc_batch(&observation(body)))],
        ))
    });
    server.then(|_| {
        // A slow model: the answer would come long after the person spoke.
        std::thread::sleep(std::time::Duration::from_secs(20));
        Answer::Events(streamed(
            "",
            &[("done", json!({"success": true, "summary": "12"}))],
        ))
    });
    let dir = tempfile::tempdir().unwrap();
    let base = server.base();
    let l = Listening::start_args(
        d,
        dir.path(),
        "XCalc",
        &[],
        &[
            "--provider",
            "openai-compatible",
            "--endpoint",
            &base,
            "--model",
            "llama3.2",
        ],
    );
    let wav = dir.path().join("say.wav");
    say_to(FLITE, "add seven and five on the calculator", &wav);
    into_mic(&wav);
    assert!(
        super::util::wait_for(std::time::Duration::from_secs(60), || server
            .requests()
            .len()
            >= 2),
        "the second request was not sent: {}",
        l.text()
    );
    let asked = std::time::Instant::now();
    say_to(FLITE_SLT, "no wait, hold on a moment", &wav);
    into_mic(&wav);
    assert!(
        super::util::wait_for(std::time::Duration::from_secs(12), || l
            .text()
            .contains("(Stopped)")),
        "the task did not stop: {}",
        l.text()
    );
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(15),
        "it waited for the model"
    );
    let out = l.end();
    assert!(
        out.contains("interrupted"),
        "stopped by the barge-in: {out}"
    );
    assert_eq!(server.requests().len(), 2, "{out}");
}

/// A server that refuses the picture (400), then fails (500), then ignores `stream` and answers
/// with the whole reply: the turn goes again without pictures, is retried after the 500, the
/// whole reply is read, and the calculator shows 12, every action once.
#[test]
fn a_refused_picture_a_500_and_a_reply_not_streamed_still_drive_the_calculator() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = TextServer::start("openai-chat");
    server.then(|_| {
        Answer::Json(
            400,
            Vec::new(),
            json!({"error": {"message": "image input is not supported by this model", "type": "invalid_request_error"}}),
        )
    });
    server.then(|_| Answer::Json(500, Vec::new(), json!({"error": {"message": "internal"}})));
    server.then(|body| {
        let batch = calc_batch(&observation(body));
        Answer::Json(
            200,
            Vec::new(),
            json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_w",
                "type": "function", "function": {"name": "act", "arguments": batch.to_string()}}]},
                "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 900, "completion_tokens": 30}}),
        )
    });
    server.then(|_| {
        Answer::Events(streamed(
            "",
            &[("done", json!({"success": true, "summary": "It shows 12."}))],
        ))
    });
    let (code, out) = finish(
        text_cmd(d, data.path(), &server.base(), "add 7 and 5").env("VOXDESK_TEXT_PICTURES", "1"),
    );
    assert_eq!(code, 0, "{out}");
    let seen = server.requests();
    assert_eq!(seen.len(), 4, "{out}");
    let pictured: Vec<bool> = seen
        .iter()
        .map(|s| s.body.to_string().contains("data:image/jpeg"))
        .collect();
    assert_eq!(pictured, [true, false, false, false], "{out}");
    assert!(display_shows(d, "12"), "xcalc does not show 12\n{out}");
    let rec = session_record(data.path());
    assert_eq!(
        rec["steps"].as_array().unwrap().len(),
        1,
        "the act ran once: {rec}"
    );
}
