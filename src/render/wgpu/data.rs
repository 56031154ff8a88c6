//! Particle data for the wgpu renderer: prepared once per data set (kNN smoothing lengths where
//! missing, on the device when it can, see [`crate::render::knn::smoothing_lengths_wgpu`];
//! intensity and colour normalised on the CPU with [`Normaliser::apply`] so that n has the CPU
//! reference's bits), packed as (x, y, z, h) and (n, colour) records, and kept
//! resident on the device in chunks no larger than the adapter's storage-binding limit, or
//! streamed chunk by chunk through one pair of buffers when they do not fit.

use super::context::WgpuContext;
use super::error::WgpuError;
use crate::data::Snapshot;
use crate::jobs::Progress;
use crate::render::knn::smoothing_lengths_wgpu;
use crate::render::normalise::Normaliser;
use crate::render::palette::Palette;
use crate::render::resolve::{Values, field_values, resolve};
use crate::render::{RenderError, RenderSettings, SpeciesStyle};
use rayon::prelude::*;

/// Bytes of one particle's (x, y, z, h) record.
pub(crate) const POS_H_BYTES: u64 = 16;
/// Bytes of one particle's (n, colour) record.
pub(crate) const VALUES_BYTES: u64 = 8;

/// What identifies the prepared host data: every slice's address and length, the styles'
/// data-dependent parts and k.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DataKey {
    slices: Vec<(usize, usize)>,
    styles: Vec<SpeciesStyle>,
    knn: usize,
}

/// The style with what a frame may change freely (palette, brightness, size) taken out.
fn data_style(style: &SpeciesStyle) -> SpeciesStyle {
    SpeciesStyle {
        palette: String::new(),
        brightness: 1.0,
        size_factor: 1.0,
        ..style.clone()
    }
}

/// The identity of the host data `settings` would draw (addresses and lengths only).
pub(crate) fn key_of(
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> Result<DataKey, RenderError> {
    let mut slices = Vec::new();
    for style in &settings.species {
        let Some(species) = snapshot.species(style.kind) else {
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
            slices.push(match name {
                Some(name) => match field_values(species, name)? {
                    Values::Slice(s) => (s.as_ptr() as usize, s.len()),
                    Values::Constant(c) => (c.to_bits() as usize, usize::MAX),
                },
                None => (0, 0),
            });
        }
    }
    Ok(DataKey {
        slices,
        styles: settings.species.iter().map(data_style).collect(),
        knn: settings.knn,
    })
}

/// One chunk's device buffers.
#[derive(Debug)]
pub(crate) struct ChunkBuffers {
    pub(crate) pos_h: wgpu::Buffer,
    pub(crate) values: wgpu::Buffer,
}

/// One drawn species, prepared on the host.
#[derive(Debug)]
pub(crate) struct PreparedSpecies {
    pub(crate) n: usize,
    /// (x, y, z, h) per particle; h = 0 where the CPU reference drops the particle for its
    /// data alone (h ≤ 0 or not finite, a position not finite).
    pub(crate) pos_h: Vec<[f32; 4]>,
    /// (n, colour coordinate) per particle, normalised on the CPU.
    pub(crate) values: Vec<[f32; 2]>,
    /// Whether the style colours by a field (else colour (1, 1, 1)).
    pub(crate) has_colour: bool,
    /// Σ 1/h over the drawn particles: with the brightness, the bound on any pixel's τ.
    pub(crate) sum_inv_h: f64,
}

/// Resolves every style of `settings` and packs its particles.
pub(crate) fn prepare(
    context: &WgpuContext,
    snapshot: &Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<Vec<PreparedSpecies>, RenderError> {
    let mut prepared = Vec::new();
    for style in &settings.species {
        let r = resolve(snapshot, style)?;
        let n = r.species.len();
        let own_h = if r.smoothing.is_empty() && n > 0 {
            let box_size = snapshot.header.periodic_box();
            Some(smoothing_lengths_wgpu(
                Some(context),
                &r.species.positions,
                settings.knn,
                box_size,
                progress,
            )?)
        } else {
            None
        };
        let h: &[f32] = own_h.as_deref().unwrap_or(&r.smoothing);
        let pos_h: Vec<[f32; 4]> = r
            .species
            .positions
            .par_iter()
            .zip(h.par_iter())
            .map(|(p, &h)| {
                let usable = h > 0.0 && h.is_finite() && p.iter().all(|v| v.is_finite());
                [p[0], p[1], p[2], if usable { h } else { 0.0 }]
            })
            .collect();
        let sum_inv_h = pos_h
            .par_iter()
            .filter(|p| p[3] > 0.0)
            .map(|p| 1.0 / f64::from(p[3]))
            .sum();
        let normalised = |choice: Option<(Normaliser, Values<'_>)>| -> Vec<f32> {
            match choice {
                Some((norm, Values::Slice(v))) => v.par_iter().map(|x| norm.apply(*x)).collect(),
                Some((norm, Values::Constant(c))) => vec![norm.apply(c); n],
                None => vec![1.0; n],
            }
        };
        let intensity = normalised(r.intensity);
        let has_colour = r.colour.is_some();
        let colour = normalised(r.colour.map(|(norm, values, _)| (norm, values)));
        let values = intensity
            .par_iter()
            .zip(colour.par_iter())
            .map(|(&a, &b)| [a, b])
            .collect();
        prepared.push(PreparedSpecies {
            n,
            pos_h,
            values,
            has_colour,
            sum_inv_h,
        });
    }
    Ok(prepared)
}

/// Allocates one chunk's buffers for `particles` particles inside an out-of-memory scope.
pub(crate) fn alloc_chunk(
    context: &WgpuContext,
    particles: usize,
) -> Result<ChunkBuffers, WgpuError> {
    let particles = particles.max(1) as u64;
    let scope = context
        .device
        .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
    let pos_h = context.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("particles (x, y, z, h)"),
        size: particles * POS_H_BYTES,
        usage,
        mapped_at_creation: false,
    });
    let values = context.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("particles (n, colour)"),
        size: particles * VALUES_BYTES,
        usage,
        mapped_at_creation: false,
    });
    if pollster::block_on(scope.pop()).is_some() {
        return Err(WgpuError::OutOfMemory {
            what: format!(
                "{} MiB of particle buffers",
                (particles * (POS_H_BYTES + VALUES_BYTES)) >> 20
            ),
        });
    }
    Ok(ChunkBuffers { pos_h, values })
}

/// Writes particles `range` of `species` into the start of `chunk`.
pub(crate) fn write_chunk(
    context: &WgpuContext,
    species: &PreparedSpecies,
    range: std::ops::Range<usize>,
    chunk: &ChunkBuffers,
) {
    if range.is_empty() {
        return;
    }
    context.queue.write_buffer(
        &chunk.pos_h,
        0,
        bytemuck::cast_slice(&species.pos_h[range.clone()]),
    );
    context.queue.write_buffer(
        &chunk.values,
        0,
        bytemuck::cast_slice(&species.values[range]),
    );
}

/// The palette as vec4 stops for the shader (at least two).
pub(crate) fn palette_stops(palette: &Palette) -> Vec<[f32; 4]> {
    let mut stops: Vec<[f32; 4]> = palette
        .stops
        .iter()
        .map(|s| [s[0], s[1], s[2], 0.0])
        .collect();
    while stops.len() < 2 {
        stops.push(stops.first().copied().unwrap_or([1.0, 1.0, 1.0, 0.0]));
    }
    stops
}
