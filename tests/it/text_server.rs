//! An in-process stand-in for a turn-based model's server: a real HTTP/1.1 listener on loopback that answers each POST with what the test scripted (a JSON body, server-sent events, an error status with its headers, a stream cut short), records every request's path, headers and body, and appends every body to `$VOXDESK_FRAME_DUMP` for the SDK check.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One scripted answer.
pub enum Answer {
    /// A status, extra headers and a JSON body.
    Json(u16, Vec<(&'static str, String)>, Value),
    /// `data:` payloads as server-sent events (a `[DONE]` is the test's to send).
    Events(Vec<String>),
    /// These events, then the connection dropped mid-stream.
    Cut(Vec<String>),
}

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Script = Box<dyn FnMut(&Value) -> Answer + Send>;

pub struct TextServer {
    pub port: u16,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<VecDeque<Script>>>,
}

impl TextServer {
    /// `api` tags the dumped bodies for the SDK check ("openai-chat", "anthropic",
    /// "gemini-text").
    pub fn start(api: &'static str) -> TextServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let script: Arc<Mutex<VecDeque<Script>>> = Arc::default();
        let dump = std::env::var_os("VOXDESK_FRAME_DUMP").map(std::path::PathBuf::from);
        let (s2, sc2) = (seen.clone(), script.clone());
        std::thread::spawn(move || {
            for tcp in listener.incoming().map_while(Result::ok) {
                let (s3, sc3, d) = (s2.clone(), sc2.clone(), dump.clone());
                std::thread::spawn(move || serve(tcp, api, &s3, &sc3, d.as_deref()));
            }
        });
        TextServer { port, seen, script }
    }

    /// The base URL a client is given (`http://127.0.0.1:PORT/v1`).
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The next request is answered by `f` (given the request's body).
    pub fn then(&self, f: impl FnMut(&Value) -> Answer + Send + 'static) {
        self.script.lock().unwrap().push_back(Box::new(f));
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(
    tcp: TcpStream,
    api: &str,
    seen: &Mutex<Vec<Seen>>,
    script: &Mutex<VecDeque<Script>>,
    dump: Option<&std::path::Path>,
) {
    let mut r = BufReader::new(tcp.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut headers = Vec::new();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut buf = vec![0u8; len];
    let _ = r.read_exact(&mut buf);
    let body: Value = serde_json::from_slice(&buf).unwrap_or(Value::Null);
    if let Some(p) = dump {
        let line = serde_json::json!({"provider": api, "frame": body}).to_string();
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            let _ = writeln!(f, "{line}");
        }
    }
    seen.lock().unwrap().push(Seen {
        path,
        headers,
        body: body.clone(),
    });
    let next = script.lock().unwrap().pop_front();
    let answer = match next {
        Some(mut f) => f(&body),
        None => Answer::Json(
            500,
            Vec::new(),
            serde_json::json!({"error": {"message": "the test scripted no answer for this request"}}),
        ),
    };
    let mut w = tcp;
    match answer {
        Answer::Json(status, extra, v) => {
            let b = v.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                b.len()
            );
            for (k, v) in extra {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            let _ = w.write_all(format!("{head}\r\n{b}").as_bytes());
        }
        Answer::Events(events) | Answer::Cut(events) => {
            let _ = w.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            for e in events {
                let _ = w.write_all(format!("data: {e}\n\n").as_bytes());
                let _ = w.flush();
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }
    let _ = w.flush();
    let _ = w.shutdown(std::net::Shutdown::Both);
}

/// A streamed reply: the words in two pieces, then each call with its arguments cut in two
/// (the first fragment carrying id and name), then `finish_reason` and `[DONE]`.
pub fn streamed(words: &str, calls: &[(&str, Value)]) -> Vec<String> {
    use serde_json::json;
    let mut out = Vec::new();
    if !words.is_empty() {
        let mid = words.len() / 2;
        let mid = (mid..=words.len())
            .find(|&i| words.is_char_boundary(i))
            .unwrap();
        for piece in [&words[..mid], &words[mid..]] {
            out.push(json!({"choices": [{"index": 0, "delta": {"content": piece}}]}).to_string());
        }
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        let a = args.to_string();
        let mid = a.len() / 2;
        out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": format!("call_{i}_x"), "type": "function", "function": {"name": name, "arguments": ""}}]}}]}).to_string());
        for piece in [&a[..mid], &a[mid..]] {
            out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}}]}).to_string());
        }
    }
    out.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": if calls.is_empty() {"stop"} else {"tool_calls"}}]}).to_string());
    out.push(json!({"choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240}}).to_string());
    out.push("[DONE]".to_string());
    out
}

/// The newest screen a request carries: the observation between the untrusted-screen tags of
/// a user message, or in the newest tool answer.
pub fn observation(body: &Value) -> Value {
    let mut obs = Value::Null;
    // Gemini's contents hold parts where the others hold content.
    let gemini: Vec<Value> = body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| serde_json::json!({"role": c["role"], "content": c["parts"]}))
        .collect();
    let messages = body["messages"].as_array().cloned().unwrap_or(gemini);
    for m in &messages {
        let text = match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => continue,
        };
        if m["role"] == "tool" {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                let o = v.get("observation").cloned().unwrap_or(v);
                if o["targets"].is_array() {
                    obs = o;
                }
            }
        } else if let (Some(a), Some(b)) = (
            text.find("<untrusted-screen-text>\n"),
            text.find("\n</untrusted-screen-text>"),
        ) {
            let inner = &text[a + "<untrusted-screen-text>\n".len()..b];
            if let Ok(v) = serde_json::from_str::<Value>(inner) {
                if v["targets"].is_array() {
                    obs = v;
                }
            }
        }
    }
    obs
}

/// Anthropic's stream of events for a reply: the words as a text block in two deltas, each
/// call as a tool_use block whose input comes in two `input_json_delta` pieces.
pub fn anthropic_streamed(words: &str, calls: &[(&str, Value)]) -> Vec<String> {
    use serde_json::json;
    let mut out = vec![json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude", "usage": {"input_tokens": 1500, "output_tokens": 1}}}).to_string()];
    let mut index = 0;
    if !words.is_empty() {
        let mid = (words.len() / 2..=words.len())
            .find(|&i| words.is_char_boundary(i))
            .unwrap();
        out.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}).to_string());
        for piece in [&words[..mid], &words[mid..]] {
            out.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}).to_string());
        }
        out.push(json!({"type": "content_block_stop", "index": 0}).to_string());
        index = 1;
    }
    out.push(json!({"type": "ping"}).to_string());
    for (k, (name, args)) in calls.iter().enumerate() {
        let i = index + k;
        let a = args.to_string();
        let mid = a.len() / 2;
        out.push(json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("toolu_{k}"), "name": name, "input": {}}}).to_string());
        for piece in [&a[..mid], &a[mid..]] {
            out.push(json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}).to_string());
        }
        out.push(json!({"type": "content_block_stop", "index": i}).to_string());
    }
    out.push(json!({"type": "message_delta", "delta": {"stop_reason": if calls.is_empty() {"end_turn"} else {"tool_use"}}, "usage": {"output_tokens": 50}}).to_string());
    out.push(json!({"type": "message_stop"}).to_string());
    out
}

/// Gemini's stream for a reply: the words, then each call whole with a thought signature on
/// the first (Gemini sends no argument pieces and no `[DONE]`).
pub fn gemini_streamed(words: &str, calls: &[(&str, Value)]) -> Vec<String> {
    use serde_json::json;
    let mut out = Vec::new();
    if !words.is_empty() {
        out.push(
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": words}]}}]})
                .to_string(),
        );
    }
    let parts: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(k, (name, args))| {
            let mut p = json!({"functionCall": {"name": name, "args": args}});
            if k == 0 {
                p["thoughtSignature"] = Value::from("c2lnbmF0dXJl");
            }
            p
        })
        .collect();
    out.push(json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 1400, "candidatesTokenCount": 30}}).to_string());
    out
}
