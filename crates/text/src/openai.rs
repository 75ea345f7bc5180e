//! OpenAI Chat Completions as pure wire — OpenAI itself and the servers that speak it (Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter): the request body from a conversation and the tools, the reply read back whole or from stream chunks, tolerant of the servers' known quirks (arguments as an object, ids missing or repeated, calls written as text).

use base64::Engine;
use serde_json::{json, Map, Value};

use super::convo::{Call, Conversation, ReadError, Reply, Turn, Usage};

/// How one deployment takes a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Flavour {
    /// `max_completion_tokens` (OpenAI itself) or `max_tokens` (what Ollama and older servers
    /// read; Ollama drops the other silently).
    pub completion_tokens_key: bool,
    /// Pictures may be sent (the probe found the model sees them).
    pub pictures: bool,
}

/// The request body (`POST {base}/chat/completions`).
pub fn request(
    model: &str,
    convo: &Conversation,
    tools: &Value,
    flavour: &Flavour,
    max_tokens: u32,
    stream: bool,
) -> Value {
    let mut messages = vec![json!({"role": "system", "content": convo.system})];
    for t in &convo.turns {
        match t {
            Turn::User { text, jpeg } => messages.push(user(text, jpeg.as_deref(), flavour)),
            Turn::Model { text, calls } => {
                let mut m = json!({"role": "assistant"});
                m["content"] = if text.is_empty() {
                    Value::Null
                } else {
                    Value::from(text.as_str())
                };
                if !calls.is_empty() {
                    m["tool_calls"] = calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {
                            "name": c.name,
                            "arguments": match &c.args {
                                Value::String(s) => s.clone(),
                                v => v.to_string(),
                            }}})
                        })
                        .collect();
                }
                messages.push(m);
            }
            Turn::Answers {
                answers,
                text,
                jpeg,
            } => {
                // Text only in a tool message (a plain string: Ollama loses the id of an array).
                for a in answers {
                    messages
                        .push(json!({"role": "tool", "tool_call_id": a.id, "content": a.content}));
                }
                if !text.is_empty() || (jpeg.is_some() && flavour.pictures) {
                    messages.push(user(text, jpeg.as_deref(), flavour));
                }
            }
        }
    }
    let tools: Vec<Value> = tools["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["parameters"]}})
        })
        .collect();
    let mut body = json!({
        "model": model,
        "messages": messages,
        "tools": tools,
    });
    let key = if flavour.completion_tokens_key {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[key] = Value::from(max_tokens);
    if stream {
        body["stream"] = Value::Bool(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn user(text: &str, jpeg: Option<&[u8]>, flavour: &Flavour) -> Value {
    match jpeg.filter(|_| flavour.pictures) {
        None => json!({"role": "user", "content": text}),
        Some(j) => {
            let url = format!(
                "data:image/jpeg;base64,{}",
                base64::engine::general_purpose::STANDARD.encode(j)
            );
            json!({"role": "user", "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": url, "detail": "high"}}
            ]})
        }
    }
}

/// The error a body carries (`{"error": {"message", …}}`), if any.
pub fn error_of(body: &Value) -> Option<String> {
    let e = body.get("error")?;
    Some(match e {
        Value::String(s) => s.clone(),
        e => e["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| e.to_string()),
    })
}

/// A whole (not streamed) reply.
pub fn reply(body: &Value, tools: &[&str]) -> Result<Reply, ReadError> {
    if let Some(e) = error_of(body) {
        return Err(ReadError::Server(e));
    }
    let choice = body["choices"]
        .get(0)
        .ok_or_else(|| ReadError::Shape("no choices".into()))?;
    let m = &choice["message"];
    let text = m["content"].as_str().unwrap_or_default().to_string();
    let mut calls = Vec::new();
    for (n, c) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
        calls.push(Call {
            id: id_of(&c["id"], n),
            name: c["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            args: args_of(&c["function"]["arguments"]),
            signature: None,
        });
    }
    let mut r = Reply {
        text,
        calls,
        usage: usage_of(&body["usage"]),
        stop: choice["finish_reason"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    calls_in_text(&mut r, tools);
    Ok(r)
}

/// An id as sent, or `call_<n>` when it is missing or empty (an integer id as its digits).
fn id_of(v: &Value, n: usize) -> String {
    match v {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(x) => format!("call_{x}"),
        _ => format!("call_{n}"),
    }
}

/// Arguments as a JSON string (the API) or an object (some servers): the object when the
/// string parses, else the string as it came (the desk reads it as a bad call).
fn args_of(v: &Value) -> Value {
    match v {
        Value::String(s) if s.trim().is_empty() => Value::Object(Map::new()),
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        Value::Null => Value::Object(Map::new()),
        other => other.clone(),
    }
}

fn usage_of(u: &Value) -> Usage {
    Usage {
        input: u["prompt_tokens"].as_u64().unwrap_or(0),
        output: u["completion_tokens"].as_u64().unwrap_or(0),
    }
}

/// A server whose template writes tool calls as text (`<tool_call>{…}</tool_call>`, or the
/// bare JSON of one) with no `tool_calls`: the call read from the text, when its name is one
/// of the tools offered.
pub fn calls_in_text(r: &mut Reply, tools: &[&str]) {
    if !r.calls.is_empty() {
        return;
    }
    let t = r.text.trim();
    let inner = match (t.find("<tool_call>"), t.rfind("</tool_call>")) {
        (Some(a), Some(b)) if b > a => &t[a + "<tool_call>".len()..b],
        _ => t
            .trim_start_matches("```json")
            .trim_start_matches("```")
            .trim_end_matches("```"),
    };
    let Ok(v) = serde_json::from_str::<Value>(inner.trim()) else {
        return;
    };
    let name = v["name"].as_str().unwrap_or_default();
    if !tools.contains(&name) {
        return;
    }
    let args = v
        .get("arguments")
        .or_else(|| v.get("parameters"))
        .map(args_of)
        .unwrap_or_else(|| Value::Object(Map::new()));
    r.calls.push(Call {
        id: "call_0".into(),
        name: name.to_string(),
        args,
        signature: None,
    });
    r.text.clear();
}

/// A streamed reply put together chunk by chunk (`data: {chat.completion.chunk}` lines).
#[derive(Debug, Default)]
pub struct Stream {
    text: String,
    /// (index, id, name, arguments so far, an object sent whole).
    calls: Vec<(u64, String, String, String, Option<Value>)>,
    usage: Usage,
    stop: String,
    done: bool,
}

impl Stream {
    /// One `data:` payload; the words it adds (for narration). `[DONE]` ends the stream.
    pub fn feed(&mut self, data: &str) -> Result<String, ReadError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(String::new());
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ReadError::Shape(format!("a stream chunk is not JSON: {e}")))?;
        if let Some(e) = error_of(&v) {
            return Err(ReadError::Server(e));
        }
        if v["usage"].is_object() {
            self.usage = usage_of(&v["usage"]);
        }
        let mut said = String::new();
        for c in v["choices"].as_array().into_iter().flatten() {
            let d = &c["delta"];
            if let Some(t) = d["content"].as_str() {
                self.text.push_str(t);
                said.push_str(t);
            }
            for tc in d["tool_calls"].as_array().into_iter().flatten() {
                self.call_piece(tc);
            }
            if let Some(f) = c["finish_reason"].as_str() {
                self.stop = f.to_string();
            }
        }
        Ok(said)
    }

    fn call_piece(&mut self, tc: &Value) {
        let index = tc["index"].as_u64().unwrap_or(0);
        let id = match &tc["id"] {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(format!("call_{n}")),
            _ => None,
        };
        let f = &tc["function"];
        // A new id at an index already seen is a new call (servers that send every call at
        // index 0).
        let at = self.calls.iter().rposition(|c| c.0 == index);
        let i = match (at, &id) {
            (Some(i), Some(id)) if self.calls[i].1.is_empty() || self.calls[i].1 == *id => i,
            (Some(i), None) => i,
            _ => {
                self.calls
                    .push((index, String::new(), String::new(), String::new(), None));
                self.calls.len() - 1
            }
        };
        let c = &mut self.calls[i];
        if let Some(id) = id {
            if c.1.is_empty() {
                c.1 = id;
            }
        }
        // The name is assigned, never appended (some servers resend it whole every chunk).
        if let Some(n) = f["name"].as_str().filter(|n| !n.is_empty()) {
            c.2 = n.to_string();
        }
        match &f["arguments"] {
            Value::String(s) => c.3.push_str(s),
            Value::Null => {}
            v => c.4 = Some(v.clone()),
        }
    }

    /// Did the server say the stream is over?
    pub fn done(&self) -> bool {
        self.done
    }

    /// The reply, once the stream is over (or broke off: what came so far).
    pub fn reply(self, tools: &[&str]) -> Reply {
        let calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(n, (_, id, name, args, whole))| Call {
                id: if id.is_empty() {
                    format!("call_{n}")
                } else {
                    id
                },
                name,
                args: whole.unwrap_or_else(|| args_of(&Value::String(args))),
                signature: None,
            })
            .collect();
        let mut r = Reply {
            text: self.text,
            calls,
            usage: self.usage,
            stop: self.stop,
        };
        calls_in_text(&mut r, tools);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convo::Answer;

    const TOOLS: &[&str] = &["observe", "act", "done"];

    fn flavour() -> Flavour {
        Flavour {
            completion_tokens_key: false,
            pictures: true,
        }
    }

    #[test]
    fn a_conversation_becomes_messages_with_tool_answers_before_the_next_screen() {
        let mut c = Conversation::new("sys");
        c.turns = vec![
            Turn::User {
                text: "Task: x".into(),
                jpeg: Some(vec![0xff, 0xd8]),
            },
            Turn::Model {
                text: String::new(),
                calls: vec![Call {
                    id: "call_1".into(),
                    name: "act".into(),
                    args: json!({"observation_id": "o1", "actions": []}),
                    signature: None,
                }],
            },
            Turn::Answers {
                answers: vec![Answer {
                    id: "call_1".into(),
                    name: "act".into(),
                    content: "{\"ok\":true}".into(),
                    error: false,
                }],
                text: "The screen now".into(),
                jpeg: Some(vec![1]),
            },
        ];
        let tools = json!({"tools": [{"name": "observe", "description": "d", "parameters": {"type": "object", "properties": {}}}]});
        let b = request("m", &c, &tools, &flavour(), 512, false);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 5);
        assert_eq!(m[0]["role"], "system");
        assert_eq!(
            m[1]["content"][1]["image_url"]["url"],
            "data:image/jpeg;base64,/9g="
        );
        assert_eq!(m[2]["content"], Value::Null);
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            "{\"observation_id\":\"o1\",\"actions\":[]}"
        );
        assert_eq!(m[3]["role"], "tool");
        assert_eq!(m[3]["tool_call_id"], "call_1");
        assert_eq!(m[4]["role"], "user");
        assert_eq!(b["max_tokens"], 512);
        assert_eq!(b["tools"][0]["type"], "function");
        assert!(b.get("stream").is_none());
        // No pictures where the deployment does not see them: plain text.
        let b = request(
            "m",
            &c,
            &tools,
            &Flavour {
                pictures: false,
                completion_tokens_key: true,
            },
            512,
            true,
        );
        assert_eq!(b["messages"][1]["content"], "Task: x");
        assert_eq!(b["max_completion_tokens"], 512);
        assert_eq!(b["stream_options"]["include_usage"], true);
    }

    #[test]
    fn whole_replies_with_the_servers_quirks() {
        // Arguments as a string, as an object, broken; ids missing.
        let body = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "observe", "arguments": "{}"}},
            {"function": {"name": "act", "arguments": {"observation_id": "o"}}},
            {"id": "", "function": {"name": "done", "arguments": "{\"success\": tr"}}
        ]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 3}});
        let r = reply(&body, TOOLS).unwrap();
        assert_eq!(r.calls.len(), 3);
        assert_eq!(r.calls[0].id, "a");
        assert_eq!(r.calls[1].id, "call_1");
        assert_eq!(r.calls[1].args["observation_id"], "o");
        assert_eq!(r.calls[2].id, "call_2");
        assert!(r.calls[2].args.is_string(), "broken JSON kept as it came");
        assert_eq!(
            r.usage,
            Usage {
                input: 10,
                output: 3
            }
        );
        // An error body, and no choices.
        assert_eq!(
            reply(&json!({"error": {"message": "model not found"}}), TOOLS),
            Err(ReadError::Server("model not found".into()))
        );
        assert!(matches!(reply(&json!({}), TOOLS), Err(ReadError::Shape(_))));
    }

    #[test]
    fn a_call_written_as_text_is_read_when_it_names_a_tool() {
        for text in [
            "<tool_call>{\"name\": \"observe\", \"arguments\": {}}</tool_call>",
            "{\"name\": \"done\", \"arguments\": {\"success\": true, \"summary\": \"ok\"}}",
            "```json\n{\"name\": \"observe\", \"parameters\": {}}\n```",
        ] {
            let body =
                json!({"choices": [{"message": {"content": text}, "finish_reason": "stop"}]});
            let r = reply(&body, TOOLS).unwrap();
            assert_eq!(r.calls.len(), 1, "{text}");
            assert!(r.text.is_empty());
        }
        for text in [
            "{\"name\": \"rm\", \"arguments\": {}}",
            "I clicked it.",
            "{",
        ] {
            let body = json!({"choices": [{"message": {"content": text}}]});
            let r = reply(&body, TOOLS).unwrap();
            assert!(r.calls.is_empty(), "{text}");
            assert_eq!(r.text, text);
        }
    }

    #[test]
    fn a_stream_is_put_together_from_its_pieces() {
        let mut s = Stream::default();
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Clicking "}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"seven."}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"act","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"observation_id\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"act","arguments":"\"o1\"}"}}]}}]}"#,
            // A second call sent at index 0 with a new id.
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_b","function":{"name":"observe","arguments":"{}"}}]}}]}"#,
            // Ollama: a whole call, arguments an object, no id.
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"done","arguments":{"success":true}}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20}}"#,
            "[DONE]",
        ];
        let mut said = String::new();
        for c in chunks {
            said.push_str(&s.feed(c).unwrap());
        }
        assert!(s.done());
        assert_eq!(said, "Clicking seven.");
        let r = s.reply(TOOLS);
        assert_eq!(r.calls.len(), 3, "{r:?}");
        assert_eq!(r.calls[0].name, "act");
        assert_eq!(r.calls[0].args, json!({"observation_id": "o1"}));
        assert_eq!(r.calls[1].id, "call_b");
        assert_eq!(r.calls[2].id, "call_2");
        assert_eq!(r.calls[2].args, json!({"success": true}));
        assert_eq!(r.usage.input, 100);
        assert_eq!(r.stop, "tool_calls");
        // An error mid-stream.
        let mut s = Stream::default();
        assert!(matches!(
            s.feed(r#"{"error":{"message":"overloaded"}}"#),
            Err(ReadError::Server(_))
        ));
        assert!(matches!(s.feed("{"), Err(ReadError::Shape(_))));
    }
}
