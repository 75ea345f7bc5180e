//! Safety: the rails every batch passes before anything reaches the actuator (pure), the phrase rules and the terminal line they judge with, the one way a yes is asked, and the stop latch.
//!
//! The rails sit below the hands: they judge, and cannot reach the actuator or the desk (Cargo
//! refuses the `use`):
//! ```compile_fail
//! use voxdesk_input::actuator::Actuator;
//! ```

pub mod confirm;
pub mod latch;
pub mod phrases;
pub mod rails;
pub mod terminal;
