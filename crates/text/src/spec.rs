//! Which text model, where, and with which key: the provider by name, the model always named (no default, no fallback), the endpoint's base (flag, environment, the provider's own) with `http://` only to a loopback address, the key from the environment (a local server needs none), never shown.

use std::net::IpAddr;
use std::time::Duration;

use super::http::Client;
use super::openai::Flavour;

/// A turn-based provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Chat Completions: OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter.
    OpenAiCompatible,
    /// Anthropic's Messages API (Claude).
    Anthropic,
    /// Gemini's `generateContent` (beside the Live provider, `gemini`).
    GeminiText,
}

impl Provider {
    pub const ALL: &'static [Provider] = &[
        Provider::OpenAiCompatible,
        Provider::Anthropic,
        Provider::GeminiText,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAiCompatible => "openai-compatible",
            Provider::Anthropic => "anthropic",
            Provider::GeminiText => "gemini-text",
        }
    }
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.iter().copied().find(|p| p.name() == name)
    }
    /// The environment variable of its base URL (the SDK's own).
    pub fn url_var(self) -> &'static str {
        match self {
            Provider::OpenAiCompatible => "OPENAI_BASE_URL",
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
            Provider::GeminiText => "GOOGLE_GEMINI_BASE_URL",
        }
    }
    pub fn key_var(self) -> &'static str {
        match self {
            Provider::OpenAiCompatible => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::GeminiText => "GEMINI_API_KEY",
        }
    }
    pub fn default_base(self) -> &'static str {
        match self {
            Provider::OpenAiCompatible => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::GeminiText => "https://generativelanguage.googleapis.com",
        }
    }
}

/// Why a text session cannot start: one line naming the fix.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("provider {0} needs a model: pass --model (for Ollama, a model `ollama list` shows); voxdesk picks none for you")]
    NoModel(&'static str),
    #[error("provider {provider} at its own endpoint needs a key: set {var} (a local server or proxy given with --endpoint may need none)")]
    NoKey {
        provider: &'static str,
        var: &'static str,
    },
    #[error("{origin}: {base:?} is not an http(s) URL")]
    BadUrl { origin: String, base: String },
    #[error("{origin}: http:// (unencrypted) is only for a loopback address; use https://{host}")]
    Plaintext { origin: String, host: String },
}

/// Everything a text driver needs to reach its model.
#[derive(Debug, Clone)]
pub struct Spec {
    pub provider: Provider,
    pub model: String,
    /// The endpoint's base (no trailing slash); [`Spec::url`] adds the API's path.
    pub base: String,
    key: Option<String>,
    pub flavour: Flavour,
    /// Stream the reply (the model's words are spoken as they come).
    pub stream: bool,
    pub max_tokens: u32,
    /// How long one request may take, the model's own time included.
    pub timeout: Duration,
    pub max_actions: u32,
}

impl Spec {
    /// From the flag, the environment (`env`) and the provider's default, in that order.
    pub fn resolve(
        provider: Provider,
        model: Option<&str>,
        endpoint_flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Spec, SpecError> {
        let model = model
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .ok_or(SpecError::NoModel(provider.name()))?;
        let (base, origin) = match (endpoint_flag, env(provider.url_var())) {
            (Some(f), _) => (f.to_string(), "--endpoint".to_string()),
            (None, Some(e)) if !e.trim().is_empty() => (e, provider.url_var().to_string()),
            _ => (
                provider.default_base().to_string(),
                "the default".to_string(),
            ),
        };
        let base = checked_base(base.trim(), &origin)?;
        let key = env(provider.key_var())
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        if key.is_none() && base == provider.default_base() {
            return Err(SpecError::NoKey {
                provider: provider.name(),
                var: provider.key_var(),
            });
        }
        let openai_itself = base.contains("://api.openai.com");
        Ok(Spec {
            provider,
            model: model.to_string(),
            base,
            key,
            flavour: Flavour {
                completion_tokens_key: openai_itself,
                // Only where the person says the deployment sees them (`text.pictures`).
                pictures: false,
            },
            stream: true,
            max_tokens: 1024,
            timeout: Duration::from_secs(180),
            max_actions: voxdesk_core::config::Settings::default().rails.max_actions,
        })
    }

    /// Is a key set (never its value)?
    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// The request URL: the base and the API's documented path.
    pub fn url(&self) -> String {
        let b = &self.base;
        match self.provider {
            Provider::OpenAiCompatible => format!("{b}/chat/completions"),
            Provider::Anthropic => format!("{b}/v1/messages"),
            Provider::GeminiText if self.stream => format!(
                "{b}/v1beta/models/{}:streamGenerateContent?alt=sse",
                self.model
            ),
            Provider::GeminiText => format!("{b}/v1beta/models/{}:generateContent", self.model),
        }
    }

    /// The HTTP client, the key in the provider's header (never the URL).
    pub fn client(&self) -> Client {
        let mut headers = Vec::new();
        match (self.provider, &self.key) {
            (Provider::OpenAiCompatible, Some(k)) => {
                headers.push(("Authorization", format!("Bearer {k}")))
            }
            (Provider::Anthropic, k) => {
                headers.push(("anthropic-version", "2023-06-01".to_string()));
                if let Some(k) = k {
                    headers.push(("x-api-key", k.clone()));
                }
            }
            (Provider::GeminiText, Some(k)) => headers.push(("x-goog-api-key", k.clone())),
            _ => {}
        }
        Client::new(self.url(), headers, self.timeout)
    }
}

/// The base without a trailing slash; plaintext only to loopback.
fn checked_base(base: &str, origin: &str) -> Result<String, SpecError> {
    let bad = || SpecError::BadUrl {
        origin: origin.to_string(),
        base: base.to_string(),
    };
    let u = url::Url::parse(base).map_err(|_| bad())?;
    let host = u.host_str().ok_or_else(bad)?.to_string();
    match u.scheme() {
        "https" => {}
        "http" if loopback(&host) => {}
        "http" => {
            return Err(SpecError::Plaintext {
                origin: origin.to_string(),
                host,
            })
        }
        _ => return Err(bad()),
    }
    Ok(base.trim_end_matches('/').to_string())
}

fn loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare == "localhost" || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_endpoint_comes_from_flag_env_or_default_and_plaintext_only_to_loopback() {
        let p = Provider::OpenAiCompatible;
        let s = Spec::resolve(
            p,
            Some("llama3.2"),
            Some("http://127.0.0.1:11434/v1/"),
            env(&[]),
        )
        .unwrap();
        assert_eq!(s.url(), "http://127.0.0.1:11434/v1/chat/completions");
        assert!(!s.has_key() && !s.flavour.completion_tokens_key);
        let s = Spec::resolve(p, Some("gpt-5"), None, env(&[("OPENAI_API_KEY", "sk-1")])).unwrap();
        assert_eq!(s.url(), "https://api.openai.com/v1/chat/completions");
        assert!(s.has_key() && s.flavour.completion_tokens_key);
        assert!(!format!("{:?}", s.client()).contains("sk-1"));
        let s = Spec::resolve(
            p,
            Some("m"),
            None,
            env(&[("OPENAI_BASE_URL", "http://localhost:8000/v1")]),
        )
        .unwrap();
        assert_eq!(s.url(), "http://localhost:8000/v1/chat/completions");
        // The cloud with no key: named; Anthropic and Gemini at their documented paths.
        assert_eq!(
            Spec::resolve(p, Some("gpt-5"), None, env(&[])).unwrap_err(),
            SpecError::NoKey {
                provider: "openai-compatible",
                var: "OPENAI_API_KEY"
            }
        );
        let a = Spec::resolve(
            Provider::Anthropic,
            Some("claude-sonnet-4-6"),
            None,
            env(&[("ANTHROPIC_API_KEY", "k")]),
        )
        .unwrap();
        assert_eq!(a.url(), "https://api.anthropic.com/v1/messages");
        let g = Spec::resolve(
            Provider::GeminiText,
            Some("gemini-3-flash"),
            None,
            env(&[("GEMINI_API_KEY", "k")]),
        )
        .unwrap();
        assert_eq!(g.url(), "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse");
        assert_eq!(
            Spec::resolve(p, Some("m"), Some("http://10.0.0.5:11434/v1"), env(&[])).unwrap_err(),
            SpecError::Plaintext {
                origin: "--endpoint".into(),
                host: "10.0.0.5".into()
            }
        );
        assert!(matches!(
            Spec::resolve(p, Some("m"), Some("ftp://x"), env(&[])),
            Err(SpecError::BadUrl { .. })
        ));
        assert_eq!(
            Spec::resolve(p, None, None, env(&[])).unwrap_err(),
            SpecError::NoModel("openai-compatible")
        );
        assert_eq!(
            Spec::resolve(p, Some(" "), None, env(&[])).unwrap_err(),
            SpecError::NoModel("openai-compatible")
        );
    }
}
