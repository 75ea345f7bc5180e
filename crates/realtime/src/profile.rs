//! A deployment's profile (`models/<provider>/<model>.toml`): provider, model, API version, audio rates, picture and session limits, default voice, and the measured capability record that decides whether the model is ever sent a picture.

use serde::Deserialize;

use super::endpoint::Provider;

/// What a model was measured to do with a picture of the screen (`voxdesk probe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Vision {
    /// It finds the numbered boxes in the picture.
    NativeVisionGrounding,
    /// It describes the picture but does not ground on it.
    DescribeOnly,
    /// The deployment rejects images.
    ImageRejected,
    /// Not measured: no picture is sent.
    Unknown,
}

/// The capability record.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    pub vision: Vision,
    /// The date it was measured (ISO 8601), empty when never.
    #[serde(default)]
    pub measured: String,
}

/// Picture limits for this deployment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageLimits {
    pub max_width: u32,
    pub max_height: u32,
    pub jpeg_quality: u8,
}

/// Session limits as documented for this deployment.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionLimits {
    /// How long one connection lasts before the server ends it (Gemini sends `goAway` first).
    pub connection_minutes: u32,
    /// How long a session lasts (with context compression, Gemini's is unlimited: 0).
    pub session_minutes: u32,
}

/// One deployment's profile.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub provider: String,
    pub model: String,
    /// Gemini's API version (`v1beta` unless the profile says otherwise); unused by OpenAI.
    #[serde(default = "default_version")]
    pub api_version: String,
    /// The endpoint's base, when the deployment is not the provider's own.
    #[serde(default)]
    pub endpoint: Option<String>,
    pub input_rate: u32,
    pub output_rate: u32,
    pub voice: String,
    pub image: ImageLimits,
    pub session: SessionLimits,
    pub capability: Capability,
}

fn default_version() -> String {
    "v1beta".into()
}

/// Why a profile cannot be used: one line naming the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("no profile for {provider} model {model:?}: add models/{provider}/{model}.toml (see models/README.md)")]
    Missing { provider: String, model: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl Profile {
    /// Parse a profile and check it belongs where it was found and is usable.
    pub fn parse(path: &str, text: &str, provider: Provider) -> Result<Profile, ProfileError> {
        let invalid = |message: String| ProfileError::Invalid {
            path: path.into(),
            message,
        };
        let p: Profile = toml::from_str(text).map_err(|e| invalid(e.message().to_string()))?;
        if p.provider != provider.name() {
            return Err(invalid(format!(
                "provider is {:?}, not {:?}",
                p.provider,
                provider.name()
            )));
        }
        let rates_ok = match provider {
            // OpenAI's audio/pcm is 24 kHz only, both ways.
            Provider::OpenAi => p.input_rate == 24_000 && p.output_rate == 24_000,
            Provider::Gemini => p.input_rate == 16_000 && p.output_rate == 24_000,
        };
        if !rates_ok {
            return Err(invalid(format!(
                "audio rates {} in / {} out are not the provider's",
                p.input_rate, p.output_rate
            )));
        }
        if p.image.max_width == 0
            || p.image.max_height == 0
            || !(1..=100).contains(&p.image.jpeg_quality)
        {
            return Err(invalid(
                "image limits must be positive, quality 1-100".into(),
            ));
        }
        Ok(p)
    }

    /// May observations carry the annotated picture? Only when measured to help.
    pub fn sends_pictures(&self) -> bool {
        matches!(
            self.capability.vision,
            Vision::NativeVisionGrounding | Vision::DescribeOnly
        )
    }
}

/// A capability measured by `voxdesk probe`, cached with an expiry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct Measured {
    pub vision: Vision,
    /// The day it was measured (YYYY-MM-DD, UTC).
    pub measured: String,
    /// Seconds since the Unix epoch after which it is measured again.
    pub expires_unix: u64,
}

/// A measurement is good for this long.
pub const MEASURED_FOR_DAYS: u64 = 30;

/// Where a deployment's measured capability is cached under `dir`.
pub fn cache_path(dir: &std::path::Path, provider: Provider, model: &str) -> std::path::PathBuf {
    dir.join(provider.name()).join(format!("{model}.json"))
}

/// The profile with its cached measurement applied, when there is one that has not expired
/// (an unreadable cache is ignored: the profile's own record stands).
pub fn apply_cached(p: &mut Profile, dir: &std::path::Path, provider: Provider, now_unix: u64) {
    let Ok(text) = std::fs::read_to_string(cache_path(dir, provider, &p.model)) else {
        return;
    };
    match serde_json::from_str::<Measured>(&text) {
        Ok(m) if m.expires_unix > now_unix => {
            p.capability = Capability {
                vision: m.vision,
                measured: m.measured,
            }
        }
        Ok(_) => tracing::info!(
            "the measured capability of {} has expired: run voxdesk probe",
            p.model
        ),
        Err(e) => tracing::warn!("ignoring the capability cache of {}: {e}", p.model),
    }
}

/// The probe's verdict (pure): every box named right grounds; answers that name boxes, some
/// wrong, describe; no answer at all decides nothing.
pub fn judge(answers: &[(u32, Option<u32>)]) -> Option<Vision> {
    let answered: Vec<_> = answers.iter().filter(|(_, got)| got.is_some()).collect();
    if answered.is_empty() {
        return None;
    }
    Some(
        if answered.len() == answers.len() && answered.iter().all(|(want, got)| Some(*want) == *got)
        {
            Vision::NativeVisionGrounding
        } else {
            Vision::DescribeOnly
        },
    )
}

/// The first whole number in a model's answer ("Box 12." → 12), digits or English words up to
/// twenty (speech transcripts spell them).
pub fn number_in(text: &str) -> Option<u32> {
    const WORDS: [&str; 21] = [
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
        "twenty",
    ];
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .find_map(|w| {
            w.parse::<u32>().ok().or_else(|| {
                WORDS
                    .iter()
                    .position(|x| x.eq_ignore_ascii_case(w))
                    .map(|i| i as u32)
            })
        })
}

/// The profiles shipped inside the binary (`models/` at build time).
const SHIPPED: &[(&str, &str, &str)] = &[
    (
        "gemini",
        "gemini-3.8-live",
        include_str!("../../../models/gemini/gemini-3.8-live.toml"),
    ),
    (
        "openai",
        "gpt-realtime",
        include_str!("../../../models/openai/gpt-realtime.toml"),
    ),
];

/// The profile for `provider`/`model`: the user's own directory first (a deployment of their
/// own, a measured capability), else the one shipped with voxdesk.
pub fn find(
    user_dir: Option<&std::path::Path>,
    provider: Provider,
    model: &str,
) -> Result<Profile, ProfileError> {
    if let Some(dir) = user_dir {
        match load(dir, provider, model) {
            Err(ProfileError::Missing { .. }) => {}
            other => return other,
        }
    }
    match SHIPPED
        .iter()
        .find(|(p, m, _)| *p == provider.name() && *m == model)
    {
        Some((p, m, text)) => Profile::parse(&format!("models/{p}/{m}.toml"), text, provider),
        None => Err(ProfileError::Missing {
            provider: provider.name().into(),
            model: model.into(),
        }),
    }
}

/// The profile for `provider`/`model`, or, for a model name no profile knows yet (users meet
/// new names first), the provider's base profile under that name with its capability
/// `unknown` (no pictures until measured), and the one warning to show, naming the file a
/// measured profile would go in. A name that cannot be a file name (or a URL's path segment)
/// is still refused.
pub fn find_or_base(
    user_dir: Option<&std::path::Path>,
    provider: Provider,
    model: &str,
) -> Result<(Profile, Option<String>), ProfileError> {
    match find(user_dir, provider, model) {
        Err(ProfileError::Missing { .. }) => {}
        other => return other.map(|p| (p, None)),
    }
    let plain = !model.is_empty()
        && !model.starts_with(['.', '-'])
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    let Some((p, m, text)) = SHIPPED.iter().find(|(p, _, _)| *p == provider.name()) else {
        return find(user_dir, provider, model).map(|p| (p, None));
    };
    if !plain {
        return Err(ProfileError::Missing {
            provider: provider.name().into(),
            model: model.into(),
        });
    }
    let mut base = Profile::parse(&format!("models/{p}/{m}.toml"), text, provider)?;
    base.model = model.to_string();
    base.capability = Capability {
        vision: Vision::Unknown,
        measured: String::new(),
    };
    let file = match user_dir {
        Some(d) => d
            .join(p)
            .join(format!("{model}.toml"))
            .display()
            .to_string(),
        None => format!("models/{p}/{model}.toml"),
    };
    let warning = format!(
        "no profile for {p} model {model:?}: running it on the {p} base profile ({m}'s audio, \
         picture and session limits), capability unknown, so no picture is sent; a measured \
         profile goes in {file} (`voxdesk probe --provider {p} --model {model}` measures it)"
    );
    Ok((base, Some(warning)))
}

/// The profile for `provider`/`model` from the `models/` directory.
pub fn load(
    dir: &std::path::Path,
    provider: Provider,
    model: &str,
) -> Result<Profile, ProfileError> {
    let missing = || ProfileError::Missing {
        provider: provider.name().into(),
        model: model.into(),
    };
    // A model name is a file name here: nothing that climbs out of models/.
    if model.is_empty() || model.contains(['/', '\\']) || model.starts_with('.') {
        return Err(missing());
    }
    let path = dir.join(provider.name()).join(format!("{model}.toml"));
    let text = std::fs::read_to_string(&path).map_err(|_| missing())?;
    let p = Profile::parse(&path.display().to_string(), &text, provider)?;
    if p.model != model {
        return Err(ProfileError::Invalid {
            path: path.display().to_string(),
            message: format!("model is {:?}, not {model:?}", p.model),
        });
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn models() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models"))
    }

    #[test]
    fn a_new_model_name_runs_on_its_providers_base_profile_with_one_warning() {
        let (p, w) = find_or_base(None, Provider::OpenAi, "gpt-realtime-2027-01").unwrap();
        assert_eq!(p.model, "gpt-realtime-2027-01");
        assert_eq!((p.provider.as_str(), p.input_rate), ("openai", 24_000));
        assert_eq!(p.capability.vision, Vision::Unknown);
        let w = w.unwrap();
        assert!(w.contains("models/openai/gpt-realtime-2027-01.toml"), "{w}");
        let (p, w) = find_or_base(None, Provider::Gemini, "gemini-3.8-live").unwrap();
        assert_eq!((p.model.as_str(), w), ("gemini-3.8-live", None));
        for bad in ["", "../x", "a/b", ".hidden", "-flag", "m?x=1", "m x"] {
            assert!(
                matches!(
                    find_or_base(None, Provider::Gemini, bad),
                    Err(ProfileError::Missing { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_shipped_profiles_load_and_send_no_picture_until_measured() {
        for (provider, model) in [
            (Provider::Gemini, "gemini-3.8-live"),
            (Provider::OpenAi, "gpt-realtime"),
        ] {
            let p = load(models(), provider, model).unwrap();
            assert_eq!(p.model, model);
            assert_eq!(p.capability.vision, Vision::Unknown);
            assert!(!p.sends_pictures());
        }
    }

    #[test]
    fn a_probe_grounds_only_when_every_box_is_named_right_and_its_cache_expires() {
        assert_eq!(
            judge(&[(3, Some(3)), (9, Some(9))]),
            Some(Vision::NativeVisionGrounding)
        );
        assert_eq!(
            judge(&[(3, Some(3)), (9, Some(4))]),
            Some(Vision::DescribeOnly)
        );
        assert_eq!(
            judge(&[(3, Some(3)), (9, None)]),
            Some(Vision::DescribeOnly)
        );
        assert_eq!(judge(&[(3, None)]), None);
        assert_eq!(number_in("It is box 12."), Some(12));
        assert_eq!(number_in("Box seven"), Some(7));
        assert_eq!(number_in("I cannot tell"), None);
        let dir = std::env::temp_dir().join(format!("voxdesk-cap-{}", std::process::id()));
        let path = cache_path(&dir, Provider::OpenAi, "gpt-realtime");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let m = Measured {
            vision: Vision::DescribeOnly,
            measured: "2026-12-02".into(),
            expires_unix: 1000,
        };
        std::fs::write(&path, serde_json::to_string(&m).unwrap()).unwrap();
        let mut p = find(None, Provider::OpenAi, "gpt-realtime").unwrap();
        apply_cached(&mut p, &dir, Provider::OpenAi, 2000);
        assert_eq!(p.capability.vision, Vision::Unknown, "expired");
        apply_cached(&mut p, &dir, Provider::OpenAi, 999);
        assert_eq!(p.capability.vision, Vision::DescribeOnly);
        assert_eq!(p.capability.measured, "2026-12-02");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_shipped_profiles_are_in_the_binary_and_a_user_one_comes_first() {
        let p = find(None, Provider::OpenAi, "gpt-realtime").unwrap();
        assert_eq!(p.input_rate, 24000);
        assert!(matches!(
            find(None, Provider::Gemini, "gpt-realtime"),
            Err(ProfileError::Missing { .. })
        ));
        let dir = std::env::temp_dir().join(format!("voxdesk-profiles-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("openai")).unwrap();
        let text = std::fs::read_to_string(models().join("openai/gpt-realtime.toml"))
            .unwrap()
            .replace("vision = \"unknown\"", "vision = \"describe-only\"");
        std::fs::write(dir.join("openai/gpt-realtime.toml"), text).unwrap();
        assert!(find(Some(&dir), Provider::OpenAi, "gpt-realtime")
            .unwrap()
            .sends_pictures());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_or_wrong_profile_is_one_line_naming_the_fix() {
        let e = load(models(), Provider::Gemini, "gemini-9").unwrap_err();
        assert_eq!(
            e.to_string(),
            "no profile for gemini model \"gemini-9\": add models/gemini/gemini-9.toml (see models/README.md)"
        );
        assert!(matches!(
            load(models(), Provider::Gemini, "../gemini/gemini-3.8-live"),
            Err(ProfileError::Missing { .. })
        ));
        let good = std::fs::read_to_string(models().join("openai/gpt-realtime.toml")).unwrap();
        let cases = [
            good.replace("input_rate = 24000", "input_rate = 16000"),
            good.replace("provider = \"openai\"", "provider = \"gemini\""),
            good.replace("voice =", "colour = \"red\"\nvoice ="),
            good.replace("vision = \"unknown\"", "vision = \"sees-all\""),
            "not = [toml".to_string(),
        ];
        for text in cases {
            let e = Profile::parse("p.toml", &text, Provider::OpenAi).unwrap_err();
            assert!(matches!(e, ProfileError::Invalid { .. }), "{text}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        let seen = good.replace(
            "vision = \"unknown\"",
            "vision = \"native-vision-grounding\"",
        );
        assert!(Profile::parse("p.toml", &seen, Provider::OpenAi)
            .unwrap()
            .sends_pictures());
    }
}
