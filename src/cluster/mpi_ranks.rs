//! The ranks of an MPI job, through rsmpi over the system's MPI library (Open MPI).
//!
//! Messages are counted in bytes with MPI's 32-bit counts; larger payloads are sent in rounds
//! of at most [`PIECE`] bytes received by a rank (one piece of [`per_rank`] bytes from every
//! rank), so a rank's share may exceed 2 GiB.

use super::{ClusterError, Collective};
use mpi::Count;
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use rayon::prelude::*;

/// Largest byte count one rank receives in one MPI call.
const PIECE: usize = 1 << 30;

/// Bytes each rank sends per round of a collective in which one rank receives from all `size`
/// ranks: the receive buffer (one piece from every rank, plus the byte of [`receive_buffer`])
/// is one slice whose length rsmpi must express as a 32-bit MPI count, so the pieces of all
/// ranks together stay within [`PIECE`] (with 1 GiB from each of two ranks the slice was
/// 2 GiB + 1 and rsmpi panicked).
fn per_rank(size: usize) -> usize {
    PIECE / size.max(1)
}

/// An empty slice that points into real memory. An empty `&[u8]` made from nothing points at
/// address 1, which is Open MPI's `MPI_IN_PLACE`: as a send buffer it turns a gather into an
/// in-place one (MPI_ERR_ARG on a non-root rank, or wrong results), so empty messages are sent
/// from here instead.
static NOTHING: [u8; 1] = [0];

/// `part`, or an empty slice with a real address when `part` is empty (see [`NOTHING`]).
fn sendable(part: &[u8]) -> &[u8] {
    if part.is_empty() { &NOTHING[..0] } else { part }
}

/// A receive buffer for `len` bytes, one byte longer so that it has a real address even when
/// nothing arrives (see [`NOTHING`]).
fn receive_buffer(len: usize) -> Vec<u8> {
    vec![0_u8; len + 1]
}

/// The MPI job this process is one rank of (MPI_Finalize runs when it is dropped).
pub struct MpiRanks {
    world: SimpleCommunicator,
    local: SimpleCommunicator,
    _universe: Universe,
}

impl MpiRanks {
    /// MPI_Init, the world communicator and the ranks that share this host.
    pub fn initialize() -> Result<Self, ClusterError> {
        let universe = mpi::initialize().ok_or(ClusterError::MpiInit)?;
        let world = universe.world();
        if world.size() > 1 {
            end_the_job_on_panic();
        }
        let local = world.split_shared(world.rank());
        Ok(Self {
            world,
            local,
            _universe: universe,
        })
    }

    /// Pieces of at most `per` bytes that `len` bytes need, the most over all ranks (every
    /// rank must take part in as many rounds).
    fn rounds(&self, len: usize, per: usize) -> usize {
        let mut n = [len.div_ceil(per) as f64];
        self.max_f64(&mut n);
        n[0] as usize
    }
}

/// A panic on one rank would leave the others waiting in their next collective for ever, and
/// mpirun with them: after the usual message, MPI_Abort ends every rank (exit code 1).
fn end_the_job_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        SimpleCommunicator::world().abort(1);
    }));
}

fn counts_of(lens: &[usize]) -> (Vec<Count>, Vec<Count>) {
    let counts: Vec<Count> = lens.iter().map(|&n| n as Count).collect();
    let displs: Vec<Count> = counts
        .iter()
        .scan(0, |acc, &c| {
            let at = *acc;
            *acc += c;
            Some(at)
        })
        .collect();
    (counts, displs)
}

/// Appends the consecutive parts of `buf` (`lens[r]` bytes from rank r) to `out[r]`, copied
/// once (these rounds carry up to a gigabyte).
fn append_parts(out: &mut [Vec<u8>], buf: &[u8], lens: &[usize]) {
    let mut at = 0;
    for (into, &n) in out.iter_mut().zip(lens) {
        into.extend_from_slice(&buf[at..at + n]);
        at += n;
    }
}

impl Collective for MpiRanks {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn local_size(&self) -> usize {
        self.local.size() as usize
    }
    fn local_rank(&self) -> usize {
        self.local.rank() as usize
    }
    fn barrier(&self) {
        self.world.barrier();
    }
    fn sum_i64(&self, values: &mut [i64]) {
        let send = values.to_vec();
        self.world
            .all_reduce_into(&send[..], values, SystemOperation::sum());
    }
    fn sum_u64(&self, values: &mut [u64]) {
        let send = values.to_vec();
        self.world
            .all_reduce_into(&send[..], values, SystemOperation::sum());
    }
    fn min_f64(&self, values: &mut [f64]) {
        let send = values.to_vec();
        self.world
            .all_reduce_into(&send[..], values, SystemOperation::min());
    }
    fn max_f64(&self, values: &mut [f64]) {
        let send = values.to_vec();
        self.world
            .all_reduce_into(&send[..], values, SystemOperation::max());
    }

    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let size = self.size();
        let per = per_rank(size);
        let mut out = vec![Vec::new(); size];
        for piece in 0..self.rounds(mine.len(), per) {
            let part = mine.get(piece * per..).unwrap_or(&[]);
            let part = &part[..part.len().min(per)];
            let mut lens = vec![0_u64; size];
            self.world
                .all_gather_into(&(part.len() as u64), &mut lens[..]);
            let lens: Vec<usize> = lens.iter().map(|&n| n as usize).collect();
            let mut buf = receive_buffer(lens.iter().sum());
            let (counts, displs) = counts_of(&lens);
            let mut partition = PartitionMut::new(&mut buf[..], counts, &displs[..]);
            self.world
                .all_gather_varcount_into(sendable(part), &mut partition);
            append_parts(&mut out, &buf, &lens);
        }
        out
    }

    fn gather_bytes(&self, root: usize, mine: &[u8]) -> Vec<Vec<u8>> {
        let size = self.size();
        let root_process = self.world.process_at_rank(root as i32);
        let mut out = if self.rank() == root {
            vec![Vec::new(); size]
        } else {
            Vec::new()
        };
        let per = per_rank(size);
        for piece in 0..self.rounds(mine.len(), per) {
            let part = mine.get(piece * per..).unwrap_or(&[]);
            let part = &part[..part.len().min(per)];
            let len = part.len() as u64;
            if self.rank() == root {
                let mut lens = vec![0_u64; size];
                root_process.gather_into_root(&len, &mut lens[..]);
                let lens: Vec<usize> = lens.iter().map(|&n| n as usize).collect();
                let mut buf = receive_buffer(lens.iter().sum());
                let (counts, displs) = counts_of(&lens);
                let mut partition = PartitionMut::new(&mut buf[..], counts, &displs[..]);
                root_process.gather_varcount_into_root(sendable(part), &mut partition);
                append_parts(&mut out, &buf, &lens);
            } else {
                root_process.gather_into(&len);
                root_process.gather_varcount_into(sendable(part));
            }
        }
        out
    }

    fn broadcast_bytes(&self, root: usize, bytes: &mut Vec<u8>) {
        let root_process = self.world.process_at_rank(root as i32);
        let mut len = bytes.len() as u64;
        root_process.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        for chunk in bytes.chunks_mut(PIECE) {
            root_process.broadcast_into(chunk);
        }
    }

    /// Point to point, straight between the callers' buffers: every message in pieces of at
    /// most [`PIECE`] bytes (MPI's 32-bit counts), all posted at once, and this rank's own
    /// message copied on every thread. An empty message sends nothing (both sides know its
    /// length), so no empty buffer reaches MPI (see [`NOTHING`]).
    fn all_to_all_into(
        &self,
        send: &[u8],
        send_counts: &[usize],
        recv: &mut [u8],
        recv_counts: &[usize],
    ) {
        let me = self.rank();
        let sends = super::split_parts(send, send_counts);
        let mut recvs = super::split_parts_mut(recv, recv_counts);
        if let (Some(from), Some(into)) = (sends.get(me), recvs.get_mut(me)) {
            let len = from.len().min(into.len());
            into[..len]
                .par_chunks_mut(1 << 24)
                .zip(from[..len].par_chunks(1 << 24))
                .for_each(|(into, from)| into.copy_from_slice(from));
        }
        mpi::request::scope(|scope| {
            let mut requests = Vec::new();
            for (r, into) in recvs.iter_mut().enumerate() {
                if r == me {
                    continue;
                }
                let source = self.world.process_at_rank(r as i32);
                for piece in into.chunks_mut(PIECE) {
                    requests.push(source.immediate_receive_into_with_tag(scope, piece, 0));
                }
            }
            for (d, from) in sends.iter().enumerate() {
                if d == me {
                    continue;
                }
                let destination = self.world.process_at_rank(d as i32);
                for piece in from.chunks(PIECE) {
                    requests.push(destination.immediate_send_with_tag(scope, piece, 0));
                }
            }
            for request in requests {
                request.wait();
            }
        });
    }

    fn all_to_all_bytes(&self, outgoing: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let size = self.size();
        let mut incoming = vec![Vec::new(); size];
        let longest = outgoing.iter().map(Vec::len).max().unwrap_or(0);
        let per = per_rank(size);
        for piece in 0..self.rounds(longest, per) {
            let parts: Vec<&[u8]> = outgoing
                .iter()
                .map(|m| {
                    let from = (piece * per).min(m.len());
                    &m[from..(from + per).min(m.len())]
                })
                .collect();
            let send_lens: Vec<u64> = parts.iter().map(|p| p.len() as u64).collect();
            let mut recv_lens = vec![0_u64; size];
            self.world
                .all_to_all_into(&send_lens[..], &mut recv_lens[..]);
            let mut send: Vec<u8> = parts.concat();
            // A real address even when nothing is sent (see NOTHING); counts stay as they are.
            send.push(0);
            let send_lens: Vec<usize> = send_lens.iter().map(|&n| n as usize).collect();
            let recv_lens: Vec<usize> = recv_lens.iter().map(|&n| n as usize).collect();
            let (scounts, sdispls) = counts_of(&send_lens);
            let (rcounts, rdispls) = counts_of(&recv_lens);
            let mut recv = receive_buffer(recv_lens.iter().sum());
            let send_part = Partition::new(&send[..], scounts, &sdispls[..]);
            let mut recv_part = PartitionMut::new(&mut recv[..], rcounts, &rdispls[..]);
            self.world
                .all_to_all_varcount_into(&send_part, &mut recv_part);
            append_parts(&mut incoming, &recv, &recv_lens);
        }
        incoming
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_receives_a_slice_that_mpi_can_count() {
        for size in 1..=4096 {
            let received = size * per_rank(size) + 1;
            assert!(
                received <= Count::MAX as usize,
                "{size} ranks: {received} bytes"
            );
            assert!(per_rank(size) > 0);
        }
    }

    #[test]
    fn parts_go_to_their_ranks_in_order() {
        let mut out = vec![vec![9u8], Vec::new(), vec![7]];
        append_parts(&mut out, &[1, 2, 3, 4, 5], &[2, 0, 3]);
        assert_eq!(out, vec![vec![9, 1, 2], vec![], vec![7, 3, 4, 5]]);
    }
}
