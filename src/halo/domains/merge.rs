//! The merge of groups across domains, on global particle ids (the scheme of HACC's halo finder
//! and ArborX's distributed DBSCAN): each domain labels its particles with their local set's
//! smallest global id; every ghost of a set that holds an owned particle names that label to the
//! ghost's owner, which answers with an edge between the two labels; a union-find over the
//! (few) edges joins the labels, each class to its smallest. The result is the smallest global
//! id of every global friends-of-friends set: the same set ids as one process's linker.
//!
//! What crosses between domains ([`GhostPair`], [`LabelEdge`]) is plain data with a byte form,
//! so the in-process driver and MPI ranks run the same code.

use crate::cluster::split_parts_mut;
use crate::halo::error::FofError;
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A ghost particle and the label of its set in the domain that saw it as a ghost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct GhostPair {
    /// Global id of the ghost particle.
    pub id: u64,
    /// Smallest global id of its set in the seeing domain.
    pub label: u64,
}

/// Two labels of one global set (smaller first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct LabelEdge {
    /// The smaller label.
    pub low: u64,
    /// The larger label.
    pub high: u64,
}

/// What local friends-of-friends leaves in one domain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DomainLabels {
    /// Global ids of the owned particles, increasing.
    pub owned_ids: Vec<u64>,
    /// Per owned particle: the smallest global id of its local set (ghosts included).
    pub owned_labels: Vec<u64>,
    /// Per ghost in a local set that also holds an owned particle: the pair, and the ghost's
    /// owner domain.
    pub ghosts: Vec<(usize, GhostPair)>,
}

/// Labels one domain from its local set ids: `global_ids` (increasing), `owned` flags,
/// `owners` of the ghosts (the owning domain, read only where `owned` is false), and
/// `set_ids` from a linker run on these particles alone (each `< global_ids.len()`).
pub fn label_domain(
    global_ids: &[u64],
    owned: &[bool],
    owners: impl Fn(usize) -> usize + Sync,
    set_ids: &[u32],
) -> DomainLabels {
    let n = global_ids.len();
    let smallest: Vec<AtomicU64> = (0..n)
        .into_par_iter()
        .map(|_| AtomicU64::new(u64::MAX))
        .collect();
    let has_owned: Vec<AtomicBool> = (0..n)
        .into_par_iter()
        .map(|_| AtomicBool::new(false))
        .collect();
    // A locked update on every particle's set was the cost here (a set's members are spread
    // over the whole domain, so these are scattered read-modify-writes): each task walks its
    // ids upwards, so after a set's first member in the task a plain load finds its id
    // smaller and no update is needed; likewise for the flag, set once per set.
    global_ids
        .par_iter()
        .zip(set_ids)
        .zip(owned)
        .with_min_len(SCAN_PIECE)
        .for_each(|((&id, &set), &own)| {
            let slot = &smallest[set as usize];
            if slot.load(Ordering::Relaxed) > id {
                slot.fetch_min(id, Ordering::Relaxed);
            }
            let flag = &has_owned[set as usize];
            if own && !flag.load(Ordering::Relaxed) {
                flag.store(true, Ordering::Relaxed);
            }
        });
    let label = |k: usize| smallest[set_ids[k] as usize].load(Ordering::Relaxed);
    // The owned particles in one pass: their places come from a count per piece.
    let counts: Vec<usize> = owned
        .par_chunks(SCAN_PIECE)
        .map(|p| p.iter().filter(|&&o| o).count())
        .collect();
    let n_owned: usize = counts.iter().sum();
    let mut owned_ids = vec![0u64; n_owned];
    let mut owned_labels = vec![0u64; n_owned];
    let mut id_places = split_parts_mut(&mut owned_ids, &counts);
    let mut label_places = split_parts_mut(&mut owned_labels, &counts);
    id_places
        .par_iter_mut()
        .zip(label_places.par_iter_mut())
        .enumerate()
        .for_each(|(piece, (ids, labels))| {
            let first = piece * SCAN_PIECE;
            let mut at = 0;
            for (k, &own) in owned.iter().enumerate().skip(first).take(SCAN_PIECE) {
                if own {
                    ids[at] = global_ids[k];
                    labels[at] = label(k);
                    at += 1;
                }
            }
        });
    drop((id_places, label_places));
    DomainLabels {
        owned_ids,
        owned_labels,
        ghosts: (0..n)
            .into_par_iter()
            .filter(|&k| !owned[k] && has_owned[set_ids[k] as usize].load(Ordering::Relaxed))
            .map(|k| {
                (
                    owners(k),
                    GhostPair {
                        id: global_ids[k],
                        label: label(k),
                    },
                )
            })
            .collect(),
    }
}

/// The merge's view of one slab from the members of its sets with a ghost (`boundary`: local
/// index and set, by increasing index, the slab's `n_owned` owned particles first in
/// increasing global id), `ids` their global ids and `owners(j)` the domain that owns ghost
/// member `j`.
pub(super) fn boundary_labels(
    n_owned: usize,
    boundary: &[(u32, u32)],
    ids: &[u64],
    owners: impl Fn(usize) -> usize + Sync,
) -> DomainLabels {
    let owned: Vec<bool> = boundary
        .iter()
        .map(|&(k, _)| (k as usize) < n_owned)
        .collect();
    let mut sets: Vec<u32> = boundary.iter().map(|&(_, s)| s).collect();
    sets.par_sort_unstable();
    sets.dedup();
    // Dense set ids below the member count, as label_domain indexes its tables by them.
    let dense: Vec<u32> = boundary
        .iter()
        .map(|&(_, s)| sets.binary_search(&s).unwrap_or(0) as u32)
        .collect();
    label_domain(ids, &owned, owners, &dense)
}

/// Particles per task in the passes over a whole domain.
pub(crate) const SCAN_PIECE: usize = 1 << 16;

/// At a ghost's owner: one edge per received pair whose label differs from the owner's own
/// label of that particle. `incoming` pairs must name particles this domain owns.
pub fn owner_edges(
    labels: &DomainLabels,
    incoming: &[GhostPair],
) -> Result<Vec<LabelEdge>, FofError> {
    let mut edges = Vec::new();
    for pair in incoming {
        let k = labels
            .owned_ids
            .binary_search(&pair.id)
            .map_err(|_| FofError::DomainMerge {
                id: pair.id,
                rule: "a ghost named to its owner domain is not among the particles it owns",
            })?;
        let own = labels.owned_labels[k];
        if own != pair.label {
            edges.push(LabelEdge {
                low: own.min(pair.label),
                high: own.max(pair.label),
            });
        }
    }
    Ok(edges)
}

/// Every label met in an edge, mapped to the smallest label of its class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelMap {
    root: HashMap<u64, u64>,
    /// One bit per label up to the largest key: set where `root` has the label, so that the
    /// many labels that were never joined skip the hash lookup.
    marks: Vec<u64>,
}

impl LabelMap {
    /// The classes of `edges` (from every domain), each to its smallest label.
    pub fn from_edges(edges: &[LabelEdge]) -> Self {
        let mut parent: HashMap<u64, u64> = HashMap::with_capacity(2 * edges.len());
        fn find(parent: &mut HashMap<u64, u64>, x: u64) -> u64 {
            let mut root = x;
            while let Some(&p) = parent.get(&root) {
                if p == root {
                    break;
                }
                root = p;
            }
            // Path compression: point every node on the way at the root.
            let mut y = x;
            while let Some(&p) = parent.get(&y) {
                if p == root {
                    break;
                }
                parent.insert(y, root);
                y = p;
            }
            root
        }
        for e in edges {
            parent.entry(e.low).or_insert(e.low);
            parent.entry(e.high).or_insert(e.high);
            let (a, b) = (find(&mut parent, e.low), find(&mut parent, e.high));
            if a != b {
                parent.insert(a.max(b), a.min(b));
            }
        }
        let keys: Vec<u64> = parent.keys().copied().collect();
        let root: HashMap<u64, u64> = keys
            .into_iter()
            .map(|k| (k, find(&mut parent, k)))
            .collect();
        let words = root.keys().max().map_or(0, |&max| (max / 64 + 1) as usize);
        let mut marks = vec![0u64; words];
        for &k in root.keys() {
            marks[(k / 64) as usize] |= 1 << (k % 64);
        }
        Self { root, marks }
    }

    /// The final label of a local label.
    pub fn resolve(&self, label: u64) -> u64 {
        let marked = self
            .marks
            .get((label / 64) as usize)
            .is_some_and(|word| word & (1 << (label % 64)) != 0);
        if marked {
            self.root.get(&label).copied().unwrap_or(label)
        } else {
            label
        }
    }

    /// Number of labels that were joined with another.
    pub fn len(&self) -> usize {
        self.root.len()
    }

    /// Whether no label was joined.
    pub fn is_empty(&self) -> bool {
        self.root.is_empty()
    }
}

/// The byte form of a slice of plain records (native byte order: every rank of one job runs
/// the same build on the same kind of host).
pub fn to_bytes<T: bytemuck::Pod>(records: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(records).to_vec()
}

/// Records back from [`to_bytes`]; `what` names the message in the error.
pub fn from_bytes<T: bytemuck::Pod>(bytes: &[u8], what: &'static str) -> Result<Vec<T>, FofError> {
    let size = std::mem::size_of::<T>();
    if !bytes.len().is_multiple_of(size) {
        return Err(FofError::DomainMessage {
            what,
            len: bytes.len(),
            record: size,
        });
    }
    Ok(bytemuck::pod_collect_to_vec(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_of_edges_resolve_to_the_smallest_label() {
        let edges = [
            LabelEdge { low: 7, high: 9 },
            LabelEdge { low: 3, high: 9 },
            LabelEdge { low: 11, high: 12 },
        ];
        let map = LabelMap::from_edges(&edges);
        assert_eq!(
            [7, 9, 3, 11, 12, 5].map(|l| map.resolve(l)),
            [3, 3, 3, 11, 11, 5]
        );
    }

    #[test]
    fn ghosts_of_owned_sets_name_their_owner() {
        // Local sets: {10 own, 20 ghost}, {30 ghost, 40 ghost}, {50 own}.
        let ids = [10, 20, 30, 40, 50];
        let owned = [true, false, false, false, true];
        let labels = label_domain(&ids, &owned, |k| k + 100, &[0, 0, 2, 2, 4]);
        assert_eq!(labels.owned_ids, vec![10, 50]);
        assert_eq!(labels.owned_labels, vec![10, 50]);
        assert_eq!(labels.ghosts, vec![(101, GhostPair { id: 20, label: 10 })]);
        let other = DomainLabels {
            owned_ids: vec![20],
            owned_labels: vec![15],
            ghosts: Vec::new(),
        };
        let edges = owner_edges(&other, &[GhostPair { id: 20, label: 10 }]).unwrap();
        assert_eq!(edges, vec![LabelEdge { low: 10, high: 15 }]);
        assert!(owner_edges(&other, &[GhostPair { id: 21, label: 1 }]).is_err());
    }

    #[test]
    fn labels_over_many_pieces_are_each_sets_smallest_id() {
        // Sets spread over the whole domain (as a slab's are), several pieces of the passes.
        let n = 5 * SCAN_PIECE + 123;
        let ids: Vec<u64> = (0..n as u64).map(|k| 7 + 3 * k).collect();
        // A set's members share k mod 997 and k mod 3, so sets mix owned and not owned ones.
        let set_ids: Vec<u32> = (0..n)
            .map(|k| ((k * 7919) % 997 + (k % 3) * 1000) as u32)
            .collect();
        let owned: Vec<bool> = (0..n).map(|k| k % 5 != 0 && k % 3 != 2).collect();
        let labels = label_domain(&ids, &owned, |k| k % 4, &set_ids);
        let mut smallest = vec![u64::MAX; n];
        let mut has_owned = vec![false; n];
        for k in 0..n {
            let s = set_ids[k] as usize;
            smallest[s] = smallest[s].min(ids[k]);
            has_owned[s] |= owned[k];
        }
        let expected_owned: Vec<usize> = (0..n).filter(|&k| owned[k]).collect();
        assert_eq!(
            labels.owned_ids,
            expected_owned.iter().map(|&k| ids[k]).collect::<Vec<_>>()
        );
        let expected_labels: Vec<u64> = expected_owned
            .iter()
            .map(|&k| smallest[set_ids[k] as usize])
            .collect();
        assert_eq!(labels.owned_labels, expected_labels);
        let expected_ghosts: Vec<(usize, GhostPair)> = (0..n)
            .filter(|&k| !owned[k] && has_owned[set_ids[k] as usize])
            .map(|k| {
                let label = smallest[set_ids[k] as usize];
                (k % 4, GhostPair { id: ids[k], label })
            })
            .collect();
        assert!(!expected_ghosts.is_empty());
        assert_eq!(labels.ghosts, expected_ghosts);
    }

    #[test]
    fn bytes_round_trip_and_odd_lengths_are_refused() {
        let pairs = [GhostPair { id: 1, label: 2 }, GhostPair { id: 3, label: 0 }];
        let bytes = to_bytes(&pairs);
        assert_eq!(from_bytes::<GhostPair>(&bytes, "ghosts").unwrap(), pairs);
        assert!(from_bytes::<GhostPair>(&bytes[..15], "ghosts").is_err());
    }
}
