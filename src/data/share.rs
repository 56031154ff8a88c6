//! One rank's share of a snapshot: each species' particles split into contiguous index ranges,
//! rank r of K reading only `[r·N/K, (r+1)·N/K)` of a species of N particles in the file (a byte
//! range of each tipsy family, hyperslabs of every Gadget `PartType` dataset; the files of a
//! multi-file snapshot that the range does not touch are never read). Joining the K shares in
//! rank order gives, bit for bit, what [`super::load_snapshot`] reads.

use super::share_hdf5;
use super::share_tipsy;
use super::subsample::Subsample;
use super::{LoadOptions, Masses, ReadError, Snapshot, Species, add_temperature, gadget_hdf5};
use crate::cluster::even_share;
use crate::jobs::Progress;
use std::ops::Range;
use std::path::Path;

/// One rank's particles of a snapshot and where they sit in the whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// The header and this rank's particles: the same species, in the same order, as the full
    /// read (a species may hold no particle here). Masses are collapsed per share (one value
    /// when every particle of the share has it), so they may be `Uniform` here and per
    /// particle in the whole.
    pub snapshot: Snapshot,
    /// Per species: the index, in the full read's species, of this share's first particle.
    pub first: Vec<u64>,
    /// Per species: its number of particles in the full read.
    pub totals: Vec<u64>,
}

/// Reads rank `rank`'s share (of `ranks`) of the snapshot `path`: the readers' format detection,
/// subsampling (`options.max_particles`, over the whole file as one process keeps it), checks,
/// units and derived temperature, applied to this rank's index ranges only.
pub fn read_share(
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
    rank: usize,
    ranks: usize,
) -> Result<Share, ReadError> {
    if ranks == 0 || rank >= ranks {
        return Err(ReadError::invalid(
            path,
            format!("share {rank} of {ranks}: the rank must be below the number of ranks"),
        ));
    }
    super::reject_directory(path)?;
    let mut share = if gadget_hdf5::looks_like_hdf5(path)? {
        share_hdf5::read(path, options, progress, rank, ranks)?
    } else {
        let mut share = share_tipsy::read(path, options, progress, rank, ranks)?;
        super::tipsy_units(path, &mut share.snapshot)?;
        share
    };
    add_temperature(&mut share.snapshot);
    Ok(share)
}

/// Where one species' share sits: its file indices (global across species, as the subsample
/// numbers them) and the first kept index within the species.
pub(super) struct Span {
    /// Global file indices this rank reads.
    pub files: Range<u64>,
    /// Index of the first kept particle of the range within the full read's species.
    pub first: u64,
    /// Kept particles of the whole species.
    pub total: u64,
}

impl Span {
    /// The share of a species whose file indices are `global_first..global_first + count`.
    pub fn of(sub: &Subsample, global_first: u64, count: u64, rank: usize, ranks: usize) -> Self {
        let local = even_share(count, rank, ranks);
        let files = global_first + local.start..global_first + local.end;
        Self {
            first: sub.kept_before(files.start) - sub.kept_before(global_first),
            total: sub.kept_in(global_first..global_first + count),
            files,
        }
    }
}

/// The shares of every rank, in rank order, joined into the snapshot one process reads.
pub fn join_shares(shares: Vec<Share>) -> Option<Snapshot> {
    let mut shares = shares.into_iter();
    let mut whole = shares.next()?.snapshot;
    let mut masses: Vec<Vec<Masses>> = whole
        .species
        .iter()
        .map(|s| vec![s.masses.clone()])
        .collect();
    let mut counts: Vec<Vec<usize>> = whole.species.iter().map(|s| vec![s.len()]).collect();
    for share in shares {
        for (i, (into, from)) in whole
            .species
            .iter_mut()
            .zip(share.snapshot.species)
            .enumerate()
        {
            masses[i].push(from.masses.clone());
            counts[i].push(from.len());
            append(into, from);
        }
    }
    for ((species, masses), counts) in whole.species.iter_mut().zip(masses).zip(counts) {
        species.masses = join_masses(&masses, &counts);
    }
    Some(whole)
}

/// Appends the particles of `from` to `into` (same species, same columns).
fn append(into: &mut Species, from: Species) {
    into.positions.extend(from.positions);
    if let (Some(a), Some(b)) = (&mut into.velocities, from.velocities) {
        a.extend(b);
    }
    if let (Some(a), Some(b)) = (&mut into.ids, from.ids) {
        a.extend(b);
    }
    if let (Some(a), Some(b)) = (&mut into.smoothing_lengths, from.smoothing_lengths) {
        a.extend(b);
    }
    for (a, b) in into.fields.iter_mut().zip(from.fields) {
        a.values.extend(b.values);
    }
}

/// One mass when every share has the same single mass (the full readers' rule, which keeps a
/// table mass even for no particle), else the values collapsed as the readers collapse them.
fn join_masses(masses: &[Masses], counts: &[usize]) -> Masses {
    if let Some(Masses::Uniform(m)) = masses.first()
        && masses
            .iter()
            .all(|x| matches!(x, Masses::Uniform(v) if v.to_bits() == m.to_bits()))
    {
        return Masses::Uniform(*m);
    }
    let mut values = Vec::with_capacity(counts.iter().sum());
    for (m, &n) in masses.iter().zip(counts) {
        values.extend((0..n).map(|i| m.get(i)));
    }
    super::region::collapse_masses(values)
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
