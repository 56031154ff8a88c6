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
    GhostPair, LabelEdge, LabelMap, from_bytes, label_domain, owner_edges, to_bytes,
};
use crate::cluster::Collective;
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
    /// Per particle given to [`link_on_ranks`] (in its order): the rank whose slab owns it.
    pub owners: Vec<u32>,
    /// Final labels of the sets with members on more than one rank, increasing; the same list
    /// on every rank. A set that spans slabs holds, on some slab, an owned member linked to a
    /// ghost (the ghost margin is the linking length), so these are the resolved labels of the
    /// ghosts every rank named to their owners.
    pub crossing: Vec<u64>,
    /// Ghost copies this rank's slab linked.
    pub n_ghosts: usize,
    /// This rank's wall time per step: `route` (decomposition and the particles sorted by
    /// slab), `exchange` (the all-to-all and the slab in id order), `link` (its slab),
    /// `merge` (labels, ghost pairs and label edges).
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

/// Links the particles of every rank (`ids` their global ids, `positions` theirs) over one slab
/// per rank and merges across slabs; collective.
pub fn link_on_ranks(
    collective: &dyn Collective,
    ids: &[u64],
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    linker: DomainLinker<'_>,
    progress: &Progress,
) -> Result<RankLabels, FofError> {
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

    // Each slab's travellers as bytes from the start (the message `to_bytes` would make of
    // them), so the particles are not copied once more before they leave; chunks of the input
    // in parallel, each slab's parts then joined in chunk order (so each message stays in
    // input order, which is increasing id order).
    let routed: Vec<(Vec<Vec<u8>>, Vec<u32>)> = ids
        .par_chunks(ROUTE_CHUNK)
        .zip(positions.par_chunks(ROUTE_CHUNK))
        .map(|(ids, positions)| {
            let mut outgoing: Vec<Vec<u8>> = vec![Vec::new(); ranks];
            let mut owners = Vec::with_capacity(ids.len());
            let mut ghosts = Vec::new();
            for (&id, p) in ids.iter().zip(positions) {
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                owners.push(owner as u32);
                decomposition.ghost_domains(x, owner, &mut ghosts);
                let traveller = Traveller {
                    id,
                    owner: owner as u32,
                    position: *p,
                };
                let bytes = bytemuck::bytes_of(&traveller);
                outgoing[owner].extend_from_slice(bytes);
                for &d in &ghosts {
                    outgoing[d].extend_from_slice(bytes);
                }
            }
            (outgoing, owners)
        })
        .collect();
    let outgoing: Vec<Vec<u8>> = (0..ranks)
        .into_par_iter()
        .map(|d| {
            let mut all = Vec::with_capacity(routed.iter().map(|(o, _)| o[d].len()).sum());
            for (parts, _) in &routed {
                all.extend_from_slice(&parts[d]);
            }
            all
        })
        .collect();
    let mut owners = Vec::with_capacity(ids.len());
    for (_, part) in &routed {
        owners.extend_from_slice(part);
    }
    drop(routed);
    stages.push(("route", lap(&mut clock)));
    let incoming = collective.all_to_all_bytes(&outgoing);
    drop(outgoing);
    let received = travellers(&incoming);
    drop(incoming);
    let mut slab = agree(collective, "particles for a slab", received)?;
    slab.dedup_by_key(|t| t.id);
    stages.push(("exchange", lap(&mut clock)));

    let local: Vec<[f32; 3]> = slab.iter().map(|t| t.position).collect();
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
    let slab_ids: Vec<u64> = slab.iter().map(|t| t.id).collect();
    let owned: Vec<bool> = slab.iter().map(|t| t.owner as usize == rank).collect();
    let labels = label_domain(&slab_ids, &owned, |k| slab[k].owner as usize, &set_ids);
    let n_ghosts = slab.len() - labels.owned_ids.len();
    let owned_positions: Vec<[f32; 3]> = slab
        .par_iter()
        .filter(|t| t.owner as usize == rank)
        .map(|t| t.position)
        .collect();
    drop(slab);

    let mut pairs: Vec<Vec<GhostPair>> = vec![Vec::new(); ranks];
    for &(owner, pair) in &labels.ghosts {
        pairs[owner].push(pair);
    }
    let bytes: Vec<Vec<u8>> = pairs.iter().map(|p| to_bytes(p)).collect();
    let incoming = collective.all_to_all_bytes(&bytes);
    let edges = incoming
        .iter()
        .map(|b| from_bytes::<GhostPair>(b, "ghost pairs"))
        .collect::<Result<Vec<_>, _>>()
        .and_then(|parts| owner_edges(&labels, &parts.concat()));
    let edges = agree(collective, "ghost pairs", edges)?;
    let all_edges = collective
        .all_gather_bytes(&to_bytes(&edges))
        .iter()
        .map(|b| from_bytes::<LabelEdge>(b, "label edges"))
        .collect::<Result<Vec<_>, _>>()
        .map(|parts| parts.concat());
    let all_edges = agree(collective, "label edges", all_edges)?;
    let map = LabelMap::from_edges(&all_edges);
    let resolved = labels
        .owned_labels
        .iter()
        .map(|&l| map.resolve(l))
        .collect();
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
    stages.push(("merge", lap(&mut clock)));
    Ok(RankLabels {
        labels: resolved,
        ids: labels.owned_ids,
        positions: owned_positions,
        owners,
        crossing,
        n_ghosts,
        stage_seconds: stages,
    })
}

/// The travellers of every rank's message in id order (each message is in id order, and the
/// ranks' parts are joined, then sorted in parallel, without an intermediate copy per rank).
fn travellers(incoming: &[Vec<u8>]) -> Result<Vec<Traveller>, FofError> {
    let size = std::mem::size_of::<Traveller>();
    let mut all = Vec::with_capacity(incoming.iter().map(|b| b.len() / size).sum());
    for bytes in incoming {
        if !bytes.len().is_multiple_of(size) {
            return Err(FofError::DomainMessage {
                what: "particles for a slab",
                len: bytes.len(),
                record: size,
            });
        }
        all.extend(
            bytes
                .chunks_exact(size)
                .map(bytemuck::pod_read_unaligned::<Traveller>),
        );
    }
    all.par_sort_unstable_by_key(|t| t.id);
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Solo;

    #[test]
    fn one_rank_labels_every_particle_with_its_sets_smallest_id() {
        let positions = [[0.0f32, 0.0, 0.0], [5.0, 5.0, 5.0], [0.5, 0.0, 0.0]];
        let ids = [10, 11, 12];
        let out = link_on_ranks(
            &Solo,
            &ids,
            &positions,
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
        assert_eq!(out.owners, vec![0, 0, 0]);
        assert!(out.crossing.is_empty());
    }
}
