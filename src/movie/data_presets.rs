//! Presets built from the data itself, so a first movie of any snapshot needs no path file:
//! an orbit around the particles' bounding box, a zoom into the most massive halo, a flight
//! along the most massive halos. Every camera target lies inside the data's bounds.

use super::path::CameraPath;
use super::presets::{self, HaloStop, Orbit, PresetError, Zoom};
use crate::data::Snapshot;
use crate::halo::Halo;
use glam::DVec3;

/// Which preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataPreset {
    /// One turn around the data, 20° above its middle plane.
    Orbit,
    /// From outside the data into its most massive halo.
    ZoomToHalo,
    /// Past the most massive halos, most massive first.
    FlyAlongHalos,
}

impl DataPreset {
    /// Whether the preset needs a halo catalogue.
    pub fn needs_halos(self) -> bool {
        !matches!(self, Self::Orbit)
    }
}

/// The axis-aligned box holding every particle, `(lower, upper)`; `None` without particles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataBounds {
    /// Smallest coordinate on each axis.
    pub lower: [f64; 3],
    /// Largest coordinate on each axis.
    pub upper: [f64; 3],
}

impl DataBounds {
    /// The particles' bounding box.
    pub fn of(snapshot: &Snapshot) -> Option<Self> {
        let mut lower = [f64::INFINITY; 3];
        let mut upper = [f64::NEG_INFINITY; 3];
        for p in snapshot.species.iter().flat_map(|s| &s.positions) {
            for axis in 0..3 {
                lower[axis] = lower[axis].min(f64::from(p[axis]));
                upper[axis] = upper[axis].max(f64::from(p[axis]));
            }
        }
        (lower[0] <= upper[0]).then_some(Self { lower, upper })
    }

    /// Centre of the box.
    pub fn centre(&self) -> [f64; 3] {
        [0, 1, 2].map(|i| 0.5 * (self.lower[i] + self.upper[i]))
    }

    /// Half the box's diagonal (at least a tiny positive length, for a single point).
    pub fn half_diagonal(&self) -> f64 {
        let d = DVec3::from(self.upper) - DVec3::from(self.lower);
        (0.5 * d.length()).max(1e-9)
    }

    /// Whether `p` lies in the box (closed).
    pub fn contains(&self, p: [f64; 3]) -> bool {
        (0..3).all(|i| self.lower[i] <= p[i] && p[i] <= self.upper[i])
    }
}

/// Settings shared by the data presets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataPresetOptions {
    /// Duration in seconds.
    pub duration_s: f64,
    /// Horizontal field of view (degrees).
    pub fov_deg: f64,
    /// Halos visited by [`DataPreset::FlyAlongHalos`].
    pub n_halos: usize,
}

impl Default for DataPresetOptions {
    fn default() -> Self {
        Self {
            duration_s: 10.0,
            fov_deg: 60.0,
            n_halos: 6,
        }
    }
}

/// The camera path of `preset` for data within `bounds`; the halo presets take the most massive
/// of `halos` whose centres lie inside the bounds and whose radii are positive.
pub fn data_preset_path(
    preset: DataPreset,
    bounds: &DataBounds,
    halos: &[Halo],
    options: &DataPresetOptions,
) -> Result<CameraPath, PresetError> {
    let ease_s = 0.1 * options.duration_s;
    // Far enough that the whole box's bounding sphere fits the view.
    let outside = 1.1 * bounds.half_diagonal() / (0.5 * options.fov_deg.to_radians()).tan();
    let up = [0.0, 0.0, 1.0];
    let mut inside: Vec<&Halo> = halos
        .iter()
        .filter(|h| bounds.contains(h.com) && radius_of(h) > 0.0)
        .collect();
    inside.sort_by(|a, b| b.mass.total_cmp(&a.mass));
    let no_halos = PresetError::Parameter {
        name: "halos",
        reason: "no halo of the catalogue lies inside the data's bounds",
    };
    match preset {
        DataPreset::Orbit => presets::orbit(
            &Orbit {
                center: bounds.centre(),
                radius: outside,
                axis: up,
                start_direction: [0.0, -1.0, 0.0],
                elevation_deg: 20.0,
                turns: 1.0,
                duration_s: options.duration_s,
                fov_deg: options.fov_deg,
            },
            ease_s,
        ),
        DataPreset::ZoomToHalo => {
            let halo = inside.first().ok_or(no_halos)?;
            let radius = radius_of(halo);
            let end = presets::framing_distance(radius, options.fov_deg);
            presets::zoom_to_halo(
                &Zoom {
                    center: halo.com,
                    radius,
                    direction: [0.3, -1.0, 0.4],
                    start_distance: outside.max(4.0 * end),
                    end_distance: None,
                    up,
                    duration_s: options.duration_s,
                    fov_deg: options.fov_deg,
                },
                ease_s,
            )
        }
        DataPreset::FlyAlongHalos => {
            if inside.is_empty() {
                return Err(no_halos);
            }
            let stops: Vec<HaloStop> = inside
                .iter()
                .take(options.n_halos.max(2))
                .map(|h| HaloStop {
                    center: h.com,
                    radius: radius_of(h),
                })
                .collect();
            presets::fly_along_halos(&stops, up, options.fov_deg, options.duration_s, ease_s)
        }
    }
}

/// The radius a halo is framed by: its largest member distance, else its rms radius.
fn radius_of(h: &Halo) -> f64 {
    if h.radius_max > 0.0 {
        h.radius_max
    } else {
        h.radius_rms
    }
}
