//! Safety: the rails every batch passes before anything reaches the actuator (pure), the phrase rules and the terminal line they judge with, the one way a yes is asked, and the stop latch.

pub mod confirm;
pub mod latch;
pub mod phrases;
pub mod rails;
pub mod terminal;
