//! H.264 encoding (OpenH264, built from its bundled source) into an MP4 file (ISO-BMFF, written
//! by the `mp4` crate), all in-process.
//!
//! The MP4 grows in a hidden temporary file beside the final one and is renamed into place only
//! by [`Mp4Encoder::finish`]; dropping the encoder before that (error, cancel) deletes it, so a
//! failed export never leaves a truncated MP4 under the final name.

use super::segments::{CodedSegment, SegmentPipeline, with_parameter_sets};
use image::RgbImage;
use openh264::encoder::{EncoderConfig, FrameRate, IntraFramePeriod, RateControlMode};
use openh264::formats::{RgbSliceU8, YUVBuffer};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use tempfile::TempPath;

/// Media timescale of the video track (ticks per second): 90 kHz, the MPEG convention, divides
/// evenly by the common frame rates 24, 25, 30, 50 and 60.
const TRACK_TIMESCALE: u32 = 90_000;
/// Movie (mvhd) timescale: milliseconds.
const MOVIE_TIMESCALE: u32 = 1_000;

/// Encoder settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mp4Settings {
    /// A key (IDR) frame every this many frames, so players can seek; 0 = only the first.
    pub keyframe_interval: u32,
}

impl Default for Mp4Settings {
    fn default() -> Self {
        Self {
            keyframe_interval: 60,
        }
    }
}

/// Encoding or writing the MP4 failed.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// Width, height or frame rate cannot be encoded.
    #[error("{}: cannot encode {width}×{height} at {fps} frames/s (need 2..=65534 pixels a side and a positive frame rate)", path.display())]
    InvalidSize {
        /// The MP4.
        path: PathBuf,
        /// Requested width.
        width: u32,
        /// Requested height.
        height: u32,
        /// Requested frame rate.
        fps: f64,
    },
    /// A frame has another size than the movie.
    #[error("{}: frame {frame} is {found_width}×{found_height}, the movie is {width}×{height}", path.display())]
    FrameSize {
        /// The MP4.
        path: PathBuf,
        /// Frame index.
        frame: usize,
        /// Movie width.
        width: u32,
        /// Movie height.
        height: u32,
        /// Frame width.
        found_width: u32,
        /// Frame height.
        found_height: u32,
    },
    /// OpenH264 reported an error.
    #[error("{}: H.264 encoder: {message}", path.display())]
    H264 {
        /// The MP4.
        path: PathBuf,
        /// OpenH264's message.
        message: String,
    },
    /// The encoder returned no picture for a frame.
    #[error("{}: H.264 encoder produced no data for frame {frame}", path.display())]
    EmptyFrame {
        /// The MP4.
        path: PathBuf,
        /// Frame index.
        frame: usize,
    },
    /// Writing the container failed.
    #[error("{}: writing MP4: {message}", path.display())]
    Mp4 {
        /// The MP4.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The file system refused.
    #[error("{}: {source}", path.display())]
    Io {
        /// The MP4.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// `finish` was called before any frame.
    #[error("{}: no frames to encode", path.display())]
    NoFrames {
        /// The MP4.
        path: PathBuf,
    },
    /// The temporary file beside the MP4 could not be made (crate::output's rule).
    #[error(transparent)]
    Output(crate::output::OutputError),
}

/// What [`Mp4Encoder::finish`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Mp4Summary {
    /// The MP4.
    pub path: PathBuf,
    /// Frames (samples) in the video track.
    pub frames: usize,
    /// Encoded width (the frame width rounded up to even).
    pub width: u32,
    /// Encoded height (the frame height rounded up to even).
    pub height: u32,
    /// File size in bytes.
    pub bytes: u64,
}

/// Streams RGB frames into an H.264 MP4. Create, [`push_frame`](Self::push_frame) each frame in
/// order, then [`finish`](Self::finish). Frames are coded in key-frame segments on several
/// threads ([`SegmentPipeline`]) and written in order.
///
/// A movie split over processes codes each part with [`Self::segments_only`] and
/// [`Self::finish_segments`]; one process then writes the MP4 from every part's segments with
/// [`Self::create`], [`Self::push_coded`] and [`Self::finish`]: the same bytes as one encoder.
pub struct Mp4Encoder {
    final_path: PathBuf,
    /// The MP4 being written; `None` when only segments are coded.
    output: Option<(TempPath, Mp4Track)>,
    /// Coded segments kept for another process (segments-only encoders).
    coded: Vec<CodedSegment>,
    pipeline: SegmentPipeline,
    /// Frame size as given.
    width: u32,
    height: u32,
    /// Encoded size: rounded up to even, as 4:2:0 chroma needs.
    encoded_width: u32,
    encoded_height: u32,
    frames: usize,
}

/// The MP4 being written: its video track is added with the first segment's parameter sets.
struct Mp4Track {
    path: PathBuf,
    writer: mp4::Mp4Writer<BufWriter<File>>,
    width: u16,
    height: u16,
    sample_duration: u32,
    /// The parameter sets in the avcC box, once the track exists.
    parameter_sets: Option<(Vec<u8>, Vec<u8>)>,
    written: usize,
}

impl std::fmt::Debug for Mp4Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mp4Encoder")
            .field("final_path", &self.final_path)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl Mp4Encoder {
    /// Starts an MP4 of `width`×`height` frames at `fps` that will be renamed to `path` by
    /// [`finish`](Self::finish). Odd sizes are padded to even by repeating the last column/row.
    pub fn create(
        path: &Path,
        width: u32,
        height: u32,
        fps: f64,
        settings: &Mp4Settings,
    ) -> Result<Self, EncodeError> {
        Self::start(path, (width, height), fps, settings, None)
    }

    /// An encoder of frames `first_frame..` of the MP4 `path` (named in messages, never
    /// written) that keeps the coded segments for [`Self::finish_segments`]; `first_frame`
    /// must start a key-frame segment.
    pub fn segments_only(
        path: &Path,
        (width, height): (u32, u32),
        fps: f64,
        settings: &Mp4Settings,
        first_frame: usize,
    ) -> Result<Self, EncodeError> {
        Self::start(path, (width, height), fps, settings, Some(first_frame))
    }

    /// [`Self::create`], or [`Self::segments_only`] from `segments_from`.
    fn start(
        path: &Path,
        (width, height): (u32, u32),
        fps: f64,
        settings: &Mp4Settings,
        segments_from: Option<usize>,
    ) -> Result<Self, EncodeError> {
        let final_path = path.to_path_buf();
        let encoded_width = width.div_ceil(2) * 2;
        let encoded_height = height.div_ceil(2) * 2;
        let sample_ticks = (f64::from(TRACK_TIMESCALE) / fps).round();
        if width == 0
            || height == 0
            || encoded_width > u32::from(u16::MAX)
            || encoded_height > u32::from(u16::MAX)
            || !fps.is_finite()
            || fps <= 0.0
            || !(1.0..=f64::from(u32::MAX)).contains(&sample_ticks)
        {
            return Err(EncodeError::InvalidSize {
                path: final_path,
                width,
                height,
                fps,
            });
        }
        let output = match segments_from {
            Some(_) => None,
            None => Some(open_mp4(
                path,
                (encoded_width, encoded_height),
                sample_ticks,
            )?),
        };
        // Rate control off: OpenH264 then codes every frame at its fixed base quantiser (26)
        // with adaptive quantisation, i.e. constant quality, and never drops a frame; its
        // bit-rate modes would either skip frames (a movie must keep every one) or, with
        // skipping disabled, print a warning from the C library.
        let config = EncoderConfig::new()
            .max_frame_rate(FrameRate::from_hz(fps as f32))
            .rate_control_mode(RateControlMode::Off)
            .skip_frames(false)
            .intra_frame_period(IntraFramePeriod::from_num_frames(
                settings.keyframe_interval,
            ));
        // Each segment is one key-frame interval and starts with its own IDR frame, so the
        // segments' frame types are those of one encoder coding the whole movie.
        let segment_len = (settings.keyframe_interval > 0).then_some(settings.keyframe_interval);
        let pipeline = SegmentPipeline::start(
            path,
            config,
            (encoded_width as usize, encoded_height as usize),
            segment_len.map(|n| n as usize),
            segments_from.unwrap_or(0),
        );
        Ok(Self {
            final_path,
            output,
            coded: Vec::new(),
            pipeline,
            width,
            height,
            encoded_width,
            encoded_height,
            frames: 0,
        })
    }

    /// The size written into the MP4 (the frame size rounded up to even).
    pub fn encoded_size(&self) -> (u32, u32) {
        (self.encoded_width, self.encoded_height)
    }

    /// Frames pushed so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Encodes the next frame.
    pub fn push_frame(&mut self, image: &RgbImage) -> Result<(), EncodeError> {
        if image.dimensions() != (self.width, self.height) {
            return Err(EncodeError::FrameSize {
                path: self.final_path.clone(),
                frame: self.frames,
                width: self.width,
                height: self.height,
                found_width: image.width(),
                found_height: image.height(),
            });
        }
        let size = (self.encoded_width as usize, self.encoded_height as usize);
        let mut yuv = YUVBuffer::new(size.0, size.1);
        if (self.encoded_width, self.encoded_height) == (self.width, self.height) {
            yuv.read_rgb8(RgbSliceU8::new(image.as_raw(), size));
        } else {
            let padded = pad_to(image, self.encoded_width, self.encoded_height);
            yuv.read_rgb8(RgbSliceU8::new(padded.as_raw(), size));
        }
        let (output, coded) = (&mut self.output, &mut self.coded);
        self.pipeline
            .push(yuv, |segment| take_segment(output, coded, segment))?;
        self.frames += 1;
        Ok(())
    }

    /// Writes a segment another process coded (see [`Self::segments_only`]) as the next frames.
    pub fn push_coded(&mut self, segment: CodedSegment) -> Result<(), EncodeError> {
        self.frames += segment.frames.len();
        take_segment(&mut self.output, &mut self.coded, segment)
    }

    /// Waits for the last segments of a [`Self::segments_only`] encoder and returns them all,
    /// in order.
    pub fn finish_segments(mut self) -> Result<Vec<CodedSegment>, EncodeError> {
        let (output, coded) = (&mut self.output, &mut self.coded);
        self.pipeline
            .finish(|segment| take_segment(output, coded, segment))?;
        Ok(std::mem::take(&mut self.coded))
    }

    /// Writes the index (moov), flushes, and renames the MP4 into place.
    pub fn finish(mut self) -> Result<Mp4Summary, EncodeError> {
        let path = self.final_path.clone();
        if self.frames == 0 {
            return Err(EncodeError::NoFrames { path });
        }
        let (output, coded) = (&mut self.output, &mut self.coded);
        self.pipeline
            .finish(|segment| take_segment(output, coded, segment))?;
        let Some((temp_path, mut track)) = self.output.take() else {
            return Err(EncodeError::Mp4 {
                path,
                message: "an encoder of segments only has no MP4 to finish".into(),
            });
        };
        track
            .writer
            .write_end()
            .map_err(|err| mp4_error(&path, err))?;
        let io_error = |source| EncodeError::Io {
            path: path.clone(),
            source,
        };
        let file = track
            .writer
            .into_writer()
            .into_inner()
            .map_err(|err| io_error(err.into_error()))?;
        file.sync_all().map_err(io_error)?;
        let bytes = file.metadata().map_err(io_error)?.len();
        drop(file);
        temp_path
            .persist(&path)
            .map_err(|err| io_error(err.error))?;
        Ok(Mp4Summary {
            path,
            frames: self.frames,
            width: self.encoded_width,
            height: self.encoded_height,
            bytes,
        })
    }
}

/// Starts the MP4 `path` in a temporary file beside it: `.<name>.XXXXXX.part`, so that an
/// interrupted run's file is recognisable and the next run of the same MP4 removes it
/// (export_frames).
fn open_mp4(
    path: &Path,
    (width, height): (u32, u32),
    sample_ticks: f64,
) -> Result<(TempPath, Mp4Track), EncodeError> {
    let temp = crate::output::temporary_beside(path).map_err(EncodeError::Output)?;
    let (file, temp_path) = temp.into_parts();
    let config = mp4::Mp4Config {
        major_brand: mp4::FourCC::from(*b"isom"),
        minor_version: 512,
        compatible_brands: [*b"isom", *b"iso2", *b"avc1", *b"mp41"]
            .map(mp4::FourCC::from)
            .to_vec(),
        timescale: MOVIE_TIMESCALE,
    };
    let writer = mp4::Mp4Writer::write_start(BufWriter::new(file), &config)
        .map_err(|err| mp4_error(path, err))?;
    let track = Mp4Track {
        path: path.to_path_buf(),
        writer,
        width: width as u16,
        height: height as u16,
        sample_duration: sample_ticks as u32,
        parameter_sets: None,
        written: 0,
    };
    Ok((temp_path, track))
}

/// A coded segment into the MP4 being written, or kept when only segments are coded.
fn take_segment(
    output: &mut Option<(TempPath, Mp4Track)>,
    coded: &mut Vec<CodedSegment>,
    segment: CodedSegment,
) -> Result<(), EncodeError> {
    match output {
        Some((_, track)) => track.write_segment(segment),
        None => {
            coded.push(segment);
            Ok(())
        }
    }
}

impl Mp4Track {
    /// Appends a coded segment's frames as samples; the first segment's parameter sets make the
    /// track's avcC box, and a later segment whose encoder wrote other ones carries its own in
    /// its first sample.
    fn write_segment(&mut self, segment: CodedSegment) -> Result<(), EncodeError> {
        let in_band = match (&self.parameter_sets, segment.sps, segment.pps) {
            (None, Some(sps), Some(pps)) => {
                self.add_track(&sps, &pps)?;
                self.parameter_sets = Some((sps, pps));
                None
            }
            (None, _, _) => {
                return Err(EncodeError::Mp4 {
                    path: self.path.clone(),
                    message: "the first frame carries no SPS/PPS".into(),
                });
            }
            (Some(known), Some(sps), Some(pps)) if (&known.0, &known.1) != (&sps, &pps) => {
                Some((sps, pps))
            }
            (Some(_), _, _) => None,
        };
        for (i, frame) in segment.frames.into_iter().enumerate() {
            let bytes = match (&in_band, i) {
                (Some((sps, pps)), 0) => with_parameter_sets(sps, pps, &frame.data),
                _ => frame.data,
            };
            let sample = mp4::Mp4Sample {
                start_time: self.written as u64 * u64::from(self.sample_duration),
                duration: self.sample_duration,
                rendering_offset: 0,
                is_sync: frame.is_sync,
                bytes: mp4::Bytes::from(bytes),
            };
            self.writer
                .write_sample(1, &sample)
                .map_err(|err| mp4_error(&self.path, err))?;
            self.written += 1;
        }
        Ok(())
    }

    fn add_track(&mut self, sps: &[u8], pps: &[u8]) -> Result<(), EncodeError> {
        let track = mp4::TrackConfig {
            track_type: mp4::TrackType::Video,
            timescale: TRACK_TIMESCALE,
            language: "und".into(),
            media_conf: mp4::MediaConfig::AvcConfig(mp4::AvcConfig {
                width: self.width,
                height: self.height,
                seq_param_set: sps.to_vec(),
                pic_param_set: pps.to_vec(),
            }),
        };
        self.writer
            .add_track(&track)
            .map_err(|err| mp4_error(&self.path, err))
    }
}

/// `image` enlarged to `width`×`height` by repeating its last column and row.
fn pad_to(image: &RgbImage, width: u32, height: u32) -> RgbImage {
    let (max_x, max_y) = (image.width() - 1, image.height() - 1);
    RgbImage::from_fn(width, height, |x, y| {
        *image.get_pixel(x.min(max_x), y.min(max_y))
    })
}

fn mp4_error(path: &Path, err: mp4::Error) -> EncodeError {
    EncodeError::Mp4 {
        path: path.to_path_buf(),
        message: err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_frames_are_padded_by_repeating_the_edge() {
        let image = RgbImage::from_fn(3, 1, |x, _| image::Rgb([x as u8, 0, 0]));
        let padded = pad_to(&image, 4, 2);
        assert_eq!(padded.dimensions(), (4, 2));
        assert_eq!(padded.get_pixel(3, 0).0, [2, 0, 0]);
        assert_eq!(padded.get_pixel(3, 1).0, [2, 0, 0]);
        assert_eq!(padded.get_pixel(1, 1).0, [1, 0, 0]);
    }
}
