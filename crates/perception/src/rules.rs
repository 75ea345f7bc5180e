//! Switches for measuring the pixel reader's rules one at a time: `voxdesk bench eyes` with `VOXDESK_RULES_OFF=name,name` turns the named rules off for its run, so a rule keeps its place only while the measurement says it pays for itself (issue 35). Every rule is on unless a measurement turned it off.

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

static OFF: OnceLock<HashSet<String>> = OnceLock::new();

/// Turn the named rules off for the rest of this process (a measurement: `voxdesk bench eyes`
/// reads `VOXDESK_RULES_OFF` and calls this once, before anything is read). Names that are no
/// rule are refused, and nothing is turned off: a misspelt ablation would measure nothing.
pub fn turn_off(names: &[String]) -> Result<(), Vec<String>> {
    let unknown: Vec<String> = names
        .iter()
        .filter(|n| !NAMES.contains(&n.as_str()))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(unknown);
    }
    let _ = OFF.set(names.iter().cloned().collect());
    Ok(())
}

/// Whether rule `name` (one of [`NAMES`]) is on: always, unless [`turn_off`] named it.
pub fn on(name: &str) -> bool {
    debug_assert!(NAMES.contains(&name), "unknown rule {name}");
    OFF.get().is_none_or(|off| !off.contains(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_rule_is_refused_and_turns_nothing_off() {
        assert_eq!(
            turn_off(&["pi".into(), "no-such-rule".into()]),
            Err(vec!["no-such-rule".to_string()])
        );
        assert!(on("pi"));
    }
}
