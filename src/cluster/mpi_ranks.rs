//! The ranks of an MPI job, through rsmpi over the system's MPI library (Open MPI).
//!
//! Messages are counted in bytes with MPI's 32-bit counts; larger payloads are sent in pieces
//! of at most [`PIECE`] bytes, so a rank's share may exceed 2 GiB.

use super::{ClusterError, Collective};
use mpi::Count;
use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

/// Largest byte count sent in one MPI call.
const PIECE: usize = 1 << 30;

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

fn split(buf: &[u8], lens: &[usize]) -> Vec<Vec<u8>> {
    let mut at = 0;
    lens.iter()
        .map(|&n| {
            let part = buf[at..at + n].to_vec();
            at += n;
            part
        })
        .collect()
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
        let mut out = vec![Vec::new(); size];
        for piece in 0..self.rounds(mine.len(), PIECE) {
            let part = mine.get(piece * PIECE..).unwrap_or(&[]);
            let part = &part[..part.len().min(PIECE)];
            let mut lens = vec![0_u64; size];
            self.world
                .all_gather_into(&(part.len() as u64), &mut lens[..]);
            let lens: Vec<usize> = lens.iter().map(|&n| n as usize).collect();
            let mut buf = receive_buffer(lens.iter().sum());
            let (counts, displs) = counts_of(&lens);
            let mut partition = PartitionMut::new(&mut buf[..], counts, &displs[..]);
            self.world
                .all_gather_varcount_into(sendable(part), &mut partition);
            for (rank, bytes) in split(&buf, &lens).into_iter().enumerate() {
                out[rank].extend_from_slice(&bytes);
            }
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
        for piece in 0..self.rounds(mine.len(), PIECE) {
            let part = mine.get(piece * PIECE..).unwrap_or(&[]);
            let part = &part[..part.len().min(PIECE)];
            let len = part.len() as u64;
            if self.rank() == root {
                let mut lens = vec![0_u64; size];
                root_process.gather_into_root(&len, &mut lens[..]);
                let lens: Vec<usize> = lens.iter().map(|&n| n as usize).collect();
                let mut buf = receive_buffer(lens.iter().sum());
                let (counts, displs) = counts_of(&lens);
                let mut partition = PartitionMut::new(&mut buf[..], counts, &displs[..]);
                root_process.gather_varcount_into_root(sendable(part), &mut partition);
                for (rank, bytes) in split(&buf, &lens).into_iter().enumerate() {
                    out[rank].extend_from_slice(&bytes);
                }
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

    fn all_to_all_bytes(&self, outgoing: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let size = self.size();
        let mut incoming = vec![Vec::new(); size];
        let longest = outgoing.iter().map(Vec::len).max().unwrap_or(0);
        let per = PIECE / size.max(1);
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
            for (rank, bytes) in split(&recv, &recv_lens).into_iter().enumerate() {
                incoming[rank].extend_from_slice(&bytes);
            }
        }
        incoming
    }
}
