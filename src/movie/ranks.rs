//! A movie over the ranks of an MPI job (`mpirun -n K haloscope movie …`): the frames are cut
//! into K consecutive parts on key-frame segment boundaries, each rank renders its part and
//! writes its PNGs, and codes its part's H.264 segments; rank 0 gathers the segments and writes
//! the MP4 in frame order. Every frame is rendered with the exposure fixed from the first frame
//! and every segment starts with its own key frame, so the PNG and MP4 bytes are one process's.

use super::encode::{Mp4Encoder, Mp4Settings};
use super::frames::{ExportError, ExportPart, ExportSummary, FramePlan, export_part, remove_stale};
use super::interpolate::PathSample;
use super::path::CameraPath;
use super::segment_bytes::{decode_segments, encode_segments};
use crate::cluster::{Agreed, Collective, agree};
use crate::jobs::Progress;
use image::RgbImage;
use std::error::Error as StdError;
use std::ops::Range;
use std::path::Path;

/// Rank `rank`'s frames of `n_frames` among `size` ranks: whole runs of `unit` frames (a
/// key-frame segment), consecutive, the parts differing by at most one run, in rank order.
pub fn frames_of_rank(n_frames: usize, unit: usize, rank: usize, size: usize) -> Range<usize> {
    let unit = unit.max(1);
    let units = n_frames.div_ceil(unit) as u128;
    let size = size.max(1) as u128;
    let bound = |r: u128| ((units * r / size) as usize * unit).min(n_frames);
    bound(rank as u128)..bound(rank as u128 + 1)
}

/// Frames of one key-frame segment of the movie (the whole movie when only its first frame is
/// a key frame); 1 without an MP4, where any cut will do.
fn segment_unit(n_frames: usize, mp4: Option<&Mp4Settings>) -> usize {
    match mp4 {
        Some(settings) if settings.keyframe_interval > 0 => settings.keyframe_interval as usize,
        Some(_) => n_frames,
        None => 1,
    }
}

/// [`super::export_frames`] over the ranks of `group`; every rank calls it with the same
/// arguments. Rank 0 gets the summary of the whole movie (frames rendered and skipped on every
/// rank, the MP4 it wrote, the longest rank's render time); the others get `None`. A rank that
/// fails ends every rank with the lowest failing rank's error.
pub fn export_frames_across<F, E>(
    group: &dyn Collective,
    path: &CameraPath,
    plan: &FramePlan,
    out_dir: &Path,
    mp4: Option<(&Path, &Mp4Settings)>,
    render_frame: F,
    progress: &Progress,
) -> Result<Option<ExportSummary>, Agreed>
where
    F: FnMut(&PathSample, usize) -> Result<RgbImage, E>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let started = std::time::Instant::now();
    let started_at = std::time::SystemTime::now();
    let checked = plan
        .check()
        .and_then(|()| match mp4 {
            Some(_) => plan.check_mp4(),
            None => Ok(()),
        })
        .map_err(ExportError::from);
    agree(group, checked)?;
    // Rank 0 alone clears what an interrupted run left, before any rank writes.
    let cleared = if group.is_root() {
        remove_stale(out_dir, mp4.map(|(p, _)| p), started_at)
    } else {
        Ok(())
    };
    agree(group, cleared)?;
    let unit = segment_unit(plan.n_frames, mp4.map(|(_, s)| s));
    let part = ExportPart {
        frames: frames_of_rank(plan.n_frames, unit, group.rank(), group.size()),
        mp4,
        segments_only: true,
    };
    let exported = export_part(path, plan, out_dir, &part, render_frame, progress);
    let (mut summary, segments) = agree(group, exported)?;
    let mut counts = [summary.rendered as u64, summary.skipped as u64];
    group.sum_u64(&mut counts);
    let mut render_seconds = [summary.render_seconds];
    group.max_f64(&mut render_seconds);
    let gathered = group.gather_bytes(0, &encode_segments(&segments));
    let written = match mp4 {
        Some((mp4_path, settings)) if group.is_root() => {
            write_mp4(&gathered, mp4_path, plan, settings).map(Some)
        }
        _ => Ok(None),
    };
    let written = agree(group, written)?;
    if !group.is_root() {
        return Ok(None);
    }
    [summary.rendered, summary.skipped] = counts.map(|c| c as usize);
    summary.render_seconds = render_seconds[0];
    summary.mp4 = written;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(Some(summary))
}

/// Writes the MP4 from every rank's coded segments, in rank (so frame) order.
fn write_mp4(
    gathered: &[Vec<u8>],
    mp4_path: &Path,
    plan: &FramePlan,
    settings: &Mp4Settings,
) -> Result<super::encode::Mp4Summary, ExportError> {
    let mut encoder = Mp4Encoder::create(mp4_path, plan.width, plan.height, plan.fps, settings)?;
    for bytes in gathered {
        for segment in decode_segments(bytes, mp4_path)? {
            encoder.push_coded(segment)?;
        }
    }
    Ok(encoder.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_frames_on_segment_boundaries_in_rank_order() {
        for (n, unit, size) in [
            (130, 60, 2),
            (130, 60, 3),
            (130, 60, 4),
            (7, 1, 3),
            (5, 5, 2),
        ] {
            let parts: Vec<_> = (0..size)
                .map(|r| frames_of_rank(n, unit, r, size))
                .collect();
            assert_eq!(parts[0].start, 0);
            assert_eq!(parts[size - 1].end, n);
            for pair in parts.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{n} {unit} {size}");
            }
            for part in &parts {
                assert!(
                    part.start.is_multiple_of(unit) || part.is_empty(),
                    "{part:?}"
                );
            }
        }
        assert_eq!(frames_of_rank(130, 60, 0, 2), 0..60);
        assert_eq!(frames_of_rank(130, 60, 1, 2), 60..130);
        assert_eq!(frames_of_rank(130, 60, 2, 4), 60..120);
        assert_eq!(frames_of_rank(7, 1, 2, 3), 4..7);
        assert_eq!(segment_unit(90, Some(&Mp4Settings::default())), 60);
        let no_keys = Mp4Settings {
            keyframe_interval: 0,
        };
        assert_eq!(segment_unit(90, Some(&no_keys)), 90);
        assert_eq!(segment_unit(90, None), 1);
    }
}
