//! The exact key events an action sends (X keysyms with the modifiers held), lowered once: the rails judge this list and the actuator sends it, so what was judged is what is sent.
//!
//! Every `key` combo and every character of `type` becomes [`Press`]es here, whatever its
//! spelling: `"ctrl+alt+Del"` and `"ctrl+alt+\u{7f}"` are the same press, a newline in typed
//! text is the Return key, a tab the Tab key, and any other control character is refused with a
//! message instead of reaching an application as a keysym nobody judged. [`Keymap::effect`] then
//! says what a press does in the focused application under the current keyboard layout
//! (`shift+\` types `|` on a US layout).
//!
//! How the actuator's enigo sends a keysym (x11rb backend): the keycode whose first column holds
//! it, else a spare keycode bound to it on both levels; the modifiers held apply on top. The
//! keymap mirrors exactly that, so the effect computed here is the one the server produces.

use std::collections::HashMap;
use std::fmt;

/// A key combination: modifiers (sorted, deduplicated) and one key, all lower-case names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Combo {
    pub modifiers: Vec<Modifier>,
    pub key: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Modifier {
    Ctrl,
    Alt,
    Shift,
    Super,
}

impl Modifier {
    /// Its name in a combo ("ctrl").
    pub fn name(self) -> &'static str {
        match self {
            Modifier::Ctrl => "ctrl",
            Modifier::Alt => "alt",
            Modifier::Shift => "shift",
            Modifier::Super => "super",
        }
    }
}

/// Canonical key names voxdesk accepts (after aliases).
const KEYS: &[&str] = &[
    "enter",
    "kp_enter",
    "iso_left_tab",
    "tab",
    "escape",
    "backspace",
    "delete",
    "insert",
    "home",
    "end",
    "pageup",
    "pagedown",
    "up",
    "down",
    "left",
    "right",
    "space",
    "menu",
    "capslock",
    "printscreen",
];

/// Parse "ctrl+shift+s", "Alt+F4", "Return".
pub fn parse_combo(s: &str) -> Result<Combo, String> {
    match s.trim_matches(' ') {
        "" if !s.is_empty() => return parse_combo("space"),
        "+" => return parse_combo("plus"),
        _ => {}
    }
    // Only spaces are trimmed: a control character is a key name to judge ("\r" is Return).
    let parts: Vec<String> = s
        .split('+')
        .map(|p| p.trim_matches(' ').to_lowercase())
        .collect();
    if s.trim_matches(' ').is_empty() || parts.iter().any(|p| p.is_empty()) {
        // "ctrl++" (plus key) is the one legal empty part.
        if let Some(base) = s.trim_matches(' ').strip_suffix("++") {
            let mut c = parse_combo(&format!("{base}+plus"))?;
            c.key = "+".into();
            return Ok(c);
        }
        return Err(format!(
            "`combo` {s:?} is not a key combination like \"ctrl+s\""
        ));
    }
    let (key, mods) = parts.split_last().expect("non-empty");
    let mut modifiers = Vec::new();
    for m in mods {
        let m = match m.as_str() {
            "ctrl" | "control" => Modifier::Ctrl,
            "alt" => Modifier::Alt,
            "shift" => Modifier::Shift,
            "super" | "meta" | "win" | "cmd" => Modifier::Super,
            other => {
                return Err(format!(
                    "`combo` {s:?}: {other:?} is not a modifier (ctrl, alt, shift, super)"
                ))
            }
        };
        if !modifiers.contains(&m) {
            modifiers.push(m);
        }
    }
    modifiers.sort();
    let key = match key.as_str() {
        "return" | "enter" => "enter".to_string(),
        "esc" | "escape" => "escape".to_string(),
        "del" | "delete" => "delete".to_string(),
        "pgup" | "page_up" | "pageup" | "prior" => "pageup".to_string(),
        "pgdn" | "page_down" | "pagedown" | "next" => "pagedown".to_string(),
        "plus" => "+".to_string(),
        // A modifier pressed on its own.
        "ctrl" | "control" => "ctrl".to_string(),
        "alt" | "shift" | "super" => key.clone(),
        k if KEYS.contains(&k) => k.to_string(),
        k if k.len() >= 2
            && k.starts_with('f')
            && k[1..].parse::<u8>().is_ok_and(|n| (1..=24).contains(&n)) =>
        {
            k.to_string()
        }
        k if k.chars().count() == 1 => {
            let c = k.chars().next().unwrap_or(' ');
            match named_char(c) {
                Ok(Some(name)) => name.to_string(),
                Ok(None) => k.to_string(),
                Err(e) => return Err(format!("`combo` {s:?}: {e}")),
            }
        }
        other => return Err(format!("`combo` {s:?}: unknown key {other:?}")),
    };
    Ok(Combo { modifiers, key })
}

impl fmt::Display for Combo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for m in &self.modifiers {
            write!(f, "{}+", m.name())?;
        }
        // "+" alone would not parse back ("ctrl++" does, "+" does not): it is named.
        match self.key.as_str() {
            "+" => write!(f, "plus"),
            k => write!(f, "{k}"),
        }
    }
}

/// An X keysym.
pub type Keysym = u32;

pub const RETURN: Keysym = 0xff0d;
pub const KP_ENTER: Keysym = 0xff8d;
pub const TAB: Keysym = 0xff09;
pub const ISO_LEFT_TAB: Keysym = 0xfe20;
pub const BACKSPACE: Keysym = 0xff08;
pub const ESCAPE: Keysym = 0xff1b;
pub const DELETE: Keysym = 0xffff;
pub const INSERT: Keysym = 0xff63;
pub const SPACE: Keysym = 0x20;
pub const F1: Keysym = 0xffbe;

/// The modifiers held while a key is pressed, as a set (spelling and order do not matter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Mods(u8);

impl Mods {
    pub const NONE: Mods = Mods(0);
    pub const CTRL: Mods = Mods(1);
    pub const ALT: Mods = Mods(2);
    pub const SHIFT: Mods = Mods(4);
    pub const SUPER: Mods = Mods(8);

    pub fn of(m: Modifier) -> Mods {
        match m {
            Modifier::Ctrl => Mods::CTRL,
            Modifier::Alt => Mods::ALT,
            Modifier::Shift => Mods::SHIFT,
            Modifier::Super => Mods::SUPER,
        }
    }
    pub fn with(self, o: Mods) -> Mods {
        Mods(self.0 | o.0)
    }
    pub fn without(self, o: Mods) -> Mods {
        Mods(self.0 & !o.0)
    }
    pub fn has(self, o: Mods) -> bool {
        self.0 & o.0 == o.0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The modifiers, in a fixed order, for the actuator to hold.
    pub fn list(self) -> Vec<Modifier> {
        [
            (Mods::CTRL, Modifier::Ctrl),
            (Mods::ALT, Modifier::Alt),
            (Mods::SHIFT, Modifier::Shift),
            (Mods::SUPER, Modifier::Super),
        ]
        .into_iter()
        .filter(|(b, _)| self.has(*b))
        .map(|(_, m)| m)
        .collect()
    }
}

/// One key pressed and released while `mods` are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Press {
    pub mods: Mods,
    pub keysym: Keysym,
}

impl fmt::Display for Press {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for m in self.mods.list() {
            write!(f, "{}+", m.name())?;
        }
        write!(f, "{}", keysym_name(self.keysym))
    }
}

/// A readable name for a keysym ("Return", "'|'", "0x1000263").
pub fn keysym_name(k: Keysym) -> String {
    if let Some((n, _)) = NAMED.iter().find(|(_, s)| *s == k) {
        return n.to_string();
    }
    if (F1..F1 + 35).contains(&k) {
        return format!("f{}", k - F1 + 1);
    }
    match keysym_char(k) {
        Some(c) => format!("{c:?}"),
        None => format!("keysym {k:#x}"),
    }
}

/// The canonical key names of `action::parse_combo` and their keysyms.
const NAMED: &[(&str, Keysym)] = &[
    ("enter", RETURN),
    ("kp_enter", KP_ENTER),
    ("tab", TAB),
    ("iso_left_tab", ISO_LEFT_TAB),
    ("escape", ESCAPE),
    ("backspace", BACKSPACE),
    ("delete", DELETE),
    ("insert", INSERT),
    ("home", 0xff50),
    ("end", 0xff57),
    ("pageup", 0xff55),
    ("pagedown", 0xff56),
    ("up", 0xff52),
    ("down", 0xff54),
    ("left", 0xff51),
    ("right", 0xff53),
    ("space", SPACE),
    ("menu", 0xff67),
    ("capslock", 0xffe5),
    ("printscreen", 0xff61),
    ("ctrl", 0xffe3),
    ("shift", 0xffe1),
    ("alt", 0xffe9),
    ("super", 0xffeb),
];

/// The keysym the actuator holds for a modifier.
pub fn modifier_keysym(m: Modifier) -> Keysym {
    match m {
        Modifier::Ctrl => 0xffe3,
        Modifier::Alt => 0xffe9,
        Modifier::Shift => 0xffe1,
        Modifier::Super => 0xffeb,
    }
}

/// Why an action cannot be lowered to keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsendable(pub String);

impl fmt::Display for Unsendable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The keysym of one character, as X names it: control characters that have a key are that
/// key (newline and carriage return are Return, tab is Tab, backspace, escape and delete are
/// theirs); any other control or non-character is refused.
pub fn char_keysym(c: char) -> Result<Keysym, Unsendable> {
    let u = c as u32;
    Ok(match c {
        '\n' | '\r' => RETURN,
        '\t' => TAB,
        '\u{8}' => BACKSPACE,
        '\u{1b}' => ESCAPE,
        '\u{7f}' => DELETE,
        ' ' => SPACE,
        _ if c.is_control()
            || matches!(u, 0xd800..=0xdfff | 0xfdd0..=0xfdef)
            || u & 0xfffe == 0xfffe
            // Format characters (bidi overrides, zero-width joiners): they change how text
            // reads without being seen.
            || matches!(u, 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x2069 | 0xfeff) =>
        {
            return Err(Unsendable(format!(
                "{c:?} (U+{u:04X}) is a control character with no key; spell the key instead (\"enter\", \"tab\")"
            )))
        }
        _ if matches!(u, 0x21..=0x7e | 0xa0..=0xff) => u,
        _ => 0x0100_0000 | u,
    })
}

/// A one-character key name as its canonical name when the character is a key that types
/// nothing ('\u{7f}' is "delete", '\r' is "enter"); `None` for a character that types itself.
pub fn named_char(c: char) -> Result<Option<&'static str>, Unsendable> {
    let k = char_keysym(c)?;
    Ok(NAMED
        .iter()
        .find(|(n, s)| *s == k && *n != "space")
        .map(|(n, _)| *n))
}

/// The character a keysym types, when it types one (Latin-1 and Unicode keysyms).
pub fn keysym_char(k: Keysym) -> Option<char> {
    match k {
        0x20..=0x7e | 0xa0..=0xff => char::from_u32(k),
        0x0100_0100..=0x0110_ffff => char::from_u32(k - 0x0100_0000),
        _ => None,
    }
}

/// A combo as the one press it is. The key's keysym comes from its canonical name or its one
/// character, lowered like typed text (so a control character spells the key it is).
pub fn lower_combo(c: &Combo) -> Result<Press, Unsendable> {
    let mut mods = Mods::NONE;
    for m in &c.modifiers {
        mods = mods.with(Mods::of(*m));
    }
    let keysym = if let Some((_, k)) = NAMED.iter().find(|(n, _)| *n == c.key) {
        *k
    } else if let Some(n) = c
        .key
        .strip_prefix('f')
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| (1..=35).contains(n))
    {
        F1 + n - 1
    } else {
        let mut it = c.key.chars();
        match (it.next(), it.next()) {
            (Some(ch), None) => char_keysym(ch)?,
            _ => return Err(Unsendable(format!("no key is named {:?}", c.key))),
        }
    };
    Ok(Press { mods, keysym })
}

/// Typed text as presses, one per character, nothing held.
pub fn lower_text(text: &str) -> Result<Vec<Press>, Unsendable> {
    text.chars()
        .map(|c| {
            Ok(Press {
                mods: Mods::NONE,
                keysym: char_keysym(c)?,
            })
        })
        .collect()
}

/// Does `p` press Return (with any modifiers: Ctrl+Return and Shift+Return still run a shell's
/// line in most terminals and accept a dialog's default in most toolkits)?
pub fn is_return(p: Press) -> bool {
    matches!(p.keysym, RETURN | KP_ENTER)
}

/// What a press does in the focused application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Types a character (no Ctrl, Alt or Super held).
    Char(char),
    /// A key that types nothing (Return, Tab, an arrow), with no Ctrl, Alt or Super held.
    Key(Keysym),
    /// A shortcut: Ctrl, Alt or Super held (`mods` without Shift when Shift picked the level).
    Shortcut(Mods, Keysym),
}

/// The keyboard layout as the actuator meets it: for each keysym found in the first column of
/// some keycode (the first such keycode, as enigo searches), what that keycode gives with Shift.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Keymap {
    shifted: HashMap<Keysym, Keysym>,
}

impl Keymap {
    /// From the server's keycode table: `keysyms_per_keycode` keysyms per keycode, keycodes in
    /// order (as `GetKeyboardMapping` answers).
    pub fn from_table(keysyms: &[Keysym], per_keycode: usize) -> Keymap {
        let mut shifted = HashMap::new();
        if per_keycode == 0 {
            return Keymap { shifted };
        }
        for row in keysyms.chunks(per_keycode) {
            let base = row[0];
            if base == 0 {
                continue;
            }
            let up = row.get(1).copied().filter(|k| *k != 0).unwrap_or_else(|| {
                // X's rule for a keycode with one keysym: the level with Shift is its
                // upper case (letters), or itself.
                keysym_char(base)
                    .and_then(|c| {
                        let mut u = c.to_uppercase();
                        match (u.next(), u.next()) {
                            (Some(up), None) if up != c => Some(up),
                            _ => None,
                        }
                    })
                    .and_then(|u| char_keysym(u).ok())
                    .unwrap_or(base)
            });
            shifted.entry(base).or_insert(up);
        }
        Keymap { shifted }
    }

    /// The US layout (pc105 "us"), for tests and when the server's table cannot be read.
    pub fn us() -> Keymap {
        let pairs = "`~1!2@3#4$5%6^7&8*9(0)-_=+[{]}\\|;:'\",<.>/?";
        let mut table = Vec::new();
        let cs: Vec<char> = pairs.chars().collect();
        for p in cs.chunks(2) {
            table.push(p[0] as u32);
            table.push(p[1] as u32);
        }
        for c in 'a'..='z' {
            table.push(c as u32);
            table.push(c.to_ascii_uppercase() as u32);
        }
        for (_, k) in NAMED {
            table.push(*k);
            table.push(if *k == TAB { ISO_LEFT_TAB } else { *k });
        }
        Keymap::from_table(&table, 2)
    }

    /// The keysym the application receives for `keysym` pressed with Shift (itself when the
    /// actuator will bind a spare keycode to it on both levels).
    pub fn shift(&self, keysym: Keysym) -> Keysym {
        self.shifted.get(&keysym).copied().unwrap_or(keysym)
    }

    /// What `p` does in the focused application.
    pub fn effect(&self, p: Press) -> Effect {
        let k = if p.mods.has(Mods::SHIFT) {
            self.shift(p.keysym)
        } else {
            p.keysym
        };
        let shortcut = p.mods.without(Mods::SHIFT);
        if !shortcut.is_empty() {
            // Shift is part of a shortcut when it did not pick another keysym (ctrl+shift+w).
            let mods = if k == p.keysym { p.mods } else { shortcut };
            return Effect::Shortcut(mods, k);
        }
        match keysym_char(k) {
            Some(c) => Effect::Char(c),
            None => Effect::Key(k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::parse_combo;

    fn press(s: &str) -> Press {
        lower_combo(&parse_combo(s).unwrap()).unwrap()
    }

    #[test]
    fn spellings_of_one_key_are_one_press() {
        for (a, b) in [
            ("ctrl+alt+Del", "ctrl+alt+\u{7f}"),
            ("alt+ctrl+delete", "ctrl+alt+del"),
            ("ctrl+alt+escape", "ctrl+alt+\u{1b}"),
            ("ctrl+alt+Esc", "alt+ctrl+\u{1b}"),
            ("ctrl+backspace", "ctrl+\u{8}"),
            ("Return", "\r"),
            ("enter", "\n"),
            ("tab", "\t"),
            ("space", " "),
            ("shift+ctrl+a", "ctrl+shift+A"),
        ] {
            assert_eq!(press(a), press(b), "{a:?} vs {b:?}");
        }
        assert_ne!(press("ctrl+a"), press("ctrl+shift+a"));
    }

    #[test]
    fn text_lowers_control_characters_to_their_keys_or_refuses() {
        let ks = |t: &str| lower_text(t).map(|v| v.iter().map(|p| p.keysym).collect::<Vec<_>>());
        assert_eq!(ks("a\nb").unwrap(), vec![0x61, RETURN, 0x62]);
        assert_eq!(ks("\r\t").unwrap(), vec![RETURN, TAB]);
        assert_eq!(ks("é€").unwrap(), vec![0xe9, 0x0100_20ac]);
        for bad in [
            "\u{0}",
            "a\u{3}",
            "\u{1}",
            "\u{85}",
            "x\u{202e}y",
            "\u{200b}",
        ] {
            assert!(ks(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_layout_says_what_shift_types() {
        let us = Keymap::us();
        let fx = |s: &str| us.effect(press(s));
        assert_eq!(fx("shift+\\"), Effect::Char('|'));
        assert_eq!(fx("shift+7"), Effect::Char('&'));
        assert_eq!(fx("shift+4"), Effect::Char('$'));
        assert_eq!(fx("shift+."), Effect::Char('>'));
        assert_eq!(fx(";"), Effect::Char(';'));
        assert_eq!(fx("shift+a"), Effect::Char('A'));
        assert_eq!(fx("|"), Effect::Char('|'));
        assert_eq!(fx("enter"), Effect::Key(RETURN));
        assert_eq!(fx("ctrl+c"), Effect::Shortcut(Mods::CTRL, 0x63));
        // Shift picked the level: the application sees Ctrl with a capital W.
        assert_eq!(fx("ctrl+shift+w"), Effect::Shortcut(Mods::CTRL, 'W' as u32));
        assert_eq!(
            fx("ctrl+shift+tab"),
            Effect::Shortcut(Mods::CTRL, ISO_LEFT_TAB)
        );
        // A keysym on no keycode's first column is bound to a spare keycode on both levels.
        assert_eq!(fx("shift+é"), Effect::Char('é'));
        // Keycodes with one keysym: Shift gives its upper case.
        let one = Keymap::from_table(&[0x61, 0, 0x3b, 0], 2);
        assert_eq!(one.shift(0x61), 0x41);
        assert_eq!(one.shift(0x3b), 0x3b);
    }

    #[test]
    fn every_named_key_lowers_and_unknown_names_do_not() {
        for (n, k) in NAMED {
            assert_eq!(press(n).keysym, *k, "{n}");
        }
        assert_eq!(press("f4").keysym, 0xffc1);
        assert!(lower_combo(&Combo {
            modifiers: vec![],
            key: "nope".into()
        })
        .is_err());
        assert_eq!(press("ctrl+alt+delete").to_string(), "ctrl+alt+delete");
        assert_eq!(press("shift+\\").to_string(), "shift+'\\\\'");
    }
}
