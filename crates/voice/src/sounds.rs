//! A learned recogniser's transcript read back by how it sounds (pure): the words it wrote ("Click to", "Scroll down free", "Clear Cassie") are compared phone by phone with every command the screen allows ("click two", "scroll down three", "click a c"), and a command is taken only when it is close and no other command of another meaning is nearly as close; otherwise nothing is guessed.

use std::collections::HashMap;

use super::grammar::{Grammar, Heard};

/// How a word sounds: CMU phones without stress ("K L IH K").
pub type Phones = Vec<String>;

/// Words → phones, filled as words are met (the caller pronounces the new ones).
#[derive(Default)]
pub struct Lexicon {
    words: HashMap<String, Phones>,
}

impl Lexicon {
    /// Words not yet known, for the caller to pronounce (once each).
    pub fn missing<'a>(&self, words: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for w in words {
            if !self.words.contains_key(w) && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
        out
    }

    /// `phones`: space-separated CMU phones, stress digits allowed.
    pub fn add(&mut self, word: &str, phones: &str) {
        let p: Phones = phones
            .split_whitespace()
            .map(|p| p.trim_end_matches(|c: char| c.is_ascii_digit()).to_string())
            .collect();
        self.words.insert(word.to_string(), p);
    }

    /// The phones of a sentence (a word never pronounced counts as nothing: it can only make
    /// the sentence sound further from everything).
    pub fn sentence(&self, words: &str) -> Phones {
        words
            .split_whitespace()
            .flat_map(|w| self.words.get(w).cloned().unwrap_or_default())
            .collect()
    }
}

const VOWELS: &[&str] = &[
    "AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW",
];
/// Consonants that differ only in voicing or place: heard for each other easily.
const NEAR: &[(&str, &str)] = &[
    ("P", "B"),
    ("T", "D"),
    ("K", "G"),
    ("F", "V"),
    ("S", "Z"),
    ("TH", "DH"),
    ("CH", "JH"),
    ("SH", "ZH"),
    ("M", "N"),
    ("N", "NG"),
    ("F", "TH"),
    ("T", "K"),
    ("P", "T"),
    ("L", "R"),
];

fn substitution(a: &str, b: &str) -> f32 {
    if a == b {
        0.0
    } else if VOWELS.contains(&a) && VOWELS.contains(&b) {
        0.5
    } else if NEAR
        .iter()
        .any(|&(x, y)| (x == a && y == b) || (x == b && y == a))
    {
        0.6
    } else {
        1.0
    }
}

/// Edit distance between two phone strings: insertions and deletions cost 1 (0.5 for a vowel),
/// substitutions less between similar phones.
pub fn distance(a: &[String], b: &[String]) -> f32 {
    let indel = |p: &str| if VOWELS.contains(&p) { 0.6 } else { 1.0 };
    let mut prev: Vec<f32> = std::iter::once(0.0)
        .chain(b.iter().scan(0.0, |s, p| {
            *s += indel(p);
            Some(*s)
        }))
        .collect();
    for x in a {
        let mut cur = vec![prev[0] + indel(x)];
        for (j, y) in b.iter().enumerate() {
            let v = (prev[j] + substitution(x, y))
                .min(prev[j + 1] + indel(x))
                .min(cur[j] + indel(y));
            cur.push(v);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// One sentence the screen allows, as words, and what it means.
pub struct Candidate {
    pub words: String,
    pub meaning: Heard,
    pub phones: Phones,
}

/// How close a transcript must sound to be taken: at most this many phone edits for each
/// phone of the command (0.34: about one phone in three may be misheard).
pub const MAX_PER_PHONE: f32 = 0.34;
/// …and every command that means something else must be at least this many edits further.
pub const MIN_MARGIN: f32 = 1.2;

/// The sentences of one command the grammar allows (chains are matched piece by piece).
pub fn sentences(g: &Grammar) -> Vec<(String, Heard)> {
    let mut out: Vec<(String, Heard)> = Vec::new();
    let mut push = |s: String| {
        let m = g.interpret(&s);
        if !matches!(m, Heard::Nothing) {
            out.push((s, m));
        }
    };
    let commands = g.mode() == crate::grammar::Mode::Commands;
    for form in g.label_forms() {
        for verb in ["click", "double click", "right click", "open", "wait for"] {
            push(format!("{verb} {form}"));
        }
    }
    let keys = g.key_forms();
    let mods = [
        "",
        "control ",
        "alt ",
        "shift ",
        "super ",
        "control shift ",
        "control alt ",
        "alt shift ",
    ];
    for m in mods {
        for k in &keys {
            push(format!("press {m}{k}"));
        }
    }
    for d in ["up", "down", "left", "right"]
        .into_iter()
        .filter(|_| commands)
    {
        push(format!("scroll {d}"));
        for n in [
            "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        ] {
            push(format!("scroll {d} {n}"));
        }
    }
    // Stop words and answers; never sleep or wake by sound (noise heard as "go to sleep"
    // would leave a listener deaf to everything but "wake up").
    for s in g.control_forms() {
        let m = g.interpret(&s);
        if !matches!(m, Heard::Sleep | Heard::Wake) {
            push(s);
        }
    }
    out
}

/// The closest sentence to `phones` and the closest of another meaning: (candidate index,
/// its distance, the runner-up's distance).
fn nearest(phones: &[String], cands: &[Candidate]) -> Option<(usize, f32, f32)> {
    let mut best: Option<(usize, f32)> = None;
    let mut scored: Vec<(usize, f32)> = Vec::with_capacity(cands.len());
    for (i, c) in cands.iter().enumerate() {
        let d = distance(phones, &c.phones);
        scored.push((i, d));
        if best.is_none_or(|(_, b)| d < b) {
            best = Some((i, d));
        }
    }
    let (bi, bd) = best?;
    let second = scored
        .iter()
        .filter(|(i, _)| cands[*i].meaning != cands[bi].meaning)
        .map(|(_, d)| *d)
        .fold(f32::INFINITY, f32::min);
    Some((bi, bd, second))
}

/// Is the nearest sentence near enough, and alone? The words, or why not.
fn accept(phones: &[String], cands: &[Candidate]) -> Result<usize, Doubt> {
    let (i, d, second) = nearest(phones, cands).ok_or(Doubt::Far)?;
    let len = cands[i].phones.len().max(1) as f32;
    if d > MAX_PER_PHONE * len {
        return Err(Doubt::Far);
    }
    if second - d < MIN_MARGIN {
        let rivals: Vec<String> = cands
            .iter()
            .filter(|c| distance(phones, &c.phones) - d < MIN_MARGIN)
            .map(|c| c.words.clone())
            .collect();
        return Err(Doubt::Between(rivals));
    }
    Ok(i)
}

/// Why a transcript was not taken.
#[derive(Debug, Clone, PartialEq)]
pub enum Doubt {
    /// It sounds like no command here.
    Far,
    /// It sounds like several, of different meanings.
    Between(Vec<String>),
}

/// Verbs that start a command: a chain is cut before each.
const VERBS: [&str; 6] = ["click", "double", "right", "press", "scroll", "wait"];

/// What `words` (a transcript in the grammar's vocabulary, see `grammar::words_of`) means,
/// by sound: one command, or a chain of them cut before each verb, every piece near one
/// sentence and far from the rest.
pub fn read(g: &Grammar, lex: &Lexicon, cands: &[Candidate], words: &str) -> Result<Heard, Doubt> {
    let t: Vec<&str> = words.split_whitespace().collect();
    if t.is_empty() {
        return Err(Doubt::Far);
    }
    // The whole of it as one command first ("open file then save" is one).
    let whole = accept(&lex.sentence(words), cands);
    if let Ok(i) = whole {
        return Ok(cands[i].meaning.clone());
    }
    // Pieces: cut before each verb after the first word; joiners at a piece's end dropped.
    let mut pieces: Vec<Vec<&str>> = vec![Vec::new()];
    for (k, w) in t.iter().enumerate() {
        if k > 0
            && VERBS.contains(w)
            && !pieces
                .last()
                .is_some_and(|p| p.last() == Some(&"double") || p.last() == Some(&"right"))
        {
            pieces.push(Vec::new());
        }
        pieces.last_mut().expect("a piece").push(w);
    }
    if t[0] == "open" && t.len() > 3 {
        // "open A then B": A and B each a label, one word (the joiner as heard) between.
        for k in 2..t.len() - 1 {
            let a = accept(&lex.sentence(&t[..k].join(" ")), cands);
            let b = accept(
                &lex.sentence(&format!("open {}", t[k + 1..].join(" "))),
                cands,
            );
            if let (Ok(a), Ok(b)) = (a, b) {
                let second = cands[b].words.trim_start_matches("open ");
                if let h @ Heard::Command(_) =
                    g.interpret(&format!("{} then {second}", cands[a].words))
                {
                    return Ok(h);
                }
            }
        }
    }
    if pieces.len() < 2 {
        return whole.map(|i| cands[i].meaning.clone());
    }
    // A word before the first verb that is no command (noise heard as "five") is left out.
    if pieces[0].len() == 1 && !VERBS.contains(&pieces[0][0]) && pieces.len() > 2 {
        pieces.remove(0);
    }
    let mut chosen: Vec<String> = Vec::new();
    for p in &mut pieces {
        let mut tries = vec![p.join(" ")];
        // The joiner, or whatever the recogniser wrote for it, may end the piece.
        if p.len() > 2 {
            tries.push(p[..p.len() - 1].join(" "));
        }
        if p.len() > 3 {
            tries.push(p[..p.len() - 2].join(" "));
        }
        let got = tries
            .iter()
            .map(|s| accept(&lex.sentence(s), cands))
            .find(|r| r.is_ok())
            .unwrap_or_else(|| accept(&lex.sentence(&tries[0]), cands))?;
        chosen.push(cands[got].words.clone());
    }
    match g.interpret(&chosen.join(" then ")) {
        Heard::Nothing => Err(Doubt::Far),
        h => Ok(h),
    }
}

/// Which of the commands a question offered an answer names: said whole, or by the words only
/// it has ("plus" for "click plus" against "click not"); none when no choice is near enough
/// or two are nearly as near.
pub fn choose(lex: &Lexicon, words: &str, choices: &[&str]) -> Option<usize> {
    let heard = lex.sentence(words);
    let scored: Vec<f32> = choices
        .iter()
        .map(|c| {
            let own: Vec<&str> = c
                .split_whitespace()
                .filter(|w| {
                    !choices
                        .iter()
                        .all(|o| o.split_whitespace().any(|x| x == *w))
                })
                .collect();
            let d = |p: &Phones| distance(&heard, p) / p.len().max(1) as f32;
            d(&lex.sentence(c)).min(d(&lex.sentence(&own.join(" "))))
        })
        .collect();
    let (best, d) = scored
        .iter()
        .copied()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let second = scored
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != best)
        .map(|(_, d)| *d)
        .fold(f32::INFINITY, f32::min);
    (d <= MAX_PER_PHONE && second - d >= 0.25).then_some(best)
}

/// How a recogniser may write a sentence: as said, and with its numbers in digits
/// ("click seven" → "click 7"; "press f five" → "press f 5").
pub fn written(words: &str) -> Vec<String> {
    const DIGITS: [&str; 10] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ];
    let digits: Vec<String> = words
        .split_whitespace()
        .map(|w| match DIGITS.iter().position(|d| *d == w) {
            Some(i) => i.to_string(),
            None => w.to_string(),
        })
        .collect();
    let digits = digits.join(" ");
    if digits == words {
        vec![words.to_string()]
    } else {
        vec![words.to_string(), digits]
    }
}

/// The candidates of a grammar with their phones (the lexicon must know their words).
pub fn candidates(g: &Grammar, lex: &Lexicon) -> Vec<Candidate> {
    sentences(g)
        .into_iter()
        .map(|(words, meaning)| Candidate {
            phones: lex.sentence(&words),
            words,
            meaning,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::{build, Mode};

    fn p(s: &str) -> Phones {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn distance_counts_edits_and_forgives_similar_phones() {
        assert_eq!(distance(&p("K L IH K"), &p("K L IH K")), 0.0);
        assert_eq!(distance(&p("T UW"), &p("T UW")), 0.0);
        assert!((distance(&p("F R IY"), &p("TH R IY")) - 0.6).abs() < 1e-6);
        assert!((distance(&p("P L AH S"), &p("L EH S")) - 1.5).abs() < 1e-6);
        assert!((distance(&p(""), &p("S T AA P")) - 3.6).abs() < 1e-6);
    }

    /// A lexicon for the words of these tests (as espeak-ng and the CMU phones give them).
    fn lexicon() -> Lexicon {
        let mut l = Lexicon::default();
        for (w, ph) in [
            ("click", "K L IH K"),
            ("double", "D AH B AH L"),
            ("right", "R AY T"),
            ("open", "OW P AH N"),
            ("wait", "W EY T"),
            ("for", "F AO R"),
            ("press", "P R EH S"),
            ("scroll", "S K R OW L"),
            ("up", "AH P"),
            ("down", "D AW N"),
            ("left", "L EH F T"),
            ("then", "DH EH N"),
            ("man", "M AE N"),
            ("plus", "P L AH S"),
            ("not", "N AA T"),
            ("less", "L EH S"),
            ("two", "T UW"),
            ("to", "T UW"),
            ("three", "TH R IY"),
            ("free", "F R IY"),
            ("seven", "S EH V AH N"),
            ("heaven", "HH EH V AH N"),
            ("downloads", "D AW N L OW D Z"),
            ("download", "D AW N L OW D"),
            ("music", "M Y UW Z IH K"),
            ("stop", "S T AA P"),
            ("cancel", "K AE N S AH L"),
            ("what", "W AH T"),
            ("is", "IH Z"),
            ("the", "DH AH"),
            ("weather", "W EH DH ER"),
            ("like", "L AY K"),
            ("today", "T AH D EY"),
        ] {
            l.add(w, ph);
        }
        for c in 'a'..='z' {
            let w = c.to_string();
            if !l.words.contains_key(&w) {
                l.add(&w, "EY");
            }
        }
        for w in [
            "one",
            "four",
            "five",
            "six",
            "eight",
            "nine",
            "ten",
            "zero",
            "control",
            "alt",
            "shift",
            "super",
            "enter",
            "escape",
            "tab",
            "space",
            "backspace",
            "delete",
            "home",
            "end",
            "page",
            "f",
            "go",
            "sleep",
            "wake",
            "eleven",
            "twelve",
        ] {
            if !l.words.contains_key(w) {
                l.add(w, "Z Z Z Z");
            }
        }
        l
    }

    #[test]
    fn an_answer_names_a_choice_whole_or_by_its_own_words() {
        let lex = lexicon();
        let c = ["click plus", "click not"];
        assert_eq!(choose(&lex, "plus", &c), Some(0));
        assert_eq!(choose(&lex, "click not", &c), Some(1));
        assert_eq!(choose(&lex, "not", &c), Some(1));
        assert_eq!(choose(&lex, "what is the weather like today", &c), None);
        assert_eq!(choose(&lex, "click", &c), None);
    }

    #[test]
    fn misheard_words_that_sound_like_one_command_are_that_command() {
        let g = build(
            &[
                "+".into(),
                "7".into(),
                "Downloads".into(),
                "Music".into(),
                "not".into(),
            ],
            &["stop".into(), "cancel".into()],
            Mode::Commands,
        );
        let lex = lexicon();
        let c = candidates(&g, &lex);
        let cases: &[(&str, Result<Heard, ()>)] = &[
            ("click seven", Ok(Heard::Command("click 7".into()))),
            ("click heaven", Ok(Heard::Command("click 7".into()))),
            (
                "click download",
                Ok(Heard::Command("click Downloads".into())),
            ),
            (
                "scroll down free",
                Ok(Heard::Command("scroll down 3".into())),
            ),
            ("scroll up to", Ok(Heard::Command("scroll up 2".into()))),
            (
                "click seven man click plus",
                Ok(Heard::Command("click 7, click +".into())),
            ),
            (
                "five click seven click plus",
                Ok(Heard::Command("click 7, click +".into())),
            ),
            ("stop", Ok(Heard::Stop("stop".into()))),
            (
                "open downloads man music",
                Ok(Heard::Command("open Downloads then Music".into())),
            ),
            // Sounds like nothing here, or like two things: never guessed.
            ("what is the weather like today", Err(())),
            ("click less", Err(())),
        ];
        for (said, want) in cases {
            let got = read(&g, &lex, &c, said);
            match want {
                Ok(h) => assert_eq!(got.as_ref().ok(), Some(h), "{said}: {got:?}"),
                Err(()) => assert!(got.is_err(), "{said}: {got:?}"),
            }
        }
    }
}
