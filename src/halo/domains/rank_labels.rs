//! The final labels of friends-of-friends over ranks, back on the ranks that read their
//! particles. A slab holds its owned particles' labels in increasing global id; a rank read
//! runs of consecutive ids (its share of each species). Every slab sends each reader the
//! labels of the particles that reader read, in its order, so that each rank can write its own
//! ranges of the labels file (`halo::export_ranks`) and no rank gathers every label: four bytes
//! a particle travel, not the (id, label) pairs rank 0 joined before.

use super::merge::{from_bytes, to_bytes};
use super::ranks::{agree, exchange_counts};
use crate::cluster::{Collective, all_to_all_items, split_parts_mut, zeroed_on_every_thread};
use crate::halo::error::FofError;
use rayon::prelude::*;

/// Input particles per task when placing the labels that came back.
const PLACE_CHUNK: usize = 1 << 20;

/// The labels of this rank's input particles (`input_ids`, increasing, owned by the slabs
/// `input_owners`), from every slab's owned particles (`owned_ids`, increasing, and their
/// `owned_labels`); collective.
pub fn labels_to_readers(
    collective: &dyn Collective,
    input_ids: &[u64],
    input_owners: &[u32],
    owned_ids: &[u64],
    owned_labels: &[i32],
) -> Result<Vec<i32>, FofError> {
    let ranks = collective.size();
    let runs = id_runs(input_ids).ok_or(FofError::DomainMerge {
        id: input_ids.first().copied().unwrap_or(0),
        rule: "a rank's particle ids do not increase",
    });
    let runs = agree(collective, "labels back to their readers", runs)?;
    let every_run = collective
        .all_gather_bytes(&to_bytes(&runs))
        .iter()
        .map(|b| from_bytes::<[u64; 2]>(b, "runs of particle ids"))
        .collect::<Result<Vec<_>, _>>();
    let every_run = agree(collective, "labels back to their readers", every_run)?;

    // The owned particles each reader read: for each of its runs, the owned ids inside it are
    // one slice of the increasing owned ids; the reader's runs increase, so the slices follow
    // in its order.
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut send_counts = vec![0usize; ranks];
    for (reader, runs) in every_run.iter().enumerate() {
        for &[first, len] in runs {
            let from = owned_ids.partition_point(|&id| id < first);
            let to = owned_ids.partition_point(|&id| id < first.saturating_add(len));
            if to > from {
                pieces.push((from, to));
                if let Some(count) = send_counts.get_mut(reader) {
                    *count += to - from;
                }
            }
        }
    }
    let sent: usize = send_counts.iter().sum();
    let checked = if sent == owned_ids.len() && owned_labels.len() == owned_ids.len() {
        Ok(())
    } else {
        Err(FofError::DomainMerge {
            id: owned_ids.first().copied().unwrap_or(0),
            rule: "the slab's owned particles are not exactly the ones the ranks read",
        })
    };
    agree(collective, "labels back to their readers", checked)?;
    let mut outgoing: Vec<i32> = zeroed_on_every_thread(sent);
    let lens: Vec<usize> = pieces.iter().map(|&(from, to)| to - from).collect();
    split_parts_mut(&mut outgoing, &lens)
        .into_par_iter()
        .zip(&pieces)
        .for_each(|(place, &(from, to))| place.copy_from_slice(&owned_labels[from..to]));

    let recv_counts = exchange_counts(collective, &send_counts);
    let expected = owner_counts(input_owners, ranks);
    let recv_counts = recv_counts.and_then(|counts| {
        match counts
            .iter()
            .zip(&expected)
            .position(|(got, want)| got != want)
        {
            Some(slab) => Err(FofError::LabelsBack {
                slab,
                sent: counts[slab],
                expected: expected[slab],
            }),
            None => Ok(counts),
        }
    });
    let recv_counts = agree(collective, "labels back to their readers", recv_counts)?;
    let incoming = all_to_all_items(collective, &outgoing, &send_counts, &recv_counts);
    drop(outgoing);
    Ok(place_by_owner(input_owners, &incoming, &recv_counts))
}

/// Runs of consecutive ids as [first id, length], or `None` when the ids do not increase;
/// found on every thread (a rank reads hundreds of millions of particles in a few runs).
pub(crate) fn id_runs(ids: &[u64]) -> Option<Vec<[u64; 2]>> {
    if !ids.par_windows(2).all(|w| w[0] < w[1]) {
        return None;
    }
    let mut starts: Vec<usize> = (1..ids.len())
        .into_par_iter()
        .filter(|&k| ids[k] != ids[k - 1] + 1)
        .collect();
    if !ids.is_empty() {
        starts.insert(0, 0);
    }
    let ends = starts.iter().skip(1).copied().chain([ids.len()]);
    Some(
        starts
            .iter()
            .zip(ends)
            .map(|(&from, to)| [ids[from], (to - from) as u64])
            .collect(),
    )
}

/// How many of this rank's input particles each slab owns.
fn owner_counts(input_owners: &[u32], ranks: usize) -> Vec<usize> {
    input_owners
        .par_chunks(PLACE_CHUNK)
        .map(|chunk| {
            let mut counts = vec![0usize; ranks];
            for &o in chunk {
                if let Some(c) = counts.get_mut(o as usize) {
                    *c += 1;
                }
            }
            counts
        })
        .reduce(
            || vec![0usize; ranks],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                a
            },
        )
}

/// Input order from the messages of the slabs (`incoming`, `counts[d]` labels from slab d, in
/// input order): each chunk of the input starts, in each slab's message, after the earlier
/// chunks' particles of that slab, so every chunk fills its own places.
fn place_by_owner(input_owners: &[u32], incoming: &[i32], counts: &[usize]) -> Vec<i32> {
    let ranks = counts.len();
    let per_chunk: Vec<Vec<usize>> = input_owners
        .par_chunks(PLACE_CHUNK)
        .map(|chunk| owner_counts(chunk, ranks))
        .collect();
    let mut next: Vec<usize> = counts
        .iter()
        .scan(0, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect();
    let starts: Vec<Vec<usize>> = per_chunk
        .iter()
        .map(|chunk| {
            let starts = next.clone();
            next.iter_mut().zip(chunk).for_each(|(n, c)| *n += c);
            starts
        })
        .collect();
    let mut out: Vec<i32> = zeroed_on_every_thread(input_owners.len());
    out.par_chunks_mut(PLACE_CHUNK)
        .zip(input_owners.par_chunks(PLACE_CHUNK))
        .zip(starts)
        .for_each(|((out, owners), mut next)| {
            for (slot, &o) in out.iter_mut().zip(owners) {
                if let Some(at) = next.get_mut(o as usize) {
                    *slot = incoming.get(*at).copied().unwrap_or(0);
                    *at += 1;
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Solo;

    #[test]
    fn runs_join_consecutive_ids_and_refuse_a_decrease() {
        assert_eq!(id_runs(&[]), Some(Vec::new()));
        assert_eq!(id_runs(&[7]), Some(vec![[7, 1]]));
        assert_eq!(
            id_runs(&[3, 4, 5, 9, 10, 12]),
            Some(vec![[3, 3], [9, 2], [12, 1]])
        );
        assert_eq!(id_runs(&[3, 4, 4]), None);
        assert_eq!(id_runs(&[3, 5, 4]), None);
    }

    #[test]
    fn labels_come_back_in_input_order_from_each_slabs_message() {
        // Input particles owned by three slabs, interleaved over several chunks.
        let n = 3 * PLACE_CHUNK + 5;
        let owners: Vec<u32> = (0..n).map(|i| ((i * 7) % 3) as u32).collect();
        let counts = owner_counts(&owners, 3);
        // Slab d's message: the labels of its particles in input order (label = -index).
        let mut incoming = Vec::new();
        for d in 0..3 {
            incoming.extend(
                (0..n)
                    .filter(|&i| owners[i] == d as u32)
                    .map(|i| -(i as i32)),
            );
        }
        let placed = place_by_owner(&owners, &incoming, &counts);
        assert_eq!(placed, (0..n).map(|i| -(i as i32)).collect::<Vec<_>>());
    }

    #[test]
    fn one_rank_gets_its_own_labels_back_and_a_foreign_id_is_an_error() {
        let ids = [2u64, 3, 4, 10, 11];
        let labels = [5, -1, 7, 0, 2];
        let owners = [0u32; 5];
        let back = labels_to_readers(&Solo, &ids, &owners, &ids, &labels).unwrap();
        assert_eq!(back, labels);
        let owned = [2u64, 3, 4, 10, 12];
        assert!(labels_to_readers(&Solo, &ids, &owners, &owned, &labels).is_err());
    }
}
