//! H.264 encoding (OpenH264, built from its bundled source) into an MP4 file (ISO-BMFF, written
//! by the `mp4` crate), all in-process.
//!
//! The MP4 grows in a hidden temporary file beside the final one and is renamed into place only
//! by [`Mp4Encoder::finish`]; dropping the encoder before that (error, cancel) deletes it, so a
//! failed export never leaves a truncated MP4 under the final name.

use image::RgbImage;
use openh264::OpenH264API;
use openh264::encoder::{Encoder, EncoderConfig, FrameRate, IntraFramePeriod, RateControlMode};
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
/// H.264 NAL unit types (ITU-T H.264 Table 7-1).
const NAL_IDR_SLICE: u8 = 5;
const NAL_SPS: u8 = 7;
const NAL_PPS: u8 = 8;

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
/// order, then [`finish`](Self::finish).
pub struct Mp4Encoder {
    final_path: PathBuf,
    temp_path: TempPath,
    writer: mp4::Mp4Writer<BufWriter<File>>,
    encoder: Encoder,
    yuv: YUVBuffer,
    /// Frame size as given.
    width: u32,
    height: u32,
    /// Encoded size: rounded up to even, as 4:2:0 chroma needs.
    encoded_width: u32,
    encoded_height: u32,
    sample_duration: u32,
    frames: usize,
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
        // `.<name>.XXXXXX.part` beside the MP4: an interrupted run's file is recognisable, and
        // the next run of the same MP4 removes it (export_frames).
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
        let encoder = Encoder::with_api_config(OpenH264API::from_source(), config)
            .map_err(|err| h264_error(path, err))?;
        Ok(Self {
            final_path,
            temp_path,
            writer,
            encoder,
            yuv: YUVBuffer::new(encoded_width as usize, encoded_height as usize),
            width,
            height,
            encoded_width,
            encoded_height,
            sample_duration: sample_ticks as u32,
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
        if (self.encoded_width, self.encoded_height) == (self.width, self.height) {
            self.yuv.read_rgb8(RgbSliceU8::new(image.as_raw(), size));
        } else {
            let padded = pad_to(image, self.encoded_width, self.encoded_height);
            self.yuv.read_rgb8(RgbSliceU8::new(padded.as_raw(), size));
        }
        let timestamp_ms = (self.frames as u64 * u64::from(self.sample_duration) * 1000)
            / u64::from(TRACK_TIMESCALE);
        let bitstream = self
            .encoder
            .encode_at(&self.yuv, openh264::Timestamp::from_millis(timestamp_ms))
            .map_err(|err| h264_error(&self.final_path, err))?;
        let mut sample = Vec::new();
        let mut sps = None;
        let mut pps = None;
        let mut is_sync = false;
        for layer_index in 0..bitstream.num_layers() {
            let Some(layer) = bitstream.layer(layer_index) else {
                continue;
            };
            for nal_index in 0..layer.nal_count() {
                let Some(nal) = layer.nal_unit(nal_index).map(strip_start_code) else {
                    continue;
                };
                let Some(&header) = nal.first() else {
                    continue;
                };
                match header & 0x1f {
                    // Parameter sets go into the avcC box, not the samples.
                    NAL_SPS => sps = Some(nal.to_vec()),
                    NAL_PPS => pps = Some(nal.to_vec()),
                    nal_type => {
                        is_sync |= nal_type == NAL_IDR_SLICE;
                        // AVC sample format: each NAL prefixed by its 4-byte big-endian length
                        // (ISO/IEC 14496-15 §5.3.2, lengthSizeMinusOne = 3 in mp4's avcC).
                        let length = u32::try_from(nal.len()).map_err(|_| EncodeError::Mp4 {
                            path: self.final_path.clone(),
                            message: format!("NAL unit of {} bytes", nal.len()),
                        })?;
                        sample.extend_from_slice(&length.to_be_bytes());
                        sample.extend_from_slice(nal);
                    }
                }
            }
        }
        if sample.is_empty() {
            return Err(EncodeError::EmptyFrame {
                path: self.final_path.clone(),
                frame: self.frames,
            });
        }
        if self.frames == 0 {
            let (Some(seq_param_set), Some(pic_param_set)) = (sps, pps) else {
                return Err(EncodeError::Mp4 {
                    path: self.final_path.clone(),
                    message: "the first frame carries no SPS/PPS".into(),
                });
            };
            let track = mp4::TrackConfig {
                track_type: mp4::TrackType::Video,
                timescale: TRACK_TIMESCALE,
                language: "und".into(),
                media_conf: mp4::MediaConfig::AvcConfig(mp4::AvcConfig {
                    width: self.encoded_width as u16,
                    height: self.encoded_height as u16,
                    seq_param_set,
                    pic_param_set,
                }),
            };
            self.writer
                .add_track(&track)
                .map_err(|err| mp4_error(&self.final_path, err))?;
        }
        let mp4_sample = mp4::Mp4Sample {
            start_time: self.frames as u64 * u64::from(self.sample_duration),
            duration: self.sample_duration,
            rendering_offset: 0,
            is_sync,
            bytes: mp4::Bytes::from(sample),
        };
        self.writer
            .write_sample(1, &mp4_sample)
            .map_err(|err| mp4_error(&self.final_path, err))?;
        self.frames += 1;
        Ok(())
    }

    /// Writes the index (moov), flushes, and renames the MP4 into place.
    pub fn finish(mut self) -> Result<Mp4Summary, EncodeError> {
        let path = self.final_path.clone();
        if self.frames == 0 {
            return Err(EncodeError::NoFrames { path });
        }
        self.writer
            .write_end()
            .map_err(|err| mp4_error(&path, err))?;
        let io_error = |source| EncodeError::Io {
            path: path.clone(),
            source,
        };
        let file = self
            .writer
            .into_writer()
            .into_inner()
            .map_err(|err| io_error(err.into_error()))?;
        file.sync_all().map_err(io_error)?;
        let bytes = file.metadata().map_err(io_error)?.len();
        drop(file);
        self.temp_path
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

/// The NAL unit without its Annex B start code (00 00 01 or 00 00 00 01).
fn strip_start_code(nal: &[u8]) -> &[u8] {
    let zeros = nal.iter().take_while(|&&b| b == 0).count();
    if zeros >= 2 && nal.get(zeros) == Some(&1) {
        &nal[zeros + 1..]
    } else {
        nal
    }
}

/// `image` enlarged to `width`×`height` by repeating its last column and row.
fn pad_to(image: &RgbImage, width: u32, height: u32) -> RgbImage {
    let (max_x, max_y) = (image.width() - 1, image.height() - 1);
    RgbImage::from_fn(width, height, |x, y| {
        *image.get_pixel(x.min(max_x), y.min(max_y))
    })
}

fn h264_error(path: &Path, err: openh264::Error) -> EncodeError {
    EncodeError::H264 {
        path: path.to_path_buf(),
        message: err.to_string(),
    }
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
    fn start_codes_of_both_lengths_are_stripped() {
        assert_eq!(strip_start_code(&[0, 0, 0, 1, 0x67, 9]), &[0x67, 9]);
        assert_eq!(strip_start_code(&[0, 0, 1, 0x68]), &[0x68]);
        assert_eq!(strip_start_code(&[0x65, 1]), &[0x65, 1]);
    }

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
