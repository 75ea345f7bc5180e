//! Input: the one actuator that moves the mouse and keyboard, the emergency stop that halts it, and the GUI lock that keeps one voxdesk per screen.
//!
//! The hands sit below records and the desk: they cannot name the tool host that drives them
//! (Cargo refuses the `use`):
//! ```compile_fail
//! use voxdesk_desk::Desk;
//! ```

pub mod actuator;
pub mod lock;
pub mod stop;
