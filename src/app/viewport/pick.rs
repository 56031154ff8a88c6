//! Double-click re-centring: the brightest pixel near the cursor on the image shown, then the
//! depth of the particles that light it (on a worker: it projects every particle).

use super::camera::OrbitCamera;
use super::overlay::ScreenProjector;
use super::viewport_renderer::ViewStyle;
use crate::data::Snapshot;
use crate::jobs::{Cancelled, Progress};
use egui::{Pos2, Rect, Vec2};
use rayon::prelude::*;
use std::sync::Arc;

/// Particles within this many points of the picked pixel decide its depth.
pub const PICK_RADIUS_POINTS: f32 = 4.0;

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
    let x0 = (x - radius_px).floor().max(0.0) as u32;
    let y0 = (y - radius_px).floor().max(0.0) as u32;
    let x1 = ((x + radius_px).ceil().max(0.0) as u32).min(width_px);
    let y1 = ((y + radius_px).ceil().max(0.0) as u32).min(height_px);
    let mut best: Option<((u32, f32), (u32, u32))> = None;
    for row in y0..y1 {
        for column in x0..x1 {
            let (dx, dy) = (column as f32 + 0.5 - x, row as f32 + 0.5 - y);
            let d2 = dx * dx + dy * dy;
            if d2 > radius_px * radius_px {
                continue;
            }
            let i = (row as usize * width_px as usize + column as usize) * 4;
            let sum = u32::from(rgba[i]) + u32::from(rgba[i + 1]) + u32::from(rgba[i + 2]);
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
    /// The picked point, in points from the viewport's top-left corner.
    pub at: Pos2,
}

/// The world point under `request.at` where the drawn particles are densest: the median depth
/// of the particles projecting within [`PICK_RADIUS_POINTS`], each weighted by 1/h³ (a density
/// proxy: small smoothing lengths sit in dense gas and halos). `None` when none projects there.
pub fn pick_point(
    request: &PickRequest,
    progress: &Progress,
) -> Result<Option<[f64; 3]>, Cancelled> {
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
                if pos.distance(request.at) > PICK_RADIUS_POINTS {
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
    Ok(Some(projector.unproject(request.at, depth)))
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
