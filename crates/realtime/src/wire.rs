//! One trait over both providers' wire formats, pure: the frames that open a connection, carry audio, a user turn or a tool's answer, and each server frame as the session's common events (`Up`); a provider's own rules (OpenAI's one active response) stay inside its adapter.

use std::time::Duration;

use serde_json::{Map, Value};

use super::endpoint::Provider;
use super::turns::Pending;
use super::{gemini, openai};

/// What a server frame means to the session, whichever provider sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum Up {
    /// The opening was accepted: audio and turns may flow.
    Ready,
    /// The model's speech for one item (`turn`: OpenAI's response id, empty for Gemini).
    Audio {
        turn: String,
        item: String,
        rate: u32,
        pcm: Vec<i16>,
    },
    /// A piece of the model's speech as text.
    Said(String),
    /// A piece of what the person said, as the server heard it.
    Heard(String),
    /// The person spoke over the model: its current turn is cut.
    Interrupted,
    /// The model's turn ended (also after an interruption).
    TurnDone,
    /// One complete function call.
    Call(Pending),
    /// Calls the model no longer wants.
    Cancelled(Vec<String>),
    /// The server will close this connection soon.
    GoAway(Option<Duration>),
    /// A handle to resume with (`None`: not resumable at this point).
    Handle(Option<String>),
    /// A frame to send at once (OpenAI: the deferred `response.create`).
    Send(String),
    /// The server reported an error (logged; the session goes on).
    Problem(String),
    /// Understood and of no use here (logged at debug).
    Ignored(String),
}

/// What one connection opens with.
#[derive(Debug, Clone)]
pub struct Opening {
    pub model: String,
    pub voice: Option<String>,
    pub instruction: String,
    /// The rails' batch limit, said in the act tool's schema.
    pub max_actions: u32,
}

/// A server frame either provider's decoder could not read (the frame is dropped, counted).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    #[error(transparent)]
    Gemini(#[from] gemini::DecodeError),
    #[error(transparent)]
    OpenAi(#[from] openai::DecodeError),
}

/// A provider's wire format, as the session uses it.
pub trait Wire: Send {
    fn provider(&self) -> Provider;
    /// The sample rate the microphone's PCM is sent at.
    fn input_rate(&self) -> u32;
    /// The frames that open a connection; `resume`: the last resumable handle (Gemini).
    fn open(&mut self, resume: Option<&str>) -> Vec<String>;
    /// Does this provider resume a session on a new connection (Gemini), or must the task be
    /// replayed into a new one (OpenAI)?
    fn resumes(&self) -> bool;
    /// One server frame as events; a frame that cannot be read is an error to log, never a crash.
    fn decode(&mut self, frame: &[u8]) -> Result<Vec<Up>, WireError>;
    fn audio(&self, pcm: &[i16]) -> String;
    /// A user turn in text (with a picture when one is allowed), asking for a response.
    fn user_turn(&mut self, text: &str, jpeg: Option<&[u8]>) -> Vec<String>;
    /// The desk's answer to `call`, asking for the model's next response.
    fn answer(&mut self, call: &Pending, result: &Value) -> Vec<String>;
    /// The picture of an observation, sent just before the answer that carries it (no
    /// response of its own).
    fn picture(&mut self, observation_id: &str, jpeg: &[u8]) -> Vec<String>;
    /// Cancel the model's response in progress (the emergency stop, a spoken stop).
    fn cancel(&mut self) -> Vec<String>;
    /// Tell the server what of an interrupted item was heard (OpenAI's truncate).
    fn truncate(&self, item: &str, played_ms: f64, item_ms: f64) -> Vec<String>;
}

/// Gemini Live (`BidiGenerateContent`).
pub struct GeminiWire {
    pub opening: Opening,
    pub language: Option<String>,
    pub compress_at_tokens: u32,
    /// The audio item of the current turn (Gemini names none): a new one per turn.
    turn_no: u64,
}

impl GeminiWire {
    pub fn new(opening: Opening) -> GeminiWire {
        GeminiWire {
            opening,
            language: None,
            compress_at_tokens: 25_600,
            turn_no: 1,
        }
    }
}

/// Every desk tool is declared `BLOCKING`: the model waits for the desk's answer before it goes
/// on, so it can never narrate a click's result before the click was verified. (On
/// `gemini-3.8-live` calls are `NON_BLOCKING` unless declared otherwise: the model would talk on,
/// and an `act` result could arrive while it already said "done".) The cost, that new speech
/// cancels a running call, is handled by the session: a cancelled call that already ran is still
/// reported to the model with the next message.
pub const GEMINI_BEHAVIOR: &str = "BLOCKING";

impl Wire for GeminiWire {
    fn provider(&self) -> Provider {
        Provider::Gemini
    }
    fn input_rate(&self) -> u32 {
        gemini::INPUT_RATE
    }
    fn resumes(&self) -> bool {
        true
    }
    fn open(&mut self, resume: Option<&str>) -> Vec<String> {
        let functions = super::desk_functions(self.opening.max_actions)
            .into_iter()
            .map(|(name, description, schema)| gemini::FunctionDeclaration {
                name,
                description,
                parameters_json_schema: schema,
                behavior: Some(GEMINI_BEHAVIOR),
            })
            .collect();
        vec![gemini::setup_frame(&gemini::Setup {
            model: self.opening.model.clone(),
            voice: self.opening.voice.clone(),
            language: self.language.clone(),
            instruction: self.opening.instruction.clone(),
            functions,
            resume: resume.map(str::to_string),
            compress_at_tokens: self.compress_at_tokens,
        })]
    }
    fn decode(&mut self, frame: &[u8]) -> Result<Vec<Up>, WireError> {
        let events = gemini::decode(frame)?;
        let mut ups = Vec::new();
        for e in events {
            use gemini::ServerEvent as G;
            match e {
                G::SetupComplete => ups.push(Up::Ready),
                G::Audio { rate, pcm } => ups.push(Up::Audio {
                    turn: String::new(),
                    item: format!("turn-{}", self.turn_no),
                    rate,
                    pcm,
                }),
                G::Text(t) | G::OutputTranscript(t) => ups.push(Up::Said(t)),
                G::InputTranscript(t) => ups.push(Up::Heard(t)),
                G::Interrupted => ups.push(Up::Interrupted),
                G::GenerationComplete => ups.push(Up::Ignored("generationComplete".into())),
                G::TurnComplete => {
                    self.turn_no += 1;
                    ups.push(Up::TurnDone)
                }
                G::ToolCalls(calls) => ups.extend(calls.into_iter().map(|c| {
                    Up::Call(Pending {
                        id: c.id,
                        name: c.name,
                        args: c.args,
                    })
                })),
                G::ToolCallCancellation(ids) => ups.push(Up::Cancelled(ids)),
                G::GoAway { time_left } => ups.push(Up::GoAway(time_left)),
                G::Resumption { handle } => ups.push(Up::Handle(handle)),
                G::Ignored(keys) => ups.push(Up::Ignored(keys.join(", "))),
            }
        }
        Ok(ups)
    }
    fn audio(&self, pcm: &[i16]) -> String {
        gemini::audio_frame(pcm, gemini::INPUT_RATE)
    }
    fn user_turn(&mut self, text: &str, jpeg: Option<&[u8]>) -> Vec<String> {
        vec![match jpeg {
            Some(j) => gemini::picture_turn_frame(text, j),
            None => gemini::text_turn_frame(text),
        }]
    }
    fn answer(&mut self, call: &Pending, result: &Value) -> Vec<String> {
        vec![gemini::tool_response_frame(&[gemini::FunctionResponse {
            id: call.id.clone(),
            name: call.name.clone(),
            response: as_object(result),
        }])]
    }
    fn picture(&mut self, _: &str, jpeg: &[u8]) -> Vec<String> {
        vec![gemini::video_frame(jpeg)]
    }
    fn cancel(&mut self) -> Vec<String> {
        // Gemini has no cancel: the session fences the turn's audio and answers the call.
        Vec::new()
    }
    fn truncate(&self, _: &str, _: f64, _: f64) -> Vec<String> {
        Vec::new()
    }
}

/// A function response must be a JSON object.
fn as_object(v: &Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m.clone(),
        other => {
            let mut m = Map::new();
            m.insert("result".into(), other.clone());
            m
        }
    }
}

/// OpenAI Realtime (GA): one response at a time; `response.create` waits for `response.done`.
pub struct OpenAiWire {
    pub opening: Opening,
    pub transcription_model: Option<String>,
    /// The response in progress.
    active: Option<String>,
    /// A response is wanted once the active one is done.
    want_response: bool,
    /// `session.updated` seen on this connection.
    updated: bool,
}

impl OpenAiWire {
    pub fn new(opening: Opening) -> OpenAiWire {
        OpenAiWire {
            opening,
            transcription_model: Some("gpt-4o-transcribe".into()),
            active: None,
            want_response: false,
            updated: false,
        }
    }

    fn respond(&mut self) -> Vec<String> {
        if self.active.is_some() {
            self.want_response = true;
            Vec::new()
        } else {
            // Counted as active at once: a second request before `response.created` would fail.
            self.active = Some(String::new());
            vec![openai::response_create()]
        }
    }
}

impl Wire for OpenAiWire {
    fn provider(&self) -> Provider {
        Provider::OpenAi
    }
    fn input_rate(&self) -> u32 {
        openai::RATE
    }
    fn resumes(&self) -> bool {
        false
    }
    fn open(&mut self, _: Option<&str>) -> Vec<String> {
        self.active = None;
        self.want_response = false;
        self.updated = false;
        vec![openai::session_update(&openai::Session {
            model: self.opening.model.clone(),
            instruction: self.opening.instruction.clone(),
            voice: self.opening.voice.clone(),
            functions: super::desk_functions(self.opening.max_actions)
                .into_iter()
                .map(|(name, description, parameters)| openai::Function {
                    name,
                    description,
                    parameters,
                })
                .collect(),
            transcription_model: self.transcription_model.clone(),
        })]
    }
    fn decode(&mut self, frame: &[u8]) -> Result<Vec<Up>, WireError> {
        use openai::ServerEvent as O;
        let e = openai::decode(frame)?;
        Ok(match e {
            O::SessionCreated => vec![Up::Ignored("session.created".into())],
            O::SessionUpdated if !self.updated => {
                self.updated = true;
                vec![Up::Ready]
            }
            O::SessionUpdated => vec![Up::Ignored("session.updated".into())],
            O::SpeechStarted { .. } => vec![Up::Interrupted],
            O::SpeechStopped => vec![Up::Ignored("speech_stopped".into())],
            O::ResponseCreated { response_id } => {
                self.active = Some(response_id);
                Vec::new()
            }
            O::Audio {
                response_id,
                item_id,
                pcm,
            } => vec![Up::Audio {
                turn: response_id,
                item: item_id,
                rate: openai::RATE,
                pcm,
            }],
            O::OutputTranscript { delta, .. } => vec![Up::Said(delta)],
            O::InputTranscript(t) => vec![Up::Heard(t)],
            O::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                // Arguments are a JSON string; unreadable ones go to the desk as they are,
                // where decoding fails with a clear error for the model.
                let args = serde_json::from_str(&arguments).unwrap_or(Value::String(arguments));
                vec![Up::Call(Pending {
                    id: call_id,
                    name,
                    args,
                })]
            }
            O::ResponseDone { status, reason, .. } => {
                self.active = None;
                let mut ups = vec![Up::TurnDone];
                if status == "failed" {
                    ups.push(Up::Problem(format!(
                        "the response failed{}",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    )));
                }
                if std::mem::take(&mut self.want_response) {
                    self.active = Some(String::new());
                    ups.push(Up::Send(openai::response_create()));
                }
                ups
            }
            O::Error { benign: true, .. } => Vec::new(),
            O::Error { code, message, .. } => vec![Up::Problem(format!("{code}: {message}"))],
            O::Ignored(kind) => vec![Up::Ignored(kind)],
            O::Unknown(kind) => vec![Up::Ignored(format!("unknown event {kind}"))],
        })
    }
    fn audio(&self, pcm: &[i16]) -> String {
        openai::audio_append(pcm)
    }
    fn user_turn(&mut self, text: &str, jpeg: Option<&[u8]>) -> Vec<String> {
        let mut v = vec![openai::user_message(text, jpeg)];
        v.extend(self.respond());
        v
    }
    fn answer(&mut self, call: &Pending, result: &Value) -> Vec<String> {
        let mut v = vec![openai::function_output(&call.id, result)];
        v.extend(self.respond());
        v
    }
    fn picture(&mut self, observation_id: &str, jpeg: &[u8]) -> Vec<String> {
        vec![openai::user_message(
            &format!("The screen of observation {observation_id}, its targets numbered."),
            Some(jpeg),
        )]
    }
    fn cancel(&mut self) -> Vec<String> {
        self.want_response = false;
        match &self.active {
            Some(_) => vec![openai::response_cancel()],
            None => Vec::new(),
        }
    }
    fn truncate(&self, item: &str, played_ms: f64, item_ms: f64) -> Vec<String> {
        openai::truncate(item, played_ms, item_ms)
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opening() -> Opening {
        Opening {
            model: "m".into(),
            voice: None,
            instruction: "i".into(),
            max_actions: 10,
        }
    }

    fn kinds(frames: &[String]) -> Vec<String> {
        frames
            .iter()
            .map(|f| {
                let v: Value = serde_json::from_str(f).unwrap();
                v["type"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.as_object().unwrap().keys().next().unwrap().clone())
            })
            .collect()
    }

    #[test]
    fn openai_asks_for_one_response_at_a_time() {
        let mut w = OpenAiWire::new(opening());
        assert_eq!(kinds(&w.open(None)), ["session.update"]);
        let ready = w
            .decode(br#"{"type":"session.updated","session":{}}"#)
            .unwrap();
        assert_eq!(ready, [Up::Ready]);
        // A user turn asks for a response…
        assert_eq!(
            kinds(&w.user_turn("task", None)),
            ["conversation.item.create", "response.create"]
        );
        w.decode(br#"{"type":"response.created","response":{"id":"r1"}}"#)
            .unwrap();
        let call = w
            .decode(br#"{"type":"response.function_call_arguments.done","call_id":"c1","name":"observe","arguments":"{}"}"#)
            .unwrap();
        let Up::Call(p) = &call[0] else {
            panic!("{call:?}")
        };
        assert_eq!((p.id.as_str(), &p.args), ("c1", &json!({})));
        // …the answer comes before r1 is done: its response.create waits for response.done.
        assert_eq!(
            kinds(&w.answer(p, &json!({"ok": true}))),
            ["conversation.item.create"]
        );
        let done = w
            .decode(br#"{"type":"response.done","response":{"id":"r1","status":"completed"}}"#)
            .unwrap();
        assert_eq!(done.len(), 2);
        assert!(matches!(&done[1], Up::Send(f) if f.contains("response.create")));
        // Nothing active after that request is answered by a second answer's own request.
        assert_eq!(kinds(&w.cancel()), ["response.cancel"]);
    }

    #[test]
    fn openai_cancel_with_nothing_active_sends_nothing() {
        let mut w = OpenAiWire::new(opening());
        w.open(None);
        assert!(w.cancel().is_empty());
        assert!(w
            .decode(br#"{"type":"error","error":{"type":"invalid_request_error","code":"response_cancel_not_active","message":"x"}}"#)
            .unwrap()
            .is_empty());
        assert!(w.decode(b"not json").is_err());
    }

    #[test]
    fn gemini_names_an_audio_item_per_turn_and_answers_with_an_object() {
        let mut w = GeminiWire::new(opening());
        let setup = &w.open(Some("h1"))[0];
        assert!(setup.contains("\"BLOCKING\"") && setup.contains("h1"));
        let a = w
            .decode(br#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"AAA="}}]}}}"#)
            .unwrap();
        assert!(matches!(&a[0], Up::Audio { item, rate: 24000, .. } if item == "turn-1"));
        w.decode(br#"{"serverContent":{"turnComplete":true}}"#)
            .unwrap();
        let b = w
            .decode(br#"{"serverContent":{"modelTurn":{"parts":[{"inlineData":{"mimeType":"audio/pcm;rate=24000","data":"AAA="}}]}}}"#)
            .unwrap();
        assert!(matches!(&b[0], Up::Audio { item, .. } if item == "turn-2"));
        let call = Pending {
            id: "fc1".into(),
            name: "done".into(),
            args: json!({}),
        };
        let f: Value = serde_json::from_str(&w.answer(&call, &json!("x"))[0]).unwrap();
        assert_eq!(
            f["toolResponse"]["functionResponses"][0]["response"],
            json!({"result": "x"})
        );
        assert!(w.cancel().is_empty());
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use crate::arb;
    use proptest::prelude::*;
    use serde_json::json;

    fn opening() -> Opening {
        Opening {
            model: "m".into(),
            voice: None,
            instruction: "i".into(),
            max_actions: 10,
        }
    }

    /// Frames of both providers, so each wire also sees the other's.
    fn frames() -> Vec<Value> {
        vec![
            json!({"setupComplete": {}}),
            json!({"goAway": {"timeLeft": "1e30s"}}),
            json!({"serverContent": {"turnComplete": true, "interrupted": true}}),
            json!({"toolCall": {"functionCalls": [{"id": "fc_1", "name": "act", "args": {}}]}}),
            json!({"type": "session.updated", "session": {}}),
            json!({"type": "response.created", "response": {"id": "r1"}}),
            json!({"type": "response.function_call_arguments.done", "call_id": "c1",
                "name": "act", "arguments": "{"}),
            json!({"type": "response.done", "response": {"id": "r1", "status": "failed"}}),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// A run of any frames, to a wire keeping state between them: events or errors, never
        /// a panic, and a time left the session can add to a clock.
        #[test]
        fn any_run_of_frames_is_events_or_errors_never_a_panic(
            run in prop::collection::vec(
                prop_oneof![arb::bytes(arb::json()), arb::bytes(arb::mutated(frames()))],
                1..8,
            ),
        ) {
            let mut wires: [Box<dyn Wire>; 2] = [
                Box::new(GeminiWire::new(opening())),
                Box::new(OpenAiWire::new(opening())),
            ];
            for w in &mut wires {
                for f in &run {
                    for up in w.decode(f).unwrap_or_default() {
                        if let Up::GoAway(Some(d)) = up {
                            prop_assert!(d <= gemini::MAX_TIME_LEFT);
                        }
                    }
                    let _ = w.cancel();
                }
            }
        }
    }
}
