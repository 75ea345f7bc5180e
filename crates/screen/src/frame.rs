//! A captured (or loaded) screen image with the measured facts about the monitor it came from, and safe loading of image files.

use std::path::Path;

use image::RgbaImage;

use voxdesk_core::geometry::{GeometryError, Mapping};

/// Where the frame sits in the input (logical) space, as the monitor reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Monitor {
    pub name: String,
    pub origin: (i32, i32),
    /// Logical size in input units.
    pub logical: (u32, u32),
}

/// One screen image in capture pixels.
#[derive(Debug, Clone)]
pub struct Frame {
    pub image: RgbaImage,
    pub monitor: Monitor,
}

impl Frame {
    /// A frame from a file: its pixels are its own logical space at the origin.
    pub fn from_image(image: RgbaImage) -> Frame {
        let (w, h) = image.dimensions();
        Frame {
            image,
            monitor: Monitor {
                name: "image".into(),
                origin: (0, 0),
                logical: (w, h),
            },
        }
    }
    pub fn size(&self) -> (u32, u32) {
        self.image.dimensions()
    }
    /// Capture pixels per logical unit, measured from the two sizes.
    pub fn scale(&self) -> f64 {
        self.image.width() as f64 / self.monitor.logical.0.max(1) as f64
    }
    /// The mapping between this frame, a model picture of `picture` size and the input space.
    pub fn mapping(&self, picture: (u32, u32)) -> Result<Mapping, GeometryError> {
        Mapping::new(
            picture,
            self.size(),
            self.monitor.origin,
            self.monitor.logical,
        )
    }
}

/// Where two frames of the same size differ, as horizontal bands one line of text high or less:
/// rows that differ, grouped while they are at most `gap` rows apart, each with the columns that
/// differ in it. Bands taller than `max_h` (a window that redrew) are left out. Empty when the
/// sizes differ.
pub fn changed_bands(
    a: &Frame,
    b: &Frame,
    gap: u32,
    max_h: u32,
) -> Vec<voxdesk_core::geometry::Rect> {
    use voxdesk_core::geometry::Rect;
    if a.size() != b.size() {
        return Vec::new();
    }
    let (w, h) = a.size();
    let row = w as usize * 4;
    let (pa, pb) = (a.image.as_raw(), b.image.as_raw());
    let mut out = Vec::new();
    let mut band: Option<(u32, u32, usize, usize)> = None; // y0, y1 (last changed row), x0, x1
    for y in 0..h {
        let (ra, rb) = (
            &pa[y as usize * row..(y as usize + 1) * row],
            &pb[y as usize * row..(y as usize + 1) * row],
        );
        let changed = ra
            .chunks_exact(4)
            .zip(rb.chunks_exact(4))
            .enumerate()
            .filter(|(_, (p, q))| p[..3] != q[..3])
            .map(|(x, _)| x);
        let (mut x0, mut x1) = (usize::MAX, 0);
        for x in changed {
            x0 = x0.min(x);
            x1 = x;
        }
        if x0 != usize::MAX {
            band = Some(match band {
                Some((y0, y1, bx0, bx1)) if y - y1 <= gap => (y0, y, bx0.min(x0), bx1.max(x1)),
                Some(done) => {
                    out.push(done);
                    (y, y, x0, x1)
                }
                None => (y, y, x0, x1),
            });
        }
    }
    out.extend(band);
    out.into_iter()
        .filter(|(y0, y1, _, _)| y1 - y0 < max_h)
        .map(|(y0, y1, x0, x1)| {
            Rect::new(
                x0 as i32,
                y0 as i32,
                (x1 - x0 + 1) as i32,
                (y1 - y0 + 1) as i32,
            )
        })
        .collect()
}

/// Largest image side voxdesk accepts (an 8K monitor is 7680; a 30000 px "screenshot" is not one).
pub const MAX_SIDE: u32 = 16384;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a PNG or JPEG image ({reason})")]
    Format { path: String, reason: String },
    #[error("{path}: image is {w}x{h}; voxdesk reads images up to {MAX_SIDE}x{MAX_SIDE}")]
    TooLarge { path: String, w: u32, h: u32 },
    #[error("{path}: image is empty (0 pixels)")]
    Empty { path: String },
    #[error("{path}: image data is damaged: {reason}")]
    Corrupt { path: String, reason: String },
}

/// Files larger than this are not screenshots.
const MAX_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// Load a PNG or JPEG, judged by its content (not its name), refusing absurd sizes from the
/// header *before* decoding.
pub fn load_image(path: &Path) -> Result<RgbaImage, LoadError> {
    let p = path.display().to_string();
    let io = |e: std::io::Error| LoadError::Io {
        path: p.clone(),
        source: e,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        return Err(LoadError::Io {
            path: p,
            source: std::io::Error::other("is a directory"),
        });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(LoadError::Format {
            path: p,
            reason: format!("{} bytes is too large for a screenshot", meta.len()),
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let format = match image::guess_format(&bytes) {
        Ok(f @ (image::ImageFormat::Png | image::ImageFormat::Jpeg)) => f,
        Ok(other) => {
            return Err(LoadError::Format {
                path: p,
                reason: format!("{other:?}"),
            })
        }
        Err(_) if bytes.is_empty() => {
            return Err(LoadError::Format {
                path: p,
                reason: "empty file".into(),
            })
        }
        Err(_) => {
            return Err(LoadError::Format {
                path: p,
                reason: "unrecognised content".into(),
            })
        }
    };
    let reader = || image::ImageReader::with_format(std::io::Cursor::new(&bytes), format);
    let (w, h) = reader().into_dimensions().map_err(|e| LoadError::Corrupt {
        path: p.clone(),
        reason: e.to_string(),
    })?;
    if w == 0 || h == 0 {
        return Err(LoadError::Empty { path: p });
    }
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(LoadError::TooLarge { path: p, w, h });
    }
    let mut r = reader();
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(2 * 1024 * 1024 * 1024);
    r.limits(limits);
    let img = r.decode().map_err(|e| LoadError::Corrupt {
        path: p,
        reason: e.to_string(),
    })?;
    Ok(img.into_rgba8())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_bands_are_lines_of_changed_pixels() {
        use voxdesk_core::geometry::Rect;
        let blank = Frame::from_image(RgbaImage::from_pixel(200, 100, image::Rgba([255; 4])));
        let mut b = blank.clone();
        let mut ink = |x0: u32, y0: u32, w: u32, h: u32| {
            for y in y0..y0 + h {
                for x in x0..x0 + w {
                    b.image.put_pixel(x, y, image::Rgba([0, 0, 0, 255]));
                }
            }
        };
        ink(10, 10, 30, 12); // typed text
        ink(45, 12, 2, 8); // the caret beside it, the same line
        ink(100, 60, 20, 10); // another line
        ink(0, 80, 200, 20); // something tall redrew: not a line
        assert_eq!(
            changed_bands(&blank, &b, 2, 16),
            [Rect::new(10, 10, 37, 12), Rect::new(100, 60, 20, 10)]
        );
        assert!(changed_bands(&blank, &blank, 2, 16).is_empty());
    }

    fn crc32(data: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in data {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
        !c
    }

    #[test]
    fn bad_files_get_distinct_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.png");
        assert!(matches!(load_image(&missing), Err(LoadError::Io { .. })));
        let text = dir.path().join("a.png");
        std::fs::write(&text, b"hello, not an image").unwrap();
        assert!(matches!(load_image(&text), Err(LoadError::Format { .. })));
        // A valid PNG header announcing 30000x30000, then nothing.
        let mut png = Vec::new();
        image::RgbaImage::new(4, 4)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let mut huge = png.clone();
        huge[16..20].copy_from_slice(&30000u32.to_be_bytes());
        huge[20..24].copy_from_slice(&30000u32.to_be_bytes());
        let crc = crc32(&huge[12..29]);
        huge[29..33].copy_from_slice(&crc.to_be_bytes());
        let hp = dir.path().join("huge.png");
        std::fs::write(&hp, &huge).unwrap();
        assert!(
            matches!(
                load_image(&hp),
                Err(LoadError::TooLarge {
                    w: 30000,
                    h: 30000,
                    ..
                })
            ),
            "{:?}",
            load_image(&hp)
        );
        let trunc = dir.path().join("trunc.png");
        std::fs::write(&trunc, &png[..png.len() / 2]).unwrap();
        assert!(
            matches!(load_image(&trunc), Err(LoadError::Corrupt { .. })),
            "{:?}",
            load_image(&trunc)
        );
        let ok = dir.path().join("ok.png");
        std::fs::write(&ok, &png).unwrap();
        assert_eq!(load_image(&ok).unwrap().dimensions(), (4, 4));
    }
}
