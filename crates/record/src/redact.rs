//! A session's secrets: text the rails refused to type as a password, shown as "•••• (8 characters)" in every event and record instead, so it is never recorded, streamed, spoken or shown.
//!
//! The desk is the one door: every event leaves through its bus and every step record through
//! its recorder, and it masks both with the session's [`Secrets`] on the way out (see
//! `Desk::judge_secrets` for when a text becomes one).

use serde_json::Value;

use super::events::Event;
use super::session::{SessionRecord, StepRecord};

/// What is shown instead of a secret: its length, never a character of it.
pub fn masked(secret: &str) -> String {
    let n = secret.chars().count();
    format!("•••• ({n} character{})", if n == 1 { "" } else { "s" })
}

/// The texts a session must never show, and the forms they take in what it writes: as typed,
/// escaped inside JSON text (a plan that quotes the act's JSON), and as Rust's `{:?}` quotes it.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// (a form of a secret, its mask), longest form first.
    forms: Vec<(String, String)>,
}

impl Secrets {
    /// Never show `secret` again. An empty text hides nothing.
    pub fn add(&mut self, secret: &str) -> bool {
        if secret.is_empty() || self.forms.iter().any(|(f, _)| f == secret) {
            return false;
        }
        let mask = masked(secret);
        let json = serde_json::to_string(secret).unwrap_or_default();
        let debug = format!("{secret:?}");
        let mut forms = vec![secret.to_string()];
        for quoted in [json, debug] {
            let Some(inner) = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')) else {
                continue;
            };
            if !inner.is_empty() && !forms.iter().any(|f| f == inner) {
                forms.push(inner.to_string());
            }
        }
        self.forms
            .extend(forms.into_iter().map(|f| (f, mask.clone())));
        self.forms.sort_by_key(|f| std::cmp::Reverse(f.0.len()));
        true
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// `s` with every secret in it masked, in one pass (a mask is never masked again).
    pub fn mask(&self, s: &str) -> String {
        if self.forms.is_empty() {
            return s.to_string();
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        'scan: while let Some(c) = rest.chars().next() {
            for (form, mask) in &self.forms {
                if let Some(after) = rest.strip_prefix(form.as_str()) {
                    out.push_str(mask);
                    rest = after;
                    continue 'scan;
                }
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    fn mask_in(&self, s: &mut String) {
        if !self.forms.is_empty() {
            *s = self.mask(s);
        }
    }

    /// Every string inside `v` masked (keys too).
    pub fn mask_value(&self, v: &mut Value) {
        if self.forms.is_empty() {
            return;
        }
        match v {
            Value::String(s) => self.mask_in(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.mask_value(x)),
            Value::Object(o) => {
                let old = std::mem::take(o);
                for (k, mut x) in old {
                    self.mask_value(&mut x);
                    o.insert(self.mask(&k), x);
                }
            }
            _ => {}
        }
    }

    /// `e` with every text it carries masked. Every variant is named, so a new one cannot slip
    /// through unmasked.
    pub fn mask_event(&self, mut e: Event) -> Event {
        if self.forms.is_empty() {
            return e;
        }
        match &mut e {
            Event::SessionStarted {
                session,
                task,
                provider,
                model,
                mode,
                prompt_version,
            } => {
                for s in [session, task, provider, model, mode, prompt_version] {
                    self.mask_in(s);
                }
            }
            Event::Transition {
                from: _,
                to: _,
                why,
            } => self.mask_in(why),
            Event::Observed {
                observation_id,
                app,
                targets: _,
                packet_version: _,
                packet,
            } => {
                self.mask_in(observation_id);
                if let Some(a) = app {
                    self.mask_in(a);
                }
                self.mask_in(packet);
            }
            Event::Plan { say, actions } => {
                self.mask_in(say);
                self.mask_value(actions);
            }
            Event::Step {
                index: _,
                observation_id,
                rails,
                verdict,
                detail,
                ms: _,
            } => {
                for s in [observation_id, detail] {
                    self.mask_in(s);
                }
                // A rule's name is the rails' own word, never typed text; the verdict is a name.
                let _ = (rails, verdict);
            }
            Event::Refusal {
                rule,
                action: _,
                message,
            } => {
                self.mask_in(rule);
                self.mask_in(message);
            }
            Event::ConfirmationAsked { question, reasons } => {
                self.mask_in(question);
                reasons.iter_mut().for_each(|r| self.mask_in(r));
            }
            Event::ConfirmationAnswered { yes: _ } => {}
            Event::Recovery {
                class,
                action,
                ran: _,
            } => {
                self.mask_in(class);
                self.mask_in(action);
            }
            Event::Narration { text } => self.mask_in(text),
            Event::Transcript { who, text } => {
                self.mask_in(who);
                self.mask_in(text);
            }
            Event::EmergencyStop { cause } => self.mask_in(cause),
            // Numbers only.
            Event::Tokens { .. } => {}
            Event::SessionEnded { status: _, summary } => self.mask_in(summary),
        }
        e
    }

    /// A step record with every text it carries masked.
    pub fn mask_step(&self, s: &mut StepRecord) {
        self.mask_value(&mut s.actions);
        // The rails' verdict is a name or a rule's name: the rails' words, never typed text.
        for t in [&mut s.plan, &mut s.detail, &mut s.observation_id] {
            self.mask_in(t);
        }
    }

    /// A whole record masked: its task, summary and steps (a secret learnt late is taken out
    /// of what was recorded before it).
    pub fn mask_record(&self, r: &mut SessionRecord) {
        self.mask_in(&mut r.task);
        self.mask_in(&mut r.summary);
        r.steps.iter_mut().for_each(|s| self.mask_step(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{RailsVerdict, Verification};
    use serde_json::json;

    #[test]
    fn a_secret_is_masked_in_every_form_and_only_its_length_is_shown() {
        let mut s = Secrets::default();
        assert_eq!(s.mask("hunter2"), "hunter2", "nothing to hide yet");
        assert!(s.add("hunter2"));
        assert!(!s.add("hunter2") && !s.add(""));
        let m = "•••• (7 characters)";
        assert_eq!(masked("x"), "•••• (1 character)");
        assert_eq!(s.mask(r#"Typing "hunter2"."#), format!(r#"Typing "{m}"."#));
        assert_eq!(s.mask("hunter2hunter2"), format!("{m}{m}"));
        // In JSON text and Debug quoting.
        let mut q = Secrets::default();
        q.add("p\"w\\d");
        let plan = format!("act: {}", json!({"text": "p\"w\\d"}));
        assert!(!q.mask(&plan).contains("p\\\"w"), "{}", q.mask(&plan));
        assert_eq!(
            q.mask(&format!("{:?}", "p\"w\\d")),
            "\"•••• (5 characters)\""
        );
        // A mask is not masked again, whatever else is secret.
        let mut c = Secrets::default();
        c.add("char");
        c.add("hunter2");
        assert_eq!(c.mask("hunter2"), m);
    }

    #[test]
    fn every_event_and_record_is_masked() {
        let mut s = Secrets::default();
        s.add("s3cret");
        let plan = s.mask_event(Event::Plan {
            say: "Typing s3cret".into(),
            actions: json!({"actions": [{"action": "type", "text": "s3cret"}], "s3cret": 1}),
        });
        let text = serde_json::to_string(&plan).unwrap();
        assert!(
            !text.contains("s3cret") && text.contains("•••• (6 characters)"),
            "{text}"
        );
        let e = s.mask_event(Event::SessionEnded {
            status: crate::session::Status::Failed,
            summary: "could not type s3cret".into(),
        });
        assert!(!serde_json::to_string(&e).unwrap().contains("s3cret"));
        let mut step = StepRecord {
            index: 1,
            observation_id: "o1".into(),
            actions: json!([{"action": "type", "text": "s3cret"}]),
            rails: RailsVerdict::Refused("password-field".into()),
            verification: Verification::Unverified,
            detail: String::new(),
            timings_ms: Default::default(),
            screenshot: None,
            verify_screenshot: None,
            click_points: vec![],
            plan: "act: type s3cret".into(),
            picture: None,
            focus: None,
            tokens: None,
        };
        s.mask_step(&mut step);
        assert!(!serde_json::to_string(&step).unwrap().contains("s3cret"));
    }
}
