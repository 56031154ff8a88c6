//! A short camera flight from one view to another (double-click re-centre, fly to a halo).

use super::camera::OrbitCamera;
use glam::Vec3;
use std::time::{Duration, Instant};

/// How long a glide takes.
pub const GLIDE_DURATION: Duration = Duration::from_millis(600);

/// A flight between two cameras, eased in and out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Glide {
    from: OrbitCamera,
    to: OrbitCamera,
    start: Instant,
    duration: Duration,
}

/// Smoothstep easing 3t² − 2t³ on [0, 1].
fn ease(t: f32) -> f32 {
    let t = t.clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

impl Glide {
    /// A glide from `from` to `to` starting at `start`.
    pub fn new(from: OrbitCamera, to: OrbitCamera, start: Instant) -> Self {
        Self {
            from,
            to,
            start,
            duration: GLIDE_DURATION,
        }
    }

    /// Where the glide ends.
    pub fn target(&self) -> OrbitCamera {
        self.to
    }

    /// The camera at `now` and whether the glide is over. The look-at point moves on a line; the
    /// eye follows as look-at + offset, the offset's direction and length interpolated apart so
    /// the view turns smoothly and the distance changes geometrically.
    pub fn at(&self, now: Instant) -> (OrbitCamera, bool) {
        let t = now.saturating_duration_since(self.start).as_secs_f32()
            / self.duration.as_secs_f32().max(1e-6);
        if t >= 1.0 {
            return (self.to, true);
        }
        let s = ease(t);
        let look_at = self.from.look_at().lerp(self.to.look_at(), s);
        let (d0, d1) = (self.from.distance(), self.to.distance());
        let distance = if d0 > 0.0 && d1 > 0.0 {
            d0 * (d1 / d0).powf(s)
        } else {
            d0 + (d1 - d0) * s
        };
        let back0 = -self.from.forward();
        let back1 = -self.to.forward();
        let back = back0.lerp(back1, s).normalize_or(back1);
        let up = self
            .from
            .up()
            .lerp(self.to.up(), s)
            .normalize_or(self.to.up());
        let mut camera = self.to;
        camera.look_at_world = look_at.into();
        camera.eye_world = (look_at + back * distance).into();
        camera.up_world = up.into();
        camera.fov_y_deg = self.from.fov_y_deg + (self.to.fov_y_deg - self.from.fov_y_deg) * s;
        (camera, false)
    }
}

/// The view of `centre_world` from the direction of `camera`, at `distance`.
pub fn looking_at(camera: &OrbitCamera, centre_world: [f64; 3], distance: f32) -> OrbitCamera {
    let centre = Vec3::new(
        centre_world[0] as f32,
        centre_world[1] as f32,
        centre_world[2] as f32,
    );
    let mut out = *camera;
    out.look_at_world = centre.into();
    out.eye_world = (centre - camera.forward() * distance.max(1e-6)).into();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glide_starts_ends_and_moves_monotonically() {
        let from = OrbitCamera::default();
        let to = looking_at(&from, [1.0, 2.0, 0.0], 0.3);
        assert_eq!(to.look_at_world, [1.0, 2.0, 0.0]);
        assert!((to.distance() - 0.3).abs() < 1e-6);
        let start = Instant::now();
        let glide = Glide::new(from, to, start);
        let (first, done) = glide.at(start);
        assert!(!done);
        assert!((first.eye() - from.eye()).length() < 1e-5);
        let (middle, _) = glide.at(start + GLIDE_DURATION / 2);
        // Half way in eased time: the look-at point is half way, the distance geometric.
        assert!((middle.look_at() - Vec3::new(0.5, 1.0, 0.0)).length() < 1e-5);
        assert!((middle.distance() - (3.0f32 * 0.3).sqrt()).abs() < 1e-4);
        let (end, done) = glide.at(start + GLIDE_DURATION);
        assert!(done);
        assert_eq!(end, to);
    }
}
