//! `voxdesk report <id>`: one self-contained HTML file for a session — every step's screenshot (targets outlined, click points marked), its verdict as a badge, and a timing bar per phase.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;

use crate::session::{SessionRecord, StepRecord};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A step picture as a data URL; only a file inside the session's directory is embedded
/// (`session::picture`: a record naming `/etc/passwd` embeds nothing).
fn embed(dir: &Path, name: &Option<String>) -> Option<String> {
    let bytes = match crate::session::picture(dir, name.as_ref()?) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("report: {e}");
            return None;
        }
    };
    Some(format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

/// What a report may do wherever it is opened (a file, the panel's new tab, the daemon's
/// route): show its own styles and embedded pictures, and nothing else — no script, no fetch,
/// no form, no link to load. The daemon serves it with the same policy as a header, plus
/// `frame-ancestors 'none'` and `sandbox`, which a `<meta>` cannot carry.
pub const CSP: &str =
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// The HTML of a session's report. Images are embedded, so the file stands alone.
pub fn render(dir: &Path, r: &SessionRecord) -> String {
    let mut h = String::new();
    let rate = r
        .verified_rate()
        .map(|v| format!("{:.0}%", v * 100.0))
        .unwrap_or_else(|| "n/a".into());
    let _ = write!(
        h,
        r#"<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{CSP}"><title>voxdesk session {id}</title><style>
body{{font-family:sans-serif;margin:24px;background:#f6f7f9;color:#1f2328}} h1{{font-size:20px}}
.meta{{color:#555;margin-bottom:16px}} .step{{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:12px;margin:12px 0}}
.badge{{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;font-weight:600}}
.verified{{background:#16a34a}} .failed{{background:#dc2626}} .unconfirmed{{background:#d97706}} .unverified{{background:#6b7280}}
.shots{{display:flex;gap:12px;flex-wrap:wrap}} .shot{{position:relative;border:1px solid #ccc}}
.dot{{position:absolute;width:14px;height:14px;margin:-7px 0 0 -7px;border:3px solid #ff0;border-radius:50%;box-shadow:0 0 0 2px #000}}
.bar{{display:flex;height:14px;width:640px;border-radius:3px;overflow:hidden;margin:6px 0}} .bar div{{height:100%}}
.capture{{background:#60a5fa}} .ocr{{background:#a78bfa}} .plan{{background:#f59e0b}} .act{{background:#ef4444}} .settle{{background:#10b981}} .verify{{background:#6b7280}}
.legend span{{margin-right:10px;font-size:12px}} code{{font-size:12px}}
</style></head><body><h1>Session {id}</h1><div class="meta">task <b>{task}</b> · status <b>{status:?}</b> · provider {prov} · model {model} · prompt {pv} · mode {mode} · verified {rate}{tokens}<br>{summary}</div>
<div class="legend"><span class="capture">&nbsp;&nbsp;</span>capture <span class="ocr">&nbsp;&nbsp;</span>ocr <span class="plan">&nbsp;&nbsp;</span>plan <span class="act">&nbsp;&nbsp;</span>act <span class="settle">&nbsp;&nbsp;</span>settle <span class="verify">&nbsp;&nbsp;</span>verify</div>"#,
        id = esc(&r.id),
        task = esc(&r.task),
        status = r.status,
        prov = esc(&r.provider),
        model = esc(&r.model),
        pv = esc(&r.prompt_version),
        mode = esc(&r.mode),
        summary = esc(&r.summary),
        tokens = if r.tokens.requests > 0 {
            format!(
                " · tokens {} in, {} out over {} requests",
                r.tokens.input, r.tokens.output, r.tokens.requests
            )
        } else {
            String::new()
        },
    );
    let slowest = r.steps.iter().map(total).fold(1.0f64, f64::max);
    for s in &r.steps {
        step(&mut h, dir, s, slowest);
    }
    h.push_str("</body></html>\n");
    h
}

fn total(s: &StepRecord) -> f64 {
    let t = &s.timings_ms;
    t.capture + t.ocr + t.plan + t.act + t.settle + t.verify
}

fn step(h: &mut String, dir: &Path, s: &StepRecord, slowest: f64) {
    let _ = write!(
        h,
        r#"<div class="step"><b>Step {}: {}</b> <span class="badge {v}">{v}</span> rails: <code>{}</code> — {}<br><code>{}</code>"#,
        s.index,
        esc(&s.plan),
        esc(s.rails.name()),
        esc(&s.detail),
        esc(&s.actions.to_string()),
        v = s.verification.name()
    );
    let t = &s.timings_ms;
    let _ = write!(h, r#"<div class="bar" title="{:.0} ms">"#, total(s));
    for (class, ms) in [
        ("capture", t.capture),
        ("ocr", t.ocr),
        ("plan", t.plan),
        ("act", t.act),
        ("settle", t.settle),
        ("verify", t.verify),
    ] {
        let _ = write!(
            h,
            r#"<div class="{class}" style="width:{:.2}%" title="{class} {ms:.0} ms"></div>"#,
            100.0 * ms / slowest
        );
    }
    let tokens = s
        .tokens
        .map(|k| format!(" · the model: {} tokens in, {} out", k.input, k.output))
        .unwrap_or_default();
    let _ = write!(h, "</div><small>{:.0} ms: capture {:.0} · ocr {:.0} · plan {:.0} · act {:.0} · settle {:.0} · verify {:.0}{tokens}</small><div class=\"shots\">", total(s), t.capture, t.ocr, t.plan, t.act, t.settle, t.verify);
    let view = View::of(s);
    if let Some(src) = embed(dir, &s.screenshot) {
        let _ = write!(
            h,
            r#"<div class="shot" style="{}">{}"#,
            view.frame(),
            view.img(&src, &format!("before step {}", s.index))
        );
        for p in &s.click_points {
            let (x, y) = view.point(p);
            let _ = write!(
                h,
                r#"<div class="dot" style="left:{x:.1}px;top:{y:.1}px"></div>"#
            );
        }
        h.push_str("</div>");
    }
    if let Some(src) = embed(dir, &s.verify_screenshot) {
        let _ = write!(
            h,
            r#"<div class="shot" style="{}">{}</div>"#,
            view.frame(),
            view.img(&src, &format!("after step {}", s.index))
        );
    }
    h.push_str("</div></div>\n");
}

/// How a step's pictures are shown: zoomed to the step's focus (the targets and clicks) when
/// that is a small part of the screen, else whole; always SHOT_W pixels wide.
struct View {
    /// The picture region shown, in model-picture pixels.
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    /// The picture's full width.
    pic_w: f64,
}

const SHOT_W: f64 = 640.0;

impl View {
    fn of(s: &StepRecord) -> View {
        let [pw, ph] = s.picture.unwrap_or([1280.0, 720.0]);
        match s.focus {
            // Zoom only when it shows something a lot larger, and at most 2x.
            Some([x, y, w, h]) if w > 0.0 && h > 0.0 && w * h < 0.5 * pw * ph => {
                // At least half the picture wide, centred on the focus, inside the picture.
                let (cx, w) = (x + w / 2.0, w.max(pw / 2.0).min(pw));
                View {
                    x: (cx - w / 2.0).clamp(0.0, pw - w),
                    y,
                    w,
                    h: h.min(ph - y),
                    pic_w: pw,
                }
            }
            _ => View {
                x: 0.0,
                y: 0.0,
                w: pw,
                h: ph,
                pic_w: pw,
            },
        }
    }
    fn k(&self) -> f64 {
        SHOT_W / self.w
    }
    fn frame(&self) -> String {
        format!(
            "width:{:.0}px;height:{:.0}px;overflow:hidden",
            SHOT_W,
            self.h * self.k()
        )
    }
    fn img(&self, src: &str, alt: &str) -> String {
        format!(
            r#"<img src="{src}" alt="{}" style="position:absolute;left:{:.1}px;top:{:.1}px;width:{:.1}px;max-width:none">"#,
            esc(alt),
            0.0 - self.x * self.k(),
            0.0 - self.y * self.k(),
            self.pic_w * self.k()
        )
    }
    /// A model-picture point on the shown image.
    fn point(&self, p: &[f64; 2]) -> (f64, f64) {
        ((p[0] - self.x) * self.k(), (p[1] - self.y) * self.k())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{PhaseTimes, RailsVerdict, Recorder, Status, Verification};

    #[test]
    fn report_embeds_images_marks_clicks_and_escapes_text() {
        let d = tempfile::tempdir().unwrap();
        let mut r = Recorder::create(
            d.path(),
            "click <b>Save</b>",
            "local",
            "offline",
            "tools.v1",
            "auto",
        )
        .unwrap();
        image::RgbaImage::new(8, 8)
            .save(r.dir.join("step-001.png"))
            .unwrap();
        r.push_step(StepRecord {
            index: 1,
            observation_id: "o1".into(),
            actions: serde_json::json!([{"action":"click"}]),
            rails: RailsVerdict::Approved,
            verification: Verification::Verified,
            detail: "the screen changed".into(),
            timings_ms: PhaseTimes {
                capture: 5.0,
                ocr: 100.0,
                plan: 1.0,
                act: 50.0,
                settle: 120.0,
                verify: 1.0,
            },
            screenshot: Some("step-001.png".into()),
            verify_screenshot: None,
            click_points: vec![[640.0, 360.0]],
            plan: "Clicking <Save>".into(),
            picture: Some([1280.0, 720.0]),
            focus: None,
            tokens: Some(crate::session::Tokens {
                input: 1200,
                output: 40,
                requests: 1,
            }),
        })
        .unwrap();
        r.record.tokens.add(1200, 40);
        r.finish(Status::Done, "done").unwrap();
        let html = render(&r.dir, &r.record);
        assert!(
            html.contains("tokens 1200 in, 40 out over 1 requests"),
            "{html}"
        );
        assert!(html.contains("the model: 1200 tokens in, 40 out"));
        assert!(html.contains("data:image/png;base64,"));
        assert!(html.contains(r#"class="dot" style="left:320.0px;top:180.0px""#));
        assert!(html.contains("Clicking &lt;Save&gt;"));
        assert!(html.contains("badge verified"));
        assert!(html.contains("click &lt;b&gt;Save&lt;/b&gt;") && !html.contains("<b>Save</b>"));
        assert!(html.contains("verified 100%"));
    }

    #[test]
    fn a_picture_named_outside_the_session_is_not_embedded_and_no_script_runs() {
        let d = tempfile::tempdir().unwrap();
        let mut r =
            Recorder::create(d.path(), "t", "local", "offline", "tools.v1", "auto").unwrap();
        std::fs::write(d.path().join("secret.txt"), b"TOP-SECRET-BYTES").unwrap();
        let outside = d.path().join("secret.txt").display().to_string();
        for (i, name) in [outside.as_str(), "../secret.txt"].into_iter().enumerate() {
            r.push_step(StepRecord {
                index: i + 1,
                observation_id: "o".into(),
                actions: serde_json::json!([]),
                rails: RailsVerdict::Approved,
                verification: Verification::Verified,
                detail: String::new(),
                timings_ms: PhaseTimes::default(),
                screenshot: Some(name.into()),
                verify_screenshot: Some(name.into()),
                click_points: vec![],
                plan: String::new(),
                picture: None,
                focus: None,
                tokens: None,
            })
            .unwrap();
        }
        let html = render(&r.dir, &r.record);
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(b"TOP-SECRET-BYTES");
        assert!(
            !html.contains(&b64) && !html.contains("data:image"),
            "{html}"
        );
        assert!(html.contains(&format!(
            r#"<meta http-equiv="Content-Security-Policy" content="{CSP}">"#
        )));
        assert!(CSP.contains("default-src 'none'") && !CSP.contains("script"));
    }

    #[test]
    fn a_small_focus_is_zoomed_into_and_clicks_follow() {
        let mut s = StepRecord {
            index: 1,
            observation_id: "o1".into(),
            actions: serde_json::json!([]),
            rails: RailsVerdict::Approved,
            verification: Verification::Verified,
            detail: String::new(),
            timings_ms: PhaseTimes::default(),
            screenshot: None,
            verify_screenshot: None,
            click_points: vec![],
            plan: String::new(),
            picture: Some([1280.0, 720.0]),
            // A calculator window: 200x300 at (100, 50).
            focus: Some([100.0, 50.0, 200.0, 300.0]),
            tokens: None,
        };
        // Shown at least half the picture wide (2x at most): 640 px of picture in 640 px,
        // centred on the focus where the picture allows.
        let v = View::of(&s);
        assert_eq!((v.x, v.y, v.w, v.h), (0.0, 50.0, 640.0, 300.0));
        assert_eq!(v.point(&[300.0, 200.0]), (300.0, 150.0));
        assert!(v
            .img("x", "a")
            .contains("left:0.0px;top:-50.0px;width:1280.0px"));
        s.focus = Some([600.0, 50.0, 200.0, 300.0]);
        assert_eq!(View::of(&s).x, 380.0);
        // Near the right edge, the view slides left to stay inside the picture.
        s.focus = Some([1200.0, 0.0, 80.0, 80.0]);
        let v = View::of(&s);
        assert_eq!((v.x, v.w), (640.0, 640.0));
        // Most of the screen: shown whole.
        s.focus = Some([0.0, 0.0, 1200.0, 700.0]);
        let v = View::of(&s);
        assert_eq!((v.x, v.y, v.w, v.h), (0.0, 0.0, 1280.0, 720.0));
        assert_eq!(v.point(&[640.0, 360.0]), (320.0, 180.0));
    }
}
