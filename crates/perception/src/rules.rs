//! Switches for measuring the pixel reader's rules one at a time: `VOXDESK_RULES_OFF=name,name` turns the named rules off for a `voxdesk bench eyes` run, so a rule keeps its place only while the measurement says it pays for itself (issue 35). Read once per process; unset in normal use.

use std::collections::HashSet;
use std::sync::OnceLock;

/// Every rule that can be turned off, by the name the variable takes.
pub const NAMES: &[&str] = &[
    // Finding lines (`lines`).
    "pi",
    "vertical-rules",
    "flat-glyphs",
    // Making a strip (`recognize::make_strip`).
    "surround-bg",
    "surroundings",
    "rules-blocks",
    "glued-caret",
    "corners",
    "outlines",
    "mono-darken",
    "bitmap-blur",
    "bolder",
    // Reading a strip (`recognize::read_strips`).
    "drop-doubled",
    "sure-glyph",
    "brace",
    "split-spaces",
    // Words into labels (`recognize::words_to_labels`).
    "underscore",
    "mono-adjacent",
    "clean-text",
    "key-names",
    // Labels (`recognize::recognise`).
    "consensus",
    "quotes",
    "mono-zeros",
    "join-wrapped",
];

fn off() -> &'static HashSet<String> {
    static OFF: OnceLock<HashSet<String>> = OnceLock::new();
    OFF.get_or_init(|| {
        std::env::var("VOXDESK_RULES_OFF")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

/// Whether rule `name` (one of [`NAMES`]) is on: always, unless the variable turns it off.
pub fn on(name: &str) -> bool {
    debug_assert!(NAMES.contains(&name), "unknown rule {name}");
    !off().contains(name)
}

/// Names in the variable that are no rule (a misspelt ablation measures nothing).
pub fn unknown() -> Vec<String> {
    off()
        .iter()
        .filter(|n| !NAMES.contains(&n.as_str()))
        .cloned()
        .collect()
}
