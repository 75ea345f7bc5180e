//! Turn-based models as planners over the same tools: the conversation in no vendor's words (`convo`), each API's wire format as pure functions (`openai`: Chat Completions, which Ollama, vLLM, llama.cpp's server and LM Studio speak; `anthropic`: Messages; `gemini`: generateContent), the one HTTP edge (`http`), where and with which key (`spec`), what `voxdesk probe` measured of a deployment (`capability`), and the agent's `Driver` (`driver`).

pub mod anthropic;
pub mod capability;
pub mod convo;
pub mod driver;
pub mod gemini;
pub mod http;
pub mod openai;
pub mod spec;

pub use driver::TextDriver;
pub use spec::{Provider, Spec, SpecError};
