//! One domain of friends-of-friends on spatial domains, on the device: the particles are the
//! domain's owned ones then its ghosts; the sets without a ghost are complete, so their whole
//! catalogue is built on the device as [`super::catalogue_cuda`] builds it; only the members of
//! the sets with a ghost (the few that may cross into another domain) come back, for the merge.

use super::catalogue::{DeviceMasses, SumInputs, halos_of_host_request, halos_on_device};
use super::link::{LinkRequest, Linked, Points};
use super::partition::{PartitionOnDevice, partition_on_device};
use super::split::DeviceSlab;
use super::support::DeviceRun;
use crate::gpu::{self, GpuDevice, alloc, download_pinned, per_element, zeros};
use crate::halo::catalogue::{Halo, SlabCatalogue};
use crate::halo::error::FofError;
use crate::halo::params::{CatalogueRequest, check_lengths};
use crate::halo::periodic::BoxFrame;
use crate::jobs::Progress;
use cudarc::driver::CudaSlice;
use rayon::prelude::*;

crate::kernel_args! {
    /// `fof_boundary_members`: cells as the linked cells (`n_cells` over n sorted positions);
    /// `has_ghost` `n_cells` entries; `counter` one zeroed word; `member` and `member_set`
    /// `capacity` slots; one thread per cell.
    struct BoundaryArgs<'a> {
        cell_start: &'a CudaSlice<u32>,
        parent: &'a CudaSlice<u32>,
        order: &'a CudaSlice<u32>,
        has_ghost: &'a CudaSlice<u32>,
        n_cells: u32,
        capacity: u32,
        counter: &'a mut CudaSlice<u32>,
        member: &'a mut CudaSlice<u32>,
        member_set: &'a mut CudaSlice<u32>,
    }
}

/// Links one domain's particles (`request.positions`: the `n_owned` owned ones, then the
/// ghosts) on `device` and builds the catalogue of its sets without ghosts on the device (as
/// [`super::catalogue_cuda`]); the members of the other sets come back for the merge.
pub fn slab_catalogue_cuda(
    device: &GpuDevice,
    request: &CatalogueRequest<'_>,
    n_owned: usize,
    progress: &Progress,
) -> Result<SlabCatalogue, FofError> {
    let n = request.positions.len();
    check_lengths(n, request.masses, request.velocities)?;
    let link = LinkRequest {
        points: Points::Host(request.positions),
        linking_length: request.linking_length,
        frame: request.frame,
    };
    let settings = SlabSettings {
        min_members: request.min_members,
        with_labels: request.with_labels,
    };
    slab_catalogue(
        device,
        &link,
        n_owned,
        settings,
        progress,
        |run, linked, part| halos_of_host_request(run, request, linked, part),
    )
}

/// What a slab's catalogue keeps besides the particles: the smallest set kept as a halo and
/// whether per-particle labels are made.
#[derive(Debug, Clone, Copy)]
pub struct SlabSettings {
    pub min_members: usize,
    pub with_labels: bool,
}

/// [`slab_catalogue_cuda`] of a slab already on `device` (split on the devices), linked with
/// `linking_length` in `frame`; `bounds` is a box holding every position (for an open grid).
pub fn device_slab_catalogue(
    device: &GpuDevice,
    slab: &DeviceSlab,
    linking_length: f64,
    frame: Option<BoxFrame>,
    bounds: ([f32; 3], [f32; 3]),
    settings: SlabSettings,
    progress: &Progress,
) -> Result<SlabCatalogue, FofError> {
    let link = LinkRequest {
        points: Points::Device {
            positions: &slab.positions,
            n: slab.n,
            bounds,
        },
        linking_length,
        frame,
    };
    slab_catalogue(
        device,
        &link,
        slab.n_owned,
        settings,
        progress,
        |run, linked, part| {
            let mins: Vec<u32> = part.groups.iter().map(|g| g.min_index).collect();
            let first_members = slab.points(device, &run.kernels, &mins)?;
            let inputs = SumInputs {
                masses: match &slab.masses {
                    Some(m) => DeviceMasses::PerParticle(m),
                    None => DeviceMasses::Uniform(slab.uniform_mass),
                },
                velocities: slab.velocities.as_ref(),
                frame,
            };
            halos_on_device(run, &inputs, &first_members, linked, part)
        },
    )
}

/// The slab's catalogue on `device`: link, partition, the kept halos' sums by `halos`, labels
/// when asked for, and the members of the sets with a ghost.
fn slab_catalogue(
    device: &GpuDevice,
    link: &LinkRequest<'_>,
    n_owned: usize,
    settings: SlabSettings,
    progress: &Progress,
    halos: impl FnOnce(&DeviceRun<'_>, &Linked, &PartitionOnDevice) -> Result<Vec<Halo>, FofError>,
) -> Result<SlabCatalogue, FofError> {
    let n = link.points.len();
    if n == 0 {
        return Ok(SlabCatalogue {
            halos: Vec::new(),
            labels: settings.with_labels.then(Vec::new),
            n_interior_sets: 0,
            boundary: Vec::new(),
            stage_seconds: Vec::new(),
        });
    }
    let n_owned = n_owned.min(n);
    let mut run = DeviceRun::start(device, progress)?;
    let (linked, part) = partition_on_device(
        &mut run,
        link,
        n_owned,
        settings.min_members,
        settings.with_labels,
    )?;
    progress.check()?;
    let halos = if part.groups.is_empty() {
        Vec::new()
    } else {
        halos(&run, &linked, &part)?
    };
    run.stage("catalogue sums")?;
    let labels = match &part.labels {
        // The label words are i32 ranks (−1 = all ones) written as u32; ghosts' are not needed.
        Some(labels_dev) => Some(download_pinned(device, labels_dev, n_owned, |w| w as i32)?),
        None => None,
    };
    let boundary = if n_owned < n {
        boundary_members(
            &run,
            &linked.cell_start,
            &linked.parent,
            &linked.order,
            &part,
        )?
    } else {
        Vec::new()
    };
    run.stage("boundary + labels")?;
    Ok(SlabCatalogue {
        halos,
        labels,
        n_interior_sets: part.n_sets_all_sizes,
        boundary,
        stage_seconds: run.into_stages(),
    })
}

/// (local index, root) of every member of a set with a ghost, by increasing index: compacted on
/// the device into a buffer of one slot per 64 particles (at least 65536), and again at the
/// exact size when that was too small.
fn boundary_members(
    run: &DeviceRun<'_>,
    cell_start: &CudaSlice<u32>,
    parent: &CudaSlice<u32>,
    order: &CudaSlice<u32>,
    part: &super::partition::PartitionOnDevice,
) -> Result<Vec<(u32, u32)>, FofError> {
    let stream = run.stream;
    let n = order.len();
    // At least 65536 slots, never more than the particles (a small slab has fewer).
    let mut capacity = (n / 64).max(1 << 16).min(n.max(1));
    loop {
        let mut counter = zeros::<u32>(stream, 1)?;
        let mut member = alloc::<u32>(stream, capacity)?;
        let mut member_set = alloc::<u32>(stream, capacity)?;
        let args = BoundaryArgs {
            cell_start,
            parent,
            order,
            has_ghost: &part.has_ghost,
            n_cells: part.n_cells as u32,
            capacity: capacity as u32,
            counter: &mut counter,
            member: &mut member,
            member_set: &mut member_set,
        };
        // SAFETY: members of cell c lie in 0..n of order; parent[c] < n_cells indexes
        // has_ghost; slots at or beyond capacity are never written.
        unsafe {
            gpu::launch(
                stream,
                &run.kernels.boundary_members,
                per_element(part.n_cells, 0),
                args,
            )
        }?;
        let total = stream.clone_dtoh(&counter)?[0] as usize;
        if total > capacity {
            capacity = total;
            continue;
        }
        if total == 0 {
            return Ok(Vec::new());
        }
        let index = stream.clone_dtoh(&member.slice(0..total))?;
        let set = stream.clone_dtoh(&member_set.slice(0..total))?;
        let mut pairs: Vec<(u32, u32)> = index.into_iter().zip(set).collect();
        pairs.par_sort_unstable();
        return Ok(pairs);
    }
}
