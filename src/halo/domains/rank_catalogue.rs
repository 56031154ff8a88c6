//! The catalogue of friends-of-friends over ranks, as `catalogue.rs` builds it over devices:
//! each rank's slab catalogue (`ranks.rs`, on the rank's device or the CPU) holds the halos of
//! the sets wholly inside its slab, the members of the few sets that cross slabs go to rank 0,
//! which builds their halos in global member order, and rank 0 orders all halos. On the CPU
//! every halo is summed in one process's member order, so the catalogue is bit for bit one
//! process's; on CUDA the interior halos are the device catalogue's (within its tolerance).

use super::catalogue::lap;
use super::merge::{from_bytes, to_bytes};
use super::ranks::{CrossingMember, RankLabels, agree};
use crate::cluster::Collective;
use crate::data::Masses;
use crate::halo::catalogue::{GroupKey, Halo, halo_of};
use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use rayon::prelude::*;
use std::collections::HashMap;
use std::time::Instant;

/// A halo as bytes (the velocity's presence is the run's, the same on every rank).
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct HaloRecord {
    size: u64,
    min_index: u64,
    mass: f64,
    com: [f64; 3],
    velocity: [f64; 3],
    radius_max: f64,
    radius_rms: f64,
}

impl HaloRecord {
    fn of(h: &Halo) -> Self {
        Self {
            size: h.size as u64,
            min_index: h.min_index as u64,
            mass: h.mass,
            com: h.com,
            velocity: h.velocity.unwrap_or([0.0; 3]),
            radius_max: h.radius_max,
            radius_rms: h.radius_rms,
        }
    }

    fn halo(&self, velocities: bool) -> Halo {
        Halo {
            size: self.size as usize,
            min_index: self.min_index as usize,
            mass: self.mass,
            com: self.com,
            velocity: velocities.then_some(self.velocity),
            radius_max: self.radius_max,
            radius_rms: self.radius_rms,
        }
    }
}

/// What [`catalogue_on_ranks`] leaves on each rank.
#[derive(Debug, Clone, PartialEq)]
pub struct RankCatalogue {
    /// On rank 0 the halos of the whole selection in catalogue order (size descending, then
    /// smallest member); empty elsewhere.
    pub halos: Vec<Halo>,
    /// Sets of every size over all ranks (singletons included).
    pub n_sets_all_sizes: usize,
    /// Per owned particle (in `RankLabels::ids` order), when asked for: its halo's index in
    /// the catalogue, or −1.
    pub labels: Option<Vec<i32>>,
    /// This rank's wall time per step: `crossing` (the sets across slabs on rank 0),
    /// `order` (the halos ordered, and the labels).
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// The catalogue of the sets `linked` found; collective. `velocities` says whether the
/// halos have them (the same on every rank), `labels` asks for every owned particle's halo
/// index.
pub fn catalogue_on_ranks(
    collective: &dyn Collective,
    linked: &RankLabels,
    velocities: bool,
    frame: Option<BoxFrame>,
    min_members: usize,
    labels: bool,
) -> Result<RankCatalogue, FofError> {
    let mut clock = Instant::now();
    let mut stages = Vec::new();
    let halos = &linked.halos;
    // The sets across slabs: their members to rank 0, which sums each in global id order.
    let gathered = collective.gather_bytes(0, &to_bytes(&linked.crossing_members));
    let crossing_halos = if collective.is_root() {
        gathered
            .iter()
            .map(|b| from_bytes::<CrossingMember>(b, "members of sets across slabs"))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|parts| crossing_halos(parts.concat(), velocities, frame, min_members))
    } else {
        Ok(Vec::new())
    };
    let crossing_halos = agree(collective, "building the sets across slabs", crossing_halos)?;
    stages.push(("crossing", lap(&mut clock)));

    let mut sets = [linked.n_interior_sets as u64];
    collective.sum_u64(&mut sets);
    let n_sets_all_sizes = sets[0] as usize + linked.crossing.len();
    let label_of = if labels {
        // Every rank orders every kept set's key to find its halos' indices.
        let mut keys: Vec<GroupKey> = halos
            .iter()
            .chain(&crossing_halos)
            .map(|h| GroupKey {
                size: h.size as u32,
                min_index: h.min_index as u32,
            })
            .collect();
        let all = collective
            .all_gather_bytes(bytemuck::cast_slice(&keys_words(&keys)))
            .iter()
            .map(|b| from_bytes::<[u32; 2]>(b, "halo keys"))
            .collect::<Result<Vec<_>, _>>();
        let all = agree(collective, "ordering the halos", all)?;
        keys = all
            .concat()
            .into_iter()
            .map(|[size, min_index]| GroupKey { size, min_index })
            .collect();
        crate::halo::catalogue::order_groups(&mut keys);
        let mut by_smallest: Vec<(u64, i32)> = keys
            .iter()
            .enumerate()
            .map(|(rank, g)| (u64::from(g.min_index), rank as i32))
            .collect();
        by_smallest.par_sort_unstable();
        let index = |smallest: u64| {
            by_smallest
                .binary_search_by_key(&smallest, |&(s, _)| s)
                .map_or(-1, |at| by_smallest[at].1)
        };
        let own_index: Vec<i32> = halos.iter().map(|h| index(h.min_index as u64)).collect();
        let n_owned = linked.ids.len();
        let out = match &linked.halo_ranks {
            Some(ranks) if ranks.len() == n_owned => {
                let mut out: Vec<i32> = ranks
                    .par_iter()
                    .map(|&l| {
                        usize::try_from(l)
                            .ok()
                            .and_then(|l| own_index.get(l))
                            .copied()
                            .unwrap_or(-1)
                    })
                    .collect();
                for m in &linked.crossing_members {
                    if let Some(slot) = out.get_mut(m.local as usize) {
                        *slot = index(m.label);
                    }
                }
                Ok(out)
            }
            other => Err(FofError::LengthMismatch {
                what: "the slab's halo labels",
                expected: n_owned,
                got: other.as_ref().map_or(0, Vec::len),
            }),
        };
        Some(agree(collective, "labelling the owned particles", out)?)
    } else {
        None
    };

    let gathered = collective.gather_bytes(
        0,
        &to_bytes(&halos.iter().map(HaloRecord::of).collect::<Vec<_>>()),
    );
    let all = if collective.is_root() {
        gathered
            .iter()
            .map(|b| from_bytes::<HaloRecord>(b, "halos"))
            .collect::<Result<Vec<_>, _>>()
            .map(|parts| {
                let mut all: Vec<Halo> = parts
                    .concat()
                    .iter()
                    .map(|r| r.halo(velocities))
                    .chain(crossing_halos)
                    .collect();
                all.par_sort_unstable_by_key(|h| (std::cmp::Reverse(h.size), h.min_index));
                all
            })
    } else {
        Ok(Vec::new())
    };
    let halos = agree(collective, "gathering the halos", all)?;
    stages.push(("order", lap(&mut clock)));
    Ok(RankCatalogue {
        halos,
        n_sets_all_sizes,
        labels: label_of,
        stage_seconds: stages,
    })
}

/// Keys as pairs of u32 words (size, smallest member).
fn keys_words(keys: &[GroupKey]) -> Vec<[u32; 2]> {
    keys.iter().map(|g| [g.size, g.min_index]).collect()
}

/// Rank 0: the halos of the sets across slabs from all their members (any order), each summed
/// over its members in increasing id, and with its smallest member as `min_index`.
fn crossing_halos(
    mut members: Vec<CrossingMember>,
    velocities: bool,
    frame: Option<BoxFrame>,
    min_members: usize,
) -> Result<Vec<Halo>, FofError> {
    members.par_sort_unstable_by_key(|m| m.id);
    let mut sets: HashMap<u64, Vec<u32>> = HashMap::new();
    for (k, m) in members.iter().enumerate() {
        sets.entry(m.label).or_default().push(k as u32);
    }
    let positions: Vec<[f32; 3]> = members.iter().map(|m| m.position).collect();
    let masses = Masses::PerParticle(members.iter().map(|m| m.mass).collect());
    let velocity: Option<Vec<[f32; 3]>> =
        velocities.then(|| members.iter().map(|m| m.velocity).collect());
    let kept: Vec<(u64, Vec<u32>)> = sets
        .into_iter()
        .filter(|(_, list)| list.len() >= min_members.max(1))
        .collect();
    kept.par_iter()
        .map(|(label, list)| {
            let first = list[0];
            if members[first as usize].id != *label {
                return Err(FofError::DomainMerge {
                    id: *label,
                    rule: "a set across slabs is not labelled with its smallest member",
                });
            }
            let group = GroupKey {
                size: list.len() as u32,
                min_index: first,
            };
            let mut halo = halo_of(
                &group,
                list,
                &positions,
                &masses,
                velocity.as_deref(),
                frame,
            );
            halo.min_index = *label as usize;
            Ok(halo)
        })
        .collect()
}
