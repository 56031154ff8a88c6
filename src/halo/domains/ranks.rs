//! Friends-of-friends over the ranks of a process group (MPI, or one process): one slab per
//! rank. Each rank holds any share of the particles (its part of the file), the slabs are cut
//! from the summed histogram, particles travel to the slabs that own them or see them as ghosts
//! ([`Collective::all_to_all_bytes`]), every rank links its slab alone, and the merge of
//! `merge.rs` runs with its messages as bytes. Every fallible step is agreed with
//! [`Collective::any_failed`] before the next collective one, so no rank waits on a rank that
//! stopped.

use super::catalogue::lap;
use super::decompose::{Decomposition, axis_range, bounds, histogram, histogram_bins};
use super::driver::DomainLinker;
use super::merge::{
    GhostPair, LabelEdge, LabelMap, SCAN_PIECE, from_bytes, label_domain, owner_edges, to_bytes,
};
use crate::cluster::{Collective, all_to_all_items, split_parts_mut};
use crate::data::Masses;
use crate::halo::cpu::link_components;
use crate::halo::cuda::link_components_cuda;
use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use crate::jobs::Progress;
use rayon::prelude::*;

/// Particles per task when routing them to the slabs.
const ROUTE_CHUNK: usize = 1 << 20;

/// One particle on its way to a slab.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Traveller {
    /// Global id (index in the whole selection).
    pub id: u64,
    /// The slab (rank) that owns it.
    pub owner: u32,
    /// Its position.
    pub position: [f32; 3],
}

/// A particle on its way to a slab with the mass and velocity its slab's catalogue sums, so
/// they need no second exchange after the link.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct CarryingTraveller {
    id: u64,
    owner: u32,
    position: [f32; 3],
    mass: f32,
    velocity: [f32; 3],
}

/// What the route and the slab need of a travelling record.
trait Record: bytemuck::Pod + Send + Sync {
    fn new(id: u64, owner: u32, position: [f32; 3], mass: f32, velocity: [f32; 3]) -> Self;
    fn id(&self) -> u64;
    fn owner(&self) -> u32;
    fn position(&self) -> [f32; 3];
    fn mass(&self) -> f32;
    fn velocity(&self) -> [f32; 3];
}

impl Record for Traveller {
    fn new(id: u64, owner: u32, position: [f32; 3], _: f32, _: [f32; 3]) -> Self {
        Self {
            id,
            owner,
            position,
        }
    }
    fn id(&self) -> u64 {
        self.id
    }
    fn owner(&self) -> u32 {
        self.owner
    }
    fn position(&self) -> [f32; 3] {
        self.position
    }
    fn mass(&self) -> f32 {
        0.0
    }
    fn velocity(&self) -> [f32; 3] {
        [0.0; 3]
    }
}

impl Record for CarryingTraveller {
    fn new(id: u64, owner: u32, position: [f32; 3], mass: f32, velocity: [f32; 3]) -> Self {
        Self {
            id,
            owner,
            position,
            mass,
            velocity,
        }
    }
    fn id(&self) -> u64 {
        self.id
    }
    fn owner(&self) -> u32 {
        self.owner
    }
    fn position(&self) -> [f32; 3] {
        self.position
    }
    fn mass(&self) -> f32 {
        self.mass
    }
    fn velocity(&self) -> [f32; 3] {
        self.velocity
    }
}

/// This rank's particles for [`link_on_ranks`], with what travels with them to their slab for
/// the catalogue (decided for the whole selection, so that every rank sends and expects the
/// same records).
#[derive(Debug, Clone, Copy, Default)]
pub struct RankParticles<'a> {
    /// Their global ids (index in the whole selection).
    pub ids: &'a [u64],
    /// Their positions.
    pub positions: &'a [[f32; 3]],
    /// Their masses, when the selection has more than one mass.
    pub masses: Option<&'a Masses>,
    /// When the selection has velocities: this rank's (`None` only on a rank without
    /// particles).
    pub velocities: Option<Option<&'a [[f32; 3]]>>,
}

/// What [`link_on_ranks`] leaves on each rank: its slab's owned particles and their final
/// labels (the smallest global id of their friends-of-friends set).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankLabels {
    /// Global ids of the particles this rank's slab owns, increasing.
    pub ids: Vec<u64>,
    /// Their final labels.
    pub labels: Vec<u64>,
    /// Positions of the owned particles, in `ids` order.
    pub positions: Vec<[f32; 3]>,
    /// Masses of the owned particles, in `ids` order, when they travelled.
    pub masses: Option<Vec<f32>>,
    /// Velocities of the owned particles, in `ids` order, when they travelled.
    pub velocities: Option<Vec<[f32; 3]>>,
    /// Final labels of the sets with members on more than one rank, increasing; the same list
    /// on every rank. A set that spans slabs holds, on some slab, an owned member linked to a
    /// ghost (the ghost margin is the linking length), so these are the resolved labels of the
    /// ghosts every rank named to their owners.
    pub crossing: Vec<u64>,
    /// Ghost copies this rank's slab linked.
    pub n_ghosts: usize,
    /// The slab (rank) that owns each of this rank's input particles, in input order: where
    /// their labels come back from ([`super::labels_to_readers`]).
    pub input_owners: Vec<u32>,
    /// This rank's wall time per step: `route` (decomposition and the particles placed by
    /// slab), `exchange` (the all-to-all and the slab in id order), `link` (its slab),
    /// `merge_*` (the merge's steps: `label_domain`, the `owned` columns, the `ghost_pairs`
    /// exchange, the `owner_edges`, the `edges` gathered, the `label_map`, the labels
    /// `resolve`d and the `crossing` sets).
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// Stops every rank when one failed: this rank's own error, or [`FofError::OtherRankFailed`]
/// naming `step` (every collective step of FoF under ranks agrees through it).
pub(crate) fn agree<T>(
    collective: &dyn Collective,
    step: &'static str,
    result: Result<T, FofError>,
) -> Result<T, FofError> {
    if collective.any_failed(result.is_err()) {
        return Err(result.err().unwrap_or(FofError::OtherRankFailed(step)));
    }
    result
}

/// Links the particles of every rank over one slab per rank and merges across slabs, their
/// masses and velocities (when [`RankParticles`] has them) travelling with them; collective.
pub fn link_on_ranks(
    collective: &dyn Collective,
    particles: RankParticles<'_>,
    linking_length: f64,
    frame: Option<BoxFrame>,
    linker: DomainLinker<'_>,
    progress: &Progress,
) -> Result<RankLabels, FofError> {
    let run = Run {
        collective,
        particles,
        linking_length,
        frame,
        linker,
        progress,
    };
    if particles.masses.is_some() || particles.velocities.is_some() {
        run.link::<CarryingTraveller>()
    } else {
        run.link::<Traveller>()
    }
}

/// The arguments of [`link_on_ranks`], for its body generic over the record that travels.
struct Run<'a> {
    collective: &'a dyn Collective,
    particles: RankParticles<'a>,
    linking_length: f64,
    frame: Option<BoxFrame>,
    linker: DomainLinker<'a>,
    progress: &'a Progress,
}

impl Run<'_> {
    fn link<R: Record>(self) -> Result<RankLabels, FofError> {
        let Self {
            collective,
            particles,
            linking_length,
            frame,
            linker,
            progress,
        } = self;
        let positions = particles.positions;
        let ranks = collective.size();
        let rank = collective.rank();
        let mut clock = std::time::Instant::now();
        let mut stages: Vec<(&'static str, f64)> = Vec::new();
        let (mut lo, mut hi) = bounds(positions);
        collective.min_f64(&mut lo);
        collective.max_f64(&mut hi);
        let (axis, lo, hi) = axis_range(lo, hi, frame);
        let mut counts = histogram(positions, axis, frame, lo, hi, histogram_bins(ranks));
        collective.sum_u64(&mut counts);
        let decomposition =
            Decomposition::from_histogram(axis, lo, hi, &counts, ranks, linking_length, frame);
        let (outgoing, send_counts, input_owners) = route::<R>(particles, &decomposition, ranks);
        stages.push(("route", lap(&mut clock)));

        let recv_counts = exchange_counts(collective, &send_counts);
        let recv_counts = agree(collective, "particles for a slab", recv_counts)?;
        let mut slab: Vec<R> = all_to_all_items(collective, &outgoing, &send_counts, &recv_counts);
        drop(outgoing);
        // Each rank's message is in increasing id order; with one species the ranks' shares
        // follow one another too, and the slab is already in order.
        if !slab.par_windows(2).all(|w| w[0].id() < w[1].id()) {
            // Stable: a merge sort that takes the messages' runs as they are.
            slab.par_sort_by_key(|t| t.id());
            slab.dedup_by_key(|t| t.id());
        }
        stages.push(("exchange", lap(&mut clock)));

        let local: Vec<[f32; 3]> = slab.par_iter().map(|t| t.position()).collect();
        let linked = progress
            .check()
            .map_err(FofError::from)
            .and_then(|()| match linker {
                DomainLinker::Cpu => link_components(&local, linking_length, frame, progress),
                DomainLinker::Cuda(devices) => {
                    match devices.get(collective.local_rank() % devices.len().max(1)) {
                        Some(device) => {
                            link_components_cuda(device, &local, linking_length, frame, progress)
                                .map(|out| out.set_ids)
                        }
                        None => link_components(&local, linking_length, frame, progress),
                    }
                }
            });
        let set_ids = agree(collective, "linking a slab", linked)?;
        stages.push(("link", lap(&mut clock)));
        drop(local);
        let (slab_ids, owned): (Vec<u64>, Vec<bool>) = slab
            .par_iter()
            .map(|t| (t.id(), t.owner() as usize == rank))
            .unzip();
        let labels = label_domain(&slab_ids, &owned, |k| slab[k].owner() as usize, &set_ids);
        drop((slab_ids, set_ids));
        stages.push(("merge_label_domain", lap(&mut clock)));
        let n_ghosts = slab.len() - labels.owned_ids.len();
        let (owned_positions, owned_masses, owned_velocities) = owned_columns(
            &slab,
            &owned,
            particles.masses.is_some(),
            particles.velocities.is_some(),
        );
        drop((slab, owned));
        stages.push(("merge_owned", lap(&mut clock)));

        let mut pairs: Vec<Vec<GhostPair>> = vec![Vec::new(); ranks];
        for &(owner, pair) in &labels.ghosts {
            pairs[owner].push(pair);
        }
        let bytes: Vec<Vec<u8>> = pairs.iter().map(|p| to_bytes(p)).collect();
        let incoming = collective.all_to_all_bytes(&bytes);
        stages.push(("merge_ghost_pairs", lap(&mut clock)));
        let edges = incoming
            .iter()
            .map(|b| from_bytes::<GhostPair>(b, "ghost pairs"))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|parts| owner_edges(&labels, &parts.concat()));
        let edges = agree(collective, "ghost pairs", edges)?;
        stages.push(("merge_owner_edges", lap(&mut clock)));
        let all_edges = collective
            .all_gather_bytes(&to_bytes(&edges))
            .iter()
            .map(|b| from_bytes::<LabelEdge>(b, "label edges"))
            .collect::<Result<Vec<_>, _>>()
            .map(|parts| parts.concat());
        let all_edges = agree(collective, "label edges", all_edges)?;
        stages.push(("merge_edges", lap(&mut clock)));
        let map = LabelMap::from_edges(&all_edges);
        stages.push(("merge_label_map", lap(&mut clock)));
        let resolved = labels
            .owned_labels
            .par_iter()
            .map(|&l| map.resolve(l))
            .collect();
        stages.push(("merge_resolve", lap(&mut clock)));
        let mut named: Vec<u64> = labels
            .ghosts
            .iter()
            .map(|(_, pair)| map.resolve(pair.label))
            .collect();
        named.sort_unstable();
        named.dedup();
        let crossing = collective
            .all_gather_bytes(&to_bytes(&named))
            .iter()
            .map(|b| from_bytes::<u64>(b, "labels of sets across slabs"))
            .collect::<Result<Vec<_>, _>>()
            .map(|parts| {
                let mut all = parts.concat();
                all.sort_unstable();
                all.dedup();
                all
            });
        let crossing = agree(collective, "labels of sets across slabs", crossing)?;
        stages.push(("merge_crossing", lap(&mut clock)));
        Ok(RankLabels {
            labels: resolved,
            ids: labels.owned_ids,
            positions: owned_positions,
            masses: owned_masses,
            velocities: owned_velocities,
            crossing,
            n_ghosts,
            input_owners,
            stage_seconds: stages,
        })
    }
}

/// Positions, masses and velocities of a slab's owned particles.
type OwnedColumns = (Vec<[f32; 3]>, Option<Vec<f32>>, Option<Vec<[f32; 3]>>);

/// Positions, and masses and velocities when asked for, of the slab's `owned` records, in
/// slab order: one pass over the records, each piece of them writing its own places.
fn owned_columns<R: Record>(
    slab: &[R],
    owned: &[bool],
    masses: bool,
    velocities: bool,
) -> OwnedColumns {
    let counts: Vec<usize> = owned
        .par_chunks(SCAN_PIECE)
        .map(|p| p.iter().filter(|&&o| o).count())
        .collect();
    let n_owned: usize = counts.iter().sum();
    let mut positions = vec![[0.0f32; 3]; n_owned];
    let mut mass = vec![0.0f32; if masses { n_owned } else { 0 }];
    let mut velocity = vec![[0.0f32; 3]; if velocities { n_owned } else { 0 }];
    let places = split_parts_mut(&mut positions, &counts)
        .into_iter()
        .zip(split_parts_mut(&mut mass, &counts))
        .zip(split_parts_mut(&mut velocity, &counts));
    places
        .collect::<Vec<_>>()
        .into_par_iter()
        .zip(slab.par_chunks(SCAN_PIECE))
        .zip(owned.par_chunks(SCAN_PIECE))
        .for_each(|((((positions, mass), velocity), records), owned)| {
            for (at, (t, _)) in records.iter().zip(owned).filter(|&(_, &o)| o).enumerate() {
                if let Some(p) = positions.get_mut(at) {
                    *p = t.position();
                }
                if let Some(m) = mass.get_mut(at) {
                    *m = t.mass();
                }
                if let Some(v) = velocity.get_mut(at) {
                    *v = t.velocity();
                }
            }
        });
    (
        positions,
        masses.then_some(mass),
        velocities.then_some(velocity),
    )
}

/// This rank's travellers packed by slab (each slab's in input order, which is increasing
/// id order), how many go to each slab, and the slab that owns each input particle (in input
/// order, for its label's way back). A counting pass, then every chunk of the input writes its
/// own places of the one buffer, so nothing is copied again before it leaves.
fn route<R: Record>(
    particles: RankParticles<'_>,
    decomposition: &Decomposition,
    ranks: usize,
) -> (Vec<R>, Vec<usize>, Vec<u32>) {
    let RankParticles {
        ids,
        positions,
        masses,
        velocities,
    } = particles;
    let per_chunk: Vec<Vec<usize>> = positions
        .par_chunks(ROUTE_CHUNK)
        .map(|chunk| {
            let mut counts = vec![0usize; ranks];
            let mut ghosts = Vec::new();
            for p in chunk {
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                counts[owner] += 1;
                decomposition.ghost_domains(x, owner, &mut ghosts);
                for &d in &ghosts {
                    counts[d] += 1;
                }
            }
            counts
        })
        .collect();
    let totals: Vec<usize> = (0..ranks)
        .map(|d| per_chunk.iter().map(|c| c[d]).sum())
        .collect();
    let mut outgoing: Vec<R> = bytemuck::zeroed_vec(totals.iter().sum());
    let mut owners: Vec<u32> = bytemuck::zeroed_vec(positions.len());
    // The places of chunk c: slab by slab, after the earlier chunks' travellers to that slab.
    let mut places: Vec<Vec<&mut [R]>> = per_chunk
        .iter()
        .map(|_| Vec::with_capacity(ranks))
        .collect();
    let mut rest: &mut [R] = &mut outgoing;
    for d in 0..ranks {
        for (c, counts) in per_chunk.iter().enumerate() {
            let (place, after) = std::mem::take(&mut rest).split_at_mut(counts[d]);
            places[c].push(place);
            rest = after;
        }
    }
    places
        .into_par_iter()
        .zip(ids.par_chunks(ROUTE_CHUNK))
        .zip(positions.par_chunks(ROUTE_CHUNK))
        .zip(owners.par_chunks_mut(ROUTE_CHUNK))
        .enumerate()
        .for_each(|(c, (((mut places, ids), positions), owners))| {
            let mut next = vec![0usize; ranks];
            let mut ghosts = Vec::new();
            for (k, ((&id, p), slab)) in ids.iter().zip(positions).zip(owners).enumerate() {
                let i = c * ROUTE_CHUNK + k;
                let mass = masses.map_or(0.0, |m| m.get(i));
                let velocity = velocities
                    .flatten()
                    .and_then(|v| v.get(i))
                    .copied()
                    .unwrap_or_default();
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                *slab = owner as u32;
                decomposition.ghost_domains(x, owner, &mut ghosts);
                let record = R::new(id, owner as u32, *p, mass, velocity);
                for d in std::iter::once(owner).chain(ghosts.iter().copied()) {
                    if let Some(slot) = places[d].get_mut(next[d]) {
                        *slot = record;
                    }
                    next[d] += 1;
                }
            }
        });
    (outgoing, totals, owners)
}

/// How many records each rank sends this one (from this rank's `send_counts` per rank).
pub(super) fn exchange_counts(
    collective: &dyn Collective,
    send_counts: &[usize],
) -> Result<Vec<usize>, FofError> {
    let outgoing: Vec<Vec<u8>> = send_counts
        .iter()
        .map(|&n| (n as u64).to_ne_bytes().to_vec())
        .collect();
    collective
        .all_to_all_bytes(&outgoing)
        .iter()
        .map(|b| {
            from_bytes::<u64>(b, "particle counts for a slab").and_then(|words| match words[..] {
                [n] => Ok(n as usize),
                _ => Err(FofError::DomainMessage {
                    what: "particle counts for a slab",
                    len: b.len(),
                    record: 8,
                }),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Solo;

    #[test]
    fn one_rank_labels_every_particle_with_its_sets_smallest_id() {
        let positions = [[0.0f32, 0.0, 0.0], [5.0, 5.0, 5.0], [0.5, 0.0, 0.0]];
        let ids = [10, 11, 12];
        let particles = RankParticles {
            ids: &ids,
            positions: &positions,
            ..RankParticles::default()
        };
        let out = link_on_ranks(
            &Solo,
            particles,
            1.0,
            None,
            DomainLinker::Cpu,
            &Progress::none(),
        )
        .unwrap();
        assert_eq!(out.ids, vec![10, 11, 12]);
        assert_eq!(out.labels, vec![10, 11, 10]);
        assert_eq!(out.n_ghosts, 0);
        assert_eq!(out.positions, positions);
        assert_eq!((out.masses, out.velocities), (None, None));
        assert!(out.crossing.is_empty());
    }
    #[test]
    fn masses_and_velocities_travel_with_their_particles() {
        let positions = [[5.0f32, 5.0, 5.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]];
        let masses = Masses::PerParticle(vec![2.0, 3.0, 4.0]);
        let velocities = [[1.0f32, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]];
        // Ids out of order, so the slab's sort moves the carried values with the particles.
        let particles = RankParticles {
            ids: &[12, 10, 11],
            positions: &positions,
            masses: Some(&masses),
            velocities: Some(Some(&velocities)),
        };
        let out = link_on_ranks(
            &Solo,
            particles,
            1.0,
            None,
            DomainLinker::Cpu,
            &Progress::none(),
        )
        .unwrap();
        assert_eq!(out.ids, vec![10, 11, 12]);
        assert_eq!(out.labels, vec![10, 10, 12]);
        assert_eq!(out.positions, [positions[1], positions[2], positions[0]]);
        assert_eq!(out.masses, Some(vec![3.0, 4.0, 2.0]));
        assert_eq!(
            out.velocities,
            Some(vec![velocities[1], velocities[2], velocities[0]])
        );
    }

    #[test]
    fn owned_columns_over_many_pieces_keep_slab_order() {
        let n = 3 * SCAN_PIECE + 77;
        let slab: Vec<CarryingTraveller> = (0..n)
            .map(|k| {
                let x = k as f32;
                CarryingTraveller::new(k as u64, (k % 3) as u32, [x, -x, 0.5], x, [0.0, x, 1.0])
            })
            .collect();
        let owned: Vec<bool> = slab.iter().map(|t| t.owner == 1).collect();
        let mine: Vec<&CarryingTraveller> = slab.iter().filter(|t| t.owner == 1).collect();
        let (positions, masses, velocities) = owned_columns(&slab, &owned, true, true);
        assert_eq!(
            positions,
            mine.iter().map(|t| t.position).collect::<Vec<_>>()
        );
        assert_eq!(masses, Some(mine.iter().map(|t| t.mass).collect()));
        assert_eq!(velocities, Some(mine.iter().map(|t| t.velocity).collect()));
        let (positions, masses, velocities) = owned_columns(&slab, &owned, false, false);
        assert_eq!(positions.len(), mine.len());
        assert_eq!((masses, velocities), (None, None));
    }

    #[test]
    fn the_packed_route_holds_each_slabs_travellers_in_input_order() {
        let decomposition = Decomposition {
            axis: 0,
            cuts: vec![1.0, 2.0],
            frame: None,
            ghost: 0.1,
        };
        let positions: Vec<[f32; 3]> = (0..500)
            .map(|i| [(i * 37 % 300) as f32 / 100.0, i as f32, 0.0])
            .collect();
        let ids: Vec<u64> = (0..500).map(|i| 1000 + 3 * i).collect();
        let masses = Masses::PerParticle((0..500).map(|i| i as f32).collect());
        let particles = RankParticles {
            ids: &ids,
            positions: &positions,
            masses: Some(&masses),
            velocities: None,
        };
        let (packed, counts, owners) = route::<CarryingTraveller>(particles, &decomposition, 3);
        assert_eq!(counts.len(), 3);
        // One pass per slab, as the route was before it was packed.
        let mut expected = Vec::new();
        let mut ghosts = Vec::new();
        for (slab, &count) in counts.iter().enumerate() {
            let mut mine = Vec::new();
            for (i, p) in positions.iter().enumerate() {
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                decomposition.ghost_domains(x, owner, &mut ghosts);
                if owner == slab || ghosts.contains(&slab) {
                    let record =
                        CarryingTraveller::new(ids[i], owner as u32, *p, i as f32, [0.0; 3]);
                    mine.push(record);
                }
            }
            assert_eq!(count, mine.len(), "slab {slab}");
            expected.extend(mine);
        }
        assert!(counts.iter().all(|&n| n > 100), "{counts:?}");
        assert!(
            counts.iter().sum::<usize>() > 500,
            "some ghosts: {counts:?}"
        );
        assert_eq!(packed, expected);
        let slabs: Vec<u32> = positions
            .iter()
            .map(|p| decomposition.owner_of(decomposition.coordinate(p)) as u32)
            .collect();
        assert_eq!(owners, slabs);
    }
}
