//! The CUDA friends-of-friends entry points, twin of `cpu/link.rs`: per-particle set ids
//! ([`link_components_cuda`]) or the catalogue's first step ([`partition_cuda`]).
//!
//! Same grid (cells of side ≤ ll/√3 whose members are all friends), same link rule (d² ≤ ll² in
//! float64 on the wrapped float32 positions, minimum image when periodic, evaluated with the same
//! operations: NVRTC compiles with `--fmad=false`), so the partition is identical to the CPU's.
//! Steps, all on the device (`link.rs`): cell key per particle (Morton order of the cell
//! coordinates), stable LSD radix sort of (key, index), sorted float64 positions, cell starts by
//! scan, a table of the non-empty 4×4×4 blocks of cells, one thread per cell linking its half
//! stencil by atomic union-find, compression; then either per-particle set ids or, for the
//! catalogue, the whole first catalogue step on the device (`partition.rs`: set sizes and smallest
//! members by atomics, the kept sets, sorted on the host, and per-particle halo labels), so that
//! one label array comes back instead of set ids the CPU must reduce. Positions go up and labels
//! come down through pinned staging buffers. Memory O(N).

use super::link::{LinkRequest, Points, link_on_device};
use super::partition::{LabelsArgs, partition_on_device};
use super::support::DeviceRun;
use crate::gpu::{self, GpuDevice, alloc, download_pinned, per_element};
use crate::halo::catalogue::Partition;
use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use crate::jobs::Progress;

/// What the CUDA linker returns: set ids and how the time was spent.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaLinkOutput {
    /// Per particle (input order): its set id; equal ids ⇔ same set; ids are below N.
    pub set_ids: Vec<u32>,
    /// Number of non-empty cells.
    pub n_cells: usize,
    /// Wall seconds per stage (each stage ends with a stream synchronisation), in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// Links `positions` on `device` with `linking_length` (periodic inside `frame` when given) and
/// returns the set id of every particle, the same partition as [`crate::halo::link_components`].
pub fn link_components_cuda(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    progress: &Progress,
) -> Result<CudaLinkOutput, FofError> {
    let n = positions.len();
    if n == 0 {
        return Ok(CudaLinkOutput {
            set_ids: Vec::new(),
            n_cells: 0,
            stage_seconds: Vec::new(),
        });
    }
    let mut run = DeviceRun::start(device, progress)?;
    let request = LinkRequest {
        points: Points::Host(positions),
        linking_length,
        frame,
    };
    let linked = link_on_device(&mut run, &request)?;
    let mut set_ids_dev = alloc::<u32>(run.stream, n)?;
    let args = LabelsArgs {
        cell_start: &linked.cell_start,
        parent: &linked.parent,
        order: &linked.order,
        n_cells: linked.n_cells as u32,
        set_ids: &mut set_ids_dev,
    };
    // SAFETY: members of cell c are the sorted positions cell_start[c]..cell_start[c+1]
    // within 0..n, and order maps each to a particle index < n.
    unsafe {
        gpu::launch(
            run.stream,
            &run.kernels.labels,
            per_element(linked.n_cells, 0),
            args,
        )
    }?;
    let set_ids = download_pinned(device, &set_ids_dev, n, |id| id)?;
    run.stage("set ids + download")?;
    progress.report("cuda: linking", 1, 1);
    Ok(CudaLinkOutput {
        set_ids,
        n_cells: linked.n_cells,
        stage_seconds: run.into_stages(),
    })
}

/// What [`partition_cuda`] returns: the catalogue's first step and how the time was spent.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaPartitionOutput {
    /// Labels, kept sets in catalogue order and the set count: equal to
    /// [`crate::halo::catalogue::partition`] of the CPU linker's set ids.
    pub partition: Partition,
    /// Number of non-empty cells.
    pub n_cells: usize,
    /// Wall seconds per stage (each stage ends with a stream synchronisation), in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// Links `positions` on `device` as [`link_components_cuda`], then finds the sets of at least
/// `min_members` particles and labels every particle with its halo rank (size descending, ties
/// by smallest member) on the device, so that only the labels and the kept sets come back.
pub fn partition_cuda(
    device: &GpuDevice,
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    min_members: usize,
    progress: &Progress,
) -> Result<CudaPartitionOutput, FofError> {
    let n = positions.len();
    if n == 0 {
        return Ok(CudaPartitionOutput {
            partition: Partition {
                labels: Vec::new(),
                groups: Vec::new(),
                n_sets_all_sizes: 0,
            },
            n_cells: 0,
            stage_seconds: Vec::new(),
        });
    }
    let mut run = DeviceRun::start(device, progress)?;
    let request = LinkRequest {
        points: Points::Host(positions),
        linking_length,
        frame,
    };
    let (_, on_device) = partition_on_device(&mut run, &request, n, min_members, true)?;
    // The label words are i32 ranks (−1 = all ones) written as u32.
    let labels = match &on_device.labels {
        Some(labels) => download_pinned(device, labels, n, |w| w as i32)?,
        None => Vec::new(),
    };
    run.stage("download labels")?;
    progress.report("cuda: linking", 1, 1);
    Ok(CudaPartitionOutput {
        partition: Partition {
            labels,
            groups: on_device.groups,
            n_sets_all_sizes: on_device.n_sets_all_sizes,
        },
        n_cells: on_device.n_cells,
        stage_seconds: run.into_stages(),
    })
}
