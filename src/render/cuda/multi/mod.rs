//! One frame over several CUDA devices: the particles are split once, at upload, into
//! consecutive shares of every species (even by count, file order), each device keeps its share
//! resident and renders it with the whole snapshot's normalisation ranges, kNN lengths and
//! fixed-point scale ([`split`]), and the partial fixed-point τ images are summed on the first
//! device ([`reduce`]). Integer sums do not depend on order, so τ, the exposure and the image
//! are one device's bit for bit; the exposure and the tone map run once, on the first device.
//! Large splats are drawn on the devices (CPU large splats are summed in f32, which is not
//! exact: [`CudaSet`] renders those on one device).

mod rank_sums;
mod ranks;
mod reduce;
mod set;
mod split;

pub use ranks::{RanksFrame, render_ranks_cuda};
pub use set::CudaSet;

use super::data::{self, DataKey};
use super::{CudaRenderer, CudaTuning, staged};
use crate::data::Snapshot;
use crate::gpu::{GpuDevice, GpuError};
use crate::jobs::Progress;
use crate::render::{
    Brightness, ClassCounts, RenderError, RenderOutput, RenderSettings, RenderStats, StageTime,
    ToneSettings,
};
use rayon::prelude::*;
use reduce::Reducer;
use split::Whole;
use std::sync::Arc;
use std::time::Instant;

/// Several CUDA devices rendering one frame together (see the module docs).
#[derive(Debug)]
pub struct MultiCudaRenderer {
    renderers: Vec<CudaRenderer>,
    reducer: Reducer,
    parts: Option<Parts>,
    last_upload_seconds: f64,
    exposure_scratch: Vec<f32>,
}

/// The loaded data: the key of the whole snapshot's arrays and styles, what every device takes
/// from the whole, and each device's share.
#[derive(Debug)]
struct Parts {
    key: DataKey,
    whole: Whole,
    snapshots: Vec<Snapshot>,
}

impl MultiCudaRenderer {
    /// One CUDA renderer per device in `devices` (the same device may be named more than once:
    /// each entry then holds its own share); large splats must be drawn on the devices.
    pub fn new(devices: &[Arc<GpuDevice>], tuning: CudaTuning) -> Result<Self, RenderError> {
        let Some((first, others)) = devices.split_first() else {
            return Err(RenderError::setting("several devices: none given"));
        };
        if tuning.large != crate::render::LargeSplats::Gpu {
            return Err(RenderError::setting(
                "large splats on the CPU are summed in f32: several devices need them on the GPU",
            ));
        }
        // Each device's kernels, streams and staging at once.
        let renderers = devices
            .par_iter()
            .map(|device| CudaRenderer::new(device.clone(), tuning))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            renderers,
            reducer: Reducer::new(first, others)?,
            parts: None,
            last_upload_seconds: 0.0,
            exposure_scratch: Vec::new(),
        })
    }

    /// [`CudaRenderer::prepare`] on every device.
    pub fn prepare(&mut self, reserve_bytes: usize) -> Result<(), GpuError> {
        self.renderers
            .iter_mut()
            .try_for_each(|r| r.prepare(reserve_bytes))
    }

    /// How many devices share a frame.
    pub fn device_count(&self) -> usize {
        self.renderers.len()
    }

    /// Whether every device holds its share resident.
    pub fn is_resident(&self) -> bool {
        self.parts.is_some() && self.renderers.iter().all(CudaRenderer::is_resident)
    }

    /// Seconds the last upload took on all devices (0 when the data were resident already).
    pub fn last_upload_seconds(&self) -> f64 {
        self.last_upload_seconds
    }

    /// Renders one frame on every device and sums the images into the first device's τ
    /// (`stats.tau_scale` is 1; under auto exposure use [`Self::render`] or
    /// [`Self::auto_brightness`]).
    pub fn render_frame(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderStats, RenderError> {
        let start = Instant::now();
        let key = data::key_of(snapshot, settings)?;
        if self.parts.as_ref().is_some_and(|p| p.key == key) {
            self.last_upload_seconds = 0.0;
        } else {
            self.parts = None;
            self.upload(snapshot, settings, key, progress)?;
        }
        let Self {
            renderers,
            reducer,
            parts,
            ..
        } = self;
        let Some(parts) = parts.as_ref() else {
            return Err(RenderError::setting("no data loaded"));
        };
        let device_settings = parts.whole.settings(settings);
        let frames_start = Instant::now();
        let frames = on_each(renderers, &parts.snapshots, |r, part| {
            r.render_frame(part, &device_settings, progress)
        });
        let frames = frames.into_iter().collect::<Result<Vec<_>, _>>()?;
        let frames_seconds = frames_start.elapsed().as_secs_f64();
        let reduce_start = Instant::now();
        let Some((first, others)) = renderers.split_first_mut() else {
            return Err(RenderError::setting("no device"));
        };
        reducer.sum_into_first(first, others)?;
        let reduce_seconds = reduce_start.elapsed().as_secs_f64();
        Ok(merged_stats(
            frames,
            &[
                ("upload_all", self.last_upload_seconds),
                ("devices", frames_seconds),
                ("reduce", reduce_seconds),
            ],
            start.elapsed().as_secs_f64(),
        ))
    }

    /// Renders one frame and downloads τ (auto exposure computed from it, as the CPU does).
    pub fn render(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
    ) -> Result<RenderOutput, RenderError> {
        let mut stats = self.render_frame(snapshot, settings, progress)?;
        let start = Instant::now();
        let tau = self.first()?.download_tau()?;
        if let Brightness::Auto {
            percentile,
            target_value,
        } = settings.brightness
        {
            stats.tau_scale = crate::render::exposure::auto_brightness(
                &tau,
                percentile,
                target_value,
                &mut self.exposure_scratch,
            );
            stats.brightness = stats.tau_scale;
        }
        stats.add_stage("download_tau", start);
        Ok(RenderOutput { tau, stats })
    }

    /// The auto-exposure brightness of the last (summed) frame, measured on the first device.
    pub fn auto_brightness(
        &mut self,
        percentile: f32,
        target_value: f32,
    ) -> Result<f32, RenderError> {
        self.first_mut()?.auto_brightness(percentile, target_value)
    }

    /// Tone-maps the last (summed) frame on the first device and downloads only the image.
    pub fn download_image(
        &mut self,
        tau_scale: f32,
        tone: &ToneSettings,
    ) -> Result<image::DynamicImage, RenderError> {
        self.first_mut()?.download_image(tau_scale, tone)
    }

    /// Tone-maps the last (summed) frame on the first device and downloads its RGBA image.
    pub fn download_rgba(
        &mut self,
        tau_scale: f32,
        tone: &ToneSettings,
    ) -> Result<Vec<u8>, RenderError> {
        self.first_mut()?.download_rgba(tau_scale, tone)
    }

    /// Downloads the last (summed) frame's τ.
    pub fn download_tau(&self) -> Result<crate::render::TauBuffer, RenderError> {
        self.first()?.download_tau()
    }

    fn first(&self) -> Result<&CudaRenderer, RenderError> {
        self.renderers
            .first()
            .ok_or_else(|| RenderError::setting("no device"))
    }

    fn first_mut(&mut self) -> Result<&mut CudaRenderer, RenderError> {
        self.renderers
            .first_mut()
            .ok_or_else(|| RenderError::setting("no device"))
    }

    /// Finds what the devices take from the whole snapshot, cuts the shares and uploads each
    /// to its device (all devices at once).
    fn upload(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        key: DataKey,
        progress: &Progress,
    ) -> Result<(), RenderError> {
        let start = Instant::now();
        let first = self.first()?.device().clone();
        let whole = Whole::of(snapshot, settings, Some(&first), progress)?;
        let device_settings = whole.settings(settings);
        let parts = self.renderers.len();
        // The shares are cut on threads: at 2·10⁸ particles each is gigabytes of copies.
        let snapshots: Vec<Snapshot> = (0..parts)
            .into_par_iter()
            .map(|part| whole.part(snapshot, settings, part, parts))
            .collect();
        let sums = &whole.sum_inv_h;
        let uploaded = on_each(&mut self.renderers, &snapshots, |r, part| {
            upload_share(r, part, &device_settings, sums, progress)
        });
        uploaded.into_iter().collect::<Result<Vec<()>, _>>()?;
        self.parts = Some(Parts {
            key,
            whole,
            snapshots,
        });
        self.last_upload_seconds = start.elapsed().as_secs_f64();
        Ok(())
    }
}

/// Runs `work` on each renderer with its share, one thread per device, and returns the results
/// in device order.
fn on_each<T: Send>(
    renderers: &mut [CudaRenderer],
    shares: &[Snapshot],
    work: impl Fn(&mut CudaRenderer, &Snapshot) -> Result<T, RenderError> + Sync,
) -> Vec<Result<T, RenderError>> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = renderers
            .iter_mut()
            .zip(shares)
            .map(|(r, share)| scope.spawn(move || work(r, share)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(RenderError::setting("a device's render thread failed"))
                })
            })
            .collect()
    })
}

/// Uploads one device's share (resident when it fits, else prepared for streaming) with the
/// whole snapshot's Σ 1/h per species, so that every device picks one device's fixed-point
/// scale.
fn upload_share(
    r: &mut CudaRenderer,
    share: &Snapshot,
    settings: &RenderSettings,
    sum_inv_h: &[f64],
    progress: &Progress,
) -> Result<(), RenderError> {
    let key = data::key_of(share, settings)?;
    r.loaded = None;
    r.scratch = None;
    let mut timings = Vec::new();
    let mut loaded = match staged::upload_resident(r, share, settings, progress, &mut timings)? {
        Some(loaded) => loaded,
        None => data::prepare(&r.device, share, settings, progress)?,
    };
    for (species, sum) in loaded.iter_mut().zip(sum_inv_h) {
        species.sum_inv_h = *sum;
    }
    r.loaded = Some((key, loaded));
    Ok(())
}

/// One frame's stats from the devices' stats: particles and classes summed, the stage times
/// of the slowest device, then `stages`, and the wall `seconds`.
fn merged_stats(
    frames: Vec<RenderStats>,
    stages: &[(&'static str, f64)],
    seconds: f64,
) -> RenderStats {
    let mut counts = ClassCounts::default();
    let mut particles = 0;
    for f in &frames {
        particles += f.particles;
        counts.inactive += f.counts.inactive;
        counts.small += f.counts.small;
        counts.medium += f.counts.medium;
        counts.large += f.counts.large;
    }
    let slowest = frames
        .into_iter()
        .max_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let mut stats = slowest.unwrap_or(RenderStats {
        particles: 0,
        counts,
        brightness: 1.0,
        auto_exposure: false,
        tau_scale: 1.0,
        timings: Vec::new(),
        seconds: 0.0,
    });
    stats.particles = particles;
    stats.counts = counts;
    stats.timings.extend(
        stages
            .iter()
            .map(|&(stage, seconds)| StageTime { stage, seconds }),
    );
    stats.seconds = seconds;
    stats
}
