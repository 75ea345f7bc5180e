//! Input: the one actuator that moves the mouse and keyboard, the emergency stop that halts it, and the GUI lock that keeps one voxdesk per screen.

pub mod actuator;
pub mod lock;
pub mod stop;
