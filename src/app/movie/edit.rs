//! The keyframe list behind the Movie panel: add the current view, delete, reorder, retime, and
//! the conversions between the viewport's [`OrbitCamera`] and the movie's [`Keyframe`].
//!
//! The viewport keeps a vertical field of view (it follows the window), a movie keyframe a
//! horizontal one (DESIGN §4, the path file): they are related through the movie's aspect ratio
//! W/H by tan(fov_x/2) = tan(fov_y/2)·W/H, the same relation `splotch::render_camera` uses.

use crate::app::viewport::camera::{OrbitCamera, Projection};
use crate::movie::{
    CameraPath, CameraPose, Keyframe, PathError, PathKeyframes, RenderSettings, Timing,
};
use serde::{Deserialize, Serialize};

/// Seconds between a new keyframe and the last one when the scrubber sits on a keyframe.
pub const KEYFRAME_SPACING_S: f64 = 2.0;

/// Horizontal field of view (degrees) of a vertical one `fov_y_deg` at aspect `aspect` = W/H.
pub fn fov_x_deg(fov_y_deg: f64, aspect: f64) -> f64 {
    2.0 * ((0.5 * fov_y_deg).to_radians().tan() * aspect)
        .atan()
        .to_degrees()
}

/// Vertical field of view (degrees) of a horizontal one `fov_x_deg` at aspect `aspect` = W/H.
pub fn fov_y_deg(fov_x_deg: f64, aspect: f64) -> f64 {
    2.0 * ((0.5 * fov_x_deg).to_radians().tan() / aspect)
        .atan()
        .to_degrees()
}

/// The keyframe at `time_s` that sees what `camera` sees in a movie of aspect `aspect` = W/H.
pub fn keyframe_from_camera(camera: &OrbitCamera, time_s: f64, aspect: f64) -> Keyframe {
    Keyframe {
        time_s,
        position: camera.eye_world.map(f64::from),
        look_at: camera.look_at_world.map(f64::from),
        up: camera.up_world.map(f64::from),
        fov_deg: fov_x_deg(f64::from(camera.fov_y_deg), aspect),
        settings: RenderSettings::default(),
    }
}

/// The viewport camera of `pose` for a movie of aspect `aspect` = W/H. The up vector is made
/// orthogonal to the view direction, as the orbit controls expect (the pose's own up need not be).
pub fn camera_from_pose(pose: &CameraPose, aspect: f64) -> OrbitCamera {
    let up = pose.orthonormal_up();
    let up = if up == glam::DVec3::ZERO {
        pose.up
    } else {
        up.to_array()
    };
    OrbitCamera {
        eye_world: pose.position.map(|v| v as f32),
        look_at_world: pose.look_at.map(|v| v as f32),
        up_world: up.map(|v| v as f32),
        fov_y_deg: fov_y_deg(pose.fov_deg, aspect) as f32,
        projection: if pose.orthographic {
            Projection::Orthographic
        } else {
            Projection::Perspective
        },
    }
}

/// The keyframes being edited (the movie's own [`PathKeyframes`]) and the path they make, or
/// why they make none; the path is rebuilt after every edit.
#[derive(Debug, Clone)]
pub struct MovieEditor {
    keys: PathKeyframes,
    path: Result<CameraPath, PathError>,
}

impl Default for MovieEditor {
    fn default() -> Self {
        Self::new(PathKeyframes::default())
    }
}

impl MovieEditor {
    /// An editor holding `keys` (its keyframes sorted by time here).
    pub fn new(mut keys: PathKeyframes) -> Self {
        keys.keyframes.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
        let path = keys.to_path();
        Self { keys, path }
    }

    /// An editor holding the keyframes and timing of `path` (a preset or a loaded file).
    pub fn from_path(path: &CameraPath) -> Self {
        Self::new(path.keys().clone())
    }

    /// The keyframes, timing and projection being edited.
    pub fn keys(&self) -> &PathKeyframes {
        &self.keys
    }

    /// The keyframes, in time order.
    pub fn keyframes(&self) -> &[Keyframe] {
        &self.keys.keyframes
    }

    /// The timing options.
    pub fn timing(&self) -> Timing {
        self.keys.timing
    }

    /// Whether frames use an orthographic projection.
    pub fn orthographic(&self) -> bool {
        self.keys.orthographic
    }

    /// The camera path, or why the keyframes do not make one (fewer than 2, equal times, ...).
    pub fn path(&self) -> Result<&CameraPath, &PathError> {
        self.path.as_ref()
    }

    /// First and last keyframe times (both 0 without keyframes): the scrubber's range.
    pub fn time_range(&self) -> (f64, f64) {
        match (self.keys.keyframes.first(), self.keys.keyframes.last()) {
            (Some(first), Some(last)) => (first.time_s, last.time_s.max(first.time_s)),
            _ => (0.0, 0.0),
        }
    }

    /// Adds `camera`'s view at `time_s`, or, when a keyframe already sits at that time (or the
    /// time is not a finite number ≥ 0), [`KEYFRAME_SPACING_S`] after the last keyframe.
    /// Returns the new keyframe's index and time.
    pub fn add_view(&mut self, camera: &OrbitCamera, time_s: f64, aspect: f64) -> (usize, f64) {
        let keyframes = &mut self.keys.keyframes;
        let taken = keyframes.iter().any(|k| k.time_s == time_s);
        let time_s = if taken || !time_s.is_finite() || time_s < 0.0 {
            keyframes
                .last()
                .map_or(0.0, |k| k.time_s + KEYFRAME_SPACING_S)
        } else {
            time_s
        };
        if keyframes.is_empty() {
            self.keys.orthographic = camera.projection == Projection::Orthographic;
        }
        let index = keyframes.partition_point(|k| k.time_s < time_s);
        keyframes.insert(index, keyframe_from_camera(camera, time_s, aspect));
        self.rebuild();
        (index, time_s)
    }

    /// Replaces the view of keyframe `index` with `camera`'s, keeping its time.
    pub fn set_view(&mut self, index: usize, camera: &OrbitCamera, aspect: f64) {
        if let Some(key) = self.keys.keyframes.get_mut(index) {
            let settings = key.settings;
            *key = keyframe_from_camera(camera, key.time_s, aspect);
            key.settings = settings;
            self.rebuild();
        }
    }

    /// Removes keyframe `index`.
    pub fn delete(&mut self, index: usize) {
        if index < self.keys.keyframes.len() {
            self.keys.keyframes.remove(index);
            self.rebuild();
        }
    }

    /// Swaps the views of keyframes `index` and `index − 1`; the times stay where they are, so
    /// the two views trade places on the timeline.
    pub fn move_up(&mut self, index: usize) {
        let keyframes = &mut self.keys.keyframes;
        if index == 0 || index >= keyframes.len() {
            return;
        }
        let (earlier_s, later_s) = (keyframes[index - 1].time_s, keyframes[index].time_s);
        keyframes.swap(index - 1, index);
        keyframes[index - 1].time_s = earlier_s;
        keyframes[index].time_s = later_s;
        self.rebuild();
    }

    /// Swaps the views of keyframes `index` and `index + 1` (see [`Self::move_up`]).
    pub fn move_down(&mut self, index: usize) {
        self.move_up(index + 1);
    }

    /// Sets the time of keyframe `index` and keeps the list in time order; returns where the
    /// keyframe went. Two keyframes at one time make no path (the error says which).
    pub fn retime(&mut self, index: usize, time_s: f64) -> usize {
        let keyframes = &mut self.keys.keyframes;
        let Some(key) = keyframes.get_mut(index) else {
            return index;
        };
        key.time_s = time_s;
        let moved = *key;
        keyframes.remove(index);
        let to = keyframes.partition_point(|k| k.time_s.total_cmp(&time_s).is_le());
        // Equal times: stay just before the others when moving earlier, after when later.
        let to = if to > index {
            to
        } else {
            keyframes.partition_point(|k| k.time_s.total_cmp(&time_s).is_lt())
        };
        keyframes.insert(to, moved);
        self.rebuild();
        to
    }

    /// Sets the timing options.
    pub fn set_timing(&mut self, timing: Timing) {
        self.keys.timing = timing;
        self.rebuild();
    }

    /// Sets the projection of every frame.
    pub fn set_orthographic(&mut self, orthographic: bool) {
        self.keys.orthographic = orthographic;
        self.rebuild();
    }

    /// Removes every keyframe.
    pub fn clear(&mut self) {
        self.keys.keyframes.clear();
        self.rebuild();
    }

    /// The viewport camera at path time `time_s` for a movie of aspect `aspect`: the
    /// interpolated one, the only keyframe's when there is one, `None` without keyframes or when
    /// the keyframes make no path.
    pub fn camera_at(&self, time_s: f64, aspect: f64) -> Option<OrbitCamera> {
        if let [only] = self.keys.keyframes.as_slice() {
            return Some(camera_from_pose(&only.pose(self.keys.orthographic), aspect));
        }
        let path = self.path.as_ref().ok()?;
        Some(camera_from_pose(&path.sample(time_s).pose, aspect))
    }

    /// The viewport camera of keyframe `index`.
    pub fn camera_of(&self, index: usize, aspect: f64) -> Option<OrbitCamera> {
        let key = self.keys.keyframes.get(index)?;
        Some(camera_from_pose(&key.pose(self.keys.orthographic), aspect))
    }

    /// What the session keeps.
    pub fn saved(&self) -> SavedPath {
        SavedPath::from(&self.keys)
    }

    /// An editor holding what the session kept.
    pub fn from_saved(saved: &SavedPath) -> Self {
        Self::new(PathKeyframes::from(saved))
    }

    fn rebuild(&mut self) {
        self.path = self.keys.to_path();
    }
}

/// A keyframe as the session stores it: flat (brightness beside the camera), the form stored
/// sessions already have.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SavedKeyframe {
    /// Time on the path (seconds).
    pub time_s: f64,
    /// Eye position (world).
    pub position: [f64; 3],
    /// Look-at point (world).
    pub look_at: [f64; 3],
    /// Up direction.
    pub up: [f64; 3],
    /// Horizontal field of view in degrees.
    pub fov_deg: f64,
    /// Brightness multiplier, when the keyframe has one.
    pub brightness: Option<f64>,
}

impl From<&Keyframe> for SavedKeyframe {
    fn from(key: &Keyframe) -> Self {
        Self {
            time_s: key.time_s,
            position: key.position,
            look_at: key.look_at,
            up: key.up,
            fov_deg: key.fov_deg,
            brightness: key.settings.brightness,
        }
    }
}

impl From<&SavedKeyframe> for Keyframe {
    fn from(saved: &SavedKeyframe) -> Self {
        Self {
            time_s: saved.time_s,
            position: saved.position,
            look_at: saved.look_at,
            up: saved.up,
            fov_deg: saved.fov_deg,
            settings: RenderSettings {
                brightness: saved.brightness,
            },
        }
    }
}

/// The keyframes and timing the session keeps between runs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SavedPath {
    /// Keyframes in time order.
    pub keyframes: Vec<SavedKeyframe>,
    /// Constant speed along the track.
    pub constant_speed: bool,
    /// Easing at each end, seconds.
    pub ease_s: f64,
    /// Orthographic frames.
    pub orthographic: bool,
}

impl From<&PathKeyframes> for SavedPath {
    fn from(keys: &PathKeyframes) -> Self {
        Self {
            keyframes: keys.keyframes.iter().map(SavedKeyframe::from).collect(),
            constant_speed: keys.timing.constant_speed,
            ease_s: keys.timing.ease_s,
            orthographic: keys.orthographic,
        }
    }
}

impl From<&SavedPath> for PathKeyframes {
    fn from(saved: &SavedPath) -> Self {
        Self {
            keyframes: saved.keyframes.iter().map(Keyframe::from).collect(),
            timing: Timing {
                constant_speed: saved.constant_speed,
                ease_s: saved.ease_s,
            },
            orthographic: saved.orthographic,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASPECT: f64 = 16.0 / 9.0;

    fn camera_at_x(x: f32) -> OrbitCamera {
        OrbitCamera {
            eye_world: [x, 0.0, 3.0],
            look_at_world: [x, 0.0, 0.0],
            ..OrbitCamera::default()
        }
    }

    #[test]
    fn field_of_view_conversions_are_inverse_and_match_the_aspect() {
        // A 90° vertical view at aspect 2: tan(fov_x/2) = 1·2.
        assert!((fov_x_deg(90.0, 2.0) - 2.0 * 2f64.atan().to_degrees()).abs() < 1e-12);
        for fov in [5.0, 45.0, 100.0] {
            assert!((fov_y_deg(fov_x_deg(fov, ASPECT), ASPECT) - fov).abs() < 1e-10);
        }
    }

    #[test]
    fn a_keyframe_and_its_camera_round_trip() {
        let camera = OrbitCamera {
            eye_world: [1.0, 2.0, 3.0],
            look_at_world: [0.5, -1.0, 0.25],
            up_world: [0.0, 0.0, 1.0],
            fov_y_deg: 30.0,
            projection: Projection::Perspective,
        };
        // Make the up vector orthogonal to the view, as the orbit controls keep it.
        let forward = camera.forward();
        let up = (camera.up() - forward * camera.up().dot(forward)).normalize();
        let camera = OrbitCamera {
            up_world: up.into(),
            ..camera
        };
        let key = keyframe_from_camera(&camera, 1.5, ASPECT);
        assert_eq!(key.time_s, 1.5);
        assert_eq!(key.position, [1.0, 2.0, 3.0]);
        let back = camera_from_pose(&key.pose(false), ASPECT);
        assert_eq!(back.eye_world, camera.eye_world);
        assert_eq!(back.look_at_world, camera.look_at_world);
        assert!((back.fov_y_deg - 30.0).abs() < 1e-5);
        for axis in 0..3 {
            assert!((back.up_world[axis] - camera.up_world[axis]).abs() < 1e-6);
        }
    }

    #[test]
    fn adding_views_fills_the_scrubber_time_or_appends_after_the_last() {
        let mut editor = MovieEditor::default();
        assert_eq!(editor.add_view(&camera_at_x(0.0), 0.0, ASPECT), (0, 0.0));
        // The scrubber still sits on the first keyframe: the next goes 2 s after it.
        assert_eq!(
            editor.add_view(&camera_at_x(1.0), 0.0, ASPECT),
            (1, KEYFRAME_SPACING_S)
        );
        // A free time in between is used as it is.
        assert_eq!(editor.add_view(&camera_at_x(0.5), 1.0, ASPECT), (1, 1.0));
        let times: Vec<f64> = editor.keyframes().iter().map(|k| k.time_s).collect();
        assert_eq!(times, vec![0.0, 1.0, 2.0]);
        let xs: Vec<f64> = editor.keyframes().iter().map(|k| k.position[0]).collect();
        assert_eq!(xs, vec![0.0, 0.5, 1.0]);
        assert!(editor.path().is_ok());
        assert_eq!(editor.time_range(), (0.0, 2.0));
    }

    #[test]
    fn reordering_swaps_views_and_keeps_the_times() {
        let mut editor = MovieEditor::default();
        for x in [0.0, 1.0, 2.0] {
            editor.add_view(&camera_at_x(x), f64::NAN, ASPECT);
        }
        editor.move_up(2);
        let xs: Vec<f64> = editor.keyframes().iter().map(|k| k.position[0]).collect();
        assert_eq!(xs, vec![0.0, 2.0, 1.0]);
        let times: Vec<f64> = editor.keyframes().iter().map(|k| k.time_s).collect();
        assert_eq!(times, vec![0.0, 2.0, 4.0]);
        editor.move_down(0);
        let xs: Vec<f64> = editor.keyframes().iter().map(|k| k.position[0]).collect();
        assert_eq!(xs, vec![2.0, 0.0, 1.0]);
        // Out of range: nothing moves.
        editor.move_up(0);
        editor.move_down(2);
        let xs: Vec<f64> = editor.keyframes().iter().map(|k| k.position[0]).collect();
        assert_eq!(xs, vec![2.0, 0.0, 1.0]);
    }

    #[test]
    fn retiming_keeps_time_order_and_equal_times_are_a_path_error() {
        let mut editor = MovieEditor::default();
        for x in [0.0, 1.0, 2.0] {
            editor.add_view(&camera_at_x(x), f64::NAN, ASPECT);
        }
        // The first keyframe moves to 3 s: it becomes the second.
        assert_eq!(editor.retime(0, 3.0), 1);
        let xs: Vec<f64> = editor.keyframes().iter().map(|k| k.position[0]).collect();
        assert_eq!(xs, vec![1.0, 0.0, 2.0]);
        assert!(editor.path().is_ok());
        // Onto another keyframe's time: no path, and the error names the keyframe.
        editor.retime(1, 4.0);
        assert!(matches!(
            editor.path(),
            Err(PathError::TimeNotIncreasing { index: 2, .. })
        ));
        editor.delete(2);
        assert!(editor.path().is_ok());
        assert_eq!(editor.keyframes().len(), 2);
    }

    #[test]
    fn the_camera_at_a_time_is_the_interpolated_pose() {
        let mut editor = MovieEditor::default();
        editor.add_view(&camera_at_x(0.0), 0.0, ASPECT);
        editor.add_view(&camera_at_x(2.0), 4.0, ASPECT);
        let path = editor.path().expect("path").clone();
        let camera = editor.camera_at(1.0, ASPECT).expect("camera");
        let pose = path.sample(1.0).pose;
        assert_eq!(camera.eye_world, pose.position.map(|v| v as f32));
        assert_eq!(camera.look_at_world, pose.look_at.map(|v| v as f32));
        assert!(camera.eye_world[0] > 0.0 && camera.eye_world[0] < 2.0);
        // Nothing to interpolate without keyframes.
        editor.clear();
        assert_eq!(editor.camera_at(1.0, ASPECT), None);
    }

    #[test]
    fn the_saved_form_round_trips() {
        let mut editor = MovieEditor::default();
        editor.add_view(&camera_at_x(0.0), 0.0, ASPECT);
        editor.add_view(&camera_at_x(1.0), 3.0, ASPECT);
        editor.set_timing(Timing {
            constant_speed: true,
            ease_s: 0.5,
        });
        let saved = editor.saved();
        let text = serde_json::to_string(&saved).expect("serialises");
        let back: SavedPath = serde_json::from_str(&text).expect("parses");
        let restored = MovieEditor::from_saved(&back);
        assert_eq!(restored.keyframes(), editor.keyframes());
        assert_eq!(restored.timing(), editor.timing());
        assert!(restored.path().is_ok());
    }
}
