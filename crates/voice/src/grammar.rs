//! Spoken commands (pure): spoken forms of screen labels, the JSGF grammar for a listening mode, and a recognised hypothesis turned back into a planner task.
//!
//! No I/O, threads, clocks or files: strings in, strings out.

use std::collections::{BTreeSet, HashMap, HashSet};

/// What the recogniser listens for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Planner commands with the screen labels as slots, plus control words.
    Commands,
    /// Yes / no / stop after a question.
    Confirm,
    /// Only "wake up" and the stop words; other speech is absorbed.
    Asleep,
    /// Only the stop words (a cloud model does the rest).
    StopOnly,
}

/// What a hypothesis means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A task in the offline planner's typed syntax.
    Command(String),
    /// A stop word (as spoken, words joined by one space).
    Stop(String),
    Yes,
    No,
    Sleep,
    Wake,
    Nothing,
}

/// A grammar for one mode and the maps to read its hypotheses back.
#[derive(Debug, Clone)]
pub struct Grammar {
    /// The JSGF text for pocketsphinx.
    pub jsgf: String,
    /// Every distinct word the grammar uses, sorted.
    pub words: Vec<String>,
    mode: Mode,
    /// Spoken form (words joined by one space) -> original label.
    labels: HashMap<String, String>,
    /// Longest spoken form, in words.
    max_label_words: usize,
    /// Stop words, each a list of words, longest first.
    stops: Vec<Vec<String>>,
    /// Words allowed after "type".
    twords: HashSet<String>,
}

// ---------------------------------------------------------------- tables

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

/// Labels that are a symbol on their own (checked before anything else).
const WHOLE_SYMBOLS: &[(&str, &[&[&str]])] = &[
    ("+", &[&["plus"]]),
    ("-", &[&["minus"]]),
    ("−", &[&["minus"]]),
    ("–", &[&["minus"]]),
    ("×", &[&["times"]]),
    ("*", &[&["times"]]),
    ("x", &[&["times"], &["x"]]),
    ("÷", &[&["divided", "by"], &["divide"]]),
    ("/", &[&["divided", "by"], &["divide"]]),
    ("=", &[&["equals"], &["equal"]]),
    (".", &[&["point"], &["dot"]]),
    (",", &[&["comma"]]),
    ("%", &[&["percent"]]),
    ("√", &[&["square", "root"]]),
    ("√x", &[&["square", "root"]]),
    ("π", &[&["pi"]]),
    ("^", &[&["power"]]),
    ("x^y", &[&["x", "to", "the", "y"], &["power"]]),
    ("xʸ", &[&["x", "to", "the", "y"], &["power"]]),
    ("(", &[&["open", "paren"], &["left", "paren"]]),
    (")", &[&["close", "paren"], &["right", "paren"]]),
    ("±", &[&["plus", "minus"]]),
    ("+/-", &[&["plus", "minus"]]),
    ("+/−", &[&["plus", "minus"]]),
    ("x²", &[&["x", "squared"]]),
    ("x^2", &[&["x", "squared"]]),
    ("1/x", &[&["one", "over", "x"]]),
    ("!", &[&["factorial"]]),
    ("n!", &[&["factorial"], &["n", "factorial"]]),
    ("&", &[&["and"]]),
    ("@", &[&["at"]]),
    ("#", &[&["hash"]]),
    ("?", &[&["question", "mark"]]),
    ("⌫", &[&["backspace"]]),
];

/// Symbols spoken when they appear inside a longer label.
const INLINE_SYMBOLS: &[(char, &[&str])] = &[
    ('+', &["plus"]),
    ('%', &["percent"]),
    ('&', &["and"]),
    ('@', &["at"]),
    ('#', &["hash"]),
    ('=', &["equals"]),
    ('×', &["times"]),
    ('÷', &["divided", "by"]),
    ('√', &["square", "root"]),
    ('π', &["pi"]),
    ('²', &["squared"]),
    ('³', &["cubed"]),
    ('^', &["power"]),
    ('±', &["plus", "minus"]),
];

/// Characters stripped from both ends of a label ("Save As…" -> "Save As").
const END_STRIP: &str = ".…,:;!?\"'“”‘’«»()[]{}<>*·•-–—_~|/\\";

/// Words the JSGF scanner may treat as keywords; never emitted as tokens.
const RESERVED: [&str; 3] = ["public", "grammar", "import"];

/// Extra words for `type ...` besides label words and zero..twenty.
const TYPE_WORDS: &[&str] = &[
    "hello", "world", "yes", "no", "okay", "test", "the", "a", "an", "and", "to", "of", "in", "on",
    "it", "is", "for", "with", "file", "name", "new", "my", "your", "this", "that", "please",
    "thanks", "thank", "you", "good", "morning", "night", "hi", "dear", "from", "search", "note",
    "document", "folder", "email", "report", "today",
];

/// Garbage words absorbing other speech while asleep or stop-only.
const FILLER_WORDS: &[&str] = &[
    "the", "a", "an", "and", "or", "but", "is", "are", "was", "be", "to", "of", "in", "on", "at",
    "for", "with", "it", "this", "that", "what", "which", "who", "how", "why", "when", "where",
    "i", "you", "he", "she", "we", "they", "my", "your", "me", "us", "him", "her", "them", "do",
    "does", "did", "have", "has", "had", "not", "no", "yes", "so", "if", "then", "there", "here",
    "go", "come", "get", "make", "take", "see", "look", "know", "think", "want", "like", "just",
    "now", "very", "can", "will", "would", "could", "all", "some", "more", "one", "two", "about",
    "from", "up", "down", "out", "over", "good", "well", "okay", "yeah", "hmm", "uh", "um",
];

const YES: &[&str] = &[
    "yes",
    "yeah",
    "yes please",
    "do it",
    "go ahead",
    "okay",
    "sure",
];
const NO: &[&str] = &["no", "nope", "no thanks", "don't", "do not", "never mind"];

const MODS: &[(&str, &str)] = &[
    ("control", "ctrl"),
    ("alt", "alt"),
    ("shift", "shift"),
    ("super", "super"),
];
const NAMED_KEYS: &[(&str, &str)] = &[
    ("enter", "enter"),
    ("escape", "escape"),
    ("tab", "tab"),
    ("space", "space"),
    ("backspace", "backspace"),
    ("delete", "delete"),
    ("up", "up"),
    ("down", "down"),
    ("left", "left"),
    ("right", "right"),
    ("home", "home"),
    ("end", "end"),
    ("page up", "pageup"),
    ("page down", "pagedown"),
];
const DIRECTIONS: [&str; 4] = ["up", "down", "left", "right"];

// ---------------------------------------------------------------- numbers

/// 0..=9999 in words: 100 -> one hundred, 2024 -> two thousand twenty four.
fn number_words(n: u32) -> Vec<String> {
    let mut out: Vec<&str> = Vec::new();
    if n == 0 {
        return vec!["zero".to_string()];
    }
    let (th, rest) = (n / 1000, n % 1000);
    let (hu, rest) = (rest / 100, rest % 100);
    if th > 0 {
        out.push(ONES[th as usize]);
        out.push("thousand");
    }
    if hu > 0 {
        out.push(ONES[hu as usize]);
        out.push("hundred");
    }
    if rest >= 20 {
        out.push(TENS[(rest / 10) as usize]);
        if rest % 10 > 0 {
            out.push(ONES[(rest % 10) as usize]);
        }
    } else if rest > 0 {
        out.push(ONES[rest as usize]);
    }
    out.into_iter().map(String::from).collect()
}

/// "007" -> zero zero seven.
fn digit_words(digits: &str) -> Vec<String> {
    digits
        .chars()
        .filter_map(|c| c.to_digit(10))
        .map(|d| ONES[d as usize].to_string())
        .collect()
}

/// Alternatives for a run of digits, maybe with one decimal point.
/// Up to 9999 in words (no leading zero); 3+ digits also digit by digit;
/// longer numbers only digit by digit; "3.5" -> three point five.
fn number_alts(run: &str) -> Vec<Vec<String>> {
    if let Some((int, frac)) = run.split_once('.') {
        let mut alts = Vec::new();
        for mut head in number_alts(int) {
            head.push("point".to_string());
            head.extend(digit_words(frac));
            alts.push(head);
        }
        return alts;
    }
    let plain = run.len() <= 4 && (run == "0" || !run.starts_with('0'));
    match (plain, run.parse::<u32>()) {
        (true, Ok(n)) => {
            let mut alts = vec![number_words(n)];
            if run.len() >= 3 {
                alts.push(digit_words(run));
            }
            alts
        }
        _ => vec![digit_words(run)],
    }
}

// ---------------------------------------------------------------- spoken forms

/// Folds common accented Latin letters to ASCII and curly apostrophes to '.
fn fold_char(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
        'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' => 'A',
        'ç' => 'c',
        'Ç' => 'C',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'È' | 'É' | 'Ê' | 'Ë' => 'E',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'Ì' | 'Í' | 'Î' | 'Ï' => 'I',
        'ñ' => 'n',
        'Ñ' => 'N',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
        'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' => 'O',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'Ù' | 'Ú' | 'Û' | 'Ü' => 'U',
        'ý' | 'ÿ' => 'y',
        '’' | 'ʼ' => '\'',
        other => other,
    }
}

/// Splits a letter run at case changes: "HTTPServer" -> HTTP, Server; "myFile" -> my, File.
fn split_case(run: &str) -> Vec<String> {
    let cs: Vec<char> = run.chars().collect();
    let mut parts = Vec::new();
    let mut cur = String::new();
    for i in 0..cs.len() {
        let c = cs[i];
        if i > 0 && c.is_ascii_uppercase() {
            let prev = cs[i - 1];
            let next_lower = cs.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase() || (prev.is_ascii_uppercase() && next_lower) {
                parts.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
    }
    parts.push(cur);
    parts
}

/// Alternatives for one letter word. All-caps 2-4 letters ("AC") and short
/// vowel-less words ("pdf", "ln") are also spelled letter by letter, spelled first.
fn word_alts(word: &str) -> Vec<Vec<String>> {
    let w = word.trim_matches('\'').to_ascii_lowercase();
    if w.is_empty() {
        return vec![vec![]];
    }
    let letters = w.chars().filter(|c| *c != '\'').count();
    let acronym = letters == w.len()
        && (2..=4).contains(&letters)
        && (word.chars().all(|c| c.is_ascii_uppercase())
            || !w.chars().any(|c| "aeiouy".contains(c)));
    if acronym {
        let spelled = w.chars().map(|c| c.to_string()).collect();
        vec![spelled, vec![w]]
    } else {
        vec![vec![w]]
    }
}

/// Punctuation said by name while dictating ("new line" before "line").
const SPOKEN_PUNCTUATION: &[(&str, &str)] = &[
    ("new paragraph", "\n\n"),
    ("new line", "\n"),
    ("full stop", "."),
    ("period", "."),
    ("comma", ","),
    ("question mark", "?"),
    ("exclamation mark", "!"),
    ("colon", ":"),
    ("semicolon", ";"),
];

/// What a person dictated after "type", word for word: the recogniser's own guesses at
/// punctuation and capitals dropped, punctuation said by name written ("meet me comma at seven
/// period" → "meet me, at seven.").
pub fn dictated(words: &str) -> String {
    let plain: Vec<String> = words
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| {
                matches!(c, '.' | ',' | '!' | '?' | ';' | ':' | '"' | '“' | '”')
            })
            .to_string()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < plain.len() {
        let lower = |k: usize| plain.get(k).map(|w| w.to_lowercase()).unwrap_or_default();
        let two = format!("{} {}", lower(i), lower(i + 1));
        let hit = SPOKEN_PUNCTUATION.iter().find_map(|(said, mark)| {
            if said.contains(' ') {
                (two == *said).then_some((*mark, 2))
            } else {
                (lower(i) == *said).then_some((*mark, 1))
            }
        });
        match hit {
            Some((mark, n)) => {
                out.push_str(mark);
                i += n;
            }
            None => {
                if !(out.is_empty() || out.ends_with('\n')) {
                    out.push(' ');
                }
                out.push_str(&plain[i]);
                i += 1;
            }
        }
    }
    out
}

impl Grammar {
    /// A learned recogniser's transcript read as the grammar reads its own hypotheses, except
    /// that "type …" takes whatever was said after it, word for word (free speech).
    pub fn interpret_transcript(&self, transcript: &str) -> Heard {
        let words = words_of(transcript);
        if self.mode == Mode::Commands {
            let t: Vec<String> = words.split(' ').map(str::to_string).collect();
            if self.stop_inside(&t).is_none() && t.first().is_some_and(|w| w == "type") {
                // The original words after "type" (the first word of the transcript).
                let rest = transcript
                    .trim_start()
                    .split_once(char::is_whitespace)
                    .map_or("", |(_, r)| r);
                let text = dictated(rest);
                return if text.is_empty() || text.contains('"') {
                    Heard::Nothing
                } else {
                    Heard::Command(format!("type \"{text}\""))
                };
            }
        }
        self.interpret(&words)
    }
}

/// A written transcript (a learned recogniser's: capitals, punctuation, digits, "invoice.pdf")
/// as the words a person said, in the grammar's vocabulary: each word said as a label of that
/// text would be ("7" → "seven", "+" → "plus", "invoice.pdf" → "invoice dot pdf"), sentence
/// punctuation dropped.
pub fn words_of(transcript: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for token in transcript.split_whitespace() {
        let whole = WHOLE_SYMBOLS.iter().any(|(s, _)| *s == token);
        let t = if whole {
            token
        } else {
            token
                .trim_end_matches(['.', ',', '!', '?', ';', ':', '"', '\'', '”', '’', ')'])
                .trim_start_matches(['"', '\'', '“', '‘', '('])
        };
        if t.is_empty() {
            continue;
        }
        // Of the ways the text can be said, the one closest to how it was written ("pdf",
        // not "p d f").
        match spoken_forms(t).into_iter().min_by_key(Vec::len) {
            Some(f) if !f.is_empty() => out.extend(f),
            _ => out.push(t.to_lowercase()),
        }
    }
    out.join(" ")
}

/// Spoken forms of a screen label, each a list of lowercase words.
///
/// Rules:
/// - a label that is a known symbol on its own ("+", "÷", "√", "1/x", "x²") gets
///   its names ("plus"; "divided by" / "divide"; ...); a lone "x" is "times" or "x";
/// - surrounding punctuation is stripped ("Save As…" -> save as);
/// - numbers up to 9999 are said in words ("2024" -> two thousand twenty four,
///   plus digit by digit for 3+ digits), longer ones digit by digit,
///   decimals as "three point five";
/// - letters and digits, and camelCase, are split ("F5" -> f five);
/// - "." between letters is "dot", "_" is "underscore" or silent (both forms),
///   a few symbols inside labels are named (+ % & @ # = ...), other
///   punctuation only separates words;
/// - all-caps words of 2-4 letters get the spelled and the word form;
/// - labels over 6 words, or with letters that cannot be spelled in a-z,
///   return an empty vec. At most 8 forms are returned.
pub fn spoken_forms(label: &str) -> Vec<Vec<String>> {
    const MAX_FORMS: usize = 8;
    const MAX_FORM_WORDS: usize = 16;
    let trimmed = label.trim();
    if let Some((_, forms)) = WHOLE_SYMBOLS.iter().find(|(s, _)| *s == trimmed) {
        return forms
            .iter()
            .map(|f| f.iter().map(|w| w.to_string()).collect())
            .collect();
    }
    let folded: String = trimmed.chars().map(fold_char).collect();
    let core = folded.trim_matches(|c: char| c.is_whitespace() || END_STRIP.contains(c));
    if core.is_empty() || core.split_whitespace().count() > 6 {
        return Vec::new();
    }

    // Each piece is a list of alternatives; forms are their product.
    let cs: Vec<char> = core.chars().collect();
    let mut pieces: Vec<Vec<Vec<String>>> = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < cs.len()
                && (cs[i].is_ascii_alphabetic()
                    || (cs[i] == '\'' && cs.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic())))
            {
                i += 1;
            }
            let run: String = cs[start..i].iter().collect();
            for part in split_case(&run) {
                pieces.push(word_alts(&part));
            }
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < cs.len() && cs[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < cs.len() && cs[i] == '.' && cs[i + 1].is_ascii_digit() {
                i += 1;
                while i < cs.len() && cs[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let run: String = cs[start..i].iter().collect();
            pieces.push(number_alts(&run));
            continue;
        }
        let between_alnum = i > 0
            && cs[i - 1].is_ascii_alphanumeric()
            && cs.get(i + 1).is_some_and(|n| n.is_ascii_alphanumeric());
        if c == '.' && between_alnum {
            pieces.push(vec![vec!["dot".to_string()]]);
        } else if c == '_' {
            pieces.push(vec![vec!["underscore".to_string()], vec![]]);
        } else if let Some((_, words)) = INLINE_SYMBOLS.iter().find(|(s, _)| *s == c) {
            pieces.push(vec![words.iter().map(|w| w.to_string()).collect()]);
        } else if c.is_alphabetic() {
            // A letter we cannot write in a-z: the label cannot be said.
            return Vec::new();
        }
        // Anything else only separates words.
        i += 1;
    }

    let mut forms: Vec<Vec<String>> = vec![vec![]];
    for alts in &pieces {
        let mut next = Vec::new();
        for f in &forms {
            for a in alts {
                let mut g = f.clone();
                g.extend(a.iter().cloned());
                next.push(g);
            }
        }
        next.truncate(MAX_FORMS * 4);
        forms = next;
    }
    let mut seen = HashSet::new();
    forms.retain(|f| {
        !f.is_empty()
            && f.len() <= MAX_FORM_WORDS
            && f.iter()
                .all(|w| valid_word(w) && !RESERVED.contains(&w.as_str()))
            && seen.insert(f.join(" "))
    });
    forms.truncate(MAX_FORMS);
    forms
}

/// A JSGF word token: only a-z and apostrophes, at least one letter.
fn valid_word(w: &str) -> bool {
    !w.is_empty()
        && w.chars().all(|c| c.is_ascii_lowercase() || c == '\'')
        && w.chars().any(|c| c.is_ascii_lowercase())
}

// ---------------------------------------------------------------- grammar text

/// "a | b | c" with duplicates removed, order kept.
fn alts<S: AsRef<str>>(items: &[S]) -> String {
    let mut seen = HashSet::new();
    items
        .iter()
        .map(|s| s.as_ref())
        .filter(|s| !s.trim().is_empty() && seen.insert(s.to_string()))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `x [x [x ...]]` with `n` copies, the first one required; `sep` goes
/// before each optional copy (e.g. "[and | then] ").
fn bounded_repeat(item: &str, n: usize, sep: &str) -> String {
    let mut tail = String::new();
    for _ in 1..n {
        tail = format!(" [{sep}{item}{tail}]");
    }
    format!("{item}{tail}")
}

/// Normalises stop words: lowercase, words of [a-z'] only, duplicates dropped.
fn normalise_stops(stop_words: &[String]) -> Vec<Vec<String>> {
    let mut seen = HashSet::new();
    let mut out: Vec<Vec<String>> = stop_words
        .iter()
        .map(|s| {
            s.split_whitespace()
                .map(|w| w.to_lowercase().replace('’', "'"))
                .collect::<Vec<_>>()
        })
        .filter(|ws| {
            !ws.is_empty()
                && ws
                    .iter()
                    .all(|w| valid_word(w) && !RESERVED.contains(&w.as_str()))
        })
        .filter(|ws| seen.insert(ws.join(" ")))
        .collect();
    // Longest first so "stop it" wins over "stop".
    out.sort_by_key(|ws| std::cmp::Reverse(ws.len()));
    out
}

fn key_alternatives() -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = NAMED_KEYS
        .iter()
        .map(|(s, k)| (s.to_string(), k.to_string()))
        .collect();
    for (n, name) in ONES.iter().enumerate().take(13).skip(1) {
        keys.push((format!("f {name}"), format!("f{n}")));
    }
    for c in 'a'..='z' {
        keys.push((c.to_string(), c.to_string()));
    }
    for (d, name) in ONES.iter().enumerate().take(10) {
        keys.push((name.to_string(), d.to_string()));
    }
    keys
}

/// Builds the grammar for `mode` from the screen labels and the stop words.
pub fn build(labels: &[String], stop_words: &[String], mode: Mode) -> Grammar {
    let stops = normalise_stops(stop_words);
    let stop_alts: Vec<String> = stops.iter().map(|s| s.join(" ")).collect();

    // Spoken form -> first label with that form.
    let mut label_map: HashMap<String, String> = HashMap::new();
    let mut label_alts: Vec<String> = Vec::new();
    let mut max_label_words = 0;
    let mut twords: BTreeSet<String> = BTreeSet::new();
    if mode == Mode::Commands {
        for label in labels {
            for form in spoken_forms(label) {
                let key = form.join(" ");
                if !label_map.contains_key(&key) {
                    max_label_words = max_label_words.max(form.len());
                    label_map.insert(key.clone(), label.clone());
                    label_alts.push(key);
                }
                twords.extend(form);
            }
        }
        twords.extend(ONES.iter().map(|s| s.to_string()));
        twords.insert("twenty".to_string());
        twords.extend(TYPE_WORDS.iter().map(|s| s.to_string()));
    }

    let mut rules: Vec<(&str, String)> = Vec::new();
    let utterance = match mode {
        Mode::Commands => {
            let has_labels = !label_alts.is_empty();
            if has_labels {
                rules.push(("label", alts(&label_alts)));
            }
            let mods: Vec<&str> = MODS.iter().map(|(s, _)| *s).collect();
            rules.push(("mod", alts(&mods)));
            let keys: Vec<String> = key_alternatives().into_iter().map(|(s, _)| s).collect();
            rules.push(("key", alts(&keys)));
            rules.push(("small_number", alts(&ONES[1..=10])));
            let tw: Vec<&String> = twords.iter().collect();
            rules.push(("tword", alts(&tw)));
            let mut command: Vec<String> = Vec::new();
            if has_labels {
                command.push("click <label>".into());
                command.push("double click <label>".into());
                command.push("right click <label>".into());
                command.push("open <label> [then <label>]".into());
            }
            command.push("press [<mod>] [<mod>] <key>".into());
            command.push(format!("scroll ({}) [<small_number>]", alts(&DIRECTIONS)));
            if has_labels {
                command.push("wait for <label>".into());
            }
            rules.push(("command", alts(&command)));
            let mut control = stop_alts.clone();
            // Not "sleep" alone: pink noise was heard as it (2 in 208 noisy utterances), and
            // a listener that falls asleep by itself hears nothing more.
            control.extend(["go to sleep", "wake up"].map(String::from));
            rules.push(("control", alts(&control)));
            // Typing is a sentence of its own: chained, its open word list absorbed other
            // speech as commands (measured: most out-of-grammar sentences became "type …").
            format!(
                "{} | type {} | <control>",
                bounded_repeat("<command>", 4, "[and | then] "),
                bounded_repeat("<tword>", 4, "")
            )
        }
        Mode::Confirm => {
            rules.push(("yes", alts(YES)));
            rules.push(("no", alts(NO)));
            if stop_alts.is_empty() {
                "<yes> | <no>".to_string()
            } else {
                rules.push(("stop", alts(&stop_alts)));
                "<yes> | <no> | <stop>".to_string()
            }
        }
        Mode::Asleep | Mode::StopOnly => {
            let stop_tokens: HashSet<&str> = stops.iter().flatten().map(|s| s.as_str()).collect();
            let filler: Vec<&str> = FILLER_WORDS
                .iter()
                .copied()
                .filter(|w| !stop_tokens.contains(w) && *w != "wake")
                .collect();
            rules.push(("filler", alts(&filler)));
            let mut top: Vec<String> = Vec::new();
            if mode == Mode::Asleep {
                top.push("wake up".into());
            }
            if !stop_alts.is_empty() {
                rules.push(("stop", alts(&stop_alts)));
                top.push("<stop>".into());
            }
            top.push(bounded_repeat("<filler>", 6, ""));
            top.join(" | ")
        }
    };

    let mut jsgf = String::from("#JSGF V1.0;\ngrammar voxdesk;\n");
    for (name, body) in &rules {
        jsgf.push_str(&format!("<{name}> = {body};\n"));
    }
    jsgf.push_str(&format!("public <utterance> = {utterance};\n"));

    // Every word token of every rule body.
    let mut words: BTreeSet<String> = BTreeSet::new();
    for body in rules
        .iter()
        .map(|(_, b)| b.as_str())
        .chain([utterance.as_str()])
    {
        let mut in_ref = false;
        let mut cur = String::new();
        for c in body.chars().chain([' ']) {
            match c {
                '<' => in_ref = true,
                '>' => in_ref = false,
                'a'..='z' | '\'' if !in_ref => {
                    cur.push(c);
                    continue;
                }
                _ => {}
            }
            if !cur.is_empty() {
                words.insert(std::mem::take(&mut cur));
            }
        }
    }

    Grammar {
        jsgf,
        words: words.into_iter().collect(),
        mode,
        labels: label_map,
        max_label_words,
        stops,
        twords: twords.into_iter().collect(),
    }
}

// ---------------------------------------------------------------- interpreting

/// Words of a hypothesis: lowercased, `(N)` markers stripped, fillers dropped.
fn clean_hypothesis(hyp: &str) -> Vec<String> {
    hyp.split_whitespace()
        .filter(|t| {
            let wrapped = |a: char, b: char| t.starts_with(a) && t.ends_with(b);
            let plus = t.len() >= 4 && t.starts_with("++") && t.ends_with("++");
            !(wrapped('<', '>') || wrapped('[', ']') || plus)
        })
        .map(|t| {
            let t = t.to_lowercase();
            match t.find('(') {
                Some(p) if t.ends_with(')') && p > 0 => t[..p].to_string(),
                _ => t,
            }
        })
        .filter(|t| !t.is_empty())
        .collect()
}

fn is_seq(t: &[String], words: &[&str]) -> bool {
    t.len() == words.len() && t.iter().zip(words).all(|(a, b)| a == b)
}

fn phrase_is(t: &[String], phrases: &[&str]) -> bool {
    let joined = t.join(" ");
    phrases.contains(&joined.as_str())
}

impl Grammar {
    /// The screen's labels as they are said (for reading a transcript by sound).
    pub fn label_forms(&self) -> Vec<String> {
        let mut v: Vec<String> = self.labels.keys().cloned().collect();
        v.sort();
        v
    }

    /// The keys as they are said after "press" (without modifiers).
    pub fn key_forms(&self) -> Vec<String> {
        if self.mode != Mode::Commands {
            return Vec::new();
        }
        key_alternatives().into_iter().map(|(s, _)| s).collect()
    }

    /// Whole sentences of their own: stop words, sleep and wake; yes and no when confirming.
    pub fn control_forms(&self) -> Vec<String> {
        let mut v: Vec<String> = self.stops.iter().map(|s| s.join(" ")).collect();
        match self.mode {
            Mode::Commands => v.extend(["go to sleep", "wake up"].map(String::from)),
            Mode::Confirm => v.extend(YES.iter().chain(NO).map(|s| s.to_string())),
            _ => {}
        }
        v
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Reads a recognised hypothesis back; never guesses from a partial parse.
    pub fn interpret(&self, hyp: &str) -> Heard {
        let t = clean_hypothesis(hyp);
        if t.is_empty() {
            return Heard::Nothing;
        }
        match self.mode {
            Mode::Commands => {
                if let Some(s) = self.stop_inside(&t) {
                    return Heard::Stop(s);
                }
                if is_seq(&t, &["go", "to", "sleep"]) {
                    return Heard::Sleep;
                }
                if is_seq(&t, &["wake", "up"]) {
                    return Heard::Wake;
                }
                match self.parse_commands(&t, 1) {
                    Some(steps) => Heard::Command(steps.join(", ")),
                    None => Heard::Nothing,
                }
            }
            Mode::Confirm => {
                if let Some(s) = self.stop_inside(&t) {
                    Heard::Stop(s)
                } else if phrase_is(&t, YES) {
                    Heard::Yes
                } else if phrase_is(&t, NO) {
                    Heard::No
                } else {
                    Heard::Nothing
                }
            }
            Mode::Asleep | Mode::StopOnly => {
                if let Some(s) = self.all_stops(&t) {
                    Heard::Stop(s)
                } else if self.mode == Mode::Asleep && is_seq(&t, &["wake", "up"]) {
                    Heard::Wake
                } else {
                    Heard::Nothing
                }
            }
        }
    }

    /// The first stop word found anywhere in `t`.
    fn stop_inside(&self, t: &[String]) -> Option<String> {
        (0..t.len()).find_map(|i| {
            self.stops
                .iter()
                .find(|s| t[i..].starts_with(s))
                .map(|s| s.join(" "))
        })
    }

    /// Some(first stop word) when `t` is made only of stop words.
    fn all_stops(&self, t: &[String]) -> Option<String> {
        fn covers(stops: &[Vec<String>], t: &[String]) -> bool {
            t.is_empty()
                || stops
                    .iter()
                    .any(|s| t.starts_with(s) && covers(stops, &t[s.len()..]))
        }
        self.stops
            .iter()
            .find(|s| t.starts_with(s) && covers(&self.stops, &t[s.len()..]))
            .map(|s| s.join(" "))
    }

    /// Labels whose spoken form starts `t`, longest first: (label, words used).
    fn labels_at(&self, t: &[String]) -> Vec<(String, usize)> {
        (1..=self.max_label_words.min(t.len()))
            .rev()
            .filter_map(|n| self.labels.get(&t[..n].join(" ")).map(|l| (l.clone(), n)))
            .collect()
    }

    /// Parses a bounded sequence of commands covering all of `t`.
    fn parse_commands(&self, t: &[String], count: usize) -> Option<Vec<String>> {
        for (step, used) in self.command_candidates(t) {
            let rest = &t[used..];
            if rest.is_empty() {
                return Some(vec![step]);
            }
            if count >= 4 {
                continue;
            }
            let mut tails: Vec<&[String]> = Vec::new();
            if rest[0] == "and" || rest[0] == "then" {
                tails.push(&rest[1..]);
            }
            tails.push(rest);
            for tail in tails {
                if let Some(more) = self.parse_commands(tail, count + 1) {
                    let mut steps = vec![step];
                    steps.extend(more);
                    return Some(steps);
                }
            }
        }
        None
    }

    /// Every way one command can start `t`, preferred (longest) first.
    fn command_candidates(&self, t: &[String]) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let w = |i: usize| t.get(i).map(String::as_str).unwrap_or("");
        match w(0) {
            "click" => {
                for (l, n) in self.labels_at(&t[1..]) {
                    out.push((format!("click {l}"), 1 + n));
                }
            }
            "double" | "right" if w(1) == "click" => {
                let verb = if w(0) == "double" {
                    "double-click"
                } else {
                    "right-click"
                };
                for (l, n) in self.labels_at(&t[2..]) {
                    out.push((format!("{verb} {l}"), 2 + n));
                }
            }
            "open" => {
                for (l, n) in self.labels_at(&t[1..]) {
                    if w(1 + n) == "then" {
                        for (l2, n2) in self.labels_at(&t[2 + n..]) {
                            out.push((format!("open {l} then {l2}"), 2 + n + n2));
                        }
                    }
                    out.push((format!("open {l}"), 1 + n));
                }
            }
            "wait" if w(1) == "for" => {
                for (l, n) in self.labels_at(&t[2..]) {
                    out.push((format!("wait for {l}"), 2 + n));
                }
            }
            "press" => out.extend(self.press_candidates(&t[1..])),
            "scroll" if DIRECTIONS.contains(&w(1)) => {
                if let Some(n) = ONES[1..=10].iter().position(|s| *s == w(2)) {
                    out.push((format!("scroll {} {}", w(1), n + 1), 3));
                }
                out.push((format!("scroll {}", w(1)), 2));
            }
            "type" => {
                // A sentence of its own: every word after "type" is the text.
                let n = t[1..]
                    .iter()
                    .take(4)
                    .take_while(|x| self.twords.contains(*x))
                    .count();
                if n >= 1 && n + 1 == t.len() {
                    out.push((format!("type \"{}\"", t[1..].join(" ")), t.len()));
                }
            }
            _ => {}
        }
        out
    }

    /// `press [<mod>] [<mod>] <key>` after the word "press".
    fn press_candidates(&self, t: &[String]) -> Vec<(String, usize)> {
        let keys = key_alternatives();
        let mut out = Vec::new();
        let mut mods: Vec<&str> = Vec::new();
        for m in 0..=2 {
            if m > 0 {
                match t.get(m - 1).and_then(|x| MODS.iter().find(|(s, _)| s == x)) {
                    Some((_, name)) => mods.push(name),
                    None => break,
                }
            }
            let rest = &t[m..];
            let mut found: Vec<(String, usize)> = keys
                .iter()
                .filter_map(|(spoken, name)| {
                    let sw: Vec<&str> = spoken.split(' ').collect();
                    let hit = rest.len() >= sw.len() && rest.iter().zip(&sw).all(|(a, b)| a == b);
                    hit.then(|| (name.clone(), sw.len()))
                })
                .collect();
            found.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            for (key, n) in found {
                let mut combo: Vec<&str> = Vec::new();
                for md in &mods {
                    if !combo.contains(md) {
                        combo.push(md);
                    }
                }
                combo.push(&key);
                out.push((format!("press {}", combo.join("+")), 1 + m + n));
            }
        }
        // More words used first.
        out.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        out
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn dictation_is_word_for_word_with_punctuation_said_by_name() {
        let cases = [
            ("meet me at seven.", "meet me at seven"),
            (
                "Meet me comma at the station period",
                "Meet me, at the station.",
            ),
            ("first line new line second line", "first line\nsecond line"),
            ("is it ready question mark", "is it ready?"),
            ("", ""),
        ];
        for (said, want) in cases {
            assert_eq!(dictated(said), want, "{said:?}");
        }
        let g = build(&["+".into(), "OK".into()], &["stop".into()], Mode::Commands);
        assert_eq!(
            g.interpret_transcript("Type meet me at seven."),
            Heard::Command("type \"meet me at seven\"".into())
        );
        // A stop word said while dictating is a stop, never typed.
        assert_eq!(
            g.interpret_transcript("Type stop the machine."),
            Heard::Stop("stop".into())
        );
        assert_eq!(g.interpret_transcript("Type."), Heard::Nothing);
        assert_eq!(
            g.interpret_transcript("Click plus."),
            Heard::Command("click +".into())
        );
    }

    #[test]
    fn a_written_transcript_is_read_as_the_words_said() {
        let cases = [
            ("Click plus.", "click plus"),
            ("Click +", "click plus"),
            ("Click 7.", "click seven"),
            ("Double-click invoice.pdf!", "double click invoice dot pdf"),
            ("Stop.", "stop"),
            ("  ", ""),
        ];
        for (said, want) in cases {
            assert_eq!(words_of(said), want, "{said:?}");
        }
        // What the old recogniser got wrong, read back against a calculator's keys.
        let g = build(
            &["+".into(), "not".into(), "7".into(), "AC".into()],
            &["stop".into()],
            Mode::Commands,
        );
        assert_eq!(
            g.interpret(&words_of("Click plus.")),
            Heard::Command("click +".into())
        );
        assert_eq!(
            g.interpret(&words_of("Click not.")),
            Heard::Command("click not".into())
        );
        assert_eq!(g.interpret(&words_of("Stop.")), Heard::Stop("stop".into()));
        assert_eq!(
            g.interpret(&words_of("What is the weather like today?")),
            Heard::Nothing
        );
    }

    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn stops() -> Vec<String> {
        s(&["stop", "cancel"])
    }

    const CALC: &[&str] = &[
        "AC", "CE", "7", "8", "9", "÷", "4", "5", "6", "×", "1", "2", "3", "-", "0", ".", "=", "+",
        "√", "π", "1/x", "x²", "%", "±", "(", ")",
    ];

    // ------------------------------------------------------------ JSGF checker

    /// Parses an alternative list; Err on empty alternatives or bad nesting.
    fn parse_expr(toks: &[String], i: &mut usize, refs: &mut Vec<String>) -> Result<(), String> {
        loop {
            let mut items = 0;
            while *i < toks.len() {
                let t = toks[*i].as_str();
                match t {
                    "|" | ")" | "]" => break,
                    "(" | "[" => {
                        *i += 1;
                        parse_expr(toks, i, refs)?;
                        let close = if t == "(" { ")" } else { "]" };
                        if toks.get(*i).map(String::as_str) != Some(close) {
                            return Err(format!("expected {close} at {i}"));
                        }
                    }
                    _ if t.starts_with('<') && t.ends_with('>') => {
                        refs.push(t[1..t.len() - 1].to_string())
                    }
                    _ => {
                        if !valid_word(t) {
                            return Err(format!("bad token {t:?}"));
                        }
                    }
                }
                items += 1;
                *i += 1;
            }
            if items == 0 {
                return Err("empty alternative".into());
            }
            if toks.get(*i).map(String::as_str) == Some("|") {
                *i += 1;
            } else {
                return Ok(());
            }
        }
    }

    fn lex(body: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        for c in body.chars() {
            if "()[]|".contains(c) || c.is_whitespace() {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if !c.is_whitespace() {
                    out.push(c.to_string());
                }
            } else {
                cur.push(c);
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// Checks the JSGF text; returns the words found in rule bodies.
    fn check_jsgf(g: &Grammar, mode: Mode) -> BTreeSet<String> {
        let mut lines = g.jsgf.lines();
        assert_eq!(lines.next(), Some("#JSGF V1.0;"));
        assert_eq!(lines.next(), Some("grammar voxdesk;"));
        let mut defined = HashSet::new();
        let mut refs = Vec::new();
        let mut publics = 0;
        let mut words = BTreeSet::new();
        for line in lines {
            let (head, body) = line.split_once(" = ").expect("rule line");
            let body = body.strip_suffix(';').expect("ends with ;");
            assert!(!body.contains(';'), "{line}");
            let name = head.strip_prefix("public ").map_or(head, |h| {
                publics += 1;
                h
            });
            assert!(name.starts_with('<') && name.ends_with('>'), "{line}");
            assert!(
                defined.insert(name[1..name.len() - 1].to_string()),
                "dup {name}"
            );
            if mode == Mode::Commands {
                assert!(!body.contains('+') && !body.contains('*'), "{line}");
            }
            let toks = lex(body);
            let mut i = 0;
            parse_expr(&toks, &mut i, &mut refs).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(i, toks.len(), "trailing tokens: {line}");
            words.extend(toks.into_iter().filter(|t| valid_word(t)));
        }
        assert_eq!(publics, 1);
        for r in refs {
            assert!(defined.contains(&r), "undefined <{r}>");
        }
        // The word list is exactly the words used, sorted and distinct.
        let listed: Vec<String> = words.iter().cloned().collect();
        assert_eq!(g.words, listed);
        for w in &g.words {
            assert!(valid_word(w), "{w}");
        }
        words
    }

    // ------------------------------------------------------------ spoken forms

    #[test]
    fn spoken_forms_table() {
        let cases: &[(&str, &[&[&str]])] = &[
            ("AC", &[&["a", "c"], &["ac"]]),
            ("CE", &[&["c", "e"], &["ce"]]),
            ("INV", &[&["i", "n", "v"], &["inv"]]),
            ("7", &[&["seven"]]),
            ("0", &[&["zero"]]),
            ("+", &[&["plus"]]),
            ("=", &[&["equals"], &["equal"]]),
            ("÷", &[&["divided", "by"], &["divide"]]),
            ("/", &[&["divided", "by"], &["divide"]]),
            ("×", &[&["times"]]),
            ("−", &[&["minus"]]),
            ("√", &[&["square", "root"]]),
            ("π", &[&["pi"]]),
            ("1/x", &[&["one", "over", "x"]]),
            ("x²", &[&["x", "squared"]]),
            ("x^2", &[&["x", "squared"]]),
            ("±", &[&["plus", "minus"]]),
            ("(", &[&["open", "paren"], &["left", "paren"]]),
            ("Save As…", &[&["save", "as"]]),
            ("File", &[&["file"]]),
            ("Downloads", &[&["downloads"]]),
            (
                "invoice.pdf",
                &[
                    &["invoice", "dot", "p", "d", "f"],
                    &["invoice", "dot", "pdf"],
                ],
            ),
            ("my_file", &[&["my", "underscore", "file"], &["my", "file"]]),
            ("12", &[&["twelve"]]),
            ("100", &[&["one", "hundred"], &["one", "zero", "zero"]]),
            (
                "2024",
                &[
                    &["two", "thousand", "twenty", "four"],
                    &["two", "zero", "two", "four"],
                ],
            ),
            ("3.5", &[&["three", "point", "five"]]),
            ("123456", &[&["one", "two", "three", "four", "five", "six"]]),
            ("F5", &[&["f", "five"]]),
            ("x2", &[&["x", "two"]]),
            ("e", &[&["e"]]),
            ("Don’t Save", &[&["don't", "save"]]),
            ("Café", &[&["cafe"]]),
            ("myFile", &[&["my", "file"]]),
            ("50%", &[&["fifty", "percent"]]),
            ("(Untitled)", &[&["untitled"]]),
            ("one two three four five six seven", &[]),
            ("...", &[]),
            ("→", &[]),
            ("日本", &[]),
            ("", &[]),
        ];
        for (label, want) in cases {
            let want: Vec<Vec<String>> = want.iter().map(|f| s(f)).collect();
            assert_eq!(spoken_forms(label), want, "label {label:?}");
        }
    }

    #[test]
    fn spoken_words_are_clean() {
        for label in CALC
            .iter()
            .chain(&["Save As…", "C++ Files", "user@host", "ÄÖÜ", "v3.5.1"])
        {
            for f in spoken_forms(label) {
                assert!(
                    !f.is_empty() && f.iter().all(|w| valid_word(w)),
                    "{label}: {f:?}"
                );
            }
        }
    }

    #[test]
    fn number_words_table() {
        let cases: &[(u32, &str)] = &[
            (0, "zero"),
            (13, "thirteen"),
            (20, "twenty"),
            (45, "forty five"),
            (101, "one hundred one"),
            (1000, "one thousand"),
            (9999, "nine thousand nine hundred ninety nine"),
        ];
        for (n, want) in cases {
            assert_eq!(number_words(*n).join(" "), *want);
        }
    }

    // ------------------------------------------------------------ grammar

    #[test]
    fn every_mode_is_well_formed() {
        let many: Vec<String> = (0..250).map(|i| format!("Item {i}")).collect();
        let label_sets: Vec<Vec<String>> = vec![
            s(CALC),
            vec![],
            s(&["Downloads", "File", "Save As…", "Done", "invoice.pdf"]),
            many,
            s(&["public", "→", "", "Public Folder"]),
        ];
        let stop_sets = [stops(), vec![], s(&["stop it", "STOP", "bad-word", ""])];
        for labels in &label_sets {
            for st in &stop_sets {
                for mode in [Mode::Commands, Mode::Confirm, Mode::Asleep, Mode::StopOnly] {
                    let g = build(labels, st, mode);
                    let words = check_jsgf(&g, mode);
                    assert!(!words.contains("public"));
                }
            }
        }
    }

    #[test]
    fn empty_labels_omit_label_commands() {
        let g = build(&[], &stops(), Mode::Commands);
        check_jsgf(&g, Mode::Commands);
        assert!(!g.jsgf.contains("<label>"));
        assert!(g.jsgf.contains("press [<mod>] [<mod>] <key>"));
        assert_eq!(
            g.interpret("press enter"),
            Heard::Command("press enter".into())
        );
        assert_eq!(g.interpret("click seven"), Heard::Nothing);
    }

    #[test]
    fn commands_rule_shapes() {
        let g = build(&s(CALC), &stops(), Mode::Commands);
        let want = "public <utterance> = <command> [[and | then] <command> [[and | then] \
                    <command> [[and | then] <command>]]] | type <tword> [<tword> [<tword> \
                    [<tword>]]] | <control>;";
        assert!(g.jsgf.contains(want), "{}", g.jsgf);
        assert!(g
            .jsgf
            .contains("<control> = stop | cancel | go to sleep | wake up;"));
        assert!(g
            .jsgf
            .contains("type <tword> [<tword> [<tword> [<tword>]]]"));
        assert!(g
            .jsgf
            .contains("scroll (up | down | left | right) [<small_number>]"));
        // Duplicate labels give one alternative.
        let g = build(&s(&["7", "7", "OK", "Ok"]), &stops(), Mode::Commands);
        let line = g.jsgf.lines().find(|l| l.starts_with("<label>")).unwrap();
        assert_eq!(line, "<label> = seven | o k | ok;");
    }

    #[test]
    fn other_mode_shapes() {
        let cases: &[(Mode, &str)] = &[
            (Mode::Confirm, "public <utterance> = <yes> | <no> | <stop>;"),
            (
                Mode::Asleep,
                "public <utterance> = wake up | <stop> | <filler> [<filler> [<filler> \
                 [<filler> [<filler> [<filler>]]]]];",
            ),
            (
                Mode::StopOnly,
                "public <utterance> = <stop> | <filler> [<filler> [<filler> \
                 [<filler> [<filler> [<filler>]]]]];",
            ),
        ];
        for (mode, want) in cases {
            let g = build(&s(CALC), &stops(), *mode);
            assert!(g.jsgf.contains(want), "{mode:?}: {}", g.jsgf);
            assert!(!g.words.contains(&"seven".to_string()), "{mode:?}");
        }
        let g = build(&[], &stops(), Mode::Asleep);
        let filler = g.jsgf.lines().find(|l| l.starts_with("<filler>")).unwrap();
        assert!(filler.split(" | ").count() >= 80, "{filler}");
        assert!(!filler.contains("stop") && !filler.contains("wake"));
    }

    #[test]
    fn words_are_sorted_and_distinct() {
        let g = build(&s(CALC), &stops(), Mode::Commands);
        let mut sorted = g.words.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(g.words, sorted);
        for w in [
            "seven", "plus", "a", "c", "ac", "square", "root", "control", "page", "stop",
        ] {
            assert!(g.words.contains(&w.to_string()), "{w}");
        }
    }

    // ------------------------------------------------------------ interpret

    #[test]
    fn interpret_commands() {
        let labels = s(&[
            "7",
            "+",
            "5",
            "=",
            "Downloads",
            "File",
            "Save As…",
            "Done",
            "Save",
            "AC",
            "invoice.pdf",
            "seven",
            "Then",
        ]);
        let g = build(&labels, &stops(), Mode::Commands);
        let cases: &[(&str, Heard)] = &[
            (
                "click seven click plus click five click equals",
                Heard::Command("click 7, click +, click 5, click =".into()),
            ),
            (
                "click seven and click plus then click five click equal",
                Heard::Command("click 7, click +, click 5, click =".into()),
            ),
            (
                "double click downloads",
                Heard::Command("double-click Downloads".into()),
            ),
            (
                "right click file",
                Heard::Command("right-click File".into()),
            ),
            (
                "open file then save as",
                Heard::Command("open File then Save As…".into()),
            ),
            ("open file", Heard::Command("open File".into())),
            (
                "open file then click save",
                Heard::Command("open File, click Save".into()),
            ),
            ("click save as", Heard::Command("click Save As…".into())),
            ("click save", Heard::Command("click Save".into())),
            ("click a c", Heard::Command("click AC".into())),
            ("click ac", Heard::Command("click AC".into())),
            (
                "click invoice dot pdf",
                Heard::Command("click invoice.pdf".into()),
            ),
            ("click then", Heard::Command("click Then".into())),
            ("press control s", Heard::Command("press ctrl+s".into())),
            (
                "press control shift t",
                Heard::Command("press ctrl+shift+t".into()),
            ),
            ("press page down", Heard::Command("press pagedown".into())),
            ("press f five", Heard::Command("press f5".into())),
            ("press f", Heard::Command("press f".into())),
            ("press enter", Heard::Command("press enter".into())),
            ("press alt f four", Heard::Command("press alt+f4".into())),
            ("press seven", Heard::Command("press 7".into())),
            ("scroll down three", Heard::Command("scroll down 3".into())),
            ("scroll up", Heard::Command("scroll up".into())),
            (
                "type hello world",
                Heard::Command("type \"hello world\"".into()),
            ),
            (
                // Typing is a sentence of its own.
                "type hello world then press enter",
                Heard::Nothing,
            ),
            ("wait for done", Heard::Command("wait for Done".into())),
            (
                "type seven then",
                Heard::Command("type \"seven then\"".into()),
            ),
            (
                "<sil> click seven(2) [NOISE] </s>",
                Heard::Command("click 7".into()),
            ),
            ("  CLICK   Seven ", Heard::Command("click 7".into())),
            ("go to sleep", Heard::Sleep),
            ("sleep", Heard::Nothing),
            ("wake up", Heard::Wake),
            ("stop", Heard::Stop("stop".into())),
            ("cancel", Heard::Stop("cancel".into())),
            ("click seven stop", Heard::Stop("stop".into())),
            ("click cancel", Heard::Stop("cancel".into())),
            // Unparseable or partial: nothing.
            ("", Heard::Nothing),
            ("<sil>", Heard::Nothing),
            ("click", Heard::Nothing),
            ("click banana", Heard::Nothing),
            ("click seven banana", Heard::Nothing),
            ("seven", Heard::Nothing),
            ("press control", Heard::Nothing),
            ("scroll sideways", Heard::Nothing),
            ("type xylophone", Heard::Nothing),
            ("type", Heard::Nothing),
            ("wait done", Heard::Nothing),
            ("click seven and", Heard::Nothing),
            (
                "click seven click seven click seven click seven click seven",
                Heard::Nothing,
            ),
            ("sleep now", Heard::Nothing),
        ];
        for (hyp, want) in cases {
            assert_eq!(&g.interpret(hyp), want, "hyp {hyp:?}");
        }
    }

    #[test]
    fn first_label_wins_on_shared_form() {
        let g = build(&s(&["7", "Seven", "seven"]), &stops(), Mode::Commands);
        assert_eq!(g.interpret("click seven"), Heard::Command("click 7".into()));
        let g = build(&s(&["÷", "/"]), &stops(), Mode::Commands);
        assert_eq!(
            g.interpret("click divide"),
            Heard::Command("click ÷".into())
        );
    }

    #[test]
    fn multi_word_stop_words() {
        let g = build(&s(&["Stop"]), &s(&["stop it", "halt"]), Mode::Commands);
        let cases: &[(&str, Heard)] = &[
            ("stop it", Heard::Stop("stop it".into())),
            ("click stop it", Heard::Stop("stop it".into())),
            ("click stop", Heard::Command("click Stop".into())),
            ("halt", Heard::Stop("halt".into())),
        ];
        for (hyp, want) in cases {
            assert_eq!(&g.interpret(hyp), want, "hyp {hyp:?}");
        }
    }

    #[test]
    fn interpret_confirm() {
        let g = build(&s(CALC), &stops(), Mode::Confirm);
        let cases: &[(&str, Heard)] = &[
            ("yes", Heard::Yes),
            ("yes please", Heard::Yes),
            ("go ahead", Heard::Yes),
            ("okay", Heard::Yes),
            ("no", Heard::No),
            ("don't", Heard::No),
            ("never mind", Heard::No),
            ("stop", Heard::Stop("stop".into())),
            ("cancel", Heard::Stop("cancel".into())),
            ("click seven", Heard::Nothing),
            ("maybe", Heard::Nothing),
            ("", Heard::Nothing),
        ];
        for (hyp, want) in cases {
            assert_eq!(&g.interpret(hyp), want, "hyp {hyp:?}");
        }
    }

    #[test]
    fn interpret_asleep_and_stop_only() {
        let asleep = build(&s(CALC), &stops(), Mode::Asleep);
        let stop_only = build(&s(CALC), &stops(), Mode::StopOnly);
        let cases: &[(&str, Heard, Heard)] = &[
            ("wake up", Heard::Wake, Heard::Nothing),
            (
                "stop",
                Heard::Stop("stop".into()),
                Heard::Stop("stop".into()),
            ),
            (
                "stop stop",
                Heard::Stop("stop".into()),
                Heard::Stop("stop".into()),
            ),
            (
                "cancel stop",
                Heard::Stop("cancel".into()),
                Heard::Stop("cancel".into()),
            ),
            ("click seven", Heard::Nothing, Heard::Nothing),
            ("please stop the music", Heard::Nothing, Heard::Nothing),
            ("go to sleep", Heard::Nothing, Heard::Nothing),
            ("yes", Heard::Nothing, Heard::Nothing),
            ("", Heard::Nothing, Heard::Nothing),
        ];
        for (hyp, want_asleep, want_stop_only) in cases {
            assert_eq!(&asleep.interpret(hyp), want_asleep, "asleep {hyp:?}");
            assert_eq!(
                &stop_only.interpret(hyp),
                want_stop_only,
                "stop-only {hyp:?}"
            );
        }
    }

    #[test]
    fn many_labels_build_and_parse() {
        let labels: Vec<String> = (0..250).map(|i| format!("Item {i}")).collect();
        let g = build(&labels, &stops(), Mode::Commands);
        check_jsgf(&g, Mode::Commands);
        assert_eq!(
            g.interpret("click item two hundred forty nine"),
            Heard::Command("click Item 249".into())
        );
        assert_eq!(
            g.interpret("click item one two three then click item five"),
            Heard::Command("click Item 123, click Item 5".into())
        );
    }

    // ------------------------------------------------------------ any text

    use proptest::prelude::*;

    /// A screen label, biased to what is hard: chars whose lower case is another length ('K'
    /// KELVIN SIGN, 'İ'), letters that fold ('é') and that cannot be said ('ß', 'Ω'), combining
    /// marks, emoji, right-to-left script, the symbols with names, digits and separators.
    fn label() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            4 => prop::sample::select(vec![
                '\u{212A}', 'K', 'k', 'İ', 'ı', 'ß', 'Ω', 'é', 'É', 'ñ', '\u{301}', '\u{308}', '😀',
                '\u{200D}', 'א', 'ש', '\u{202E}', '’', '\'', '"', '.', '…', '_', '-', '+', '%', '&',
                '×', '÷', '√', 'π', '²', '^', '±', '/', '(', ')', '0', '1', '7', '9', ' ', 'a', 'x',
                'A', 'Z', 'f', 'F',
            ]),
            1 => any::<char>(),
        ];
        prop_oneof![
            6 => prop::collection::vec(ch, 0..14).prop_map(|v| v.into_iter().collect::<String>()),
            1 => prop::sample::select(WHOLE_SYMBOLS.iter().map(|(s, _)| *s).collect::<Vec<_>>())
                .prop_map(String::from),
            1 => "[0-9]{1,12}(\\.[0-9]{0,4})?",
        ]
    }

    fn mode() -> impl Strategy<Value = Mode> {
        prop::sample::select(vec![
            Mode::Commands,
            Mode::Confirm,
            Mode::Asleep,
            Mode::StopOnly,
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_label_has_clean_spoken_forms_or_none(l in label()) {
            let forms = spoken_forms(&l);
            prop_assert!(forms.len() <= 8);
            for f in &forms {
                prop_assert!(!f.is_empty() && f.len() <= 16, "{l:?}: {f:?}");
                for w in f {
                    prop_assert!(valid_word(w), "{l:?}: {w:?}");
                }
            }
        }

        #[test]
        fn any_labels_and_stop_words_make_a_well_formed_grammar(
            labels in prop::collection::vec(label(), 0..6),
            stops in prop::collection::vec(label(), 0..3),
            m in mode(),
            hyp in prop_oneof![".{0,40}", prop::collection::vec(label(), 0..6).prop_map(|v| v.join(" "))],
        ) {
            let g = build(&labels, &stops, m);
            check_jsgf(&g, m);
            // A hypothesis of any text reads as something or nothing; a command it reads as is
            // one the offline planner can be given.
            if let Heard::Command(task) = g.interpret(&hyp) {
                let _ = voxdesk_agent::offline::parse_task(&task);
            }
        }

        #[test]
        fn a_label_said_is_read_back_as_itself(l in label()) {
            let g = build(std::slice::from_ref(&l), &stops(), Mode::Commands);
            for f in spoken_forms(&l) {
                if f.iter().any(|w| w == "stop" || w == "cancel") {
                    continue;
                }
                let said = format!("click {}", f.join(" "));
                prop_assert_eq!(g.interpret(&said), Heard::Command(format!("click {l}")), "{}", said);
            }
        }
    }
}
