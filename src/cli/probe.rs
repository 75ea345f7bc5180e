//! `voxdesk probe`: the one explicit, paid call that measures whether a deployment finds the numbered boxes in a picture of the screen; the verdict is cached with an expiry and decides whether observations carry pictures.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;

use super::{settings, Exit};
use voxdesk_agent::registry;
use voxdesk_desk::confirm::Nobody;
use voxdesk_desk::tool::{ToolCall, ToolResult};
use voxdesk_desk::{Desk, Host};
use voxdesk_input::stop::StopLatch;
use voxdesk_realtime::profile::{self, Measured};
use voxdesk_realtime::session::{Down, Note, Silent};

/// How long one answer may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);

pub fn probe(
    provider: &str,
    model: Option<&str>,
    endpoint: Option<&str>,
    config: Option<&std::path::Path>,
) -> Result<Exit> {
    let loaded = settings(config, Some("observe".into()))?;
    match registry::resolve_text(provider, model) {
        Ok(Some((p, m))) => return probe_text(&loaded, p, &m, endpoint),
        Ok(None) => {}
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    }
    let model = voxdesk_realtime::launch::model(&loaded, provider, model);
    let (provider, model) = match registry::resolve_realtime(provider, model.as_deref()) {
        Ok(Some(pm)) => pm,
        Ok(None) => {
            eprintln!("voxdesk: error: probe measures a model (gemini, openai or a text provider), not the offline planner");
            return Ok(Exit::BadInput);
        }
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let spec = match voxdesk_realtime::launch::spec(&loaded, provider, &model, endpoint, |k| {
        std::env::var(k).ok()
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let Some(cache) = voxdesk_realtime::launch::capability_dir() else {
        eprintln!("voxdesk: error: no cache directory to keep the measurement in (set HOME)");
        return Ok(Exit::Failed);
    };
    println!("probe: one paid call to {provider} {model}, asking it to find numbered boxes on a picture of this screen");
    // Look, touching nothing (observe mode, no record).
    let (jpeg, asks) = match look_and_asks(&loaded, spec.profile.image.jpeg_quality.clamp(10, 100))
    {
        Ok(x) => x,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::Failed);
        }
    };
    let latch = Arc::new(StopLatch::default());
    let session = spec.start(latch, Box::new(Silent::new()))?;
    let mut answers = Vec::new();
    for (id, label) in &asks {
        session.send(Down::Turn {
            text: question(label),
            jpeg: Some(jpeg.clone()),
        });
        let until = Instant::now() + ANSWER_WITHIN;
        let mut got = None;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match session.notes.recv_timeout(left) {
                Ok(Note::Said(text)) => {
                    println!("  {label:?} (box {id}): the model said {text:?}");
                    got = profile::number_in(&text);
                    break;
                }
                Ok(Note::Call(call)) => {
                    session.send(Down::Answer {
                        call,
                        result: serde_json::json!({"error": "bad-call", "message": "no tools during the probe: answer with the number"}),
                        picture: None,
                    });
                }
                Ok(Note::GaveUp(why)) => {
                    eprintln!("voxdesk: error: {why}; nothing was cached");
                    return Ok(Exit::Failed);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        answers.push((*id, got));
    }
    session.close();
    let Some(vision) = profile::judge(&answers) else {
        eprintln!("voxdesk: error: the model did not answer; nothing was cached");
        return Ok(Exit::Failed);
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let m = Measured {
        vision,
        measured: civil_date(now),
        expires_unix: now + profile::MEASURED_FOR_DAYS * 86_400,
    };
    let path = profile::cache_path(&cache, spec.provider, &model);
    if let Some(dir) = path.parent() {
        voxdesk_core::private::dir(dir)?;
    }
    voxdesk_core::private::write(&path, serde_json::to_string_pretty(&m)?.as_bytes())?;
    println!(
        "probe: {model} is {} ({} of {} boxes named right); cached in {} for {} days",
        serde_json::to_value(vision)?.as_str().unwrap_or("?"),
        answers.iter().filter(|(w, g)| Some(*w) == *g).count(),
        answers.len(),
        path.display(),
        profile::MEASURED_FOR_DAYS
    );
    Ok(Exit::Ok)
}

/// A picture of the screen (JPEG) and the labels to ask about, each with its box's number.
type Asks = (Vec<u8>, Vec<(u32, String)>);

/// The screen's annotated picture and up to three labels to ask about (each a word found once
/// on screen, with its box number), or why there are none.
fn look_and_asks(loaded: &voxdesk_core::config::Loaded, quality: u8) -> Result<Asks, String> {
    let latch = Arc::new(StopLatch::default());
    let mut desk =
        Desk::new(&loaded.settings, None, Box::new(Nobody), latch).map_err(|e| e.to_string())?;
    desk.send_pictures(Some(voxdesk_screen::picture::PictureConfig {
        quality,
        ..Default::default()
    }));
    let obs = match desk.call(&ToolCall::Observe) {
        ToolResult::Observation(o) => o,
        other => return Err(format!("cannot look at the screen: {}", other.to_json())),
    };
    drop(desk);
    let jpeg = obs
        .jpeg
        .clone()
        .ok_or("no picture of the screen could be made")?;
    let unique = |text: &str| obs.targets.iter().filter(|t| t.text == text).count() == 1;
    let asks: Vec<(u32, String)> = obs
        .targets
        .iter()
        .filter(|t| t.text.len() >= 3 && t.text.chars().all(char::is_alphabetic) && unique(&t.text))
        .take(3)
        .map(|t| (t.id, t.text.clone()))
        .collect();
    if asks.is_empty() {
        return Err("no labelled word on screen to ask about: open an application with labelled buttons and probe again".into());
    }
    Ok((jpeg.to_vec(), asks))
}

/// The question asked of each label.
fn question(label: &str) -> String {
    format!(
        "This is a picture of a screen; each magenta box has a number on a tag at its top-left corner. \
         What is the number of the box around the text \"{label}\"? Say only the number."
    )
}

/// `voxdesk probe --provider openai-compatible|anthropic|gemini-text`: the same three
/// questions, one request each, the picture in it; only a model that names every box right is
/// recorded as seeing pictures (a server that drops the picture cannot).
fn probe_text(
    loaded: &voxdesk_core::config::Loaded,
    provider: &str,
    model: &str,
    endpoint: Option<&str>,
) -> Result<Exit> {
    let Some(p) = voxdesk_text::Provider::from_name(provider) else {
        eprintln!("voxdesk: error: provider {provider} has no text driver");
        return Ok(Exit::BadInput);
    };
    let spec =
        match voxdesk_text::Spec::resolve(p, Some(model), endpoint, |k| std::env::var(k).ok()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("voxdesk: error: {e}");
                return Ok(Exit::BadInput);
            }
        };
    let Some(cache) = voxdesk_realtime::launch::capability_dir() else {
        eprintln!("voxdesk: error: no cache directory to keep the measurement in (set HOME)");
        return Ok(Exit::Failed);
    };
    println!("probe: three requests to {provider} {model} at {}, asking it to find numbered boxes on a picture of this screen", spec.url());
    let (jpeg, asks) = match look_and_asks(loaded, 80) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("voxdesk: error: {e}");
            return Ok(Exit::Failed);
        }
    };
    let mut answers = Vec::new();
    for (id, label) in &asks {
        match voxdesk_text::driver::ask_once(&spec, &question(label), &jpeg) {
            Ok(text) => {
                println!("  {label:?} (box {id}): the model said {text:?}");
                answers.push((*id, profile::number_in(&text)));
            }
            Err(e) => {
                eprintln!("voxdesk: error: {e}; nothing was cached");
                return Ok(Exit::Failed);
            }
        }
    }
    let right = answers.iter().filter(|(w, g)| Some(*w) == *g).count();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let m = voxdesk_text::capability::Measured {
        sees_pictures: right == answers.len(),
        right,
        asked: answers.len(),
        measured: civil_date(now),
        expires_unix: now + voxdesk_text::capability::MEASURED_FOR_DAYS * 86_400,
    };
    let path = voxdesk_text::capability::path(&cache, &spec);
    if let Some(dir) = path.parent() {
        voxdesk_core::private::dir(dir)?;
    }
    voxdesk_core::private::write(&path, serde_json::to_string_pretty(&m)?.as_bytes())?;
    println!(
        "probe: {model} {} ({right} of {} boxes named right); cached in {} for {} days",
        if m.sees_pictures {
            "sees the pictures: they are sent with each screen from now on"
        } else {
            "does not find the boxes (the server may drop pictures): the screen goes as text only"
        },
        answers.len(),
        path.display(),
        voxdesk_text::capability::MEASURED_FOR_DAYS
    );
    Ok(Exit::Ok)
}

/// YYYY-MM-DD (UTC) of a Unix time (Howard Hinnant's days-to-civil; no date crate for one line).
fn civil_date(unix: u64) -> String {
    let z = (unix / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil_date(0), "1970-01-01");
        assert_eq!(super::civil_date(1_796_169_600), "2026-12-02");
        assert_eq!(super::civil_date(951_782_400), "2000-02-29");
    }
}
