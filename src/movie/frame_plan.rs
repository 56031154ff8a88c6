//! Which frames a movie has (count, rate, size), and the limits every plan is checked against
//! before anything is allocated for its frames.

use super::path::CameraPath;

/// Most frames one movie may have: 9¼ hours at 30 frames/s. The export keeps a path and a flag
/// per frame, so the count must be bounded before those lists are made.
pub const MAX_FRAMES: usize = 1_000_000;
/// Highest frame rate accepted (frames/s).
pub const MAX_FPS: f64 = 1_000.0;
/// Largest frame side in pixels (the renderer's own limit).
pub const MAX_SIDE_PX: u32 = crate::render::project::MAX_IMAGE_SIDE_PX;
/// Smallest frame side the H.264 encoder accepts (OpenH264 refuses smaller pictures).
pub const MIN_MP4_SIDE_PX: u32 = 16;

/// Which frames to make: how many, at what rate and size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FramePlan {
    /// Number of frames; they sample the whole path evenly, first and last keyframe included.
    pub n_frames: usize,
    /// Frames per second of the movie.
    pub fps: f64,
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in pixels.
    pub height: u32,
}

/// Why a frame plan cannot be made; each names the quantity, the value and the rule.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The frame rate is not a finite number in (0, [`MAX_FPS`]].
    #[error("frame rate {0} frames/s must be a number above 0 and at most {MAX_FPS}")]
    Fps(f64),
    /// The frame count is 0 or above [`MAX_FRAMES`].
    #[error("{0} frames: a movie has 1 to {MAX_FRAMES} frames")]
    Frames(usize),
    /// The duration is not a finite number of seconds above 0.
    #[error("duration {0} s must be a number of seconds above 0")]
    Duration(f64),
    /// Duration × frame rate gives more than [`MAX_FRAMES`] frames.
    #[error("{seconds} s at {fps} frames/s is more than {MAX_FRAMES} frames")]
    TooLong {
        /// Seconds of movie.
        seconds: f64,
        /// Frames per second.
        fps: f64,
    },
    /// A frame side is 0 or above [`MAX_SIDE_PX`].
    #[error("frame size {width}×{height}: each side must be 1 to {MAX_SIDE_PX} pixels")]
    Size {
        /// Width asked for.
        width: u32,
        /// Height asked for.
        height: u32,
    },
    /// The H.264 encoder cannot take a side this small.
    #[error(
        "frame size {width}×{height}: an H.264 MP4 needs at least {MIN_MP4_SIDE_PX} pixels a side"
    )]
    TooSmallForMp4 {
        /// Width asked for.
        width: u32,
        /// Height asked for.
        height: u32,
    },
}

impl FramePlan {
    /// A plan that plays `path` in real time at `fps`: round(duration·fps) + 1 frames.
    pub fn real_time(path: &CameraPath, fps: f64, width: u32, height: u32) -> Self {
        let n_frames = (path.duration_s() * fps).round().max(0.0) as usize + 1;
        Self {
            n_frames,
            fps,
            width,
            height,
        }
    }

    /// A plan of `duration_s` seconds at `fps`, the path stretched or squeezed to fit.
    pub fn with_duration(duration_s: f64, fps: f64, width: u32, height: u32) -> Self {
        let n_frames = (duration_s * fps).round().max(1.0) as usize;
        Self {
            n_frames,
            fps,
            width,
            height,
        }
    }

    /// [`Self::real_time`], refused with the reason when the rate, the path's length or the
    /// size break a limit.
    pub fn try_real_time(
        path: &CameraPath,
        fps: f64,
        width: u32,
        height: u32,
    ) -> Result<Self, PlanError> {
        check_fps(fps)?;
        check_seconds(path.duration_s(), fps)?;
        let plan = Self::real_time(path, fps, width, height);
        plan.check()?;
        Ok(plan)
    }

    /// [`Self::with_duration`], refused with the reason when the duration, the rate or the size
    /// break a limit.
    pub fn try_with_duration(
        duration_s: f64,
        fps: f64,
        width: u32,
        height: u32,
    ) -> Result<Self, PlanError> {
        check_fps(fps)?;
        if !(duration_s.is_finite() && duration_s > 0.0) {
            return Err(PlanError::Duration(duration_s));
        }
        check_seconds(duration_s, fps)?;
        let plan = Self::with_duration(duration_s, fps, width, height);
        plan.check()?;
        Ok(plan)
    }

    /// A plan of exactly `n_frames`, checked.
    pub fn try_frames(
        n_frames: usize,
        fps: f64,
        width: u32,
        height: u32,
    ) -> Result<Self, PlanError> {
        let plan = Self {
            n_frames,
            fps,
            width,
            height,
        };
        plan.check()?;
        Ok(plan)
    }

    /// Path time of frame `index`: the frames cover [start, end] evenly.
    pub fn time_of_frame(&self, path: &CameraPath, index: usize) -> f64 {
        if self.n_frames < 2 {
            return path.start_s();
        }
        path.start_s() + path.duration_s() * index as f64 / (self.n_frames - 1) as f64
    }

    /// Checks the rate, the frame count and the size against the limits.
    pub fn check(&self) -> Result<(), PlanError> {
        check_fps(self.fps)?;
        if self.n_frames == 0 || self.n_frames > MAX_FRAMES {
            return Err(PlanError::Frames(self.n_frames));
        }
        let side_ok = |side: u32| (1..=MAX_SIDE_PX).contains(&side);
        if !side_ok(self.width) || !side_ok(self.height) {
            return Err(PlanError::Size {
                width: self.width,
                height: self.height,
            });
        }
        Ok(())
    }

    /// Checks that the H.264 encoder can take this frame size.
    pub fn check_mp4(&self) -> Result<(), PlanError> {
        if self.width < MIN_MP4_SIDE_PX || self.height < MIN_MP4_SIDE_PX {
            return Err(PlanError::TooSmallForMp4 {
                width: self.width,
                height: self.height,
            });
        }
        Ok(())
    }
}

fn check_fps(fps: f64) -> Result<(), PlanError> {
    if fps.is_finite() && fps > 0.0 && fps <= MAX_FPS {
        Ok(())
    } else {
        Err(PlanError::Fps(fps))
    }
}

/// `seconds` at `fps` must give at most [`MAX_FRAMES`] frames (checked in floating point, before
/// any conversion to an integer count can saturate).
fn check_seconds(seconds: f64, fps: f64) -> Result<(), PlanError> {
    if (seconds * fps).round() + 1.0 > MAX_FRAMES as f64 {
        return Err(PlanError::TooLong { seconds, fps });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_refused_with_the_value() {
        assert_eq!(
            FramePlan::try_frames(0, 30.0, 8, 8),
            Err(PlanError::Frames(0))
        );
        assert_eq!(
            FramePlan::try_frames(MAX_FRAMES + 1, 30.0, 8, 8),
            Err(PlanError::Frames(MAX_FRAMES + 1))
        );
        assert!(matches!(
            FramePlan::try_with_duration(10.0, f64::NAN, 8, 8),
            Err(PlanError::Fps(f)) if f.is_nan()
        ));
        assert_eq!(
            FramePlan::try_with_duration(-3.0, 30.0, 8, 8),
            Err(PlanError::Duration(-3.0))
        );
        assert_eq!(
            FramePlan::try_with_duration(1e6, 30.0, 8, 8),
            Err(PlanError::TooLong {
                seconds: 1e6,
                fps: 30.0
            })
        );
        assert_eq!(
            FramePlan::try_frames(2, 30.0, 0, 8),
            Err(PlanError::Size {
                width: 0,
                height: 8
            })
        );
        let plan = FramePlan::try_with_duration(2.0, 24.0, 1, 1).expect("plan");
        assert_eq!(plan.n_frames, 48);
        assert!(plan.check_mp4().is_err());
        assert!(
            FramePlan::try_frames(3, 30.0, 16, 16)
                .and_then(|p| p.check_mp4())
                .is_ok()
        );
    }
}
