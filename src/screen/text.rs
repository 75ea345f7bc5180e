//! Finding text among the screen's targets the way a person reads it: labels compared with OCR slips tolerated, and whether a text is on screen at all (pure).

use crate::perception::Target;

/// Compare a label as spoken with a target's text, tolerating case and small OCR slips
/// (0/O, 1/l/I, 5/S, 8/B, rn/m) — but never a different word.
pub fn label_matches(want: &str, got: &str) -> bool {
    fn canon(s: &str) -> String {
        s.to_lowercase()
            .replace("rn", "m")
            .chars()
            .filter(|c| !c.is_whitespace() && !matches!(c, '.' | ':' | '…'))
            .map(|c| match c {
                '0' => 'o',
                '1' | 'i' | '|' | '!' => 'l',
                '5' => 's',
                '8' => 'b',
                c => c,
            })
            .collect()
    }
    let (w, g) = (canon(want), canon(got));
    !w.is_empty() && w == g
}

/// Is `text` on screen? A target equal to it (OCR slips tolerated), or containing it as words.
pub fn present(text: &str, targets: &[Target]) -> bool {
    let want = text.to_lowercase();
    targets.iter().any(|t| {
        label_matches(text, &t.text)
            || format!(" {} ", t.text.to_lowercase()).contains(&format!(" {want} "))
    })
}
