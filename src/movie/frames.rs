//! Frame export: numbered PNG frames (the lossless master) and optionally an H.264 MP4.
//!
//! Each PNG is written to a hidden temporary file in the output folder and renamed into place,
//! so a frame under its final name is always complete; a later run skips those frames (resume).
//! The caller renders; PNGs are written by several worker threads (in any order) and H.264 is
//! encoded on one more (in frame order), so the renderer works on the next frame while earlier
//! ones are written and encoded, and PNG deflate is not a one-thread bottleneck.

pub use super::frame_plan::{FramePlan, PlanError};

use super::encode::{EncodeError, Mp4Encoder, Mp4Settings, Mp4Summary};
use super::interpolate::PathSample;
use super::path::CameraPath;
use super::segments::CodedSegment;
use crate::jobs::{Cancelled, Progress};
use crossbeam_channel::{Receiver, bounded};
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ImageEncoder, RgbImage};
use std::error::Error as StdError;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Frames queued between the renderer and each worker: enough to absorb jitter, few enough
/// that memory stays bounded (a 1920×1080 RGB frame is 6 MB).
const QUEUE_FRAMES: usize = 3;
/// Most PNG writer threads: one fast-deflate writer does ~35–60 1080p frames/s on this
/// project's CPU box (BENCHMARKS.md, movie), so four keep up with any renderer we have.
const MAX_PNG_WORKERS: usize = 4;

/// PNG writer threads for this machine: one per core, at most [`MAX_PNG_WORKERS`].
pub fn png_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_PNG_WORKERS)
}

/// File name of frame `index`: `frame_00000.png`.
pub fn frame_file_name(index: usize) -> String {
    format!("frame_{index:05}.png")
}

/// Whether `name` (bytes) is a [`frame_file_name`]: `frame_` digits `.png`.
pub fn is_frame_file_name(name: &[u8]) -> bool {
    name.strip_prefix(b"frame_")
        .and_then(|rest| rest.strip_suffix(b".png"))
        .is_some_and(|digits| !digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
}

/// Frame export failed or was cancelled.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The plan breaks a limit: no or too many frames, a bad frame rate or frame size.
    #[error("frame plan: {0}")]
    InvalidPlan(#[from] PlanError),
    /// The output folder could not be created.
    #[error("{}: {source}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The renderer failed.
    #[error("rendering frame {frame}: {source}")]
    Render {
        /// Frame index.
        frame: usize,
        /// The renderer's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The renderer returned another size than planned.
    #[error(
        "frame {frame}: renderer returned {found_width}×{found_height}, expected {width}×{height}"
    )]
    FrameSize {
        /// Frame index.
        frame: usize,
        /// Planned width.
        width: u32,
        /// Planned height.
        height: u32,
        /// Width returned.
        found_width: u32,
        /// Height returned.
        found_height: u32,
    },
    /// Writing a PNG failed.
    #[error("{}: {message}", path.display())]
    WritePng {
        /// The frame file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// Encoding the MP4 failed.
    #[error(transparent)]
    Encode(#[from] EncodeError),
    /// The user cancelled.
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
    /// A file could not be planned or written (crate::output's rule).
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

/// What an export did.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSummary {
    /// Frames in the movie.
    pub n_frames: usize,
    /// Frames rendered by this run.
    pub rendered: usize,
    /// Frames found valid on disk and skipped.
    pub skipped: usize,
    /// Every frame file, in order.
    pub frame_paths: Vec<PathBuf>,
    /// The MP4, when one was asked for.
    pub mp4: Option<Mp4Summary>,
    /// Wall-clock seconds of the whole export.
    pub seconds: f64,
    /// Seconds spent inside the renderer.
    pub render_seconds: f64,
}

/// Renders every frame of `plan` along `path` into `out_dir` (`frame_00000.png`, …), skipping
/// frames already there with the planned size, and, with `mp4`, encodes all frames (old and new)
/// into that MP4. `render_frame(sample, index)` must return a `width`×`height` image.
/// Cancellation is checked before each frame; frames finished until then stay on disk.
pub fn export_frames<F, E>(
    path: &CameraPath,
    plan: &FramePlan,
    out_dir: &Path,
    mp4: Option<(&Path, &Mp4Settings)>,
    render_frame: F,
    progress: &Progress,
) -> Result<ExportSummary, ExportError>
where
    F: FnMut(&PathSample, usize) -> Result<RgbImage, E>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let started_at = std::time::SystemTime::now();
    plan.check()?;
    if mp4.is_some() {
        plan.check_mp4()?;
    }
    remove_stale(out_dir, mp4.map(|(p, _)| p), started_at)?;
    let part = ExportPart {
        frames: 0..plan.n_frames,
        mp4,
        segments_only: false,
    };
    export_part(path, plan, out_dir, &part, render_frame, progress).map(|(summary, _)| summary)
}

/// Which frames of a movie one process exports, and what it does with the MP4.
#[derive(Debug, Clone)]
pub struct ExportPart<'a> {
    /// The frames this process renders (or finds on disk).
    pub frames: Range<usize>,
    /// The MP4 and its settings, when one is asked for.
    pub mp4: Option<(&'a Path, &'a Mp4Settings)>,
    /// Code only this part's key-frame segments (the frames must start a segment) and hand
    /// them back, for the process that writes the MP4; else write the MP4 itself.
    pub segments_only: bool,
}

/// Creates `out_dir` and removes the temporary files an interrupted run left there (frames)
/// and beside `mp4`, older than `started_at`, before this run makes its own.
pub fn remove_stale(
    out_dir: &Path,
    mp4: Option<&Path>,
    started_at: std::time::SystemTime,
) -> Result<(), ExportError> {
    std::fs::create_dir_all(out_dir).map_err(|source| ExportError::CreateDir {
        path: out_dir.to_path_buf(),
        source,
    })?;
    crate::output::remove_stale_temporaries_in(out_dir, started_at, is_frame_file_name)?;
    if let Some(mp4_path) = mp4 {
        crate::output::remove_stale_temporaries(mp4_path, started_at)?;
    }
    Ok(())
}

/// [`export_frames`] of `part.frames` only, into a folder [`remove_stale`] prepared; with
/// `part.segments_only`, the coded segments of those frames come back beside the summary
/// (whose `mp4` is then `None`).
pub fn export_part<F, E>(
    path: &CameraPath,
    plan: &FramePlan,
    out_dir: &Path,
    part: &ExportPart<'_>,
    mut render_frame: F,
    progress: &Progress,
) -> Result<(ExportSummary, Vec<CodedSegment>), ExportError>
where
    F: FnMut(&PathSample, usize) -> Result<RgbImage, E>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let started = Instant::now();
    let mp4 = part.mp4;
    plan.check()?;
    if mp4.is_some() {
        plan.check_mp4()?;
    }
    std::fs::create_dir_all(out_dir).map_err(|source| ExportError::CreateDir {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let frames = part.frames.start.min(plan.n_frames)..part.frames.end.min(plan.n_frames);
    let frame_paths: Vec<PathBuf> = (0..plan.n_frames)
        .map(|i| out_dir.join(frame_file_name(i)))
        .collect();
    let on_disk: Vec<bool> = frame_paths
        .iter()
        .enumerate()
        .map(|(i, p)| frames.contains(&i) && frame_on_disk(p, plan.width, plan.height))
        .collect();
    let to_render = frames.len() - on_disk.iter().filter(|&&done| done).count();
    let mut encoder = match mp4 {
        Some((mp4_path, settings)) if part.segments_only => Some(Mp4Encoder::segments_only(
            mp4_path,
            (plan.width, plan.height),
            plan.fps,
            settings,
            frames.start,
        )?),
        Some((mp4_path, settings)) => Some(Mp4Encoder::create(
            mp4_path,
            plan.width,
            plan.height,
            plan.fps,
            settings,
        )?),
        None => None,
    };
    let mut rendered = 0;
    let mut skipped = 0;
    let mut render_time = Duration::ZERO;
    progress.report("rendering", 0, to_render as u64);

    let n_png_workers = png_workers();
    let (png_sender, png_receiver) =
        bounded::<(PathBuf, Arc<RgbImage>)>(QUEUE_FRAMES * n_png_workers);
    let (encode_sender, encode_receiver) = bounded::<Arc<RgbImage>>(QUEUE_FRAMES);
    // Set by a PNG writer that failed, so the renderer stops although other writers still
    // take frames.
    let png_failed = AtomicBool::new(false);
    let (main_result, png_result, encode_result) = std::thread::scope(|scope| {
        let png_workers: Vec<_> = (0..n_png_workers)
            .map(|_| {
                let receiver = png_receiver.clone();
                let failed = &png_failed;
                scope.spawn(move || write_pngs(receiver, failed))
            })
            .collect();
        drop(png_receiver);
        let encode_worker = encoder
            .take()
            .map(|encoder| scope.spawn(move || encode_frames(encoder, encode_receiver)));
        let main_result = (|| -> Result<(), ExportError> {
            for (index, frame_path) in frame_paths
                .iter()
                .enumerate()
                .skip(frames.start)
                .take(frames.len())
            {
                progress.check()?;
                if png_failed.load(Ordering::Relaxed) {
                    return Ok(());
                }
                let mut frame = None;
                if on_disk[index] {
                    if encode_worker.is_none() {
                        skipped += 1;
                        continue;
                    }
                    // The encoder needs the pixels; a file that no longer decodes is rendered
                    // again.
                    frame = read_frame(frame_path, plan.width, plan.height);
                    if frame.is_some() {
                        skipped += 1;
                    }
                }
                let frame = match frame {
                    Some(frame) => Arc::new(frame),
                    None => {
                        let sample = path.sample(plan.time_of_frame(path, index));
                        let render_start = Instant::now();
                        let image =
                            render_frame(&sample, index).map_err(|err| ExportError::Render {
                                frame: index,
                                source: err.into(),
                            })?;
                        render_time += render_start.elapsed();
                        if image.dimensions() != (plan.width, plan.height) {
                            return Err(ExportError::FrameSize {
                                frame: index,
                                width: plan.width,
                                height: plan.height,
                                found_width: image.width(),
                                found_height: image.height(),
                            });
                        }
                        let image = Arc::new(image);
                        // A closed channel means the worker failed; its error is reported below.
                        if png_sender
                            .send((frame_path.clone(), image.clone()))
                            .is_err()
                        {
                            return Ok(());
                        }
                        rendered += 1;
                        progress.report("rendering", rendered as u64, to_render as u64);
                        image
                    }
                };
                if encode_worker.is_some() && encode_sender.send(frame).is_err() {
                    return Ok(());
                }
            }
            Ok(())
        })();
        drop(png_sender);
        drop(encode_sender);
        // Every writer is joined (a scope must not end with a panicked thread unjoined); the
        // first failed one, in worker order, is reported.
        let png_result = png_workers
            .into_iter()
            .map(|worker| {
                worker.join().unwrap_or_else(|_| {
                    Err(ExportError::WritePng {
                        path: out_dir.to_path_buf(),
                        message: "PNG writer thread panicked".into(),
                    })
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect::<Result<Vec<()>, ExportError>>();
        let encode_result = encode_worker.map(|worker| {
            worker.join().unwrap_or_else(|_| {
                Err(EncodeError::Mp4 {
                    path: mp4.map_or_else(PathBuf::new, |(p, _)| p.to_path_buf()),
                    message: "encoder thread panicked".into(),
                })
            })
        });
        (main_result, png_result, encode_result)
    });
    // A worker's failure is the root cause of an early stop, so it wins over the main loop's.
    png_result?;
    let encoder = encode_result.transpose()?;
    main_result?;
    let (mp4_summary, segments) = match encoder {
        Some(encoder) if part.segments_only => (None, encoder.finish_segments()?),
        Some(encoder) => {
            progress.report("encoding", 0, 1);
            let summary = encoder.finish()?;
            progress.report("encoding", 1, 1);
            (Some(summary), Vec::new())
        }
        None => (None, Vec::new()),
    };
    let summary = ExportSummary {
        n_frames: plan.n_frames,
        rendered,
        skipped,
        frame_paths,
        mp4: mp4_summary,
        seconds: started.elapsed().as_secs_f64(),
        render_seconds: render_time.as_secs_f64(),
    };
    Ok((summary, segments))
}

/// Whether `path` holds a PNG of `width`×`height` (header check: our own frames are complete
/// once under their final name, because they are renamed into place).
fn frame_on_disk(path: &Path, width: u32, height: u32) -> bool {
    image::ImageReader::open(path)
        .and_then(|reader| reader.with_guessed_format())
        .ok()
        .and_then(|reader| reader.into_dimensions().ok())
        == Some((width, height))
}

/// The frame at `path` as RGB, if it decodes and has the planned size.
fn read_frame(path: &Path, width: u32, height: u32) -> Option<RgbImage> {
    let image = image::open(path).ok()?.into_rgb8();
    (image.dimensions() == (width, height)).then_some(image)
}

/// Writes each received frame as a PNG, atomically; on failure raises `failed` and stops.
fn write_pngs(
    frames: Receiver<(PathBuf, Arc<RgbImage>)>,
    failed: &AtomicBool,
) -> Result<(), ExportError> {
    for (path, image) in frames {
        if let Err(err) = write_png_atomic(&path, &image) {
            failed.store(true, Ordering::Relaxed);
            return Err(err);
        }
    }
    Ok(())
}

/// Encodes each received frame; returns the encoder for `finish` once the channel closes.
fn encode_frames(
    mut encoder: Mp4Encoder,
    frames: Receiver<Arc<RgbImage>>,
) -> Result<Mp4Encoder, EncodeError> {
    for image in frames {
        encoder.push_frame(&image)?;
    }
    Ok(encoder)
}

/// Writes `image` as an 8-bit RGB PNG to a temporary file beside `path`, then renames it
/// (crate::output's rule: the usual mode, an older file untouched on failure).
pub fn write_png_atomic(path: &Path, image: &RgbImage) -> Result<(), ExportError> {
    let fail = |message: String| ExportError::WritePng {
        path: path.to_path_buf(),
        message,
    };
    crate::output::write_atomically(path, |writer| {
        // Fast deflate: frames are a lossless master that is written once and read rarely.
        PngEncoder::new_with_quality(writer, CompressionType::Fast, FilterType::Adaptive)
            .write_image(
                image.as_raw(),
                image.width(),
                image.height(),
                image::ExtendedColorType::Rgb8,
            )
            .map_err(|err| fail(err.to_string()))
    })
    .map_err(|err| match err {
        ExportError::Output(err) => fail(err.to_string()),
        other => other,
    })
}
