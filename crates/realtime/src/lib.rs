//! Realtime models over WebSocket (Gemini Live, OpenAI Realtime): each provider's wire format, pure and apart from the socket and the session that drive the desk.
//!
//! Layers, as the providers' SDKs keep them: transport (frames on a socket) → wire (this
//! module's `gemini` and `openai`: encode strictly, decode leniently into events) → session
//! (`session`: events to the desk and the speaker; `driver`: the model as the agent's driver).
//! `wire` puts both providers behind one trait; `turns` keeps the audio fence and the tool
//! calls' bookkeeping, pure.

pub mod driver;
pub mod endpoint;
pub mod gemini;
pub mod launch;
pub mod openai;
pub mod profile;
pub mod session;
pub mod transport;
pub mod turns;
pub mod wire;

use serde_json::Value;

/// The desk's tools (`prompts/tools.v4.json`, with the rails' batch limit `max_actions`) as
/// (name, description, JSON Schema), for either provider's function declarations.
pub fn desk_functions(max_actions: u32) -> Vec<(String, String, Value)> {
    let v = voxdesk_desk::tool::tools(max_actions);
    v["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
            (s("name"), s("description"), t["parameters"].clone())
        })
        .collect()
}

/// Standard or URL-safe base64, padded or not (servers may use either; both SDKs accept both).
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;
    [STANDARD, URL_SAFE, STANDARD_NO_PAD, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(s).ok())
}

/// Strategies for the decoders' property tests: arbitrary JSON, biased to the keys and the
/// values a server sends, and real frames with any one part replaced.
#[cfg(test)]
pub(crate) mod arb {
    use proptest::prelude::*;
    use serde_json::{Map, Number, Value};

    /// Keys either provider's frames hold, for objects that look nearly right.
    const KEYS: &[&str] = &[
        "type",
        "setupComplete",
        "serverContent",
        "server_content",
        "modelTurn",
        "parts",
        "text",
        "inlineData",
        "mimeType",
        "data",
        "inputTranscription",
        "outputTranscription",
        "interrupted",
        "turnComplete",
        "generationComplete",
        "toolCall",
        "functionCalls",
        "id",
        "name",
        "args",
        "toolCallCancellation",
        "ids",
        "goAway",
        "go_away",
        "timeLeft",
        "time_left",
        "sessionResumptionUpdate",
        "newHandle",
        "resumable",
        "usageMetadata",
        "response",
        "response_id",
        "item_id",
        "delta",
        "call_id",
        "arguments",
        "status",
        "status_details",
        "reason",
        "error",
        "code",
        "message",
        "transcript",
        "audio_start_ms",
        "audio_end_ms",
    ];

    /// Strings a server might send where a value is expected, the hostile ones included.
    const STRINGS: &[&str] = &[
        "",
        "s",
        "1.5s",
        "1e30s",
        "1.5e19s",
        "18446744073709551615s",
        "-1s",
        "-0s",
        "NaNs",
        "infs",
        "-infs",
        "1e-400s",
        "0.000000001s",
        "audio/pcm;rate=24000",
        "audio/pcm;rate=0",
        "audio/pcm;rate=99999999999",
        "audio/pcm;rate=",
        "audio/pcm",
        "AQA=",
        "AQD//w==",
        "@@",
        "A",
        "response.output_audio.delta",
        "response.audio.delta",
        "response.function_call_arguments.done",
        "response.done",
        "response.created",
        "error",
        "session.updated",
        "conversation.item.input_audio_transcription.completed",
        "input_audio_buffer.speech_started",
        "response.output_audio_transcript.delta",
        "K",
        "İ",
    ];

    pub fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => prop::sample::select(KEYS).prop_map(String::from),
            1 => ".{0,6}",
        ]
    }

    pub fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            prop_oneof![
                any::<f64>(),
                Just(1e30),
                Just(1.5e19),
                Just(-0.0),
                Just(f64::MAX)
            ]
            .prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
            prop::sample::select(STRINGS).prop_map(|s| Value::String(s.into())),
            ".{0,12}".prop_map(Value::String),
        ]
    }

    /// Any JSON value, a few levels deep.
    pub fn json() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    /// Every JSON pointer into `v`, the root first.
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        match v {
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    pointers(x, format!("{at}/{i}"), out);
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    pointers(x, format!("{at}/{k}"), out);
                }
            }
            _ => {}
        }
    }

    /// One of `frames` with a few of its parts (any node, the root included) replaced by
    /// arbitrary JSON.
    pub fn mutated(frames: Vec<Value>) -> impl Strategy<Value = Value> {
        (
            prop::sample::select(frames),
            prop::collection::vec((any::<prop::sample::Index>(), json()), 0..3),
        )
            .prop_map(|(mut v, edits)| {
                for (at, new) in edits {
                    let mut all = Vec::new();
                    pointers(&v, String::new(), &mut all);
                    let p = &all[at.index(all.len())];
                    if let Some(slot) = v.pointer_mut(p) {
                        *slot = new;
                    }
                }
                v
            })
    }

    /// The bytes of a frame: a JSON value's text, cut anywhere, or any bytes at all.
    pub fn bytes(v: impl Strategy<Value = Value>) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => v.prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
            1 => (v_text(), any::<prop::sample::Index>()).prop_map(|(t, i)| {
                let b = t.into_bytes();
                let n = i.index(b.len() + 1);
                b[..n].to_vec()
            }),
            1 => prop::collection::vec(any::<u8>(), 0..64),
        ]
    }

    fn v_text() -> impl Strategy<Value = String> {
        json().prop_map(|v| v.to_string())
    }
}
