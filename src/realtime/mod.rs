//! Realtime models over WebSocket (Gemini Live, OpenAI Realtime): each provider's wire format, pure and apart from the socket and the session that drive the desk.
//!
//! Layers, as the providers' SDKs keep them: transport (frames on a socket) → wire (this
//! module's `gemini` and `openai`: encode strictly, decode leniently into events) → session
//! (events to the desk and the speaker). The wire layer and `turns` (the audio fence and the
//! tool calls' bookkeeping, pure) exist so far.

pub mod endpoint;
pub mod gemini;
pub mod openai;
pub mod profile;
pub mod transport;
pub mod turns;

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
