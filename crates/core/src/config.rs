//! Settings: defaults, then `config.toml`, then environment, then flags — every key validated, every value remembering where it came from.
//!
//! An unknown key or a bad value is an error that names the key: a typo in a safety setting must
//! never silently leave the default in force.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::action::{parse_combo, Combo};
use crate::geometry::Rect;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Perceive, plan and record what would be done; touch nothing.
    Observe,
    /// Show the planned batch and wait for a yes.
    Confirm,
    Auto,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "observe" => Ok(Mode::Observe),
            "confirm" => Ok(Mode::Confirm),
            "auto" => Ok(Mode::Auto),
            other => Err(format!(
                "must be one of observe, confirm, auto, got {other:?}"
            )),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Observe => "observe",
            Mode::Confirm => "confirm",
            Mode::Auto => "auto",
        })
    }
}

/// The ceiling on actions per batch, whatever the config says.
pub const MAX_ACTIONS_CEILING: u32 = 20;

#[derive(Debug, Clone, PartialEq)]
pub struct Rails {
    pub mode: Mode,
    pub max_actions: u32,
    pub rate_limit_ms: u64,
    pub max_failures: u32,
    pub forbidden_combos: Vec<Combo>,
    /// Rectangles in screen (logical) pixels.
    pub forbidden_regions: Vec<Rect>,
    pub allow_destructive: bool,
    /// WM_CLASS names, compared case-insensitively. Empty: nothing is allowed.
    pub allow_apps: Vec<String>,
    pub terminals: Vec<String>,
}

impl Rails {
    /// Is `app` (a WM_CLASS) one of the terminals (case-insensitive)?
    pub fn is_terminal(&self, app: &str) -> bool {
        self.terminals.iter().any(|t| t.eq_ignore_ascii_case(app))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub combo: Combo,
    pub hold_ms: u64,
}

/// The realtime models: which model each provider uses and where it is reached (none by
/// default: voxdesk picks no model for you), and the words that halt actions when spoken.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Realtime {
    pub gemini_model: Option<String>,
    pub openai_model: Option<String>,
    pub gemini_url: Option<String>,
    pub openai_url: Option<String>,
    /// Gemini's API version (v1alpha, v1beta, v1); none: the profile's (v1beta).
    pub gemini_version: Option<String>,
    pub stop_words: Vec<String>,
    /// How long an unreachable model is retried, in ms (none: the session's own default).
    pub give_up_ms: Option<u64>,
}

/// The voice's knobs: the microphone, the listener's cleaning and rejection, the offline
/// recogniser's model. Each can also come from its environment variable (`VOXDESK_MIC`, …).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Voice {
    /// An input device other than the default.
    pub mic: Option<String>,
    /// Clean the recogniser's audio with RNNoise (off only to measure what cleaning brings).
    pub denoise: bool,
    /// Cancel voxdesk's own voice from the microphone (WebRTC's AEC3) before anything hears it.
    /// Off by default: measured on the virtual sound card, it made barge-in slower (65 → 87 ms
    /// without echo, 123 → 162 ms with its voice looped in at −10 dB) and no fewer false
    /// barge-ins than the level guard alone.
    pub echo_cancel: bool,
    /// Reject a command heard with less confidence than this (none: the listener's own).
    pub reject_below: Option<f64>,
    /// Write each utterance heard as a WAV into this directory (for developers).
    pub dump_dir: Option<PathBuf>,
    /// pocketsphinx's model directory (none: Debian's `pocketsphinx-en-us`).
    pub sphinx_model: Option<PathBuf>,
    /// Extra pocketsphinx flags, whitespace-separated.
    pub sphinx_args: Vec<String>,
    /// Hear commands and answers with the learned recogniser (Moonshine, from the models
    /// directory) instead of pocketsphinx's grammar (on: measured to act wrongly half as
    /// often; pocketsphinx still hears when the models are missing).
    pub learned: bool,
}

/// Perception's knobs.
#[derive(Debug, Clone, PartialEq)]
pub struct Perception {
    /// Write every strip handed to Tesseract into this directory (for developers).
    pub debug_dir: Option<PathBuf>,
    /// Read the focused window's accessibility tree and fuse it with OCR (off: OCR alone).
    pub accessibility: bool,
    /// Time budget of one read of the tree; past it the observation says it is partial.
    pub tree_budget_ms: u64,
    /// What finds and reads text in the pixels: "tesseract" (the pixel rules and Tesseract) or
    /// "learned" (PP-OCRv6 from the models directory).
    pub reader: Reader,
}

/// What finds and reads text in the pixels (`perception.reader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    Tesseract,
    Learned,
}

impl Reader {
    pub fn parse(s: &str) -> Result<Reader, String> {
        match s {
            "tesseract" => Ok(Reader::Tesseract),
            "learned" => Ok(Reader::Learned),
            o => Err(format!("is not a reader ({o}): tesseract or learned")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Reader::Tesseract => "tesseract",
            Reader::Learned => "learned",
        }
    }
}

impl Default for Perception {
    fn default() -> Self {
        Perception {
            debug_dir: None,
            accessibility: true,
            tree_budget_ms: 400,
            reader: Reader::Tesseract,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub rails: Rails,
    pub stop: Stop,
    pub realtime: Realtime,
    pub voice: Voice,
    pub perception: Perception,
    pub lock_lease_ms: u64,
    /// The learned models and ONNX Runtime (none: `$XDG_DATA_HOME/voxdesk/models`, where
    /// `cargo xtask models` installs them).
    pub models_dir: Option<PathBuf>,
    /// Keep a screenshot of every step in the session record (the desktop as it was: private).
    pub record_screenshots: bool,
    /// Give turn-based (text) models the screen's picture beside its targets as text: off
    /// unless the deployment is known to see pictures (some local servers silently drop them).
    pub text_pictures: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Default,
    File,
    Env,
    Flag,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Default => "default",
            Source::File => "file",
            Source::Env => "env",
            Source::Flag => "flag",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not valid TOML: {message}")]
    Toml { path: String, message: String },
    #[error("{origin}: unknown key `{key}` (known keys: {known})")]
    UnknownKey {
        origin: String,
        key: String,
        known: String,
    },
    #[error("{origin}: `{key}` {message}")]
    BadValue {
        origin: String,
        key: String,
        message: String,
    },
}

pub const TERMINALS: &[&str] = &[
    "xterm",
    "uxterm",
    "gnome-terminal",
    "gnome-terminal-server",
    "konsole",
    "alacritty",
    "kitty",
    "wezterm",
    "org.wezfurlong.wezterm",
    "xfce4-terminal",
    "terminator",
    "tilix",
    "urxvt",
    "rxvt",
    "st",
    "st-256color",
    "foot",
    "lxterminal",
    "mate-terminal",
    "qterminal",
    "terminology",
    "sakura",
    "guake",
    "tilda",
    "yakuake",
    "cool-retro-term",
    "hyper",
    "ghostty",
    "com.mitchellh.ghostty",
];

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rails: Rails {
                mode: Mode::Observe,
                max_actions: 10,
                rate_limit_ms: 100,
                max_failures: 3,
                forbidden_combos: vec![
                    parse_combo("alt+f4").expect("valid"),
                    parse_combo("ctrl+alt+delete").expect("valid"),
                ],
                forbidden_regions: Vec::new(),
                allow_destructive: false,
                allow_apps: Vec::new(),
                terminals: TERMINALS.iter().map(|s| s.to_string()).collect(),
            },
            stop: Stop {
                combo: parse_combo("ctrl+alt+escape").expect("valid"),
                hold_ms: 300,
            },
            realtime: Realtime {
                stop_words: vec!["stop".into(), "cancel".into()],
                ..Realtime::default()
            },
            voice: Voice {
                denoise: true,
                echo_cancel: false,
                learned: true,
                ..Voice::default()
            },
            perception: Perception::default(),
            lock_lease_ms: 5000,
            models_dir: None,
            record_screenshots: true,
            text_pictures: false,
        }
    }
}

/// Effective settings plus where each key's value came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub settings: Settings,
    pub sources: BTreeMap<&'static str, Source>,
    /// For a key set by the environment, the variable's name (shown by `voxdesk config`).
    pub env_names: BTreeMap<&'static str, &'static str>,
    pub file: Option<PathBuf>,
}

/// Every key, in the order `voxdesk config` prints them.
pub const KEYS: &[&str] = &[
    "rails.mode",
    "rails.max_actions",
    "rails.rate_limit_ms",
    "rails.max_failures",
    "rails.forbidden_combos",
    "rails.forbidden_regions",
    "rails.allow_destructive",
    "rails.allow_apps",
    "rails.terminals",
    "stop.combo",
    "stop.hold_ms",
    "lock.lease_ms",
    "models.dir",
    "record.screenshots",
    "text.pictures",
    "realtime.gemini_model",
    "realtime.openai_model",
    "realtime.gemini_url",
    "realtime.openai_url",
    "realtime.gemini_version",
    "realtime.stop_words",
    "realtime.give_up_ms",
    "voice.mic",
    "voice.denoise",
    "voice.echo_cancel",
    "voice.reject_below",
    "voice.dump_dir",
    "voice.sphinx_model",
    "voice.sphinx_args",
    "voice.learned",
    "perception.debug_dir",
    "perception.accessibility",
    "perception.tree_budget_ms",
    "perception.reader",
];

/// The environment variables read (once, by the binary that calls `load`), and their keys.
pub const ENV: &[(&str, &str)] = &[
    ("VOXDESK_MODE", "rails.mode"),
    ("VOXDESK_ALLOW_APPS", "rails.allow_apps"),
    ("VOXDESK_RECORD_SCREENSHOTS", "record.screenshots"),
    ("VOXDESK_TEXT_PICTURES", "text.pictures"),
    ("VOXDESK_REALTIME_GIVE_UP_MS", "realtime.give_up_ms"),
    ("VOXDESK_MIC", "voice.mic"),
    ("VOXDESK_DENOISE", "voice.denoise"),
    ("VOXDESK_ECHO_CANCEL", "voice.echo_cancel"),
    ("VOXDESK_REJECT_BELOW", "voice.reject_below"),
    ("VOXDESK_LISTEN_DUMP", "voice.dump_dir"),
    ("VOXDESK_SPHINX_MODEL", "voice.sphinx_model"),
    ("VOXDESK_SPHINX_ARGS", "voice.sphinx_args"),
    ("VOXDESK_LEARNED_EARS", "voice.learned"),
    ("VOXDESK_DEBUG_DIR", "perception.debug_dir"),
    ("VOXDESK_MODELS_DIR", "models.dir"),
    ("VOXDESK_ACCESSIBILITY", "perception.accessibility"),
    ("VOXDESK_READER", "perception.reader"),
];

/// `$XDG_CONFIG_HOME/voxdesk/config.toml` (via `directories`).
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "voxdesk").map(|d| d.config_dir().join("config.toml"))
}

/// Load: defaults; the file (`explicit`, else the default path if it exists); env; `flags`
/// (key → raw value, e.g. ("rails.mode", "auto")).
pub fn load(
    explicit: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
    flags: &[(&'static str, String)],
) -> Result<Loaded, ConfigError> {
    let mut settings = Settings::default();
    let mut env_names = BTreeMap::new();
    let mut sources: BTreeMap<&'static str, Source> =
        KEYS.iter().map(|k| (*k, Source::Default)).collect();
    let path = match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => default_path().filter(|p| p.is_file()),
    };
    if let Some(p) = &path {
        let origin = p.display().to_string();
        let text = std::fs::read_to_string(p).map_err(|e| ConfigError::Read {
            path: origin.clone(),
            source: e,
        })?;
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Toml {
                path: origin.clone(),
                message: e.message().to_string(),
            })?;
        for (section, v) in &table {
            let Some(inner) = v.as_table() else {
                return Err(ConfigError::UnknownKey {
                    origin,
                    key: section.clone(),
                    known: KEYS.join(", "),
                });
            };
            for (k, v) in inner {
                let key = format!("{section}.{k}");
                let Some(&known) = KEYS.iter().find(|x| **x == key) else {
                    return Err(ConfigError::UnknownKey {
                        origin,
                        key,
                        known: KEYS.join(", "),
                    });
                };
                apply(&mut settings, known, &Raw::Toml(v)).map_err(|message| {
                    ConfigError::BadValue {
                        origin: origin.clone(),
                        key: known.to_string(),
                        message,
                    }
                })?;
                sources.insert(known, Source::File);
            }
        }
    }
    for &(var, key) in ENV {
        if let Some(v) = env(var).filter(|v| !v.is_empty()) {
            apply(&mut settings, key, &Raw::Str(&v)).map_err(|message| ConfigError::BadValue {
                origin: format!("environment {var}"),
                key: key.to_string(),
                message,
            })?;
            sources.insert(key, Source::Env);
            env_names.insert(key, var);
        }
    }
    for (key, v) in flags {
        apply(&mut settings, key, &Raw::Str(v)).map_err(|message| ConfigError::BadValue {
            origin: "command line".into(),
            key: key.to_string(),
            message,
        })?;
        sources.insert(key, Source::Flag);
    }
    for (key, _) in flags {
        env_names.remove(key);
    }
    Ok(Loaded {
        settings,
        sources,
        env_names,
        file: path,
    })
}

enum Raw<'a> {
    Toml(&'a toml::Value),
    /// From env or a flag: lists are comma-separated.
    Str(&'a str),
}

impl Raw<'_> {
    fn string(&self) -> Result<String, String> {
        match self {
            Raw::Toml(toml::Value::String(s)) => Ok(s.clone()),
            Raw::Str(s) => Ok(s.to_string()),
            Raw::Toml(v) => Err(format!("must be a string, got {}", v.type_str())),
        }
    }
    fn uint(&self, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
        let n = match self {
            Raw::Toml(toml::Value::Integer(i)) => u64::try_from(*i)
                .map_err(|_| format!("must be in {}..={}, got {i}", range.start(), range.end()))?,
            Raw::Str(s) => s
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("must be a whole number, got {s:?}"))?,
            Raw::Toml(v) => return Err(format!("must be a whole number, got {}", v.type_str())),
        };
        if !range.contains(&n) {
            return Err(format!(
                "must be in {}..={}, got {n}",
                range.start(),
                range.end()
            ));
        }
        Ok(n)
    }
    fn float(&self, range: std::ops::RangeInclusive<f64>) -> Result<f64, String> {
        let n = match self {
            Raw::Toml(toml::Value::Float(f)) => *f,
            Raw::Toml(toml::Value::Integer(i)) => *i as f64,
            Raw::Str(s) => s
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("must be a number, got {s:?}"))?,
            Raw::Toml(v) => return Err(format!("must be a number, got {}", v.type_str())),
        };
        if !range.contains(&n) {
            return Err(format!(
                "must be in {}..={}, got {n}",
                range.start(),
                range.end()
            ));
        }
        Ok(n)
    }
    fn path(&self) -> Result<PathBuf, String> {
        let s = self.string()?;
        if s.trim().is_empty() {
            return Err("must name a path".into());
        }
        Ok(PathBuf::from(s))
    }
    fn boolean(&self) -> Result<bool, String> {
        match self {
            Raw::Toml(toml::Value::Boolean(b)) => Ok(*b),
            Raw::Str(s) => match s.trim() {
                "true" | "1" | "yes" => Ok(true),
                "false" | "0" | "no" => Ok(false),
                other => Err(format!("must be true or false, got {other:?}")),
            },
            Raw::Toml(v) => Err(format!("must be true or false, got {}", v.type_str())),
        }
    }
    fn strings(&self) -> Result<Vec<String>, String> {
        match self {
            Raw::Toml(toml::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(String::from)
                        .ok_or_else(|| format!("must hold strings, got {}", v.type_str()))
                })
                .collect(),
            Raw::Str(s) => Ok(s
                .split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()),
            Raw::Toml(v) => Err(format!("must be an array of strings, got {}", v.type_str())),
        }
    }
}

fn apply(s: &mut Settings, key: &str, v: &Raw) -> Result<(), String> {
    match key {
        "rails.mode" => s.rails.mode = Mode::parse(&v.string()?)?,
        "rails.max_actions" => s.rails.max_actions = v.uint(1..=MAX_ACTIONS_CEILING as u64)? as u32,
        "rails.rate_limit_ms" => s.rails.rate_limit_ms = v.uint(0..=10_000)?,
        "rails.max_failures" => s.rails.max_failures = v.uint(1..=100)? as u32,
        "rails.forbidden_combos" => {
            s.rails.forbidden_combos = v
                .strings()?
                .iter()
                .map(|c| parse_combo(c))
                .collect::<Result<_, _>>()?
        }
        "rails.forbidden_regions" => {
            let Raw::Toml(toml::Value::Array(a)) = v else {
                return Err(
                    "must be an array of {x, y, w, h} tables (set it in the config file)".into(),
                );
            };
            let mut out = Vec::new();
            for (i, r) in a.iter().enumerate() {
                let t = r
                    .as_table()
                    .ok_or_else(|| format!("entry {}: must be a table {{x, y, w, h}}", i + 1))?;
                let f = |k: &str| -> Result<i32, String> {
                    t.get(k)
                        .and_then(|v| v.as_integer())
                        .and_then(|n| i32::try_from(n).ok())
                        .ok_or_else(|| format!("entry {}: `{k}` must be a whole number", i + 1))
                };
                if let Some(extra) = t
                    .keys()
                    .find(|k| !["x", "y", "w", "h"].contains(&k.as_str()))
                {
                    return Err(format!("entry {}: unknown field `{extra}`", i + 1));
                }
                let r = Rect::new(f("x")?, f("y")?, f("w")?, f("h")?);
                if r.w <= 0 || r.h <= 0 {
                    return Err(format!("entry {}: `w` and `h` must be positive", i + 1));
                }
                out.push(r);
            }
            s.rails.forbidden_regions = out;
        }
        "rails.allow_destructive" => s.rails.allow_destructive = v.boolean()?,
        "rails.allow_apps" => s.rails.allow_apps = v.strings()?,
        "rails.terminals" => s.rails.terminals = v.strings()?,
        "stop.combo" => s.stop.combo = parse_combo(&v.string()?)?,
        "stop.hold_ms" => s.stop.hold_ms = v.uint(50..=5000)?,
        "lock.lease_ms" => s.lock_lease_ms = v.uint(500..=600_000)?,
        "models.dir" => s.models_dir = Some(v.path()?),
        "record.screenshots" => s.record_screenshots = v.boolean()?,
        "text.pictures" => s.text_pictures = v.boolean()?,
        "realtime.gemini_model" => s.realtime.gemini_model = Some(v.string()?),
        "realtime.openai_model" => s.realtime.openai_model = Some(v.string()?),
        "realtime.gemini_url" => s.realtime.gemini_url = Some(v.string()?),
        "realtime.openai_url" => s.realtime.openai_url = Some(v.string()?),
        "realtime.gemini_version" => {
            let v = v.string()?;
            if !matches!(v.as_str(), "v1alpha" | "v1beta" | "v1") {
                return Err(format!("must be v1alpha, v1beta or v1, got {v:?}"));
            }
            s.realtime.gemini_version = Some(v);
        }
        "realtime.stop_words" => {
            let words = v.strings()?;
            if words.is_empty() {
                return Err("must name at least one word (a voice with no stop word cannot be stopped by voice)".into());
            }
            s.realtime.stop_words = words.iter().map(|w| w.to_lowercase()).collect();
        }
        "realtime.give_up_ms" => s.realtime.give_up_ms = Some(v.uint(100..=3_600_000)?),
        "voice.mic" => s.voice.mic = Some(v.string()?).filter(|m| !m.is_empty()),
        "voice.denoise" => s.voice.denoise = v.boolean()?,
        "voice.echo_cancel" => s.voice.echo_cancel = v.boolean()?,
        "voice.learned" => s.voice.learned = v.boolean()?,
        "voice.reject_below" => s.voice.reject_below = Some(v.float(-1e9..=1e9)?),
        "voice.dump_dir" => s.voice.dump_dir = Some(v.path()?),
        "voice.sphinx_model" => s.voice.sphinx_model = Some(v.path()?),
        "voice.sphinx_args" => {
            s.voice.sphinx_args = match v {
                Raw::Str(t) => t.split_whitespace().map(str::to_string).collect(),
                Raw::Toml(_) => v.strings()?,
            }
        }
        "perception.debug_dir" => s.perception.debug_dir = Some(v.path()?),
        "perception.accessibility" => s.perception.accessibility = v.boolean()?,
        "perception.tree_budget_ms" => s.perception.tree_budget_ms = v.uint(10..=10_000)?,
        "perception.reader" => s.perception.reader = Reader::parse(&v.string()?)?,
        other => return Err(format!("is not a setting ({other})")),
    }
    Ok(())
}

impl Loaded {
    /// `voxdesk config`: one line per key with its value and source.
    pub fn render(&self) -> String {
        let s = &self.settings;
        let list = |v: &[String]| {
            format!(
                "[{}]",
                v.iter()
                    .map(|x| format!("{x:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let opt = |v: Option<String>| v.unwrap_or_else(|| "\"\"".into());
        let path = |p: &Option<PathBuf>| {
            format!(
                "{:?}",
                p.as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            )
        };
        let mut out = format!(
            "# config file: {}\n",
            self.file
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| format!(
                    "none (would be {})",
                    default_path()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                ))
        );
        for key in KEYS {
            let value = match *key {
                "rails.mode" => format!("{:?}", s.rails.mode.to_string()),
                "rails.max_actions" => s.rails.max_actions.to_string(),
                "rails.rate_limit_ms" => s.rails.rate_limit_ms.to_string(),
                "rails.max_failures" => s.rails.max_failures.to_string(),
                "rails.forbidden_combos" => list(
                    &s.rails
                        .forbidden_combos
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>(),
                ),
                "rails.forbidden_regions" => format!(
                    "[{}]",
                    s.rails
                        .forbidden_regions
                        .iter()
                        .map(|r| format!("{{x={}, y={}, w={}, h={}}}", r.x, r.y, r.w, r.h))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "rails.allow_destructive" => s.rails.allow_destructive.to_string(),
                "rails.allow_apps" => list(&s.rails.allow_apps),
                "rails.terminals" => list(&s.rails.terminals),
                "stop.combo" => format!("{:?}", s.stop.combo.to_string()),
                "stop.hold_ms" => s.stop.hold_ms.to_string(),
                "lock.lease_ms" => s.lock_lease_ms.to_string(),
                "models.dir" => path(&s.models_dir),
                "record.screenshots" => s.record_screenshots.to_string(),
                "text.pictures" => s.text_pictures.to_string(),
                "realtime.gemini_model" => {
                    format!("{:?}", s.realtime.gemini_model.as_deref().unwrap_or(""))
                }
                "realtime.openai_model" => {
                    format!("{:?}", s.realtime.openai_model.as_deref().unwrap_or(""))
                }
                "realtime.gemini_url" => {
                    format!("{:?}", s.realtime.gemini_url.as_deref().unwrap_or(""))
                }
                "realtime.openai_url" => {
                    format!("{:?}", s.realtime.openai_url.as_deref().unwrap_or(""))
                }
                "realtime.gemini_version" => format!(
                    "{:?}",
                    s.realtime.gemini_version.as_deref().unwrap_or("v1beta")
                ),
                "realtime.stop_words" => list(&s.realtime.stop_words),
                "realtime.give_up_ms" => opt(s.realtime.give_up_ms.map(|n| n.to_string())),
                "voice.mic" => format!("{:?}", s.voice.mic.as_deref().unwrap_or("")),
                "voice.denoise" => s.voice.denoise.to_string(),
                "voice.echo_cancel" => s.voice.echo_cancel.to_string(),
                "voice.reject_below" => opt(s.voice.reject_below.map(|n| n.to_string())),
                "voice.dump_dir" => path(&s.voice.dump_dir),
                "voice.sphinx_model" => path(&s.voice.sphinx_model),
                "voice.sphinx_args" => list(&s.voice.sphinx_args),
                "voice.learned" => s.voice.learned.to_string(),
                "perception.debug_dir" => path(&s.perception.debug_dir),
                "perception.accessibility" => s.perception.accessibility.to_string(),
                "perception.tree_budget_ms" => s.perception.tree_budget_ms.to_string(),
                "perception.reader" => format!("{:?}", s.perception.reader.name()),
                _ => String::new(),
            };
            let source = self.sources.get(key).copied().unwrap_or(Source::Default);
            let source = match self.env_names.get(key) {
                Some(var) if source == Source::Env => format!("env {var}"),
                _ => source.to_string(),
            };
            out.push_str(&format!("{key} = {value}    # {source}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config.toml");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }
    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn layers_and_sources() {
        let (_d, p) = write("[rails]\nmode = \"auto\"\nmax_actions = 5\nallow_apps = [\"XCalc\"]\nforbidden_regions = [{x=0, y=0, w=100, h=30}]\n[stop]\nhold_ms = 500\n");
        let env = |k: &str| (k == "VOXDESK_ALLOW_APPS").then(|| "XTerm, XCalc".to_string());
        let l = load(Some(&p), env, &[("rails.mode", "observe".into())]).unwrap();
        assert_eq!(l.settings.rails.mode, Mode::Observe);
        assert_eq!(l.settings.rails.max_actions, 5);
        assert_eq!(l.settings.rails.allow_apps, vec!["XTerm", "XCalc"]);
        assert_eq!(
            l.settings.rails.forbidden_regions,
            vec![Rect::new(0, 0, 100, 30)]
        );
        assert_eq!(l.settings.stop.hold_ms, 500);
        assert_eq!(l.sources["rails.mode"], Source::Flag);
        assert_eq!(l.sources["rails.allow_apps"], Source::Env);
        assert_eq!(l.sources["rails.max_actions"], Source::File);
        assert_eq!(l.sources["rails.rate_limit_ms"], Source::Default);
        let r = l.render();
        assert!(r.contains("rails.mode = \"observe\"    # flag"), "{r}");
        assert!(r.contains("rails.rate_limit_ms = 100    # default"), "{r}");
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            ("[rails]\nmood = \"auto\"\n", "unknown key `rails.mood`"),
            ("[rail]\nmode = \"auto\"\n", "unknown key `rail.mode`"),
            (
                "[rails]\nmode = \"yolo\"\n",
                "`rails.mode` must be one of observe, confirm, auto",
            ),
            (
                "[rails]\nmax_actions = 50\n",
                "`rails.max_actions` must be in 1..=20, got 50",
            ),
            (
                "[rails]\nmax_actions = \"ten\"\n",
                "`rails.max_actions` must be a whole number, got string",
            ),
            (
                "[rails]\nforbidden_combos = [\"ctrl+hyper+q\"]\n",
                "`rails.forbidden_combos`",
            ),
            (
                "[rails]\nforbidden_regions = [{x=0, y=0, w=0, h=3}]\n",
                "`w` and `h` must be positive",
            ),
            (
                "[stop]\nhold_ms = 1\n",
                "`stop.hold_ms` must be in 50..=5000",
            ),
            ("mode = 3\n", "unknown key `mode`"),
            ("[rails\n", "not valid TOML"),
        ];
        for (text, want) in cases {
            let (_d, p) = write(text);
            let e = load(Some(&p), no_env, &[]).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}\n got: {e}\nwant: {want}");
        }
        let e = load(None, |k| (k == "VOXDESK_MODE").then(|| "fast".into()), &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("environment VOXDESK_MODE") && e.contains("rails.mode"),
            "{e}"
        );
        let e = load(Some(Path::new("/nonexistent/voxdesk.toml")), no_env, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read"), "{e}");
    }
}
