//! The catalogue of friends-of-friends over ranks, as `catalogue.rs` builds it over devices:
//! each rank builds the halos of the sets wholly inside its slab from its owned particles (in
//! increasing global id, so every halo's sums run in one process's member order), the members
//! of the few sets that cross slabs go to rank 0, which builds their halos in member order,
//! and rank 0 orders all halos. Every halo is summed exactly as one process's CPU catalogue
//! sums it, so the catalogue is bit for bit one process's.

use super::catalogue::lap;
use super::merge::{from_bytes, to_bytes};
use super::ranks::{RankLabels, agree};
use crate::cluster::Collective;
use crate::data::Masses;
use crate::halo::catalogue::{GroupKey, Halo, build_from_partition, halo_of, partition};
use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use rayon::prelude::*;
use std::collections::HashMap;
use std::time::Instant;

/// A member of a set that crosses slabs, on its way to rank 0.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Member {
    id: u64,
    label: u64,
    position: [f32; 3],
    mass: f32,
    velocity: [f32; 3],
    _pad: u32,
}

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
    /// This rank's wall time per step: `slab_sets` (the sets inside its slab numbered),
    /// `catalogue` (their halos), `crossing` (the sets across slabs on rank 0), `order` (the
    /// halos ordered, and the labels).
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// The catalogue of the sets `linked` found; collective. `masses` and `velocities` are those
/// of the owned particles (`linked.ids` order; `velocities` given on every rank or on none),
/// `labels` asks for every owned particle's halo index.
pub fn catalogue_on_ranks(
    collective: &dyn Collective,
    linked: &RankLabels,
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    frame: Option<BoxFrame>,
    min_members: usize,
    labels: bool,
) -> Result<RankCatalogue, FofError> {
    let mut clock = Instant::now();
    let mut stages = Vec::new();
    let ids = &linked.ids;
    let n_owned = ids.len();
    let crossing = |label: u64| linked.crossing.binary_search(&label).is_ok();
    let interior: Vec<u32> = (0..n_owned)
        .into_par_iter()
        .filter(|&k| !crossing(linked.labels[k]))
        .map(|k| k as u32)
        .collect();
    // Interior index of a global id (u32::MAX: not an interior particle), from a table over
    // the owned ids' span when that is at most four times their count (one read a lookup
    // instead of a bisection's ~28 scattered ones), else over the owned particles after a
    // bisection of the ids.
    let first_id = ids.first().copied().unwrap_or(0);
    let span = ids.last().map_or(0, |&last| (last - first_id) as usize + 1);
    let dense = span <= 4 * n_owned && span <= u32::MAX as usize;
    let keys: Vec<u32> = if dense {
        interior
            .par_iter()
            .map(|&k| (ids[k as usize] - first_id) as u32)
            .collect()
    } else {
        interior.clone()
    };
    // Filled on every thread: the table is up to four words per owned particle.
    let mut compact: Vec<u32> = (0..if dense { span } else { n_owned })
        .into_par_iter()
        .map(|_| u32::MAX)
        .collect();
    scatter_sorted(&mut compact, &keys, |c| Some(c as u32));
    drop(keys);
    let interior_of = |label: u64| -> Option<u32> {
        let at = if dense {
            label.checked_sub(first_id).map(|offset| offset as usize)
        } else {
            ids.binary_search(&label).ok()
        };
        at.and_then(|at| compact.get(at))
            .copied()
            .filter(|&c| c != u32::MAX)
    };
    // A set wholly on this rank has its label (its smallest global id) among the owned ids.
    let set_ids = interior
        .par_iter()
        .map(|&k| {
            interior_of(linked.labels[k as usize]).ok_or(FofError::DomainMerge {
                id: ids[k as usize],
                rule: "the label of a set inside one slab is not among its particles",
            })
        })
        .collect::<Result<Vec<u32>, _>>();
    let set_ids = agree(collective, "labelling its slab's sets", set_ids)?;
    drop(compact);
    stages.push(("slab_sets", lap(&mut clock)));
    let positions: Vec<[f32; 3]> = interior
        .par_iter()
        .map(|&k| linked.positions[k as usize])
        .collect();
    let interior_masses = match masses {
        Masses::Uniform(m) => Masses::Uniform(*m),
        Masses::PerParticle(_) => Masses::PerParticle(
            interior
                .par_iter()
                .map(|&k| masses.get(k as usize))
                .collect(),
        ),
    };
    let interior_velocities: Option<Vec<[f32; 3]>> =
        velocities.map(|v| interior.par_iter().map(|&k| v[k as usize]).collect());
    let parts = partition(&set_ids, min_members);
    drop(set_ids);
    let mut sets = [parts.n_sets_all_sizes as u64];
    let own = build_from_partition(
        parts,
        &positions,
        &interior_masses,
        interior_velocities.as_deref(),
        frame,
    );
    drop((positions, interior_masses, interior_velocities));
    let mut halos = own.halos;
    for h in &mut halos {
        h.min_index = ids[interior[h.min_index] as usize] as usize;
    }
    stages.push(("catalogue", lap(&mut clock)));

    // The sets across slabs: their members to rank 0, which sums each in global id order.
    let members: Vec<Member> = (0..n_owned)
        .into_par_iter()
        .filter(|&k| crossing(linked.labels[k]))
        .map(|k| Member {
            id: ids[k],
            label: linked.labels[k],
            position: linked.positions[k],
            mass: masses.get(k),
            velocity: velocities.map_or([0.0; 3], |v| v[k]),
            _pad: 0,
        })
        .collect();
    let gathered = collective.gather_bytes(0, &to_bytes(&members));
    drop(members);
    let crossing_halos = if collective.is_root() {
        gathered
            .iter()
            .map(|b| from_bytes::<Member>(b, "members of sets across slabs"))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|parts| {
                crossing_halos(parts.concat(), velocities.is_some(), frame, min_members)
            })
    } else {
        Ok(Vec::new())
    };
    let crossing_halos = agree(collective, "building the sets across slabs", crossing_halos)?;
    stages.push(("crossing", lap(&mut clock)));

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
        let own_labels = own.labels.unwrap_or_default();
        let mut out: Vec<i32> = linked
            .labels
            .par_iter()
            .map(|&label| if crossing(label) { index(label) } else { -1 })
            .collect();
        scatter_sorted(&mut out, &interior, |c| {
            own_labels
                .get(c)
                .and_then(|&l| usize::try_from(l).ok())
                .and_then(|l| own_index.get(l))
                .copied()
        });
        Some(out)
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
                    .map(|r| r.halo(velocities.is_some()))
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

/// `into[keys[j]] = value(j)` where `value` gives one, for increasing `keys`, on every thread:
/// each piece of `into` takes the keys that fall in it (found by bisection), so no two
/// threads write one place.
fn scatter_sorted<T: Send>(
    into: &mut [T],
    keys: &[u32],
    value: impl Fn(usize) -> Option<T> + Sync,
) {
    const PIECE: usize = 1 << 16;
    into.par_chunks_mut(PIECE)
        .enumerate()
        .for_each(|(piece, chunk)| {
            let first = piece * PIECE;
            let from = keys.partition_point(|&k| (k as usize) < first);
            let to = keys.partition_point(|&k| (k as usize) < first + chunk.len());
            for (j, &k) in keys.iter().enumerate().take(to).skip(from) {
                if let Some(v) = value(j)
                    && let Some(slot) = chunk.get_mut(k as usize - first)
                {
                    *slot = v;
                }
            }
        });
}

/// Keys as pairs of u32 words (size, smallest member).
fn keys_words(keys: &[GroupKey]) -> Vec<[u32; 2]> {
    keys.iter().map(|g| [g.size, g.min_index]).collect()
}

/// Rank 0: the halos of the sets across slabs from all their members (any order), each summed
/// over its members in increasing id, and with its smallest member as `min_index`.
fn crossing_halos(
    mut members: Vec<Member>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_sorted_writes_each_key_once_across_pieces() {
        let n = 200_000;
        let keys: Vec<u32> = (0..n as u32)
            .filter(|k| k % 7 == 3 || k % 65536 == 0)
            .collect();
        let mut into = vec![-1i64; n];
        scatter_sorted(&mut into, &keys, |j| (j % 5 != 0).then_some(j as i64));
        let mut expected = vec![-1i64; n];
        for (j, &k) in keys.iter().enumerate() {
            if j % 5 != 0 {
                expected[k as usize] = j as i64;
            }
        }
        assert_eq!(into, expected);
    }
}
