//! Safety: the rails every batch passes before anything reaches the actuator (pure), and the phrase rules they match screen and typed text against.

pub mod phrases;
pub mod rails;
