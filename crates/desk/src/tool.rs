//! The tools every driver calls (`observe`, `act`, `done`): their JSON Schema as given to models, decoding a call into a [`ToolCall`], and the [`ToolResult`] each returns as the compact, stable JSON a model reads.

use serde_json::{json, Value};

use voxdesk_core::action::{batch_from_value, Batch, ParseError};
use voxdesk_perception::Target;
use voxdesk_record::session::Status;
use voxdesk_safety::rails::Refusal;

use super::verify::Verdict;

/// The tool schema every driver is given (versioned; the version goes into session records).
pub const TOOLS_JSON: &str = include_str!("../../../prompts/tools.v4.json");

/// The tool schema as a model is given it: [`TOOLS_JSON`] with the act tool's batch limit set to
/// the rails' `max_actions` (clamped to the ceiling the rails enforce), in its words and in
/// `maxItems` alike, so the schema, its description and the rails say one number.
pub fn tools(max_actions: u32) -> Value {
    let n = max_actions.clamp(1, voxdesk_core::config::MAX_ACTIONS_CEILING);
    let mut v: Value =
        serde_json::from_str(TOOLS_JSON).expect("the tool schema is valid JSON (tested)");
    for t in v["tools"].as_array_mut().into_iter().flatten() {
        if t["name"] == "act" {
            t["parameters"]["properties"]["actions"]["maxItems"] = Value::from(n);
        }
        if let Some(d) = t["description"].as_str() {
            t["description"] = Value::from(d.replace("{max_actions}", &n.to_string()));
        }
    }
    v
}

/// A decoded tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    Observe,
    Act(Batch),
    Done { success: bool, summary: String },
}

impl ToolCall {
    pub fn name(&self) -> &'static str {
        match self {
            ToolCall::Observe => "observe",
            ToolCall::Act(_) => "act",
            ToolCall::Done { .. } => "done",
        }
    }
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

/// An observation as a driver sees it: target boxes in the pixels of the model picture.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservationView {
    pub id: String,
    /// WM_CLASS of the focused window.
    pub app: Option<String>,
    /// The focused window's title as the X server has it (not read by OCR).
    pub title: Option<String>,
    pub picture: (u32, u32),
    /// Boxes in model-picture pixels; ids as in the observation.
    pub targets: Vec<Target>,
    /// The targets in capture pixels (what the offline planner binds labels against).
    pub capture_targets: Vec<Target>,
    /// The annotated picture (numbered boxes) as JPEG, only when the desk was asked for
    /// pictures (a model whose deployment is measured to use them).
    pub jpeg: Option<std::sync::Arc<Vec<u8>>>,
    /// How the targets were found: the tree and OCR, or OCR alone and why.
    pub route: Route,
}

/// How an observation's targets were found (seed 002's `computer_observe`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Route {
    /// The focused window's accessibility tree was fused in.
    pub tree: bool,
    /// Why OCR alone, or what the tree gave.
    pub why: String,
    /// The tree's read stopped at its budget or size cap: some controls are missing.
    pub partial: bool,
}

impl Route {
    pub fn name(&self) -> &'static str {
        if self.tree {
            "ax+ocr"
        } else {
            "ocr"
        }
    }
}

/// A field's value as the model reads it: at most this many characters.
const VALUE_CHARS: usize = 300;

/// One target as the model reads it: `role`, `states`, `value` and `source` only where the
/// tree said something (absent: OCR alone read it).
pub fn target_json(t: &Target) -> Value {
    let mut v =
        json!({"id": t.id, "text": t.text, "box": [t.rect.x, t.rect.y, t.rect.w, t.rect.h]});
    if let Some(ax) = &t.ax {
        v["role"] = Value::from(ax.role.name());
        let states = ax.states.words(ax.role);
        if !states.is_empty() {
            v["states"] = Value::from(states);
        }
        if let Some(val) = &ax.value {
            let n = val.chars().count();
            v["value"] = Value::from(if n > VALUE_CHARS {
                format!(
                    "{}… ({n} characters)",
                    val.chars().take(VALUE_CHARS).collect::<String>()
                )
            } else {
                val.clone()
            });
        }
        v["source"] = Value::from(t.source());
    }
    if t.new {
        v["new"] = Value::Bool(true);
    }
    v
}

/// What the act tool did with a batch, as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActStatus {
    /// Every action ran (whether the expectation held is the verdict's business).
    Ran,
    /// Observe mode: checked and recorded, nothing touched.
    Recorded,
    /// A rail refused the batch; nothing ran.
    Refused,
    /// It needed a yes and none was given; nothing ran.
    Declined,
    /// The stop latch cut it (emergency stop, signal, stop request).
    Stopped,
    /// An action could not be performed (an input error).
    Failed,
}

impl ActStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ActStatus::Ran => "ran",
            ActStatus::Recorded => "recorded",
            ActStatus::Refused => "refused",
            ActStatus::Declined => "declined",
            ActStatus::Stopped => "stopped",
            ActStatus::Failed => "failed",
        }
    }
}

/// What happened to one action of a batch (its `outcome` in the act tool's result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    Stopped,
    Failed,
    /// Not run, after an earlier action failed.
    Skipped,
    /// Observe mode: it would have run.
    WouldRun,
    /// Refused or declined: nothing ran.
    NotRun,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Stopped => "stopped",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::WouldRun => "would-run",
            Outcome::NotRun => "not-run",
        }
    }

    /// It was sent (or began to be): a typed text may be on screen.
    pub fn was_sent(self) -> bool {
        matches!(self, Outcome::Done | Outcome::Stopped | Outcome::Failed)
    }
}

/// What happened to one action of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionOutcome {
    pub index: usize,
    pub action: &'static str,
    /// The resolved step ("click at (130, 108)"), when the rails got that far.
    pub step: Option<String>,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub ms: f64,
}

/// The act tool's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ActResult {
    /// The observation the batch was checked against.
    pub observation_id: String,
    pub app: Option<String>,
    pub status: ActStatus,
    pub refusal: Option<Refusal>,
    pub actions: Vec<ActionOutcome>,
    /// Unverified unless the batch ran and named an expectation.
    pub verdict: Verdict,
    /// Did the screen change at all after the batch?
    pub changed: bool,
    /// Texts on screen afterwards that the screen before the batch did not have.
    pub appeared: Vec<String>,
    /// Windows, menus or dialogs that opened during the batch, in words.
    pub opened: Vec<String>,
    /// Whether the same batch may safely run again should it change nothing (it types, presses
    /// Enter or clicks a send/save button: no).
    pub repeatable: bool,
    /// The step's number in the session record, when one was recorded.
    pub step: Option<usize>,
    /// The screen afterwards: the observation the next batch must name.
    pub after: Option<ObservationView>,
}

/// Why a call failed as a whole (not a refusal: those are act results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The call itself is unusable (bad arguments, act before any observe).
    BadCall,
    /// The screen could not be captured or perceived.
    Capture,
    /// The session record could not be written.
    Record,
    /// The session has ended or was stopped.
    Ended,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::BadCall => "bad-call",
            ErrorKind::Capture => "capture",
            ErrorKind::Record => "record",
            ErrorKind::Ended => "ended",
        }
    }
}

/// What a tool call returned. Every failure is one of these, never a panic.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult {
    Observation(ObservationView),
    Act(Box<ActResult>),
    Ended { status: Status, summary: String },
    Error { kind: ErrorKind, message: String },
}

impl ToolResult {
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> ToolResult {
        ToolResult::Error {
            kind,
            message: message.into(),
        }
    }

    /// The latest observation this result carries (an observe, or the screen after an act).
    pub fn observation(&self) -> Option<&ObservationView> {
        match self {
            ToolResult::Observation(o) => Some(o),
            ToolResult::Act(a) => a.after.as_ref(),
            _ => None,
        }
    }

    /// The result as the model reads it: compact, stable keys, absent rather than null.
    pub fn to_json(&self) -> Value {
        match self {
            ToolResult::Observation(o) => observation_json(o),
            ToolResult::Act(a) => a.to_json(),
            ToolResult::Ended { status, summary } => {
                json!({"ended": status_name(*status), "summary": summary})
            }
            ToolResult::Error { kind, message } => {
                json!({"error": kind.as_str(), "message": message})
            }
        }
    }
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Running => "running",
        Status::Done => "done",
        Status::Failed => "failed",
        Status::Aborted => "aborted",
        Status::Stopped => "stopped",
    }
}

/// `{"observation_id", "picture": [w, h], "route", "why", "partial", "targets": [{"id", "text", "box": [x, y, w, h], "role", "states", "value", "source", "new"}], "app", "title"}`
pub fn observation_json(o: &ObservationView) -> Value {
    let targets: Vec<Value> = o.targets.iter().map(target_json).collect();
    let mut v = json!({"observation_id": o.id, "picture": [o.picture.0, o.picture.1], "route": o.route.name()});
    if !o.route.why.is_empty() {
        v["why"] = Value::from(o.route.why.as_str());
    }
    if o.route.partial {
        v["partial"] = Value::Bool(true);
    }
    v["targets"] = Value::from(targets);
    if let Some(app) = &o.app {
        v["app"] = Value::from(app.as_str());
    }
    if let Some(title) = o.title.as_deref().filter(|t| !t.is_empty()) {
        v["title"] = Value::from(title);
    }
    v
}

impl ActResult {
    pub fn to_json(&self) -> Value {
        let actions: Vec<Value> = self
            .actions
            .iter()
            .map(|a| {
                let mut v =
                    json!({"index": a.index, "action": a.action, "outcome": a.outcome.name(), "ms": a.ms});
                if let Some(s) = &a.step {
                    v["step"] = Value::from(s.as_str());
                }
                if let Some(e) = &a.error {
                    v["error"] = Value::from(e.as_str());
                }
                v
            })
            .collect();
        let mut v = json!({
            "observation_id": self.observation_id,
            "status": self.status.as_str(),
            "actions": actions,
        });
        if let Some(app) = &self.app {
            v["app"] = Value::from(app.as_str());
        }
        if let (ActStatus::Stopped, Some(r)) = (self.status, &self.refusal) {
            v["stopped"] = Value::from(r.message.as_str());
        } else if let Some(r) = &self.refusal {
            let mut rv = json!({"rule": r.rule, "message": r.message});
            if let Some(n) = r.action {
                rv["action"] = Value::from(n);
            }
            v["refusal"] = rv;
        }
        if matches!(self.status, ActStatus::Ran | ActStatus::Failed) {
            let mut ver = json!({"verdict": self.verdict.name(), "screen_changed": self.changed});
            if let Some(d) = self.verdict.detail() {
                ver["detail"] = Value::from(d);
            }
            if !self.appeared.is_empty() {
                ver["appeared"] = Value::from(self.appeared.clone());
            }
            if !self.opened.is_empty() {
                ver["opened"] = Value::from(self.opened.clone());
            }
            ver["repeatable"] = Value::Bool(self.repeatable);
            v["verification"] = ver;
        }
        if let Some(o) = &self.after {
            v["observation"] = observation_json(o);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names the act tool's result carries (a model reads them; `voxdesk act --json`
    /// prints them): pinned, so a rename cannot change them silently.
    #[test]
    fn outcome_and_status_names_are_pinned() {
        let outcomes = [
            (Outcome::Done, "done"),
            (Outcome::Stopped, "stopped"),
            (Outcome::Failed, "failed"),
            (Outcome::Skipped, "skipped"),
            (Outcome::WouldRun, "would-run"),
            (Outcome::NotRun, "not-run"),
        ];
        for (o, n) in outcomes {
            assert_eq!(o.name(), n);
        }
        let statuses = [
            (ActStatus::Ran, "ran"),
            (ActStatus::Recorded, "recorded"),
            (ActStatus::Refused, "refused"),
            (ActStatus::Declined, "declined"),
            (ActStatus::Stopped, "stopped"),
            (ActStatus::Failed, "failed"),
        ];
        for (s, n) in statuses {
            assert_eq!(s.as_str(), n);
        }
    }
    use voxdesk_core::geometry::Rect;

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
        assert_eq!(v["version"], "tools.v4");
    }

    #[test]
    fn the_schema_says_the_rails_batch_limit_in_words_and_in_max_items() {
        for (setting, n) in [(10, 10), (5, 5), (20, 20), (50, 20), (0, 1)] {
            let v = tools(setting);
            let act = v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "act")
                .unwrap();
            assert_eq!(act["parameters"]["properties"]["actions"]["maxItems"], n);
            let d = act["description"].as_str().unwrap();
            assert!(d.contains(&format!("at most {n} actions")), "{d}");
            assert!(!v.to_string().contains("{max_actions}"));
        }
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

    fn view() -> ObservationView {
        let t = Target {
            id: 3,
            text: "Save".into(),
            rect: Rect::new(10, 20, 30, 12),
            conf: 0.91,
            new: true,
            ax: None,
        };
        ObservationView {
            id: "s-2".into(),
            app: Some("XCalc".into()),
            title: None,
            picture: (1280, 720),
            targets: vec![t.clone()],
            capture_targets: vec![t],
            jpeg: None,
            route: Route::default(),
        }
    }

    #[test]
    fn results_are_compact_stable_json() {
        let o = ToolResult::Observation(view()).to_json();
        assert_eq!(
            o.to_string(),
            r#"{"observation_id":"s-2","picture":[1280,720],"route":"ocr","targets":[{"id":3,"text":"Save","box":[10,20,30,12],"new":true}],"app":"XCalc"}"#
        );
        // A control the tree backs says its role, states, value and source; a long value is cut.
        use voxdesk_core::semantic::{Role, State, States};
        let mut v = view();
        v.route = Route {
            tree: true,
            why: String::new(),
            partial: true,
        };
        v.targets[0].ax = Some(voxdesk_perception::fuse::Ax {
            key: ":1.2/5".into(),
            role: Role::CHECK_BOX,
            states: States::of(&[State::ENABLED, State::CHECKED]),
            value: None,
            drawn: true,
        });
        v.targets.push(Target {
            id: 4,
            text: "Notes".into(),
            rect: Rect::new(0, 40, 300, 200),
            conf: 1.0,
            new: false,
            ax: Some(voxdesk_perception::fuse::Ax {
                key: ":1.2/6".into(),
                role: Role::TEXT,
                states: States::of(&[State::ENABLED, State::EDITABLE]),
                value: Some("x".repeat(400)),
                drawn: false,
            }),
        });
        let j = ToolResult::Observation(v).to_json();
        assert_eq!(j["route"], "ax+ocr");
        assert_eq!(j["partial"], true);
        assert_eq!(
            j["targets"][0].to_string(),
            r#"{"id":3,"text":"Save","box":[10,20,30,12],"role":"check box","states":["checked"],"source":"ax+ocr","new":true}"#
        );
        assert_eq!(j["targets"][1]["source"], "ax");
        assert_eq!(j["targets"][1]["states"], serde_json::json!(["editable"]));
        assert!(j["targets"][1]["value"]
            .as_str()
            .unwrap()
            .ends_with("… (400 characters)"));
        let refused = ActResult {
            observation_id: "s-1".into(),
            app: None,
            status: ActStatus::Refused,
            refusal: Some(Refusal {
                rule: "stale-observation",
                action: None,
                message: "observe again".into(),
            }),
            actions: vec![ActionOutcome {
                index: 1,
                action: "click",
                step: None,
                outcome: Outcome::NotRun,
                error: None,
                ms: 0.0,
            }],
            verdict: Verdict::Unverified,
            changed: false,
            appeared: vec![],
            opened: vec![],
            repeatable: false,
            step: None,
            after: None,
        };
        let v = ToolResult::Act(Box::new(refused.clone())).to_json();
        assert_eq!(v["status"], "refused");
        assert_eq!(v["refusal"]["rule"], "stale-observation");
        assert!(
            v.get("verification").is_none(),
            "nothing ran, nothing judged"
        );
        assert!(!v.to_string().contains("null"), "absent, never null: {v}");
        let ran = ActResult {
            status: ActStatus::Ran,
            refusal: None,
            verdict: Verdict::Verified("\"12\" appeared".into()),
            changed: true,
            after: Some(view()),
            ..refused
        };
        let v = ToolResult::Act(Box::new(ran.clone())).to_json();
        assert_eq!(v["verification"]["verdict"], "verified");
        assert_eq!(v["verification"]["detail"], "\"12\" appeared");
        assert_eq!(v["verification"]["repeatable"], false);
        assert!(v["verification"].get("opened").is_none());
        // What a model reads when it must not simply do it again.
        let unsure = ActResult {
            verdict: Verdict::Unconfirmed("\"Buy milk\" did not appear".into()),
            opened: vec!["a menu or popup at (10, 20), 200x300".into()],
            ..ran
        };
        let v = ToolResult::Act(Box::new(unsure)).to_json();
        assert_eq!(v["verification"]["verdict"], "unconfirmed");
        assert_eq!(
            v["verification"]["opened"][0],
            "a menu or popup at (10, 20), 200x300"
        );
        assert_eq!(v["observation"]["observation_id"], "s-2");
        let e = ToolResult::error(ErrorKind::Capture, "the display went away").to_json();
        assert_eq!(
            e,
            json!({"error":"capture","message":"the display went away"})
        );
    }
}
