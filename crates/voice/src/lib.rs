//! Voice: what voxdesk says aloud (narration and the model's speech on one voice thread), the microphone, and the listener that hears the person over it: barge-in, offline spoken commands, stop words and spoken answers.

pub mod acoustic;
pub mod aec;
pub mod ask;
pub mod denoise;
pub mod echo;
pub mod floor;
pub mod framer;
pub mod grammar;
pub mod listen;
pub mod mic;
pub mod narrate;
pub mod phonemes;
pub mod reference;
pub mod sounds;
pub mod sphinx;
