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
pub mod openai;
pub mod profile;
pub mod session;
pub mod transport;
pub mod turns;
pub mod wire;

#[cfg(test)]
mod golden;

use serde_json::Value;

/// The desk's tools (`prompts/tools.v2.json`) as (name, description, JSON Schema), for either
/// provider's function declarations.
pub fn desk_functions() -> Vec<(String, String, Value)> {
    let v: Value = serde_json::from_str(crate::desk::tool::TOOLS_JSON)
        .expect("prompts/tools.v2.json is checked by the desk's own tests");
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
