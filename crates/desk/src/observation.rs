//! The JSON shapes of `voxdesk ocr --json` and `voxdesk look --json`: serde lives here, at the edge, not on the perception types.

use serde::Serialize;

use voxdesk_perception::{Perception, Target};

#[derive(Debug, Serialize, PartialEq)]
pub struct BoxDto {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct TargetDto {
    pub id: u32,
    pub text: String,
    #[serde(rename = "box")]
    pub bbox: BoxDto,
    pub conf: f64,
    pub new: bool,
    /// What the accessibility tree says (absent: OCR alone read it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
}

impl From<&Target> for TargetDto {
    fn from(t: &Target) -> Self {
        TargetDto {
            id: t.id,
            text: t.text.clone(),
            bbox: BoxDto {
                x: t.rect.x,
                y: t.rect.y,
                w: t.rect.w,
                h: t.rect.h,
            },
            // Two decimals: more is noise, and it keeps the JSON stable to read.
            conf: (t.conf as f64 * 100.0).round() / 100.0,
            new: t.new,
            role: t.ax.as_ref().map(|a| a.role.name()),
            states: t.ax.as_ref().map(|a| a.states.words(a.role)),
            value: t.ax.as_ref().and_then(|a| a.value.clone()),
            source: t.ax.as_ref().map(|_| t.source()),
        }
    }
}

/// `voxdesk ocr --json`: exactly this object.
#[derive(Debug, Serialize)]
pub struct OcrDto {
    pub width: u32,
    pub height: u32,
    pub targets: Vec<TargetDto>,
    pub timings_ms: serde_json::Map<String, serde_json::Value>,
}

/// Timings as a JSON object of rounded milliseconds, with any extra phases first.
pub fn timings(
    p: &Perception,
    extra: &[(&str, f64)],
) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let r = |v: f64| serde_json::Value::from((v * 10.0).round() / 10.0);
    for (k, v) in extra {
        m.insert((*k).into(), r(*v));
    }
    m.insert("diff".into(), r(p.timings.diff_ms));
    m.insert("detect".into(), r(p.timings.detect_ms));
    m.insert("ocr".into(), r(p.timings.ocr_ms));
    m.insert("perceive".into(), r(p.timings.total_ms));
    m
}

pub fn ocr_dto(p: &Perception, extra: &[(&str, f64)]) -> OcrDto {
    OcrDto {
        width: p.width,
        height: p.height,
        targets: p.targets.iter().map(TargetDto::from).collect(),
        timings_ms: timings(p, extra),
    }
}

/// A human-readable table of targets.
pub fn render_targets(targets: &[Target]) -> String {
    let mut s = String::new();
    for t in targets {
        s.push_str(&format!(
            "{:>4}{} {:<40} {:>5},{:<5} {:>4}x{:<3} {:.2}",
            t.id,
            if t.new { "*" } else { " " },
            format!("{:?}", t.text),
            t.rect.x,
            t.rect.y,
            t.rect.w,
            t.rect.h,
            t.conf
        ));
        if let Some(a) = &t.ax {
            s.push_str(&format!(
                " {} [{}] {}",
                a.role.name(),
                a.states.words(a.role).join(","),
                t.source()
            ));
            if let Some(v) = &a.value {
                s.push_str(&format!(" = {:?}", v.chars().take(40).collect::<String>()));
            }
        }
        s.push('\n');
    }
    s
}
