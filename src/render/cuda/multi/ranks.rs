//! One frame on the CUDA devices of MPI ranks, bit-identical to one process on one device:
//! each rank renders its share on its own device with the agreed ranges and kNN lengths and
//! with one device's fixed-point scale (Σ 1/h over every rank, [`super::rank_sums`]); the
//! fixed-point images are summed over the ranks (integers: exact in any order) and rank 0
//! converts the sum on its device, measures the exposure and tone-maps it there, as one device
//! does.

use super::super::{CudaRenderer, CudaTuning};
use super::rank_sums;
use super::reduce::compose_fixed;
use super::upload_share;
use crate::cluster::Collective;
use crate::data::share::Share;
use crate::gpu::{GpuDevice, GpuError};
use crate::jobs::Progress;
use crate::render::resolve::resolve_fields;
use crate::render::{
    Brightness, RenderError, RenderOutput, RenderSettings, RenderStats, StageTime,
};
use std::sync::Arc;
use std::time::Instant;

/// What rank 0 gets: the 8- or 16-bit image, τ when it was asked for, and the frame's facts.
#[derive(Debug)]
pub struct RanksFrame {
    /// The tone-mapped image (on the device, or from τ when τ was asked for, as one process).
    pub image: image::DynamicImage,
    /// τ and its stats, when asked for.
    pub output: Option<RenderOutput>,
    /// Counts over every rank, exposure, timings.
    pub stats: RenderStats,
}

/// Renders one frame over the ranks of `group`, each on `device` (its own), from each rank's
/// `share` with ranges agreed and every drawn species holding smoothing lengths (as
/// [`crate::render::ranks::render_ranks`] takes them). Rank 0 gets the frame, the others
/// `None`. Collective: a failure on one rank ends every rank.
pub fn render_ranks_cuda(
    group: &dyn Collective,
    device: Arc<GpuDevice>,
    share: &Share,
    settings: &RenderSettings,
    with_tau: bool,
    progress: &Progress,
) -> Result<Option<RanksFrame>, RenderError> {
    let start = Instant::now();
    let local = local_pieces(share, settings);
    if group.any_failed(local.is_err()) {
        return Err(local.err().unwrap_or_else(another_rank_failed));
    }
    let local = local?;
    let mut sums = Vec::new();
    for mine in &local {
        let all = group.all_gather_bytes(&rank_sums::to_bytes(mine));
        // Every rank reads the same bytes, so every rank fails here alike.
        let ranks = all
            .iter()
            .map(|bytes| rank_sums::from_bytes(bytes))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| RenderError::setting("a rank sent unreadable Σ 1/h pieces"))?;
        sums.push(rank_sums::combine(&ranks));
    }
    let frame = render_share(device, share, settings, &sums, progress);
    if group.any_failed(frame.is_err()) {
        return Err(frame.err().unwrap_or_else(another_rank_failed));
    }
    let (mut r, mut stats, mut fixed) = frame?;
    let sum_start = Instant::now();
    let mut counts = [
        stats.particles,
        stats.counts.inactive,
        stats.counts.small,
        stats.counts.medium,
        stats.counts.large,
    ];
    group.sum_u64(&mut counts);
    group.sum_u64(&mut fixed);
    if !group.is_root() {
        return Ok(None);
    }
    [
        stats.particles,
        stats.counts.inactive,
        stats.counts.small,
        stats.counts.medium,
        stats.counts.large,
    ] = counts;
    upload_fixed(&mut r, &fixed)?;
    compose_fixed(&mut r)?;
    stats.timings.push(StageTime {
        stage: "sum_ranks",
        seconds: sum_start.elapsed().as_secs_f64(),
    });
    let tone_start = Instant::now();
    let auto = match settings.brightness {
        Brightness::Auto {
            percentile,
            target_value,
        } => Some((percentile, target_value)),
        Brightness::Explicit(_) => None,
    };
    let (image, output) = if with_tau {
        // As one device's `render`: τ downloaded, exposure measured on the host.
        let tau = r.download_tau()?;
        if let Some((percentile, target_value)) = auto {
            let mut scratch = Vec::new();
            stats.tau_scale = crate::render::exposure::auto_brightness(
                &tau,
                percentile,
                target_value,
                &mut scratch,
            );
            stats.brightness = stats.tau_scale;
        }
        let output = RenderOutput {
            tau,
            stats: stats.clone(),
        };
        (output.image(&settings.tone), Some(output))
    } else {
        // As one device's `render_image`: exposure and tone map on the device.
        if let Some((percentile, target_value)) = auto {
            stats.tau_scale = r.auto_brightness(percentile, target_value)?;
            stats.brightness = stats.tau_scale;
        }
        (r.download_image(stats.tau_scale, &settings.tone)?, None)
    };
    stats.timings.push(StageTime {
        stage: "tone_download",
        seconds: tone_start.elapsed().as_secs_f64(),
    });
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(Some(RanksFrame {
        image,
        output,
        stats,
    }))
}

/// This rank's Σ 1/h pieces of every style's species.
fn local_pieces(
    share: &Share,
    settings: &RenderSettings,
) -> Result<Vec<Vec<(u64, rank_sums::Piece)>>, RenderError> {
    settings
        .species
        .iter()
        .map(|style| {
            let fields = resolve_fields(&share.snapshot, style)?;
            let n = fields.species.len();
            if fields.smoothing.len() != n {
                return Err(RenderError::setting(format!(
                    "species {} has no smoothing lengths on this rank",
                    style.kind.name()
                )));
            }
            let index = share
                .snapshot
                .species
                .iter()
                .position(|s| s.kind == style.kind)
                .unwrap_or_default();
            let first = share.first.get(index).copied().unwrap_or_default();
            Ok(rank_sums::pieces(
                fields.smoothing,
                fields.smoothing_factor,
                first,
            ))
        })
        .collect()
}

/// This rank's frame on its device: the renderer, its stats and its fixed-point τ.
fn render_share(
    device: Arc<GpuDevice>,
    share: &Share,
    settings: &RenderSettings,
    sums: &[f64],
    progress: &Progress,
) -> Result<(CudaRenderer, RenderStats, Vec<u64>), RenderError> {
    let mut r = CudaRenderer::new(device, CudaTuning::default())?;
    upload_share(&mut r, &share.snapshot, settings, sums, progress)?;
    let stats = r.render_frame(&share.snapshot, settings, progress)?;
    let Some(image) = r.image.as_ref() else {
        return Err(RenderError::setting("no frame rendered"));
    };
    let values = fixed_values(image);
    let fixed = r
        .compute
        .clone_dtoh(&image.tau_fixed.slice(0..values))
        .map_err(GpuError::from)?;
    Ok((r, stats, fixed))
}

/// Fixed-point values of the last frame (W·H per channel).
fn fixed_values(image: &super::super::buffers::ImageBuffers) -> usize {
    image.width as usize * image.height as usize * image.fixed_channels as usize
}

/// Replaces the last frame's fixed-point τ with `fixed` (the sum over the ranks).
fn upload_fixed(r: &mut CudaRenderer, fixed: &[u64]) -> Result<(), RenderError> {
    let Some(image) = r.image.as_mut() else {
        return Err(RenderError::setting("no frame rendered"));
    };
    let values = fixed_values(image);
    if fixed.len() != values {
        return Err(RenderError::setting("the ranks' images differ in size"));
    }
    r.compute
        .memcpy_htod(fixed, &mut image.tau_fixed.slice_mut(0..values))
        .map_err(GpuError::from)?;
    Ok(())
}

fn another_rank_failed() -> RenderError {
    RenderError::setting("another rank of the MPI job failed")
}
