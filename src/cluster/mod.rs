//! The process group a command runs in: one process (the default), or the ranks of an MPI job
//! (`mpirun -n K haloscope …`, built with `--features mpi`). Library code that splits work over
//! ranks takes a `&dyn Collective` and never names MPI; [`Cluster::from_environment`] picks the
//! implementation once, in the face.
//!
//! Every method is collective: all ranks call it, in the same order, or the job hangs. Errors
//! found on one rank are agreed with [`Collective::agree`] before the next collective step, so a
//! rank that fails to read its share ends every rank with the error (see `any_failed`).

mod agree;
#[cfg(feature = "mpi")]
mod mpi_ranks;
mod solo;

pub use agree::{Agreed, agree};

#[cfg(feature = "mpi")]
pub use mpi_ranks::MpiRanks;
pub use solo::Solo;

use std::ops::Range;

/// Collective operations over the ranks of a job (one rank when not under MPI).
pub trait Collective {
    /// This process's rank, 0-based.
    fn rank(&self) -> usize;
    /// How many ranks take part.
    fn size(&self) -> usize;
    /// Ranks that share this rank's host (for picking this rank's GPUs).
    fn local_size(&self) -> usize;
    /// This rank's index among the ranks of its host.
    fn local_rank(&self) -> usize;
    /// Waits for every rank.
    fn barrier(&self);
    /// Element-wise sum over ranks, in place (exact: integers).
    fn sum_i64(&self, values: &mut [i64]);
    /// Element-wise sum over ranks, in place (exact: integers).
    fn sum_u64(&self, values: &mut [u64]);
    /// Element-wise minimum over ranks, in place.
    fn min_f64(&self, values: &mut [f64]);
    /// Element-wise maximum over ranks, in place.
    fn max_f64(&self, values: &mut [f64]);
    /// Every rank's bytes, in rank order, on every rank.
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>>;
    /// Every rank's bytes, in rank order, on `root` only (an empty list elsewhere).
    fn gather_bytes(&self, root: usize, mine: &[u8]) -> Vec<Vec<u8>>;
    /// `root`'s bytes on every rank (`bytes` is replaced on the others).
    fn broadcast_bytes(&self, root: usize, bytes: &mut Vec<u8>);
    /// Rank r's `outgoing[d]` becomes rank d's `incoming[r]`: the all-to-all exchange of
    /// variable-length byte messages (`outgoing.len()` must equal `size()`).
    fn all_to_all_bytes(&self, outgoing: &[Vec<u8>]) -> Vec<Vec<u8>>;

    /// The all-to-all of one packed buffer each way, for messages too large to copy twice: rank
    /// r's message to rank d is `send_counts[d]` bytes of `send` (messages in rank order), and
    /// lands in rank d's `recv` after the messages of the ranks before r (`recv_counts[r]`
    /// bytes). `recv_counts` must be what the ranks send (exchange the counts first): under
    /// MPI a longer message stops the job, here it is cut. A rank's message to itself may be
    /// left out (its send count 0) where the caller wrote it into its place in `recv` already:
    /// only what is sent is copied. This default goes through [`Collective::all_to_all_bytes`].
    fn all_to_all_into(
        &self,
        send: &[u8],
        send_counts: &[usize],
        recv: &mut [u8],
        recv_counts: &[usize],
    ) {
        let outgoing: Vec<Vec<u8>> = split_parts(send, send_counts)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        let incoming = self.all_to_all_bytes(&outgoing);
        for (place, message) in split_parts_mut(recv, recv_counts)
            .into_iter()
            .zip(&incoming)
        {
            let len = place.len().min(message.len());
            place[..len].copy_from_slice(&message[..len]);
        }
    }

    /// Whether any rank reports `failed`: every rank gets the same answer, so all of them stop
    /// together when one cannot go on (a rank that could not read its share).
    fn any_failed(&self, failed: bool) -> bool {
        let mut flag = [u64::from(failed)];
        self.sum_u64(&mut flag);
        flag[0] > 0
    }

    /// Whether this rank writes the job's outputs (PNG, catalogues, JSON): rank 0.
    fn is_root(&self) -> bool {
        self.rank() == 0
    }
}

/// The process group of this command, chosen once from the environment.
pub enum Cluster {
    /// One process.
    Solo(Solo),
    /// The ranks of an MPI job.
    #[cfg(feature = "mpi")]
    Mpi(MpiRanks),
}

impl Cluster {
    /// MPI ranks when the process was started by an MPI launcher (its environment names a
    /// world size) and the build has the `mpi` feature; one process otherwise. Without the
    /// feature, a process that an MPI launcher started is refused rather than run K times over.
    pub fn from_environment() -> Result<Self, ClusterError> {
        let launched = launched_by_mpi();
        #[cfg(feature = "mpi")]
        if launched {
            return MpiRanks::initialize().map(Self::Mpi);
        }
        if launched {
            return Err(ClusterError::NoMpiFeature);
        }
        Ok(Self::Solo(Solo))
    }

    /// The collective operations of this group.
    pub fn collective(&self) -> &dyn Collective {
        match self {
            Self::Solo(solo) => solo,
            #[cfg(feature = "mpi")]
            Self::Mpi(ranks) => ranks,
        }
    }
}

/// Whether an MPI launcher (Open MPI, MPICH/Hydra, PMIx, Slurm's srun with PMI) started this
/// process as one of several ranks.
fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .any(|size| size.trim().parse::<u64>().is_ok_and(|n| n > 1))
}

/// Why the process group could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Started by mpirun with more than one rank, but built without MPI.
    #[error(
        "started by an MPI launcher with several ranks, but this haloscope was built without \
         MPI: rebuild with `cargo build --release --features mpi`"
    )]
    NoMpiFeature,
    /// MPI_Init failed or was called twice.
    #[error("MPI could not be initialised (MPI_Init failed or ran already)")]
    MpiInit,
}

/// Part `part` of `0..n` cut into `parts` consecutive ranges, `[n·part/parts, n·(part+1)/parts)`:
/// in order, covering `0..n` once, their lengths differing by at most one (the work split of
/// MPI ranks' file shares, of devices' particle shares and of ranks' trials). The product is
/// taken in u128, so no `n` overflows.
pub fn even_share(n: u64, part: usize, parts: usize) -> Range<u64> {
    let parts = parts.max(1) as u128;
    let at = |p: usize| (u128::from(n) * p as u128 / parts) as u64;
    at(part)..at(part + 1)
}

/// `buf` cut into consecutive parts of `counts[r]` bytes (shorter at the end of `buf`).
pub(crate) fn split_parts<'a>(mut buf: &'a [u8], counts: &[usize]) -> Vec<&'a [u8]> {
    counts
        .iter()
        .map(|&n| {
            let (part, rest) = buf.split_at(n.min(buf.len()));
            buf = rest;
            part
        })
        .collect()
}

/// [`split_parts`] of a buffer (of any items) to write into.
pub(crate) fn split_parts_mut<'a, T>(mut buf: &'a mut [T], counts: &[usize]) -> Vec<&'a mut [T]> {
    counts
        .iter()
        .map(|&n| {
            // The length before `take` empties `buf`.
            let len = n.min(buf.len());
            let (part, rest) = std::mem::take(&mut buf).split_at_mut(len);
            buf = rest;
            part
        })
        .collect()
}

/// [`Collective::all_to_all_into`] of typed items: `outgoing` holds `send_counts[r]` items for
/// rank r, in rank order; the result holds the `recv_counts[r]` items of each rank r, in rank
/// order, received into a buffer faulted in on every thread ([`zeroed_on_every_thread`]).
/// `recv_counts` must be what the ranks send (exchange the counts first); collective.
pub(crate) fn all_to_all_items<T: bytemuck::Pod + Send>(
    collective: &dyn Collective,
    outgoing: &[T],
    send_counts: &[usize],
    recv_counts: &[usize],
) -> Vec<T> {
    let mut incoming: Vec<T> = zeroed_on_every_thread(recv_counts.iter().sum());
    all_to_all_items_into(
        collective,
        outgoing,
        send_counts,
        &mut incoming,
        recv_counts,
    );
    incoming
}

/// [`all_to_all_items`] into a buffer of the caller's (`Σ recv_counts` items long).
pub(crate) fn all_to_all_items_into<T: bytemuck::Pod>(
    collective: &dyn Collective,
    outgoing: &[T],
    send_counts: &[usize],
    incoming: &mut [T],
    recv_counts: &[usize],
) {
    let bytes = |counts: &[usize]| -> Vec<usize> {
        counts
            .iter()
            .map(|&n| n * std::mem::size_of::<T>())
            .collect()
    };
    collective.all_to_all_into(
        bytemuck::cast_slice(outgoing),
        &bytes(send_counts),
        bytemuck::cast_slice_mut(incoming),
        &bytes(recv_counts),
    );
}

/// `n` zeroed items written on every thread, for a large receive buffer. Zeroed memory from
/// the allocator is untouched pages: MPI's copy into it would fault in and zero every page on
/// its one thread (the exchange of a slab's particles was mostly that); here each thread
/// faults in its own part.
pub(crate) fn zeroed_on_every_thread<T: bytemuck::Zeroable + Send>(n: usize) -> Vec<T> {
    use rayon::prelude::*;
    (0..n).into_par_iter().map(|_| T::zeroed()).collect()
}

/// Zeroes `items` on every thread: for the part of a buffer from `bytemuck::zeroed_vec` (pages
/// not yet touched) that MPI's copy will fill, as [`zeroed_on_every_thread`] does for a whole
/// buffer.
pub(crate) fn zero_on_every_thread<T: bytemuck::Zeroable + Send>(items: &mut [T]) {
    use rayon::prelude::*;
    items.par_iter_mut().for_each(|t| *t = T::zeroed());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_buffers_split_into_their_messages() {
        let mut buf = [1u8, 2, 3, 4, 5, 6];
        let parts = split_parts(&buf, &[2, 0, 3]);
        assert_eq!(parts, vec![&[1u8, 2][..], &[][..], &[3, 4, 5][..]]);
        let lens: Vec<usize> = split_parts_mut(&mut buf, &[1, 4, 9])
            .iter()
            .map(|p| p.len())
            .collect();
        assert_eq!(lens, vec![1, 4, 1]);
    }

    #[test]
    fn even_shares_cover_every_index_once_in_order_and_differ_by_at_most_one() {
        for n in [0u64, 1, 5, 47, 65_537, 1_000_003] {
            for parts in 1..=5 {
                let shares: Vec<_> = (0..parts).map(|p| even_share(n, p, parts)).collect();
                assert_eq!(shares[0].start, 0);
                assert_eq!(shares[parts - 1].end, n);
                assert!(shares.windows(2).all(|w| w[0].end == w[1].start));
                let lens: Vec<u64> = shares.iter().map(|s| s.end - s.start).collect();
                let (lo, hi) = (lens.iter().min(), lens.iter().max());
                assert!(
                    hi.zip(lo).is_some_and(|(h, l)| h - l <= 1),
                    "{n} in {parts}: {lens:?}"
                );
            }
        }
        assert_eq!(even_share(u64::MAX, 1, 2).end, u64::MAX);
    }

    #[test]
    fn solo_is_one_root_rank_and_collectives_are_identities() {
        let solo = Solo;
        assert_eq!((solo.rank(), solo.size(), solo.is_root()), (0, 1, true));
        let mut v = [3_i64, -4];
        solo.sum_i64(&mut v);
        assert_eq!(v, [3, -4]);
        assert_eq!(solo.all_gather_bytes(b"ab"), vec![b"ab".to_vec()]);
        assert_eq!(solo.all_to_all_bytes(&[b"x".to_vec()]), vec![b"x".to_vec()]);
        assert!(solo.any_failed(true));
        assert!(!solo.any_failed(false));
    }
}
