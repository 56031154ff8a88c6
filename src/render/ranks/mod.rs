//! A frame rendered by the ranks of an MPI job, bit-identical to one process (sort-first by
//! image rows). Rank r of K owns the rows `[r·H/K, (r+1)·H/K)`. Each rank projects its own
//! share of the particles and sends each active particle, with its index in the whole
//! species, to every rank whose band its footprint touches (all-to-all). A rank renders the
//! particles it received in whole-species index order with the chunk boundaries one process
//! uses ([`CpuRenderer::render_subset_into`]), so every pixel of its band sums the same
//! contributions in the same f32 order as one process; rank 0 gathers the bands and measures
//! auto exposure on the whole τ. Summing per-rank τ images instead would change the order of
//! the f32 sums, and so the bits.
//!
//! Before that, [`global`] agrees on what one process takes from the whole snapshot:
//! normalisation ranges (all-reduce) and kNN smoothing lengths.

pub mod global;

use crate::cluster::Collective;
use crate::data::share::Share;
use crate::data::{Field, Masses, Snapshot, Species};
use crate::jobs::Progress;
use crate::render::cpu::CpuRenderer;
use crate::render::exposure;
use crate::render::project::{ParticleClass, StyleParams, project_particle};
use crate::render::resolve::{checked_frame, resolve};
use crate::render::{
    Brightness, ClassCounts, RenderError, RenderOutput, RenderSettings, RenderStats, StageTime,
    TauBuffer,
};
use global::f32_at;
use rayon::prelude::*;
use std::ops::Range;
use std::time::Instant;

/// Name under which a received particle carries its raw intensity value.
const INTENSITY: &str = "rank-exchange intensity";
/// Name under which a received particle carries its raw colour value.
const COLOUR: &str = "rank-exchange colour";
/// Bytes of one exchanged particle: index u64, position 3×f32, h, intensity, colour f32.
const RECORD: usize = 8 + 12 + 4 + 4 + 4;

/// Particles projected per task.
const PROJECT_BLOCK: usize = 1 << 14;

/// One task's projected particles: class counts and the records for each rank.
struct Block {
    counts: ClassCounts,
    sections: Vec<Vec<u8>>,
}

/// The image rows rank `rank` of `ranks` owns.
pub fn band_rows(height: u32, rank: usize, ranks: usize) -> Range<u32> {
    let at = |r: usize| (u64::from(height) * r as u64 / ranks.max(1) as u64) as u32;
    at(rank)..at(rank + 1)
}

/// Renders one frame over the ranks of `group` from each rank's `share`, with ranges already
/// agreed ([`global::agree_ranges`]) and every drawn species holding smoothing lengths
/// ([`global::agree_smoothing`]). Rank 0 gets the whole frame; the others `None`. Collective.
pub fn render_ranks(
    group: &dyn Collective,
    share: &Share,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<Option<RenderOutput>, RenderError> {
    let start = Instant::now();
    let (k, height, width) = (group.size(), settings.height, settings.width);
    let bands: Vec<Range<u32>> = (0..k).map(|r| band_rows(height, r, k)).collect();
    let (view, global_brightness) = checked_frame(settings)?;
    // Every drawn species must resolve and hold smoothing lengths on every rank before the
    // first exchange: a rank that stopped here alone would leave the others waiting.
    let mut problem = None;
    for style in &settings.species {
        match resolve(&share.snapshot, style) {
            Err(err) => problem = problem.or(Some(err)),
            Ok(r)
                if r.species.smoothing_lengths.as_ref().map(Vec::len) != Some(r.species.len()) =>
            {
                problem = problem.or(Some(RenderError::setting(format!(
                    "species {} has no smoothing lengths on rank {}",
                    style.kind.name(),
                    group.rank()
                ))));
            }
            Ok(_) => {}
        }
    }
    if group.any_failed(problem.is_some()) {
        return Err(problem.unwrap_or_else(another_rank_failed));
    }
    let mut outgoing = vec![Vec::new(); k];
    let mut counts = ClassCounts::default();
    let mut particles = 0u64;
    for style in &settings.species {
        let index = share
            .snapshot
            .species
            .iter()
            .position(|s| s.kind == style.kind);
        let (Some(index), Ok(r)) = (index, resolve(&share.snapshot, style)) else {
            // Validated before: every rank has every drawn species; an empty section keeps
            // the messages aligned.
            outgoing
                .iter_mut()
                .for_each(|m| m.extend(0u64.to_le_bytes()));
            continue;
        };
        let raw_h = r.species.smoothing_lengths.as_deref().unwrap_or(&[]);
        let params = StyleParams {
            intensity: r.intensity.as_ref().map(|(norm, _)| *norm),
            colour: r.colour.as_ref().map(|(norm, _, palette)| (*norm, palette)),
            brightness: r.style.brightness * global_brightness,
            size_factor: r.style.size_factor,
        };
        let first = share.first[index];
        particles += r.species.len() as u64;
        let project = |i: usize, pos: [f32; 3], out: &mut Block| {
            let intensity = r.intensity.as_ref().map_or(0.0, |(_, v)| v.get(i));
            let colour = r.colour.as_ref().map_or(0.0, |(_, v, _)| v.get(i));
            let p = project_particle(&view, &params, pos, r.smoothing[i], intensity, colour);
            out.counts.add(p.class);
            if p.class == ParticleClass::Inactive {
                return;
            }
            // Rows the footprint may touch, widened by a pixel each way: a particle sent to
            // a band it misses only draws outside that band, which is thrown away.
            let s = &p.splat;
            let lo = (f64::from(s.y_px) - f64::from(s.cut_px) - 2.0).floor();
            let hi = (f64::from(s.y_px) + f64::from(s.cut_px) + 2.0).ceil();
            if !(lo.is_finite() && hi.is_finite()) {
                return;
            }
            for (d, band) in bands.iter().enumerate() {
                if f64::from(band.start) <= hi && lo < f64::from(band.end) && !band.is_empty() {
                    let section = &mut out.sections[d];
                    section.extend((first + i as u64).to_le_bytes());
                    pos.iter().for_each(|v| section.extend(v.to_le_bytes()));
                    section.extend(raw_h[i].to_le_bytes());
                    section.extend(intensity.to_le_bytes());
                    section.extend(colour.to_le_bytes());
                }
            }
        };
        // Blocks on threads, joined in block order: each section stays in index order.
        let blocks: Vec<Block> = r
            .species
            .positions
            .par_chunks(PROJECT_BLOCK)
            .enumerate()
            .map(|(b, positions)| {
                let mut out = Block {
                    counts: ClassCounts::default(),
                    sections: vec![Vec::new(); k],
                };
                for (j, &pos) in positions.iter().enumerate() {
                    project(b * PROJECT_BLOCK + j, pos, &mut out);
                }
                out
            })
            .collect();
        let mut sections: Vec<Vec<u8>> = vec![Vec::new(); k];
        for block in blocks {
            counts = counts.merged(block.counts);
            for (section, part) in sections.iter_mut().zip(block.sections) {
                section.extend(part);
            }
        }
        for (message, section) in outgoing.iter_mut().zip(sections) {
            message.extend(((section.len() / RECORD) as u64).to_le_bytes());
            message.extend(section);
        }
    }
    let project_seconds = start.elapsed().as_secs_f64();
    let incoming = group.all_to_all_bytes(&outgoing);
    drop(outgoing);
    let exchange_seconds = start.elapsed().as_secs_f64() - project_seconds;

    let received = received_subset(share, settings, &incoming);
    let (subset, global) = match (group.any_failed(received.is_err()), received) {
        (false, Ok(received)) => received,
        (_, Err(err)) => return Err(err),
        (true, Ok(_)) => return Err(another_rank_failed()),
    };
    drop(incoming);
    let mut band_settings = settings.clone();
    for style in &mut band_settings.species {
        if style.intensity.is_some() {
            style.intensity = Some(INTENSITY.to_owned());
        }
        if style.colour.is_some() {
            style.colour = Some(COLOUR.to_owned());
        }
    }
    // τ at brightness 1 under auto exposure, as one process draws it; exposure comes later,
    // on the whole τ.
    if let Brightness::Auto { .. } = settings.brightness {
        band_settings.brightness = Brightness::Explicit(1.0);
    }
    let mut tau = TauBuffer::default();
    let drawn =
        CpuRenderer::new().render_subset_into(&subset, &global, &band_settings, progress, &mut tau);
    if group.any_failed(drawn.is_err()) {
        return Err(drawn.err().unwrap_or_else(another_rank_failed));
    }
    let render_seconds = start.elapsed().as_secs_f64() - project_seconds - exchange_seconds;

    let mine = &bands[group.rank()];
    let row = width as usize * 3;
    let band_bytes: Vec<u8> = tau.data[mine.start as usize * row..mine.end as usize * row]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    drop(tau);
    let gathered = group.gather_bytes(0, &band_bytes);
    let mut totals = [
        counts.inactive,
        counts.small,
        counts.medium,
        counts.large,
        particles,
    ];
    group.sum_u64(&mut totals);
    if !group.is_root() {
        return Ok(None);
    }
    let tau = TauBuffer {
        width,
        height,
        data: gathered
            .concat()
            .chunks_exact(4)
            .map(|b| f32_at(b, 0))
            .collect(),
    };
    if tau.data.len() != width as usize * height as usize * 3 {
        return Err(RenderError::setting(format!(
            "the ranks' bands hold {} values for a {width}x{height} image",
            tau.data.len()
        )));
    }
    let tau_scale = match settings.brightness {
        Brightness::Auto {
            percentile,
            target_value,
        } => exposure::auto_brightness(&tau, percentile, target_value, &mut Vec::new()),
        Brightness::Explicit(_) => 1.0,
    };
    let [inactive, small, medium, large, particles] = totals;
    let auto = matches!(settings.brightness, Brightness::Auto { .. });
    let stage = |stage, seconds| StageTime { stage, seconds };
    let seconds = start.elapsed().as_secs_f64();
    Ok(Some(RenderOutput {
        tau,
        stats: RenderStats {
            particles,
            counts: ClassCounts {
                inactive,
                small,
                medium,
                large,
            },
            brightness: if auto { tau_scale } else { global_brightness },
            auto_exposure: auto,
            tau_scale,
            timings: vec![
                stage("project", project_seconds),
                stage("exchange", exchange_seconds),
                stage("splat", render_seconds),
                stage(
                    "gather_exposure",
                    seconds - project_seconds - exchange_seconds - render_seconds,
                ),
            ],
            seconds,
        },
    }))
}

/// The error of a rank whose own step went well while another rank's failed (that rank
/// reports its own error).
fn another_rank_failed() -> RenderError {
    RenderError::setting("another rank of the MPI job failed")
}

/// The particles other ranks sent, as a snapshot of the drawn species (in `settings` order)
/// with their whole-species indices.
fn received_subset(
    share: &Share,
    settings: &RenderSettings,
    incoming: &[Vec<u8>],
) -> Result<(Snapshot, Vec<Vec<u64>>), RenderError> {
    let mut at = vec![0usize; incoming.len()];
    let mut species = Vec::new();
    let mut global = Vec::new();
    let broken = || RenderError::setting("a rank sent a malformed particle message");
    for style in &settings.species {
        let mut s = Species::empty(style.kind);
        let mut h = Vec::new();
        let (mut intensity, mut colour, mut index) = (Vec::new(), Vec::new(), Vec::new());
        for (message, at) in incoming.iter().zip(&mut at) {
            let head = message.get(*at..*at + 8).ok_or_else(broken)?;
            let n = u64::from_le_bytes(head.try_into().map_err(|_| broken())?) as usize;
            *at += 8;
            let body = message.get(*at..*at + n * RECORD).ok_or_else(broken)?;
            for rec in body.chunks_exact(RECORD) {
                let mut idx = [0u8; 8];
                idx.copy_from_slice(&rec[..8]);
                index.push(u64::from_le_bytes(idx));
                s.positions
                    .push([f32_at(rec, 8), f32_at(rec, 12), f32_at(rec, 16)]);
                h.push(f32_at(rec, 20));
                intensity.push(f32_at(rec, 24));
                colour.push(f32_at(rec, 28));
            }
            *at += n * RECORD;
        }
        s.kernel_support = share
            .snapshot
            .species(style.kind)
            .and_then(|sp| sp.kernel_support);
        s.smoothing_lengths = Some(h);
        s.masses = Masses::Uniform(1.0);
        for (name, values) in [(INTENSITY, intensity), (COLOUR, colour)] {
            s.fields.push(Field {
                name: name.to_owned(),
                values,
                units: Default::default(),
            });
        }
        species.push(s);
        global.push(index);
    }
    let snapshot = Snapshot {
        header: share.snapshot.header.clone(),
        species,
        source: share.snapshot.source.clone(),
    };
    Ok((snapshot, global))
}
