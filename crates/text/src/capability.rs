//! What `voxdesk probe` measured of a text deployment (its endpoint and model): whether the model finds numbered boxes in a picture, so pictures are sent only where they are seen — some servers take an image and silently drop it. Cached with an expiry, one file per deployment.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::spec::Spec;

/// A measurement is good for this long.
pub const MEASURED_FOR_DAYS: u64 = 30;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Every box asked about was named right: the model sees the picture.
    pub sees_pictures: bool,
    /// Boxes named right, of those asked about.
    pub right: usize,
    pub asked: usize,
    /// The day it was measured (YYYY-MM-DD, UTC).
    pub measured: String,
    pub expires_unix: u64,
}

/// The file of a deployment's measurement under `dir` (the endpoint and model in its name,
/// every other character a `_`).
pub fn path(dir: &Path, spec: &Spec) -> PathBuf {
    let name: String = format!("{}__{}", spec.base, spec.model)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(spec.provider.name()).join(format!("{name}.json"))
}

/// Does a measurement that has not expired say the model sees pictures? (An unreadable
/// cache says no.)
pub fn sees_pictures(dir: &Path, spec: &Spec, now_unix: u64) -> bool {
    std::fs::read_to_string(path(dir, spec))
        .ok()
        .and_then(|t| serde_json::from_str::<Measured>(&t).ok())
        .is_some_and(|m| m.expires_unix > now_unix && m.sees_pictures)
}

/// Send pictures where the person said so (`text.pictures`) or the deployment was measured to
/// see them (the record under `dir`).
pub fn decide(spec: &mut Spec, configured: bool, dir: Option<&Path>, now_unix: u64) {
    spec.flavour.pictures = configured || dir.is_some_and(|d| sees_pictures(d, spec, now_unix));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_is_its_endpoint_and_model_and_an_expired_record_says_no() {
        let d = tempfile::tempdir().unwrap();
        let s = Spec::resolve(
            crate::Provider::OpenAiCompatible,
            Some("qwen2.5vl:7b"),
            Some("http://127.0.0.1:11434/v1"),
            |_| None,
        )
        .unwrap();
        let p = path(d.path(), &s);
        assert!(
            p.ends_with("openai-compatible/http___127.0.0.1_11434_v1__qwen2.5vl_7b.json"),
            "{p:?}"
        );
        assert!(!sees_pictures(d.path(), &s, 100));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let m = Measured {
            sees_pictures: true,
            right: 3,
            asked: 3,
            measured: "2026-12-06".into(),
            expires_unix: 200,
        };
        std::fs::write(&p, serde_json::to_string(&m).unwrap()).unwrap();
        assert!(sees_pictures(d.path(), &s, 100));
        assert!(!sees_pictures(d.path(), &s, 300));
    }
}
