//! Golden frames: one of every kind each client sends, built by the real encoders, dumped for the providers' SDK types to judge (`tests/sdk/validate_frames.py`, run by `cargo xtask test`).

use std::io::Write;

use serde_json::{json, Value};

use voxdesk_realtime::wire::{GeminiWire, OpenAiWire, Opening, Wire};
use voxdesk_realtime::{gemini, openai};

/// Every frame kind, as (provider, frame).
fn frames() -> Vec<(&'static str, String)> {
    // The opening frames exactly as the sessions build them (tools, BLOCKING, voice, language).
    let opening = |model: &str, voice: &str| Opening {
        model: model.into(),
        voice: Some(voice.into()),
        instruction: "You drive the desktop through the desk's tools.".into(),
        max_actions: 10,
    };
    let mut g = GeminiWire::new(opening("gemini-3.8-live", "Kore"));
    g.language = Some("en-US".into());
    let setup = g.open(None).remove(0);
    let resumed = g.open(Some("handle-1")).remove(0);
    let session = OpenAiWire::new(opening("gpt-realtime", "marin"))
        .open(None)
        .remove(0);
    let result = json!({"verdict": "verified", "observation_id": "o2"});
    let response = gemini::FunctionResponse {
        id: "fc_1".into(),
        name: "act".into(),
        response: result.as_object().unwrap().clone(),
    };
    let jpeg = [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
    vec![
        ("gemini", setup),
        ("gemini", resumed),
        (
            "gemini",
            gemini::audio_frame(&[0, 1, -1, i16::MAX], gemini::INPUT_RATE),
        ),
        ("gemini", gemini::audio_stream_end_frame()),
        ("gemini", gemini::video_frame(&jpeg)),
        ("gemini", gemini::text_turn_frame("open the invoice")),
        (
            "gemini",
            gemini::picture_turn_frame("observation o2", &jpeg),
        ),
        ("gemini", gemini::tool_response_frame(&[response])),
        ("openai", session),
        ("openai", openai::audio_append(&[0, 1, -1, i16::MAX])),
        ("openai", openai::user_message("open the invoice", None)),
        (
            "openai",
            openai::user_message("observation o2", Some(&jpeg)),
        ),
        ("openai", openai::function_output("call_1", &result)),
        ("openai", openai::response_create()),
        ("openai", openai::response_cancel()),
        (
            "openai",
            openai::truncate("item_1", 1500.6, 9_250.0).unwrap(),
        ),
    ]
}

#[test]
fn every_frame_kind_is_json_and_is_dumped_for_the_sdk_check() {
    let mut lines = String::new();
    for (provider, frame) in frames() {
        let v: Value = serde_json::from_str(&frame).expect("a frame is JSON");
        assert!(v.is_object(), "{frame}");
        lines.push_str(&json!({"provider": provider, "frame": v}).to_string());
        lines.push('\n');
    }
    // `cargo xtask test` names the file and validates it with the SDKs afterwards.
    if let Some(path) = std::env::var_os("VOXDESK_FRAME_DUMP") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("the frame dump opens");
        f.write_all(lines.as_bytes())
            .expect("the frame dump is written");
    }
}
