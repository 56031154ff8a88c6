//! What every rank must agree on before it projects a particle: normalisation ranges over the
//! whole snapshot (per species, after logs), and kNN smoothing lengths computed on every
//! particle of a species, as one process computes them.

use crate::cluster::Collective;
use crate::data::share::Share;
use crate::data::{Snapshot, Species};
use crate::jobs::Progress;
use crate::render::resolve::{Values, field_values};
use crate::render::smoothing::knn_smoothing_lengths;
use crate::render::{RenderError, RenderSettings};

/// Sets every normalisation range that one process would take from the data (a field named
/// without a fixed range) to the range over every rank's particles: the min and max of the
/// finite (log10) values, or 0..0 when no rank has one, exactly as `Normaliser::from_values`.
pub fn agree_ranges(group: &dyn Collective, snapshot: &Snapshot, settings: &mut RenderSettings) {
    // Per style: intensity then colour; NaN-free limits, ±∞ when the share has no value.
    let mut lows = Vec::new();
    let mut highs = Vec::new();
    for style in &settings.species {
        let species = snapshot.species(style.kind);
        for (name, log, range) in [
            (&style.intensity, style.intensity_log, style.intensity_range),
            (&style.colour, style.colour_log, style.colour_range),
        ] {
            let (lo, hi) = match (name, range, species) {
                (Some(name), None, Some(species)) => local_limits(species, name, log),
                _ => (f32::INFINITY, f32::NEG_INFINITY),
            };
            lows.push(f64::from(lo));
            highs.push(f64::from(hi));
        }
    }
    group.min_f64(&mut lows);
    group.max_f64(&mut highs);
    for (i, style) in settings.species.iter_mut().enumerate() {
        let limits = |k: usize| {
            let (lo, hi) = (lows[k] as f32, highs[k] as f32);
            if lo <= hi { (lo, hi) } else { (0.0, 0.0) }
        };
        if style.intensity.is_some() && style.intensity_range.is_none() {
            style.intensity_range = Some(limits(2 * i));
        }
        if style.colour.is_some() && style.colour_range.is_none() {
            style.colour_range = Some(limits(2 * i + 1));
        }
    }
}

/// Min and max of the finite (log10 under `log`, values ≤ 0 left out) values of `name`.
fn local_limits(species: &Species, name: &str, log: bool) -> (f32, f32) {
    let transformed = |v: f32| {
        if log {
            (v > 0.0).then(|| v.log10())
        } else {
            Some(v)
        }
    };
    let mut fold = (f32::INFINITY, f32::NEG_INFINITY);
    let mut take = |v: f32| {
        if let Some(t) = transformed(v).filter(|t| t.is_finite()) {
            fold = (fold.0.min(t), fold.1.max(t));
        }
    };
    match field_values(species, name) {
        Ok(Values::Slice(values)) => values.iter().for_each(|&v| take(v)),
        Ok(Values::Constant(c)) if !species.is_empty() => take(c),
        _ => {}
    }
    fold
}

/// Gives every drawn species without smoothing lengths the kNN lengths one process computes:
/// every rank gathers the species' positions (in rank order, so in file order), computes the
/// lengths of all of them and keeps its own share's. Exact, but each rank holds the species'
/// positions and does the whole kNN: this is the step that does not scale.
pub fn agree_smoothing(
    group: &dyn Collective,
    share: &mut Share,
    settings: &RenderSettings,
    progress: &Progress,
) -> Result<(), RenderError> {
    let box_size = share.snapshot.header.periodic_box();
    for style in &settings.species {
        let Some(index) = share
            .snapshot
            .species
            .iter()
            .position(|s| s.kind == style.kind)
        else {
            continue;
        };
        // Every rank holds the same species list, so all of them take this branch together.
        if share.snapshot.species[index].smoothing_lengths.is_some() {
            continue;
        }
        let species = &mut share.snapshot.species[index];
        let mine: Vec<u8> = species
            .positions
            .iter()
            .flat_map(|p| p.iter().flat_map(|v| v.to_le_bytes()))
            .collect();
        let all: Vec<[f32; 3]> = group
            .all_gather_bytes(&mine)
            .concat()
            .chunks_exact(12)
            .map(|b| std::array::from_fn(|k| f32_at(b, 4 * k)))
            .collect();
        let h = knn_smoothing_lengths(&all, settings.knn, box_size, progress)?;
        let first = share.first[index] as usize;
        species.smoothing_lengths = Some(h[first..first + species.len()].to_vec());
        // Estimates are in the drawing convention already.
        species.kernel_support = None;
    }
    Ok(())
}

/// The little-endian f32 at `at`.
pub(super) fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}
