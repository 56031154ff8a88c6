//! Ready-made camera paths: orbit a point, zoom into a halo, fly along a list of halos.

use super::keyframe::{Keyframe, PathError, RenderSettings, Timing};
use super::path::CameraPath;
use glam::DVec3;
use std::f64::consts::TAU;

/// Keyframes per full turn of an orbit: with 16, the centripetal Catmull–Rom curve through them
/// stays within about 2·10⁻⁴ of the circle's radius.
const ORBIT_KEYFRAMES_PER_TURN: f64 = 16.0;
/// Keyframes of a zoom (distances spaced geometrically between them).
const ZOOM_KEYFRAMES: usize = 6;

/// A preset's parameters do not make a path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PresetError {
    /// A parameter is out of range.
    #[error("{name}: {reason}")]
    Parameter {
        /// Which parameter.
        name: &'static str,
        /// What is expected.
        reason: &'static str,
    },
    /// The keyframes made do not form a valid path (e.g. the view runs along `up`).
    #[error(transparent)]
    Path(#[from] PathError),
}

fn require(ok: bool, name: &'static str, reason: &'static str) -> Result<(), PresetError> {
    if ok {
        Ok(())
    } else {
        Err(PresetError::Parameter { name, reason })
    }
}

/// Distance at which a sphere of `radius` fills about half the width of a view of horizontal
/// field of view `fov_deg`: the half-width d·tan(fov/2) equals 2·radius.
pub fn framing_distance(radius: f64, fov_deg: f64) -> f64 {
    2.0 * radius / (0.5 * fov_deg.to_radians()).tan()
}

/// A circle (or several turns) around `center`, always looking at it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Orbit {
    /// Point looked at and orbited.
    pub center: [f64; 3],
    /// Distance of the camera from the centre.
    pub radius: f64,
    /// Axis of the orbit, also the camera's up.
    pub axis: [f64; 3],
    /// Direction (from the centre) of the first camera position; projected onto the orbit plane.
    pub start_direction: [f64; 3],
    /// Height above the orbit plane, as an angle seen from the centre (degrees, |·| < 90).
    pub elevation_deg: f64,
    /// Number of turns (negative = clockwise seen from the axis).
    pub turns: f64,
    /// Duration in seconds.
    pub duration_s: f64,
    /// Horizontal field of view (degrees).
    pub fov_deg: f64,
}

/// The camera path of an [`Orbit`] at constant speed, easing in and out over `ease_s`.
pub fn orbit(orbit: &Orbit, ease_s: f64) -> Result<CameraPath, PresetError> {
    require(orbit.radius > 0.0, "radius", "must be > 0")?;
    require(
        orbit.turns != 0.0 && orbit.turns.is_finite(),
        "turns",
        "must be finite and ≠ 0",
    )?;
    require(orbit.duration_s > 0.0, "duration_s", "must be > 0")?;
    require(
        orbit.elevation_deg.abs() < 90.0,
        "elevation_deg",
        "must lie in (−90, 90)",
    )?;
    let axis = DVec3::from(orbit.axis).normalize_or_zero();
    require(axis != DVec3::ZERO, "axis", "must not be zero")?;
    let start = DVec3::from(orbit.start_direction);
    let first = (start - axis * start.dot(axis)).normalize_or_zero();
    require(
        first != DVec3::ZERO,
        "start_direction",
        "must not be parallel to the axis",
    )?;
    let second = axis.cross(first);
    let center = DVec3::from(orbit.center);
    let elevation = orbit.elevation_deg.to_radians();
    let n = (ORBIT_KEYFRAMES_PER_TURN * orbit.turns.abs()).ceil() as usize + 1;
    let keyframes = (0..n)
        .map(|k| {
            let fraction = k as f64 / (n - 1) as f64;
            let angle = TAU * orbit.turns * fraction;
            let in_plane = first * angle.cos() + second * angle.sin();
            let offset = (in_plane * elevation.cos() + axis * elevation.sin()) * orbit.radius;
            Keyframe {
                time_s: orbit.duration_s * fraction,
                position: (center + offset).to_array(),
                look_at: orbit.center,
                up: axis.to_array(),
                fov_deg: orbit.fov_deg,
                settings: RenderSettings::default(),
            }
        })
        .collect();
    let timing = Timing {
        constant_speed: true,
        ease_s,
    };
    Ok(CameraPath::new(keyframes, timing, false)?)
}

/// A zoom from far away into a halo, always looking at its centre.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zoom {
    /// Halo centre.
    pub center: [f64; 3],
    /// Halo radius (e.g. its rms radius from the FoF catalogue).
    pub radius: f64,
    /// Direction from the centre towards the camera.
    pub direction: [f64; 3],
    /// Starting distance from the centre.
    pub start_distance: f64,
    /// Final distance; `None` = [`framing_distance`] of the halo.
    pub end_distance: Option<f64>,
    /// Camera up.
    pub up: [f64; 3],
    /// Duration in seconds.
    pub duration_s: f64,
    /// Horizontal field of view (degrees).
    pub fov_deg: f64,
}

/// The camera path of a [`Zoom`]: distances shrink geometrically (equal zoom factor per second,
/// which the eye reads as steady), easing in and out over `ease_s`.
pub fn zoom_to_halo(zoom: &Zoom, ease_s: f64) -> Result<CameraPath, PresetError> {
    require(zoom.radius > 0.0, "radius", "must be > 0")?;
    require(zoom.duration_s > 0.0, "duration_s", "must be > 0")?;
    let end = zoom
        .end_distance
        .unwrap_or_else(|| framing_distance(zoom.radius, zoom.fov_deg));
    require(end > 0.0 && end.is_finite(), "end_distance", "must be > 0")?;
    require(
        zoom.start_distance > end && zoom.start_distance.is_finite(),
        "start_distance",
        "must be larger than the end distance",
    )?;
    let direction = DVec3::from(zoom.direction).normalize_or_zero();
    require(direction != DVec3::ZERO, "direction", "must not be zero")?;
    let center = DVec3::from(zoom.center);
    let ratio = end / zoom.start_distance;
    let keyframes = (0..ZOOM_KEYFRAMES)
        .map(|k| {
            let fraction = k as f64 / (ZOOM_KEYFRAMES - 1) as f64;
            let distance = zoom.start_distance * ratio.powf(fraction);
            Keyframe {
                time_s: zoom.duration_s * fraction,
                position: (center + direction * distance).to_array(),
                look_at: zoom.center,
                up: zoom.up,
                fov_deg: zoom.fov_deg,
                settings: RenderSettings::default(),
            }
        })
        .collect();
    let timing = Timing {
        constant_speed: false,
        ease_s,
    };
    Ok(CameraPath::new(keyframes, timing, false)?)
}

/// One stop of a fly-by: a halo centre and radius.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HaloStop {
    /// Halo centre.
    pub center: [f64; 3],
    /// Halo radius.
    pub radius: f64,
}

/// A flight past each halo in turn, at its framing distance to the side of the line of flight,
/// looking at it; constant speed, easing in and out over `ease_s`.
pub fn fly_along_halos(
    halos: &[HaloStop],
    up: [f64; 3],
    fov_deg: f64,
    duration_s: f64,
    ease_s: f64,
) -> Result<CameraPath, PresetError> {
    require(halos.len() >= 2, "halos", "need at least 2 halos")?;
    require(duration_s > 0.0, "duration_s", "must be > 0")?;
    require(
        halos.iter().all(|h| h.radius > 0.0),
        "halos",
        "every radius must be > 0",
    )?;
    let up_world = DVec3::from(up).normalize_or_zero();
    require(up_world != DVec3::ZERO, "up", "must not be zero")?;
    let centers: Vec<DVec3> = halos.iter().map(|h| DVec3::from(h.center)).collect();
    let n = centers.len();
    let mut previous_side: Option<DVec3> = None;
    let mut positions = Vec::with_capacity(n);
    for (k, halo) in halos.iter().enumerate() {
        // Direction of flight here: the central difference of the halo centres.
        let travel =
            (centers[(k + 1).min(n - 1)] - centers[k.saturating_sub(1)]).normalize_or_zero();
        let mut side = travel.cross(up_world).normalize_or_zero();
        if side == DVec3::ZERO {
            side = travel.any_orthonormal_vector();
        }
        // Keep to the same side of the line of flight as at the previous halo.
        if let Some(previous) = previous_side
            && side.dot(previous) < 0.0
        {
            side = -side;
        }
        previous_side = Some(side);
        positions.push(centers[k] + side * framing_distance(halo.radius, fov_deg));
    }
    // Keyframe times proportional to the distance flown, so the motion is even before the
    // arc-length reparameterisation refines it.
    let mut lengths = vec![0.0];
    for pair in positions.windows(2) {
        let total = lengths.last().copied().unwrap_or(0.0);
        lengths.push(total + pair[0].distance(pair[1]));
    }
    let total = lengths.last().copied().unwrap_or(0.0);
    require(total > 0.0, "halos", "the halos must not all coincide")?;
    let keyframes = positions
        .iter()
        .zip(&lengths)
        .zip(halos)
        .map(|((position, length), halo)| Keyframe {
            time_s: duration_s * length / total,
            position: position.to_array(),
            look_at: halo.center,
            up,
            fov_deg,
            settings: RenderSettings::default(),
        })
        .collect();
    let timing = Timing {
        constant_speed: true,
        ease_s,
    };
    Ok(CameraPath::new(keyframes, timing, false)?)
}
