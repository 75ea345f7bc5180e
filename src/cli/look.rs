//! `voxdesk ocr` and `voxdesk look`: the targets of an image file, or one observation of the live screen with its annotated picture.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use super::Exit;
use voxdesk_desk::observation;
use voxdesk_perception as perception;
use voxdesk_screen::{frame, picture};

pub fn ocr(json: bool, image: &Path, settings: &voxdesk_core::config::Settings) -> Result<Exit> {
    let t = Instant::now();
    let img = frame::load_image(image)?;
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    let (w, h) = img.dimensions();
    let workers = perception::engine::default_workers();
    let mut p = perception::Perceiver::new(workers)?;
    p.debug_to(settings.perception.debug_dir.clone());
    if settings.perception.reader == voxdesk_core::config::Reader::Learned {
        p.use_learned(settings.models_dir.as_deref(), workers)?;
    }
    let r = p.perceive(img.as_raw(), w, h, true)?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&observation::ocr_dto(&r, &[("load", load_ms)]))?
        );
    } else {
        print!("{}", observation::render_targets(&r.targets));
        eprintln!(
            "{} targets in {w}x{h}, perceived in {:.0} ms",
            r.targets.len(),
            r.timings.total_ms
        );
    }
    Ok(Exit::Ok)
}

pub struct LookArgs {
    pub json: bool,
    pub annotate: Option<PathBuf>,
    pub picture_max: (u32, u32),
    pub frame: Option<PathBuf>,
    /// `perception.*`: where the strips Tesseract reads are written, whether the
    /// accessibility tree is fused in.
    pub perception: voxdesk_core::config::Perception,
}

pub fn look(a: LookArgs) -> Result<Exit> {
    use voxdesk_desk::eyes::{Eyes, ScreenEyes};
    let settings = voxdesk_core::config::Settings {
        perception: a.perception.clone(),
        ..Default::default()
    };
    let mut eyes = ScreenEyes::open(&settings)?;
    let t = Instant::now();
    let f = eyes.capture()?;
    let capture_ms = t.elapsed().as_secs_f64() * 1000.0;
    let app = eyes.focused();
    let t = Instant::now();
    let r = eyes.perceive(&f, true, app.as_ref())?;
    let fused_ms = t.elapsed().as_secs_f64() * 1000.0;
    if let Some(out) = &a.frame {
        write_png(&f.image, out)?;
    }
    if let Some(out) = &a.annotate {
        write_picture(&f, &r.targets, a.picture_max, out)?;
    }
    let observation_id = format!(
        "obs-{:x}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    // One space for `look`, the act tool and `voxdesk act`: the picture's pixels.
    let mapping = picture::picture_mapping(&f, picture::PictureConfig::default())?;
    let view: Vec<perception::Target> = r
        .targets
        .iter()
        .map(|t| perception::Target {
            rect: mapping.capture_rect_to_image(&t.rect),
            ..t.clone()
        })
        .collect();
    // Kept for the next `voxdesk act`, which accepts this observation's id while the screen
    // still shows what its batch names.
    if let Err(e) = voxdesk_desk::handoff::Handoff::of(
        &observation_id,
        (mapping.image_w, mapping.image_h),
        &r.targets,
    )
    .save()
    {
        tracing::warn!("the observation is not kept for `voxdesk act`: {e}");
    }
    if a.json {
        let mut v = serde_json::json!({
            "observation_id": observation_id,
            "picture": [mapping.image_w, mapping.image_h],
            "route": if r.tree.is_some() { "ax+ocr" } else { "ocr" },
        });
        if let (None, Some(why)) = (&r.tree, &r.no_tree) {
            v["why"] = why.as_str().into();
        }
        if r.tree.as_ref().is_some_and(|t| t.partial) {
            v["partial"] = true.into();
        }
        v["targets"] = view.iter().map(voxdesk_desk::tool::target_json).collect();
        if let Some(w) = &app {
            v["app"] = w.app.as_str().into();
            if !w.title.is_empty() {
                v["title"] = w.title.as_str().into();
            }
        }
        v["capture"] = serde_json::json!([f.image.width(), f.image.height()]);
        v["scale"] = f.scale().into();
        v["monitor"] = serde_json::json!({
            "name": f.monitor.name,
            "x": f.monitor.origin.0,
            "y": f.monitor.origin.1,
            "width": f.monitor.logical.0,
            "height": f.monitor.logical.1,
        });
        let ocr = observation::ocr_dto(&r, &[("capture", capture_ms), ("look", fused_ms)]);
        v["timings_ms"] = serde_json::Value::Object(ocr.timings_ms);
        println!("{v}");
    } else {
        println!(
            "observation {observation_id}: focused app {}",
            app.as_ref().map(|a| a.app.as_str()).unwrap_or("(none)")
        );
        print!("{}", observation::render_targets(&r.targets));
        eprintln!(
            "{} targets; capture {capture_ms:.0} ms, perception {:.0} ms, with the tree {fused_ms:.0} ms; {}",
            r.targets.len(),
            r.timings.total_ms,
            match (&r.tree, &r.no_tree) {
                (Some(t), _) => format!("route ax+ocr ({} nodes{})", t.nodes.len(), if t.partial { ", partial" } else { "" }),
                (None, why) => format!("route ocr ({})", why.as_deref().unwrap_or("")),
            }
        );
        if let Some(out) = a.annotate {
            eprintln!("annotated picture: {}", out.display());
        }
    }
    Ok(Exit::Ok)
}

/// The picture the model sees, as PNG or (by extension) JPEG.
fn write_picture(
    f: &frame::Frame,
    targets: &[perception::Target],
    max: (u32, u32),
    out: &Path,
) -> Result<()> {
    let pic = picture::model_picture(
        f,
        targets,
        picture::PictureConfig {
            max_w: max.0,
            max_h: max.1,
            ..Default::default()
        },
    )?;
    let is_jpeg = out
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg"));
    if is_jpeg {
        voxdesk_core::private::write(out, &pic.jpeg)
            .with_context(|| format!("writing {}", out.display()))?;
    } else {
        write_png(&pic.image, out)?;
    }
    Ok(())
}

/// A picture of the screen is as private as a step picture: written 0600, whatever the umask.
fn write_png(img: &image::RgbaImage, out: &Path) -> Result<()> {
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)?;
    voxdesk_core::private::write(out, &png).with_context(|| format!("writing {}", out.display()))
}
