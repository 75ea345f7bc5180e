//! Providers and their models, named once: what `--provider` and `--model` may say, and the driver each makes. Nothing falls back to another vendor or model.

use super::offline::{LocalPlanner, PlanError};
use super::Driver;

/// One provider and the models it offers.
pub struct Provider {
    pub name: &'static str,
    pub models: &'static [&'static str],
    pub about: &'static str,
    /// A realtime model over the network: its model is always named (flag or config), and a
    /// deployment of the user's own may name a model not listed here (its profile decides).
    pub realtime: bool,
    /// A turn-based model behind an HTTP API (any deployment: a local server or a cloud
    /// one); its model is always named, any name the deployment serves.
    pub text: bool,
}

pub const PROVIDERS: &[Provider] = &[
    Provider {
        name: "local",
        models: &["offline-planner"],
        about: "the offline planner: plain imperative English, no network, no key",
        realtime: false,
        text: false,
    },
    Provider {
        name: "gemini",
        models: &["gemini-3.8-live"],
        about: "Gemini Live over WebSocket (GEMINI_API_KEY)",
        realtime: true,
        text: false,
    },
    Provider {
        name: "openai",
        models: &["gpt-realtime"],
        about: "OpenAI Realtime over WebSocket (OPENAI_API_KEY)",
        realtime: true,
        text: false,
    },
    Provider {
        name: "openai-compatible",
        models: &[],
        about: "any Chat Completions server: Ollama, vLLM, llama.cpp, LM Studio, OpenAI (--endpoint or OPENAI_BASE_URL; OPENAI_API_KEY when it needs one)",
        realtime: false,
        text: true,
    },
    Provider {
        name: "anthropic",
        models: &[],
        about: "Claude through Anthropic's Messages API (ANTHROPIC_API_KEY; also named claude)",
        realtime: false,
        text: true,
    },
    Provider {
        name: "gemini-text",
        models: &[],
        about: "Gemini's generateContent, turn by turn (GEMINI_API_KEY)",
        realtime: false,
        text: true,
    },
];

/// Other names a provider is known by (the seed's API example says `claude`).
const ALIASES: &[(&str, &str)] = &[("claude", "anthropic")];

/// The provider a name means, aliases followed.
pub fn canonical(provider: &str) -> &str {
    ALIASES
        .iter()
        .find(|(a, _)| *a == provider)
        .map_or(provider, |(_, p)| p)
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RegistryError {
    #[error("unknown provider {0:?} (known: {known})", known = known())]
    UnknownProvider(String),
    #[error("provider {provider} has no model {model:?} (its models: {})", models.join(", "))]
    UnknownModel {
        provider: &'static str,
        model: String,
        models: &'static [&'static str],
    },
    /// The task cannot be read by this driver: refused before anything starts.
    #[error("the task: {0}")]
    Task(PlanError),
    #[error("provider {0} needs a model: pass --model {hint}; voxdesk picks none for you", hint = model_hint(.0))]
    NoModel(&'static str),
    /// A text provider's driver is made with its endpoint and key, not here.
    #[error("provider {0} is a text model: it is driven by a text session")]
    Text(&'static str),
    /// A realtime provider's driver is made by the realtime session, not here.
    #[error("provider {0} is a realtime model: it is driven by a realtime session")]
    Realtime(&'static str),
}

fn models_of(provider: &str) -> String {
    PROVIDERS
        .iter()
        .find(|p| p.name == canonical(provider))
        .map(|p| p.models.join(", "))
        .unwrap_or_default()
}

fn model_hint(provider: &str) -> String {
    if PROVIDERS.iter().any(|p| p.name == provider && p.text) {
        "with a name its server knows (for Ollama, one `ollama list` shows)".to_string()
    } else {
        format!(
            "or set realtime.{provider}_model in the config (its profiles: {})",
            models_of(provider)
        )
    }
}

fn known() -> String {
    PROVIDERS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A realtime provider and its model, named explicitly (any model: its profile decides).
pub fn resolve_realtime(
    provider: &str,
    model: Option<&str>,
) -> Result<Option<(&'static str, String)>, RegistryError> {
    resolve_named(provider, model, |p| p.realtime)
}

/// A text provider and its model, named explicitly (any model its deployment serves).
pub fn resolve_text(
    provider: &str,
    model: Option<&str>,
) -> Result<Option<(&'static str, String)>, RegistryError> {
    resolve_named(provider, model, |p| p.text)
}

/// A provider of the kind `is` picks, and the model it must be given by name (`None`: the
/// provider is of another kind).
fn resolve_named(
    provider: &str,
    model: Option<&str>,
    is: fn(&Provider) -> bool,
) -> Result<Option<(&'static str, String)>, RegistryError> {
    let p = PROVIDERS
        .iter()
        .find(|p| p.name == canonical(provider))
        .ok_or_else(|| RegistryError::UnknownProvider(provider.to_string()))?;
    if !is(p) {
        return Ok(None);
    }
    match model.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => Ok(Some((p.name, m.to_string()))),
        None => Err(RegistryError::NoModel(p.name)),
    }
}

/// The provider and model, checked. A provider with one model needs no `--model`.
pub fn resolve(
    provider: &str,
    model: Option<&str>,
) -> Result<(&'static str, &'static str), RegistryError> {
    let p = PROVIDERS
        .iter()
        .find(|p| p.name == canonical(provider))
        .ok_or_else(|| RegistryError::UnknownProvider(provider.to_string()))?;
    if (p.realtime || p.text) && model.is_none() {
        return Err(RegistryError::NoModel(p.name));
    }
    if p.text {
        return Err(RegistryError::Text(p.name));
    }
    let m = match model {
        Some(m) => {
            p.models
                .iter()
                .find(|x| **x == m)
                .ok_or_else(|| RegistryError::UnknownModel {
                    provider: p.name,
                    model: m.to_string(),
                    models: p.models,
                })?
        }
        None => &p.models[0],
    };
    Ok((p.name, m))
}

/// The driver for `provider`/`model` on `task`.
pub fn driver(
    provider: &str,
    model: Option<&str>,
    task: &str,
) -> Result<Box<dyn Driver>, RegistryError> {
    match resolve(provider, model)? {
        ("local", _) => Ok(Box::new(
            LocalPlanner::new(task).map_err(RegistryError::Task)?,
        )),
        (p, _) => Err(RegistryError::Realtime(
            PROVIDERS
                .iter()
                .find(|x| x.name == p)
                .map_or("?", |x| x.name),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_and_models_are_named_explicitly() {
        assert_eq!(resolve("local", None), Ok(("local", "offline-planner")));
        assert_eq!(
            resolve("local", Some("offline-planner")),
            Ok(("local", "offline-planner"))
        );
        assert!(resolve("local", Some("gpt-4o"))
            .unwrap_err()
            .to_string()
            .contains("its models: offline-planner"));
        assert!(resolve("vertex", None)
            .unwrap_err()
            .to_string()
            .contains("known: local, gemini, openai, openai-compatible, anthropic, gemini-text"));
        assert_eq!(
            resolve_text("claude", Some("claude-sonnet-4-6")).unwrap(),
            Some(("anthropic", "claude-sonnet-4-6".into()))
        );
        assert_eq!(
            resolve_text("openai-compatible", Some("llama3.2")).unwrap(),
            Some(("openai-compatible", "llama3.2".into()))
        );
        assert_eq!(
            resolve_text("openai-compatible", None),
            Err(RegistryError::NoModel("openai-compatible"))
        );
        assert_eq!(resolve_text("local", None).unwrap(), None);
        let no_model = resolve_realtime("gemini", None).unwrap_err().to_string();
        assert!(no_model.contains("--model") && no_model.contains("gemini-3.8-live"));
        assert_eq!(
            resolve_realtime("openai", Some("gpt-realtime")).unwrap(),
            Some(("openai", "gpt-realtime".into()))
        );
        assert_eq!(resolve_realtime("local", None).unwrap(), None);
        assert!(matches!(
            driver("local", None, "frobnicate"),
            Err(RegistryError::Task(_))
        ));
        let d = driver("local", None, "click 7").unwrap();
        assert_eq!((d.provider(), d.model()), ("local", "offline-planner"));
    }
}
