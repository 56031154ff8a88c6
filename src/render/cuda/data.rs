//! Particle data for the device: host arrays streamed through the pinned staging buffers chunk
//! by chunk when the data do not stay resident (staged.rs uploads resident data), and the
//! device arrays both fill.

use super::super::knn::smoothing_lengths;
use super::super::normalise::Normaliser;
use super::super::{RenderError, RenderSettings, SpeciesStyle};
use crate::data::{Snapshot, SpeciesKind};
use crate::gpu::GpuError;
use crate::jobs::Progress;
use crate::render::resolve::{Values, field_values, resolve};
use cudarc::driver::{CudaSlice, CudaStream};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::Arc;

/// n ↦ n for n ∈ [0, 1]: (clamp(n, 0, 1) − 0)/(1 − 0) is exact.
pub(crate) const IDENTITY: Normaliser = Normaliser {
    log: false,
    lo: 0.0,
    hi: 1.0,
};

/// The data-dependent part of a style: what was uploaded and how it is normalised.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DataStyle {
    kind: SpeciesKind,
    intensity: Option<String>,
    intensity_log: bool,
    intensity_range: Option<(f32, f32)>,
    colour: Option<String>,
    colour_log: bool,
    colour_range: Option<(f32, f32)>,
    kernel_support: Option<f32>,
}

impl DataStyle {
    pub(crate) fn of(style: &SpeciesStyle) -> Self {
        Self {
            kind: style.kind,
            intensity: style.intensity.clone(),
            intensity_log: style.intensity_log,
            intensity_range: style.intensity_range,
            colour: style.colour.clone(),
            colour_log: style.colour_log,
            colour_range: style.colour_range,
            kernel_support: style.kernel_support,
        }
    }
}

/// What identifies the loaded host data: every uploaded slice's address and length, and the
/// data-dependent styles.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DataKey {
    slices: Vec<(usize, usize)>,
    styles: Vec<DataStyle>,
    knn: usize,
}

/// Device copies of one species' arrays.
#[derive(Debug)]
pub(crate) struct DeviceArrays {
    pub(crate) pos: CudaSlice<f32>,
    pub(crate) h: CudaSlice<f32>,
    pub(crate) intensity: Option<CudaSlice<f32>>,
    pub(crate) colour: Option<CudaSlice<f32>>,
}

/// One drawn species, prepared for rendering.
#[derive(Debug)]
pub(crate) struct LoadedSpecies {
    pub(crate) kind: SpeciesKind,
    pub(crate) n: usize,
    /// What the kernels apply to the device values: [`IDENTITY`] to the host's normalised n
    /// when streamed; the clamp and scale of the limits to the uploaded log10 values when
    /// resident (staged.rs).
    pub(crate) intensity_norm: Option<Normaliser>,
    pub(crate) colour_norm: Option<Normaliser>,
    /// Σ 1/h over particles with finite h > 0: with colour ≤ 1, n ≤ 1 and weights ≤ 1, no pixel's
    /// τ exceeds K_A·brightness·Σ 1/h (this bounds the fixed-point scale).
    pub(crate) sum_inv_h: f64,
    /// kNN smoothing lengths when the file has none, or the file's scaled to the drawing
    /// convention.
    pub(crate) own_h: Option<Vec<f32>>,
    /// Normalised intensity n and colour coordinate per particle, computed once on the CPU with
    /// [`Normaliser::apply`] (so that n is bit-identical to the CPU reference's: a device log10f
    /// one ulp off would light pixels the CPU leaves at exactly 0); the kernels then apply the
    /// identity normaliser [`IDENTITY`].
    pub(crate) own_intensity: Option<Vec<f32>>,
    pub(crate) own_colour: Option<Vec<f32>>,
    /// Resident device copies (None: streamed every frame).
    pub(crate) resident: Option<DeviceArrays>,
    /// The order of the resident copy when it was reordered on the device: device particle k
    /// is file particle `device_order[k]` (None: file order).
    pub(crate) device_order: Option<CudaSlice<u32>>,
}

/// Host slices of one species for one frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostArrays<'a> {
    pub(crate) pos: &'a [f32],
    pub(crate) h: &'a [f32],
    pub(crate) intensity: Option<&'a [f32]>,
    pub(crate) colour: Option<&'a [f32]>,
}

impl LoadedSpecies {
    /// The host arrays of this species in `snapshot`.
    pub(crate) fn host<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        style: &SpeciesStyle,
    ) -> Result<HostArrays<'a>, RenderError> {
        let species = snapshot
            .species(self.kind)
            .ok_or_else(|| RenderError::setting(format!("species {} vanished", self.kind)))?;
        let h = match (&self.own_h, &species.smoothing_lengths) {
            (Some(h), _) => h.as_slice(),
            (None, Some(h)) => h.as_slice(),
            (None, None) => &[],
        };
        let values = |own: &'a Option<Vec<f32>>, name: &Option<String>| -> Result<_, RenderError> {
            match (own, name) {
                (Some(v), _) => Ok(Some(v.as_slice())),
                (None, Some(name)) => match field_values(species, name)? {
                    Values::Slice(v) => Ok(Some(v)),
                    Values::Constant(_) => Ok(None),
                },
                (None, None) => Ok(None),
            }
        };
        Ok(HostArrays {
            pos: species.positions.as_flattened(),
            h,
            intensity: values(&self.own_intensity, &style.intensity)?,
            colour: values(&self.own_colour, &style.colour)?,
        })
    }
}

/// Resolves every style for frames that stream host arrays (normalisers from the data, kNN
/// smoothing lengths where missing, computed on `device`).
pub(crate) fn prepare(
    device: &crate::gpu::GpuDevice,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<Vec<LoadedSpecies>, RenderError> {
    let mut loaded = Vec::new();
    for style in &settings.species {
        let r = resolve(snapshot, style)?;
        let n = r.species.len();
        let own_h = if r.smoothing.is_empty() && n > 0 {
            let box_size = snapshot.header.periodic_box();
            Some(smoothing_lengths(
                Some(device),
                &r.species.positions,
                settings.knn,
                box_size,
                progress,
            )?)
        } else if let Cow::Owned(scaled) = &r.smoothing {
            Some(scaled.clone())
        } else {
            None
        };
        let h: &[f32] = own_h.as_deref().unwrap_or(&r.smoothing);
        // Chunk sums on threads, added in chunk order: the same f64 bits as a serial sum of the
        // chunks.
        let chunk_sums: Vec<f64> = h
            .par_chunks(1 << 16)
            .map(|c| {
                c.iter()
                    .filter(|h| **h > 0.0 && h.is_finite())
                    .map(|h| 1.0 / f64::from(*h))
                    .sum::<f64>()
            })
            .collect();
        let sum_inv_h = chunk_sums.iter().sum();
        let normalised = |norm: Normaliser, v: Values<'_>| -> Vec<f32> {
            match v {
                Values::Slice(values) => values.par_iter().map(|x| norm.apply(*x)).collect(),
                Values::Constant(c) => vec![norm.apply(c); n],
            }
        };
        loaded.push(LoadedSpecies {
            kind: style.kind,
            n,
            intensity_norm: r.intensity.as_ref().map(|_| IDENTITY),
            colour_norm: r.colour.as_ref().map(|_| IDENTITY),
            sum_inv_h,
            own_intensity: r.intensity.as_ref().map(|(norm, v)| normalised(*norm, *v)),
            own_colour: r.colour.as_ref().map(|(norm, v, _)| normalised(*norm, *v)),
            own_h,
            resident: None,
            device_order: None,
        });
    }
    Ok(loaded)
}

/// The identity of the host data `settings` would draw (cheap: addresses and lengths only).
pub(crate) fn key_of(
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> Result<DataKey, RenderError> {
    let mut slices = Vec::new();
    let slice_key = |v: Option<Values<'_>>| match v {
        Some(Values::Slice(s)) => (s.as_ptr() as usize, s.len()),
        Some(Values::Constant(c)) => (c.to_bits() as usize, usize::MAX),
        None => (0, 0),
    };
    for style in &settings.species {
        let Some(species) = snapshot.species(style.kind) else {
            // resolve() reports the missing species with the full message.
            resolve(snapshot, style)?;
            continue;
        };
        slices.push((species.positions.as_ptr() as usize, species.positions.len()));
        slices.push(
            species
                .smoothing_lengths
                .as_ref()
                .map_or((0, 0), |h| (h.as_ptr() as usize, h.len())),
        );
        for name in [&style.intensity, &style.colour] {
            let values = match name {
                Some(name) => Some(field_values(species, name)?),
                None => None,
            };
            slices.push(slice_key(values));
        }
    }
    Ok(DataKey {
        slices,
        styles: settings.species.iter().map(DataStyle::of).collect(),
        knn: settings.knn,
    })
}

/// Allocates device arrays for `n` particles (intensity/colour when asked).
pub(crate) fn alloc_arrays(
    stream: &Arc<CudaStream>,
    n: usize,
    intensity: bool,
    colour: bool,
) -> Result<DeviceArrays, GpuError> {
    let len = n.max(1);
    // SAFETY (all four): every element is written by an upload before a kernel reads it.
    Ok(DeviceArrays {
        pos: unsafe { stream.alloc::<f32>(3 * len) }?,
        h: unsafe { stream.alloc::<f32>(len) }?,
        intensity: if intensity {
            Some(unsafe { stream.alloc::<f32>(len) }?)
        } else {
            None
        },
        colour: if colour {
            Some(unsafe { stream.alloc::<f32>(len) }?)
        } else {
            None
        },
    })
}

/// Uploads particles `range` of `host` into the start of `dst`.
pub(crate) fn upload_range(
    staging: &mut crate::gpu::PinnedStaging,
    stream: &Arc<CudaStream>,
    host: &HostArrays<'_>,
    range: std::ops::Range<usize>,
    dst: &mut DeviceArrays,
) -> Result<(), GpuError> {
    let n = range.len();
    staging.upload(
        stream,
        &host.pos[3 * range.start..3 * range.end],
        &mut dst.pos.slice_mut(0..3 * n),
    )?;
    staging.upload(stream, &host.h[range.clone()], &mut dst.h.slice_mut(0..n))?;
    if let (Some(src), Some(d)) = (host.intensity, dst.intensity.as_mut()) {
        staging.upload(stream, &src[range.clone()], &mut d.slice_mut(0..n))?;
    }
    if let (Some(src), Some(d)) = (host.colour, dst.colour.as_mut()) {
        staging.upload(stream, &src[range], &mut d.slice_mut(0..n))?;
    }
    Ok(())
}
