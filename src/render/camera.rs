//! Look-at camera (perspective with a horizontal field of view, or orthographic) and the
//! default view that frames the whole data set.
//!
//! Conventions (DESIGN §4, after Splotch `particle_project`, notes §6): ẑ =
//! normalise(camera − lookat), x̂ = normalise(up × ẑ), ŷ = ẑ × x̂; the camera looks along −ẑ and
//! depth = −z_c.

use super::RenderError;
use crate::data::{Snapshot, Species, SpeciesKind};
use rayon::prelude::*;

/// Perspective or orthographic projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Projection {
    /// Scale s = (W/2)/(tan(fov/2)·depth).
    #[default]
    Perspective,
    /// Constant scale s = (W/2)/(tan(fov/2)·|camera − lookat|): the view matches the
    /// perspective one at the look-at plane.
    Orthographic,
}

/// A look-at camera in world units (f64: positions of big boxes need the precision here; the
/// per-particle maths in [`super::project`] runs in f32 on camera-relative values).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Camera {
    /// Eye position (world units).
    pub position: [f64; 3],
    /// Point the camera looks at (world units).
    pub lookat: [f64; 3],
    /// Up direction; points up in the image. Need not be unit or orthogonal to the view.
    pub up: [f64; 3],
    /// Horizontal field of view in degrees, in (0, 180).
    pub fov_deg: f64,
    /// Perspective or orthographic.
    pub projection: Projection,
    /// Particles need depth > `near` (≥ 0) ...
    pub near: f64,
    /// ... and depth < `far` (may be infinite).
    pub far: f64,
}

/// Axis-aligned bounding box of particle positions (world units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Smallest x, y, z.
    pub min: [f64; 3],
    /// Largest x, y, z.
    pub max: [f64; 3],
}

impl Bounds {
    /// Bounds of the finite positions of `species`; `None` when there are none.
    pub fn of_species<'a>(species: impl IntoIterator<Item = &'a Species>) -> Option<Self> {
        // Minima and maxima do not depend on the order they are taken in: chunks on threads.
        let empty = || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        let merge = |(amin, amax): ([f64; 3], [f64; 3]), (bmin, bmax): ([f64; 3], [f64; 3])| {
            (
                std::array::from_fn(|axis| amin[axis].min(bmin[axis])),
                std::array::from_fn(|axis| amax[axis].max(bmax[axis])),
            )
        };
        let (min, max) = species
            .into_iter()
            .map(|s| {
                s.positions
                    .par_chunks(1 << 16)
                    .map(|points| {
                        let (mut min, mut max) = empty();
                        for p in points.iter().filter(|p| p.iter().all(|v| v.is_finite())) {
                            for axis in 0..3 {
                                min[axis] = min[axis].min(f64::from(p[axis]));
                                max[axis] = max[axis].max(f64::from(p[axis]));
                            }
                        }
                        (min, max)
                    })
                    .reduce(empty, merge)
            })
            .fold(empty(), merge);
        (min[0] <= max[0]).then_some(Self { min, max })
    }

    /// Bounds of the species `kinds` of `snapshot` (all species when `kinds` is empty).
    pub fn of_snapshot(snapshot: &Snapshot, kinds: &[SpeciesKind]) -> Option<Self> {
        Self::of_species(
            snapshot
                .species
                .iter()
                .filter(|s| kinds.is_empty() || kinds.contains(&s.kind)),
        )
    }

    /// Centre of the box.
    pub fn centre(&self) -> [f64; 3] {
        std::array::from_fn(|axis| 0.5 * (self.min[axis] + self.max[axis]))
    }

    /// Edge lengths.
    pub fn extent(&self) -> [f64; 3] {
        std::array::from_fn(|axis| self.max[axis] - self.min[axis])
    }
}

/// Orthonormal camera basis, checked (see [`Camera::basis`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CameraBasis {
    /// Image right.
    pub x_hat: [f64; 3],
    /// Image up.
    pub y_hat: [f64; 3],
    /// Backwards (the camera looks along −ẑ).
    pub z_hat: [f64; 3],
    /// |camera − lookat|.
    pub distance: f64,
}

/// Default horizontal field of view of the framing camera (Splotch's `fov` default).
pub const DEFAULT_FOV_DEG: f64 = 45.0;

impl Camera {
    /// A perspective camera with no depth limits beyond depth > 0.
    pub fn look_at(position: [f64; 3], lookat: [f64; 3], up: [f64; 3], fov_deg: f64) -> Self {
        Self {
            position,
            lookat,
            up,
            fov_deg,
            projection: Projection::Perspective,
            near: 0.0,
            far: f64::INFINITY,
        }
    }

    /// The default view: from +z looking down −z with +y up, the whole box visible in an image
    /// of `width`×`height` pixels (5 % margin), perspective with a 45° horizontal field of view.
    pub fn frame_all(bounds: &Bounds, width: u32, height: u32) -> Self {
        let centre = bounds.centre();
        let extent = bounds.extent();
        let tan_half = (DEFAULT_FOV_DEG.to_radians() * 0.5).tan();
        let aspect = f64::from(width.max(1)) / f64::from(height.max(1));
        // The near face (z = max) must show half-width ex/2 horizontally and half-height ey/2
        // vertically, where the vertical half-view is tan(fov/2)·depth/aspect.
        let half_needed = (0.5 * extent[0]).max(0.5 * extent[1] * aspect) * 1.05;
        let mut near_face_depth = half_needed / tan_half;
        if near_face_depth <= 0.0 {
            // A single point or a line along z: any positive distance frames it.
            near_face_depth = extent[2].max(1.0);
        }
        let distance = 0.5 * extent[2] + near_face_depth;
        Self::look_at(
            [centre[0], centre[1], centre[2] + distance],
            centre,
            [0.0, 1.0, 0.0],
            DEFAULT_FOV_DEG,
        )
    }

    /// The checked orthonormal basis; an error for non-finite values, camera = lookat, an up
    /// vector parallel to the view direction, a field of view outside (0°, 180°) or bad near/far.
    pub fn basis(&self) -> Result<CameraBasis, RenderError> {
        let finite = |v: &[f64; 3]| v.iter().all(|x| x.is_finite());
        if !finite(&self.position) || !finite(&self.lookat) || !finite(&self.up) {
            return Err(RenderError::camera(
                "camera, lookat and up must be finite numbers",
            ));
        }
        if !(self.fov_deg > 0.0 && self.fov_deg < 180.0) {
            return Err(RenderError::camera(format!(
                "field of view {} degrees is outside (0, 180)",
                self.fov_deg
            )));
        }
        if !(self.near >= 0.0 && self.far > self.near) || self.near.is_infinite() {
            return Err(RenderError::camera(format!(
                "near {} and far {} must satisfy 0 <= near < far",
                self.near, self.far
            )));
        }
        let back = sub(self.position, self.lookat);
        let distance = norm(back);
        if distance.is_nan() || distance <= 0.0 || distance.is_infinite() {
            return Err(RenderError::camera("camera and lookat are the same point"));
        }
        let z_hat = scale(back, 1.0 / distance);
        let up_norm = norm(self.up);
        let side = cross(self.up, z_hat);
        let side_norm = norm(side);
        // |up × ẑ| = |up|·sin(angle): parallel (or zero) up vectors leave no image x axis.
        if up_norm.is_nan() || up_norm <= 0.0 || side_norm.is_nan() || side_norm <= 1e-9 * up_norm {
            return Err(RenderError::camera(
                "up vector is zero or parallel to the view direction",
            ));
        }
        let x_hat = scale(side, 1.0 / side_norm);
        let y_hat = cross(z_hat, x_hat);
        Ok(CameraBasis {
            x_hat,
            y_hat,
            z_hat,
            distance,
        })
    }
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn scale(a: [f64; 3], k: f64) -> [f64; 3] {
    [a[0] * k, a[1] * k, a[2] * k]
}

fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basis_follows_the_issue_convention() {
        let camera = Camera::look_at([0.0, 0.0, 5.0], [0.0; 3], [0.0, 1.0, 0.0], 60.0);
        let basis = camera.basis().expect("valid camera");
        assert_eq!(basis.z_hat, [0.0, 0.0, 1.0]);
        assert_eq!(basis.x_hat, [1.0, 0.0, 0.0]);
        assert_eq!(basis.y_hat, [0.0, 1.0, 0.0]);
        assert_eq!(basis.distance, 5.0);
    }

    #[test]
    fn bad_cameras_are_errors() {
        let good = Camera::look_at([0.0, 0.0, 5.0], [0.0; 3], [0.0, 1.0, 0.0], 60.0);
        let mut nan = good;
        nan.position[1] = f64::NAN;
        let mut parallel = good;
        parallel.up = [0.0, 0.0, 2.0];
        let mut same = good;
        same.lookat = same.position;
        let mut fov = good;
        fov.fov_deg = 180.0;
        for bad in [nan, parallel, same, fov] {
            assert!(
                matches!(bad.basis(), Err(RenderError::Camera(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn frame_all_puts_the_box_inside_the_view() {
        let bounds = Bounds {
            min: [0.0, 0.0, 0.0],
            max: [10.0, 4.0, 2.0],
        };
        let camera = Camera::frame_all(&bounds, 400, 200);
        assert_eq!(camera.lookat, [5.0, 2.0, 1.0]);
        let depth_near_face = camera.position[2] - 2.0;
        let tan_half = (camera.fov_deg.to_radians() / 2.0).tan();
        // Horizontal: 5 must fit; vertical: 2 must fit in half-height tan·depth/2.
        assert!(tan_half * depth_near_face >= 5.0);
        assert!(tan_half * depth_near_face / 2.0 >= 2.0);
        assert!((tan_half * depth_near_face - 5.25).abs() < 1e-9);
    }
}
