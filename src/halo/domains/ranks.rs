//! Friends-of-friends over the ranks of a process group (MPI, or one process): one slab per
//! rank. Each rank holds any share of the particles (its part of the file), the slabs are cut
//! from the summed histogram, particles travel to the slabs that own them or see them as ghosts
//! ([`Collective::all_to_all_bytes`]), every rank links its slab alone and catalogues the sets
//! wholly inside it (on its device, `cuda/slab.rs`, or the CPU, `slab_cpu.rs`, as one
//! process's domains do), and the merge of `merge.rs` runs on the members of the sets with a
//! ghost, with its messages as bytes. Every fallible step is agreed with
//! [`Collective::any_failed`] before the next collective one, so no rank waits on a rank that
//! stopped.

use super::catalogue::lap;
use super::decompose::{Decomposition, axis_range, bounds, histogram, histogram_bins};
use super::driver::DomainLinker;
use super::merge::{
    GhostPair, LabelEdge, LabelMap, SCAN_PIECE, boundary_labels, from_bytes, owner_edges, to_bytes,
};
use super::slab_cpu::slab_catalogue_cpu;
use crate::cluster::{Collective, all_to_all_items_into, split_parts_mut, zero_on_every_thread};
use crate::data::Masses;
use crate::halo::catalogue::Halo;
use crate::halo::cuda::slab_catalogue_cuda;
use crate::halo::error::FofError;
use crate::halo::params::CatalogueRequest;
use crate::halo::periodic::BoxFrame;
use crate::jobs::Progress;
use rayon::prelude::*;

/// Particles per task when routing them to the slabs.
const ROUTE_CHUNK: usize = 1 << 20;

/// One particle on its way to a slab: 16 bytes, as the exchange moves every particle and its
/// ghost copies once. Its owner slab is not sent: the receiver finds it from the position by
/// the same float tests as the route.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Traveller {
    /// Global id (index in the whole selection, below 2^31 as `prepare_on_ranks` checks).
    pub id: u32,
    /// Its position.
    pub position: [f32; 3],
}

/// A particle on its way to a slab with the mass and velocity its slab's catalogue sums, so
/// they need no second exchange after the link.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct CarryingTraveller {
    id: u32,
    position: [f32; 3],
    mass: f32,
    velocity: [f32; 3],
}

/// What the route and the slab need of a travelling record.
trait Record: bytemuck::Pod + Send + Sync {
    /// `id` below 2^31 (the selection's size is checked before the route).
    fn new(id: u64, position: [f32; 3], mass: f32, velocity: [f32; 3]) -> Self;
    fn id(&self) -> u64;
    fn position(&self) -> [f32; 3];
    fn mass(&self) -> f32;
    fn velocity(&self) -> [f32; 3];
}

impl Record for Traveller {
    fn new(id: u64, position: [f32; 3], _: f32, _: [f32; 3]) -> Self {
        Self {
            id: id as u32,
            position,
        }
    }
    fn id(&self) -> u64 {
        u64::from(self.id)
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
    fn new(id: u64, position: [f32; 3], mass: f32, velocity: [f32; 3]) -> Self {
        Self {
            id: id as u32,
            position,
            mass,
            velocity,
        }
    }
    fn id(&self) -> u64 {
        u64::from(self.id)
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

/// What a slab keeps for the catalogue, besides its particles.
#[derive(Debug, Clone, Copy)]
pub struct SlabOptions {
    /// Every particle's mass when the masses do not travel ([`RankParticles::masses`] `None`).
    pub uniform_mass: f32,
    /// Smallest set kept as a halo.
    pub min_members: usize,
    /// Whether every owned particle's halo is wanted.
    pub with_labels: bool,
}

/// An owned member of a set across slabs, with what its halo sums.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct CrossingMember {
    /// Its index among the rank's owned particles ([`RankLabels::ids`]).
    pub local: u64,
    /// Its global id.
    pub id: u64,
    /// Its set's final label (the set's smallest global id).
    pub label: u64,
    pub position: [f32; 3],
    pub mass: f32,
    pub velocity: [f32; 3],
    pub _pad: u32,
}

/// What [`link_on_ranks`] leaves on each rank: its slab's owned particles, the halos of its
/// sets wholly inside the slab, and the owned members of the sets across slabs with their
/// final labels (the smallest global id of their friends-of-friends set).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankLabels {
    /// Global ids of the particles this rank's slab owns, increasing.
    pub ids: Vec<u64>,
    /// Halos of the sets inside the slab, in catalogue order, `min_index` a global id.
    pub halos: Vec<Halo>,
    /// Sets of every size inside the slab.
    pub n_interior_sets: usize,
    /// Per owned particle, when labels were asked for: its rank in `halos`, or −1 (also for
    /// the members of sets across slabs).
    pub halo_ranks: Option<Vec<i32>>,
    /// The owned members of the sets with a member on another rank, by increasing id.
    pub crossing_members: Vec<CrossingMember>,
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
    /// This rank's wall time per step: `route_counts` (the decomposition, the travellers
    /// counted by slab, the counts exchanged), `receive_buffer` (the slab's parts that other
    /// ranks send, faulted in), `route` (the travellers written: this rank's own into its slab,
    /// the others packed by slab), `exchange` (the all-to-all), `slab_order` (the slab in id
    /// order), `slab_columns` (owned particles first), `slab_catalogue` (link and the interior
    /// sets' halos, on the rank's device or the CPU, then the device's own stages), `merge_*`
    /// (the merge's steps: the boundary sets' `label_domain`, the `ghost_pairs` exchange, the
    /// `owner_edges`, the `edges` gathered, the `label_map`, the crossing members' labels
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

/// Links the particles of every rank over one slab per rank, catalogues each slab's interior
/// sets as `options` asks and merges the sets across slabs, the particles' masses and
/// velocities (when [`RankParticles`] has them) travelling with them; collective.
pub fn link_on_ranks(
    collective: &dyn Collective,
    particles: RankParticles<'_>,
    linking_length: f64,
    frame: Option<BoxFrame>,
    options: SlabOptions,
    linker: DomainLinker<'_>,
    progress: &Progress,
) -> Result<RankLabels, FofError> {
    let run = Run {
        collective,
        particles,
        linking_length,
        frame,
        options,
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
    options: SlabOptions,
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
            options,
            linker,
            progress,
        } = self;
        let positions = particles.positions;
        let ranks = collective.size();
        let rank = collective.rank();
        let mut clock = std::time::Instant::now();
        let mut stages: Vec<(&'static str, f64)> = Vec::new();
        // A periodic box is cut along x over the frame: the particles' bounds are not needed
        // (every rank has the same frame, so every rank skips the same collectives).
        let (axis, lo, hi) = match frame {
            Some(_) => axis_range([0.0; 3], [0.0; 3], frame),
            None => {
                let (mut lo, mut hi) = bounds(positions);
                collective.min_f64(&mut lo);
                collective.max_f64(&mut hi);
                axis_range(lo, hi, frame)
            }
        };
        let mut counts = histogram(positions, axis, frame, lo, hi, histogram_bins(ranks));
        collective.sum_u64(&mut counts);
        let decomposition =
            Decomposition::from_histogram(axis, lo, hi, &counts, ranks, linking_length, frame);
        let counts = count_routes(positions, &decomposition, ranks);
        let recv_parts = exchange_part_counts(collective, &counts.totals);
        let recv_parts = agree(collective, "particles for a slab", recv_parts)?;
        let recv_counts: Vec<usize> = recv_parts.iter().map(|[o, g]| o + g).collect();
        stages.push(("route_counts", lap(&mut clock)));

        // The slab in rank order of the senders; this rank's own travellers are written into
        // their part by the route, the other parts are faulted in on every thread first (MPI's
        // copy into untouched pages would fault them in on its one thread).
        let own_at: usize = recv_counts[..rank].iter().sum();
        let own_len = recv_counts[rank].min(counts.totals[rank][0] + counts.totals[rank][1]);
        let mut slab: Vec<R> = bytemuck::zeroed_vec(recv_counts.iter().sum());
        let (before, own_and_after) = slab.split_at_mut(own_at);
        let (own_place, after) = own_and_after.split_at_mut(own_len);
        zero_on_every_thread(before);
        zero_on_every_thread(after);
        stages.push(("receive_buffer", lap(&mut clock)));
        let mut send_counts: Vec<usize> = counts.totals.iter().map(|[o, g]| o + g).collect();
        send_counts[rank] = 0;
        let (outgoing, input_owners) =
            place_routes::<R>(particles, &decomposition, counts, rank, own_place);
        stages.push(("route", lap(&mut clock)));
        all_to_all_items_into(collective, &outgoing, &send_counts, &mut slab, &recv_counts);
        drop(outgoing);
        stages.push(("exchange", lap(&mut clock)));
        // Each rank's message holds the slab's owned particles, then its ghosts, each part in
        // increasing id order; with one species the ranks' shares follow one another too, so
        // the owned parts in rank order are already in id order, and so are the ghost parts.
        let spans = SlabSpans::of(&recv_parts);
        let in_order = spans.in_id_order(&slab);
        if !in_order {
            // Stable: a merge sort that takes the messages' runs as they are.
            slab.par_sort_by_key(|t| t.id());
            slab.dedup_by_key(|t| t.id());
        }
        stages.push(("slab_order", lap(&mut clock)));

        let n_slab = slab.len();
        let fits = if n_slab > i32::MAX as usize {
            Err(FofError::TooManyParticles(n_slab))
        } else {
            Ok(())
        };
        agree(collective, "gathering a slab", fits)?;
        let (masses_travel, velocities_travel) =
            (particles.masses.is_some(), particles.velocities.is_some());
        let mut columns = if in_order {
            spans.columns(&slab, &decomposition, masses_travel, velocities_travel)
        } else {
            slab_columns(
                &slab,
                &decomposition,
                rank,
                masses_travel,
                velocities_travel,
            )
        };
        drop(slab);
        stages.push(("slab_columns", lap(&mut clock)));

        let n_owned = columns.ids.len();
        let masses = match columns.masses.take() {
            Some(m) => Masses::PerParticle(m),
            None => Masses::Uniform(options.uniform_mass),
        };
        let request = CatalogueRequest {
            positions: &columns.positions,
            masses: &masses,
            velocities: columns.velocities.as_deref(),
            linking_length,
            frame,
            min_members: options.min_members,
            with_labels: options.with_labels,
        };
        let catalogued = progress
            .check()
            .map_err(FofError::from)
            .and_then(|()| match linker {
                DomainLinker::Cpu => slab_catalogue_cpu(&request, n_owned, progress),
                DomainLinker::Cuda(devices) => {
                    match devices.get(collective.local_rank() % devices.len().max(1)) {
                        Some(device) => slab_catalogue_cuda(device, &request, n_owned, progress),
                        None => slab_catalogue_cpu(&request, n_owned, progress),
                    }
                }
            })
            .and_then(|out| {
                // Interior halos hold only owned particles: their smallest members are owned.
                let halos = out
                    .halos
                    .iter()
                    .map(|h| match columns.ids.get(h.min_index) {
                        Some(&id) => Ok(Halo {
                            min_index: id as usize,
                            ..*h
                        }),
                        None => Err(FofError::DomainMerge {
                            id: h.min_index as u64,
                            rule: "the smallest member of a set inside one slab is not owned",
                        }),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok((out, halos))
            });
        let (slab_catalogue, halos) = agree(collective, "cataloguing a slab", catalogued)?;
        stages.push(("slab_catalogue", lap(&mut clock)));
        for &(name, seconds) in &slab_catalogue.stage_seconds {
            stages.push((name, seconds));
        }
        let n_ghosts = n_slab - n_owned;
        let boundary_ids: Vec<u64> = slab_catalogue
            .boundary
            .iter()
            .map(|&(k, _)| columns.id(k as usize))
            .collect();
        let labels = boundary_labels(n_owned, &slab_catalogue.boundary, &boundary_ids, |j| {
            let k = slab_catalogue.boundary[j].0 as usize;
            columns.ghost_owners[k - n_owned] as usize
        });
        drop(boundary_ids);
        stages.push(("merge_label_domain", lap(&mut clock)));

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
        // The owned members of the sets with a ghost, with their sets' final labels: the
        // boundary lists them owned first, in increasing local index (= increasing id).
        let crossing_members: Vec<CrossingMember> = slab_catalogue
            .boundary
            .iter()
            .take_while(|&&(k, _)| (k as usize) < n_owned)
            .zip(&labels.owned_labels)
            .map(|(&(k, _), &label)| {
                let k = k as usize;
                CrossingMember {
                    local: k as u64,
                    id: columns.ids[k],
                    label: map.resolve(label),
                    position: columns.positions[k],
                    mass: masses.get(k),
                    velocity: columns.velocities.as_ref().map_or([0.0; 3], |v| v[k]),
                    _pad: 0,
                }
            })
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
            ids: columns.ids,
            halos,
            n_interior_sets: slab_catalogue.n_interior_sets,
            halo_ranks: slab_catalogue.labels,
            crossing_members,
            crossing,
            n_ghosts,
            input_owners,
            stage_seconds: stages,
        })
    }
}

/// A slab as the slab catalogue takes it: its owned particles, in increasing id, then its
/// ghosts, in increasing id.
struct SlabColumns {
    /// Global ids of the owned particles.
    ids: Vec<u64>,
    /// Global ids of the ghosts.
    ghost_ids: Vec<u64>,
    /// The slab (rank) that owns each ghost.
    ghost_owners: Vec<u32>,
    /// Positions, owned then ghosts.
    positions: Vec<[f32; 3]>,
    /// Masses, owned then ghosts, when they travelled.
    masses: Option<Vec<f32>>,
    /// Velocities, owned then ghosts, when they travelled.
    velocities: Option<Vec<[f32; 3]>>,
}

impl SlabColumns {
    /// Global id of local particle `k` (owned ones first).
    fn id(&self, k: usize) -> u64 {
        match self.ids.get(k) {
            Some(&id) => id,
            None => self.ghost_ids[k - self.ids.len()],
        }
    }
}

/// The columns of a slab of records in id order, the records `rank` owns by `decomposition`
/// first: one pass over the records, each piece of them writing its own places of the owned
/// and the ghost parts.
fn slab_columns<R: Record>(
    slab: &[R],
    decomposition: &Decomposition,
    rank: usize,
    masses: bool,
    velocities: bool,
) -> SlabColumns {
    let owner = |t: &R| decomposition.owner_of(decomposition.coordinate(&t.position()));
    let owned_counts: Vec<usize> = slab
        .par_chunks(SCAN_PIECE)
        .map(|p| p.iter().filter(|t| owner(t) == rank).count())
        .collect();
    let ghost_counts: Vec<usize> = slab
        .par_chunks(SCAN_PIECE)
        .zip(&owned_counts)
        .map(|(p, &owned)| p.len() - owned)
        .collect();
    let n_owned: usize = owned_counts.iter().sum();
    let mut out = ZeroedColumns::new(slab.len(), n_owned, masses, velocities);
    let id_places = owned_and_ghost_parts(&mut out.ids, &owned_counts, &ghost_counts);
    let position_places = owned_and_ghost_parts(&mut out.positions, &owned_counts, &ghost_counts);
    let mass_places = owned_and_ghost_parts(&mut out.mass, &owned_counts, &ghost_counts);
    let velocity_places = owned_and_ghost_parts(&mut out.velocity, &owned_counts, &ghost_counts);
    let owner_places = split_parts_mut(&mut out.ghost_owners, &ghost_counts);
    id_places
        .into_par_iter()
        .zip(position_places)
        .zip(mass_places)
        .zip(velocity_places)
        .zip(owner_places)
        .zip(slab.par_chunks(SCAN_PIECE))
        .for_each(
            |(((((ids, positions), mass), velocity), owners), records)| {
                let (mut owned_at, mut ghost_at) = (0, 0);
                for t in records {
                    let slab = owner(t);
                    let (ids, positions, mass, velocity, at) = if slab == rank {
                        (
                            &mut *ids.0,
                            &mut *positions.0,
                            &mut *mass.0,
                            &mut *velocity.0,
                            &mut owned_at,
                        )
                    } else {
                        if let Some(o) = owners.get_mut(ghost_at) {
                            *o = slab as u32;
                        }
                        (
                            &mut *ids.1,
                            &mut *positions.1,
                            &mut *mass.1,
                            &mut *velocity.1,
                            &mut ghost_at,
                        )
                    };
                    put_record(t, *at, ids, positions, mass, velocity);
                    *at += 1;
                }
            },
        );
    out.finish()
}

/// A slab's columns while they are filled: `n` particles, the first `n_owned` owned, the masses
/// and velocities empty when they did not travel.
struct ZeroedColumns {
    ids: Vec<u64>,
    ghost_owners: Vec<u32>,
    positions: Vec<[f32; 3]>,
    mass: Vec<f32>,
    velocity: Vec<[f32; 3]>,
    n_owned: usize,
    masses: bool,
    velocities: bool,
}

impl ZeroedColumns {
    fn new(n: usize, n_owned: usize, masses: bool, velocities: bool) -> Self {
        Self {
            ids: vec![0; n],
            ghost_owners: vec![0; n - n_owned.min(n)],
            positions: vec![[0.0; 3]; n],
            mass: vec![0.0; if masses { n } else { 0 }],
            velocity: vec![[0.0; 3]; if velocities { n } else { 0 }],
            n_owned,
            masses,
            velocities,
        }
    }

    fn finish(mut self) -> SlabColumns {
        let ghost_ids = self.ids.split_off(self.n_owned.min(self.ids.len()));
        SlabColumns {
            ids: self.ids,
            ghost_ids,
            ghost_owners: self.ghost_owners,
            positions: self.positions,
            masses: self.masses.then_some(self.mass),
            velocities: self.velocities.then_some(self.velocity),
        }
    }
}

/// Writes record `t` at place `k` of each column's part (the parts of columns that did not
/// travel are empty).
#[inline(always)]
fn put_record<R: Record>(
    t: &R,
    k: usize,
    ids: &mut [u64],
    positions: &mut [[f32; 3]],
    mass: &mut [f32],
    velocity: &mut [[f32; 3]],
) {
    if let Some(slot) = ids.get_mut(k) {
        *slot = t.id();
    }
    if let Some(slot) = positions.get_mut(k) {
        *slot = t.position();
    }
    if let Some(slot) = mass.get_mut(k) {
        *slot = t.mass();
    }
    if let Some(slot) = velocity.get_mut(k) {
        *slot = t.velocity();
    }
}

/// Spans (first record, length) cut into pieces of at most [`SCAN_PIECE`] records.
fn scan_pieces(spans: impl Iterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    spans
        .flat_map(|(at, n)| {
            (0..n)
                .step_by(SCAN_PIECE)
                .map(move |k| (at + k, SCAN_PIECE.min(n - k)))
        })
        .collect()
}

/// Where each sender's message lies in a slab as it arrived: its owned particles, then its
/// ghosts.
struct SlabSpans {
    /// [first record, owned, ghosts] of each rank's message, in rank order.
    messages: Vec<[usize; 3]>,
}

impl SlabSpans {
    fn of(parts: &[[usize; 2]]) -> Self {
        let mut at = 0;
        let messages = parts
            .iter()
            .map(|&[owned, ghosts]| {
                let message = [at, owned, ghosts];
                at += owned + ghosts;
                message
            })
            .collect();
        Self { messages }
    }

    /// The owned parts in rank order, then the ghost parts, each as (first record, length),
    /// cut into pieces of at most [`SCAN_PIECE`] records for the threads.
    fn pieces(&self) -> [Vec<(usize, usize)>; 2] {
        let owned = self.messages.iter().map(|&[at, owned, _]| (at, owned));
        let ghosts = self
            .messages
            .iter()
            .map(|&[at, owned, ghosts]| (at + owned, ghosts));
        [scan_pieces(owned), scan_pieces(ghosts)]
    }

    /// Whether the owned parts, taken in rank order, are in increasing id order, and the ghost
    /// parts too (and the slab holds them all).
    fn in_id_order<R: Record>(&self, slab: &[R]) -> bool {
        self.pieces().iter().all(|pieces| {
            let increasing = pieces.par_iter().all(|&(at, n)| {
                slab.get(at..at + n)
                    .is_some_and(|p| p.windows(2).all(|w| w[0].id() < w[1].id()))
            });
            increasing
                && pieces
                    .windows(2)
                    .all(|w| slab[w[0].0 + w[0].1 - 1].id() < slab[w[1].0].id())
        })
    }

    /// The slab's columns ([`slab_columns`]'s) from its messages' parts, when they are in id
    /// order ([`Self::in_id_order`]): no owner is found again but the ghosts'.
    fn columns<R: Record>(
        &self,
        slab: &[R],
        decomposition: &Decomposition,
        masses: bool,
        velocities: bool,
    ) -> SlabColumns {
        let [owned, ghosts] = self.pieces();
        let n_owned: usize = owned.iter().map(|p| p.1).sum();
        let n_ghosts: usize = ghosts.iter().map(|p| p.1).sum();
        let mut out = ZeroedColumns::new(n_owned + n_ghosts, n_owned, masses, velocities);
        let pieces: Vec<(usize, usize)> = owned.iter().chain(&ghosts).copied().collect();
        let lens: Vec<usize> = pieces.iter().map(|p| p.1).collect();
        let owner_lens: Vec<usize> = owned
            .iter()
            .map(|_| 0)
            .chain(ghosts.iter().map(|p| p.1))
            .collect();
        split_parts_mut(&mut out.ids, &lens)
            .into_par_iter()
            .zip(split_parts_mut(&mut out.positions, &lens))
            .zip(split_parts_mut(&mut out.mass, &lens))
            .zip(split_parts_mut(&mut out.velocity, &lens))
            .zip(split_parts_mut(&mut out.ghost_owners, &owner_lens))
            .zip(pieces)
            .for_each(
                |(((((ids, positions), mass), velocity), owners), (at, n))| {
                    let records = slab.get(at..at + n).unwrap_or_default();
                    for (k, t) in records.iter().enumerate() {
                        put_record(t, k, ids, positions, mass, velocity);
                        if let Some(slot) = owners.get_mut(k) {
                            *slot = decomposition.owner(&t.position()) as u32;
                        }
                    }
                },
            );
        out.finish()
    }
}

/// Each piece's places in `buf` (empty, or the owned part then the ghost part): its owned ones
/// among the first `Σ owned_counts`, its ghosts after them.
fn owned_and_ghost_parts<'a, T>(
    buf: &'a mut [T],
    owned_counts: &[usize],
    ghost_counts: &[usize],
) -> Vec<(&'a mut [T], &'a mut [T])> {
    let n_owned: usize = owned_counts.iter().sum();
    let (owned, ghosts) = buf.split_at_mut(n_owned.min(buf.len()));
    split_parts_mut(owned, owned_counts)
        .into_iter()
        .zip(split_parts_mut(ghosts, ghost_counts))
        .collect()
}

/// How many travellers each chunk of [`ROUTE_CHUNK`] input particles sends to each slab, as
/// [owned, ghosts] (a particle goes to its owner and to the slabs that see it as a ghost), the
/// totals per slab, and each particle's owner slab, with [`GHOSTS`] set where it also goes to
/// other slabs.
struct RouteCounts {
    per_chunk: Vec<Vec<[usize; 2]>>,
    totals: Vec<[usize; 2]>,
    owners: Vec<u32>,
}

/// The bit of [`RouteCounts::owners`] that marks a particle some other slab sees as a ghost
/// (slabs are ranks, far fewer than 2^31).
const GHOSTS: u32 = 1 << 31;

/// The counting pass of the route (before any record is written, so that the counts can be
/// exchanged and the receive buffer made first: this rank's own travellers go straight there).
fn count_routes(
    positions: &[[f32; 3]],
    decomposition: &Decomposition,
    ranks: usize,
) -> RouteCounts {
    let mut owners: Vec<u32> = bytemuck::zeroed_vec(positions.len());
    let per_chunk: Vec<Vec<[usize; 2]>> = positions
        .par_chunks(ROUTE_CHUNK)
        .zip(owners.par_chunks_mut(ROUTE_CHUNK))
        .map(|(chunk, owners)| {
            let mut counts = vec![[0usize; 2]; ranks];
            let mut ghosts = Vec::new();
            for (p, slab) in chunk.iter().zip(owners) {
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                counts[owner][0] += 1;
                decomposition.ghost_domains(x, owner, &mut ghosts);
                for &d in &ghosts {
                    counts[d][1] += 1;
                }
                *slab = owner as u32 | if ghosts.is_empty() { 0 } else { GHOSTS };
            }
            counts
        })
        .collect();
    let totals = (0..ranks)
        .map(|d| {
            let sum = |k: usize| per_chunk.iter().map(|c| c[d][k]).sum();
            [sum(0), sum(1)]
        })
        .collect();
    RouteCounts {
        per_chunk,
        totals,
        owners,
    }
}

/// Writes this rank's travellers, each slab's message its owned particles then its ghosts, each
/// part in input order (which is increasing id order): the message to slab `own` into
/// `own_place` (both its parts long), the others packed by slab into the returned buffer (slab
/// `own`'s message empty); and the slab that owns each input particle (in input order, for its
/// label's way back). Every chunk of the input writes its own places, so nothing is copied
/// again before it leaves; only a particle that goes to a ghost slab has its slabs found again.
fn place_routes<R: Record>(
    particles: RankParticles<'_>,
    decomposition: &Decomposition,
    counts: RouteCounts,
    own: usize,
    own_place: &mut [R],
) -> (Vec<R>, Vec<u32>) {
    let RankParticles {
        ids,
        positions,
        masses,
        velocities,
    } = particles;
    let RouteCounts {
        per_chunk,
        totals,
        mut owners,
    } = counts;
    let ranks = totals.len();
    let sent: usize = totals
        .iter()
        .enumerate()
        .filter(|&(d, _)| d != own)
        .map(|(_, [o, g])| o + g)
        .sum();
    let mut outgoing: Vec<R> = bytemuck::zeroed_vec(sent);
    // The places of chunk c: [owned, ghosts] slab by slab, each after the earlier chunks'
    // travellers of that part.
    let mut places: Vec<Vec<[&mut [R]; 2]>> = per_chunk
        .iter()
        .map(|_| Vec::with_capacity(ranks))
        .collect();
    let mut rest: &mut [R] = &mut outgoing;
    let mut own_rest: &mut [R] = own_place;
    for d in 0..ranks {
        let from = if d == own { &mut own_rest } else { &mut rest };
        let mut take = |n: usize| {
            let at = n.min(from.len());
            let (place, after) = std::mem::take(&mut *from).split_at_mut(at);
            *from = after;
            place
        };
        let owned: Vec<&mut [R]> = per_chunk.iter().map(|c| take(c[d][0])).collect();
        let ghosts: Vec<&mut [R]> = per_chunk.iter().map(|c| take(c[d][1])).collect();
        for (chunk, part) in places.iter_mut().zip(owned.into_iter().zip(ghosts)) {
            chunk.push([part.0, part.1]);
        }
    }
    places
        .into_par_iter()
        .zip(ids.par_chunks(ROUTE_CHUNK))
        .zip(positions.par_chunks(ROUTE_CHUNK))
        .zip(owners.par_chunks_mut(ROUTE_CHUNK))
        .enumerate()
        .for_each(|(c, (((mut places, ids), positions), owners))| {
            let mut next = vec![[0usize; 2]; ranks];
            let mut ghosts = Vec::new();
            for (k, ((&id, p), slab)) in ids.iter().zip(positions).zip(owners).enumerate() {
                let i = c * ROUTE_CHUNK + k;
                let mass = masses.map_or(0.0, |m| m.get(i));
                let velocity = velocities
                    .flatten()
                    .and_then(|v| v.get(i))
                    .copied()
                    .unwrap_or_default();
                let owner = (*slab & !GHOSTS) as usize;
                if *slab & GHOSTS != 0 {
                    decomposition.ghost_domains(decomposition.coordinate(p), owner, &mut ghosts);
                } else {
                    ghosts.clear();
                }
                *slab = owner as u32;
                let record = R::new(id, *p, mass, velocity);
                // Part 0 of the owner's message, part 1 of each ghost slab's.
                let to = std::iter::once((owner, 0)).chain(ghosts.iter().map(|&d| (d, 1)));
                for (d, part) in to {
                    if let Some(slot) = places[d][part].get_mut(next[d][part]) {
                        *slot = record;
                    }
                    next[d][part] += 1;
                }
            }
        });
    (outgoing, owners)
}

/// How many owned particles and ghosts each rank sends this one (from this rank's counts per
/// rank).
fn exchange_part_counts(
    collective: &dyn Collective,
    send: &[[usize; 2]],
) -> Result<Vec<[usize; 2]>, FofError> {
    exchange_count_arrays(collective, send)
}

/// How many records each rank sends this one (from this rank's `send_counts` per rank).
pub(super) fn exchange_counts(
    collective: &dyn Collective,
    send_counts: &[usize],
) -> Result<Vec<usize>, FofError> {
    let send: Vec<[usize; 1]> = send_counts.iter().map(|&n| [n]).collect();
    Ok(exchange_count_arrays(collective, &send)?
        .into_iter()
        .map(|[n]| n)
        .collect())
}

/// `K` counts to each rank, and `K` from each rank back (all-to-all).
fn exchange_count_arrays<const K: usize>(
    collective: &dyn Collective,
    send: &[[usize; K]],
) -> Result<Vec<[usize; K]>, FofError> {
    let outgoing: Vec<Vec<u8>> = send
        .iter()
        .map(|counts| to_bytes(&counts.map(|n| n as u64)))
        .collect();
    collective
        .all_to_all_bytes(&outgoing)
        .iter()
        .map(|b| {
            from_bytes::<u64>(b, "particle counts for a slab").and_then(|words| {
                <[u64; K]>::try_from(words.as_slice())
                    .map(|words| words.map(|n| n as usize))
                    .map_err(|_| FofError::DomainMessage {
                        what: "particle counts for a slab",
                        len: b.len(),
                        record: 8 * K,
                    })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Solo;
    use bytemuck::Zeroable;

    fn options() -> SlabOptions {
        SlabOptions {
            uniform_mass: 1.5,
            min_members: 1,
            with_labels: true,
        }
    }

    #[test]
    fn one_rank_catalogues_its_whole_slab_with_global_smallest_ids() {
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
            options(),
            DomainLinker::Cpu,
            &Progress::none(),
        )
        .unwrap();
        assert_eq!(out.ids, vec![10, 11, 12]);
        let keys: Vec<(usize, usize)> = out.halos.iter().map(|h| (h.size, h.min_index)).collect();
        assert_eq!(keys, vec![(2, 10), (1, 11)]);
        // The uniform mass, as the masses did not travel.
        assert_eq!((out.halos[0].mass, out.halos[1].mass), (3.0, 1.5));
        assert_eq!(out.halo_ranks, Some(vec![0, 1, 0]));
        assert_eq!((out.n_interior_sets, out.n_ghosts), (2, 0));
        assert!(out.crossing.is_empty() && out.crossing_members.is_empty());
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
            options(),
            DomainLinker::Cpu,
            &Progress::none(),
        )
        .unwrap();
        assert_eq!(out.ids, vec![10, 11, 12]);
        let keys: Vec<(usize, usize)> = out.halos.iter().map(|h| (h.size, h.min_index)).collect();
        assert_eq!(keys, vec![(2, 10), (1, 12)]);
        assert_eq!((out.halos[0].mass, out.halos[1].mass), (7.0, 2.0));
        let v = out.halos[0].velocity.unwrap();
        let expected = [0.0, 6.0 / 7.0, 12.0 / 7.0];
        assert!(
            v.iter().zip(expected).all(|(a, b)| (a - b).abs() < 1e-12),
            "{v:?}"
        );
        assert_eq!(out.halos[1].velocity, Some([1.0, 0.0, 0.0]));
        assert_eq!(out.halo_ranks, Some(vec![0, 0, 1]));
    }

    #[test]
    fn slab_columns_over_many_pieces_put_the_owned_first_in_slab_order() {
        let n = 3 * SCAN_PIECE + 77;
        let slab: Vec<CarryingTraveller> = (0..n)
            .map(|k| {
                let x = k as f32;
                // The decomposition below puts x = (k mod 3) + 0.5 in slab k mod 3.
                let position = [(k % 3) as f32 + 0.5, -x, 0.5];
                CarryingTraveller::new(k as u64, position, x, [0.0, x, 1.0])
            })
            .collect();
        let decomposition = three_slabs();
        let (mine, ghosts): (Vec<&CarryingTraveller>, Vec<&CarryingTraveller>) =
            slab.iter().partition(|t| t.id % 3 == 1);
        let columns = slab_columns(&slab, &decomposition, 1, true, true);
        let ordered: Vec<&CarryingTraveller> = mine.iter().chain(&ghosts).copied().collect();
        assert_eq!(
            columns.ids,
            mine.iter().map(|t| u64::from(t.id)).collect::<Vec<_>>()
        );
        assert_eq!(
            columns.ghost_ids,
            ghosts.iter().map(|t| u64::from(t.id)).collect::<Vec<_>>()
        );
        assert_eq!(
            columns.ghost_owners,
            ghosts.iter().map(|t| t.id % 3).collect::<Vec<_>>()
        );
        assert_eq!(
            columns.positions,
            ordered.iter().map(|t| t.position).collect::<Vec<_>>()
        );
        assert_eq!(
            columns.masses,
            Some(ordered.iter().map(|t| t.mass).collect())
        );
        assert_eq!(
            columns.velocities,
            Some(ordered.iter().map(|t| t.velocity).collect())
        );
        assert_eq!(columns.id(mine.len() + 5), u64::from(ghosts[5].id));
        let columns = slab_columns(&slab, &decomposition, 1, false, false);
        assert_eq!(columns.positions.len(), n);
        assert_eq!((columns.masses, columns.velocities), (None, None));
    }

    /// Three open slabs along x, cut at 1 and 2, with ghost layers 0.1 wide.
    fn three_slabs() -> Decomposition {
        Decomposition {
            axis: 0,
            cuts: vec![1.0, 2.0],
            frame: None,
            ghost: 0.1,
        }
    }

    #[test]
    fn the_route_writes_each_slabs_owned_then_ghosts_in_input_order_the_own_slabs_in_place() {
        let decomposition = three_slabs();
        // More than one route chunk, so that chunks' places follow one another in each slab.
        let n = ROUTE_CHUNK + 500;
        let positions: Vec<[f32; 3]> = (0..n)
            .map(|i| [(i * 37 % 300) as f32 / 100.0, i as f32, 0.0])
            .collect();
        let ids: Vec<u64> = (0..n as u64).map(|i| 1000 + 3 * i).collect();
        let masses = Masses::PerParticle((0..n).map(|i| i as f32).collect());
        let particles = RankParticles {
            ids: &ids,
            positions: &positions,
            masses: Some(&masses),
            velocities: None,
        };
        let counts = count_routes(&positions, &decomposition, 3);
        assert_eq!(counts.totals.len(), 3);
        // One pass per slab: its owned particles, then its ghosts.
        let mut expected = Vec::new();
        let mut ghosts = Vec::new();
        for (slab, &[n_owned, n_ghosts]) in counts.totals.iter().enumerate() {
            let (mut owned, mut seen) = (Vec::new(), Vec::new());
            for (i, p) in positions.iter().enumerate() {
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                decomposition.ghost_domains(x, owner, &mut ghosts);
                let record = CarryingTraveller::new(ids[i], *p, i as f32, [0.0; 3]);
                if owner == slab {
                    owned.push(record);
                } else if ghosts.contains(&slab) {
                    seen.push(record);
                }
            }
            assert_eq!(
                (n_owned, n_ghosts),
                (owned.len(), seen.len()),
                "slab {slab}"
            );
            assert!(n_owned > 100 && n_ghosts > 0, "slab {slab}");
            owned.extend(seen);
            expected.push(owned);
        }
        let slabs: Vec<u32> = positions
            .iter()
            .map(|p| decomposition.owner_of(decomposition.coordinate(p)) as u32)
            .collect();
        for own in 0..3 {
            let [n_owned, n_ghosts] = counts.totals[own];
            let mut own_place = vec![CarryingTraveller::zeroed(); n_owned + n_ghosts];
            let (packed, owners) = place_routes::<CarryingTraveller>(
                particles,
                &decomposition,
                count_routes(&positions, &decomposition, 3),
                own,
                &mut own_place,
            );
            assert_eq!(own_place, expected[own], "own slab {own}");
            let others: Vec<CarryingTraveller> = (0..3)
                .filter(|&d| d != own)
                .flat_map(|d| expected[d].iter().copied())
                .collect();
            assert_eq!(packed, others, "own slab {own}");
            assert_eq!(owners, slabs);
        }
    }

    #[test]
    fn a_slab_of_messages_in_id_order_gives_the_columns_of_the_sorted_slab() {
        let decomposition = three_slabs();
        let rank = 1;
        // Three senders' messages to slab 1: owned (x in [1, 2)) then ghosts, ids increasing
        // across the senders within each part; more than one scan piece in a part.
        let record =
            |id: u64, x: f32| CarryingTraveller::new(id, [x, 0.5, 0.25], id as f32, [x; 3]);
        let mut slab = Vec::new();
        let mut parts = Vec::new();
        let mut next_owned = 0u64;
        let mut next_ghost = 10_000_000u64;
        for (owned, ghosts) in [(SCAN_PIECE + 7, 3usize), (0, 2), (50, 0)] {
            for k in 0..owned {
                slab.push(record(next_owned, 1.0 + (k % 97) as f32 / 100.0));
                next_owned += 2;
            }
            for k in 0..ghosts {
                slab.push(record(next_ghost, if k % 2 == 0 { 0.95 } else { 2.05 }));
                next_ghost += 5;
            }
            parts.push([owned, ghosts]);
        }
        let spans = SlabSpans::of(&parts);
        assert!(spans.in_id_order(&slab));
        let fast = spans.columns(&slab, &decomposition, true, true);
        let mut sorted = slab.clone();
        sorted.sort_by_key(|t| t.id);
        let slow = slab_columns(&sorted, &decomposition, rank, true, true);
        assert_eq!(fast.ids, slow.ids);
        assert_eq!(fast.ghost_ids, slow.ghost_ids);
        assert_eq!(fast.ghost_owners, slow.ghost_owners);
        assert_eq!(fast.ghost_owners, vec![0, 2, 0, 0, 2]);
        assert_eq!(fast.positions, slow.positions);
        assert_eq!(fast.masses, slow.masses);
        assert_eq!(fast.velocities, slow.velocities);
        // A later sender's owned ids below an earlier one's: not in order.
        let two = [
            record(10, 1.5),
            record(12, 1.5),
            record(4, 1.5),
            record(6, 1.5),
        ];
        assert!(!SlabSpans::of(&[[2, 0], [2, 0]]).in_id_order(&two));
        assert!(SlabSpans::of(&[[2, 0], [2, 0]]).in_id_order(&[two[2], two[3], two[0], two[1]]));
        // Counts longer than the slab are not in order either.
        assert!(!SlabSpans::of(&[[slab.len() + 1, 0]]).in_id_order(&slab));
    }
}
