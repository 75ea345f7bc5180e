//! xcalc in the font it falls back to on a machine without xfonts-base (its `8x13` missing): every keypad key is read as its own label, in its place in the grid.

use crate::util::*;

/// How a key's label is judged.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Key {
    /// Read exactly as this text, once, in its place in the grid.
    Read(&'static str),
    /// A target of its own in its place, read as no other key's label: the hairline URW Gothic
    /// still defeats Tesseract on these letters ("ln" as "In", "shl" as "shi", "C" as "c").
    Own(&'static str),
    /// Not asserted: Tesseract's English model cannot spell it (no "²", "√" or "^"), or reads
    /// the hairline glyphs as no label ("(", ")", "+/-").
    Unread(&'static str),
}
use Key::*;

/// xcalc's keypad (the TI-30 layout it starts in), row by row.
const KEYPAD: [[Key; 5]; 11] = [
    [
        Own("1/x"),
        Unread("x²"),
        Unread("√"),
        Read("CE/C"),
        Read("AC"),
    ],
    [
        Read("INV"),
        Read("sin"),
        Read("cos"),
        Read("tan"),
        Read("DRG"),
    ],
    [Read("e"), Read("EE"), Read("log"), Own("ln"), Unread("y^x")],
    [
        Read("not"),
        Read("and"),
        Read("or"),
        Read("xor"),
        Own("trunc"),
    ],
    [
        Read("π"),
        Read("x!"),
        Unread("("),
        Unread(")"),
        Read("base"),
    ],
    [Own("shl"), Read("D"), Read("E"), Read("F"), Read("shr")],
    [Read("mod"), Read("A"), Read("B"), Own("C"), Read("÷")],
    [Read("STO"), Read("7"), Read("8"), Read("9"), Read("*")],
    [Read("RCL"), Read("4"), Read("5"), Read("6"), Read("-")],
    [Read("SUM"), Read("1"), Read("2"), Read("3"), Read("+")],
    [
        Read("EXC"),
        Read("0"),
        Unread("."),
        Unread("+/-"),
        Read("="),
    ],
];

#[test]
fn xcalc_keypad_in_its_fallback_font_is_read_key_by_key() {
    let Some(_rig) = rig() else { return };
    // The font path Xvfb is left with when xfonts-base is missing: the Type1 fonts (from
    // fonts-urw-base35, which also draws xcalc's "√", "π" and "÷") and the server's built-ins.
    // Without the misc fonts xcalc cannot load "8x13" and falls back to a 17 px URW Gothic,
    // rendered unsmoothed with 1 px strokes; this stays so once xfonts-base is installed.
    let x = PrivateX::start(&["-fp", "/usr/share/fonts/X11/Type1,built-ins"], true);
    let (_calc, stderr) = app_with_stderr(
        &x.display,
        &["xcalc", "-geometry", "360x480+200+150"],
        "XCalc",
    );
    assert!(
        stderr.contains("Cannot convert string \"8x13\""),
        "xcalc did not fall back from 8x13, the test would not test the fallback: {stderr}"
    );
    let o = output(bin().env("DISPLAY", &x.display).args(["look", "--json"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The keypad: below the display, inside the window placed at (200,150) 360x480.
    let keys: Vec<(String, i64, i64)> = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let (x, y, w, h) = screen_box(&v, t);
            (
                t["text"].as_str().unwrap().to_string(),
                x + w / 2,
                y + h / 2,
            )
        })
        .filter(|(_, x, y)| (200..560).contains(x) && (255..645).contains(y))
        .collect();
    let texts: Vec<&str> = keys.iter().map(|k| k.0.as_str()).collect();
    // Every key read exactly: once, and at the place its row and column put it.
    let mut at = std::collections::HashMap::new();
    for (r, row) in KEYPAD.iter().enumerate() {
        for (c, key) in row.iter().enumerate() {
            if let Read(label) = key {
                let hits: Vec<_> = keys.iter().filter(|k| k.0 == *label).collect();
                assert_eq!(
                    hits.len(),
                    1,
                    "key {label:?} found {} times among {texts:?}",
                    hits.len()
                );
                at.insert((r, c), (hits[0].1, hits[0].2));
            }
        }
    }
    let median = |mut v: Vec<i64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let col_x: Vec<i64> = (0..5)
        .map(|c| {
            median(
                at.iter()
                    .filter(|(k, _)| k.1 == c)
                    .map(|(_, p)| p.0)
                    .collect(),
            )
        })
        .collect();
    let row_y: Vec<i64> = (0..11)
        .map(|r| {
            median(
                at.iter()
                    .filter(|(k, _)| k.0 == r)
                    .map(|(_, p)| p.1)
                    .collect(),
            )
        })
        .collect();
    assert!(
        col_x.windows(2).all(|w| w[0] + 40 < w[1]) && row_y.windows(2).all(|w| w[0] + 25 < w[1]),
        "the keys read do not form xcalc's grid: columns {col_x:?}, rows {row_y:?}"
    );
    for ((r, c), (x, y)) in &at {
        assert!(
            (x - col_x[*c]).abs() <= 12 && (y - row_y[*r]).abs() <= 6,
            "{:?} at ({x}, {y}) is out of its place in the grid",
            KEYPAD[*r][*c]
        );
    }
    // The rest: a target of its own in its key, read as no other key.
    let read: Vec<&str> = KEYPAD
        .iter()
        .flatten()
        .filter_map(|k| match k {
            Read(l) => Some(*l),
            _ => None,
        })
        .collect();
    for (r, row) in KEYPAD.iter().enumerate() {
        for (c, key) in row.iter().enumerate() {
            if let Own(label) = key {
                let here: Vec<_> = keys
                    .iter()
                    .filter(|k| (k.1 - col_x[c]).abs() <= 25 && (k.2 - row_y[r]).abs() <= 8)
                    .collect();
                assert_eq!(here.len(), 1, "key {label:?}: targets {here:?}");
                assert!(
                    !read.contains(&here[0].0.as_str()),
                    "key {label:?} read as another key's label: {here:?}"
                );
            }
        }
    }
}
