//! Gemini's `generateContent` as pure wire (beside the Live provider): the request body from a conversation and the tools (function declarations with plain JSON Schema), the reply read back whole or from its stream, each call's thought signature carried back in exactly the part it came in.

use base64::Engine;
use serde_json::{json, Map, Value};

use super::convo::{Call, Conversation, ReadError, Reply, Turn, Usage};
use super::openai::calls_in_text;

/// The request body (`POST {base}/{version}/models/{model}:generateContent`, or
/// `:streamGenerateContent?alt=sse`).
pub fn request(convo: &Conversation, tools: &Value, pictures: bool, max_tokens: u32) -> Value {
    let mut contents: Vec<Value> = Vec::new();
    let mut push = |role: &str, parts: Vec<Value>| {
        if parts.is_empty() {
            return;
        }
        match contents.last_mut() {
            Some(c) if c["role"] == role => {
                if let Some(p) = c["parts"].as_array_mut() {
                    p.extend(parts);
                }
            }
            _ => contents.push(json!({"role": role, "parts": parts})),
        }
    };
    for t in &convo.turns {
        match t {
            Turn::User { text, jpeg } => push("user", user_parts(text, jpeg.as_deref(), pictures)),
            Turn::Model { text, calls } => {
                let mut parts = Vec::new();
                if !text.trim().is_empty() {
                    parts.push(json!({"text": text}));
                }
                for c in calls {
                    let args = match &c.args {
                        Value::Object(_) => c.args.clone(),
                        other => json!({"unreadable_arguments": other.to_string()}),
                    };
                    let mut call = json!({"name": c.name, "args": args});
                    if !c.id.starts_with("gemini_") {
                        call["id"] = Value::from(c.id.as_str());
                    }
                    let mut part = json!({"functionCall": call});
                    if let Some(sig) = &c.signature {
                        part["thoughtSignature"] = Value::from(sig.as_str());
                    }
                    parts.push(part);
                }
                push("model", parts);
            }
            Turn::Answers {
                answers,
                text,
                jpeg,
            } => {
                let mut parts: Vec<Value> = answers
                    .iter()
                    .map(|a| {
                        let v: Value = serde_json::from_str(&a.content)
                            .unwrap_or_else(|_| Value::from(a.content.as_str()));
                        let key = if a.error { "error" } else { "output" };
                        let mut r = json!({"name": a.name, "response": {key: v}});
                        if !a.id.starts_with("gemini_") {
                            r["id"] = Value::from(a.id.as_str());
                        }
                        json!({"functionResponse": r})
                    })
                    .collect();
                parts.extend(user_parts(text, jpeg.as_deref(), pictures));
                push("user", parts);
            }
        }
    }
    let decls: Vec<Value> = tools["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| json!({"name": t["name"], "description": t["description"], "parametersJsonSchema": t["parameters"]}))
        .collect();
    json!({
        "systemInstruction": {"parts": [{"text": convo.system}]},
        "contents": contents,
        "tools": [{"functionDeclarations": decls}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"maxOutputTokens": max_tokens},
    })
}

fn user_parts(text: &str, jpeg: Option<&[u8]>, pictures: bool) -> Vec<Value> {
    let mut out = Vec::new();
    if !text.is_empty() {
        out.push(json!({"text": text}));
    }
    if let Some(j) = jpeg.filter(|_| pictures) {
        out.push(json!({"inlineData": {"mimeType": "image/jpeg",
            "data": base64::engine::general_purpose::STANDARD.encode(j)}}));
    }
    out
}

/// The error a body carries (`{"error": …}`, also wrapped in an array).
pub fn error_of(body: &Value) -> Option<String> {
    let e = body.get("error").or_else(|| body.get(0)?.get("error"))?;
    Some(
        e["message"]
            .as_str()
            .map_or_else(|| e.to_string(), str::to_string),
    )
}

/// Fold one response (whole, or one streamed piece) into `r`; the words it adds.
fn fold(r: &mut Reply, v: &Value, n: &mut usize) -> Result<String, ReadError> {
    if let Some(e) = error_of(v) {
        return Err(ReadError::Server(e));
    }
    let mut said = String::new();
    let c = &v["candidates"][0];
    for p in c["content"]["parts"].as_array().into_iter().flatten() {
        if p["thought"] == true {
            continue;
        }
        if let Some(t) = p["text"].as_str() {
            r.text.push_str(t);
            said.push_str(t);
        }
        if let Some(f) = p.get("functionCall") {
            *n += 1;
            r.calls.push(Call {
                id: f["id"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map_or_else(|| format!("gemini_{n}"), str::to_string),
                name: f["name"].as_str().unwrap_or_default().to_string(),
                args: f
                    .get("args")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
                signature: p["thoughtSignature"].as_str().map(str::to_string),
            });
        }
    }
    if let Some(f) = c["finishReason"].as_str() {
        r.stop = f.to_string();
    }
    let u = &v["usageMetadata"];
    if u.is_object() {
        r.usage = Usage {
            input: u["promptTokenCount"].as_u64().unwrap_or(r.usage.input),
            output: u["candidatesTokenCount"].as_u64().unwrap_or(r.usage.output),
        };
    }
    Ok(said)
}

/// A whole (not streamed) reply.
pub fn reply(body: &Value, tools: &[&str]) -> Result<Reply, ReadError> {
    let mut r = Reply::default();
    fold(&mut r, body, &mut 0)?;
    if body["candidates"].get(0).is_none() {
        return Err(ReadError::Shape("no candidates".into()));
    }
    calls_in_text(&mut r, tools);
    Ok(r)
}

/// A streamed reply: each `data:` is a whole response piece; the stream is over once one
/// names why it finished (Gemini sends no `[DONE]`).
#[derive(Debug, Default)]
pub struct Stream {
    r: Reply,
    n: usize,
}

impl Stream {
    pub fn feed(&mut self, data: &str) -> Result<String, ReadError> {
        let v: Value = serde_json::from_str(data.trim())
            .map_err(|e| ReadError::Shape(format!("a stream piece is not JSON: {e}")))?;
        fold(&mut self.r, &v, &mut self.n)
    }
    pub fn done(&self) -> bool {
        !self.r.stop.is_empty()
    }
    pub fn reply(self, tools: &[&str]) -> Reply {
        let mut r = self.r;
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
    fn calls_and_their_signatures_go_back_as_they_came() {
        let mut s = Stream::default();
        let pieces = [
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Adding.", "thought": true}, {"text": "Adding "}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "them."}, {"functionCall": {"name": "act", "args": {"observation_id": "o"}}, "thoughtSignature": "c2ln"}, {"functionCall": {"id": "f2", "name": "observe", "args": {}}}]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 90, "candidatesTokenCount": 12}}),
        ];
        let mut said = String::new();
        for p in pieces {
            said.push_str(&s.feed(&p.to_string()).unwrap());
        }
        assert!(s.done());
        assert_eq!(said, "Adding them.");
        let r = s.reply(TOOLS);
        assert_eq!(r.calls.len(), 2);
        assert_eq!(r.calls[0].id, "gemini_1");
        assert_eq!(r.calls[0].signature.as_deref(), Some("c2ln"));
        assert_eq!(
            r.usage,
            Usage {
                input: 90,
                output: 12
            }
        );
        let mut c = Conversation::new("sys");
        c.turns = vec![
            Turn::User {
                text: "Task".into(),
                jpeg: Some(vec![0xff, 0xd8]),
            },
            Turn::Model {
                text: r.text.clone(),
                calls: r.calls.clone(),
            },
            Turn::Answers {
                answers: vec![
                    Answer {
                        id: "gemini_1".into(),
                        name: "act".into(),
                        content: "{\"status\":\"ran\"}".into(),
                        error: false,
                    },
                    Answer {
                        id: "f2".into(),
                        name: "observe".into(),
                        content: "{\"error\":\"not-run\"}".into(),
                        error: true,
                    },
                ],
                text: String::new(),
                jpeg: None,
            },
        ];
        let tools = json!({"tools": [{"name": "observe", "description": "d", "parameters": {"type": "object", "properties": {}}}]});
        let b = request(&c, &tools, true, 512);
        let model = &b["contents"][1]["parts"];
        assert_eq!(model[1]["thoughtSignature"], "c2ln");
        assert!(
            model[1]["functionCall"].get("id").is_none(),
            "a made-up id is not sent"
        );
        assert_eq!(model[2]["functionCall"]["id"], "f2");
        let answers = &b["contents"][2]["parts"];
        assert_eq!(
            answers[0]["functionResponse"]["response"]["output"]["status"],
            "ran"
        );
        assert_eq!(
            answers[1]["functionResponse"]["response"]["error"]["error"],
            "not-run"
        );
        assert_eq!(
            b["contents"][0]["parts"][1]["inlineData"]["mimeType"],
            "image/jpeg"
        );
        assert_eq!(
            b["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["type"],
            "object"
        );
        assert_eq!(b["generationConfig"]["maxOutputTokens"], 512);
        // Errors, plain and wrapped in an array.
        assert_eq!(
            reply(
                &json!([{"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}]),
                TOOLS
            ),
            Err(ReadError::Server("quota".into()))
        );
        assert!(matches!(reply(&json!({}), TOOLS), Err(ReadError::Shape(_))));
    }
}
