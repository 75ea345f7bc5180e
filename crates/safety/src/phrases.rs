//! The fixed phrase lists the rails match on-screen text and typed text against (purchases, destructive dialogs, password fields, destructive commands), tolerant to OCR slips; screen text is data matched here, never read for instructions.

use voxdesk_core::action::{Combo, Modifier};
use voxdesk_perception::Target;

/// Characters the shell reads as more than a word's letters: another command, a pipe, a
/// redirection (`>` truncates a file), a substitution. Newlines are the Return key (see `keys`).
pub const SHELL_META: &str = ";|&$`><";

pub const PURCHASE: &[&str] = &[
    "buy now",
    "place order",
    "place your order",
    "pay now",
    "pay",
    "confirm purchase",
    "complete purchase",
    "checkout",
    "check out",
    "proceed to checkout",
    "purchase",
    "subscribe",
    "confirm payment",
    "submit payment",
    "buy",
];

pub const DESTRUCTIVE_DIALOG: &[&str] = &[
    "delete permanently",
    "permanently delete",
    "erase",
    "format",
    "empty trash",
    "empty bin",
    "empty recycle bin",
    "delete all",
    "wipe",
    "factory reset",
    "remove all",
    "discard all",
    "destroy",
    "overwrite",
];

const PASSWORD_WORDS: &[&str] = &[
    "password",
    "passphrase",
    "passcode",
    "pin",
    "pin code",
    "secret",
];

/// The phrase of `list` that `text` contains (case-insensitive, whole words). Words of five
/// letters or more may differ by one OCR slip (two from eight letters): a refusal must not be
/// dodged by "Passuord" or "Delete permanentIy".
pub fn phrase(text: &str, list: &[&'static str]) -> Option<&'static str> {
    let norm: String = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    let words: Vec<&str> = norm.split_whitespace().collect();
    let same = |a: &str, b: &str| {
        let d = strsim::levenshtein(a, b);
        d == 0 || (b.len() >= 5 && d <= 1) || (b.len() >= 8 && d <= 2)
    };
    list.iter().copied().find(|p| {
        let pw: Vec<&str> = p.split_whitespace().collect();
        words
            .windows(pw.len())
            .any(|w| w.iter().zip(&pw).all(|(a, b)| same(a, b)))
    })
}

/// Words a question uses when it asks to destroy something or to pay.
const QUESTION_WORDS: &[&str] = &[
    "delete",
    "remove",
    // Words match whole: the passive a dialog says it in ("will be removed") is a word of its own.
    "deleted",
    "removed",
    "erased",
    "destroyed",
    "overwritten",
    "wiped",
    "discard",
    "erase",
    "overwrite",
    "empty",
    "permanently",
    "replace",
    "wipe",
    "format",
    "destroy",
    "lose",
    "lost",
    "unsaved",
    "without saving",
    "undone",
    "trash",
    "uninstall",
    "reset",
    "buy",
    "purchase",
    "pay",
    "payment",
    "order",
    "subscribe",
    "charge",
    "charged",
    "close",
    "closing",
    "quit",
    "quitting",
    "leave",
    "leaving",
];

/// What a confirmation's accept button says: the destructive verbs, the purchase words, and the
/// plain yeses a destructive question gives its meaning to.
const ACCEPT_WORDS: &[&str] = &[
    "delete",
    "remove",
    "discard",
    "erase",
    "overwrite",
    "empty",
    "don t save",
    "dont save",
    "close without saving",
    "quit without saving",
    "replace",
    "move to trash",
    "trash",
    "wipe",
    "format",
    "destroy",
    "clear",
    "reset",
    "uninstall",
    "yes",
    "ok",
    "continue",
    "proceed",
    "confirm",
    "accept",
    "apply",
    "buy",
    "pay",
    "purchase",
    "place order",
    "subscribe",
    "close",
    "quit",
    "leave",
    "i understand",
];

/// Words that back out of a confirmation.
const BACK_OUT: &[&str] = &[
    "cancel",
    "no",
    "keep",
    "back",
    "don t delete",
    "not now",
    "save",
];

/// Buttons that throw work away whatever else they say ("Don't Save").
const DISCARDS: &[&str] = &[
    "don t save",
    "dont save",
    "close without saving",
    "quit without saving",
    "discard changes",
];

/// A question on screen that asks to destroy something or to pay ("Delete the folder “x”
/// permanently?", "Are you sure you want to empty the trash?", "This cannot be undone"), read
/// as a person reads it. A `?` inside a word (an address's query) does not make a question.
pub fn destructive_question(text: &str) -> bool {
    let t = text.to_lowercase();
    let t = t
        .trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '”' | '’' | ')'));
    let asks = (t.split_whitespace().count() >= 2 && (t.ends_with('?') || t.contains("? ")))
        || [
            "are you sure",
            "cannot be undone",
            "can t be undone",
            "can't be undone",
            "will be lost",
            "will be permanently",
            "do you want",
            "do you really",
        ]
        .iter()
        .any(|p| t.contains(p));
    asks && phrase(text, QUESTION_WORDS).is_some()
}

/// A button's text that backs out of a confirmation ("Cancel", "Keep them", "No").
pub fn backs_out(text: &str) -> bool {
    phrase(text, BACK_OUT).is_some()
}

/// A button's text that accepts such a question: a short label (four words at most) with an
/// accepting word and no word that backs out, or one that discards work ("Don't Save").
pub fn accepts(text: &str) -> bool {
    let words = text.split_whitespace().count();
    (1..=4).contains(&words)
        && !text.contains('?')
        && (phrase(text, DISCARDS).is_some()
            || (phrase(text, ACCEPT_WORDS).is_some() && phrase(text, BACK_OUT).is_none()))
}

/// A destructive or purchase confirmation on screen: a question of that kind (one line, two
/// lines one above the other as a dialog wraps it, or pieces of one row) with a button that
/// accepts it beside or below it. The question's first label and that button.
pub fn destructive_dialog(targets: &[Target]) -> Option<(&Target, &Target)> {
    let below = |q: &Target| {
        targets
            .iter()
            .filter(|t| {
                t.id != q.id
                    && t.rect.y > q.rect.y
                    && t.rect.y - q.rect.bottom() < q.rect.h.max(t.rect.h).max(8)
                    && t.rect.x < q.rect.right()
                    && q.rect.x < t.rect.right()
            })
            .min_by_key(|t| t.rect.y)
    };
    // The question's words read as two labels on one row (OCR split it at a wide space).
    let beside = |q: &Target| {
        targets
            .iter()
            .filter(|t| {
                let overlap = q.rect.bottom().min(t.rect.bottom()) - q.rect.y.max(t.rect.y);
                t.id != q.id
                    && t.rect.x >= q.rect.right()
                    && t.rect.x - q.rect.right() < 2 * q.rect.h.max(t.rect.h).max(8)
                    && overlap * 2 >= q.rect.h.min(t.rect.h)
            })
            .min_by_key(|t| t.rect.x)
    };
    let with = |q: &Target, n: Option<&Target>| {
        n.is_some_and(|n| destructive_question(&format!("{} {}", q.text, n.text)))
    };
    // The row from `q` on, read as one line (however many pieces OCR made of it).
    let row = |q: &Target| {
        let (mut text, mut at) = (q.text.clone(), q);
        for _ in 0..6 {
            let Some(n) = beside(at) else { break };
            text = format!("{text} {}", n.text);
            if destructive_question(&text) {
                return true;
            }
            at = n;
        }
        false
    };
    targets
        .iter()
        .filter(|q| destructive_question(&q.text) || with(q, below(q)) || row(q))
        .find_map(|q| {
            targets
                .iter()
                .find(|b| b.id != q.id && accepts(&b.text) && near_question(q, b))
                .map(|b| (q, b))
        })
}

/// Does `b` sit where a dialog puts the buttons of question `q` (beside or below it)?
pub fn near_question(q: &Target, b: &Target) -> bool {
    let qc = q.rect.centre();
    b.rect.y + 10 >= q.rect.y
        && (b.rect.centre().y - qc.y) < 500.0
        && (b.rect.centre().x - qc.x).abs() < 700.0
}

pub fn masked(text: &str) -> bool {
    let t: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3
        && t.iter()
            .all(|c| matches!(c, '•' | '●' | '*' | '·' | '∙' | '⬤' | '◦'))
}

/// Is the keyboard about to go into a password field? Judged from the clicked field (masked
/// dots, or a password label in or just left of/above it) or, with no click, from masked dots
/// anywhere on screen.
pub fn password_field(focus: Option<&Target>, targets: &[Target]) -> Option<String> {
    let label_near = |f: &Target| {
        targets.iter().find(|t| {
            phrase(&t.text, PASSWORD_WORDS).is_some() && {
                let same_row = (t.rect.centre().y - f.rect.centre().y).abs()
                    < f.rect.h.max(t.rect.h) as f64
                    && t.rect.x <= f.rect.x
                    && f.rect.x - t.rect.right() < 400;
                let above = t.rect.bottom() <= f.rect.y + 2
                    && f.rect.y - t.rect.bottom() < 60
                    && (t.rect.x - f.rect.x).abs() < 300;
                same_row || above || t.id == f.id
            }
        })
    };
    match focus {
        Some(f) if masked(&f.text) => Some(format!("target {} shows masked characters: it is a password field", f.id)),
        Some(f) => label_near(f).map(|l| format!("target {} is labelled {:?}: voxdesk never types into password fields", f.id, l.text)),
        None => targets
            .iter()
            .find(|t| masked(&t.text))
            .map(|t| format!("the screen shows a masked field (target {}): voxdesk never types into password fields", t.id))
            .or_else(|| {
                // A prompt like "Password:" (a terminal, a dialog) with no field clicked: a
                // password word before a colon, or ending the text (OCR reads the colon before
                // a cursor as "?", ";" or nothing).
                targets
                    .iter()
                    .find(|t| prompt_head(&t.text).and_then(|head| phrase(head, PASSWORD_WORDS)).is_some())
                    .map(|t| format!("the screen asks for a password ({:?}, target {}): voxdesk never types one", t.text, t.id))
            }),
    }
}

/// A password field's label: a short text ending with a password word ("Password", "New
/// password:", "PIN", "Enter your passcode"), not one that only mentions it ("Pin to taskbar",
/// "Password manager settings").
pub fn password_label(text: &str) -> bool {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    (1..=3).contains(&words.len())
        && PASSWORD_WORDS.iter().any(|p| {
            let n = p.split_whitespace().count();
            n <= words.len() && phrase(&words[words.len() - n..].join(" "), &[*p]).is_some()
        })
}

/// The words a prompt asks with: what comes before its colon, or, when the text ends with a mark
/// OCR makes of a colon before a cursor ("Password?", "Password;"), its last word.
fn prompt_head(text: &str) -> Option<&str> {
    if let Some((head, _)) = text.split_once(':') {
        return Some(head);
    }
    let t = text.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '|' | '_'));
    let t = t.strip_suffix(['?', ';', '.'])?;
    t.rsplit(|c: char| !c.is_alphanumeric())
        .next()
        .filter(|w| !w.is_empty())
}

pub fn destructive_combo(c: &Combo) -> Option<String> {
    let ctrl_only = c.modifiers == [Modifier::Ctrl];
    if c.key == "delete" || c.key == "backspace" {
        return (!c.modifiers.is_empty()).then(|| format!("{c} deletes"));
    }
    if ctrl_only && matches!(c.key.as_str(), "w" | "q" | "x") {
        return Some(format!("{c} closes, quits or cuts"));
    }
    if c.modifiers == [Modifier::Alt] && c.key == "f4" {
        return Some(format!("{c} closes the window"));
    }
    None
}

/// Typed text that runs destructive commands: `rm `, `del `, `sudo `, `shutdown`, `reboot`,
/// as words (so "firm " is not "rm ").
pub fn destructive_text(text: &str) -> Option<String> {
    let t = text.to_lowercase();
    ["rm ", "del ", "sudo ", "shutdown", "reboot"]
        .iter()
        .find(|w| {
            t.match_indices(**w).any(|(i, _)| {
                t[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !c.is_alphanumeric())
            })
        })
        .map(|w| format!("typed text contains {:?}", w.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxdesk_core::geometry::Rect;

    #[test]
    fn a_password_label_ends_with_its_word() {
        for yes in [
            "Password",
            "Password:",
            "New password",
            "Confirm password *",
            "PIN",
            "PIN code",
            "Enter your passcode",
            "Passw0rd",
        ] {
            assert!(password_label(yes), "{yes:?}");
        }
        for no in [
            "Pin to taskbar",
            "Password manager settings",
            "Change your password every month",
            "Secret Santa list",
            "Username",
            "",
        ] {
            assert!(!password_label(no), "{no:?}");
        }
    }

    #[test]
    fn a_password_prompt_is_seen_however_ocr_reads_its_colon() {
        let on = |text: &str| {
            let t = Target {
                id: 1,
                text: text.into(),
                rect: Rect::new(10, 10, 80, 12),
                conf: 0.9,
                new: false,
                ax: None,
            };
            password_field(None, &[t]).is_some()
        };
        for prompt in [
            "Password:",
            "Password: |",
            "Password?",
            "Password;",
            "[sudo] password for ada:",
            "Enter passphrase:",
        ] {
            assert!(on(prompt), "{prompt}");
        }
        for other in [
            "Change password",
            "Passwords and keys",
            "hello from voxdesk",
            "Pin to taskbar",
        ] {
            assert!(!on(other), "{other}");
        }
    }
}
