//! Friends-of-friends (FoF) halos: the CPU linker, the halo catalogue and its export.
//!
//! DESIGN §5. [`find_halos`] takes plain arrays (what the GUI overlay and movie presets call);
//! [`fof_snapshot`] selects species from a [`Snapshot`] first. The back-end is chosen by
//! [`FofBackend`]: the CPU linker lives in `fof_cpu.rs`, its CUDA twin beside it in
//! `fof_cuda.rs` returns the same partition as per-particle set ids, from which `catalogue.rs`
//! builds the same catalogue.

mod brute_force;
pub mod catalogue;
pub mod export;
mod fof_cpu;
mod fof_cuda;
mod fof_cuda_catalogue;
mod fof_cuda_link;
mod fof_cuda_support;
mod grid;
pub mod periodic;
mod selection;
pub mod synthetic;
mod union_find;

pub use brute_force::link_components_brute_force;
pub use catalogue::{Catalogue, Halo};
pub use fof_cpu::link_components;
pub use fof_cuda::{
    CellOrder, CudaLinkOutput, CudaPartitionOutput, half_stencil_offsets, link_components_cuda,
    partition_cuda,
};
pub use fof_cuda_catalogue::{CudaCatalogueOutput, catalogue_cuda};
pub use periodic::BoxFrame;
pub use selection::{SelectedParticles, parse_species, select_particles, snapshot_box_size};
pub use union_find::AtomicUnionFind;

use crate::data::{Masses, Snapshot, SpeciesKind};
use crate::gpu::{BackendChoice, GpuError, ResolvedBackend, resolve_backend};
use crate::jobs::{Cancelled, Progress};

/// How the linking length is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkingLength {
    /// `b` times the mean inter-particle separation (V/N)^(1/3).
    Relative(f64),
    /// An absolute length in position units.
    Absolute(f64),
}

/// Which implementation links the particles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FofBackend {
    /// CUDA when a device opens, else the CPU (with one log line saying why).
    #[default]
    Auto,
    /// The rayon CPU linker.
    Cpu,
    /// The CUDA linker (kernels/fof.cu).
    Cuda,
}

impl FofBackend {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Cpu => "cpu",
            Self::Cuda => "cuda",
        }
    }
}

/// Parameters of one friends-of-friends run.
#[derive(Debug, Clone, PartialEq)]
pub struct FofParams {
    /// Linking length, relative (`b`) or absolute.
    pub linking_length: LinkingLength,
    /// Smallest set kept as a halo.
    pub min_members: usize,
    /// Side of the periodic box; `None` for open boundaries.
    pub box_size: Option<f64>,
    /// Which implementation to use.
    pub backend: FofBackend,
    /// Whether to return per-particle labels ([`FofResult::labels`]). Off by default: at 10⁸
    /// particles they are 0.4 GB that the CUDA back-end would download (~0.03 s) for callers
    /// that only want the catalogue; the catalogue is the same either way.
    pub labels: bool,
}

impl Default for FofParams {
    fn default() -> Self {
        Self {
            linking_length: LinkingLength::Relative(0.2),
            min_members: 20,
            box_size: None,
            backend: FofBackend::Auto,
            labels: false,
        }
    }
}

/// What a friends-of-friends run found.
#[derive(Debug, Clone, PartialEq)]
pub struct FofResult {
    /// Per particle (selection order): index of its halo in `halos`, or −1; `Some` exactly
    /// when [`FofParams::labels`] asked for them (both back-ends).
    pub labels: Option<Vec<i32>>,
    /// Halos by size descending, ties by smallest member index.
    pub halos: Vec<Halo>,
    /// Number of particles linked.
    pub n_particles: usize,
    /// Number of friends-of-friends sets of every size, singletons included.
    pub n_sets_all_sizes: usize,
    /// `b` when the linking length was relative.
    pub b: Option<f64>,
    /// Mean inter-particle separation (V/N)^(1/3).
    pub mean_separation: f64,
    /// Linking length used, in position units.
    pub linking_length: f64,
    /// Smallest set kept as a halo.
    pub min_members: usize,
    /// The periodic box frame, `None` for open boundaries.
    pub frame: Option<BoxFrame>,
    /// The back-end that ran.
    pub backend: FofBackend,
}

impl FofResult {
    /// Whether the box was periodic.
    pub fn periodic(&self) -> bool {
        self.frame.is_some()
    }

    /// Side of the periodic box, if any.
    pub fn box_size(&self) -> Option<f64> {
        self.frame.map(|f| f.size)
    }

    /// Number of particles in kept halos.
    pub fn n_particles_in_groups(&self) -> usize {
        self.halos.iter().map(|h| h.size).sum()
    }
}

/// Why a friends-of-friends run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum FofError {
    /// No particle selected.
    #[error("no particles selected for friends-of-friends (selection: {selection})")]
    EmptySelection {
        /// The species asked for.
        selection: String,
    },
    /// A species name that is not gas, dark, star, other or all.
    #[error("unknown species {0:?}: expected all, gas, dark, star or other (comma lists allowed)")]
    UnknownSpecies(String),
    /// `b` not positive and finite.
    #[error("b must be a positive number, got {0}")]
    InvalidB(f64),
    /// Absolute linking length not positive and finite.
    #[error("linking length must be a positive number, got {0}")]
    InvalidLinkingLength(f64),
    /// The mean separation cannot be computed (e.g. all points on a plane, open boundaries).
    #[error(
        "cannot derive a linking length from b: the particles' bounding box has volume {volume}; give an absolute linking length"
    )]
    DegenerateVolume {
        /// The bounding-box volume.
        volume: f64,
    },
    /// `min_members` of zero.
    #[error("min members must be at least 1")]
    InvalidMinMembers,
    /// Box size not positive and finite.
    #[error("box size must be a positive number, got {0}")]
    InvalidBoxSize(f64),
    /// The particles span more than the periodic box.
    #[error("box size {box_size} is smaller than the data extent {extent} along {axis}")]
    BoxSmallerThanData {
        /// The box side.
        box_size: f64,
        /// The particles' extent along `axis`.
        extent: f64,
        /// `x`, `y` or `z`.
        axis: char,
    },
    /// A coordinate is NaN or infinite.
    #[error("particle {index} has a non-finite coordinate {value}")]
    NonFiniteCoordinate {
        /// Particle index in the selection.
        index: usize,
        /// The coordinate.
        value: f32,
    },
    /// Per-particle arrays of different lengths.
    #[error("{what} has {got} entries, expected one per particle ({expected})")]
    LengthMismatch {
        /// Which array.
        what: &'static str,
        /// Particle count.
        expected: usize,
        /// Its length.
        got: usize,
    },
    /// More particles than 32-bit indices allow.
    #[error("{0} particles: at most 2^31 − 1 can be linked in one run")]
    TooManyParticles(usize),
    /// The linking length is tiny relative to the data extent.
    #[error(
        "linking length too small for the data extent: the cell grid would need {cells_per_axis} cells per axis (at most {max})"
    )]
    GridTooFine {
        /// Cells per axis that would be needed.
        cells_per_axis: f64,
        /// The limit.
        max: u64,
    },
    /// The asked-for back-end is not in this build or on this machine.
    #[error("{0}")]
    BackendUnavailable(String),
    /// The CUDA linker failed (out of device memory, a driver or compile error).
    #[error("CUDA friends-of-friends: {0}")]
    Gpu(#[from] GpuError),
    /// The user cancelled.
    #[error("friends-of-friends cancelled")]
    Cancelled,
}

impl From<cudarc::driver::DriverError> for FofError {
    fn from(error: cudarc::driver::DriverError) -> Self {
        Self::Gpu(GpuError::Driver(error))
    }
}

impl From<Cancelled> for FofError {
    fn from(_: Cancelled) -> Self {
        Self::Cancelled
    }
}

/// Finds friends-of-friends halos among `positions` (link when distance ≤ ll, float64 on the
/// float32 positions, minimum image in a periodic box) and builds their catalogue.
pub fn find_halos(
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    params: &FofParams,
    progress: &Progress,
) -> Result<FofResult, FofError> {
    let n = positions.len();
    check_inputs(positions, masses, velocities, params)?;
    let frame = match params.box_size {
        Some(size) => {
            check_extent(positions, size)?;
            Some(BoxFrame::for_positions(positions, size))
        }
        None => None,
    };
    let mean_separation = mean_separation(positions, frame);
    let (b, linking_length) = match params.linking_length {
        LinkingLength::Relative(b) => {
            if !(mean_separation.is_finite() && mean_separation > 0.0) {
                return Err(FofError::DegenerateVolume {
                    volume: mean_separation.powi(3) * n as f64,
                });
            }
            (Some(b), b * mean_separation)
        }
        LinkingLength::Absolute(ll) => (None, ll),
    };

    let (catalogue, backend) = catalogue_with_backend(
        positions,
        masses,
        velocities,
        linking_length,
        frame,
        params.backend,
        params.min_members,
        params.labels,
        progress,
    )?;
    Ok(FofResult {
        labels: catalogue.labels,
        halos: catalogue.halos,
        n_particles: n,
        n_sets_all_sizes: catalogue.n_sets_all_sizes,
        b,
        mean_separation,
        linking_length,
        min_members: params.min_members,
        frame,
        backend,
    })
}

/// The catalogue from the asked-for back-end, and the back-end that ran: `Auto` takes CUDA
/// when device 0 opens and falls back to the CPU with one log line; `Cuda` fails when it cannot
/// run. The CUDA back-end builds the whole catalogue on the device (`fof_cuda_catalogue.rs`:
/// labels, sizes and minima identical to the CPU's, float sums equal to rounding). Labels come
/// back only when `with_labels` (the CPU computes them anyway and drops them otherwise).
#[allow(clippy::too_many_arguments)]
fn catalogue_with_backend(
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    linking_length: f64,
    frame: Option<BoxFrame>,
    backend: FofBackend,
    min_members: usize,
    with_labels: bool,
    progress: &Progress,
) -> Result<(Catalogue, FofBackend), FofError> {
    let on_cpu = || -> Result<Catalogue, FofError> {
        let ids = link_components(positions, linking_length, frame, progress)?;
        progress.check()?;
        let partition = catalogue::partition(&ids, min_members);
        progress.check()?;
        progress.report("catalogue", 0, 1);
        let mut catalogue =
            catalogue::build_from_partition(partition, positions, masses, velocities, frame);
        if !with_labels {
            catalogue.labels = None;
        }
        progress.report("catalogue", 1, 1);
        Ok(catalogue)
    };
    let choice = match backend {
        FofBackend::Cpu => return Ok((on_cpu()?, FofBackend::Cpu)),
        FofBackend::Auto => BackendChoice::Auto,
        FofBackend::Cuda => BackendChoice::Cuda,
    };
    match resolve_backend(choice) {
        Ok(ResolvedBackend::Cuda(device)) => {
            let output = catalogue_cuda(
                &device,
                positions,
                masses,
                velocities,
                linking_length,
                frame,
                CellOrder::default(),
                min_members,
                with_labels,
                progress,
            )?;
            Ok((output.catalogue, FofBackend::Cuda))
        }
        Ok(ResolvedBackend::Cpu { fallback_reason }) => {
            if let Some(reason) = fallback_reason {
                log::warn!("friends-of-friends on the CPU: CUDA unavailable ({reason})");
            }
            Ok((on_cpu()?, FofBackend::Cpu))
        }
        Err(err) => Err(FofError::BackendUnavailable(format!(
            "CUDA back-end unavailable: {err}"
        ))),
    }
}

/// Selects `species` from `snapshot` (file order: gas, dark, star, other) and finds their halos.
pub fn fof_snapshot(
    snapshot: &Snapshot,
    species: &[SpeciesKind],
    params: &FofParams,
    progress: &Progress,
) -> Result<FofResult, FofError> {
    let selected = select_particles(snapshot, species)?;
    find_halos(
        &selected.positions,
        &selected.masses,
        selected.velocities.as_deref(),
        params,
        progress,
    )
}

/// Mean inter-particle separation (V/N)^(1/3): V = L³ when periodic, else the bounding-box
/// volume of the float32 positions (extents in float64). `powf(1/3)` rather than `cbrt`, to agree
/// bit for bit with the references (numpy `**(1/3)`).
pub fn mean_separation(positions: &[[f32; 3]], frame: Option<BoxFrame>) -> f64 {
    let volume = match frame {
        Some(frame) => frame.size.powi(3),
        None => {
            let extents = extents(positions);
            extents[0] * extents[1] * extents[2]
        }
    };
    (volume / positions.len() as f64).powf(1.0 / 3.0)
}

/// Per-axis max − min of the float32 positions, in float64.
fn extents(positions: &[[f32; 3]]) -> [f64; 3] {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for p in positions {
        for axis in 0..3 {
            lo[axis] = lo[axis].min(p[axis]);
            hi[axis] = hi[axis].max(p[axis]);
        }
    }
    [0, 1, 2].map(|axis| f64::from(hi[axis]) - f64::from(lo[axis]))
}

/// Validates sizes, numbers and parameters before any work.
/// Per-particle masses and velocities, where given, hold one entry per position (`n`).
pub(crate) fn check_lengths(
    n: usize,
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
) -> Result<(), FofError> {
    if let Masses::PerParticle(m) = masses
        && m.len() != n
    {
        return Err(FofError::LengthMismatch {
            what: "masses",
            expected: n,
            got: m.len(),
        });
    }
    if let Some(v) = velocities
        && v.len() != n
    {
        return Err(FofError::LengthMismatch {
            what: "velocities",
            expected: n,
            got: v.len(),
        });
    }
    Ok(())
}

fn check_inputs(
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    params: &FofParams,
) -> Result<(), FofError> {
    let n = positions.len();
    if n == 0 {
        return Err(FofError::EmptySelection {
            selection: "empty position array".to_owned(),
        });
    }
    if n > i32::MAX as usize {
        return Err(FofError::TooManyParticles(n));
    }
    check_lengths(n, masses, velocities)?;
    match params.linking_length {
        LinkingLength::Relative(b) if !(b.is_finite() && b > 0.0) => {
            return Err(FofError::InvalidB(b));
        }
        LinkingLength::Absolute(ll) if !(ll.is_finite() && ll > 0.0) => {
            return Err(FofError::InvalidLinkingLength(ll));
        }
        _ => {}
    }
    if params.min_members == 0 {
        return Err(FofError::InvalidMinMembers);
    }
    if let Some(size) = params.box_size
        && !(size.is_finite() && size > 0.0)
    {
        return Err(FofError::InvalidBoxSize(size));
    }
    for (index, p) in positions.iter().enumerate() {
        if let Some(&value) = p.iter().find(|x| !x.is_finite()) {
            return Err(FofError::NonFiniteCoordinate { index, value });
        }
    }
    Ok(())
}

/// The particles must fit in the box (to a relative 1e-5, for files that store x = L).
fn check_extent(positions: &[[f32; 3]], box_size: f64) -> Result<(), FofError> {
    for (axis, extent) in extents(positions).into_iter().enumerate() {
        if extent > box_size * (1.0 + 1e-5) {
            return Err(FofError::BoxSmallerThanData {
                box_size,
                extent,
                axis: ['x', 'y', 'z'][axis],
            });
        }
    }
    Ok(())
}
