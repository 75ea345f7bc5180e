//! Golden frames: one of every kind each client sends, built by the real encoders, dumped for the providers' SDK types to judge (`tests/sdk/validate_frames.py`, run by `cargo xtask test`).

use std::io::Write;

use serde_json::{json, Value};

use super::{desk_functions, gemini, openai};

/// Every frame kind, as (provider, frame).
fn frames() -> Vec<(&'static str, String)> {
    let decls: Vec<gemini::FunctionDeclaration> = desk_functions()
        .into_iter()
        .map(|(name, description, schema)| gemini::FunctionDeclaration {
            name,
            description,
            parameters_json_schema: schema,
            behavior: Some("BLOCKING"),
        })
        .collect();
    let setup = gemini::Setup {
        model: "gemini-3.8-live".into(),
        voice: Some("Kore".into()),
        language: Some("en-US".into()),
        instruction: "You drive the desktop through the desk's tools.".into(),
        functions: decls,
        resume: None,
        compress_at_tokens: 25_600,
    };
    let resumed = gemini::Setup {
        resume: Some("handle-1".into()),
        ..setup.clone()
    };
    let result = json!({"verdict": "verified", "observation_id": "o2"});
    let response = gemini::FunctionResponse {
        id: "fc_1".into(),
        name: "act".into(),
        response: result.as_object().unwrap().clone(),
    };
    let session = openai::Session {
        model: "gpt-realtime".into(),
        instruction: "You drive the desktop through the desk's tools.".into(),
        voice: Some("marin".into()),
        functions: desk_functions()
            .into_iter()
            .map(|(name, description, parameters)| openai::Function {
                name,
                description,
                parameters,
            })
            .collect(),
        transcription_model: Some("gpt-4o-transcribe".into()),
    };
    let jpeg = [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10];
    vec![
        ("gemini", gemini::setup_frame(&setup)),
        ("gemini", gemini::setup_frame(&resumed)),
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
        ("openai", openai::session_update(&session)),
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
