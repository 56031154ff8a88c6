//! Keyframes, camera poses, timing options and why keyframes make no path.

use glam::{DMat3, DQuat, DVec3};

/// Horizontal field of view of a keyframe that gives none, in degrees.
pub const DEFAULT_FOV_DEG: f64 = 45.0;

/// Default up vector of a keyframe that gives none (+y).
pub const DEFAULT_UP: [f64; 3] = [0.0, 1.0, 0.0];

/// A look-at camera in world coordinates: what one frame sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CameraPose {
    /// Eye position (world units).
    pub position: [f64; 3],
    /// The point the camera looks at (world units).
    pub look_at: [f64; 3],
    /// Up direction (world space; need not be orthogonal to the view direction).
    pub up: [f64; 3],
    /// Horizontal field of view in degrees. Orthographic cameras see a width of
    /// `2·|look_at − position|·tan(fov/2)` at every depth, the perspective width at the look-at
    /// point.
    pub fov_deg: f64,
    /// Orthographic instead of perspective projection.
    pub orthographic: bool,
}

impl CameraPose {
    /// Unit view direction (from the eye towards the look-at point).
    pub fn forward(&self) -> DVec3 {
        (DVec3::from(self.look_at) - DVec3::from(self.position)).normalize_or_zero()
    }

    /// Distance from the eye to the look-at point.
    pub fn distance(&self) -> f64 {
        DVec3::from(self.look_at).distance(DVec3::from(self.position))
    }

    /// The up vector made orthogonal to the view direction and unit length (Gram–Schmidt).
    pub fn orthonormal_up(&self) -> DVec3 {
        let forward = self.forward();
        let up = DVec3::from(self.up);
        (up - forward * up.dot(forward)).normalize_or_zero()
    }

    /// The renderer's camera for this pose (no depth limits beyond depth > 0).
    pub fn to_render_camera(&self) -> crate::render::Camera {
        let mut camera =
            crate::render::Camera::look_at(self.position, self.look_at, self.up, self.fov_deg);
        camera.projection = if self.orthographic {
            crate::render::Projection::Orthographic
        } else {
            crate::render::Projection::Perspective
        };
        camera
    }

    /// World width seen by an orthographic camera (and by a perspective camera at the look-at
    /// distance): `2·d·tan(fov/2)`.
    pub fn view_width(&self) -> f64 {
        2.0 * self.distance() * (0.5 * self.fov_deg.to_radians()).tan()
    }
}

/// Optional render settings carried along a path and interpolated between keyframes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RenderSettings {
    /// Overall brightness multiplier (Splotch `brightness`); `None` = the renderer's own.
    pub brightness: Option<f64>,
}

/// One keyframe: where the camera is at `time_s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Keyframe {
    /// Time of this keyframe on the path (seconds).
    pub time_s: f64,
    /// Eye position (world units).
    pub position: [f64; 3],
    /// Look-at point (world units).
    pub look_at: [f64; 3],
    /// Up direction.
    pub up: [f64; 3],
    /// Horizontal field of view in degrees, in (0, 180).
    pub fov_deg: f64,
    /// Render settings at this keyframe.
    pub settings: RenderSettings,
}

impl Keyframe {
    /// A keyframe with the default up vector and field of view and no render settings.
    pub fn new(time_s: f64, position: [f64; 3], look_at: [f64; 3]) -> Self {
        Self {
            time_s,
            position,
            look_at,
            up: DEFAULT_UP,
            fov_deg: DEFAULT_FOV_DEG,
            settings: RenderSettings::default(),
        }
    }

    /// The camera at this keyframe, with the path's projection.
    pub fn pose(&self, orthographic: bool) -> CameraPose {
        CameraPose {
            position: self.position,
            look_at: self.look_at,
            up: self.up,
            fov_deg: self.fov_deg,
            orthographic,
        }
    }

    /// The orientation of this keyframe's camera: the rotation taking camera axes
    /// (x right, y up, −z forward, the OpenGL convention) to world axes.
    pub(crate) fn orientation(&self) -> DQuat {
        orientation_from(self.position, self.look_at, self.up)
    }
}

/// Camera-to-world rotation for a look-at camera (x right, y up, −z forward).
pub(crate) fn orientation_from(position: [f64; 3], look_at: [f64; 3], up: [f64; 3]) -> DQuat {
    let forward = (DVec3::from(look_at) - DVec3::from(position)).normalize_or_zero();
    let right = forward.cross(DVec3::from(up)).normalize_or_zero();
    let true_up = right.cross(forward);
    DQuat::from_mat3(&DMat3::from_cols(right, true_up, -forward))
}

/// How path time maps to motion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Move the camera at constant speed along its track (arc-length reparameterisation); the
    /// keyframe positions are still passed exactly, but no longer at their own times (only the
    /// first and last times count).
    pub constant_speed: bool,
    /// Length of the easing (gentle start and stop) at each end of the path, in seconds; 0 = none.
    /// With keyframe timing it is clamped to the first and last segments, so every keyframe is
    /// still reached at its own time.
    pub ease_s: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            constant_speed: false,
            ease_s: 0.0,
        }
    }
}

/// Largest keyframe time in seconds, either side of 0 (11.6 days): longer paths only come from
/// typing errors, and their frame counts and clocks would lose precision.
pub const MAX_PATH_TIME_S: f64 = 1e6;

/// Why a list of keyframes is not a usable path. `index` counts from 0; messages count from 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PathError {
    /// Interpolation needs at least two keyframes.
    #[error("a camera path needs at least 2 keyframes, found {count}")]
    TooFewKeyframes {
        /// How many keyframes there were.
        count: usize,
    },
    /// A value is NaN or infinite.
    #[error("keyframe {}: {field} is not a finite number", index + 1)]
    NonFinite {
        /// Which keyframe.
        index: usize,
        /// Which field.
        field: &'static str,
    },
    /// A keyframe time lies outside ±[`MAX_PATH_TIME_S`].
    #[error("keyframe {}: time_s = {} is outside ±{MAX_PATH_TIME_S} s", index + 1, short(*time_s))]
    TimeOutOfRange {
        /// Which keyframe.
        index: usize,
        /// Its time.
        time_s: f64,
    },
    /// Keyframe times must increase strictly.
    #[error("keyframe {}: time_s = {time_s} is not after the previous keyframe's {previous_s}", index + 1)]
    TimeNotIncreasing {
        /// Which keyframe.
        index: usize,
        /// Its time.
        time_s: f64,
        /// The previous keyframe's time.
        previous_s: f64,
    },
    /// The eye sits on the look-at point, so there is no view direction.
    #[error("keyframe {}: look_at equals position (no view direction)", index + 1)]
    LookAtAtPosition {
        /// Which keyframe.
        index: usize,
    },
    /// The up vector is zero or parallel to the view direction, so the roll is undefined.
    #[error("keyframe {}: up is zero or parallel to the view direction", index + 1)]
    UpAlongView {
        /// Which keyframe.
        index: usize,
    },
    /// The field of view must lie strictly between 0 and 180 degrees.
    #[error("keyframe {}: fov_deg = {fov_deg} is outside (0, 180)", index + 1)]
    FovOutOfRange {
        /// Which keyframe.
        index: usize,
        /// The value given.
        fov_deg: f64,
    },
    /// `brightness` must not be negative.
    #[error("keyframe {}: brightness = {brightness} is negative", index + 1)]
    NegativeBrightness {
        /// Which keyframe.
        index: usize,
        /// The value given.
        brightness: f64,
    },
    /// `ease_s` must be finite and not negative.
    #[error("ease_s = {ease_s} must be a finite number ≥ 0")]
    InvalidEase {
        /// The value given.
        ease_s: f64,
    },
    /// Constant speed needs a camera that moves.
    #[error("constant_speed needs a camera that moves, but every keyframe has the same position")]
    ConstantSpeedWithoutMotion,
}

/// A number as Display writes it, or in exponent form where that would run to many digits.
fn short(x: f64) -> String {
    if x.abs() >= 1e15 {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

impl PathError {
    /// The keyframe index and the field name the error is about, where it is about one.
    pub fn location(&self) -> Option<(usize, &'static str)> {
        match *self {
            Self::NonFinite { index, field } => Some((index, field)),
            Self::TimeNotIncreasing { index, .. } | Self::TimeOutOfRange { index, .. } => {
                Some((index, "time_s"))
            }
            Self::LookAtAtPosition { index } => Some((index, "look_at")),
            Self::UpAlongView { index } => Some((index, "up")),
            Self::FovOutOfRange { index, .. } => Some((index, "fov_deg")),
            Self::NegativeBrightness { index, .. } => Some((index, "brightness")),
            Self::TooFewKeyframes { .. } | Self::InvalidEase { .. } => None,
            Self::ConstantSpeedWithoutMotion => None,
        }
    }
}
