//! Camera paths: the keyframes with their timing and projection, checked and ready to sample.

use super::interpolate::{PathInterpolator, PathSample};
use super::keyframe::{Keyframe, MAX_PATH_TIME_S, PathError, Timing};
use glam::DVec3;

/// Smallest |sin| of the angle between the view direction and the up vector that we accept:
/// closer to parallel, the camera's roll is undefined.
const MIN_SIN_VIEW_UP: f64 = 1e-6;

/// The keyframes of a camera path, in time order, with its timing and projection: what
/// [`CameraPath::new`] checks, and what an editor changes while the keyframes make no path yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathKeyframes {
    /// The keyframes, in time order.
    pub keyframes: Vec<Keyframe>,
    /// How path time maps to motion.
    pub timing: Timing,
    /// Orthographic instead of perspective frames.
    pub orthographic: bool,
}

impl PathKeyframes {
    /// The path these keyframes make, or why they make none.
    pub fn to_path(&self) -> Result<CameraPath, PathError> {
        CameraPath::new(self.keyframes.clone(), self.timing, self.orthographic)
    }
}

/// A validated camera path, ready to sample. Build with [`CameraPath::new`].
#[derive(Debug, Clone)]
pub struct CameraPath {
    keys: PathKeyframes,
    interpolator: PathInterpolator,
}

impl CameraPath {
    /// Checks the keyframes (≥ 2, finite, strictly increasing times, a defined view direction and
    /// roll, fov in (0, 180)) and prepares the interpolation.
    pub fn new(
        keyframes: Vec<Keyframe>,
        timing: Timing,
        orthographic: bool,
    ) -> Result<Self, PathError> {
        validate(&keyframes, &timing)?;
        let interpolator = PathInterpolator::new(&keyframes, &timing)?;
        Ok(Self {
            keys: PathKeyframes {
                keyframes,
                timing,
                orthographic,
            },
            interpolator,
        })
    }

    /// The keyframes, timing and projection the path was made from.
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

    /// Time of the first keyframe (seconds).
    pub fn start_s(&self) -> f64 {
        self.keys.keyframes.first().map_or(0.0, |k| k.time_s)
    }

    /// Time of the last keyframe (seconds).
    pub fn end_s(&self) -> f64 {
        self.keys.keyframes.last().map_or(0.0, |k| k.time_s)
    }

    /// Length of the path in seconds.
    pub fn duration_s(&self) -> f64 {
        self.end_s() - self.start_s()
    }

    /// Camera pose and render settings at `time_s` (clamped to the path's time range).
    pub fn sample(&self, time_s: f64) -> PathSample {
        self.interpolator
            .sample(&self.keys.keyframes, time_s, self.keys.orthographic)
    }

    /// The keyframe time at which the camera is at path time `time_s`: the identity for plain
    /// keyframe timing without easing; differs under easing and constant speed.
    pub fn keyframe_clock(&self, time_s: f64) -> f64 {
        self.interpolator.keyframe_clock(time_s)
    }
}

fn validate(keyframes: &[Keyframe], timing: &Timing) -> Result<(), PathError> {
    if !timing.ease_s.is_finite() || timing.ease_s < 0.0 {
        return Err(PathError::InvalidEase {
            ease_s: timing.ease_s,
        });
    }
    for (index, key) in keyframes.iter().enumerate() {
        let finite = |values: &[f64], field: &'static str| {
            if values.iter().all(|v| v.is_finite()) {
                Ok(())
            } else {
                Err(PathError::NonFinite { index, field })
            }
        };
        finite(&[key.time_s], "time_s")?;
        if key.time_s.abs() > MAX_PATH_TIME_S {
            return Err(PathError::TimeOutOfRange {
                index,
                time_s: key.time_s,
            });
        }
        finite(&key.position, "position")?;
        finite(&key.look_at, "look_at")?;
        finite(&key.up, "up")?;
        finite(&[key.fov_deg], "fov_deg")?;
        if let Some(brightness) = key.settings.brightness {
            finite(&[brightness], "brightness")?;
            if brightness < 0.0 {
                return Err(PathError::NegativeBrightness { index, brightness });
            }
        }
        if !(key.fov_deg > 0.0 && key.fov_deg < 180.0) {
            return Err(PathError::FovOutOfRange {
                index,
                fov_deg: key.fov_deg,
            });
        }
        let view = DVec3::from(key.look_at) - DVec3::from(key.position);
        let view_length = view.length();
        if view_length == 0.0 || !view_length.is_finite() {
            return Err(PathError::LookAtAtPosition { index });
        }
        let up = DVec3::from(key.up);
        let up_length = up.length();
        if up_length == 0.0 || view.cross(up).length() < MIN_SIN_VIEW_UP * view_length * up_length {
            return Err(PathError::UpAlongView { index });
        }
        if index > 0 && key.time_s <= keyframes[index - 1].time_s {
            return Err(PathError::TimeNotIncreasing {
                index,
                time_s: key.time_s,
                previous_s: keyframes[index - 1].time_s,
            });
        }
    }
    if keyframes.len() < 2 {
        return Err(PathError::TooFewKeyframes {
            count: keyframes.len(),
        });
    }
    if timing.constant_speed {
        let first = keyframes[0].position;
        if keyframes.iter().all(|k| k.position == first) {
            return Err(PathError::ConstantSpeedWithoutMotion);
        }
    }
    Ok(())
}
