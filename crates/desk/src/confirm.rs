//! Asking the person for a yes, as the desk and its drivers name it: the trait, the question and the answers that need no person (`--yes`, no way to ask) live with the rails in `safety::confirm`, which alone makes the yes token.

pub use voxdesk_safety::confirm::{AssumeYes, Confirm, Nobody, Question};
