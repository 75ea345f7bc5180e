//! The bottom of perception, below every stage: a recognised label (text, box, confidence) before it has an id, and the one counting rule the stages share. Line finding, monospace joining, reading and tracking all use it; it uses none of them, so the stages form no cycle.

use voxdesk_core::geometry::Rect;

/// A recognised label in capture pixels, before it has an id.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub text: String,
    pub rect: Rect,
    /// 0–1.
    pub conf: f32,
}

/// Nearly all of `n`: at most one in ten off.
pub fn nearly_all(on: usize, n: usize) -> bool {
    on * 10 >= n * 9
}
