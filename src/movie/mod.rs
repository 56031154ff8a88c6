//! Camera paths (keyframes, interpolation), frame export and video encoding.
//!
//! A [`CameraPath`] is a list of [`Keyframe`]s plus timing options; [`CameraPath::sample`] gives
//! the [`PathSample`] (camera pose and render settings) at any time. Paths are saved and loaded
//! as human-editable TOML ([`path_file`]), or built by [`presets`]. [`frames::export_frames`]
//! renders numbered PNG frames through a caller-supplied renderer (resumable, cancellable) and
//! can stream them into an H.264 MP4 ([`encode::Mp4Encoder`]).
//!
//! Paths, frames and encoding know nothing about particles: the caller turns a [`CameraPose`]
//! into an image, usually through [`FrameRenderer`] (the render back-end chosen once, CUDA data
//! resident across frames, exposure fixed from the first frame).

pub mod data_presets;
pub mod encode;
pub mod frame_plan;
pub mod frame_renderer;
pub mod frames;
pub mod interpolate;
pub mod keyframe;
pub mod path;
pub mod path_file;
pub mod presets;
pub mod ranks;
pub mod segment_bytes;
pub mod segments;

pub use data_presets::{DataBounds, DataPreset, DataPresetOptions, data_preset_path};
pub use encode::{EncodeError, Mp4Encoder, Mp4Settings};
pub use frame_plan::PlanError;
pub use frame_renderer::{FrameRenderer, fill_missing_smoothing_lengths};
pub use frames::{ExportError, ExportSummary, FramePlan, export_frames, frame_file_name};
pub use interpolate::PathSample;
pub use keyframe::{CameraPose, Keyframe, PathError, RenderSettings, Timing};
pub use path::{CameraPath, PathKeyframes};
pub use path_file::{PathFileError, load_path, parse_path, save_path, to_toml_string};
pub use ranks::export_frames_across;
