//! Device plumbing of the CUDA friends-of-friends linker (`fof_cuda.rs`): the kernel table,
//! the empty hash table and the half stencils (generic scan, sort, buffers, transfers and
//! timers are in `crate::gpu`).

use super::FofError;
use crate::gpu::{GpuDevice, RadixSort, alloc, fill_bytes};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream};
use std::sync::Arc;

/// The kernel source, compiled by NVRTC on first use.
const FOF_SOURCE: &str = concat!(
    include_str!("../../kernels/fof.cu"),
    include_str!("../../kernels/fof_blocks.cu"),
    include_str!("../../kernels/fof_catalogue.cu")
);

/// The kernels of kernels/fof.cu (with fof_blocks.cu and fof_catalogue.cu), and the radix sort
/// and scan they are used with.
pub(super) struct Kernels {
    pub(super) sort: RadixSort,
    pub(super) cell_keys: CudaFunction,
    pub(super) gather: CudaFunction,
    pub(super) cells: CudaFunction,
    pub(super) hash_insert: CudaFunction,
    pub(super) init_parent: CudaFunction,
    pub(super) link: CudaFunction,
    pub(super) block_count: CudaFunction,
    pub(super) block_insert: CudaFunction,
    pub(super) block_dense: CudaFunction,
    pub(super) link_blocks: CudaFunction,
    pub(super) compress: CudaFunction,
    pub(super) labels: CudaFunction,
    pub(super) set_stats: CudaFunction,
    pub(super) kept_sets: CudaFunction,
    pub(super) rank_roots: CudaFunction,
    pub(super) halo_labels: CudaFunction,
    pub(super) sorted_ranks: CudaFunction,
    pub(super) compact_members: CudaFunction,
    pub(super) halo_sums: CudaFunction,
    pub(super) halo_radii: CudaFunction,
}

impl Kernels {
    /// Compiles (or loads from the cache) kernels/fof.cu and kernels/sort_scan.cu on `device`.
    pub(super) fn load(device: &GpuDevice) -> Result<Self, FofError> {
        let module = device.module("fof.cu", FOF_SOURCE)?;
        let f = |name: &str| module.load_function(name);
        Ok(Self {
            sort: RadixSort::load(device)?,
            cell_keys: f("fof_cell_keys")?,
            gather: f("fof_gather")?,
            cells: f("fof_cells")?,
            hash_insert: f("fof_hash_insert")?,
            init_parent: f("fof_init_parent")?,
            link: f("fof_link")?,
            block_count: f("fof_block_count")?,
            block_insert: f("fof_block_insert")?,
            block_dense: f("fof_block_dense")?,
            link_blocks: f("fof_link_blocks")?,
            compress: f("fof_compress")?,
            labels: f("fof_labels")?,
            set_stats: f("fof_set_stats")?,
            kept_sets: f("fof_kept_sets")?,
            rank_roots: f("fof_rank_roots")?,
            halo_labels: f("fof_halo_labels")?,
            sorted_ranks: f("fof_sorted_ranks")?,
            compact_members: f("fof_compact_members")?,
            halo_sums: f("fof_halo_sums")?,
            halo_radii: f("fof_halo_radii")?,
        })
    }
}

/// An empty open-addressing table for at least `entries` keys: its key array (every slot the
/// all-ones empty marker) and the index mask (length − 1, a power of two ≥ 2·entries).
pub(super) fn empty_hash_keys(
    stream: &Arc<CudaStream>,
    entries: usize,
) -> Result<(CudaSlice<u64>, u64), FofError> {
    let table_len = (2 * entries).next_power_of_two().max(1024);
    let mut keys = alloc::<u64>(stream, table_len)?;
    fill_bytes(stream, &mut keys, 0xff)?;
    Ok((keys, (table_len - 1) as u64))
}

/// Cell offsets (dx, dy, dz), flattened, with (dz, dy, dx) lexicographically positive, whose
/// cells can hold two points within ll: the gap between cells `d` apart on one axis is
/// `(|d| − 1)·side`; kept when the squared gaps sum to ≤ ll² (with the same slack as `grid.rs`).
pub fn half_stencil_offsets(linking_length: f64, side: f64) -> Vec<i32> {
    let reach = (linking_length / side * (1.0 + 1e-9)).floor() as i32 + 1;
    let limit = linking_length * linking_length * (1.0 + 1e-9);
    let gap = |d: i32| f64::from((d.abs() - 1).max(0)) * side;
    let mut offsets = Vec::new();
    for dz in 0..=reach {
        for dy in -reach..=reach {
            for dx in -reach..=reach {
                if (dz, dy, dx) <= (0, 0, 0) {
                    continue;
                }
                if gap(dx).powi(2) + gap(dy).powi(2) + gap(dz).powi(2) <= limit {
                    offsets.extend([dx, dy, dz]);
                }
            }
        }
    }
    offsets
}

/// Morton-local index (0..63) of a cell at local coordinates (0..4 each) inside its 4×4×4
/// block: the low 6 bits of its Morton key (as `morton_local` in kernels/fof_blocks.cu).
fn morton_local(x: i32, y: i32, z: i32) -> u32 {
    (crate::order::morton_key([x as u32, y as u32, z as u32]) & 63) as u32
}

/// For `fof_link_blocks`: per Morton-local cell position (64) and neighbour block offset (27,
/// index (bdx+1) + 3(bdy+1) + 9(bdz+1)), the mask of Morton-local cells of that block reached
/// by the half stencil `offsets` (flattened dx, dy, dz). `None` when the reach exceeds 4 cells
/// (one block side), where a cell's stencil could span more than the 3 blocks per axis.
pub fn block_stencil_masks(offsets: &[i32]) -> Option<Vec<u64>> {
    if offsets.iter().any(|d| d.abs() > 4) {
        return None;
    }
    let mut masks = vec![0u64; 64 * 27];
    for lz in 0..4 {
        for ly in 0..4 {
            for lx in 0..4 {
                let local = morton_local(lx, ly, lz) as usize;
                for d in offsets.chunks_exact(3) {
                    let t = [lx + d[0], ly + d[1], lz + d[2]];
                    let block = t.map(|v| v.div_euclid(4) + 1);
                    let inner = t.map(|v| v.rem_euclid(4));
                    let bo = (block[0] + 3 * block[1] + 9 * block[2]) as usize;
                    masks[local * 27 + bo] |= 1u64 << morton_local(inner[0], inner[1], inner[2]);
                }
            }
        }
    }
    Some(masks)
}
