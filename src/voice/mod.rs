//! Voice: what voxdesk says aloud (the local text-to-speech narration sink); the microphone and the realtime models' speech join it here.

pub mod mic;
pub mod narrate;
