//! The CPU back-end: every class (small, medium, large) goes through the tiled splatter.

use super::draw::{Merge, SplatProfile};
use super::exp::Isa;
use super::lanes::{SplatLanes, finish_lanes};
use super::sink::ChunkSink;
use super::splat::{Channels, Splatter, chunk_len};
use crate::data::Snapshot;
use crate::jobs::Progress;
use crate::render::exposure;
use crate::render::project::{
    LANES, Lanes, ParticleClass, Projected, StyleParams, ViewParams, geometry_lanes,
    project_particle,
};
use crate::render::resolve::{Values, checked_frame, resolve};
use crate::render::smoothing::knn_smoothing_lengths;
use crate::render::tau::TauBuffer;
use crate::render::tone::ToneSettings;
use crate::render::{
    Brightness, ClassCounts, RenderError, RenderOutput, RenderSettings, RenderStats, StageTime,
};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Renders one frame on the CPU (fresh buffers; see [`CpuRenderer`] to reuse them).
pub fn render_cpu(
    snapshot: &Snapshot,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<RenderOutput, RenderError> {
    let mut tau = TauBuffer::default();
    let stats = CpuRenderer::new().render_into(snapshot, settings, progress, &mut tau)?;
    Ok(RenderOutput { tau, stats })
}

/// CPU renderer holding every per-frame buffer, so repeated frames allocate nothing new.
#[derive(Debug, Default)]
pub struct CpuRenderer {
    splatter: Splatter,
    /// Chunks of the frame: (species, first particle, end), in input order.
    chunk_plan: Vec<(usize, usize, usize)>,
    exposure_scratch: Vec<f32>,
}

/// What a frame of [`CpuRenderer`] draws into.
enum FrameOut<'a> {
    /// τ (resized; row 0 at the top).
    Tau(&'a mut TauBuffer),
    /// Only τ's 8-bit tone map at τ scale `tau_scale` (explicit brightness only: auto exposure
    /// needs the whole of τ before any pixel's byte).
    Image8 {
        pixels: &'a mut Vec<u8>,
        tau_scale: f32,
        tone: &'a ToneSettings,
    },
}

/// What the projection of one species reads.
struct SpeciesSource<'a> {
    style: StyleParams<'a>,
    intensity: Option<Values<'a>>,
    colour: Option<Values<'a>>,
    positions: &'a [[f32; 3]],
    smoothing: &'a [f32],
}

/// [`project_chunk`] compiled for `isa` (one the CPU has: see [`Splatter::isa`]).
fn project_chunk_for(
    isa: Isa,
    view: &ViewParams,
    src: &SpeciesSource<'_>,
    first: usize,
    last: usize,
    sink: &mut ChunkSink<'_>,
) -> ClassCounts {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx2Fma {
        // SAFETY: `Splatter::isa` only yields Avx2Fma where the CPU has AVX2 and FMA.
        return unsafe { project_chunk_avx2(view, src, first, last, sink) };
    }
    let _ = isa;
    project_chunk(view, src, first, last, sink)
}

/// [`project_chunk`] with 8-wide vectors (no FMA contraction: Rust never fuses a·b + c).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn project_chunk_avx2(
    view: &ViewParams,
    src: &SpeciesSource<'_>,
    first: usize,
    last: usize,
    sink: &mut ChunkSink<'_>,
) -> ClassCounts {
    project_chunk(view, src, first, last, sink)
}

/// Projects particles `first..last` of one species and pushes the active ones to `sink`, in
/// input order, counting the classes: [`LANES`] at a time, lane-parallel from the geometry to
/// the staged record ([`geometry_lanes`], [`finish_lanes`], `ChunkSink::push_lanes`: the same
/// bits as [`project_particle`] and `ChunkSink::push`, which take the remainder).
#[inline(always)]
fn project_chunk(
    view: &ViewParams,
    src: &SpeciesSource<'_>,
    first: usize,
    last: usize,
    sink: &mut ChunkSink<'_>,
) -> ClassCounts {
    let mut counts = ClassCounts::default();
    // A plain inline function rather than a closure handed to an iterator adaptor, so that it
    // is compiled into (and for the target features of) this function.
    #[inline(always)]
    fn take(p: &Projected, counts: &mut ClassCounts, sink: &mut ChunkSink<'_>) {
        counts.add(p.class);
        if p.class != ParticleClass::Inactive {
            sink.push(&p.splat);
        }
    }
    let mut scratch = Lanes::default();
    let mut out = SplatLanes::default();
    let mut lane_counts = [0u64; 4];
    let mut i = first;
    while i + LANES <= last {
        let pos: [[f32; 3]; LANES] = std::array::from_fn(|l| src.positions[i + l]);
        let h: [f32; LANES] = std::array::from_fn(|l| src.smoothing[i + l]);
        let intensity = src.intensity.map_or([0.0; LANES], |v| v.lanes(i));
        let colour = src.colour.map_or([0.0; LANES], |v| v.lanes(i));
        geometry_lanes(view, src.style.size_factor, &pos, &h, &mut scratch);
        finish_lanes(
            view, &src.style, &scratch, &h, &intensity, &colour, &mut out,
        );
        let c = sink.push_lanes(&out);
        for (total, n) in lane_counts.iter_mut().zip(c) {
            *total += n;
        }
        i += LANES;
    }
    let [inactive, small, medium, large] = lane_counts;
    counts = counts.merged(ClassCounts {
        inactive,
        small,
        medium,
        large,
    });
    for i in i..last {
        let p = project_particle(
            view,
            &src.style,
            src.positions[i],
            src.smoothing[i],
            src.intensity.map_or(0.0, |v| v.get(i)),
            src.colour.map_or(0.0, |v| v.get(i)),
        );
        take(&p, &mut counts, sink);
    }
    counts
}

/// Chunks of a subset of species `species` whose particles have the whole-species indices
/// `index` (increasing): a new chunk wherever the whole species' chunk of `chunk` particles
/// changes.
fn push_subset_chunks(
    plan: &mut Vec<(usize, usize, usize)>,
    species: usize,
    index: &[u64],
    chunk: usize,
) {
    let chunk = chunk.max(1) as u64;
    let mut first = 0;
    for i in 1..=index.len() {
        if i == index.len() || index[i] / chunk != index[first] / chunk {
            plan.push((species, first, i));
            first = i;
        }
    }
}

impl CpuRenderer {
    /// Empty buffers; they grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty buffers, hot loops compiled for `isa` (the baseline where the CPU lacks it); the
    /// image is the same bits with every instruction set.
    pub fn with_isa(isa: Isa) -> Self {
        Self {
            splatter: Splatter::with_isa(isa),
            ..Self::default()
        }
    }

    /// The instruction set the hot loops run with.
    pub fn isa(&mut self) -> Isa {
        self.splatter.isa()
    }

    /// Most row bands a hot tile is split into (see [`Splatter::set_max_bands`]; the
    /// image is the same bits for any value).
    pub fn set_max_bands(&mut self, max_bands: usize) {
        self.splatter.set_max_bands(max_bands);
    }

    /// Whether frames where every species has colour `none` draw one plane and write it into
    /// τ's three channels (default `true`). The image bits are the same either way; `false`
    /// draws three planes (to test that and to measure what the single plane saves).
    pub fn set_grey_frames(&mut self, grey: bool) {
        self.splatter.set_grey_frames(grey);
    }

    /// Where the splatter's time went in the last frame (per pass, wall and summed over tasks).
    pub fn splat_profile(&self) -> SplatProfile {
        self.splatter.profile()
    }

    /// Renders into `tau` (resized and zeroed; row 0 at the top). Under auto exposure τ is the
    /// one at brightness 1 and `stats.tau_scale` holds the brightness to apply when tone mapping.
    pub fn render_into(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        progress: &Progress,
        tau: &mut TauBuffer,
    ) -> Result<RenderStats, RenderError> {
        self.render_chunked(snapshot, None, settings, progress, FrameOut::Tau(tau))
    }

    /// The 8-bit image of [`CpuRenderer::render_into`]'s τ under `settings.tone` at τ scale
    /// `tau_scale`, into `pixels` (RGB, row 0 at the top): the bytes of
    /// [`crate::render::tone_map`], but each tile is tone-mapped as it is drawn and τ is never
    /// stored (no frame-sized τ to allocate, fill and read back). Explicit brightness only (the
    /// brightness is applied while projecting, as for τ); under auto exposure this is an error,
    /// since the exposure needs the whole of τ first.
    pub fn render_image8_into(
        &mut self,
        snapshot: &Snapshot,
        settings: &RenderSettings,
        tau_scale: f32,
        progress: &Progress,
        pixels: &mut Vec<u8>,
    ) -> Result<RenderStats, RenderError> {
        if matches!(settings.brightness, Brightness::Auto { .. }) {
            return Err(RenderError::setting(
                "the CPU's 8-bit image without tau needs an explicit brightness",
            ));
        }
        let out = FrameOut::Image8 {
            pixels,
            tau_scale,
            tone: &settings.tone,
        };
        self.render_chunked(snapshot, None, settings, progress, out)
    }

    /// [`CpuRenderer::render_into`] for a subset of a larger snapshot: `global[s][i]` is the
    /// index, in the whole species `s` of `settings.species`, of particle `i` of `snapshot`'s
    /// species (increasing). Chunks break where the whole snapshot's chunks break, so every
    /// pixel sums the subset's contributions in the order one process sums them: the pixels
    /// that only subset particles touch get the whole render's bits (the MPI ranks' row bands).
    pub fn render_subset_into(
        &mut self,
        snapshot: &Snapshot,
        global: &[Vec<u64>],
        settings: &RenderSettings,
        progress: &Progress,
        tau: &mut TauBuffer,
    ) -> Result<RenderStats, RenderError> {
        self.render_chunked(
            snapshot,
            Some(global),
            settings,
            progress,
            FrameOut::Tau(tau),
        )
    }

    fn render_chunked(
        &mut self,
        snapshot: &Snapshot,
        global: Option<&[Vec<u64>]>,
        settings: &RenderSettings,
        progress: &Progress,
        out: FrameOut<'_>,
    ) -> Result<RenderStats, RenderError> {
        let start = Instant::now();
        let mut timings = Vec::new();
        let mut stage_start = Instant::now();
        let mut lap = |stage: &'static str, timings: &mut Vec<StageTime>| {
            timings.push(StageTime {
                stage,
                seconds: stage_start.elapsed().as_secs_f64(),
            });
            stage_start = Instant::now();
        };
        let cancelled = |_| RenderError::Cancelled;

        let (view, global_brightness) = checked_frame(settings)?;

        // Normalise: resolve fields, limits and palettes.
        progress.report("normalise", 0, 1);
        let mut resolved = Vec::with_capacity(settings.species.len());
        for style in &settings.species {
            resolved.push(resolve(snapshot, style)?);
        }
        lap("normalise", &mut timings);

        // Smoothing lengths where the file has none.
        for r in &mut resolved {
            if r.smoothing.is_empty() && !r.species.is_empty() {
                let box_size = snapshot.header.periodic_box();
                let h =
                    knn_smoothing_lengths(&r.species.positions, settings.knn, box_size, progress)?;
                r.smoothing = Cow::Owned(h);
            }
        }
        lap("smoothing", &mut timings);

        // Project, classify and bin by tile in one pass per chunk (no full splat list).
        progress.check().map_err(cancelled)?;
        let total: usize = resolved.iter().map(|r| r.species.len()).sum();
        let chunk = chunk_len(settings.width, settings.height);
        self.chunk_plan.clear();
        for (species, r) in resolved.iter().enumerate() {
            let n = r.species.len();
            match global.and_then(|g| g.get(species)) {
                Some(index) => push_subset_chunks(&mut self.chunk_plan, species, index, chunk),
                None => {
                    for first in (0..n).step_by(chunk) {
                        self.chunk_plan
                            .push((species, first, (first + chunk).min(n)));
                    }
                }
            }
        }
        let sources: Vec<SpeciesSource<'_>> = resolved
            .iter()
            .map(|r| SpeciesSource {
                style: StyleParams {
                    intensity: r.intensity.as_ref().map(|(norm, _)| *norm),
                    colour: r.colour.as_ref().map(|(norm, _, palette)| (*norm, palette)),
                    brightness: r.style.brightness * global_brightness,
                    size_factor: r.style.size_factor,
                },
                intensity: r.intensity.as_ref().map(|(_, v)| *v),
                colour: r.colour.as_ref().map(|(_, v, _)| *v),
                positions: &r.species.positions,
                smoothing: &r.smoothing,
            })
            .collect();
        let class_totals = [const { AtomicU64::new(0) }; 4];
        let plan = &self.chunk_plan;
        let isa = self.splatter.isa();
        // Colour `none` everywhere: e = (1·A·b) in all three channels, so one plane is drawn.
        let all_grey = settings.species.iter().all(|s| s.colour.is_none());
        let channels = if all_grey {
            Channels::Grey
        } else {
            Channels::Rgb
        };
        self.splatter.bin_channels(
            settings.width,
            settings.height,
            channels,
            plan.len(),
            |c, sink| {
                let (species, first, last) = plan[c];
                let chunk_counts =
                    project_chunk_for(isa, &view, &sources[species], first, last, sink);
                let ClassCounts {
                    inactive,
                    small,
                    medium,
                    large,
                } = chunk_counts;
                for (total, n) in class_totals.iter().zip([inactive, small, medium, large]) {
                    total.fetch_add(n, Ordering::Relaxed);
                }
            },
        );
        let [inactive, small, medium, large] = class_totals.map(AtomicU64::into_inner);
        let counts = ClassCounts {
            inactive,
            small,
            medium,
            large,
        };
        lap("project", &mut timings);

        progress.check().map_err(cancelled)?;
        progress.report("splat", 0, 1);
        // Under `FrameOut::Image8` the stage "splat" includes the tone map (no stage "tone").
        let tau = match out {
            FrameOut::Tau(tau) => {
                self.splatter.draw_into(tau, Merge::Overwrite);
                Some(tau)
            }
            FrameOut::Image8 {
                pixels,
                tau_scale,
                tone,
            } => {
                self.splatter.draw_image8(pixels, tau_scale, tone);
                None
            }
        };
        lap("splat", &mut timings);

        let tau_scale = match (settings.brightness, tau) {
            (
                Brightness::Auto {
                    percentile,
                    target_value,
                },
                Some(tau),
            ) => {
                exposure::auto_brightness(tau, percentile, target_value, &mut self.exposure_scratch)
            }
            _ => 1.0,
        };
        lap("exposure", &mut timings);
        progress.report("splat", 1, 1);

        Ok(RenderStats {
            particles: total as u64,
            counts,
            brightness: if matches!(settings.brightness, Brightness::Auto { .. }) {
                tau_scale
            } else {
                global_brightness
            },
            auto_exposure: matches!(settings.brightness, Brightness::Auto { .. }),
            tau_scale,
            timings,
            seconds: start.elapsed().as_secs_f64(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::push_subset_chunks;

    #[test]
    fn subset_chunks_break_where_the_whole_species_chunks_break() {
        let mut plan = Vec::new();
        // Whole chunks of 4: [0, 4), [4, 8), [8, 12); the subset skips 5..7 and 8..10.
        push_subset_chunks(&mut plan, 2, &[1, 2, 3, 4, 7, 10, 11], 4);
        assert_eq!(plan, vec![(2, 0, 3), (2, 3, 5), (2, 5, 7)]);
        plan.clear();
        push_subset_chunks(&mut plan, 0, &[], 4);
        assert!(plan.is_empty());
    }
}
