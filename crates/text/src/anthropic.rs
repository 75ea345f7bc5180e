//! Anthropic's Messages API as pure wire (the seed's `claude` provider): the request body from a conversation and the tools (user and assistant turns alternating, tool results first in the user turn after the call), the reply read back whole or from its stream of typed events.

use base64::Engine;
use serde_json::{json, Map, Value};

use super::convo::{Call, Conversation, ReadError, Reply, Turn, Usage};
use super::openai::{calls_in_text, error_of};

/// The request body (`POST {base}/v1/messages`).
pub fn request(
    model: &str,
    convo: &Conversation,
    tools: &Value,
    pictures: bool,
    max_tokens: u32,
    stream: bool,
) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        // Two turns of one side in a row are one message (the API wants them alternating).
        match messages.last_mut() {
            Some(m) if m["role"] == role => {
                if let Some(c) = m["content"].as_array_mut() {
                    c.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    };
    for t in &convo.turns {
        match t {
            Turn::User { text, jpeg } => push("user", user_blocks(text, jpeg.as_deref(), pictures)),
            Turn::Model { text, calls } => {
                let mut blocks = Vec::new();
                if !text.trim().is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in calls {
                    let input = match &c.args {
                        Value::Object(_) => c.args.clone(),
                        other => json!({"unreadable_arguments": other.to_string()}),
                    };
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                push("assistant", blocks);
            }
            Turn::Answers {
                answers,
                text,
                jpeg,
            } => {
                // The results first, then what goes with them.
                let mut blocks: Vec<Value> = answers
                    .iter()
                    .map(|a| {
                        let mut b = json!({"type": "tool_result", "tool_use_id": a.id, "content": a.content});
                        if a.error {
                            b["is_error"] = Value::Bool(true);
                        }
                        b
                    })
                    .collect();
                blocks.extend(user_blocks(text, jpeg.as_deref(), pictures));
                push("user", blocks);
            }
        }
    }
    let tools: Vec<Value> = tools["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": convo.system,
        "messages": messages,
        "tools": tools,
    });
    if stream {
        body["stream"] = Value::Bool(true);
    }
    body
}

fn user_blocks(text: &str, jpeg: Option<&[u8]>, pictures: bool) -> Vec<Value> {
    let mut out = Vec::new();
    if !text.is_empty() {
        out.push(json!({"type": "text", "text": text}));
    }
    if let Some(j) = jpeg.filter(|_| pictures) {
        out.push(
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
            "data": base64::engine::general_purpose::STANDARD.encode(j)}}),
        );
    }
    out
}

/// A whole (not streamed) reply.
pub fn reply(body: &Value, tools: &[&str]) -> Result<Reply, ReadError> {
    if let Some(e) = error_of(body) {
        return Err(ReadError::Server(e));
    }
    let content = body["content"]
        .as_array()
        .ok_or_else(|| ReadError::Shape("no content".into()))?;
    let mut r = Reply {
        stop: body["stop_reason"].as_str().unwrap_or_default().to_string(),
        usage: usage_of(&body["usage"], Usage::default()),
        ..Reply::default()
    };
    for (n, b) in content.iter().enumerate() {
        match b["type"].as_str() {
            Some("text") => r.text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => r.calls.push(Call {
                id: b["id"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map_or_else(|| format!("toolu_{n}"), str::to_string),
                name: b["name"].as_str().unwrap_or_default().to_string(),
                args: b
                    .get("input")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
                signature: None,
            }),
            _ => {}
        }
    }
    calls_in_text(&mut r, tools);
    Ok(r)
}

fn usage_of(u: &Value, was: Usage) -> Usage {
    Usage {
        input: u["input_tokens"].as_u64().unwrap_or(was.input),
        output: u["output_tokens"].as_u64().unwrap_or(was.output),
    }
}

/// A streamed reply put together from its events (`message_start`, `content_block_*`,
/// `message_delta`, `message_stop`; `ping` ignored, `error` an error).
#[derive(Debug, Default)]
pub struct Stream {
    text: String,
    /// Per block index: (id, name, partial JSON) of a tool call.
    calls: Vec<(u64, String, String, String)>,
    usage: Usage,
    stop: String,
    done: bool,
}

impl Stream {
    /// One `data:` payload; the words it adds.
    pub fn feed(&mut self, data: &str) -> Result<String, ReadError> {
        let v: Value = serde_json::from_str(data.trim())
            .map_err(|e| ReadError::Shape(format!("a stream event is not JSON: {e}")))?;
        let mut said = String::new();
        match v["type"].as_str().unwrap_or_default() {
            "error" => {
                return Err(ReadError::Server(
                    error_of(&v).unwrap_or_else(|| v.to_string()),
                ))
            }
            "message_start" => self.usage = usage_of(&v["message"]["usage"], self.usage),
            "content_block_start" => {
                let b = &v["content_block"];
                let index = v["index"].as_u64().unwrap_or(0);
                match b["type"].as_str() {
                    Some("tool_use") => self.calls.push((
                        index,
                        b["id"].as_str().unwrap_or_default().to_string(),
                        b["name"].as_str().unwrap_or_default().to_string(),
                        String::new(),
                    )),
                    Some("text") => {
                        let t = b["text"].as_str().unwrap_or_default();
                        self.text.push_str(t);
                        said.push_str(t);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = v["index"].as_u64().unwrap_or(0);
                let d = &v["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => {
                        let t = d["text"].as_str().unwrap_or_default();
                        self.text.push_str(t);
                        said.push_str(t);
                    }
                    Some("input_json_delta") => {
                        if let Some(c) = self.calls.iter_mut().rev().find(|c| c.0 == index) {
                            c.3.push_str(d["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(s) = v["delta"]["stop_reason"].as_str() {
                    self.stop = s.to_string();
                }
                self.usage = usage_of(&v["usage"], self.usage);
            }
            "message_stop" => self.done = true,
            _ => {}
        }
        Ok(said)
    }

    pub fn done(&self) -> bool {
        self.done
    }

    pub fn reply(self, tools: &[&str]) -> Reply {
        let calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(n, (_, id, name, json))| Call {
                id: if id.is_empty() {
                    format!("toolu_{n}")
                } else {
                    id
                },
                name,
                // No pieces: the block's initial `{}`.
                args: if json.trim().is_empty() {
                    Value::Object(Map::new())
                } else {
                    serde_json::from_str(&json).unwrap_or(Value::String(json))
                },
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

    #[test]
    fn turns_alternate_and_tool_results_come_first() {
        let mut c = Conversation::new("sys");
        c.turns = vec![
            Turn::User {
                text: "Task: x".into(),
                jpeg: Some(vec![0xff, 0xd8]),
            },
            Turn::Model {
                text: "Looking.".into(),
                calls: vec![Call {
                    id: "toolu_1".into(),
                    name: "act".into(),
                    args: Value::String("{broken".into()),
                    signature: None,
                }],
            },
            Turn::Answers {
                answers: vec![Answer {
                    id: "toolu_1".into(),
                    name: "act".into(),
                    content: "{\"error\":\"bad-call\"}".into(),
                    error: true,
                }],
                text: String::new(),
                jpeg: None,
            },
            Turn::User {
                text: "Answer with one tool call.".into(),
                jpeg: None,
            },
        ];
        let tools = json!({"tools": [{"name": "observe", "description": "d", "parameters": {"type": "object", "properties": {}}}]});
        let b = request("claude-sonnet-4-6", &c, &tools, true, 1024, true);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "the two user turns are one message: {b}");
        assert_eq!(m[0]["content"][1]["source"]["data"], "/9g=");
        assert_eq!(
            m[1]["content"][1]["input"]["unreadable_arguments"],
            "\"{broken\""
        );
        assert_eq!(m[2]["content"][0]["type"], "tool_result");
        assert_eq!(m[2]["content"][0]["is_error"], true);
        assert_eq!(m[2]["content"][1]["type"], "text");
        assert_eq!(b["system"], "sys");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(b["max_tokens"], 1024);
        assert_eq!(b["stream"], true);
        // No pictures: none sent.
        let b = request("m", &c, &tools, false, 1024, false);
        assert_eq!(b["messages"][0]["content"].as_array().unwrap().len(), 1);
        assert!(b.get("stream").is_none());
    }

    #[test]
    fn replies_whole_and_streamed() {
        let body = json!({"content": [
            {"type": "text", "text": "Clicking."},
            {"type": "tool_use", "id": "toolu_a", "name": "observe", "input": {}}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 50, "output_tokens": 9}});
        let r = reply(&body, TOOLS).unwrap();
        assert_eq!(
            (r.text.as_str(), r.calls.len(), r.usage.input),
            ("Clicking.", 1, 50)
        );
        assert_eq!(
            reply(
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                TOOLS
            ),
            Err(ReadError::Server("Overloaded".into()))
        );
        let mut s = Stream::default();
        let events = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 70, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Adding "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "them."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "done", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"success\": tr"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "ue}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_c", "name": "observe", "input": {}}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
            json!({"type": "message_stop"}),
        ];
        let mut said = String::new();
        for e in events {
            said.push_str(&s.feed(&e.to_string()).unwrap());
        }
        assert!(s.done());
        assert_eq!(said, "Adding them.");
        let r = s.reply(TOOLS);
        assert_eq!(r.calls[0].args, json!({"success": true}));
        assert_eq!(r.calls[1].args, json!({}));
        assert_eq!(
            r.usage,
            Usage {
                input: 70,
                output: 30
            }
        );
        assert_eq!(r.stop, "tool_use");
        let mut s = Stream::default();
        assert!(matches!(
            s.feed(&json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string()),
            Err(ReadError::Server(_))
        ));
    }
}
