//! Where a realtime session connects and with which key: the endpoint's base (flag, environment, config or the provider's own) with the documented path appended, `ws://` only to a loopback address, and the API key from the environment, never shown.

use core::net::IpAddr;
use std::fmt;

use voxdesk_core::config::Source;

/// A realtime provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Gemini,
    OpenAi,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Gemini => "gemini",
            Provider::OpenAi => "openai",
        }
    }

    /// The environment variable naming the endpoint's base.
    pub fn url_var(self) -> &'static str {
        match self {
            Provider::Gemini => "VOXDESK_GEMINI_URL",
            Provider::OpenAi => "VOXDESK_OPENAI_URL",
        }
    }

    /// The environment variable holding the API key.
    pub fn key_var(self) -> &'static str {
        match self {
            Provider::Gemini => "GEMINI_API_KEY",
            Provider::OpenAi => "OPENAI_API_KEY",
        }
    }

    /// The provider's own endpoint base.
    pub fn default_base(self) -> &'static str {
        match self {
            Provider::Gemini => "wss://generativelanguage.googleapis.com",
            Provider::OpenAi => "wss://api.openai.com",
        }
    }
}

/// Why a session cannot start: one line naming the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EndpointError {
    #[error("{origin}: {url:?} is not a ws:// or wss:// URL ({why})")]
    Invalid {
        origin: String,
        url: String,
        why: String,
    },
    #[error("{origin}: {url:?} is a base (scheme, host, port); the path {path:?} is added by voxdesk: drop it")]
    HasPath {
        origin: String,
        url: String,
        path: String,
    },
    #[error("{origin}: ws:// (unencrypted) is only for a loopback address; use wss://{host}")]
    Plaintext { origin: String, host: String },
    #[error("no API key: set {var} (it is read from the environment only, never from a file)")]
    NoKey { var: &'static str },
    #[error("the API version {0:?} is not v1alpha, v1beta or v1")]
    Version(String),
    #[error("no model: pass --model or set it in the config; voxdesk picks none for you")]
    NoModel,
}

/// The URL a session connects to, and where its base came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub url: String,
    pub source: Source,
}

/// The endpoint for `provider`: the base from the flag, else the environment, else the config,
/// else the provider's own; the documented path for `model` (and Gemini's API `version`) added.
pub fn endpoint(
    provider: Provider,
    model: &str,
    version: &str,
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
    config: Option<&str>,
) -> Result<Endpoint, EndpointError> {
    if model.trim().is_empty() {
        return Err(EndpointError::NoModel);
    }
    let env_base = env(provider.url_var()).filter(|v| !v.trim().is_empty());
    let (base, source, origin) = match (flag, env_base, config) {
        (Some(f), _, _) => (f.to_string(), Source::Flag, "--endpoint".to_string()),
        (None, Some(e), _) => (e, Source::Env, provider.url_var().to_string()),
        (None, None, Some(c)) => (c.to_string(), Source::File, "the config's endpoint".into()),
        (None, None, None) => (
            provider.default_base().to_string(),
            Source::Default,
            "the default endpoint".into(),
        ),
    };
    let base = checked_base(&base, &origin)?;
    let path = match provider {
        Provider::Gemini => {
            if !matches!(version, "v1alpha" | "v1beta" | "v1") {
                return Err(EndpointError::Version(version.into()));
            }
            super::gemini::path(version)
        }
        Provider::OpenAi => super::openai::path(&url_escape(model)),
    };
    Ok(Endpoint {
        url: format!("{base}{path}"),
        source,
    })
}

/// The base without a trailing slash, checked: ws or wss, a host, no path, query or fragment,
/// plaintext only to a loopback address.
fn checked_base(base: &str, origin: &str) -> Result<String, EndpointError> {
    let invalid = |why: &str| EndpointError::Invalid {
        origin: origin.into(),
        url: base.into(),
        why: why.into(),
    };
    let u = url::Url::parse(base.trim()).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(u.scheme(), "ws" | "wss") {
        return Err(invalid("the scheme must be ws or wss"));
    }
    let host = u.host_str().ok_or_else(|| invalid("no host"))?.to_string();
    if u.path() != "/" && !u.path().is_empty() {
        return Err(EndpointError::HasPath {
            origin: origin.into(),
            url: base.into(),
            path: u.path().into(),
        });
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(invalid("a base has no query or fragment"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(invalid(
            "credentials do not belong in the URL; the key is sent in a header",
        ));
    }
    if u.scheme() == "ws" && !loopback(&host) {
        return Err(EndpointError::Plaintext {
            origin: origin.into(),
            host: host.clone(),
        });
    }
    Ok(u.as_str().trim_end_matches('/').to_string())
}

fn loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A model name as a query value (model names are plain, but a stray character must not
/// change the request).
fn url_escape(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// An API key. Its `Debug` and `Display` never show it; only the header holds it.
#[derive(Clone, PartialEq)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key from the provider's environment variable.
    pub fn from_env(
        provider: Provider,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ApiKey, EndpointError> {
        env(provider.key_var())
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty())
            .map(ApiKey)
            .ok_or(EndpointError::NoKey {
                var: provider.key_var(),
            })
    }

    /// The header the provider takes the key in (never the URL, which ends up in logs).
    pub fn header(&self, provider: Provider) -> (&'static str, String) {
        match provider {
            Provider::Gemini => ("x-goog-api-key", self.0.clone()),
            Provider::OpenAi => ("Authorization", format!("Bearer {}", self.0)),
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<hidden>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| vars.iter().find(|v| v.0 == k).map(|v| v.1.to_string())
    }

    #[test]
    fn the_base_comes_from_flag_env_config_or_default_and_gets_the_documented_path() {
        let gem = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";
        // (provider, flag, environment, config, base wanted, its source)
        type Case<'a> = (
            Provider,
            Option<&'a str>,
            &'a [(&'a str, &'a str)],
            Option<&'a str>,
            &'a str,
            Source,
        );
        let cases: &[Case] = &[
            (
                Provider::Gemini,
                None,
                &[("VOXDESK_GEMINI_URL", "ws://127.0.0.1:9000")],
                None,
                "ws://127.0.0.1:9000",
                Source::Env,
            ),
            (
                Provider::Gemini,
                Some("ws://localhost:9000/"),
                &[("VOXDESK_GEMINI_URL", "ws://127.0.0.1:1")],
                None,
                "ws://localhost:9000",
                Source::Flag,
            ),
            (
                Provider::Gemini,
                None,
                &[],
                Some("wss://eu.example.com:8443"),
                "wss://eu.example.com:8443",
                Source::File,
            ),
            (
                Provider::Gemini,
                None,
                &[],
                None,
                "wss://generativelanguage.googleapis.com",
                Source::Default,
            ),
        ];
        for (p, flag, vars, config, base, source) in cases {
            let e = endpoint(*p, "gemini-3.8-live", "v1beta", *flag, env(vars), *config).unwrap();
            assert_eq!(e.url, format!("{base}{gem}"));
            assert_eq!(e.source, *source);
        }
        let e = endpoint(
            Provider::OpenAi,
            "gpt-realtime",
            "v1beta",
            None,
            env(&[("VOXDESK_OPENAI_URL", "ws://[::1]:9001")]),
            None,
        )
        .unwrap();
        assert_eq!(e.url, "ws://[::1]:9001/v1/realtime?model=gpt-realtime");
        let e = endpoint(Provider::Gemini, "m", "v1", None, env(&[]), None).unwrap();
        assert!(e.url.ends_with(".v1.GenerativeService.BidiGenerateContent"));
    }

    #[test]
    fn bad_endpoints_are_one_line_naming_the_fix() {
        let try_base = |b: &str| {
            endpoint(
                Provider::OpenAi,
                "gpt-realtime",
                "v1",
                Some(b),
                env(&[]),
                None,
            )
        };
        assert!(matches!(
            try_base("ws://example.com:9001"),
            Err(EndpointError::Plaintext { .. })
        ));
        assert!(matches!(
            try_base("ws://10.0.0.2"),
            Err(EndpointError::Plaintext { .. })
        ));
        assert!(matches!(
            try_base("https://api.openai.com"),
            Err(EndpointError::Invalid { .. })
        ));
        assert!(matches!(
            try_base("wss://api.openai.com/v1/realtime"),
            Err(EndpointError::HasPath { .. })
        ));
        assert!(matches!(
            try_base("wss://u:p@api.openai.com"),
            Err(EndpointError::Invalid { .. })
        ));
        assert!(matches!(
            try_base("not a url"),
            Err(EndpointError::Invalid { .. })
        ));
        assert!(try_base("ws://127.0.0.5:1").is_ok());
        assert_eq!(
            endpoint(Provider::Gemini, "m", "v2", None, env(&[]), None),
            Err(EndpointError::Version("v2".into()))
        );
        assert_eq!(
            endpoint(Provider::Gemini, " ", "v1beta", None, env(&[]), None),
            Err(EndpointError::NoModel)
        );
        for e in [
            try_base("ws://example.com").unwrap_err(),
            EndpointError::NoKey { var: "X" },
        ] {
            assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn the_key_is_read_from_the_environment_and_never_shown() {
        assert_eq!(
            ApiKey::from_env(Provider::OpenAi, env(&[("OPENAI_API_KEY", " ")])),
            Err(EndpointError::NoKey {
                var: "OPENAI_API_KEY"
            })
        );
        let k =
            ApiKey::from_env(Provider::Gemini, env(&[("GEMINI_API_KEY", "sk-secret")])).unwrap();
        assert_eq!(format!("{k:?} {k}"), "ApiKey(<hidden>) <hidden>");
        assert_eq!(
            k.header(Provider::Gemini),
            ("x-goog-api-key", "sk-secret".into())
        );
        assert_eq!(
            k.header(Provider::OpenAi),
            ("Authorization", "Bearer sk-secret".into())
        );
    }
}
