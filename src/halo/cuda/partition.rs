//! The catalogue's first step on the device, after the link (`link.rs`): set sizes and smallest
//! members by atomics, the kept sets (sorted into catalogue order on the host), each kept root's
//! halo rank and, when asked for, per-particle halo labels.

use super::link::{LinkRequest, Linked, link_on_device};
use super::support::DeviceRun;
use crate::gpu::{self, alloc, fill_bytes, per_element, zeros};
use crate::halo::catalogue::GroupKey;
use crate::halo::error::FofError;
use cudarc::driver::CudaSlice;
use rayon::prelude::*;

/// The catalogue's first step left on the device by [`partition_on_device`].
pub(super) struct PartitionOnDevice {
    /// Per particle (input order): halo rank, all ones when not kept; `None` when not asked
    /// for (the catalogue sums need only `rank_of_cell`).
    pub(super) labels: Option<CudaSlice<u32>>,
    /// Per cell: the halo rank of its set when the cell is a kept root, else all ones.
    pub(super) rank_of_cell: CudaSlice<u32>,
    /// Kept sets in catalogue order.
    pub(super) groups: Vec<GroupKey>,
    /// Number of sets of every size.
    pub(super) n_sets_all_sizes: usize,
    /// Number of non-empty cells.
    pub(super) n_cells: usize,
    /// Per cell: 1 when it is the root of a set with a ghost member, else 0.
    pub(super) has_ghost: CudaSlice<u32>,
}

crate::kernel_args! {
    /// `fof_labels`: cells as [`Linked`] (`n_cells` cells over n sorted positions), `set_ids`
    /// one per particle; one thread per cell.
    pub(super) struct LabelsArgs<'a> {
        pub(super) cell_start: &'a CudaSlice<u32>,
        pub(super) parent: &'a CudaSlice<u32>,
        pub(super) order: &'a CudaSlice<u32>,
        pub(super) n_cells: u32,
        pub(super) set_ids: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_set_stats`: cells as [`Linked`]; `set_size` and `set_min` `n_cells` entries each
    /// (zeros and all ones); one thread per cell.
    struct SetStatsArgs<'a> {
        cell_start: &'a CudaSlice<u32>,
        parent: &'a CudaSlice<u32>,
        order: &'a CudaSlice<u32>,
        n_cells: u32,
        set_size: &'a mut CudaSlice<u32>,
        set_min: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_kept_sets`: `parent`, `set_size`, `set_min` hold `n_cells` entries; `counters` two
    /// zeroed words; the kept arrays `capacity` slots; one thread per cell.
    struct KeptSetsArgs<'a> {
        parent: &'a CudaSlice<u32>,
        set_size: &'a CudaSlice<u32>,
        set_min: &'a CudaSlice<u32>,
        has_ghost: &'a CudaSlice<u32>,
        n_cells: u32,
        min_members: u32,
        capacity: u32,
        counters: &'a mut CudaSlice<u32>,
        kept_root: &'a mut CudaSlice<u32>,
        kept_size: &'a mut CudaSlice<u32>,
        kept_min: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_ghost_sets`: cells as [`Linked`]; `has_ghost` `n_cells` zeros; one thread per cell.
    struct GhostSetsArgs<'a> {
        cell_start: &'a CudaSlice<u32>,
        parent: &'a CudaSlice<u32>,
        order: &'a CudaSlice<u32>,
        n_cells: u32,
        n_owned: u32,
        has_ghost: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_rank_roots`: `ranked_roots` holds at least `n_kept` roots, each below the length
    /// of `rank_of_cell` (n_cells); one thread per kept set.
    struct RankRootsArgs<'a> {
        ranked_roots: &'a CudaSlice<u32>,
        n_kept: u32,
        rank_of_cell: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_halo_labels`: as [`LabelsArgs`], plus `rank_of_cell` of `n_cells` entries.
    struct HaloLabelsArgs<'a> {
        cell_start: &'a CudaSlice<u32>,
        parent: &'a CudaSlice<u32>,
        order: &'a CudaSlice<u32>,
        rank_of_cell: &'a CudaSlice<u32>,
        n_cells: u32,
        labels: &'a mut CudaSlice<u32>,
    }
}

/// Per set (indexed by its root cell): its size and smallest member.
struct SetStats {
    size: CudaSlice<u32>,
    min: CudaSlice<u32>,
}

/// The kept sets as the device found them.
struct Kept {
    /// Root cell of each kept set, with its size and smallest member, in catalogue order.
    ranked: Vec<(GroupKey, u32)>,
    /// Number of sets of every size.
    n_roots: usize,
}

/// Links on the device, then set sizes, smallest members, kept sets (sorted on the host) and
/// per-particle halo labels (only when `with_labels`), all left on the device with the linked
/// cells. The particles at `n_owned` and beyond are a domain's ghosts: the sets holding one are
/// neither counted nor kept (all are owned when `n_owned` is the particle count).
pub(super) fn partition_on_device(
    run: &mut DeviceRun<'_>,
    request: &LinkRequest<'_>,
    n_owned: usize,
    min_members: usize,
    with_labels: bool,
) -> Result<(Linked, PartitionOnDevice), FofError> {
    let linked = link_on_device(run, request)?;
    let stats = set_stats(run, &linked)?;
    let has_ghost = ghost_sets(run, &linked, n_owned, request.points.len())?;
    let kept = kept_sets(
        run,
        &linked,
        &stats,
        &has_ghost,
        request.points.len(),
        min_members,
    )?;
    let rank_of_cell = rank_kept_roots(run, &linked, &kept)?;
    let labels = if with_labels {
        Some(halo_labels(
            run,
            &linked,
            &rank_of_cell,
            request.points.len(),
        )?)
    } else {
        None
    };
    run.stage(if with_labels {
        "sets + kept + labels"
    } else {
        "sets + kept"
    })?;
    let n_cells = linked.n_cells;
    Ok((
        linked,
        PartitionOnDevice {
            labels,
            rank_of_cell,
            groups: kept.ranked.iter().map(|(g, _)| *g).collect(),
            n_sets_all_sizes: kept.n_roots,
            n_cells,
            has_ghost,
        },
    ))
}

/// Every cell adds its member count to its root's set size and its smallest particle index to
/// the root's smallest member.
fn set_stats(run: &DeviceRun<'_>, linked: &Linked) -> Result<SetStats, FofError> {
    let stream = run.stream;
    let n_cells = linked.n_cells;
    // Set sizes start at 0, smallest members at u32::MAX (all one bits).
    let mut size = zeros::<u32>(stream, n_cells)?;
    let mut min = alloc::<u32>(stream, n_cells)?;
    fill_bytes(stream, &mut min, 0xff)?;
    let args = SetStatsArgs {
        cell_start: &linked.cell_start,
        parent: &linked.parent,
        order: &linked.order,
        n_cells: n_cells as u32,
        set_size: &mut size,
        set_min: &mut min,
    };
    // SAFETY: parent[c] < n_cells indexes set_size and set_min (n_cells each); members of
    // cell c lie in 0..n of order.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.set_stats,
            per_element(n_cells, 0),
            args,
        )
    }?;
    Ok(SetStats { size, min })
}

/// Per cell: 1 when it roots a set with a member at `n_owned` or beyond (a ghost), else 0; all
/// zeros without a launch when every one of the `n` particles is owned.
fn ghost_sets(
    run: &DeviceRun<'_>,
    linked: &Linked,
    n_owned: usize,
    n: usize,
) -> Result<CudaSlice<u32>, FofError> {
    let stream = run.stream;
    let n_cells = linked.n_cells;
    let mut has_ghost = zeros::<u32>(stream, n_cells)?;
    if n_owned < n {
        let args = GhostSetsArgs {
            cell_start: &linked.cell_start,
            parent: &linked.parent,
            order: &linked.order,
            n_cells: n_cells as u32,
            n_owned: n_owned as u32,
            has_ghost: &mut has_ghost,
        };
        // SAFETY: members of cell c lie in 0..n of order; parent[c] < n_cells indexes
        // has_ghost.
        unsafe {
            gpu::launch(
                stream,
                &run.kernels.ghost_sets,
                per_element(n_cells, 0),
                args,
            )
        }?;
    }
    Ok(has_ghost)
}

/// The roots of the sets without ghosts with at least `min_members` members, found on the
/// device in a racy order, brought back and sorted into catalogue order (size descending, then
/// smallest member).
fn kept_sets(
    run: &DeviceRun<'_>,
    linked: &Linked,
    stats: &SetStats,
    has_ghost: &CudaSlice<u32>,
    n: usize,
    min_members: usize,
) -> Result<Kept, FofError> {
    let stream = run.stream;
    let n_cells = linked.n_cells;
    // At most n / min_members sets have min_members members or more.
    let capacity = n / min_members.max(1) + 1;
    let mut counters = zeros::<u32>(stream, 2)?;
    let mut kept_root = alloc::<u32>(stream, capacity)?;
    let mut kept_size = alloc::<u32>(stream, capacity)?;
    let mut kept_min = alloc::<u32>(stream, capacity)?;
    let args = KeptSetsArgs {
        parent: &linked.parent,
        set_size: &stats.size,
        set_min: &stats.min,
        has_ghost,
        n_cells: n_cells as u32,
        min_members: u32::try_from(min_members.max(1)).unwrap_or(u32::MAX),
        capacity: capacity as u32,
        counters: &mut counters,
        kept_root: &mut kept_root,
        kept_size: &mut kept_size,
        kept_min: &mut kept_min,
    };
    // SAFETY: arrays of n_cells entries indexed by c < n_cells; kept slots are written only
    // below capacity; counters holds 2 words.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.kept_sets,
            per_element(n_cells, 0),
            args,
        )
    }?;
    let counts = stream.clone_dtoh(&counters)?;
    let (n_roots, n_kept) = (counts[0] as usize, (counts[1] as usize).min(capacity));
    let mut ranked: Vec<(GroupKey, u32)> = Vec::with_capacity(n_kept);
    if n_kept > 0 {
        let roots = stream.clone_dtoh(&kept_root.slice(0..n_kept))?;
        let sizes = stream.clone_dtoh(&kept_size.slice(0..n_kept))?;
        let mins = stream.clone_dtoh(&kept_min.slice(0..n_kept))?;
        for ((root, size), min_index) in roots.into_iter().zip(sizes).zip(mins) {
            ranked.push((GroupKey { size, min_index }, root));
        }
    }
    // The device found the kept sets in a racy order; the catalogue order is total.
    ranked.par_sort_unstable_by_key(|(g, _)| (std::cmp::Reverse(g.size), g.min_index));
    Ok(Kept { ranked, n_roots })
}

/// Per cell: the halo rank of its set when it is a kept root, else −1 (all one bits).
fn rank_kept_roots(
    run: &DeviceRun<'_>,
    linked: &Linked,
    kept: &Kept,
) -> Result<CudaSlice<u32>, FofError> {
    let stream = run.stream;
    let n_kept = kept.ranked.len();
    let mut ranked_roots: Vec<u32> = kept.ranked.iter().map(|(_, root)| *root).collect();
    ranked_roots.push(0); // never read: keeps the upload non-empty
    let ranked_roots_dev = stream.clone_htod(&ranked_roots)?;
    // Rank −1 (all one bits) for every set not kept.
    let mut rank_of_cell = alloc::<u32>(stream, linked.n_cells)?;
    fill_bytes(stream, &mut rank_of_cell, 0xff)?;
    let args = RankRootsArgs {
        ranked_roots: &ranked_roots_dev,
        n_kept: n_kept as u32,
        rank_of_cell: &mut rank_of_cell,
    };
    // SAFETY: ranked_roots holds n_kept (+1) roots, each < n_cells.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.rank_roots,
            per_element(n_kept, 0),
            args,
        )
    }?;
    Ok(rank_of_cell)
}

/// Per particle (input order, `n` of them): the halo rank of its set, or −1 (all one bits).
fn halo_labels(
    run: &DeviceRun<'_>,
    linked: &Linked,
    rank_of_cell: &CudaSlice<u32>,
    n: usize,
) -> Result<CudaSlice<u32>, FofError> {
    let stream = run.stream;
    let mut labels = alloc::<u32>(stream, n)?;
    let args = HaloLabelsArgs {
        cell_start: &linked.cell_start,
        parent: &linked.parent,
        order: &linked.order,
        rank_of_cell,
        n_cells: linked.n_cells as u32,
        labels: &mut labels,
    };
    // SAFETY: as fof_labels; rank_of_cell holds n_cells entries indexed by roots.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.halo_labels,
            per_element(linked.n_cells, 0),
            args,
        )
    }?;
    Ok(labels)
}
