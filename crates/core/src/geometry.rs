//! The three coordinate spaces (model-image pixels, capture pixels, logical input units) and the one place that converts between them.
//!
//! Conflating two of these spaces puts a click somewhere the model never looked, so each is a
//! distinct type and every conversion goes through [`Mapping`], built from sizes *measured* on
//! the frame in hand (capture width ÷ logical width), never from a guessed scale factor.

use std::fmt;

/// A point in the downscaled picture the model was shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImagePoint {
    pub x: f64,
    pub y: f64,
}

/// A point in the pixels the screen grab returned (physical pixels).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapturePoint {
    pub x: f64,
    pub y: f64,
}

/// A point in the units the input actuator moves in (the X server's logical screen space,
/// including the monitor's origin).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LogicalPoint {
    pub x: i32,
    pub y: i32,
}

/// An axis-aligned rectangle in capture pixels. Integer, half-open: covers `x..x+w`, `y..y+h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
}

impl Rect {
    pub const fn new(x: i32, y: i32, w: i32, h: i32) -> Self {
        Rect { x, y, w, h }
    }
    pub fn right(&self) -> i32 {
        self.x + self.w
    }
    pub fn bottom(&self) -> i32 {
        self.y + self.h
    }
    pub fn area(&self) -> i64 {
        self.w.max(0) as i64 * self.h.max(0) as i64
    }
    pub fn is_empty(&self) -> bool {
        self.w <= 0 || self.h <= 0
    }
    pub fn centre(&self) -> CapturePoint {
        CapturePoint {
            x: self.x as f64 + self.w as f64 / 2.0,
            y: self.y as f64 + self.h as f64 / 2.0,
        }
    }
    pub fn contains(&self, p: CapturePoint) -> bool {
        p.x >= self.x as f64
            && p.x < self.right() as f64
            && p.y >= self.y as f64
            && p.y < self.bottom() as f64
    }
    pub fn intersects(&self, o: &Rect) -> bool {
        !self.is_empty()
            && !o.is_empty()
            && self.x < o.right()
            && o.x < self.right()
            && self.y < o.bottom()
            && o.y < self.bottom()
    }
    pub fn intersection(&self, o: &Rect) -> Rect {
        let x = self.x.max(o.x);
        let y = self.y.max(o.y);
        let r = self.right().min(o.right());
        let b = self.bottom().min(o.bottom());
        if r <= x || b <= y {
            Rect::default()
        } else {
            Rect::new(x, y, r - x, b - y)
        }
    }
    pub fn union(&self, o: &Rect) -> Rect {
        if self.is_empty() {
            return *o;
        }
        if o.is_empty() {
            return *self;
        }
        let x = self.x.min(o.x);
        let y = self.y.min(o.y);
        Rect::new(
            x,
            y,
            self.right().max(o.right()) - x,
            self.bottom().max(o.bottom()) - y,
        )
    }
    /// Grow by `m` on every side, then clip to `bounds`.
    pub fn expand_within(&self, m: i32, bounds: &Rect) -> Rect {
        Rect::new(self.x - m, self.y - m, self.w + 2 * m, self.h + 2 * m).intersection(bounds)
    }
    /// Intersection over the smaller box's area (0..1): "do these two boxes mostly overlap".
    pub fn overlap_of_smaller(&self, o: &Rect) -> f64 {
        let i = self.intersection(o).area() as f64;
        let m = self.area().min(o.area()) as f64;
        if m <= 0.0 {
            0.0
        } else {
            i / m
        }
    }
}

impl fmt::Display for Rect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}+{}+{}", self.w, self.h, self.x, self.y)
    }
}

/// Why a mapping could not be built or a point could not be mapped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GeometryError {
    #[error("{what} size must be positive, got {w}x{h}")]
    EmptySize { what: &'static str, w: u32, h: u32 },
    #[error("point ({x:.1}, {y:.1}) lies outside the {w}x{h} {space}")]
    OutOfBounds {
        space: &'static str,
        x: f64,
        y: f64,
        w: u32,
        h: u32,
    },
}

/// The measured relation between the three spaces for one captured frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mapping {
    /// Size of the picture the model saw.
    pub image_w: u32,
    pub image_h: u32,
    /// Size of the screen grab in physical pixels.
    pub capture_w: u32,
    pub capture_h: u32,
    /// The monitor's origin and size in logical input units.
    pub logical_x: i32,
    pub logical_y: i32,
    pub logical_w: u32,
    pub logical_h: u32,
}

impl Mapping {
    pub fn new(
        image: (u32, u32),
        capture: (u32, u32),
        logical_origin: (i32, i32),
        logical: (u32, u32),
    ) -> Result<Self, GeometryError> {
        for (what, (w, h)) in [
            ("model image", image),
            ("capture", capture),
            ("logical monitor", logical),
        ] {
            if w == 0 || h == 0 {
                return Err(GeometryError::EmptySize { what, w, h });
            }
        }
        Ok(Mapping {
            image_w: image.0,
            image_h: image.1,
            capture_w: capture.0,
            capture_h: capture.1,
            logical_x: logical_origin.0,
            logical_y: logical_origin.1,
            logical_w: logical.0,
            logical_h: logical.1,
        })
    }

    /// Capture pixels per logical unit, measured (e.g. 2.0 on a HiDPI monitor).
    pub fn scale(&self) -> f64 {
        self.capture_w as f64 / self.logical_w as f64
    }

    /// Model-image pixels per capture pixel (≤ 1 when the picture was downscaled).
    pub fn image_ratio(&self) -> (f64, f64) {
        (
            self.image_w as f64 / self.capture_w as f64,
            self.image_h as f64 / self.capture_h as f64,
        )
    }

    pub fn image_to_capture(&self, p: ImagePoint) -> Result<CapturePoint, GeometryError> {
        if !(p.x >= 0.0 && p.y >= 0.0 && p.x < self.image_w as f64 && p.y < self.image_h as f64) {
            return Err(GeometryError::OutOfBounds {
                space: "model image",
                x: p.x,
                y: p.y,
                w: self.image_w,
                h: self.image_h,
            });
        }
        let (rx, ry) = self.image_ratio();
        Ok(CapturePoint {
            x: p.x / rx,
            y: p.y / ry,
        })
    }

    pub fn capture_to_image(&self, p: CapturePoint) -> ImagePoint {
        let (rx, ry) = self.image_ratio();
        ImagePoint {
            x: p.x * rx,
            y: p.y * ry,
        }
    }

    /// A capture-pixel rectangle in model-image pixels (for drawing and for the model's target list).
    pub fn capture_rect_to_image(&self, r: &Rect) -> Rect {
        let (rx, ry) = self.image_ratio();
        let x0 = (r.x as f64 * rx).floor() as i32;
        let y0 = (r.y as f64 * ry).floor() as i32;
        let x1 = (r.right() as f64 * rx).ceil() as i32;
        let y1 = (r.bottom() as f64 * ry).ceil() as i32;
        Rect::new(x0, y0, (x1 - x0).max(1), (y1 - y0).max(1))
    }

    /// The logical point the actuator must move to so that the pointer lands on capture pixel `p`.
    pub fn capture_to_logical(&self, p: CapturePoint) -> Result<LogicalPoint, GeometryError> {
        if !(p.x >= 0.0 && p.y >= 0.0 && p.x < self.capture_w as f64 && p.y < self.capture_h as f64)
        {
            return Err(GeometryError::OutOfBounds {
                space: "capture",
                x: p.x,
                y: p.y,
                w: self.capture_w,
                h: self.capture_h,
            });
        }
        let sx = self.capture_w as f64 / self.logical_w as f64;
        let sy = self.capture_h as f64 / self.logical_h as f64;
        // floor, then clamp: a point on the last capture pixel must stay on the monitor.
        let lx = ((p.x / sx).floor() as i64).clamp(0, self.logical_w as i64 - 1) as i32;
        let ly = ((p.y / sy).floor() as i64).clamp(0, self.logical_h as i64 - 1) as i32;
        Ok(LogicalPoint {
            x: self.logical_x + lx,
            y: self.logical_y + ly,
        })
    }

    /// The capture pixel at the centre of logical unit `p` (inverse of [`Self::capture_to_logical`]).
    pub fn logical_to_capture(&self, p: LogicalPoint) -> Result<CapturePoint, GeometryError> {
        let lx = p.x - self.logical_x;
        let ly = p.y - self.logical_y;
        if lx < 0 || ly < 0 || lx >= self.logical_w as i32 || ly >= self.logical_h as i32 {
            return Err(GeometryError::OutOfBounds {
                space: "logical monitor",
                x: p.x as f64,
                y: p.y as f64,
                w: self.logical_w,
                h: self.logical_h,
            });
        }
        let sx = self.capture_w as f64 / self.logical_w as f64;
        let sy = self.capture_h as f64 / self.logical_h as f64;
        Ok(CapturePoint {
            x: (lx as f64 + 0.5) * sx,
            y: (ly as f64 + 0.5) * sy,
        })
    }

    pub fn image_to_logical(&self, p: ImagePoint) -> Result<LogicalPoint, GeometryError> {
        self.capture_to_logical(self.image_to_capture(p)?)
    }
}

/// The size that fits `(w, h)` inside `(max_w, max_h)` keeping the aspect ratio; never upscales.
pub fn fit_within(w: u32, h: u32, max_w: u32, max_h: u32) -> (u32, u32) {
    if w == 0 || h == 0 {
        return (w, h);
    }
    let s = (max_w as f64 / w as f64)
        .min(max_h as f64 / h as f64)
        .min(1.0);
    (
        ((w as f64 * s).round() as u32).max(1),
        ((h as f64 * s).round() as u32).max(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// (scale, capture size, logical origin, logical size)
    type Monitor = (f64, (u32, u32), (i32, i32), (u32, u32));
    const MONITORS: &[Monitor] = &[
        (1.0, (1920, 1080), (0, 0), (1920, 1080)),
        (1.5, (2880, 1620), (1920, 0), (1920, 1080)),
        (2.0, (3840, 2160), (-1920, 200), (1920, 1080)),
    ];

    #[test]
    fn scale_is_measured_from_sizes() {
        for &(scale, cap, origin, logical) in MONITORS {
            let (iw, ih) = fit_within(cap.0, cap.1, 1280, 720);
            let m = Mapping::new((iw, ih), cap, origin, logical).unwrap();
            assert_eq!(m.scale(), scale);
            assert_eq!((iw, ih), (1280, 720));
        }
    }

    #[test]
    fn table_of_points_through_all_three_spaces() {
        // (image point, expected logical point relative to the monitor origin)
        let cases = [
            ((0.0, 0.0), (0, 0)),
            ((640.0, 360.0), (960, 540)),
            ((1279.9, 719.9), (1919, 1079)),
            ((100.5, 50.25), (150, 75)),
        ];
        for &(scale, cap, origin, logical) in MONITORS {
            let m = Mapping::new((1280, 720), cap, origin, logical).unwrap();
            for &((ix, iy), (lx, ly)) in &cases {
                let got = m.image_to_logical(ImagePoint { x: ix, y: iy }).unwrap();
                assert_eq!(
                    got,
                    LogicalPoint {
                        x: origin.0 + lx,
                        y: origin.1 + ly
                    },
                    "scale {scale}, image ({ix},{iy})"
                );
            }
            // The capture pixel in the middle of a logical unit maps back to that unit.
            let c = m
                .logical_to_capture(LogicalPoint {
                    x: origin.0 + 10,
                    y: origin.1 + 20,
                })
                .unwrap();
            assert_eq!(
                c,
                CapturePoint {
                    x: 10.5 * scale,
                    y: 20.5 * scale
                }
            );
            assert_eq!(
                m.capture_to_logical(c).unwrap(),
                LogicalPoint {
                    x: origin.0 + 10,
                    y: origin.1 + 20
                }
            );
        }
    }

    #[test]
    fn out_of_bounds_is_an_error_not_a_clamp() {
        let m = Mapping::new((1280, 720), (1920, 1080), (100, 0), (1920, 1080)).unwrap();
        assert!(m
            .image_to_capture(ImagePoint { x: 1280.0, y: 0.0 })
            .is_err());
        assert!(m.image_to_capture(ImagePoint { x: -0.1, y: 0.0 }).is_err());
        assert!(m
            .image_to_capture(ImagePoint {
                x: f64::NAN,
                y: 0.0
            })
            .is_err());
        assert!(m.logical_to_capture(LogicalPoint { x: 99, y: 0 }).is_err());
        assert!(Mapping::new((0, 720), (1920, 1080), (0, 0), (1920, 1080)).is_err());
    }

    #[test]
    fn rect_ops() {
        let a = Rect::new(0, 0, 10, 10);
        let b = Rect::new(5, 5, 10, 10);
        assert_eq!(a.intersection(&b), Rect::new(5, 5, 5, 5));
        assert_eq!(a.union(&b), Rect::new(0, 0, 15, 15));
        assert!(
            !a.intersects(&Rect::new(10, 0, 5, 5)),
            "half-open: touching is not intersecting"
        );
        assert_eq!(
            a.expand_within(3, &Rect::new(0, 0, 12, 100)),
            Rect::new(0, 0, 12, 13)
        );
        assert_eq!(fit_within(800, 600, 1280, 720), (800, 600));
    }

    proptest! {
        #[test]
        fn image_to_logical_lands_on_the_monitor(
            scale_idx in 0usize..3, x in 0.0f64..1.0, y in 0.0f64..1.0, ox in -4000i32..4000, oy in -4000i32..4000,
        ) {
            let (_, cap, _, logical) = MONITORS[scale_idx];
            let (iw, ih) = fit_within(cap.0, cap.1, 1280, 720);
            let m = Mapping::new((iw, ih), cap, (ox, oy), logical).unwrap();
            let p = ImagePoint { x: x * iw as f64, y: y * ih as f64 };
            let l = m.image_to_logical(p).unwrap();
            prop_assert!(l.x >= ox && l.x < ox + logical.0 as i32);
            prop_assert!(l.y >= oy && l.y < oy + logical.1 as i32);
            // Round trip through capture stays within one logical unit of the image point.
            let back = m.capture_to_image(m.logical_to_capture(l).unwrap());
            let unit = m.scale() * (iw as f64 / cap.0 as f64);
            prop_assert!((back.x - p.x).abs() <= unit + 1e-9 && (back.y - p.y).abs() <= unit + 1e-9);
        }

        #[test]
        fn rect_to_image_covers_the_rect(x in 0i32..3000, y in 0i32..2000, w in 1i32..500, h in 1i32..200) {
            let m = Mapping::new((1280, 720), (3840, 2160), (0, 0), (1920, 1080)).unwrap();
            let r = m.capture_rect_to_image(&Rect::new(x, y, w, h));
            let c = m.capture_to_image(Rect::new(x, y, w, h).centre());
            prop_assert!(c.x >= r.x as f64 && c.x <= r.right() as f64 && c.y >= r.y as f64 && c.y <= r.bottom() as f64);
        }
    }
}
