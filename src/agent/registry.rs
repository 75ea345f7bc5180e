//! Providers and their models, named once: what `--provider` and `--model` may say, and the driver each makes. Nothing falls back to another vendor or model.

use super::offline::{LocalPlanner, PlanError};
use super::Driver;

/// One provider and the models it offers.
pub struct Provider {
    pub name: &'static str,
    pub models: &'static [&'static str],
    pub about: &'static str,
}

pub const PROVIDERS: &[Provider] = &[Provider {
    name: "local",
    models: &["offline-planner"],
    about: "the offline planner: plain imperative English, no network, no key",
}];

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
}

fn known() -> String {
    PROVIDERS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The provider and model, checked. A provider with one model needs no `--model`.
pub fn resolve(
    provider: &str,
    model: Option<&str>,
) -> Result<(&'static str, &'static str), RegistryError> {
    let p = PROVIDERS
        .iter()
        .find(|p| p.name == provider)
        .ok_or_else(|| RegistryError::UnknownProvider(provider.to_string()))?;
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
        (p, _) => Err(RegistryError::UnknownProvider(p.to_string())),
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
        assert!(resolve("gemini", None)
            .unwrap_err()
            .to_string()
            .contains("known: local"));
        assert!(matches!(
            driver("local", None, "frobnicate"),
            Err(RegistryError::Task(_))
        ));
        let d = driver("local", None, "click 7").unwrap();
        assert_eq!((d.provider(), d.model()), ("local", "offline-planner"));
    }
}
