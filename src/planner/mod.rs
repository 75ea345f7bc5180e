//! The planner boundary: the tools a planner may call (`observe`, `act`, `done`), their JSON Schema as given to models, and decoding a tool call into a [`ToolCall`].
//!
//! `local` is the offline planner; realtime model providers will plug in behind the same calls.

pub mod local;

use serde_json::Value;

use crate::action::{batch_from_value, Action, Batch, Expect, ParseError};
use crate::perception::Target;
use crate::verify::Verdict;

/// What a planner sees at each step.
pub struct PlanInput<'a> {
    /// Targets of the current observation (capture pixels).
    pub targets: &'a [Target],
    /// The perception packet (prompts/packet.v1.md), for planners that read text.
    pub packet: &'a str,
}

/// A planner's answer for one step.
#[derive(Debug, Clone, PartialEq)]
pub enum Planned {
    /// Run these actions; `say` is the narration ("Clicking Save").
    Act {
        actions: Vec<Action>,
        expect: Expect,
        say: String,
    },
    Done {
        success: bool,
        summary: String,
    },
    /// Could not plan this step on this screen (a missing or ambiguous label): counts as no progress.
    Stuck(String),
}

/// The boundary every planner plugs into: the offline one now, realtime models later.
pub trait Planner {
    fn provider(&self) -> &str;
    fn model(&self) -> &str;
    /// The task as the planner decomposed it (for the packet and the record).
    fn decomposition(&self) -> Vec<String>;
    fn plan(&mut self, input: &PlanInput) -> Planned;
    /// How the last planned step went.
    fn outcome(&mut self, verdict: &Verdict);
}

/// The tool schema every planner is given (versioned; the version goes into session records).
pub const TOOLS_JSON: &str = include_str!("../../prompts/tools.v1.json");

/// A decoded tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    Observe,
    Act(Batch),
    Done { success: bool, summary: String },
}

/// Decode a tool call by name and JSON arguments. Every failure is an error value that can be
/// returned to the model as the tool's result, never a panic.
pub fn decode(name: &str, args: &Value) -> Result<ToolCall, ParseError> {
    let err = |m: String| ParseError {
        action: None,
        message: m,
    };
    match name {
        "observe" => Ok(ToolCall::Observe),
        "act" => batch_from_value(args).map(ToolCall::Act),
        "done" => {
            let success = args
                .get("success")
                .and_then(Value::as_bool)
                .ok_or_else(|| err("`done` needs `success` (true or false)".into()))?;
            let summary = args
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            Ok(ToolCall::Done { success, summary })
        }
        other => Err(err(format!("unknown tool {other:?} (observe, act, done)"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_is_valid_json_with_the_three_tools() {
        let v: Value = serde_json::from_str(TOOLS_JSON).unwrap();
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["observe", "act", "done"]);
        assert_eq!(v["version"], "tools.v1");
    }

    #[test]
    fn decoding() {
        assert_eq!(decode("observe", &Value::Null), Ok(ToolCall::Observe));
        assert!(matches!(
            decode(
                "act",
                &serde_json::json!({"actions":[{"action":"wait","ms":5}]})
            ),
            Ok(ToolCall::Act(_))
        ));
        assert_eq!(
            decode("done", &serde_json::json!({"success":true,"summary":"ok"})),
            Ok(ToolCall::Done {
                success: true,
                summary: "ok".into()
            })
        );
        assert!(decode("done", &serde_json::json!({})).is_err());
        assert!(decode("rm_rf", &Value::Null).is_err());
        assert!(decode("act", &serde_json::json!({"actions":"all"}))
            .unwrap_err()
            .to_string()
            .contains("`actions` must be an array"));
    }
}
