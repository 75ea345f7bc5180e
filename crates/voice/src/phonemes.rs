//! Pronunciations for words the recogniser's dictionary lacks (pure): espeak-ng's phoneme mnemonics mapped to the CMU phones pocketsphinx uses, and a letter-by-letter fallback.
//!
//! The caller runs `espeak-ng -q -x -v en-us` itself (words on one line, or one word per
//! line on stdin; espeak prints one line per input line, but punctuation also splits lines
//! and it sometimes joins or splits words, e.g. "of the" → `VvD'@2`). Nothing here spawns
//! a process. Measured with espeak-ng 1.51 on ~600 cmudict words (every 200th entry):
//! 63% map to exactly one of cmudict's pronunciations, mean phone edit distance 0.55.

/// espeak-ng (en-us) phoneme mnemonics and the CMU phones they become.
/// Tried longest first. Choices were tuned against cmudict (see the module docs).
const PHONES: &[(&str, &str)] = &[
    // r-coloured vowels and diphthongs with schwa
    ("i@3r", "IH R"),
    ("i@3", "IH R"),
    ("i@r", "IH R"),
    ("e@r", "EH R"),
    ("A@r", "AA R"),
    ("o@r", "AO R"),
    ("O@r", "AO R"),
    ("U@r", "UH R"),
    ("aI@", "AY AH"),
    ("aI3", "AY ER"),
    ("aU@", "AW ER"),
    ("aU3", "AW ER"),
    ("OI@", "OY AH"),
    ("3r-", "ER"),
    ("I2;", "IY"),
    ("I;", "IY"),
    ("i@", "IY AH"),
    ("e@", "EH R"),
    ("A@", "AA R"),
    ("o@", "AO R"),
    ("O@", "AO R"),
    ("U@", "UH R"),
    ("I@", "IH AH"),
    // unstressed "yu" as in calculator
    ("jU", "Y AH"),
    // diphthongs
    ("aI", "AY"),
    ("aU", "AW"),
    ("eI", "EY"),
    ("oU", "OW"),
    ("OI", "OY"),
    // long and marked vowels
    ("3:", "ER"),
    ("i:", "IY"),
    ("u:", "UW"),
    ("A:", "AA"),
    ("O:", "AO"),
    ("O2", "AO"),
    ("I2", "IH"),
    ("I#", "IH"),
    ("@2", "AH"),
    ("@5", "AH"),
    ("@L", "AH L"),
    ("a#", "AH"),
    ("aa", "AE"),
    ("E2", "EH"),
    // consonant clusters and variants
    ("tS", "CH"),
    ("dZ", "JH"),
    ("t#", "T"),
    ("t2", "T"),
    ("d#", "D"),
    ("r-", "R"),
    ("n-", "AH N"),
    ("m-", "AH M"),
    ("l-", "AH L"),
    ("l/2", "L"),
    ("l#", "L"),
    ("A~", "AA"),
    ("?n-", "T AH N"),
    // single vowels
    ("@", "AH"),
    ("3", "ER"),
    ("I", "IH"),
    ("i", "IY"),
    ("E", "EH"),
    ("e", "EH"),
    ("a", "AE"),
    ("A", "AA"),
    ("0", "AA"),
    ("O", "AO"),
    ("o", "OW"),
    ("V", "AH"),
    ("U", "UH"),
    ("u", "UW"),
    // single consonants
    ("b", "B"),
    ("d", "D"),
    ("f", "F"),
    ("g", "G"),
    ("h", "HH"),
    ("j", "Y"),
    ("k", "K"),
    ("l", "L"),
    ("L", "AH L"),
    ("m", "M"),
    ("n", "N"),
    ("N", "NG"),
    ("p", "P"),
    ("r", "R"),
    ("s", "S"),
    ("t", "T"),
    ("v", "V"),
    ("w", "W"),
    ("x", "K"),
    ("z", "Z"),
    ("D", "DH"),
    ("T", "TH"),
    ("S", "SH"),
    ("Z", "ZH"),
    ("?", "T"),
];

/// Longest mnemonic in `PHONES`, in characters.
const MAX_TOKEN: usize = 4;

/// Marks that carry no phone: stress, syllable breaks, palatalisation, nasalisation,
/// separators, and stray modifiers (`:` `#` `2`) left over after a known phoneme.
fn is_ignorable(c: char) -> bool {
    matches!(
        c,
        '\'' | ',' | '%' | '=' | '-' | ';' | '|' | '~' | ':' | '#' | '2'
    ) || c.is_whitespace()
}

/// One espeak-ng `-x -v en-us` word transcription → space-separated CMU phones.
/// None if it is empty or holds anything unmapped (e.g. a `(fr)` language switch).
pub fn arpabet(espeak: &str) -> Option<String> {
    let chars: Vec<char> = espeak.trim().chars().collect();
    let mut out: Vec<&'static str> = Vec::new();
    let mut i = 0;
    'outer: while i < chars.len() {
        let c = chars[i];
        if c == '_' {
            // pause: `_`, `_:`, `_!`, `_^` ...
            i += 1;
            while i < chars.len() && matches!(chars[i], ':' | '!' | '^' | '_') {
                i += 1;
            }
            continue;
        }
        for len in (1..=MAX_TOKEN.min(chars.len() - i)).rev() {
            let tok: String = chars[i..i + len].iter().collect();
            if let Some(&(_, ph)) = PHONES.iter().find(|(k, _)| *k == tok) {
                out.extend(ph.split_whitespace());
                i += len;
                continue 'outer;
            }
        }
        if is_ignorable(c) {
            i += 1;
            continue;
        }
        return None;
    }
    // espeak writes a linking r after r-coloured schwa ("3r-"): ER R → ER.
    out.dedup_by(|b, a| *a == "ER" && *b == "R");
    if out.is_empty() {
        None
    } else {
        Some(out.join(" "))
    }
}

/// Pairs each input word with its transcription from one espeak-ng output line
/// (give espeak the words without punctuation). If the word counts differ, every
/// transcription is None (never a wrong pairing); a word whose transcription will not
/// map gets None on its own.
pub fn parse_espeak_line(words: &[&str], line: &str) -> Vec<(String, Option<String>)> {
    let parts: Vec<&str> = line.split_whitespace().collect();
    if parts.len() != words.len() {
        return words.iter().map(|w| (w.to_string(), None)).collect();
    }
    words
        .iter()
        .zip(parts)
        .map(|(w, p)| (w.to_string(), arpabet(p)))
        .collect()
}

/// CMU letter names, A..Z.
const LETTER_NAMES: [&str; 26] = [
    "EY",
    "B IY",
    "S IY",
    "D IY",
    "IY",
    "EH F",
    "JH IY",
    "EY CH",
    "AY",
    "JH EY",
    "K EY",
    "EH L",
    "EH M",
    "EH N",
    "OW",
    "P IY",
    "K Y UW",
    "AA R",
    "EH S",
    "T IY",
    "Y UW",
    "V IY",
    "D AH B AH L Y UW",
    "EH K S",
    "W AY",
    "Z IY",
];

/// Digit names 0..9, so labels like "mp3" can still be spelt.
const DIGIT_NAMES: [&str; 10] = [
    "Z IH R OW",
    "W AH N",
    "T UW",
    "TH R IY",
    "F AO R",
    "F AY V",
    "S IH K S",
    "S EH V AH N",
    "EY T",
    "N AY N",
];

/// Fallback when espeak-ng is absent: spell the word letter by letter.
/// ASCII letters and digits are spelt; other characters (`-`, `.`, `_`) are skipped.
/// None if nothing is spellable or a non-ASCII letter appears.
pub fn letters(word: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for c in word.chars() {
        if c.is_ascii_alphabetic() {
            out.push(LETTER_NAMES[(c.to_ascii_lowercase() as u8 - b'a') as usize]);
        } else if c.is_ascii_digit() {
            out.push(DIGIT_NAMES[(c as u8 - b'0') as usize]);
        } else if c.is_alphanumeric() {
            return None;
        }
    }
    if out.is_empty() {
        None
    } else {
        Some(out.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Option<String> {
        arpabet(s)
    }

    // espeak-ng 1.51 `-q -x -v en-us` output, checked against cmudict where listed.
    #[test]
    fn espeak_words() {
        let cases = [
            ("d'aUnloUdz", "D AW N L OW D Z"),              // downloads
            ("k'alkjUl,eIt#3", "K AE L K Y AH L EY T ER"),  // calculator
            ("s'Ev@n", "S EH V AH N"),                      // seven
            ("'i:kw@Lz", "IY K W AH L Z"),                  // equals
            ("'Eksk'alk", "EH K S K AE L K"),               // xcalc
            ("m'aUspad", "M AW S P AE D"),                  // mousepad
            ("v'0ksdEsk", "V AA K S D EH S K"),             // voxdesk
            ("p,i:s'i:m'anf@m", "P IY S IY M AE N F AH M"), // pcmanfm
            ("'InvOIs", "IH N V OY S"),                     // invoice
            ("s'Et#INz", "S EH T IH NG Z"),                 // settings
            ("k'0?n-", "K AA T AH N"),                      // cotton
            ("3r'eId", "ER EY D"),                          // arrayed
            ("'aU3", "AW ER"),                              // hour
            ("'aNg3r-IN", "AE NG G ER IH NG"),              // angering
            ("f'aI3f0ks", "F AY ER F AA K S"),              // firefox
            ("T'Vnd3b,3:d", "TH AH N D ER B ER D"),         // thunderbird
            ("a#b'0lISI#z", "AH B AA L IH SH IH Z"),        // abolishes
            ("a#br'i:vI2;,eIt", "AH B R IY V IY EY T"),     // abbreviate
            ("dZ'u:dI#k,eIt", "JH UW D IH K EY T"),         // adjudicate, minus the first syllable
            ("'e@w@IN", "EH R W AH IH NG"),                 // airwing
            ("tS'Ild", "CH IH L D"),                        // child
            ("h'i@3", "HH IH R"),                           // here
            ("D@2", "DH AH"),                               // the
        ];
        for (espeak, want) in cases {
            assert_eq!(a(espeak).as_deref(), Some(want), "{espeak}");
        }
    }

    #[test]
    fn marks_and_pauses_dropped() {
        assert_eq!(a("_:h@l'oU_!").as_deref(), Some("HH AH L OW"));
        assert_eq!(a("w'i::").as_deref(), Some("W IY"));
        assert_eq!(a("  d'0g \n").as_deref(), Some("D AA G"));
    }

    #[test]
    fn unmappable_or_empty() {
        assert_eq!(a(""), None);
        assert_eq!(a("'_:"), None);
        assert_eq!(a("(fr)bOÊ(en)"), None);
        assert_eq!(a("k'Q"), None);
    }

    #[test]
    fn every_output_phone_is_cmu() {
        const CMU: [&str; 39] = [
            "AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G",
            "HH", "IH", "IY", "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T",
            "TH", "UH", "UW", "V", "W", "Y", "Z", "ZH",
        ];
        for (tok, ph) in PHONES {
            assert!(tok.chars().count() <= MAX_TOKEN, "{tok}");
            for p in ph.split_whitespace() {
                assert!(CMU.contains(&p), "{tok} -> {p}");
            }
        }
        for name in LETTER_NAMES.iter().chain(DIGIT_NAMES.iter()) {
            for p in name.split_whitespace() {
                assert!(CMU.contains(&p), "{name}");
            }
        }
    }

    #[test]
    fn parse_line_pairs_words() {
        let words = [
            "Downloads",
            "calculator",
            "seven",
            "equals",
            "xcalc",
            "mousepad",
        ];
        let line = "d'aUnloUdz k'alkjUl,eIt#3 s'Ev@n 'i:kw@Lz 'Eksk'alk m'aUspad\n";
        let got = parse_espeak_line(&words, line);
        assert_eq!(got.len(), 6);
        assert_eq!(
            got[0],
            ("Downloads".to_string(), Some("D AW N L OW D Z".to_string()))
        );
        assert_eq!(got[5].1.as_deref(), Some("M AW S P AE D"));
    }

    #[test]
    fn parse_line_count_mismatch_gives_none() {
        // espeak joins "of the" into one word.
        let got = parse_espeak_line(&["of", "the"], "VvD'@2");
        assert_eq!(
            got,
            vec![("of".to_string(), None), ("the".to_string(), None)]
        );
        let got = parse_espeak_line(&["lunchrooms"], "l'VntS ru:mz");
        assert_eq!(got, vec![("lunchrooms".to_string(), None)]);
        assert!(parse_espeak_line(&[], "").is_empty());
    }

    #[test]
    fn parse_line_keeps_unmappable_word_alone() {
        let got = parse_espeak_line(&["one", "two"], "w'Vn (fr)t'u");
        assert_eq!(got[0].1.as_deref(), Some("W AH N"));
        assert_eq!(got[1].1, None);
    }

    #[test]
    fn spelled_letters() {
        assert_eq!(
            letters("xcalc").as_deref(),
            Some("EH K S S IY EY EH L S IY")
        );
        assert_eq!(letters("W").as_deref(), Some("D AH B AH L Y UW"));
        assert_eq!(letters("Qz").as_deref(), Some("K Y UW Z IY"));
        assert_eq!(letters("mp3").as_deref(), Some("EH M P IY TH R IY"));
        assert_eq!(
            letters("x-term").as_deref(),
            Some("EH K S T IY IY AA R EH M")
        );
        assert_eq!(letters(""), None);
        assert_eq!(letters("--"), None);
        assert_eq!(letters("café"), None);
    }
}
