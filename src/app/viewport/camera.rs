//! The viewport's orbit camera: rotate about the look-at point, pan, zoom, frame all.
//!
//! World space is the snapshot's own (the file's length unit). The camera is a look-at camera
//! (eye, look-at, up) like the renderer's, so converting is a field copy.

use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};

/// Radians of rotation per point of mouse drag.
const ROTATE_RAD_PER_POINT: f32 = 0.008;
/// Zoom factor per point of scroll: distance ×= exp(−scroll · this).
pub(crate) const ZOOM_PER_POINT: f32 = 0.004;
/// Margin around the bounding sphere when framing everything.
const FRAME_MARGIN: f32 = 1.05;

/// Perspective or orthographic projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Projection {
    /// Perspective with the camera's field of view.
    Perspective,
    /// Orthographic: the visible height is the distance times 2·tan(fov/2), so switching keeps
    /// the size of things at the look-at point.
    Orthographic,
}

/// A look-at camera driven like an orbit controller.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OrbitCamera {
    /// Eye position (world).
    pub eye_world: [f32; 3],
    /// The point looked at and orbited about (world).
    pub look_at_world: [f32; 3],
    /// Up direction (world); kept orthogonal to the view direction.
    pub up_world: [f32; 3],
    /// Vertical field of view in degrees.
    pub fov_y_deg: f32,
    /// Perspective or orthographic.
    pub projection: Projection,
}

impl Default for OrbitCamera {
    fn default() -> Self {
        Self {
            eye_world: [0.0, 0.0, 3.0],
            look_at_world: [0.0, 0.0, 0.0],
            up_world: [0.0, 1.0, 0.0],
            fov_y_deg: 45.0,
            projection: Projection::Perspective,
        }
    }
}

impl OrbitCamera {
    /// Eye position as a vector.
    pub fn eye(&self) -> Vec3 {
        Vec3::from(self.eye_world)
    }

    /// Look-at point as a vector.
    pub fn look_at(&self) -> Vec3 {
        Vec3::from(self.look_at_world)
    }

    /// Unit up vector.
    pub fn up(&self) -> Vec3 {
        Vec3::from(self.up_world).normalize_or(Vec3::Y)
    }

    /// Distance from eye to look-at point.
    pub fn distance(&self) -> f32 {
        (self.eye() - self.look_at()).length()
    }

    /// Unit vector from the eye towards the look-at point.
    pub fn forward(&self) -> Vec3 {
        (self.look_at() - self.eye()).normalize_or(Vec3::NEG_Z)
    }

    /// Unit vector to the right of the view.
    pub fn right(&self) -> Vec3 {
        self.forward().cross(self.up()).normalize_or(Vec3::X)
    }

    /// World length per point of screen at the look-at depth, for a viewport `height_points`
    /// tall: the visible height there is 2·d·tan(fov/2).
    pub fn world_per_point(&self, height_points: f32) -> f32 {
        let visible_height = 2.0 * self.distance() * (0.5 * self.fov_y_deg.to_radians()).tan();
        visible_height / height_points.max(1.0)
    }

    /// Rotates the eye about the look-at point: horizontal drag about the up axis, vertical drag
    /// about the right axis (a trackball, so the view can go over the poles).
    pub fn rotate(&mut self, drag_points: [f32; 2]) {
        let yaw = Quat::from_axis_angle(self.up(), -drag_points[0] * ROTATE_RAD_PER_POINT);
        let pitch = Quat::from_axis_angle(self.right(), -drag_points[1] * ROTATE_RAD_PER_POINT);
        let rotation = yaw * pitch;
        let offset = rotation * (self.eye() - self.look_at());
        let up = rotation * self.up();
        self.eye_world = (self.look_at() + offset).into();
        self.set_up_orthogonal(up);
    }

    /// Moves eye and look-at together so the scene follows the mouse.
    pub fn pan(&mut self, drag_points: [f32; 2], height_points: f32) {
        let scale = self.world_per_point(height_points);
        let shift = (-drag_points[0] * self.right() + drag_points[1] * self.up()) * scale;
        self.eye_world = (self.eye() + shift).into();
        self.look_at_world = (self.look_at() + shift).into();
    }

    /// Moves the eye towards (positive `scroll_points`) or away from the look-at point.
    pub fn zoom(&mut self, scroll_points: f32) {
        let factor = (-scroll_points * ZOOM_PER_POINT).exp();
        let offset = (self.eye() - self.look_at()) * factor;
        // Never reach the look-at point itself: the view direction would be lost.
        if offset.length() > 1e-6 * (1.0 + self.look_at().length()) {
            self.eye_world = (self.look_at() + offset).into();
        }
    }

    /// Looks at the centre of the box `min..max` from the current direction, at a distance
    /// where its bounding sphere fills the view.
    pub fn frame_all(&mut self, min_world: [f32; 3], max_world: [f32; 3]) {
        let (min, max) = (Vec3::from(min_world), Vec3::from(max_world));
        if !(min.is_finite() && max.is_finite()) || max.cmplt(min).any() {
            return;
        }
        let centre = 0.5 * (min + max);
        let radius = (0.5 * (max - min).length()).max(1e-6);
        let half_fov = 0.5 * self.fov_y_deg.clamp(1.0, 170.0).to_radians();
        let distance = FRAME_MARGIN * radius / half_fov.sin();
        let direction = -self.forward();
        self.look_at_world = centre.into();
        self.eye_world = (centre + direction * distance).into();
    }

    /// The default view of the box `min..max`: looking down −z with y up, framing everything.
    pub fn home(min_world: [f32; 3], max_world: [f32; 3]) -> Self {
        let mut camera = Self::default();
        camera.frame_all(min_world, max_world);
        camera
    }

    fn set_up_orthogonal(&mut self, up: Vec3) {
        let forward = self.forward();
        let up = (up - forward * up.dot(forward)).normalize_or(self.up());
        self.up_world = up.into();
    }
}

/// A named, saved view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bookmark {
    /// The name shown in the list.
    pub name: String,
    /// The view.
    pub camera: OrbitCamera,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Vec3, b: Vec3) -> bool {
        (a - b).length() < 1e-4
    }

    #[test]
    fn rotate_keeps_distance_and_look_at_and_orthonormal_up() {
        let mut camera = OrbitCamera::default();
        camera.rotate([120.0, -45.0]);
        assert!((camera.distance() - 3.0).abs() < 1e-4);
        assert_eq!(camera.look_at_world, [0.0, 0.0, 0.0]);
        assert!(camera.up().dot(camera.forward()).abs() < 1e-5);
        assert!((camera.up().length() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn horizontal_drag_turns_about_up_by_the_stated_rate() {
        let mut camera = OrbitCamera::default();
        // A quarter turn: π/2 radians at ROTATE_RAD_PER_POINT per point.
        camera.rotate([std::f32::consts::FRAC_PI_2 / ROTATE_RAD_PER_POINT, 0.0]);
        // Dragging right moves the eye to the left (−x), as when turning an object by hand.
        assert!(
            close(camera.eye(), Vec3::new(-3.0, 0.0, 0.0)),
            "{:?}",
            camera.eye()
        );
        assert!(close(camera.up(), Vec3::Y));
    }

    #[test]
    fn pan_moves_eye_and_look_at_by_the_world_size_of_a_point() {
        let mut camera = OrbitCamera::default();
        let height = 600.0;
        let per_point = camera.world_per_point(height);
        // 2·3·tan(22.5°)/600
        assert!((per_point - 2.0 * 3.0 * (22.5f32).to_radians().tan() / 600.0).abs() < 1e-7);
        camera.pan([10.0, 0.0], height);
        assert!(close(
            camera.look_at(),
            Vec3::new(-10.0 * per_point, 0.0, 0.0)
        ));
        assert!(close(camera.eye(), Vec3::new(-10.0 * per_point, 0.0, 3.0)));
    }

    #[test]
    fn zoom_scales_distance_exponentially_and_is_reversible() {
        let mut camera = OrbitCamera::default();
        camera.zoom(100.0);
        assert!((camera.distance() - 3.0 * (-0.4f32).exp()).abs() < 1e-5);
        camera.zoom(-100.0);
        assert!((camera.distance() - 3.0).abs() < 1e-5);
    }

    #[test]
    fn frame_all_centres_and_fits_the_bounding_sphere() {
        let camera = OrbitCamera::home([0.0, 0.0, 0.0], [2.0, 2.0, 2.0]);
        assert!(close(camera.look_at(), Vec3::splat(1.0)));
        let radius = 3f32.sqrt();
        let expected = FRAME_MARGIN * radius / (22.5f32).to_radians().sin();
        assert!((camera.distance() - expected).abs() < 1e-4);
        assert!(close(camera.forward(), Vec3::NEG_Z));
    }

    #[test]
    fn frame_all_ignores_empty_or_nonfinite_bounds() {
        let mut camera = OrbitCamera::default();
        let before = camera;
        camera.frame_all([1.0, 0.0, 0.0], [0.0, 1.0, 1.0]);
        camera.frame_all([f32::NAN, 0.0, 0.0], [1.0, 1.0, 1.0]);
        assert_eq!(camera, before);
    }
}
