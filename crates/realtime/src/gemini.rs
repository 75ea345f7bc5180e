//! Gemini Live's wire format (BidiGenerateContent): the client frames voxdesk sends, in the documented camelCase, and the server messages it reads, decoded leniently into [`ServerEvent`]s.
//!
//! Pure: no socket here. Encoding is strict (no `null` where a field should be absent, one
//! top-level key per frame); decoding never fails on an unknown key or a snake_case alias, and
//! names what it did not understand.

use std::time::Duration;

use base64::Engine;

use super::decode_base64;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The documented path under an endpoint's base (scheme, host, port) for an API version.
pub fn path(version: &str) -> String {
    format!("/ws/google.ai.generativelanguage.{version}.GenerativeService.BidiGenerateContent")
}

/// Rate of the PCM16 mono audio Gemini Live takes in.
pub const INPUT_RATE: u32 = 16_000;

/// One function the model may call.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDeclaration {
    pub name: String,
    pub description: String,
    /// Plain JSON Schema (not the OpenAPI subset `parameters` takes).
    pub parameters_json_schema: Value,
    /// `BLOCKING` or `NON_BLOCKING`; absent means the model's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behavior: Option<&'static str>,
}

/// What a session is set up with: the first frame on the socket.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Without the `models/` prefix, which is added here.
    pub model: String,
    pub voice: Option<String>,
    pub language: Option<String>,
    pub instruction: String,
    pub functions: Vec<FunctionDeclaration>,
    /// The last resumable handle, to resume a session; `None` for a new one.
    pub resume: Option<String>,
    /// Context window compression: compress when the context reaches this many tokens.
    pub compress_at_tokens: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SetupFrame<'a> {
    setup: SetupBody<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SetupBody<'a> {
    model: String,
    generation_config: Value,
    system_instruction: Value,
    tools: [Tools<'a>; 1],
    realtime_input_config: Value,
    input_audio_transcription: Map<String, Value>,
    output_audio_transcription: Map<String, Value>,
    /// `{}` for a new resumable session, `{"handle": …}` to resume one.
    session_resumption: Map<String, Value>,
    context_window_compression: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: &'a [FunctionDeclaration],
}

/// The `setup` frame.
pub fn setup_frame(s: &Setup) -> String {
    let mut speech = Map::new();
    if let Some(v) = &s.voice {
        speech.insert(
            "voiceConfig".into(),
            serde_json::json!({"prebuiltVoiceConfig": {"voiceName": v}}),
        );
    }
    if let Some(l) = &s.language {
        speech.insert("languageCode".into(), Value::String(l.clone()));
    }
    let mut generation = Map::new();
    generation.insert("responseModalities".into(), serde_json::json!(["AUDIO"]));
    if !speech.is_empty() {
        generation.insert("speechConfig".into(), Value::Object(speech));
    }
    let mut resumption = Map::new();
    if let Some(h) = &s.resume {
        resumption.insert("handle".into(), Value::String(h.clone()));
    }
    let model = if s.model.starts_with("models/") {
        s.model.clone()
    } else {
        format!("models/{}", s.model)
    };
    let frame = SetupFrame {
        setup: SetupBody {
            model,
            generation_config: Value::Object(generation),
            system_instruction: serde_json::json!({"parts": [{"text": s.instruction}]}),
            tools: [Tools {
                function_declarations: &s.functions,
            }],
            // Barge-in on: the server's own activity detection interrupts the model's turn.
            realtime_input_config: serde_json::json!({
                "automaticActivityDetection": {"disabled": false},
                "activityHandling": "START_OF_ACTIVITY_INTERRUPTS",
            }),
            input_audio_transcription: Map::new(),
            output_audio_transcription: Map::new(),
            session_resumption: resumption,
            context_window_compression: serde_json::json!({
                "triggerTokens": s.compress_at_tokens,
                "slidingWindow": {"targetTokens": s.compress_at_tokens / 2},
            }),
        },
    };
    serde_json::to_string(&frame).expect("setup frames are plain JSON")
}

/// A `realtimeInput` frame of PCM16 mono audio at `rate`.
pub fn audio_frame(pcm: &[i16], rate: u32) -> String {
    let mut bytes = Vec::with_capacity(pcm.len() * 2);
    for s in pcm {
        bytes.extend_from_slice(&s.to_le_bytes());
    }
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    serde_json::json!({"realtimeInput": {"audio": {
        "data": data, "mimeType": format!("audio/pcm;rate={rate}")}}})
    .to_string()
}

/// A `realtimeInput` video frame: one JPEG of the screen, sent with an observation only (never
/// as a stream: every frame is billed, and audio+video sessions without compression end early).
pub fn video_frame(jpeg: &[u8]) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(jpeg);
    serde_json::json!({"realtimeInput": {"video": {"data": data, "mimeType": "image/jpeg"}}})
        .to_string()
}

/// A `realtimeInput` frame telling the server the microphone paused (automatic activity
/// detection flushes what it holds).
pub fn audio_stream_end_frame() -> String {
    serde_json::json!({"realtimeInput": {"audioStreamEnd": true}}).to_string()
}

/// A typed user turn (a task given as text): appended to the history, and it interrupts any
/// current generation.
pub fn text_turn_frame(text: &str) -> String {
    serde_json::json!({"clientContent": {
        "turns": [{"role": "user", "parts": [{"text": text}]}],
        "turnComplete": true}})
    .to_string()
}

/// A user turn with a picture (JPEG) and its text, sent with an observation only.
pub fn picture_turn_frame(text: &str, jpeg: &[u8]) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(jpeg);
    serde_json::json!({"clientContent": {
        "turns": [{"role": "user", "parts": [
            {"text": text},
            {"inlineData": {"mimeType": "image/jpeg", "data": data}}]}],
        "turnComplete": true}})
    .to_string()
}

/// One answer to a function call: `response` must be a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionResponse {
    pub id: String,
    pub name: String,
    pub response: Map<String, Value>,
}

/// A `toolResponse` frame.
pub fn tool_response_frame(responses: &[FunctionResponse]) -> String {
    let list: Vec<Value> = responses
        .iter()
        .map(|r| serde_json::json!({"id": r.id, "name": r.name, "response": r.response}))
        .collect();
    serde_json::json!({"toolResponse": {"functionResponses": list}}).to_string()
}

/// A function call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCall {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// What one server message said, in the order to act on it.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    SetupComplete,
    /// The model's speech: PCM16 mono at `rate`.
    Audio {
        rate: u32,
        pcm: Vec<i16>,
    },
    Text(String),
    InputTranscript(String),
    OutputTranscript(String),
    /// The person spoke over the model: its turn is cut (may come after `TurnComplete`).
    Interrupted,
    GenerationComplete,
    TurnComplete,
    ToolCalls(Vec<FunctionCall>),
    /// Calls the model no longer wants: cancel any not yet dispatched.
    ToolCallCancellation(Vec<String>),
    /// The connection ends soon: reconnect with the last resumable handle.
    GoAway {
        time_left: Option<Duration>,
    },
    /// A handle to resume this session with; `None`: not resumable here (mid tool call).
    Resumption {
        handle: Option<String>,
    },
    /// Keys or parts this client does not act on (logged, never an error).
    Ignored(Vec<String>),
}

/// A message that is not a JSON object: the frame is dropped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON object")]
    NotObject,
    #[error("{key}: {message}")]
    Field { key: &'static str, message: String },
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Content {
    #[serde(alias = "model_turn")]
    model_turn: Option<Turn>,
    #[serde(alias = "input_transcription")]
    input_transcription: Option<Transcript>,
    #[serde(alias = "output_transcription")]
    output_transcription: Option<Transcript>,
    #[serde(default)]
    interrupted: bool,
    #[serde(default, alias = "generation_complete")]
    generation_complete: bool,
    #[serde(default, alias = "turn_complete")]
    turn_complete: bool,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize, Default)]
struct Turn {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Part {
    text: Option<String>,
    #[serde(alias = "inline_data")]
    inline_data: Option<Blob>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Blob {
    #[serde(default, alias = "mime_type")]
    mime_type: String,
    #[serde(default)]
    data: String,
}

#[derive(Deserialize)]
struct Transcript {
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCall {
    #[serde(default, alias = "function_calls")]
    function_calls: Vec<Call>,
}

#[derive(Deserialize)]
struct Call {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Value,
}

/// Decode one server frame (Text or Binary: both carry UTF-8 JSON).
pub fn decode(frame: &[u8]) -> Result<Vec<ServerEvent>, DecodeError> {
    let v: Value =
        serde_json::from_slice(frame).map_err(|e| DecodeError::NotJson(e.to_string()))?;
    let Value::Object(obj) = v else {
        return Err(DecodeError::NotObject);
    };
    let mut out = Vec::new();
    let mut ignored = Vec::new();
    for (key, val) in obj {
        match key.as_str() {
            "setupComplete" | "setup_complete" => out.push(ServerEvent::SetupComplete),
            "serverContent" | "server_content" => {
                let c: Content = field("serverContent", val)?;
                content(c, &mut out, &mut ignored);
            }
            "toolCall" | "tool_call" => {
                let t: ToolCall = field("toolCall", val)?;
                let calls = t
                    .function_calls
                    .into_iter()
                    .map(|c| FunctionCall {
                        id: c.id,
                        name: c.name,
                        args: if c.args.is_null() {
                            Value::Object(Map::new())
                        } else {
                            c.args
                        },
                    })
                    .collect();
                out.push(ServerEvent::ToolCalls(calls));
            }
            "toolCallCancellation" | "tool_call_cancellation" => {
                let ids = val
                    .get("ids")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|i| i.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push(ServerEvent::ToolCallCancellation(ids));
            }
            "goAway" | "go_away" => {
                let left = val
                    .get("timeLeft")
                    .or_else(|| val.get("time_left"))
                    .and_then(Value::as_str)
                    .and_then(proto_duration);
                out.push(ServerEvent::GoAway { time_left: left });
            }
            "sessionResumptionUpdate" | "session_resumption_update" => {
                let resumable = val
                    .get("resumable")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let handle = val
                    .get("newHandle")
                    .or_else(|| val.get("new_handle"))
                    .and_then(Value::as_str)
                    .filter(|h| resumable && !h.is_empty())
                    .map(str::to_string);
                out.push(ServerEvent::Resumption { handle });
            }
            // Token counts ride along with other keys; nothing to act on.
            "usageMetadata" | "usage_metadata" => {}
            _ => ignored.push(key),
        }
    }
    if !ignored.is_empty() {
        out.push(ServerEvent::Ignored(ignored));
    }
    Ok(out)
}

fn field<T: serde::de::DeserializeOwned>(key: &'static str, v: Value) -> Result<T, DecodeError> {
    serde_json::from_value(v).map_err(|e| DecodeError::Field {
        key,
        message: e.to_string(),
    })
}

/// A `serverContent`'s events: the model's parts first, transcripts, then `interrupted` (so a
/// flush drops audio that came in the same message), then the turn's end.
fn content(c: Content, out: &mut Vec<ServerEvent>, ignored: &mut Vec<String>) {
    for p in c.model_turn.unwrap_or_default().parts {
        if let Some(t) = p.text {
            out.push(ServerEvent::Text(t));
        }
        if let Some(b) = p.inline_data {
            match (audio_rate(&b.mime_type), decode_base64(&b.data)) {
                (Some(rate), Some(bytes)) => out.push(ServerEvent::Audio {
                    rate,
                    pcm: bytes
                        .chunks_exact(2)
                        .map(|s| i16::from_le_bytes([s[0], s[1]]))
                        .collect(),
                }),
                _ => ignored.push(format!(
                    "serverContent.modelTurn.inlineData {}",
                    b.mime_type
                )),
            }
        }
        ignored.extend(
            p.rest
                .into_iter()
                .map(|(k, _)| k)
                .map(|k| format!("serverContent.modelTurn.{k}")),
        );
    }
    if let Some(t) = c.input_transcription.filter(|t| !t.text.is_empty()) {
        out.push(ServerEvent::InputTranscript(t.text));
    }
    if let Some(t) = c.output_transcription.filter(|t| !t.text.is_empty()) {
        out.push(ServerEvent::OutputTranscript(t.text));
    }
    if c.interrupted {
        out.push(ServerEvent::Interrupted);
    }
    if c.generation_complete {
        out.push(ServerEvent::GenerationComplete);
    }
    if c.turn_complete {
        out.push(ServerEvent::TurnComplete);
    }
    ignored.extend(
        c.rest
            .into_iter()
            .map(|(k, _)| k)
            // Known and of no use here: the server waits for more input.
            .filter(|k| k != "waitingForInput")
            .map(|k| format!("serverContent.{k}")),
    );
}

/// The rate of `audio/pcm;rate=N` (24 kHz when the rate is not given); `None` for other media.
fn audio_rate(mime: &str) -> Option<u32> {
    let mut parts = mime.split(';').map(str::trim);
    let kind = parts.next()?;
    if !kind.eq_ignore_ascii_case("audio/pcm") && !kind.eq_ignore_ascii_case("audio/l16") {
        return None;
    }
    let rate = parts
        .find_map(|p| p.strip_prefix("rate="))
        .map_or(Some(24_000), |r| r.parse().ok())?;
    (rate > 0).then_some(rate)
}

/// The longest `timeLeft` a `goAway` is read as: the server may name any duration ("1e30s"),
/// and the session adds it to a clock; more than a day is a day.
pub const MAX_TIME_LEFT: Duration = Duration::from_secs(86_400);

/// A protobuf Duration string ("50s", "1.5s"), at most [`MAX_TIME_LEFT`]; `None` for anything
/// else (negative, NaN, no `s`).
fn proto_duration(s: &str) -> Option<Duration> {
    let secs: f64 = s.strip_suffix('s')?.parse().ok()?;
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    if secs >= MAX_TIME_LEFT.as_secs_f64() {
        return Some(MAX_TIME_LEFT);
    }
    // In range; only "-0s" is refused here, and it is no time at all.
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_path_is_the_documented_one_for_each_version() {
        assert_eq!(
            path("v1beta"),
            "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
        );
        assert!(path("v1").contains(".v1.GenerativeService"));
    }

    fn setup() -> Setup {
        Setup {
            model: "gemini-3.8-live".into(),
            voice: Some("Kore".into()),
            language: None,
            instruction: "Drive the desk.".into(),
            functions: vec![FunctionDeclaration {
                name: "observe".into(),
                description: "Look".into(),
                parameters_json_schema: json!({"type": "object", "properties": {}}),
                behavior: Some("BLOCKING"),
            }],
            resume: None,
            compress_at_tokens: 25_600,
        }
    }

    #[test]
    fn setup_is_camel_case_with_nothing_null() {
        let v: Value = serde_json::from_str(&setup_frame(&setup())).unwrap();
        let s = &v["setup"];
        assert_eq!(v.as_object().unwrap().len(), 1);
        assert_eq!(s["model"], "models/gemini-3.8-live");
        assert_eq!(
            s["generationConfig"]["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"]
                ["voiceName"],
            "Kore"
        );
        assert_eq!(
            s["tools"][0]["functionDeclarations"][0]["behavior"],
            "BLOCKING"
        );
        assert_eq!(
            s["realtimeInputConfig"]["activityHandling"],
            "START_OF_ACTIVITY_INTERRUPTS"
        );
        assert_eq!(s["sessionResumption"], json!({}));
        assert_eq!(
            s["contextWindowCompression"]["slidingWindow"]["targetTokens"],
            12_800
        );
        assert!(!setup_frame(&setup()).contains("null"));
        let mut resumed = setup();
        resumed.resume = Some("h-1".into());
        let v: Value = serde_json::from_str(&setup_frame(&resumed)).unwrap();
        assert_eq!(v["setup"]["sessionResumption"]["handle"], "h-1");
    }

    #[test]
    fn client_frames_round_trip_their_payloads() {
        let v: Value = serde_json::from_str(&audio_frame(&[1, -2, 300], 16_000)).unwrap();
        let a = &v["realtimeInput"]["audio"];
        assert_eq!(a["mimeType"], "audio/pcm;rate=16000");
        assert_eq!(
            decode_base64(a["data"].as_str().unwrap()).unwrap(),
            vec![1, 0, 0xfe, 0xff, 0x2c, 0x01]
        );
        let v: Value = serde_json::from_str(&tool_response_frame(&[FunctionResponse {
            id: "fc_1".into(),
            name: "observe".into(),
            response: json!({"status": "ok"}).as_object().unwrap().clone(),
        }]))
        .unwrap();
        assert_eq!(
            v,
            json!({"toolResponse": {"functionResponses": [
                {"id": "fc_1", "name": "observe", "response": {"status": "ok"}}]}})
        );
        let v: Value = serde_json::from_str(&text_turn_frame("open the file")).unwrap();
        assert_eq!(
            v["clientContent"]["turns"][0]["parts"][0]["text"],
            "open the file"
        );
        assert_eq!(v["clientContent"]["turnComplete"], true);
    }

    #[test]
    fn server_messages_decode_to_events_in_order() {
        let pcm = base64::engine::general_purpose::URL_SAFE.encode([0x01u8, 0x00, 0xff, 0xff]);
        let cases: Vec<(Value, Vec<ServerEvent>)> = vec![
            (
                json!({"setupComplete": {}}),
                vec![ServerEvent::SetupComplete],
            ),
            (
                json!({"serverContent": {"modelTurn": {"parts": [
                    {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": pcm}},
                    {"text": "ok"}]}}}),
                vec![
                    ServerEvent::Audio {
                        rate: 24_000,
                        pcm: vec![1, -1],
                    },
                    ServerEvent::Text("ok".into()),
                ],
            ),
            (
                json!({"serverContent": {"inputTranscription": {"text": "stop"},
                    "outputTranscription": {"text": "Opening"}}}),
                vec![
                    ServerEvent::InputTranscript("stop".into()),
                    ServerEvent::OutputTranscript("Opening".into()),
                ],
            ),
            // Audio that rides with `interrupted` comes before it, so the flush drops it.
            (
                json!({"serverContent": {"interrupted": true, "modelTurn": {"parts": [
                    {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AQA="}}]}}}),
                vec![
                    ServerEvent::Audio {
                        rate: 24_000,
                        pcm: vec![1],
                    },
                    ServerEvent::Interrupted,
                ],
            ),
            (
                json!({"serverContent": {"turnComplete": true, "generationComplete": true},
                    "usageMetadata": {"totalTokenCount": 12}}),
                vec![ServerEvent::GenerationComplete, ServerEvent::TurnComplete],
            ),
            (
                json!({"toolCall": {"functionCalls": [
                    {"id": "fc_1", "name": "act", "args": {"actions": []}},
                    {"id": "fc_2", "name": "observe"}]}}),
                vec![ServerEvent::ToolCalls(vec![
                    FunctionCall {
                        id: "fc_1".into(),
                        name: "act".into(),
                        args: json!({"actions": []}),
                    },
                    FunctionCall {
                        id: "fc_2".into(),
                        name: "observe".into(),
                        args: json!({}),
                    },
                ])],
            ),
            (
                json!({"toolCallCancellation": {"ids": ["fc_1"]}}),
                vec![ServerEvent::ToolCallCancellation(vec!["fc_1".into()])],
            ),
            (
                json!({"goAway": {"timeLeft": "1.5s"}}),
                vec![ServerEvent::GoAway {
                    time_left: Some(Duration::from_millis(1500)),
                }],
            ),
            (
                json!({"sessionResumptionUpdate": {"newHandle": "h-2", "resumable": true}}),
                vec![ServerEvent::Resumption {
                    handle: Some("h-2".into()),
                }],
            ),
            (
                json!({"sessionResumptionUpdate": {"newHandle": "", "resumable": false}}),
                vec![ServerEvent::Resumption { handle: None }],
            ),
            // snake_case, which the server may also use.
            (
                json!({"server_content": {"turn_complete": true}}),
                vec![ServerEvent::TurnComplete],
            ),
            (
                json!({"voiceActivity": {"type": "ACTIVITY_START"}}),
                vec![ServerEvent::Ignored(vec!["voiceActivity".into()])],
            ),
        ];
        for (msg, want) in cases {
            let bytes = serde_json::to_vec(&msg).unwrap();
            assert_eq!(decode(&bytes).unwrap(), want, "{msg}");
        }
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        assert!(matches!(decode(b"{not json"), Err(DecodeError::NotJson(_))));
        assert_eq!(decode(b"[1,2]"), Err(DecodeError::NotObject));
        assert!(matches!(
            decode(br#"{"toolCall": {"functionCalls": "x"}}"#),
            Err(DecodeError::Field {
                key: "toolCall",
                ..
            })
        ));
        // Audio whose data is not base64, or another medium: named, not played.
        let got = decode(
            br#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"@@"}}]}}}"#,
        )
        .unwrap();
        assert!(matches!(&got[..], [ServerEvent::Ignored(k)] if k[0].contains("inlineData")));
        assert_eq!(proto_duration("50s"), Some(Duration::from_secs(50)));
        assert_eq!(proto_duration("-1s"), None);
        assert_eq!(audio_rate("audio/pcm"), Some(24_000));
        assert_eq!(audio_rate("audio/pcm;rate=16000"), Some(16_000));
        assert_eq!(audio_rate("image/jpeg"), None);
    }

    #[test]
    fn a_go_away_of_1e30_seconds_is_capped_not_a_panic() {
        // `Duration::from_secs_f64(1e30)` panicked, killing the session's network thread.
        assert_eq!(
            decode(br#"{"goAway": {"timeLeft": "1e30s"}}"#).unwrap(),
            vec![ServerEvent::GoAway {
                time_left: Some(MAX_TIME_LEFT)
            }]
        );
    }

    #[test]
    fn a_go_away_of_1_5e19_seconds_is_capped_before_it_reaches_a_clock() {
        // 1.5e19 s fit a Duration but not `Instant + Duration`: the session panicked adding it.
        for t in [
            "1.5e19s",
            "18446744073709551615s",
            "infs",
            "86401s",
            "1e308s",
        ] {
            assert_eq!(proto_duration(t), Some(MAX_TIME_LEFT), "{t}");
        }
        assert_eq!(
            proto_duration("86399.5s"),
            Some(Duration::from_millis(86_399_500))
        );
        assert_eq!(proto_duration("-0s"), Some(Duration::ZERO));
        assert_eq!(proto_duration("1e-400s"), Some(Duration::ZERO));
        for t in ["NaNs", "-1e30s", "-infs", "1e30", "s", ""] {
            assert_eq!(proto_duration(t), None, "{t}");
        }
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use crate::arb;
    use proptest::prelude::*;
    use serde_json::json;

    /// Frames of every kind this decoder reads, as the server sends them.
    fn real_frames() -> Vec<Value> {
        vec![
            json!({"setupComplete": {}}),
            json!({"serverContent": {"modelTurn": {"parts": [
                {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": "AQD//w=="}},
                {"text": "ok"}]}}}),
            json!({"serverContent": {"inputTranscription": {"text": "stop"},
                "outputTranscription": {"text": "Opening"}, "interrupted": true}}),
            json!({"serverContent": {"turnComplete": true, "generationComplete": true},
                "usageMetadata": {"totalTokenCount": 12}}),
            json!({"toolCall": {"functionCalls": [
                {"id": "fc_1", "name": "act", "args": {"actions": []}}]}}),
            json!({"toolCallCancellation": {"ids": ["fc_1"]}}),
            json!({"goAway": {"timeLeft": "50s"}}),
            json!({"go_away": {"time_left": "1.5s"}}),
            json!({"sessionResumptionUpdate": {"newHandle": "h-2", "resumable": true}}),
        ]
    }

    /// Decode, and check what was decoded is usable: a time left no more than a day.
    fn decodes(frame: &[u8]) -> Result<(), TestCaseError> {
        if let Ok(events) = decode(frame) {
            for e in events {
                if let ServerEvent::GoAway { time_left: Some(d) } = e {
                    prop_assert!(d <= MAX_TIME_LEFT, "{d:?}");
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_frame_is_events_or_an_error_never_a_panic(frame in arb::bytes(arb::json())) {
            decodes(&frame)?;
        }

        #[test]
        fn a_real_frame_with_any_part_replaced_is_never_a_panic(
            frame in arb::bytes(arb::mutated(real_frames()))
        ) {
            decodes(&frame)?;
        }

        #[test]
        fn any_time_left_is_at_most_a_day(
            left in prop_oneof![
                r"-?[0-9]{0,25}(\.[0-9]{0,9})?([eE][-+]?[0-9]{1,4})?s?"
                    .prop_map(Value::String),
                ".{0,12}".prop_map(Value::String),
                arb::json(),
            ],
            snake in any::<bool>(),
        ) {
            let frame = if snake {
                json!({"go_away": {"time_left": left}})
            } else {
                json!({"goAway": {"timeLeft": left}})
            };
            decodes(&serde_json::to_vec(&frame).unwrap())?;
        }
    }
}
