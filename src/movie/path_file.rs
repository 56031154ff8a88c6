//! Camera path files: human-editable TOML.
//!
//! ```toml
//! constant_speed = false   # optional: move at constant speed along the track
//! ease_s = 1.0             # optional: seconds of gentle start and stop at each end
//! orthographic = false     # optional
//!
//! [[keyframe]]
//! time_s = 0.0
//! position = [0.0, 0.0, 3.0]
//! look_at = [0.0, 0.0, 0.0]
//! up = [0.0, 1.0, 0.0]     # optional, default +y
//! fov_deg = 45.0           # optional, default 45 (horizontal)
//! brightness = 1.0         # optional render setting, interpolated
//! ```
//!
//! Every error names the file and the line of the offending value (toml's spans).

use super::keyframe::{DEFAULT_FOV_DEG, DEFAULT_UP, Keyframe, PathError, RenderSettings, Timing};
use super::path::CameraPath;
use serde::Deserialize;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A camera path file could not be read, parsed or used.
#[derive(Debug, thiserror::Error)]
pub enum PathFileError {
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file's content is not a valid camera path.
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending value.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file could not be written (crate::output's rule).
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

impl PathFileError {
    /// The 1-based line the error points at, where it points at one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Io { .. } | Self::Output(_) => None,
            Self::Invalid { line, .. } => Some(*line),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathDocument {
    #[serde(default)]
    constant_speed: Option<Spanned<bool>>,
    #[serde(default)]
    ease_s: Option<Spanned<f64>>,
    #[serde(default)]
    orthographic: Option<bool>,
    #[serde(default, rename = "keyframe")]
    keyframes: Vec<Spanned<KeyframeDocument>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyframeDocument {
    time_s: Spanned<f64>,
    position: Spanned<[f64; 3]>,
    look_at: Spanned<[f64; 3]>,
    #[serde(default)]
    up: Option<Spanned<[f64; 3]>>,
    #[serde(default)]
    fov_deg: Option<Spanned<f64>>,
    #[serde(default)]
    brightness: Option<Spanned<f64>>,
}

impl KeyframeDocument {
    fn to_keyframe(&self) -> Keyframe {
        Keyframe {
            time_s: *self.time_s.get_ref(),
            position: *self.position.get_ref(),
            look_at: *self.look_at.get_ref(),
            up: self.up.as_ref().map_or(DEFAULT_UP, |up| *up.get_ref()),
            fov_deg: self
                .fov_deg
                .as_ref()
                .map_or(DEFAULT_FOV_DEG, |fov| *fov.get_ref()),
            settings: RenderSettings {
                brightness: self.brightness.as_ref().map(|b| *b.get_ref()),
            },
        }
    }

    /// Span of the value of `field`, if the file gave it.
    fn field_span(&self, field: &str) -> Option<Range<usize>> {
        match field {
            "time_s" => Some(self.time_s.span()),
            "position" => Some(self.position.span()),
            "look_at" => Some(self.look_at.span()),
            "up" => self.up.as_ref().map(Spanned::span),
            "fov_deg" => self.fov_deg.as_ref().map(Spanned::span),
            "brightness" => self.brightness.as_ref().map(Spanned::span),
            _ => None,
        }
    }
}

/// 1-based line number of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Parses the TOML text of a camera path; `path` names the file in errors.
pub fn parse_path(text: &str, path: &Path) -> Result<CameraPath, PathFileError> {
    let invalid = |offset: usize, message: String| PathFileError::Invalid {
        path: path.to_path_buf(),
        line: line_of(text, offset),
        message,
    };
    let document: PathDocument = toml::from_str(text).map_err(|err| {
        let offset = err.span().map_or(0, |span| span.start);
        invalid(offset, err.message().trim_end().to_owned())
    })?;
    let keyframes: Vec<Keyframe> = document
        .keyframes
        .iter()
        .map(|k| k.get_ref().to_keyframe())
        .collect();
    let timing = Timing {
        constant_speed: document
            .constant_speed
            .as_ref()
            .is_some_and(|c| *c.get_ref()),
        ease_s: document.ease_s.as_ref().map_or(0.0, |e| *e.get_ref()),
    };
    let orthographic = document.orthographic.unwrap_or(false);
    CameraPath::new(keyframes, timing, orthographic).map_err(|err| {
        let offset = error_offset(&err, &document);
        invalid(offset, err.to_string())
    })
}

/// Byte offset in the file that a path error is about.
fn error_offset(err: &PathError, document: &PathDocument) -> usize {
    if let Some((index, field)) = err.location()
        && let Some(key) = document.keyframes.get(index)
    {
        return key
            .get_ref()
            .field_span(field)
            .unwrap_or_else(|| key.span())
            .start;
    }
    match err {
        PathError::InvalidEase { .. } => document.ease_s.as_ref().map_or(0, |e| e.span().start),
        PathError::ConstantSpeedWithoutMotion => document
            .constant_speed
            .as_ref()
            .map_or(0, |c| c.span().start),
        // One keyframe: point at it; none: the top of the file.
        _ => document.keyframes.first().map_or(0, |k| k.span().start),
    }
}

/// Reads and checks a camera path file.
pub fn load_path(path: &Path) -> Result<CameraPath, PathFileError> {
    // A FIFO or device would block the read below; a folder fails only on reading.
    crate::output::require_regular_file(path).map_err(|source| PathFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let text = std::fs::read_to_string(path).map_err(|source| PathFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_path(&text, path)
}

/// The TOML text of a camera path, in the documented format (round-trips through
/// [`parse_path`]).
pub fn to_toml_string(path: &CameraPath) -> String {
    let timing = path.timing();
    let mut text = String::from("# Haloscope camera path (see README: Camera paths)\n");
    // `{:?}` prints the shortest round-tripping decimal and always a decimal point or exponent.
    let _ = writeln!(text, "constant_speed = {}", timing.constant_speed);
    let _ = writeln!(text, "ease_s = {:?}", timing.ease_s);
    let _ = writeln!(text, "orthographic = {}", path.orthographic());
    let vector = |v: [f64; 3]| format!("[{:?}, {:?}, {:?}]", v[0], v[1], v[2]);
    for key in path.keyframes() {
        let _ = writeln!(text, "\n[[keyframe]]");
        let _ = writeln!(text, "time_s = {:?}", key.time_s);
        let _ = writeln!(text, "position = {}", vector(key.position));
        let _ = writeln!(text, "look_at = {}", vector(key.look_at));
        let _ = writeln!(text, "up = {}", vector(key.up));
        let _ = writeln!(text, "fov_deg = {:?}", key.fov_deg);
        if let Some(brightness) = key.settings.brightness {
            let _ = writeln!(text, "brightness = {brightness:?}");
        }
    }
    text
}

/// Writes a camera path file (to a temporary file first, then renamed into place).
pub fn save_path(path: &CameraPath, file: &Path) -> Result<(), PathFileError> {
    let io_error = |source| PathFileError::Io {
        path: file.to_path_buf(),
        source,
    };
    crate::output::write_atomically(file, |writer| {
        std::io::Write::write_all(writer, to_toml_string(path).as_bytes()).map_err(io_error)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_of_counts_newlines_before_the_offset() {
        let text = "a\nbb\nccc";
        assert_eq!(line_of(text, 0), 1);
        assert_eq!(line_of(text, 2), 2);
        assert_eq!(line_of(text, 5), 3);
        assert_eq!(line_of(text, 100), 3);
    }
}
