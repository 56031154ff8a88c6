//! [`prepare_fof`] over the ranks of a process group, without any rank holding the whole
//! selection: each rank checks its own share with `prepare_fof`'s checks, and the values the
//! linking length and the frame need (count, bounds, mass levels, lowest mass and total mass)
//! come from collectives, so that both are bit for bit one process's.
//!
//! The bounds of all particles are the two corner points (lowest and highest coordinate per
//! axis): their extents, their negative coordinates and their bounding-box volume are those of
//! the particles, so `prepare_fof` on the corners checks the parameters and the extent against
//! the box and sets the frame exactly as on the particles.

use super::domains::agree;
use super::error::FofError;
use super::find::{mean_separation_in, prepare_fof, volume};
use super::params::{FofParams, LinkingLength};
use super::periodic::BoxFrame;
use super::resolution::{
    LEVEL_TOLERANCE, LinkingLengthSource, SeparationFrom, is_zoom_in, lowest_mass_separation,
    mass_levels_of,
};
use super::selection::SelectedParticles;
use crate::cluster::Collective;
use crate::data::{Masses, Snapshot, SpeciesKind};
use rayon::prelude::*;
use std::collections::HashMap;

/// Distinct masses a rank lists per species for the mass levels. A level holds masses within
/// a relative 10⁻⁶ of its first, at most 35 distinct float32 values (their spacing is at least
/// 2⁻²⁴ relative), so [`resolution::MAX_LEVELS`](super::resolution::MAX_LEVELS) = 16 levels
/// hold at most 560: more distinct masses than this means no discrete levels.
const MAX_DISTINCT: usize = 1024;

/// What one rank brings to [`prepare_on_ranks`].
pub struct RankSelection<'a> {
    /// This rank's share of the snapshot (the same species in the same order on every rank).
    pub snapshot: &'a Snapshot,
    /// The species asked for.
    pub kinds: &'a [SpeciesKind],
    /// This rank's selected particles (empty when it holds none).
    pub selected: &'a SelectedParticles<'a>,
    /// The index of each selected particle in one process's selection.
    pub ids: &'a [u64],
}

/// The run every rank agrees on: what `prepare_fof` derives for the whole selection.
#[derive(Debug, Clone, PartialEq)]
pub struct RankPrepared {
    /// Linking length in position units.
    pub linking_length: f64,
    /// The periodic frame, `None` for open boundaries.
    pub frame: Option<BoxFrame>,
    /// `b` when the linking length is relative.
    pub b: Option<f64>,
    /// Mean inter-particle separation of all particles.
    pub mean_separation: f64,
    /// What set the linking length.
    pub source: LinkingLengthSource,
    /// Particles in the whole selection.
    pub n: usize,
    /// Whether one process's selection has velocities (every selected species with particles
    /// has them).
    pub velocities: bool,
    /// The one mass of every selected particle, when one process's selection has a single
    /// mass.
    pub uniform_mass: Option<f32>,
    /// The species with particles, in file order.
    pub species: Vec<SpeciesKind>,
}

/// Distinct masses (bits) with their counts, in order of first appearance.
type DistinctMasses = Vec<(u32, u64)>;

/// One rank's summary, as every rank decodes it.
struct Summary {
    n: u64,
    velocities_missing: bool,
    /// `None` when the rank holds no particle, else its single mass (if it has one).
    uniform: Option<Option<u32>>,
    mass_invalid: bool,
    mass_min: f64,
    /// Per selected species: this rank's particle count, and its distinct masses (bits and
    /// count, in order of first appearance; `None` past [`MAX_DISTINCT`]).
    chunks: Vec<(u64, Option<DistinctMasses>)>,
}

/// This rank's selected species of its share, in file order (some may be empty here).
fn chunks<'a>(
    snapshot: &'a Snapshot,
    kinds: &'a [SpeciesKind],
) -> impl Iterator<Item = (SpeciesKind, usize, &'a Masses)> + 'a {
    snapshot
        .species
        .iter()
        .filter(|s| kinds.contains(&s.kind))
        .map(|s| (s.kind, s.len(), &s.masses))
}

/// Distinct masses of `len` particles in order of first appearance with their counts; `None`
/// past [`MAX_DISTINCT`].
fn distinct(masses: &Masses, len: usize) -> Option<DistinctMasses> {
    match masses {
        Masses::Uniform(m) => Some(if len == 0 {
            Vec::new()
        } else {
            vec![(m.to_bits(), len as u64)]
        }),
        Masses::PerParticle(values) => {
            let mut list: DistinctMasses = Vec::new();
            let mut at: HashMap<u32, usize> = HashMap::new();
            let mut last: Option<(u32, usize)> = None;
            for &m in values.iter().take(len) {
                let bits = m.to_bits();
                // Files store runs of one mass: most particles repeat the one before.
                if let Some((b, k)) = last
                    && b == bits
                {
                    list[k].1 += 1;
                    continue;
                }
                let k = match at.get(&bits) {
                    Some(&k) => k,
                    None => {
                        if list.len() == MAX_DISTINCT {
                            return None;
                        }
                        at.insert(bits, list.len());
                        list.push((bits, 0));
                        list.len() - 1
                    }
                };
                list[k].1 += 1;
                last = Some((bits, k));
            }
            Some(list)
        }
    }
}

fn valid(m: f64) -> bool {
    m.is_finite() && m > 0.0
}

impl Summary {
    fn of(share: &RankSelection<'_>, levels: bool, lowest: bool) -> Self {
        let selected = share.selected;
        let n = selected.positions.len();
        let mut uniform: Option<Option<u32>> = None;
        let mut mass_invalid = false;
        let mut mass_min = f64::INFINITY;
        let mut chunks_out = Vec::new();
        for (_, len, masses) in chunks(share.snapshot, share.kinds) {
            if len > 0 {
                let here = match masses {
                    Masses::Uniform(m) => Some(m.to_bits()),
                    Masses::PerParticle(_) => None,
                };
                uniform = Some(match uniform {
                    None => here,
                    Some(seen) => seen.filter(|&b| Some(b) == here),
                });
                if lowest {
                    // A minimum and an "any" do not depend on the order of the pieces.
                    let (invalid, min) = (0..len)
                        .into_par_iter()
                        .map(|i| f64::from(masses.get(i)))
                        .fold(
                            || (false, f64::INFINITY),
                            |(invalid, min), m| (invalid || !valid(m), min.min(m)),
                        )
                        .reduce(|| (false, f64::INFINITY), |a, b| (a.0 || b.0, a.1.min(b.1)));
                    mass_invalid |= invalid;
                    mass_min = mass_min.min(min);
                }
            }
            let list = if levels {
                distinct(masses, len)
            } else {
                Some(Vec::new())
            };
            chunks_out.push((len as u64, list));
        }
        Self {
            n: n as u64,
            velocities_missing: n > 0 && selected.velocities.is_none(),
            uniform,
            mass_invalid,
            mass_min,
            chunks: chunks_out,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut words: Vec<u64> = vec![
            self.n,
            u64::from(self.velocities_missing),
            match self.uniform {
                None => 2,
                Some(None) => 0,
                Some(Some(_)) => 1,
            },
            u64::from(self.uniform.flatten().unwrap_or(0)),
            u64::from(self.mass_invalid),
            self.mass_min.to_bits(),
            self.chunks.len() as u64,
        ];
        for (len, list) in &self.chunks {
            words.push(*len);
            match list {
                Some(list) => {
                    words.push(list.len() as u64);
                    for &(bits, count) in list {
                        words.push(u64::from(bits));
                        words.push(count);
                    }
                }
                None => words.push(u64::MAX),
            }
        }
        bytemuck::cast_slice(&words).to_vec()
    }

    fn decode(bytes: &[u8]) -> Result<Self, FofError> {
        let words = super::domains::from_bytes::<u64>(bytes, "a rank's selection summary")?;
        let short = || FofError::DomainMessage {
            what: "a rank's selection summary",
            len: bytes.len(),
            record: 8,
        };
        let mut at = words.iter().copied();
        let mut next = || at.next().ok_or_else(short);
        let n = next()?;
        let velocities_missing = next()? != 0;
        let state = next()?;
        let bits = next()? as u32;
        let uniform = match state {
            2 => None,
            0 => Some(None),
            _ => Some(Some(bits)),
        };
        let mass_invalid = next()? != 0;
        let mass_min = f64::from_bits(next()?);
        let n_chunks = next()? as usize;
        let mut chunks = Vec::new();
        for _ in 0..n_chunks {
            let len = next()?;
            let count = next()?;
            let list = if count == u64::MAX {
                None
            } else {
                let mut list = Vec::new();
                for _ in 0..count {
                    let bits = next()? as u32;
                    list.push((bits, next()?));
                }
                Some(list)
            };
            chunks.push((len, list));
        }
        Ok(Self {
            n,
            velocities_missing,
            uniform,
            mass_invalid,
            mass_min,
            chunks,
        })
    }
}

/// Checks every rank's share and derives the linking length and frame of the whole selection,
/// as [`prepare_fof`] on one process's selection would; collective. An error on one rank
/// ends every rank (the others with [`FofError::OtherRankFailed`]); a particle's index in an
/// error is its index in the whole selection.
pub fn prepare_on_ranks(
    collective: &dyn Collective,
    share: &RankSelection<'_>,
    params: &FofParams,
) -> Result<RankPrepared, FofError> {
    let selected = share.selected;
    // This share's own checks (sizes, finite coordinates, the parameters), with an absolute
    // linking length and no box: the volume and the extent are the whole selection's, below.
    let own = if selected.positions.is_empty() {
        Ok(())
    } else {
        let local = FofParams {
            linking_length: LinkingLength::Absolute(1.0),
            separation_from: SeparationFrom::Mean,
            box_size: None,
            labels: false,
            ..*params
        };
        prepare_fof(
            &selected.positions,
            &selected.masses,
            selected.velocities.as_deref(),
            &local,
        )
        .map(|_| ())
        .map_err(|e| match e {
            FofError::NonFiniteCoordinate { index, value } => FofError::NonFiniteCoordinate {
                index: share.ids.get(index).map_or(index, |&id| id as usize),
                value,
            },
            other => other,
        })
    };
    agree(collective, "checking its particles", own)?;

    let relative = matches!(params.linking_length, LinkingLength::Relative(_));
    let levels = relative && params.separation_from == SeparationFrom::Auto;
    let lowest = relative && params.separation_from != SeparationFrom::Mean;
    let summaries = collective
        .all_gather_bytes(&Summary::of(share, levels, lowest).encode())
        .iter()
        .map(|b| Summary::decode(b))
        .collect::<Result<Vec<_>, _>>();
    let summaries = agree(collective, "summing the selection", summaries)?;
    let (mut lo, mut hi) = selected
        .positions
        .par_chunks(1 << 16)
        .map(|chunk| {
            let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
            for p in chunk {
                for axis in 0..3 {
                    lo[axis] = lo[axis].min(f64::from(p[axis]));
                    hi[axis] = hi[axis].max(f64::from(p[axis]));
                }
            }
            (lo, hi)
        })
        .reduce(
            || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]),
            |(a_lo, a_hi), (b_lo, b_hi)| {
                (
                    [0, 1, 2].map(|i| a_lo[i].min(b_lo[i])),
                    [0, 1, 2].map(|i| a_hi[i].max(b_hi[i])),
                )
            },
        );
    collective.min_f64(&mut lo);
    collective.max_f64(&mut hi);

    let n: u64 = summaries.iter().map(|s| s.n).sum();
    if n == 0 {
        let names: Vec<&str> = share.kinds.iter().map(|k| k.name()).collect();
        return Err(FofError::EmptySelection {
            selection: names.join(","),
        });
    }
    let n = n as usize;
    if n > i32::MAX as usize {
        return Err(FofError::TooManyParticles(n));
    }
    let kinds: Vec<SpeciesKind> = chunks(share.snapshot, share.kinds)
        .map(|(kind, _, _)| kind)
        .collect();
    let species: Vec<SpeciesKind> = kinds
        .iter()
        .enumerate()
        .filter(|&(j, _)| {
            summaries
                .iter()
                .any(|s| s.chunks.get(j).is_some_and(|c| c.0 > 0))
        })
        .map(|(_, &kind)| kind)
        .collect();
    let velocities = summaries.iter().all(|s| !s.velocities_missing);
    let uniform_mass = {
        let mut held = summaries.iter().filter_map(|s| s.uniform);
        let first = held.next().flatten();
        first
            .filter(|&b| held.all(|u| u == Some(b)))
            .map(f32::from_bits)
    };

    // The corners' checks and frame are the particles' (see the module's note).
    let corners = [lo.map(|x| x as f32), hi.map(|x| x as f32)];
    let whole = prepare_fof(
        &corners,
        &Masses::Uniform(1.0),
        None,
        &FofParams {
            labels: false,
            ..*params
        },
    )?;
    let frame = whole.frame();
    let mean_separation = mean_separation_in(volume(&corners, frame), n);
    let (b, linking_length, source) = match params.linking_length {
        LinkingLength::Absolute(ll) => (None, ll, LinkingLengthSource::Given),
        LinkingLength::Relative(b) => {
            if !(mean_separation.is_finite() && mean_separation > 0.0) {
                return Err(FofError::DegenerateVolume {
                    volume: mean_separation.powi(3) * n as f64,
                });
            }
            // find.rs's `separation`, with the levels and the lowest mass from every rank.
            let lowest = match params.separation_from {
                SeparationFrom::Mean => None,
                SeparationFrom::Auto => match global_levels(&summaries, kinds.len()) {
                    Some(levels) if is_zoom_in(&levels) => {
                        lowest_mass(collective, share, &summaries, uniform_mass, n)
                    }
                    _ => None,
                },
                SeparationFrom::LowestMass => Some(
                    lowest_mass(collective, share, &summaries, uniform_mass, n)
                        .ok_or(FofError::InvalidMassesForSeparation)?,
                ),
            };
            match lowest {
                None => (
                    Some(b),
                    b * mean_separation,
                    LinkingLengthSource::Mean { n },
                ),
                Some((mass, n_lowest, total)) => {
                    let separation = lowest_mass_separation(mass, total, volume(&corners, frame));
                    (
                        Some(b),
                        b * separation,
                        LinkingLengthSource::LowestMass {
                            mass,
                            n_lowest,
                            n,
                            separation,
                        },
                    )
                }
            }
        }
    };
    Ok(RankPrepared {
        linking_length,
        frame,
        b,
        mean_separation,
        source,
        n,
        velocities,
        uniform_mass,
        species,
    })
}

/// The mass levels of the whole selection: every rank's distinct masses per species, species
/// by species and ranks in order within a species (the particles' order in one process).
fn global_levels(
    summaries: &[Summary],
    n_chunks: usize,
) -> Option<Vec<super::resolution::MassLevel>> {
    let mut sequence = Vec::new();
    for j in 0..n_chunks {
        for s in summaries {
            let (_, list) = s.chunks.get(j)?;
            for &(bits, count) in list.as_ref()? {
                sequence.push((f32::from_bits(bits), count as usize));
            }
        }
    }
    mass_levels_of(sequence)
}

/// `resolution::lowest_mass` of the whole selection: the lowest mass, the particles within
/// [`LEVEL_TOLERANCE`] of it and the total mass, summed in one process's particle order (the
/// running sum passed from rank to rank, species by species); collective.
fn lowest_mass(
    collective: &dyn Collective,
    share: &RankSelection<'_>,
    summaries: &[Summary],
    uniform_mass: Option<f32>,
    n: usize,
) -> Option<(f64, usize, f64)> {
    if let Some(m) = uniform_mass {
        let m = f64::from(m);
        return valid(m).then_some((m, n, m * n as f64));
    }
    if summaries.iter().any(|s| s.mass_invalid) {
        return None;
    }
    let min = summaries
        .iter()
        .map(|s| s.mass_min)
        .fold(f64::INFINITY, f64::min);
    let mut count = [0u64];
    let mut total = 0.0f64;
    for (j, (_, len, masses)) in chunks(share.snapshot, share.kinds).enumerate() {
        count[0] += (0..len)
            .filter(|&i| f64::from(masses.get(i)) - min <= LEVEL_TOLERANCE * min)
            .count() as u64;
        for (r, s) in summaries.iter().enumerate() {
            if s.chunks.get(j).is_none_or(|c| c.0 == 0) {
                continue;
            }
            let mut bytes = Vec::new();
            if r == collective.rank() {
                for i in 0..len {
                    total += f64::from(masses.get(i));
                }
                bytes = total.to_le_bytes().to_vec();
            }
            collective.broadcast_bytes(r, &mut bytes);
            let mut word = [0u8; 8];
            if bytes.len() == 8 {
                word.copy_from_slice(&bytes);
            }
            total = f64::from_le_bytes(word);
        }
    }
    collective.sum_u64(&mut count);
    Some((min, count[0] as usize, total))
}
