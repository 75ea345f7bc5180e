//! The closed set of actions and the parser that turns the `act` tool's JSON into a batch, with a precise error for every way it can be wrong.
//!
//! Parsing is by hand over `serde_json::Value` rather than derived: the model's mistakes need
//! messages that name the action and the field ("action 3: `direction` must be one of up, down,
//! left, right, got \"sideways\""), and unknown fields must be errors, not silently dropped.

use std::fmt;

use serde_json::{Map, Value};

/// Key combinations are the keys' vocabulary (`keys`); the actions name them.
pub use crate::keys::{parse_combo, Combo, Modifier};

/// Where an action lands: a target id from the observation (preferred) or a point in the pixels
/// of the picture the model saw.
#[derive(Debug, Clone, PartialEq)]
pub enum Pos {
    Target(u32),
    Point { x: f64, y: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
    Left,
    Right,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Click {
        at: Pos,
    },
    DoubleClick {
        at: Pos,
    },
    RightClick {
        at: Pos,
    },
    Type {
        text: String,
    },
    Key {
        combo: Combo,
    },
    Scroll {
        direction: Direction,
        amount: u32,
        at: Option<Pos>,
    },
    Drag {
        from: Pos,
        to: Pos,
    },
    Wait {
        ms: u64,
    },
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Click { .. } => "click",
            Action::DoubleClick { .. } => "double_click",
            Action::RightClick { .. } => "right_click",
            Action::Type { .. } => "type",
            Action::Key { .. } => "key",
            Action::Scroll { .. } => "scroll",
            Action::Drag { .. } => "drag",
            Action::Wait { .. } => "wait",
        }
    }
}

/// What should be true after the batch ran.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Expect {
    /// Text the batch makes appear: more of it on screen afterwards than before.
    pub appears: Vec<String>,
    /// Text on screen afterwards, whether or not it was before (what "wait for" waits for);
    /// text the session typed itself does not count.
    pub shows: Vec<String>,
    pub disappears: Vec<String>,
    /// The screen should change at all.
    pub changes: bool,
}

impl Expect {
    /// Nothing to check.
    pub fn is_empty(&self) -> bool {
        self.appears.is_empty()
            && self.shows.is_empty()
            && self.disappears.is_empty()
            && !self.changes
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub observation_id: Option<String>,
    pub actions: Vec<Action>,
    pub expect: Expect,
}

impl Batch {
    /// The batch as the `act` tool's arguments: what a model would send for it, and what
    /// `batch_from_value` parses back to the same batch.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        if let Some(id) = &self.observation_id {
            o.insert("observation_id".into(), Value::from(id.as_str()));
        }
        o.insert(
            "actions".into(),
            Value::Array(self.actions.iter().map(Action::to_value).collect()),
        );
        let e = &self.expect;
        if !e.is_empty() {
            let mut x = Map::new();
            if !e.appears.is_empty() {
                x.insert("appears".into(), Value::from(e.appears.clone()));
            }
            if !e.shows.is_empty() {
                x.insert("shows".into(), Value::from(e.shows.clone()));
            }
            if !e.disappears.is_empty() {
                x.insert("disappears".into(), Value::from(e.disappears.clone()));
            }
            if e.changes {
                x.insert("changes".into(), Value::Bool(true));
            }
            o.insert("expect".into(), Value::Object(x));
        }
        Value::Object(o)
    }
}

impl Action {
    /// One entry of the `act` tool's `actions`.
    pub fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("action".into(), Value::from(self.name()));
        fn put_pos(o: &mut Map<String, Value>, p: &Pos) {
            match p {
                Pos::Target(id) => {
                    o.insert("target".into(), Value::from(*id));
                }
                Pos::Point { x, y } => {
                    o.insert("x".into(), Value::from(*x));
                    o.insert("y".into(), Value::from(*y));
                }
            }
        }
        let pos_obj = |p: &Pos| {
            let mut m = Map::new();
            put_pos(&mut m, p);
            Value::Object(m)
        };
        match self {
            Action::Click { at } | Action::DoubleClick { at } | Action::RightClick { at } => {
                put_pos(&mut o, at)
            }
            Action::Type { text } => {
                o.insert("text".into(), Value::from(text.as_str()));
            }
            Action::Key { combo } => {
                o.insert("combo".into(), Value::from(combo.to_string()));
            }
            Action::Scroll {
                direction,
                amount,
                at,
            } => {
                let d = match direction {
                    Direction::Up => "up",
                    Direction::Down => "down",
                    Direction::Left => "left",
                    Direction::Right => "right",
                };
                o.insert("direction".into(), Value::from(d));
                o.insert("amount".into(), Value::from(*amount));
                if let Some(at) = at {
                    put_pos(&mut o, at);
                }
            }
            Action::Drag { from, to } => {
                o.insert("from".into(), pos_obj(from));
                o.insert("to".into(), pos_obj(to));
            }
            Action::Wait { ms } => {
                o.insert("ms".into(), Value::from(*ms));
            }
        }
        Value::Object(o)
    }
}

/// Why a batch could not be parsed. `action` is 1-based, as a person counts.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub action: Option<usize>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.action {
            Some(n) => write!(f, "action {n}: {}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for ParseError {}

fn err(action: Option<usize>, message: impl Into<String>) -> ParseError {
    ParseError {
        action,
        message: message.into(),
    }
}

/// Largest batch the parser accepts at all; the rails refuse far earlier (ceiling 20). This only
/// bounds the work done on absurd input.
const PARSE_LIMIT: usize = 1000;

/// Parse the `act` tool's arguments.
pub fn parse_batch(json: &str) -> Result<Batch, ParseError> {
    let v: Value =
        serde_json::from_str(json).map_err(|e| err(None, format!("not valid JSON: {e}")))?;
    batch_from_value(&v)
}

pub fn batch_from_value(v: &Value) -> Result<Batch, ParseError> {
    let obj = v.as_object().ok_or_else(|| {
        err(
            None,
            format!("expected an object with `actions`, got {}", kind(v)),
        )
    })?;
    only_keys(obj, &["observation_id", "actions", "expect"], None)?;
    let observation_id = match obj.get("observation_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(other) => {
            return Err(err(
                None,
                format!(
                    "`observation_id` must be a non-empty string, got {}",
                    kind(other)
                ),
            ))
        }
    };
    let actions = obj
        .get("actions")
        .ok_or_else(|| err(None, "`actions` is missing"))?;
    let actions = actions.as_array().ok_or_else(|| {
        err(
            None,
            format!("`actions` must be an array, got {}", kind(actions)),
        )
    })?;
    if actions.is_empty() {
        return Err(err(None, "`actions` is empty"));
    }
    if actions.len() > PARSE_LIMIT {
        return Err(err(
            None,
            format!(
                "`actions` has {} entries; nothing near that many is ever allowed",
                actions.len()
            ),
        ));
    }
    let actions = actions
        .iter()
        .enumerate()
        .map(|(i, a)| parse_action(a, i + 1))
        .collect::<Result<Vec<_>, _>>()?;
    let expect = match obj.get("expect") {
        None | Some(Value::Null) => Expect::default(),
        Some(e) => parse_expect(e)?,
    };
    Ok(Batch {
        observation_id,
        actions,
        expect,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn only_keys(
    obj: &Map<String, Value>,
    allowed: &[&str],
    action: Option<usize>,
) -> Result<(), ParseError> {
    for k in obj.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(err(
                action,
                format!("unknown field `{k}` (allowed: {})", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

fn parse_expect(v: &Value) -> Result<Expect, ParseError> {
    let obj = v
        .as_object()
        .ok_or_else(|| err(None, format!("`expect` must be an object, got {}", kind(v))))?;
    only_keys(obj, &["appears", "shows", "disappears", "changes"], None)?;
    let strings = |key: &str| -> Result<Vec<String>, ParseError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str().map(String::from).ok_or_else(|| {
                        err(
                            None,
                            format!("`expect.{key}` must hold strings, got {}", kind(x)),
                        )
                    })
                })
                .collect(),
            Some(other) => Err(err(
                None,
                format!(
                    "`expect.{key}` must be a string or an array of strings, got {}",
                    kind(other)
                ),
            )),
        }
    };
    let changes = match obj.get("changes") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(err(
                None,
                format!(
                    "`expect.changes` must be true or false, got {}",
                    kind(other)
                ),
            ))
        }
    };
    Ok(Expect {
        appears: strings("appears")?,
        shows: strings("shows")?,
        disappears: strings("disappears")?,
        changes,
    })
}

fn parse_action(v: &Value, n: usize) -> Result<Action, ParseError> {
    let a = Some(n);
    let obj = v
        .as_object()
        .ok_or_else(|| err(a, format!("expected an object, got {}", kind(v))))?;
    let name = match obj.get("action") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(err(
                a,
                format!("`action` must be a string, got {}", kind(other)),
            ))
        }
        None => return Err(err(a, "`action` is missing")),
    };
    let pos_keys = ["action", "target", "x", "y"];
    Ok(match name {
        "click" | "double_click" | "right_click" => {
            only_keys(obj, &pos_keys, a)?;
            let at = pos(obj, a)?.ok_or_else(|| err(a, "needs `target` (an id) or `x` and `y`"))?;
            match name {
                "click" => Action::Click { at },
                "double_click" => Action::DoubleClick { at },
                _ => Action::RightClick { at },
            }
        }
        "type" => {
            only_keys(obj, &["action", "text"], a)?;
            let text = obj.get("text").ok_or_else(|| err(a, "`text` is missing"))?;
            let text = text.as_str().ok_or_else(|| err(a, format!("`text` must be a string, got {}", kind(text))))?;
            if text.is_empty() {
                return Err(err(a, "`text` is empty"));
            }
            Action::Type { text: text.to_string() }
        }
        "key" => {
            only_keys(obj, &["action", "combo"], a)?;
            let c = obj.get("combo").ok_or_else(|| err(a, "`combo` is missing"))?;
            let c = c.as_str().ok_or_else(|| err(a, format!("`combo` must be a string like \"ctrl+s\", got {}", kind(c))))?;
            Action::Key { combo: parse_combo(c).map_err(|m| err(a, m))? }
        }
        "scroll" => {
            only_keys(obj, &["action", "direction", "amount", "target", "x", "y"], a)?;
            let d = obj.get("direction").ok_or_else(|| err(a, "`direction` is missing"))?;
            let direction = match d.as_str() {
                Some("up") => Direction::Up,
                Some("down") => Direction::Down,
                Some("left") => Direction::Left,
                Some("right") => Direction::Right,
                _ => return Err(err(a, format!("`direction` must be one of up, down, left, right, got {d}"))),
            };
            let amount = match obj.get("amount") {
                None => 1,
                Some(v) => uint(v, "amount", a)? as u32,
            };
            if amount == 0 {
                return Err(err(a, "`amount` must be at least 1"));
            }
            Action::Scroll { direction, amount, at: pos(obj, a)? }
        }
        "drag" => {
            only_keys(obj, &["action", "from", "to"], a)?;
            let end = |key: &str| -> Result<Pos, ParseError> {
                let v = obj.get(key).ok_or_else(|| err(a, format!("`{key}` is missing")))?;
                let o = v.as_object().ok_or_else(|| err(a, format!("`{key}` must be an object with `target` or `x` and `y`, got {}", kind(v))))?;
                only_keys(o, &["target", "x", "y"], a)?;
                pos(o, a)?.ok_or_else(|| err(a, format!("`{key}` needs `target` or `x` and `y`")))
            };
            Action::Drag { from: end("from")?, to: end("to")? }
        }
        "wait" => {
            only_keys(obj, &["action", "ms"], a)?;
            let ms = obj.get("ms").ok_or_else(|| err(a, "`ms` is missing"))?;
            Action::Wait { ms: uint(ms, "ms", a)? }
        }
        other => return Err(err(a, format!("unknown action {other:?} (one of click, double_click, right_click, type, key, scroll, drag, wait)"))),
    })
}

fn uint(v: &Value, key: &str, a: Option<usize>) -> Result<u64, ParseError> {
    match v.as_u64() {
        Some(n) if n <= u32::MAX as u64 => Ok(n),
        _ => Err(err(
            a,
            format!("`{key}` must be a non-negative whole number, got {v}"),
        )),
    }
}

/// `target` xor (`x` and `y`); `Ok(None)` when none is given.
fn pos(obj: &Map<String, Value>, a: Option<usize>) -> Result<Option<Pos>, ParseError> {
    let (t, x, y) = (obj.get("target"), obj.get("x"), obj.get("y"));
    match (t, x, y) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            Err(err(a, "give either `target` or `x`/`y`, not both"))
        }
        (Some(t), None, None) => {
            let id = t
                .as_u64()
                .filter(|&n| n >= 1 && n <= u32::MAX as u64)
                .ok_or_else(|| {
                    err(
                        a,
                        format!("`target` must be a target id (a whole number ≥ 1), got {t}"),
                    )
                })?;
            Ok(Some(Pos::Target(id as u32)))
        }
        (None, Some(x), Some(y)) => {
            let num = |v: &Value, k: &str| {
                v.as_f64()
                    .filter(|f| f.is_finite())
                    .ok_or_else(|| err(a, format!("`{k}` must be a number, got {v}")))
            };
            Ok(Some(Pos::Point {
                x: num(x, "x")?,
                y: num(y, "y")?,
            }))
        }
        (None, Some(_), None) => Err(err(a, "`x` given without `y`")),
        (None, None, Some(_)) => Err(err(a, "`y` given without `x`")),
        (None, None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn to_value_is_what_parses_back_to_the_same_batch() {
        let text = r#"{"observation_id":"obs-1","actions":[
                {"action":"click","target":12},
                {"action":"double_click","x":100.5,"y":20},
                {"action":"type","text":"hello \"world\""},
                {"action":"key","combo":"Ctrl+Shift+S"},
                {"action":"scroll","direction":"left","amount":3,"target":4},
                {"action":"scroll","direction":"up","amount":1},
                {"action":"drag","from":{"target":1},"to":{"x":5,"y":6}},
                {"action":"wait","ms":500},
                {"action":"right_click","target":2}],
              "expect":{"appears":["Saved","Done"],"disappears":"Save as","changes":true}}"#;
        let b = parse_batch(text).unwrap();
        let v = b.to_value();
        assert_eq!(batch_from_value(&v).unwrap(), b);
        assert_eq!(v["actions"][3]["combo"], "ctrl+shift+s");
        assert_eq!(
            v["actions"][0],
            serde_json::json!({"action":"click","target":12})
        );
        // Nothing expected: no `expect` key at all.
        let b = parse_batch(r#"{"actions":[{"action":"wait","ms":1}]}"#).unwrap();
        assert_eq!(
            b.to_value(),
            serde_json::json!({"actions":[{"action":"wait","ms":1}]})
        );
    }

    #[test]
    fn a_full_batch_parses() {
        let b = parse_batch(
            r#"{"observation_id":"obs-1","actions":[
                {"action":"click","target":12},
                {"action":"double_click","x":100.5,"y":20},
                {"action":"type","text":"hello"},
                {"action":"key","combo":"Ctrl+Shift+S"},
                {"action":"scroll","direction":"down","amount":3,"target":4},
                {"action":"drag","from":{"target":1},"to":{"x":5,"y":6}},
                {"action":"wait","ms":500},
                {"action":"right_click","target":2}],
              "expect":{"appears":"Saved","changes":true}}"#,
        )
        .unwrap();
        assert_eq!(b.observation_id.as_deref(), Some("obs-1"));
        assert_eq!(b.actions.len(), 8);
        assert_eq!(
            b.actions[3],
            Action::Key {
                combo: Combo {
                    modifiers: vec![Modifier::Ctrl, Modifier::Shift],
                    key: "s".into()
                }
            }
        );
        assert_eq!(
            b.actions[5],
            Action::Drag {
                from: Pos::Target(1),
                to: Pos::Point { x: 5.0, y: 6.0 }
            }
        );
        assert_eq!(
            b.expect,
            Expect {
                appears: vec!["Saved".into()],
                shows: vec![],
                disappears: vec![],
                changes: true
            }
        );
    }

    #[test]
    fn table_of_precise_errors() {
        let cases = [
            ("[]", "expected an object with `actions`, got an array"),
            (r#"{"actions":[]}"#, "`actions` is empty"),
            (
                r#"{"actions":[{"action":"click"}]}"#,
                "action 1: needs `target` (an id) or `x` and `y`",
            ),
            (
                r#"{"actions":[{"action":"wait","ms":1},{"action":"fly"}]}"#,
                "action 2: unknown action \"fly\"",
            ),
            (
                r#"{"actions":[{"action":"click","target":0}]}"#,
                "action 1: `target` must be a target id",
            ),
            (
                r#"{"actions":[{"action":"click","target":3,"x":1,"y":2}]}"#,
                "action 1: give either `target` or `x`/`y`, not both",
            ),
            (
                r#"{"actions":[{"action":"scroll","direction":"sideways"}]}"#,
                "action 1: `direction` must be one of up, down, left, right, got \"sideways\"",
            ),
            (
                r#"{"actions":[{"action":"scroll","direction":"up","amount":-2}]}"#,
                "action 1: `amount` must be a non-negative whole number, got -2",
            ),
            (
                r#"{"actions":[{"action":"key","combo":"ctrl+hyper+x"}]}"#,
                "action 1: `combo` \"ctrl+hyper+x\": \"hyper\" is not a modifier",
            ),
            (
                r#"{"actions":[{"action":"type","text":"a","delay":3}]}"#,
                "action 1: unknown field `delay`",
            ),
            (
                r#"{"actions":[{"action":"wait"}]}"#,
                "action 1: `ms` is missing",
            ),
            (
                r#"{"actions":[{"action":"click","x":1}]}"#,
                "action 1: `x` given without `y`",
            ),
            (
                r#"{"actions":[{"action":"click","target":1}],"expect":{"appear":"x"}}"#,
                "unknown field `appear`",
            ),
            ("{", "not valid JSON"),
        ];
        for (json, want) in cases {
            let e = parse_batch(json).unwrap_err().to_string();
            assert!(e.starts_with(want), "{json}\n  got: {e}\n want: {want}");
        }
    }

    #[test]
    fn combos() {
        assert_eq!(parse_combo("Return").unwrap().to_string(), "enter");
        assert_eq!(parse_combo("alt+F4").unwrap().to_string(), "alt+f4");
        assert_eq!(
            parse_combo("ctrl+alt+Del").unwrap().to_string(),
            "ctrl+alt+delete"
        );
        assert_eq!(
            parse_combo("shift+ctrl+a").unwrap().to_string(),
            "ctrl+shift+a"
        );
        assert_eq!(parse_combo("ctrl++").unwrap().to_string(), "ctrl+plus");
        assert_eq!(parse_combo("+").unwrap().to_string(), "plus");
        assert_eq!(parse_combo(" ").unwrap().to_string(), "space");
        assert_eq!(parse_combo("Shift").unwrap().to_string(), "shift");
        assert!(parse_combo("ctrl+").is_err());
        assert!(parse_combo("f25").is_err());
        assert!(parse_combo("").is_err());
        // A control character is the key it is, or refused: never a raw character to send.
        for (raw, name) in [
            ("ctrl+alt+\u{7f}", "ctrl+alt+delete"),
            ("ctrl+alt+\u{1b}", "ctrl+alt+escape"),
            ("ctrl+\u{8}", "ctrl+backspace"),
            ("\r", "enter"),
            ("\n", "enter"),
            ("shift+\t", "shift+tab"),
        ] {
            assert_eq!(parse_combo(raw).unwrap().to_string(), name, "{raw:?}");
        }
        for bad in ["ctrl+\u{3}", "\u{0}", "alt+\u{202e}"] {
            let e = parse_combo(bad).unwrap_err();
            assert!(e.contains("control character"), "{bad:?}: {e}");
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            prop_oneof![
                Just("click"),
                Just("type"),
                Just("scroll"),
                Just("drag"),
                Just("key"),
                Just("wait"),
                Just("up"),
                Just("ctrl+s"),
                Just("")
            ]
            .prop_map(|s| Value::String(s.into())),
            ".{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("action"),
                        Just("actions"),
                        Just("target"),
                        Just("x"),
                        Just("y"),
                        Just("text"),
                        Just("combo"),
                        Just("direction"),
                        Just("amount"),
                        Just("ms"),
                        Just("from"),
                        Just("to"),
                        Just("expect"),
                        Just("observation_id")
                    ]
                    .prop_map(String::from),
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Arbitrary JSON in: an error or a valid batch out, never a panic.
        #[test]
        fn arbitrary_json_never_panics(v in json_value()) {
            match batch_from_value(&v) {
                Ok(b) => {
                    prop_assert!(!b.actions.is_empty());
                    prop_assert_eq!(batch_from_value(&b.to_value()).unwrap(), b);
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }

        #[test]
        fn arbitrary_text_never_panics(s in ".{0,200}") {
            let _ = parse_batch(&s);
            let _ = parse_combo(&s);
        }
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    /// A value where a field's value goes: right-looking ones and hostile ones (ids past u32,
    /// negative, fractional, huge, text whose lower case is another length).
    fn field() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            prop::sample::select(vec![
                0u64,
                1,
                3,
                500,
                u64::from(u32::MAX),
                u64::from(u32::MAX) + 1,
                u64::MAX,
            ])
            .prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop::sample::select(vec![-1.0, 0.5, 100.5, 1e30, -1e308, f64::MAX])
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            prop::sample::select(vec![
                "",
                "up",
                "down",
                "left",
                "right",
                "sideways",
                "ctrl+s",
                "Ctrl+Shift+S",
                "ctrl++",
                "++",
                "+",
                "plus",
                "F24",
                "f25",
                "f0",
                "\u{212A}",
                "ctrl+\u{212A}",
                "İ",
                "alt+İ",
                "e\u{301}",
                "😀",
                "ctrl+😀",
                "א",
                "hello",
                "obs-1",
            ])
            .prop_map(|s| Value::String(s.into())),
            ".{0,10}".prop_map(Value::String),
            prop::collection::vec(".{0,4}".prop_map(Value::String), 0..3).prop_map(Value::Array),
        ]
    }

    /// A position object or something near it.
    fn place() -> impl Strategy<Value = Value> {
        prop::collection::vec(
            (prop::sample::select(vec!["target", "x", "y", "z"]), field()),
            0..4,
        )
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()))
    }

    /// One entry of `actions`: a known or unknown name, and any of the fields, right or not.
    fn action() -> impl Strategy<Value = Value> {
        let name = prop_oneof![
            4 => prop::sample::select(vec![
                "click", "double_click", "right_click", "type", "key", "scroll", "drag", "wait",
            ])
            .prop_map(Value::from),
            1 => field(),
        ];
        let fields = prop::collection::vec(
            (
                prop::sample::select(vec![
                    "target",
                    "x",
                    "y",
                    "text",
                    "combo",
                    "direction",
                    "amount",
                    "ms",
                    "from",
                    "to",
                    "extra",
                ]),
                prop_oneof![3 => field(), 1 => place()],
            ),
            0..5,
        );
        (prop::option::weighted(0.95, name), fields).prop_map(|(name, kv)| {
            let mut o: Map<String, Value> =
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            if let Some(n) = name {
                o.insert("action".into(), n);
            }
            Value::Object(o)
        })
    }

    /// Arguments shaped like the `act` tool's, any part of them wrong.
    fn batch() -> impl Strategy<Value = Value> {
        let expect = prop::collection::vec(
            (
                prop::sample::select(vec!["appears", "shows", "disappears", "changes", "other"]),
                field(),
            ),
            0..4,
        )
        .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()));
        (
            prop::option::of(field()),
            prop_oneof![
                6 => prop::collection::vec(action(), 0..6).prop_map(Value::Array),
                1 => field(),
            ],
            prop::option::of(prop_oneof![expect, field()]),
        )
            .prop_map(|(id, actions, expect)| {
                let mut o = Map::new();
                if let Some(id) = id {
                    o.insert("observation_id".into(), id);
                }
                o.insert("actions".into(), actions);
                if let Some(e) = expect {
                    o.insert("expect".into(), e);
                }
                Value::Object(o)
            })
    }

    /// `b` has a key action whose combo does not print as text `parse_combo` reads back
    /// ("plus" parses to the key "+", which prints as "+", which does not parse).
    fn has_unprintable_combo(b: &Batch) -> bool {
        b.actions
            .iter()
            .any(|a| matches!(a, Action::Key { combo } if parse_combo(&combo.to_string()).is_err()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn a_batch_shaped_value_is_a_batch_or_an_error_never_a_panic(v in batch()) {
            match batch_from_value(&v) {
                Ok(b) => {
                    prop_assert!(!b.actions.is_empty());
                    if !has_unprintable_combo(&b) {
                        prop_assert_eq!(batch_from_value(&b.to_value()).unwrap(), b);
                    }
                }
                Err(e) => {
                    prop_assert!(!e.message.is_empty());
                    let n = v["actions"].as_array().map_or(0, Vec::len);
                    prop_assert!(e.action.is_none_or(|a| (1..=n).contains(&a)), "{e}");
                }
            }
        }

        #[test]
        fn batch_text_cut_anywhere_is_never_a_panic(
            v in batch(),
            cut in any::<prop::sample::Index>(),
        ) {
            let text = v.to_string();
            let cut = text
                .char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .nth(cut.index(text.chars().count() + 1))
                .unwrap_or(text.len());
            let whole = parse_batch(&text);
            prop_assert_eq!(&whole, &batch_from_value(&v));
            let _ = parse_batch(&text[..cut]);
        }

        #[test]
        fn any_combo_text_is_a_combo_or_an_error_never_a_panic(
            s in prop_oneof![
                ".{0,16}",
                "((ctrl|alt|shift|super|Ctrl|\u{212A}|İ|\\+| )\\+?){0,4}(f[0-9]{1,3}|[a-z]|plus|\\+|\u{212A}|İ|😀)?",
            ],
        ) {
            if let Ok(c) = parse_combo(&s) {
                prop_assert!(!c.key.is_empty());
                prop_assert!(c.modifiers.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }
}
