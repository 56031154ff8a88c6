//! Double-click re-centring: the brightest pixel near the cursor on the image shown, then the
//! depth of the particles that light it (on a worker: it projects every particle).

use super::camera::OrbitCamera;
use super::overlay::ScreenProjector;
use super::viewport_renderer::{Pixels, ViewStyle};
use crate::data::Snapshot;
use crate::jobs::{Cancelled, Progress};
use egui::{Pos2, Rect, Vec2};
use rayon::prelude::*;
use std::sync::Arc;

/// Particles within this many points of the picked pixel decide its depth.
pub const PICK_RADIUS_POINTS: f32 = 4.0;

/// Points around a double-click searched for the brightest pixel.
pub const SNAP_RADIUS_POINTS: f32 = 12.0;

/// The image on screen, for finding the brightest pixel near a double-click. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ShownImage {
    /// Width in pixels.
    pub width_px: u32,
    /// Height in pixels.
    pub height_px: u32,
    /// Its pixels, in host memory or on the window's device.
    pub pixels: Arc<Pixels>,
}

impl ShownImage {
    /// The brightest pixel within `radius_px` of (`x`, `y`) as [`brightest_near`] finds it,
    /// reading back only the pixels around it where the image is on the device (this waits for
    /// the device: workers only).
    pub fn brightest_near(
        &self,
        x: f32,
        y: f32,
        radius_px: f32,
    ) -> Result<Option<(u32, u32)>, String> {
        let (w, h) = (self.width_px, self.height_px);
        match &*self.pixels {
            Pixels::Host(rgba) => Ok(brightest_near(rgba, w, h, x, y, radius_px)),
            Pixels::Device(frame) => {
                let Some((x0, y0, x1, y1)) = window_around(w, h, x, y, radius_px) else {
                    return Ok(None);
                };
                let rgba = frame
                    .read_rgba((x0, y0), (x1 - x0, y1 - y0))
                    .map_err(|err| format!("reading the image around the click: {err}"))?;
                let sum_at = |column: u32, row: u32| {
                    let i = ((row - y0) as usize * (x1 - x0) as usize + (column - x0) as usize) * 4;
                    rgb_sum(&rgba[i..i + 3])
                };
                Ok(brightest_in(sum_at, (x0, y0, x1, y1), x, y, radius_px))
            }
        }
    }

    /// The brightest point within [`SNAP_RADIUS_POINTS`] of `at` (points from the corner of a
    /// viewport of `size_points`), in the same points; `at` itself when there is none.
    pub fn snap(&self, at: Pos2, size_points: Vec2) -> Result<Pos2, String> {
        let per_point = self.width_px as f32 / size_points.x.max(1.0);
        let found = self.brightest_near(
            at.x * per_point,
            at.y * per_point,
            SNAP_RADIUS_POINTS * per_point,
        )?;
        Ok(found.map_or(at, |(x, y)| {
            Pos2::new((x as f32 + 0.5) / per_point, (y as f32 + 0.5) / per_point)
        }))
    }
}

/// The brightest pixel (sum of R, G, B) of an RGBA image within `radius_px` of (`x`, `y`),
/// ties to the nearest; `None` when the window misses the image.
pub fn brightest_near(
    rgba: &[u8],
    width_px: u32,
    height_px: u32,
    x: f32,
    y: f32,
    radius_px: f32,
) -> Option<(u32, u32)> {
    if rgba.len() != width_px as usize * height_px as usize * 4 {
        return None;
    }
    let window = window_around(width_px, height_px, x, y, radius_px)?;
    let sum_at = |column: u32, row: u32| {
        let i = (row as usize * width_px as usize + column as usize) * 4;
        rgb_sum(&rgba[i..i + 3])
    };
    brightest_in(sum_at, window, x, y, radius_px)
}

fn rgb_sum(rgb: &[u8]) -> u32 {
    rgb.iter().map(|&c| u32::from(c)).sum()
}

/// The pixels [x0, x1) × [y0, y1) of a `width_px`×`height_px` image that a disc of `radius_px`
/// around (`x`, `y`) may touch; `None` when that is none.
fn window_around(
    width_px: u32,
    height_px: u32,
    x: f32,
    y: f32,
    radius_px: f32,
) -> Option<(u32, u32, u32, u32)> {
    let x0 = (x - radius_px).floor().max(0.0) as u32;
    let y0 = (y - radius_px).floor().max(0.0) as u32;
    let x1 = ((x + radius_px).ceil().max(0.0) as u32).min(width_px);
    let y1 = ((y + radius_px).ceil().max(0.0) as u32).min(height_px);
    (x0 < x1 && y0 < y1).then_some((x0, y0, x1, y1))
}

/// The pixel of `window` within `radius_px` of (`x`, `y`) with the largest `sum_at`, ties to
/// the nearest.
fn brightest_in(
    sum_at: impl Fn(u32, u32) -> u32,
    (x0, y0, x1, y1): (u32, u32, u32, u32),
    x: f32,
    y: f32,
    radius_px: f32,
) -> Option<(u32, u32)> {
    let mut best: Option<((u32, f32), (u32, u32))> = None;
    for row in y0..y1 {
        for column in x0..x1 {
            let (dx, dy) = (column as f32 + 0.5 - x, row as f32 + 0.5 - y);
            let d2 = dx * dx + dy * dy;
            if d2 > radius_px * radius_px {
                continue;
            }
            let sum = sum_at(column, row);
            let better = match best {
                None => true,
                Some(((s, d), _)) => sum > s || (sum == s && d2 < d),
            };
            if better {
                best = Some(((sum, d2), (column, row)));
            }
        }
    }
    best.map(|(_, at)| at)
}

/// What a pick needs: the particles and how they are drawn, the view and where.
#[derive(Debug, Clone)]
pub struct PickRequest {
    /// The particles.
    pub snapshot: Arc<Snapshot>,
    /// Which species are drawn.
    pub style: ViewStyle,
    /// The view.
    pub camera: OrbitCamera,
    /// Viewport size in points.
    pub size_points: Vec2,
    /// Where the user double-clicked, in points from the viewport's top-left corner.
    pub at: Pos2,
    /// The image on screen: the pick starts from its brightest pixel near `at` (else at `at`).
    pub image: Option<ShownImage>,
}

/// The world point under the brightest pixel near `request.at` (see [`ShownImage::snap`])
/// where the drawn particles are densest: the median depth of the particles projecting within
/// [`PICK_RADIUS_POINTS`] of it, each weighted by 1/h³ (a density proxy: small smoothing lengths
/// sit in dense gas and halos). `None` when none projects there.
pub fn pick_point(
    request: &PickRequest,
    progress: &Progress,
) -> Result<Option<[f64; 3]>, Cancelled> {
    let at = match &request.image {
        Some(image) => image
            .snap(request.at, request.size_points)
            .unwrap_or_else(|err| {
                log::warn!("{err}; picking at the cursor");
                request.at
            }),
        None => request.at,
    };
    let rect = Rect::from_min_size(Pos2::ZERO, request.size_points);
    let Some(projector) = ScreenProjector::new(&request.camera, rect) else {
        return Ok(None);
    };
    let mut hits: Vec<(f64, f64)> = Vec::new();
    for species in &request.snapshot.species {
        progress.check()?;
        if !request
            .style
            .species(species.kind)
            .is_some_and(|s| s.enabled)
        {
            continue;
        }
        let h = species.smoothing_lengths.as_deref();
        let found: Vec<(f64, f64)> = species
            .positions
            .par_iter()
            .enumerate()
            .with_min_len(4096)
            .filter_map(|(i, p)| {
                let (pos, depth, _) = projector.project(p.map(f64::from))?;
                if pos.distance(at) > PICK_RADIUS_POINTS {
                    return None;
                }
                let weight = h.map_or(1.0, |h| {
                    let h = f64::from(h[i]);
                    if h > 0.0 { 1.0 / (h * h * h) } else { 0.0 }
                });
                (weight > 0.0 && weight.is_finite()).then_some((depth, weight))
            })
            .collect();
        hits.extend(found);
    }
    let Some(depth) = weighted_median(&mut hits) else {
        return Ok(None);
    };
    Ok(Some(projector.unproject(at, depth)))
}

/// The value where the cumulative weight first reaches half the total.
fn weighted_median(samples: &mut [(f64, f64)]) -> Option<f64> {
    let total: f64 = samples.iter().map(|s| s.1).sum();
    if samples.is_empty() || total.is_nan() || total <= 0.0 {
        return None;
    }
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sum = 0.0;
    for &(value, weight) in samples.iter() {
        sum += weight;
        if sum >= 0.5 * total {
            return Some(value);
        }
    }
    samples.last().map(|s| s.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Species, SpeciesKind};

    #[test]
    fn brightest_pixel_in_the_window_wins() {
        let (w, h) = (8u32, 6u32);
        let mut rgba = vec![0u8; (w * h * 4) as usize];
        let mut set = |x: u32, y: u32, v: u8| {
            let i = ((y * w + x) * 4) as usize;
            rgba[i..i + 3].copy_from_slice(&[v, v, v]);
        };
        set(2, 2, 100);
        set(3, 2, 200);
        set(7, 5, 255);
        assert_eq!(brightest_near(&rgba, w, h, 2.5, 2.5, 2.0), Some((3, 2)));
        // The brighter pixel at (7, 5) is outside the window.
        assert_eq!(brightest_near(&rgba, w, h, 2.5, 2.5, 3.0), Some((3, 2)));
        assert_eq!(brightest_near(&rgba, w, h, 6.5, 4.5, 2.0), Some((7, 5)));
        assert_eq!(brightest_near(&rgba, w, h, -50.0, 2.0, 2.0), None);
    }

    #[test]
    fn pick_finds_the_depth_of_the_dense_clump() {
        // A loose particle in front and a dense clump behind, both on the line of sight.
        let mut dark = Species::empty(SpeciesKind::Dark);
        dark.positions = vec![[0.0, 0.0, 1.0], [0.0, 0.0, -0.5], [0.0, 0.0, -0.5]];
        dark.smoothing_lengths = Some(vec![0.5, 0.05, 0.05]);
        let snapshot = Snapshot {
            header: crate::data::Header::default(),
            species: vec![dark],
            source: crate::data::SourceInfo {
                paths: Vec::new(),
                format: crate::data::SnapshotFormat::Demo,
                byte_order: None,
                header_bytes: None,
                particles_in_file: 3,
            },
        };
        let request = PickRequest {
            snapshot: Arc::new(snapshot),
            style: ViewStyle::default(),
            camera: OrbitCamera::default(),
            size_points: egui::vec2(400.0, 300.0),
            at: egui::pos2(200.0, 150.0),
            image: None,
        };
        let point = pick_point(&request, &Progress::none())
            .expect("not cancelled")
            .expect("hit");
        assert!(point[0].abs() < 1e-9 && point[1].abs() < 1e-9);
        assert!((point[2] + 0.5).abs() < 1e-9, "{point:?}");
        let missed = PickRequest {
            at: egui::pos2(10.0, 10.0),
            ..request
        };
        assert_eq!(pick_point(&missed, &Progress::none()), Ok(None));
    }
}
