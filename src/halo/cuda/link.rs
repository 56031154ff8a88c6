//! The CUDA linker's passes up to the compressed union-find: cell keys, sort by cell, sorted
//! positions and cells, linking (`link_cells.rs`), compression. Everything stays on the device
//! for the partition and catalogue passes.

use super::grid::{GridSpec, grid_spec, point_bounds};
use super::link_cells::{LinkGeometry, SortedCells, link_by_blocks};
use super::stencil::half_stencil_offsets;
use super::support::DeviceRun;
use crate::gpu::{self, alloc, per_element, upload_pinned};
use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use cudarc::driver::CudaSlice;

/// What to link: `points` with `linking_length` (periodic inside `frame` when given).
#[derive(Debug, Clone, Copy)]
pub(super) struct LinkRequest<'a> {
    pub(super) points: Points<'a>,
    pub(super) linking_length: f64,
    pub(super) frame: Option<BoxFrame>,
}

/// The positions to link: on the host (uploaded by the linker), or already on the device.
#[derive(Debug, Clone, Copy)]
pub(super) enum Points<'a> {
    Host(&'a [[f32; 3]]),
    Device {
        /// 3·`n` floats (x, y, z per particle), left as they are.
        positions: &'a CudaSlice<f32>,
        n: usize,
        /// A box holding every position (lower and upper corner), for an open grid.
        bounds: ([f32; 3], [f32; 3]),
    },
}

impl Points<'_> {
    /// Number of particles.
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Host(positions) => positions.len(),
            Self::Device { n, .. } => *n,
        }
    }
}

/// Positions on the device: uploaded here (freed once gathered) or the caller's.
enum DevicePositions<'a> {
    Uploaded(CudaSlice<f32>),
    Borrowed(&'a CudaSlice<f32>),
}

impl DevicePositions<'_> {
    fn slice(&self) -> &CudaSlice<f32> {
        match self {
            Self::Uploaded(positions) => positions,
            Self::Borrowed(positions) => positions,
        }
    }
}

/// The linked cells left on the device by [`link_on_device`].
pub(super) struct Linked {
    /// Cell c's members are sorted positions `cell_start[c]..cell_start[c + 1]`.
    pub(super) cell_start: CudaSlice<u32>,
    /// Sorted position → particle index.
    pub(super) order: CudaSlice<u32>,
    /// Per cell: the root cell of its set (compressed: every entry is a root).
    pub(super) parent: CudaSlice<u32>,
    /// Number of non-empty cells.
    pub(super) n_cells: usize,
    /// Wrapped float64 positions in sorted order (x, y, z).
    pub(super) sorted_positions: [CudaSlice<f64>; 3],
}

/// The periodic frame as the kernels take it: (periodic flag, lower corner, size), zeros when
/// open.
#[derive(Debug, Clone, Copy)]
pub(super) struct DeviceFrame {
    pub(super) periodic: i32,
    pub(super) box_lower: f64,
    pub(super) box_size: f64,
}

impl DeviceFrame {
    fn of(frame: Option<BoxFrame>) -> Self {
        match frame {
            Some(f) => Self {
                periodic: 1,
                box_lower: f.lower,
                box_size: f.size,
            },
            None => Self {
                periodic: 0,
                box_lower: 0.0,
                box_size: 0.0,
            },
        }
    }
}

crate::kernel_args! {
    /// `fof_cell_keys`: `pos` holds 3·`n` floats, `keys` and `values` `n` elements; one thread
    /// per particle.
    struct CellKeysArgs<'a> {
        pos: &'a CudaSlice<f32>,
        n: u32,
        periodic: i32,
        box_lower: f64,
        box_size: f64,
        lower_x: f64,
        lower_y: f64,
        lower_z: f64,
        side: f64,
        dim_x: u32,
        dim_y: u32,
        dim_z: u32,
        keys: &'a mut CudaSlice<u64>,
        values: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_gather`: `pos` holds 3·`n` floats; `order` (a permutation of 0..n), `sorted_keys`,
    /// `sx`, `sy`, `sz` and `head` hold `n` elements; one thread per sorted position.
    struct GatherArgs<'a> {
        pos: &'a CudaSlice<f32>,
        order: &'a CudaSlice<u32>,
        sorted_keys: &'a CudaSlice<u64>,
        n: u32,
        periodic: i32,
        box_lower: f64,
        box_size: f64,
        sx: &'a mut CudaSlice<f64>,
        sy: &'a mut CudaSlice<f64>,
        sz: &'a mut CudaSlice<f64>,
        head: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_cells`: `head`, `cell_of_head` (its exclusive scan), `sx`, `sy`, `sz` hold `n`
    /// elements; `cell_start` holds n_cells + 1, `cell_coords` n_cells; one thread per sorted
    /// position.
    struct CellsArgs<'a> {
        head: &'a CudaSlice<u32>,
        cell_of_head: &'a CudaSlice<u32>,
        sx: &'a CudaSlice<f64>,
        sy: &'a CudaSlice<f64>,
        sz: &'a CudaSlice<f64>,
        n: u32,
        lower_x: f64,
        lower_y: f64,
        lower_z: f64,
        side: f64,
        dim_x: u32,
        dim_y: u32,
        dim_z: u32,
        cell_start: &'a mut CudaSlice<u32>,
        cell_coords: &'a mut CudaSlice<u64>,
    }
}

crate::kernel_args! {
    /// `fof_init_parent` and `fof_compress`: `parent` holds `n_cells` entries; one thread per
    /// cell.
    struct ParentArgs<'a> {
        parent: &'a mut CudaSlice<u32>,
        n_cells: u32,
    }
}

/// Particles keyed by cell, in input order: the positions on the device, the cell keys and the
/// particle indices.
struct Keyed<'a> {
    positions: DevicePositions<'a>,
    keys: CudaSlice<u64>,
    indices: CudaSlice<u32>,
}

/// The non-empty cells in sorted order.
struct Cells {
    cell_start: CudaSlice<u32>,
    cell_coords: CudaSlice<u64>,
    n_cells: usize,
    sorted_positions: [CudaSlice<f64>; 3],
}

/// Links on the device: keys, sort, cells, link and compression.
pub(super) fn link_on_device(
    run: &mut DeviceRun<'_>,
    request: &LinkRequest<'_>,
) -> Result<Linked, FofError> {
    let n = request.points.len();
    if n >= (i32::MAX as usize) {
        return Err(FofError::TooManyParticles(n));
    }
    run.progress.check()?;
    let bounds = match request.points {
        Points::Host(positions) => request.frame.is_none().then(|| point_bounds(positions)),
        Points::Device { bounds, .. } => Some(bounds),
    };
    let spec = grid_spec(bounds, request.linking_length, request.frame)?;
    let frame = DeviceFrame::of(request.frame);
    let keyed = key_particles(run, request, &spec, frame)?;
    let (sorted_keys, order) = sort_by_cell(run, keyed.keys, keyed.indices, n, &spec)?;
    let cells = find_cells(run, keyed.positions, sorted_keys, &order, &spec, frame)?;
    let parent = link_and_compress(run, &cells, &spec, frame, request)?;
    Ok(Linked {
        cell_start: cells.cell_start,
        order,
        parent,
        n_cells: cells.n_cells,
        sorted_positions: cells.sorted_positions,
    })
}

/// Pass 1: upload the positions (unless on the device already) and key every particle by its
/// cell's Morton key.
fn key_particles<'a>(
    run: &mut DeviceRun<'_>,
    request: &LinkRequest<'a>,
    spec: &GridSpec,
    frame: DeviceFrame,
) -> Result<Keyed<'a>, FofError> {
    let n = request.points.len();
    let stream = run.stream;
    let dims = spec.dims32();
    run.progress.report("cuda: cell keys", 0, 1);
    // Mapping the run's device memory into the pool on a second thread while the positions
    // upload was tried: the later passes gained about 0.2 s at 4x10^8 on an H200, the upload
    // lost as much (the driver's mapping slows the copies), 0.78-0.96 s against 0.83-0.92 s.
    let positions = match request.points {
        Points::Host(positions) => {
            DevicePositions::Uploaded(upload_pinned(run.device, positions.as_flattened())?)
        }
        Points::Device { positions, .. } => DevicePositions::Borrowed(positions),
    };
    let mut keys = alloc::<u64>(stream, n)?;
    let mut indices = alloc::<u32>(stream, n)?;
    let args = CellKeysArgs {
        pos: positions.slice(),
        n: n as u32,
        periodic: frame.periodic,
        box_lower: frame.box_lower,
        box_size: frame.box_size,
        lower_x: spec.lower[0],
        lower_y: spec.lower[1],
        lower_z: spec.lower[2],
        side: spec.side,
        dim_x: dims[0],
        dim_y: dims[1],
        dim_z: dims[2],
        keys: &mut keys,
        values: &mut indices,
    };
    // SAFETY: positions hold 3n floats; keys and indices hold n elements; one thread per
    // particle, guarded by i < n in the kernel.
    unsafe { gpu::launch(stream, &run.kernels.cell_keys, per_element(n, 0), args) }?;
    run.stage("upload + cell keys")?;
    run.progress.check()?;
    Ok(Keyed {
        positions,
        keys,
        indices,
    })
}

/// Pass 2: stable radix sort of (cell key, particle index) on the key's significant bits.
fn sort_by_cell(
    run: &mut DeviceRun<'_>,
    keys: CudaSlice<u64>,
    indices: CudaSlice<u32>,
    n: usize,
    spec: &GridSpec,
) -> Result<(CudaSlice<u64>, CudaSlice<u32>), FofError> {
    run.progress.report("cuda: sort", 0, 1);
    let key_bits = spec.key_bits();
    let sorted = run
        .kernels
        .sort
        .sort_pairs(keys, indices, n as u32, key_bits)?;
    run.stage("radix sort")?;
    run.progress.check()?;
    Ok(sorted)
}

/// Pass 3 (the positions and keys are freed once gathered): wrapped float64 positions in sorted
/// order, then the cells: a head flag where a new
/// cell starts, its scan numbering the cells, each cell's first member and coordinates.
fn find_cells(
    run: &mut DeviceRun<'_>,
    positions: DevicePositions<'_>,
    sorted_keys: CudaSlice<u64>,
    order: &CudaSlice<u32>,
    spec: &GridSpec,
    frame: DeviceFrame,
) -> Result<Cells, FofError> {
    // The sort's buffers hold exactly n elements (n ≥ 1 here).
    let n = order.len();
    let stream = run.stream;
    let n32 = n as u32;
    let dims = spec.dims32();
    run.progress.report("cuda: cells", 0, 1);
    let mut sx = alloc::<f64>(stream, n)?;
    let mut sy = alloc::<f64>(stream, n)?;
    let mut sz = alloc::<f64>(stream, n)?;
    let mut head = alloc::<u32>(stream, n)?;
    let args = GatherArgs {
        pos: positions.slice(),
        order,
        sorted_keys: &sorted_keys,
        n: n32,
        periodic: frame.periodic,
        box_lower: frame.box_lower,
        box_size: frame.box_size,
        sx: &mut sx,
        sy: &mut sy,
        sz: &mut sz,
        head: &mut head,
    };
    // SAFETY: order is a permutation of 0..n (indices into the n positions); every array
    // holds n elements; one thread per sorted position, guarded by s < n.
    unsafe { gpu::launch(stream, &run.kernels.gather, per_element(n, 0), args) }?;
    drop(positions);
    drop(sorted_keys);
    let head_scan = run.kernels.sort.scan().exclusive(&head, n)?;
    let n_cells = run.kernels.sort.scan().total(&head, &head_scan, n)?;
    let mut cell_start = alloc::<u32>(stream, n_cells + 1)?;
    let mut cell_coords = alloc::<u64>(stream, n_cells)?;
    let args = CellsArgs {
        head: &head,
        cell_of_head: &head_scan,
        sx: &sx,
        sy: &sy,
        sz: &sz,
        n: n32,
        lower_x: spec.lower[0],
        lower_y: spec.lower[1],
        lower_z: spec.lower[2],
        side: spec.side,
        dim_x: dims[0],
        dim_y: dims[1],
        dim_z: dims[2],
        cell_start: &mut cell_start,
        cell_coords: &mut cell_coords,
    };
    // SAFETY: head_scan[s] < n_cells for every head s, and the last thread writes index
    // n_cells of cell_start, which holds n_cells + 1 entries.
    unsafe { gpu::launch(stream, &run.kernels.cells, per_element(n, 0), args) }?;
    drop(head);
    drop(head_scan);
    run.stage("gather + cells")?;
    run.progress.check()?;
    Ok(Cells {
        cell_start,
        cell_coords,
        n_cells,
        sorted_positions: [sx, sy, sz],
    })
}

/// Pass 4: every cell its own set, the neighbour cells linked (by 4×4×4 blocks of the Morton
/// order), then every cell pointed at its set's root.
fn link_and_compress(
    run: &mut DeviceRun<'_>,
    cells: &Cells,
    spec: &GridSpec,
    frame: DeviceFrame,
    request: &LinkRequest<'_>,
) -> Result<CudaSlice<u32>, FofError> {
    let stream = run.stream;
    let n_cells = cells.n_cells;
    let n_cells32 = n_cells as u32;
    let stencil = half_stencil_offsets(request.linking_length, spec.side);
    let stencil_dev = stream.clone_htod(&stencil)?;
    let mut parent = alloc::<u32>(stream, n_cells)?;
    let args = ParentArgs {
        parent: &mut parent,
        n_cells: n_cells32,
    };
    // SAFETY: parent holds n_cells entries; guarded by c < n_cells.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.init_parent,
            per_element(n_cells, 0),
            args,
        )
    }?;
    let geometry = LinkGeometry {
        n_particles: request.points.len(),
        n_cells,
        dims32: spec.dims32(),
        periodic: frame.periodic,
        box_size: frame.box_size,
        ll2: request.linking_length * request.linking_length,
        stencil: &stencil_dev,
        n_stencil: (stencil.len() / 3) as u32,
    };
    let [sx, sy, sz] = &cells.sorted_positions;
    let sorted = SortedCells {
        cell_start: &cells.cell_start,
        cell_coords: &cells.cell_coords,
        sx,
        sy,
        sz,
    };
    link_by_blocks(run, &sorted, &geometry, &stencil, &mut parent)?;
    run.stage("link")?;
    run.progress.check()?;
    let args = ParentArgs {
        parent: &mut parent,
        n_cells: n_cells32,
    };
    // SAFETY: parent holds n_cells entries, all < n_cells.
    unsafe { gpu::launch(stream, &run.kernels.compress, per_element(n_cells, 0), args) }?;
    Ok(parent)
}
