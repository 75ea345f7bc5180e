//! OpenAI Realtime's wire format (GA shape only): the client events voxdesk sends, and the server events it reads, decoded by their `type` into [`ServerEvent`]s, the beta names too.
//!
//! Pure: no socket here. Encoding is strict (GA names, no `null` where a field should be
//! absent: `null` clears a session field); decoding never fails on an unknown event or field.

use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The documented path and query under an endpoint's base (scheme, host, port).
pub fn path(model: &str) -> String {
    format!("/v1/realtime?model={model}")
}

/// The only PCM rate the GA `audio/pcm` format takes, in and out.
pub const RATE: u32 = 24_000;

/// One function the model may call.
#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// What a session is set up with (`session.update`).
#[derive(Debug, Clone)]
pub struct Session {
    pub model: String,
    pub instruction: String,
    pub voice: Option<String>,
    pub functions: Vec<Function>,
    /// A transcription model for the person's speech (stop words are heard in it).
    pub transcription_model: Option<String>,
}

/// The `session.update` event.
pub fn session_update(s: &Session) -> String {
    let mut output = Map::new();
    output.insert("format".into(), json!({"type": "audio/pcm", "rate": RATE}));
    if let Some(v) = &s.voice {
        output.insert("voice".into(), Value::String(v.clone()));
    }
    let mut input = Map::new();
    input.insert("format".into(), json!({"type": "audio/pcm", "rate": RATE}));
    // The server's own detection; it cancels the response when the person speaks.
    input.insert(
        "turn_detection".into(),
        json!({"type": "semantic_vad", "create_response": true, "interrupt_response": true}),
    );
    if let Some(m) = &s.transcription_model {
        input.insert("transcription".into(), json!({"model": m}));
    }
    let tools: Vec<Value> = s
        .functions
        .iter()
        .map(|f| {
            json!({"type": "function", "name": f.name, "description": f.description,
                "parameters": f.parameters})
        })
        .collect();
    json!({"type": "session.update", "session": {
        "type": "realtime",
        "model": s.model,
        "instructions": s.instruction,
        "output_modalities": ["audio"],
        "audio": {"input": input, "output": output},
        "tools": tools,
        "tool_choice": "auto",
    }})
    .to_string()
}

/// `input_audio_buffer.append` with PCM16 mono at 24 kHz.
pub fn audio_append(pcm: &[i16]) -> String {
    let mut bytes = Vec::with_capacity(pcm.len() * 2);
    for s in pcm {
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    let audio = base64::engine::general_purpose::STANDARD.encode(bytes);
    json!({"type": "input_audio_buffer.append", "audio": audio}).to_string()
}

/// A user message: text, and a JPEG picture with it when one is given.
pub fn user_message(text: &str, jpeg: Option<&[u8]>) -> String {
    let mut content = vec![json!({"type": "input_text", "text": text})];
    if let Some(j) = jpeg {
        let b64 = base64::engine::general_purpose::STANDARD.encode(j);
        content.push(json!({"type": "input_image",
            "image_url": format!("data:image/jpeg;base64,{b64}"), "detail": "auto"}));
    }
    json!({"type": "conversation.item.create",
        "item": {"type": "message", "role": "user", "content": content}})
    .to_string()
}

/// A function call's result (`output` is a string: the tool result's JSON).
pub fn function_output(call_id: &str, output: &Value) -> String {
    json!({"type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": call_id, "output": output.to_string()}})
    .to_string()
}

/// Ask for a response (after tool outputs, or a typed task).
pub fn response_create() -> String {
    json!({"type": "response.create"}).to_string()
}

/// Cancel the response in progress.
pub fn response_cancel() -> String {
    json!({"type": "response.cancel"}).to_string()
}

/// Cut an assistant audio item at what was actually played: whole milliseconds, no more than
/// the item holds. `None` when nothing was played (the server rejects 0; the item is left).
pub fn truncate(item_id: &str, played_ms: f64, item_ms: f64) -> Option<String> {
    let ms = played_ms.min(item_ms).max(0.0).floor() as u64;
    (ms > 0).then(|| {
        json!({"type": "conversation.item.truncate", "item_id": item_id,
            "content_index": 0, "audio_end_ms": ms})
        .to_string()
    })
}

/// What a server event says, for the session to act on.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    SessionCreated,
    SessionUpdated,
    /// The person started speaking (the server's detection).
    SpeechStarted {
        item_id: String,
    },
    SpeechStopped,
    ResponseCreated {
        response_id: String,
    },
    /// The model's speech: PCM16 mono at 24 kHz, for one item of one response.
    Audio {
        response_id: String,
        item_id: String,
        pcm: Vec<i16>,
    },
    OutputTranscript {
        item_id: String,
        delta: String,
    },
    InputTranscript(String),
    /// A function call whose arguments are complete (a JSON string, decoded by the desk).
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    ResponseDone {
        response_id: String,
        status: String,
        reason: Option<String>,
    },
    Error {
        code: String,
        message: String,
        /// Known to be harmless (a cancel with nothing to cancel).
        benign: bool,
    },
    /// An event of the reference this client has no use for, by name.
    Ignored(String),
    /// An event type not in the reference (logged, never an error).
    Unknown(String),
}

/// A frame that is not a JSON object with a `type`: dropped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("no event type")]
    NoType,
    #[error("{kind}: {message}")]
    Field { kind: String, message: String },
}

/// Server events of the reference that need no action here.
const IGNORED: &[&str] = &[
    "conversation.created",
    "conversation.item.added",
    "conversation.item.done",
    "conversation.item.created",
    "conversation.item.retrieved",
    "conversation.item.deleted",
    "conversation.item.truncated",
    "conversation.item.input_audio_transcription.delta",
    "conversation.item.input_audio_transcription.failed",
    "conversation.item.input_audio_transcription.segment",
    "input_audio_buffer.committed",
    "input_audio_buffer.cleared",
    "input_audio_buffer.timeout_triggered",
    "output_audio_buffer.started",
    "output_audio_buffer.stopped",
    "output_audio_buffer.cleared",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_audio.done",
    "response.audio.done",
    "response.output_audio_transcript.done",
    "response.audio_transcript.done",
    "response.output_text.delta",
    "response.text.delta",
    "response.output_text.done",
    "response.text.done",
    "response.function_call_arguments.delta",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_call.in_progress",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "mcp_list_tools.in_progress",
    "mcp_list_tools.completed",
    "mcp_list_tools.failed",
    "rate_limits.updated",
];

#[derive(Deserialize)]
struct Audio {
    #[serde(default)]
    response_id: String,
    #[serde(default)]
    item_id: String,
    delta: String,
}

#[derive(Deserialize)]
struct Args {
    call_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: String,
}

/// Decode one server event (Text or Binary frames: UTF-8 JSON).
pub fn decode(frame: &[u8]) -> Result<ServerEvent, DecodeError> {
    let v: Value =
        serde_json::from_slice(frame).map_err(|e| DecodeError::NotJson(e.to_string()))?;
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .ok_or(DecodeError::NoType)?
        .to_string();
    let s = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let field = |e: serde_json::Error| DecodeError::Field {
        kind: kind.clone(),
        message: e.to_string(),
    };
    Ok(match kind.as_str() {
        "session.created" => ServerEvent::SessionCreated,
        "session.updated" => ServerEvent::SessionUpdated,
        "input_audio_buffer.speech_started" => ServerEvent::SpeechStarted {
            item_id: s("item_id"),
        },
        "input_audio_buffer.speech_stopped" => ServerEvent::SpeechStopped,
        "response.created" => ServerEvent::ResponseCreated {
            response_id: v
                .pointer("/response/id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        },
        // (The beta name, which Azure may still send.)
        "response.output_audio.delta" | "response.audio.delta" => {
            let a: Audio = serde_json::from_value(v.clone()).map_err(field)?;
            let bytes = super::decode_base64(&a.delta).ok_or_else(|| DecodeError::Field {
                kind: kind.clone(),
                message: "delta is not base64".into(),
            })?;
            ServerEvent::Audio {
                response_id: a.response_id,
                item_id: a.item_id,
                pcm: bytes
                    .chunks_exact(2)
                    .map(|c| i16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            }
        }
        "response.output_audio_transcript.delta" | "response.audio_transcript.delta" => {
            ServerEvent::OutputTranscript {
                item_id: s("item_id"),
                delta: s("delta"),
            }
        }
        "conversation.item.input_audio_transcription.completed" => {
            ServerEvent::InputTranscript(s("transcript"))
        }
        "response.function_call_arguments.done" => {
            let a: Args = serde_json::from_value(v.clone()).map_err(field)?;
            ServerEvent::FunctionCall {
                call_id: a.call_id,
                name: a.name,
                arguments: a.arguments,
            }
        }
        "response.done" => {
            let r = v.get("response").cloned().unwrap_or(Value::Null);
            ServerEvent::ResponseDone {
                response_id: r.get("id").and_then(Value::as_str).unwrap_or("").into(),
                status: r.get("status").and_then(Value::as_str).unwrap_or("").into(),
                reason: r
                    .pointer("/status_details/reason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }
        }
        "error" => {
            let e = v.get("error").cloned().unwrap_or(Value::Null);
            let code = e
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            ServerEvent::Error {
                benign: matches!(
                    code.as_str(),
                    "response_cancel_not_active" | "conversation_already_has_active_response"
                ),
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                code,
            }
        }
        k if IGNORED.contains(&k) => ServerEvent::Ignored(kind),
        _ => ServerEvent::Unknown(kind),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_the_ga_shape_with_nothing_null() {
        let s = Session {
            model: "gpt-realtime".into(),
            instruction: "Drive the desk.".into(),
            voice: Some("marin".into()),
            functions: vec![Function {
                name: "observe".into(),
                description: "Look".into(),
                parameters: json!({"type": "object", "properties": {}}),
            }],
            transcription_model: Some("gpt-4o-transcribe".into()),
        };
        let frame = session_update(&s);
        assert!(!frame.contains("null"), "{frame}");
        let v: Value = serde_json::from_str(&frame).unwrap();
        assert_eq!(v["session"]["type"], "realtime");
        assert_eq!(v["session"]["audio"]["input"]["format"]["rate"], 24_000);
        assert_eq!(v["session"]["audio"]["output"]["voice"], "marin");
        assert_eq!(v["session"]["tools"][0]["type"], "function");
        assert!(v["session"].get("modalities").is_none());
        assert_eq!(path("gpt-realtime"), "/v1/realtime?model=gpt-realtime");
    }

    #[test]
    fn truncation_is_whole_milliseconds_capped_at_the_item() {
        let ms = |f: Option<String>| {
            f.map(|f| serde_json::from_str::<Value>(&f).unwrap()["audio_end_ms"].clone())
        };
        assert_eq!(ms(truncate("i", 1500.7, 9000.0)), Some(json!(1500)));
        assert_eq!(ms(truncate("i", 57_340.0, 9_250.0)), Some(json!(9250)));
        assert_eq!(truncate("i", 0.4, 9_250.0), None);
        let v: Value =
            serde_json::from_str(&function_output("call_1", &json!({"ok": true}))).unwrap();
        assert_eq!(v["item"]["output"], "{\"ok\":true}");
        let v: Value = serde_json::from_str(&user_message("look", Some(&[0xff, 0xd8]))).unwrap();
        assert_eq!(
            v["item"]["content"][1]["image_url"],
            "data:image/jpeg;base64,/9g="
        );
    }

    #[test]
    fn server_events_decode_by_type() {
        let cases = vec![
            (
                json!({"type": "session.created", "session": {}}),
                ServerEvent::SessionCreated,
            ),
            (
                json!({"type": "input_audio_buffer.speech_started", "audio_start_ms": 10, "item_id": "u1"}),
                ServerEvent::SpeechStarted {
                    item_id: "u1".into(),
                },
            ),
            (
                json!({"type": "response.output_audio.delta", "response_id": "r1", "item_id": "a1",
                    "output_index": 0, "content_index": 0, "delta": "AQD//w=="}),
                ServerEvent::Audio {
                    response_id: "r1".into(),
                    item_id: "a1".into(),
                    pcm: vec![1, -1],
                },
            ),
            (
                json!({"type": "response.audio.delta", "response_id": "r1", "item_id": "a1", "delta": "AQA="}),
                ServerEvent::Audio {
                    response_id: "r1".into(),
                    item_id: "a1".into(),
                    pcm: vec![1],
                },
            ),
            (
                json!({"type": "response.function_call_arguments.done", "call_id": "c1",
                    "name": "act", "arguments": "{\"actions\":[]}"}),
                ServerEvent::FunctionCall {
                    call_id: "c1".into(),
                    name: "act".into(),
                    arguments: "{\"actions\":[]}".into(),
                },
            ),
            (
                json!({"type": "response.done", "response": {"id": "r1", "status": "cancelled",
                    "status_details": {"reason": "turn_detected"}}}),
                ServerEvent::ResponseDone {
                    response_id: "r1".into(),
                    status: "cancelled".into(),
                    reason: Some("turn_detected".into()),
                },
            ),
            (
                json!({"type": "error", "error": {"code": "response_cancel_not_active", "message": "x"}}),
                ServerEvent::Error {
                    code: "response_cancel_not_active".into(),
                    message: "x".into(),
                    benign: true,
                },
            ),
            (
                json!({"type": "rate_limits.updated", "rate_limits": []}),
                ServerEvent::Ignored("rate_limits.updated".into()),
            ),
            (
                json!({"type": "response.future_thing"}),
                ServerEvent::Unknown("response.future_thing".into()),
            ),
        ];
        for (msg, want) in cases {
            assert_eq!(
                decode(&serde_json::to_vec(&msg).unwrap()).unwrap(),
                want,
                "{msg}"
            );
        }
    }

    #[test]
    fn malformed_events_are_errors_not_panics() {
        assert!(matches!(decode(b"nope"), Err(DecodeError::NotJson(_))));
        assert_eq!(decode(br#"{"no":"type"}"#), Err(DecodeError::NoType));
        assert!(matches!(
            decode(br#"{"type":"response.output_audio.delta","delta":"@@"}"#),
            Err(DecodeError::Field { .. })
        ));
        assert!(matches!(
            decode(br#"{"type":"response.function_call_arguments.done"}"#),
            Err(DecodeError::Field { .. })
        ));
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use crate::arb;
    use proptest::prelude::*;

    /// Events of every kind this decoder reads, as the server sends them.
    fn real_events() -> Vec<Value> {
        vec![
            json!({"type": "session.updated", "session": {}}),
            json!({"type": "input_audio_buffer.speech_started", "audio_start_ms": 10, "item_id": "u1"}),
            json!({"type": "response.created", "response": {"id": "r1"}}),
            json!({"type": "response.output_audio.delta", "response_id": "r1", "item_id": "a1",
                "output_index": 0, "content_index": 0, "delta": "AQD//w=="}),
            json!({"type": "response.audio.delta", "response_id": "r1", "item_id": "a1", "delta": "AQA="}),
            json!({"type": "response.output_audio_transcript.delta", "item_id": "a1", "delta": "Op"}),
            json!({"type": "conversation.item.input_audio_transcription.completed", "transcript": "stop"}),
            json!({"type": "response.function_call_arguments.done", "call_id": "c1",
                "name": "act", "arguments": "{\"actions\":[]}"}),
            json!({"type": "response.done", "response": {"id": "r1", "status": "cancelled",
                "status_details": {"reason": "turn_detected"}}}),
            json!({"type": "error", "error": {"code": "response_cancel_not_active", "message": "x"}}),
            json!({"type": "rate_limits.updated", "rate_limits": []}),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_frame_is_an_event_or_an_error_never_a_panic(frame in arb::bytes(arb::json())) {
            let _ = decode(&frame);
        }

        #[test]
        fn a_real_event_with_any_part_replaced_is_never_a_panic(
            frame in arb::bytes(arb::mutated(real_events()))
        ) {
            if let Ok(ServerEvent::Audio { pcm, .. }) = decode(&frame) {
                prop_assert!(pcm.len() < frame.len());
            }
        }

        #[test]
        fn truncation_is_whole_milliseconds_whatever_the_numbers(
            played in prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), Just(1e30)],
            len in prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), Just(-1.0)],
        ) {
            if let Some(f) = truncate("i", played, len) {
                let v: Value = serde_json::from_str(&f).unwrap();
                prop_assert!(v["audio_end_ms"].as_u64().is_some_and(|ms| ms > 0));
            }
        }
    }
}
