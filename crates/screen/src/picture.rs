//! The picture the model sees: the frame downscaled to a cap, target ids drawn as numbered boxes, JPEG-encoded and always under the provider's 5 MB limit.

use image::{imageops, ImageEncoder, Rgba, RgbaImage};

use crate::frame::Frame;
use voxdesk_core::geometry::{fit_within, Mapping, Rect};
use voxdesk_perception::Target;

/// Providers refuse images past 5 MB; stay well under it.
pub const MAX_BYTES: usize = 5 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PictureConfig {
    pub max_w: u32,
    pub max_h: u32,
    pub quality: u8,
}

impl Default for PictureConfig {
    fn default() -> Self {
        PictureConfig {
            max_w: 1280,
            max_h: 720,
            quality: 80,
        }
    }
}

/// An encoded model picture and the mapping from its pixels to the frame and the input space.
pub struct Picture {
    pub image: RgbaImage,
    pub jpeg: Vec<u8>,
    pub mapping: Mapping,
}

#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    #[error("picture: {0}")]
    Geometry(#[from] voxdesk_core::geometry::GeometryError),
    #[error("picture: JPEG encoding failed: {0}")]
    Encode(String),
    #[error("picture: could not get under {MAX_BYTES} bytes even at the lowest quality")]
    TooBig,
}

/// Downscale `frame`, draw the targets, encode as JPEG (lowering quality only if the cap demands it).
pub fn model_picture(
    frame: &Frame,
    targets: &[Target],
    cfg: PictureConfig,
) -> Result<Picture, PictureError> {
    let (image, mapping) = annotated(frame, targets, cfg)?;
    let mut quality = cfg.quality.clamp(10, 100);
    loop {
        let jpeg = encode_jpeg(&image, quality)?;
        if jpeg.len() < MAX_BYTES {
            return Ok(Picture {
                image,
                jpeg,
                mapping,
            });
        }
        if quality <= 20 {
            return Err(PictureError::TooBig);
        }
        quality -= 15;
    }
}

/// The mapping between `frame` and the picture the model is shown of it under `cfg`: the one
/// place the picture's size is decided, so a point the model names maps back exactly.
pub fn picture_mapping(frame: &Frame, cfg: PictureConfig) -> Result<Mapping, PictureError> {
    let (w, h) = frame.size();
    Ok(frame.mapping(fit_within(w, h, cfg.max_w.max(1), cfg.max_h.max(1)))?)
}

/// The downscaled frame with the targets drawn, and its mapping (no encoding: session records
/// save it as PNG).
pub fn annotated(
    frame: &Frame,
    targets: &[Target],
    cfg: PictureConfig,
) -> Result<(RgbaImage, Mapping), PictureError> {
    let (w, h) = frame.size();
    let mapping = picture_mapping(frame, cfg)?;
    let (pw, ph) = (mapping.image_w, mapping.image_h);
    let mut image = if (pw, ph) == (w, h) {
        frame.image.clone()
    } else {
        imageops::resize(&frame.image, pw, ph, imageops::FilterType::Triangle)
    };
    let boxes: Vec<(u32, Rect)> = targets
        .iter()
        .map(|t| (t.id, mapping.capture_rect_to_image(&t.rect)))
        .collect();
    draw_targets(&mut image, &boxes);
    Ok((image, mapping))
}

pub fn encode_jpeg(image: &RgbaImage, quality: u8) -> Result<Vec<u8>, PictureError> {
    let rgb = image::DynamicImage::ImageRgba8(image.clone()).into_rgb8();
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .write_image(
            rgb.as_raw(),
            rgb.width(),
            rgb.height(),
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|e| PictureError::Encode(e.to_string()))?;
    Ok(out)
}

const BOX: Rgba<u8> = Rgba([230, 30, 140, 255]);
const TAG_BG: Rgba<u8> = Rgba([230, 30, 140, 255]);
const TAG_FG: Rgba<u8> = Rgba([255, 255, 255, 255]);

/// Draw each box (2 px outline) and its id on a filled tag above its top-left corner.
pub fn draw_targets(img: &mut RgbaImage, boxes: &[(u32, Rect)]) {
    for (_, r) in boxes {
        outline(
            img,
            r.expand_within(1, &Rect::new(-10, -10, i32::MAX / 2, i32::MAX / 2)),
            BOX,
        );
    }
    for (id, r) in boxes {
        let digits = id.to_string();
        let s = 2; // digit pixel size
        let tw = digits.len() as i32 * 4 * s + s;
        let th = 5 * s + 2 * s;
        let tx = r.x.clamp(0, (img.width() as i32 - tw).max(0));
        let ty = if r.y - th > 0 {
            r.y - th - 1
        } else {
            r.bottom() + 1
        };
        fill(img, Rect::new(tx, ty, tw, th), TAG_BG);
        for (k, ch) in digits.chars().enumerate() {
            draw_digit(img, ch, tx + s + k as i32 * 4 * s, ty + s, s, TAG_FG);
        }
    }
}

fn put(img: &mut RgbaImage, x: i32, y: i32, c: Rgba<u8>) {
    if x >= 0 && y >= 0 && (x as u32) < img.width() && (y as u32) < img.height() {
        img.put_pixel(x as u32, y as u32, c);
    }
}

fn fill(img: &mut RgbaImage, r: Rect, c: Rgba<u8>) {
    for y in r.y..r.bottom() {
        for x in r.x..r.right() {
            put(img, x, y, c);
        }
    }
}

fn outline(img: &mut RgbaImage, r: Rect, c: Rgba<u8>) {
    for t in 0..2 {
        for x in r.x..r.right() {
            put(img, x, r.y + t, c);
            put(img, x, r.bottom() - 1 - t, c);
        }
        for y in r.y..r.bottom() {
            put(img, r.x + t, y, c);
            put(img, r.right() - 1 - t, y, c);
        }
    }
}

/// 3x5 bitmap digits, one row per 3 bits. Hand-written on purpose: ids are the only text voxdesk
/// draws, and ten glyphs are cheaper than shipping or locating a font file.
const DIGITS: [[u8; 5]; 10] = [
    [0b111, 0b101, 0b101, 0b101, 0b111],
    [0b010, 0b110, 0b010, 0b010, 0b111],
    [0b111, 0b001, 0b111, 0b100, 0b111],
    [0b111, 0b001, 0b111, 0b001, 0b111],
    [0b101, 0b101, 0b111, 0b001, 0b001],
    [0b111, 0b100, 0b111, 0b001, 0b111],
    [0b111, 0b100, 0b111, 0b101, 0b111],
    [0b111, 0b001, 0b010, 0b010, 0b010],
    [0b111, 0b101, 0b111, 0b101, 0b111],
    [0b111, 0b101, 0b111, 0b001, 0b111],
];

fn draw_digit(img: &mut RgbaImage, ch: char, x: i32, y: i32, s: i32, c: Rgba<u8>) {
    let Some(d) = ch.to_digit(10) else { return };
    for (row, bits) in DIGITS[d as usize].iter().enumerate() {
        for col in 0..3 {
            if bits & (0b100 >> col) != 0 {
                fill(img, Rect::new(x + col * s, y + row as i32 * s, s, s), c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picture_is_capped_scaled_and_small() {
        let mut img = RgbaImage::from_pixel(3840, 2160, Rgba([250, 250, 250, 255]));
        // Worst case for JPEG: noise.
        let mut seed = 12345u32;
        for p in img.pixels_mut() {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            *p = Rgba([
                (seed >> 24) as u8,
                (seed >> 16) as u8,
                (seed >> 8) as u8,
                255,
            ]);
        }
        let frame = Frame {
            image: img,
            monitor: crate::frame::Monitor {
                name: "m".into(),
                origin: (0, 0),
                logical: (1920, 1080),
            },
        };
        let t = Target {
            id: 42,
            text: "Save".into(),
            rect: Rect::new(200, 200, 80, 30),
            conf: 0.9,
            new: true,
            ax: None,
        };
        let p = model_picture(&frame, &[t], PictureConfig::default()).unwrap();
        assert_eq!(p.image.dimensions(), (1280, 720));
        assert!(p.jpeg.len() < MAX_BYTES);
        assert_eq!(&p.jpeg[..2], &[0xFF, 0xD8]);
        assert_eq!(p.mapping.scale(), 2.0);
        // The box is drawn where the target lands in picture pixels.
        let r = p
            .mapping
            .capture_rect_to_image(&Rect::new(200, 200, 80, 30));
        assert_eq!(*p.image.get_pixel(r.x as u32, (r.y + r.h / 2) as u32), BOX);
    }
}
