//! `voxdesk run --provider gemini|openai` against in-process servers that speak each provider's wire format: tool calls click a real calculator on the virtual desktop and are verified, with an interruption, a cancellation, a `goAway` and resumption, a dropped socket, and malformed and unknown messages along the way; a spoken stop; an unreachable model; missing settings.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::model_server::*;
use crate::util::*;

const SOON: Duration = Duration::from_secs(30);

fn calc(display: &str) -> Guard {
    app(display, &["xcalc", "-geometry", "300x400+400+200"], "XCalc")
}

fn realtime_cmd(display: &str, data: &Path, provider: &str, model: &str, base: &str) -> Command {
    let mut c = bin();
    c.env("DISPLAY", display)
        .env("XDG_DATA_HOME", data)
        .env("XDG_CONFIG_HOME", data.join("config"))
        .env("XDG_CACHE_HOME", data.join("cache"))
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .env("GEMINI_API_KEY", "test-key-gemini")
        .env("OPENAI_API_KEY", "test-key-openai")
        .env(
            if provider == "gemini" {
                "VOXDESK_GEMINI_URL"
            } else {
                "VOXDESK_OPENAI_URL"
            },
            base,
        )
        .args([
            "run",
            "--quiet",
            "--mode",
            "auto",
            "--provider",
            provider,
            "--model",
            model,
            "click 7, plus, 5, equals",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn finish(child: Child) -> (i32, String) {
    let o = child.wait_with_output().unwrap();
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

fn gemini_response(v: &Value) -> Option<&Value> {
    v.pointer("/toolResponse/functionResponses/0")
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

#[test]
fn gemini_drives_the_calculator_through_resumption_and_a_dropped_socket() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start("gemini");
    let child = realtime_cmd(d, data.path(), "gemini", "gemini-3.8-live", &server.base())
        .spawn()
        .unwrap();

    // Connection 1: the documented path, the key in its header and nowhere else.
    let mut c = server.accept(SOON);
    assert_eq!(
        c.path,
        "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
    );
    assert_eq!(c.header("x-goog-api-key"), Some("test-key-gemini"));
    let setup = c.expect("setup", SOON, |v| v.get("setup").is_some());
    assert_eq!(setup["setup"]["model"], "models/gemini-3.8-live");
    let decls = &setup["setup"]["tools"][0]["functionDeclarations"];
    assert_eq!(decls.as_array().unwrap().len(), 3);
    assert!(decls
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["behavior"] == "BLOCKING"));
    assert!(setup["setup"].get("sessionResumption").is_some());
    // Nothing but the setup before setupComplete.
    c.none_within(
        "frame before setupComplete",
        Duration::from_millis(300),
        |_| true,
    );
    c.send_binary(json!({"setupComplete": {}}));
    let turn = c.expect("the task turn", SOON, |v| v.get("clientContent").is_some());
    let text = turn["clientContent"]["turns"][0]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.starts_with("Task: click 7, plus, 5, equals"), "{text}");
    let obs = first_observation(&text);

    // Malformed and unknown messages are ignored; a resumable handle arrives; the model speaks.
    c.send_raw("this is not json");
    c.send(json!({"someFutureMessage": {"x": 1}}));
    c.send(json!({"sessionResumptionUpdate": {"newHandle": "h1", "resumable": true}}));
    c.send(
        json!({"serverContent": {"modelTurn": {"parts": [{"inlineData": {
        "mimeType": "audio/pcm;rate=24000", "data": tone_b64(200, 24000)}}]},
        "outputTranscription": {"text": "Adding seven and five."}}}),
    );
    c.send(json!({"serverContent": {"turnComplete": true}}));
    // A turn interrupted at once (its audio queued, none of it heard yet), then completed: its
    // words are not recorded as said, or only as interrupted.
    c.send(
        json!({"serverContent": {"modelTurn": {"parts": [{"inlineData": {
        "mimeType": "audio/pcm;rate=24000", "data": tone_b64(2000, 24000)}}]},
        "outputTranscription": {"text": "Then I will also"}}}),
    );
    c.send(json!({"serverContent": {"interrupted": true}}));
    c.send(json!({"serverContent": {"outputTranscription": {"text": " clear the display."}}}));
    c.send(json!({"serverContent": {"turnComplete": true}}));

    // The act: four real clicks, verified by what the display shows.
    c.send(json!({"toolCall": {"functionCalls": [
        {"id": "fc1", "name": "act", "args": calc_batch(&obs)}]}}));
    let r = c.expect("the act's answer", SOON, |v| gemini_response(v).is_some());
    let r = gemini_response(&r).unwrap();
    assert_eq!(
        (r["id"].as_str(), r["name"].as_str()),
        (Some("fc1"), Some("act"))
    );
    assert_eq!(r["response"]["verification"]["verdict"], "verified", "{r}");

    // Two calls, the second cancelled while the first runs: it never runs.
    c.send(json!({"toolCall": {"functionCalls": [
        {"id": "fc2", "name": "observe", "args": {}},
        {"id": "fc3", "name": "act", "args": {"observation_id": "o-none",
            "actions": [{"action": "click", "target": target(&obs, "1")}]}}]}}));
    c.send(json!({"toolCallCancellation": {"ids": ["fc3"]}}));
    let r = c.expect("the observe's answer", SOON, |v| {
        gemini_response(v).is_some()
    });
    assert_eq!(gemini_response(&r).unwrap()["id"], "fc2");
    c.none_within(
        "answer to the cancelled call",
        Duration::from_secs(2),
        |v| gemini_response(v).is_some(),
    );

    // goAway: the client comes back on a new connection with the last resumable handle.
    c.send(json!({"sessionResumptionUpdate": {"newHandle": "h2", "resumable": true}}));
    c.send(json!({"sessionResumptionUpdate": {"newHandle": "", "resumable": false}}));
    c.send(json!({"goAway": {"timeLeft": "3s"}}));
    let mut c2 = server.accept(SOON);
    let setup = c2.expect("setup", SOON, |v| v.get("setup").is_some());
    assert_eq!(
        setup["setup"]["sessionResumption"]["handle"], "h2",
        "{setup}"
    );
    c2.send(json!({"setupComplete": {}}));
    c2.send(json!({"toolCall": {"functionCalls": [{"id": "fc4", "name": "observe", "args": {}}]}}));
    let r = c2.expect("the observe's answer", SOON, |v| {
        gemini_response(v).is_some()
    });
    let look = &gemini_response(&r).unwrap()["response"];
    assert!(
        look["targets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["text"] == "12"),
        "the display does not show 12: {look}"
    );

    // New speech cancels a running (BLOCKING) act: it has acted, so it is not answered as
    // the cancelled call but told with the next message.
    c2.send(
        json!({"toolCall": {"functionCalls": [{"id": "fc6", "name": "act", "args": {
        "observation_id": look["observation_id"],
        "actions": [{"action": "click", "target": target(look, "+")}]}}]}}),
    );
    std::thread::sleep(Duration::from_millis(30));
    c2.send(json!({"toolCallCancellation": {"ids": ["fc6"]}}));
    c2.none_within(
        "an answer to the cancelled act",
        Duration::from_secs(3),
        |v| gemini_response(v).is_some(),
    );
    c2.send(json!({"toolCall": {"functionCalls": [{"id": "fc7", "name": "observe", "args": {}}]}}));
    let r = c2.expect("the observe's answer", SOON, |v| {
        gemini_response(v).is_some()
    });
    let earlier = gemini_response(&r).unwrap()["response"]["earlier"]
        .as_str()
        .unwrap_or("");
    assert!(
        earlier.starts_with("act("),
        "the cancelled act was not told: {r}"
    );

    // The connection is cut while an act runs: it finishes on the next connection and is told
    // there as soon as it is known, before anything else (not held for a later answer).
    let seen = &gemini_response(&r).unwrap()["response"];
    c2.send(
        json!({"toolCall": {"functionCalls": [{"id": "fc8", "name": "act", "args": {
        "observation_id": seen["observation_id"],
        "actions": [{"action": "wait", "ms": 1500}]}}]}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    c2.cut();
    let mut c3 = server.accept(SOON);
    let setup = c3.expect("setup", SOON, |v| v.get("setup").is_some());
    assert_eq!(setup["setup"]["sessionResumption"]["handle"], "h2");
    c3.send(json!({"setupComplete": {}}));
    let told = c3.expect("the act that finished meanwhile", SOON, |v| {
        v.get("clientContent").is_some() || gemini_response(v).is_some()
    });
    let text = told["clientContent"]["turns"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("Meanwhile the desk finished: act(") && text.contains("\"wait\""),
        "the act that ran across the cut was not told first: {told}"
    );
    c3.send(
        json!({"toolCall": {"functionCalls": [{"id": "fc5", "name": "done",
        "args": {"success": true, "summary": "Seven plus five is twelve."}}]}}),
    );
    let r = c3.expect("done's answer", SOON, |v| gemini_response(v).is_some());
    assert_eq!(gemini_response(&r).unwrap()["response"]["ended"], "done");
    c3.send(
        json!({"serverContent": {"outputTranscription": {"text": "Seven plus five is twelve."}}}),
    );
    c3.send(json!({"serverContent": {"turnComplete": true}}));

    let (code, out) = finish(child);
    assert_eq!(code, 0, "{out}");
    assert!(
        !out.contains("test-key-gemini"),
        "the key was printed: {out}"
    );
    // The planned renewal (goAway) is silent; only the cut connection was an outage to say.
    assert_eq!(
        out.matches("I cannot reach the model").count(),
        1,
        "a renewal is not an outage: {out}"
    );
    assert!(out.contains("model: Adding seven and five."), "{out}");
    assert!(
        !out.contains("clear the display")
            && out
                .lines()
                .filter(|l| l.contains("Then I will also"))
                .all(|l| l.trim_end().ends_with("(interrupted)")),
        "words the person never heard were recorded as said: {out}"
    );
    assert!(server.try_accept(Duration::from_millis(200)).is_none());
    let rec = session_record(data.path());
    assert_eq!(rec["status"], "done");
    assert_eq!(rec["provider"], "gemini");
    assert_eq!(rec["prompt_version"], "tools.v4+packet.v4+realtime.v3");
    let steps = rec["steps"].as_array().unwrap();
    let acts: Vec<&Value> = steps.iter().filter(|s| s["rails"] == "approved").collect();
    // The first act, fc6 (cancelled while it ran) and fc8 (across the cut); fc3, cancelled
    // before, never ran.
    assert_eq!(acts.len(), 3, "{steps:?}");
    assert_eq!(acts[0]["verification"], "verified");
}

fn openai_kind(v: &Value) -> &str {
    v["type"].as_str().unwrap_or("")
}

#[test]
fn openai_drives_the_calculator_truncates_at_what_was_heard_and_replays_after_a_drop_and_a_cut_act()
{
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start("openai");
    let child = realtime_cmd(d, data.path(), "openai", "gpt-realtime", &server.base())
        .spawn()
        .unwrap();

    let mut c = server.accept(SOON);
    assert_eq!(c.path, "/v1/realtime?model=gpt-realtime");
    assert_eq!(c.header("authorization"), Some("Bearer test-key-openai"));
    let update = c.expect("session.update", SOON, |v| {
        openai_kind(v) == "session.update"
    });
    assert_eq!(update["session"]["type"], "realtime");
    assert_eq!(update["session"]["tools"].as_array().unwrap().len(), 3);
    c.send(json!({"type": "session.created", "event_id": "e1", "session": {}}));
    c.send(json!({"type": "session.updated", "event_id": "e2", "session": {}}));
    let item = c.expect("the task item", SOON, |v| {
        openai_kind(v) == "conversation.item.create"
    });
    let text = item["item"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    let obs = first_observation(&text);
    c.expect("response.create", SOON, |v| {
        openai_kind(v) == "response.create"
    });

    // One response: speech, then the act's call, then done, in the GA event names.
    c.send(json!({"type": "response.created", "response": {"id": "r1"}}));
    c.send(
        json!({"type": "response.output_audio.delta", "response_id": "r1", "item_id": "i1",
        "output_index": 0, "content_index": 0, "delta": tone_b64(100, 24000)}),
    );
    c.send(
        json!({"type": "response.output_audio_transcript.delta", "response_id": "r1",
        "item_id": "i1", "delta": "Adding seven and five."}),
    );
    c.send(
        json!({"type": "response.function_call_arguments.done", "response_id": "r1",
        "item_id": "i2", "call_id": "c1", "name": "act",
        "arguments": calc_batch(&obs).to_string()}),
    );
    c.send(json!({"type": "response.done", "response": {"id": "r1", "status": "completed"}}));
    let out = c.expect("the act's output", SOON, |v| {
        openai_kind(v) == "conversation.item.create"
    });
    assert_eq!(out["item"]["type"], "function_call_output");
    assert_eq!(out["item"]["call_id"], "c1");
    let result: Value = serde_json::from_str(out["item"]["output"].as_str().unwrap()).unwrap();
    assert_eq!(result["verification"]["verdict"], "verified", "{result}");
    c.expect("response.create", SOON, |v| {
        openai_kind(v) == "response.create"
    });

    // Unknown and malformed events, and a harmless error, change nothing.
    c.send(json!({"type": "response.something_new", "x": 1}));
    c.send_raw("{{{");
    c.send(
        json!({"type": "error", "error": {"type": "invalid_request_error",
        "code": "response_cancel_not_active", "message": "no active response"}}),
    );

    // The person speaks over two seconds of speech: truncated at what was played, capped.
    c.send(json!({"type": "response.created", "response": {"id": "r2"}}));
    c.send(
        json!({"type": "response.output_audio.delta", "response_id": "r2", "item_id": "i3",
        "output_index": 0, "content_index": 0, "delta": tone_b64(2000, 24000)}),
    );
    std::thread::sleep(Duration::from_millis(600));
    c.send(
        json!({"type": "input_audio_buffer.speech_started", "item_id": "u1",
        "audio_start_ms": 100}),
    );
    let t = c.expect("the truncate", SOON, |v| {
        openai_kind(v) == "conversation.item.truncate"
    });
    assert_eq!(t["item_id"], "i3");
    let ms = t["audio_end_ms"].as_u64().expect("whole milliseconds");
    assert!(
        (300..2000).contains(&ms),
        "truncated at what was played: {t}"
    );
    c.send(json!({"type": "response.done", "response": {"id": "r2", "status": "cancelled"}}));

    // The session expires (OpenAI has no resumption): a new session, told the task and what
    // was done, then done.
    c.close(1001, "session_expired");
    let mut c2 = server.accept(SOON);
    c2.expect("session.update", SOON, |v| {
        openai_kind(v) == "session.update"
    });
    c2.send(json!({"type": "session.updated", "session": {}}));
    let replay = c2.expect("the replay", SOON, |v| {
        openai_kind(v) == "conversation.item.create"
    });
    let text = replay["item"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("new session") && text.contains("Task: click 7"),
        "{text}"
    );
    assert!(text.contains("Done 1: act("), "{text}");
    c2.expect("response.create", SOON, |v| {
        openai_kind(v) == "response.create"
    });

    // The socket is cut while an act runs: the new session hears of it before anything else,
    // as done in the replay (it finished while the socket was down) or as still running and
    // then, the moment it finishes, as finished meanwhile. Never lost, never asked again.
    c2.send(json!({"type": "response.created", "response": {"id": "r3a"}}));
    c2.send(
        json!({"type": "response.function_call_arguments.done", "response_id": "r3a",
        "item_id": "i4a", "call_id": "c1b", "name": "act",
        "arguments": "{\"actions\": [{\"action\": \"wait\", \"ms\": 1500}]}"}),
    );
    c2.send(json!({"type": "response.done", "response": {"id": "r3a", "status": "completed"}}));
    std::thread::sleep(Duration::from_millis(300));
    c2.cut();
    let mut c3 = server.accept(SOON);
    c3.expect("session.update", SOON, |v| {
        openai_kind(v) == "session.update"
    });
    c3.send(json!({"type": "session.updated", "session": {}}));
    let replay = c3.expect("the second replay", SOON, |v| {
        openai_kind(v) == "conversation.item.create"
    });
    let text = replay["item"]["content"][0]["text"].as_str().unwrap_or("");
    let item_text = |v: &Value| {
        v["item"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    if text.contains("Still running") {
        // (The replay's response.create is passed over on the way.)
        let told = c3.expect("the act that finished meanwhile", SOON, |v| {
            openai_kind(v) == "conversation.item.create"
        });
        let t = item_text(&told);
        assert!(
            t.contains("Meanwhile the desk finished: act(") && t.contains("\"wait\""),
            "the act that ran across the cut was not told as soon as it finished: {told}"
        );
    } else {
        assert!(
            text.contains("Done 2: act(") && text.contains("\"wait\""),
            "the act that ran across the cut is not in the new session's replay: {text}"
        );
        c3.expect("response.create", SOON, |v| {
            openai_kind(v) == "response.create"
        });
    }
    let c2 = c3;
    c2.send(json!({"type": "response.created", "response": {"id": "r3"}}));
    c2.send(
        json!({"type": "response.function_call_arguments.done", "response_id": "r3",
        "item_id": "i4", "call_id": "c2", "name": "done",
        "arguments": "{\"success\": true, \"summary\": \"Twelve.\"}"}),
    );
    c2.send(json!({"type": "response.done", "response": {"id": "r3", "status": "completed"}}));
    let mut c2 = c2;
    let out = c2.expect("done's output", SOON, |v| {
        openai_kind(v) == "conversation.item.create" && v["item"]["call_id"] == "c2"
    });
    assert_eq!(out["item"]["call_id"], "c2");
    c2.send(json!({"type": "response.created", "response": {"id": "r4"}}));
    c2.send(
        json!({"type": "response.output_audio_transcript.delta", "response_id": "r4",
        "item_id": "i5", "delta": "Twelve."}),
    );
    c2.send(json!({"type": "response.done", "response": {"id": "r4", "status": "completed"}}));

    let (code, out) = finish(child);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("test-key-openai"), "{out}");
    let rec = session_record(data.path());
    assert_eq!(rec["status"], "done");
    let acts = rec["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["rails"] == "approved")
        .count();
    // The calculator's act and the wait across the cut, each once.
    assert_eq!(acts, 2, "an act was repeated after a drop");
}

#[test]
fn a_spoken_stop_halts_the_running_act_without_waiting_for_the_model() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start("gemini");
    let child = realtime_cmd(d, data.path(), "gemini", "gemini-3.8-live", &server.base())
        .spawn()
        .unwrap();
    let mut c = server.accept(SOON);
    c.expect("setup", SOON, |v| v.get("setup").is_some());
    c.send(json!({"setupComplete": {}}));
    let turn = c.expect("the task turn", SOON, |v| v.get("clientContent").is_some());
    let obs = first_observation(
        turn["clientContent"]["turns"][0]["parts"][0]["text"]
            .as_str()
            .unwrap(),
    );
    // A long act: a click, then a 20 s wait, then another click that must never happen.
    c.send(
        json!({"toolCall": {"functionCalls": [{"id": "fc1", "name": "act", "args": {
        "observation_id": obs["observation_id"],
        "actions": [{"action": "click", "target": target(&obs, "7")},
                    {"action": "wait", "ms": 20000},
                    {"action": "click", "target": target(&obs, "9")}]}}]}}),
    );
    std::thread::sleep(Duration::from_millis(1500));
    c.send(json!({"serverContent": {"inputTranscription": {"text": "no, stop"}}}));
    let started = std::time::Instant::now();
    let (code, out) = finish(child);
    assert_eq!(code, 4, "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the wait was not cut short"
    );
    let rec = session_record(data.path());
    assert_eq!(rec["status"], "stopped", "{rec}");
    assert!(out.contains("stopped by a stop request"), "{out}");
}

#[test]
fn an_unreachable_model_is_said_and_nothing_is_dispatched() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let data = tempfile::tempdir().unwrap();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // A model name newer than any profile: it runs on the provider's base profile, with one
    // warning naming the file a measured profile would go in (not a refusal to start).
    let mut c = realtime_cmd(
        d,
        data.path(),
        "openai",
        "gpt-realtime-2027-01",
        &format!("ws://127.0.0.1:{port}"),
    );
    c.env("VOXDESK_REALTIME_GIVE_UP_MS", "1500");
    let (code, out) = finish(c.spawn().unwrap());
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out.matches("no profile for openai model \"gpt-realtime-2027-01\"")
            .count(),
        1,
        "{out}"
    );
    assert!(out.contains("openai/gpt-realtime-2027-01.toml"), "{out}");
    assert!(out.contains("I cannot reach the model"), "{out}");
    let rec = session_record(data.path());
    assert_eq!(rec["status"], "failed");
    assert!(rec["steps"].as_array().unwrap().is_empty(), "{rec}");
}

#[test]
fn missing_model_key_profile_or_a_plain_remote_endpoint_is_one_line_naming_the_fix() {
    let data = tempfile::tempdir().unwrap();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = bin();
        c.env("XDG_DATA_HOME", data.path())
            .env("XDG_CONFIG_HOME", data.path().join("config"))
            .env_remove("GEMINI_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("VOXDESK_GEMINI_URL")
            .env_remove("VOXDESK_OPENAI_URL")
            .arg("run")
            .args(args)
            .arg("click 7");
        for (k, v) in env {
            c.env(k, v);
        }
        output(&mut c)
    };
    // (arguments, environment, what the one line says)
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (&["--provider", "gemini"], &[], "needs a model"),
        (
            &["--provider", "gemini", "--model", "gemini-3.8-live"],
            &[],
            "set GEMINI_API_KEY",
        ),
        (
            &["--provider", "openai", "--model", "gpt-9/../x"],
            &[("OPENAI_API_KEY", "k")],
            "no profile for openai model",
        ),
        (
            &[
                "--provider",
                "openai",
                "--model",
                "gpt-realtime",
                "--endpoint",
                "ws://example.com",
            ],
            &[("OPENAI_API_KEY", "k")],
            "only for a loopback address",
        ),
        (&["--provider", "vertex"], &[], "unknown provider"),
    ];
    for (args, env, needle) in cases {
        let o = run(args, env);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_clean_failure(&o, needle);
    }
    // Nothing was recorded: the session never started.
    assert!(!data.path().join("voxdesk/sessions").exists());
}

/// The loud span of the PCM a client streamed: (frames received, rate, seconds from the first
/// loud frame to the last).
fn loud_span(frames: &[Value]) -> (usize, u32, f64) {
    use base64::Engine;
    let mut rate = 0;
    let mut t = 0usize;
    let (mut first, mut last) = (None, 0usize);
    for f in frames {
        let a = &f["realtimeInput"]["audio"];
        let mime = a["mimeType"].as_str().unwrap_or("");
        rate = mime
            .strip_prefix("audio/pcm;rate=")
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("audio without its rate: {mime}"));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(a["data"].as_str().unwrap())
            .unwrap();
        let pcm: Vec<i16> = bytes
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect();
        let rms = (pcm.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>()
            / pcm.len().max(1) as f64)
            .sqrt();
        if rms > 300.0 {
            first.get_or_insert(t);
            last = t + pcm.len();
        }
        t += pcm.len();
    }
    let span = first.map_or(0.0, |f| (last - f) as f64 / f64::from(rate.max(1)));
    (frames.len(), rate, span)
}

/// The loud span of a WAV, measured as `loud_span` measures the stream (20 ms windows).
fn wav_loud_span(wav: &Path) -> f64 {
    use base64::Engine;
    let raw = data_of(wav);
    let rate = 16_000;
    let frames: Vec<Value> = raw
        .chunks(rate as usize / 50 * 2)
        .map(|c| {
            json!({"realtimeInput": {"audio": {"mimeType": "audio/pcm;rate=16000",
                "data": base64::engine::general_purpose::STANDARD.encode(c)}}})
        })
        .collect();
    loud_span(&frames).2
}

/// A WAV's samples as 16 kHz PCM16 mono, converted by sox.
fn data_of(wav: &Path) -> Vec<u8> {
    let o = Command::new("sox")
        .arg(wav)
        .args([
            "-t", "raw", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    o.stdout
}

#[test]
fn listen_streams_speech_from_the_mic_and_plays_the_models_speech() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start("gemini");
    let speaker_wav = data.path().join("speaker.wav");
    let mut c = bin();
    c.env("DISPLAY", d)
        .env("XDG_DATA_HOME", data.path())
        .env("XDG_CONFIG_HOME", data.path().join("config"))
        .env("VOXDESK_ALLOW_APPS", "XCalc")
        .env("GEMINI_API_KEY", "k")
        .env("VOXDESK_GEMINI_URL", server.base())
        .args([
            "listen",
            "--provider",
            "gemini",
            "--model",
            "gemini-3.8-live",
        ])
        .args(["--mode", "auto"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let mut conn = server.accept(SOON);
    conn.expect("setup", SOON, |v| v.get("setup").is_some());
    conn.send(json!({"setupComplete": {}}));
    // Wait for the mic's frames to flow, then speak into it.
    conn.expect("audio", SOON, |v| {
        v.pointer("/realtimeInput/audio").is_some()
    });
    let speech = data.path().join("speech.wav");
    assert!(Command::new("espeak-ng")
        .arg("-w")
        .arg(&speech)
        .arg("click seven, then plus five")
        .status()
        .unwrap()
        .success());
    let said = wav_loud_span(&speech);
    assert!(Command::new("paplay")
        .args(["-d", "micfeed"])
        .arg(&speech)
        .status()
        .unwrap()
        .success());
    let mut frames = Vec::new();
    let until = std::time::Instant::now() + Duration::from_millis(800);
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        if let Some(v) = conn.recv(left) {
            if v.pointer("/realtimeInput/audio").is_some() {
                frames.push(v);
            }
        }
    }
    let earlier: Vec<Value> = conn
        .seen
        .iter()
        .filter(|v| v.pointer("/realtimeInput/audio").is_some())
        .cloned()
        .collect();
    let (n, rate, span) = loud_span(&earlier);
    assert_eq!(rate, 16_000);
    assert!(n > 50, "only {n} frames");
    assert!(
        (span - said).abs() < 0.2,
        "the speech lasted {said:.2} s; the server heard {span:.2} s of it"
    );
    assert!(frames.len() >= 30, "the mic stopped streaming");

    // The model answers aloud: its speech reaches the speaker.
    let rec = crate::narration::Speaker::record(&speaker_wav);
    conn.send(
        json!({"serverContent": {"inputTranscription": {"text": "click seven then plus five"}}}),
    );
    conn.send(
        json!({"serverContent": {"modelTurn": {"parts": [{"inlineData": {
        "mimeType": "audio/pcm;rate=24000", "data": tone_b64(800, 24000)}}]}}}),
    );
    conn.send(json!({"serverContent": {"turnComplete": true}}));
    std::thread::sleep(Duration::from_millis(1200));
    rec.stop();
    let peak = crate::narration::peak_db(&speaker_wav);
    // The tone is at -20.8 dBFS: heard at its own level.
    assert!(peak > -24.0, "the model's speech was not heard ({peak} dB)");

    // A task: observe, then done; it becomes a recorded session named by what was heard.
    conn.send(
        json!({"toolCall": {"functionCalls": [{"id": "t1", "name": "observe", "args": {}}]}}),
    );
    let r = conn.expect("observe's answer", SOON, |v| {
        v.get("toolResponse").is_some()
    });
    assert!(r.to_string().contains("observation_id"), "{r}");
    conn.send(
        json!({"toolCall": {"functionCalls": [{"id": "t2", "name": "done",
        "args": {"success": true, "summary": "Nothing to do."}}]}}),
    );
    conn.expect("done's answer", SOON, |v| v.get("toolResponse").is_some());
    conn.send(json!({"serverContent": {"outputTranscription": {"text": "Nothing to do."}}}));
    conn.send(json!({"serverContent": {"turnComplete": true}}));
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let (code, out) = finish(child);
    assert!(out.contains("person: click seven then plus five"), "{out}");
    assert!(code == 0 || code == 4, "{code}: {out}");
    let rec = session_record(data.path());
    assert_eq!(rec["task"], "click seven then plus five");
    assert_eq!(rec["status"], "done");
}

#[test]
fn the_emergency_stop_cancels_the_models_response_and_ends_the_task() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start("openai");
    let child = realtime_cmd(d, data.path(), "openai", "gpt-realtime", &server.base())
        .spawn()
        .unwrap();
    let mut c = server.accept(SOON);
    c.expect("session.update", SOON, |v| {
        openai_kind(v) == "session.update"
    });
    c.send(json!({"type": "session.updated", "session": {}}));
    c.expect("response.create", SOON, |v| {
        openai_kind(v) == "response.create"
    });
    // The model is talking (a long answer) when the person holds the emergency stop.
    c.send(json!({"type": "response.created", "response": {"id": "r1"}}));
    c.send(
        json!({"type": "response.output_audio.delta", "response_id": "r1", "item_id": "i1",
        "output_index": 0, "content_index": 0, "delta": tone_b64(3000, 24000)}),
    );
    std::thread::sleep(Duration::from_millis(300));
    hold_stop_combo(d);
    let mut cancelled = false;
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        match c.recv(left) {
            Some(v) if openai_kind(&v) == "response.cancel" => {
                cancelled = true;
                break;
            }
            Some(_) => {}
            None => break,
        }
    }
    let (code, out) = finish(child);
    assert!(cancelled, "no response.cancel: {out}");
    assert_eq!(code, 4, "{out}");
    assert_eq!(session_record(data.path())["status"], "stopped");
}

#[test]
fn a_deployment_measured_to_use_pictures_gets_the_annotated_screen_with_each_observation() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    // The user's own profile, measured: it comes before the shipped one.
    let models = data.path().join("config/voxdesk/models/openai");
    std::fs::create_dir_all(&models).unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models/openai/gpt-realtime.toml"),
    )
    .unwrap();
    std::fs::write(
        models.join("gpt-realtime.toml"),
        shipped.replace("vision = \"unknown\"", "vision = \"describe-only\""),
    )
    .unwrap();
    let server = Server::start("openai");
    let child = realtime_cmd(d, data.path(), "openai", "gpt-realtime", &server.base())
        .spawn()
        .unwrap();
    let mut c = server.accept(SOON);
    c.expect("session.update", SOON, |v| {
        openai_kind(v) == "session.update"
    });
    c.send(json!({"type": "session.updated", "session": {}}));
    let jpeg_of = |item: &Value| -> Option<image::DynamicImage> {
        use base64::Engine;
        let url = item["item"]["content"]
            .as_array()?
            .iter()
            .find(|p| p["type"] == "input_image")?["image_url"]
            .as_str()?
            .to_string();
        let b64 = url.strip_prefix("data:image/jpeg;base64,")?;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg).ok()
    };
    let task = c.expect("the task item", SOON, |v| {
        openai_kind(v) == "conversation.item.create"
    });
    let pic = jpeg_of(&task).expect("the first turn carries the picture");
    assert!(
        pic.width() <= 1280 && pic.height() <= 720,
        "{}x{}",
        pic.width(),
        pic.height()
    );
    c.expect("response.create", SOON, |v| {
        openai_kind(v) == "response.create"
    });
    c.send(json!({"type": "response.created", "response": {"id": "r1"}}));
    c.send(
        json!({"type": "response.function_call_arguments.done", "response_id": "r1",
        "item_id": "i1", "call_id": "c1", "name": "observe", "arguments": "{}"}),
    );
    c.send(json!({"type": "response.done", "response": {"id": "r1", "status": "completed"}}));
    // The observation's picture, then its output: in that order.
    let first = c.expect("an item", SOON, |v| {
        openai_kind(v) == "conversation.item.create"
    });
    assert!(
        jpeg_of(&first).is_some(),
        "no picture before the output: {first}"
    );
    let out = c.expect("the output", SOON, |v| {
        openai_kind(v) == "conversation.item.create"
    });
    assert_eq!(out["item"]["type"], "function_call_output");
    c.expect("response.create", SOON, |v| {
        openai_kind(v) == "response.create"
    });
    c.send(json!({"type": "response.created", "response": {"id": "r2"}}));
    c.send(
        json!({"type": "response.function_call_arguments.done", "response_id": "r2",
        "item_id": "i2", "call_id": "c2", "name": "done",
        "arguments": "{\"success\": true, \"summary\": \"Looked.\"}"}),
    );
    c.send(json!({"type": "response.done", "response": {"id": "r2", "status": "completed"}}));
    let (code, out) = finish(child);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_probe_measures_the_deployment_and_its_cached_verdict_turns_pictures_on() {
    let Some(rig) = rig() else { return };
    let d: &str = &rig;
    let _calc = calc(d);
    let data = tempfile::tempdir().unwrap();
    let server = Server::start("gemini");
    let mut probe = bin();
    probe
        .env("DISPLAY", d)
        .env("XDG_DATA_HOME", data.path())
        .env("XDG_CONFIG_HOME", data.path().join("config"))
        .env("XDG_CACHE_HOME", data.path().join("cache"))
        .env("GEMINI_API_KEY", "k")
        .env("VOXDESK_GEMINI_URL", server.base())
        .args([
            "probe",
            "--provider",
            "gemini",
            "--model",
            "gemini-3.8-live",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = probe.spawn().unwrap();
    let mut c = server.accept(SOON);
    c.expect("setup", SOON, |v| v.get("setup").is_some());
    c.send(json!({"setupComplete": {}}));
    // Each question carries the picture; this model names a box that is not there.
    let mut asked = 0;
    while let Some(q) = c.recv(Duration::from_secs(5)) {
        let Some(parts) = q
            .pointer("/clientContent/turns/0/parts")
            .and_then(Value::as_array)
        else {
            continue;
        };
        assert!(
            parts
                .iter()
                .any(|p| p["inlineData"]["mimeType"] == "image/jpeg"),
            "a question without its picture: {q}"
        );
        asked += 1;
        c.send(json!({"serverContent": {"outputTranscription": {"text": "Box 999."}}}));
        c.send(json!({"serverContent": {"turnComplete": true}}));
    }
    let (code, out) = finish(child);
    assert_eq!(code, 0, "{out}");
    assert!((1..=3).contains(&asked), "{asked} questions: {out}");
    let cached: Value = serde_json::from_str(
        &std::fs::read_to_string(
            data.path()
                .join("cache/voxdesk/capability/gemini/gemini-3.8-live.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(cached["vision"], "describe-only", "{out}");

    // Measured: a run now sends the annotated screen with its first turn.
    let child = realtime_cmd(d, data.path(), "gemini", "gemini-3.8-live", &server.base())
        .spawn()
        .unwrap();
    let mut c = server.accept(SOON);
    c.expect("setup", SOON, |v| v.get("setup").is_some());
    c.send(json!({"setupComplete": {}}));
    let turn = c.expect("the task turn", SOON, |v| v.get("clientContent").is_some());
    let parts = turn["clientContent"]["turns"][0]["parts"]
        .as_array()
        .unwrap();
    assert!(parts
        .iter()
        .any(|p| p["inlineData"]["mimeType"] == "image/jpeg"));
    c.send(
        json!({"toolCall": {"functionCalls": [{"id": "p1", "name": "done",
        "args": {"success": true, "summary": "Seen."}}]}}),
    );
    c.expect("done's answer", SOON, |v| v.get("toolResponse").is_some());
    let (code, out) = finish(child);
    assert_eq!(code, 0, "{out}");
}
