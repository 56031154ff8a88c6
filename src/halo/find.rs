//! The front door of the room: validate, derive the linking length, build the catalogue on the
//! resolved back-end ([`find_halos`]), or on a snapshot's species ([`fof_snapshot`]).

use super::catalogue::{self, Catalogue};
use super::cpu::catalogue_cpu;
use super::cuda::catalogue_cuda;
use super::domains::{DomainLinker, catalogue_in_domains, cuda_domains_for, link_in_domains};
use super::error::FofError;
use super::params::{CatalogueRequest, FofParams, FofResult, LinkingLength, check_lengths};
use super::periodic::BoxFrame;
use super::resolution::{self, LinkingLengthSource, SeparationFrom};
use super::selection::select_particles;
use crate::backend::{Backend, BackendKind};
use crate::data::{Masses, Snapshot, SpeciesKind};
use crate::jobs::Progress;
use rayon::prelude::*;

/// Finds friends-of-friends halos among `positions` (link when distance ≤ ll, float64 on the
/// float32 positions, minimum image in a periodic box) and builds their catalogue on `backend`:
/// [`prepare_fof`], then [`PreparedFof::find`].
pub fn find_halos(
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    params: &FofParams,
    backend: &Backend,
    progress: &Progress,
) -> Result<FofResult, FofError> {
    prepare_fof(positions, masses, velocities, params)?.find(backend, progress)
}

/// A validated run: the catalogue request (frame and linking length derived) and what the
/// result reports about it.
#[derive(Debug, Clone, Copy)]
pub struct PreparedFof<'a> {
    request: CatalogueRequest<'a>,
    b: Option<f64>,
    mean_separation: f64,
    source: LinkingLengthSource,
}

/// Validates the inputs and `params` and derives the periodic frame and the linking length,
/// before any back-end is opened (so that bad input is reported before any device message).
pub fn prepare_fof<'a>(
    positions: &'a [[f32; 3]],
    masses: &'a Masses,
    velocities: Option<&'a [[f32; 3]]>,
    params: &FofParams,
) -> Result<PreparedFof<'a>, FofError> {
    let n = positions.len();
    check_inputs(positions, masses, velocities, params)?;
    // One pass over the positions on every thread serves the checks and the derivations (at
    // 4×10⁸ particles each pass alone took about a second on one thread).
    let summary = PositionSummary::of(positions);
    if let Some((index, value)) = summary.first_non_finite {
        return Err(FofError::NonFiniteCoordinate { index, value });
    }
    let extents = summary.extents();
    let frame = match params.box_size {
        Some(size) => {
            check_extent(extents, size)?;
            Some(BoxFrame::with_lower_rule(summary.any_negative, size))
        }
        None => None,
    };
    let volume = volume_of(extents, frame);
    let mean_separation = mean_separation_in(volume, n);
    let (b, linking_length, source) = match params.linking_length {
        LinkingLength::Relative(b) => {
            if !(mean_separation.is_finite() && mean_separation > 0.0) {
                return Err(FofError::DegenerateVolume {
                    volume: mean_separation.powi(3) * n as f64,
                });
            }
            let (separation, source) = separation(masses, n, volume, mean_separation, params)?;
            (Some(b), b * separation, source)
        }
        LinkingLength::Absolute(ll) => (None, ll, LinkingLengthSource::Given),
    };
    Ok(PreparedFof {
        request: CatalogueRequest {
            positions,
            masses,
            velocities,
            linking_length,
            frame,
            min_members: params.min_members,
            with_labels: params.labels,
        },
        b,
        mean_separation,
        source,
    })
}

/// The separation a relative linking length multiplies, and what set it: the mean separation,
/// unless [`FofParams::separation_from`] asks for the lowest-mass particles' or is `Auto` on a
/// zoom-in (discrete mass levels spanning more than a factor of two, see [`resolution`]).
fn separation(
    masses: &Masses,
    n: usize,
    volume: f64,
    mean_separation: f64,
    params: &FofParams,
) -> Result<(f64, LinkingLengthSource), FofError> {
    let lowest = match params.separation_from {
        SeparationFrom::Mean => None,
        SeparationFrom::Auto => resolution::mass_levels(masses, n)
            .filter(|levels| resolution::is_zoom_in(levels))
            .and_then(|_| resolution::lowest_mass(masses, n)),
        SeparationFrom::LowestMass => {
            Some(resolution::lowest_mass(masses, n).ok_or(FofError::InvalidMassesForSeparation)?)
        }
    };
    Ok(match lowest {
        None => (mean_separation, LinkingLengthSource::Mean { n }),
        Some((mass, n_lowest, total)) => {
            let separation = resolution::lowest_mass_separation(mass, total, volume);
            (
                separation,
                LinkingLengthSource::LowestMass {
                    mass,
                    n_lowest,
                    n,
                    separation,
                },
            )
        }
    })
}

impl PreparedFof<'_> {
    /// Links and builds the catalogue on `backend`.
    pub fn find(self, backend: &Backend, progress: &Progress) -> Result<FofResult, FofError> {
        let Built {
            catalogue,
            backend,
            stage_seconds,
        } = catalogue_on(backend, &self.request, progress)?;
        Ok(self.result(catalogue, backend, stage_seconds))
    }
}

impl PreparedFof<'_> {
    /// Friends-of-friends on spatial domains (the same partition as [`PreparedFof::find`]).
    /// On CUDA devices each builds the catalogue of its slabs' sets without ghosts, and the
    /// sets that cross slabs are merged and catalogued on the CPU in member-index order
    /// (`domains/catalogue.rs`); on the CPU the merged set ids give the CPU's catalogue bit for
    /// bit. `domains`: how many slabs; `None` picks one per CUDA device, more when a device's
    /// free memory cannot hold its share, and one on the CPU. A CUDA failure that the
    /// back-end's fallback rule allows reruns the domains on the CPU.
    pub fn find_in_domains(
        self,
        backend: &Backend,
        domains: Option<usize>,
        progress: &Progress,
    ) -> Result<FofResult, FofError> {
        let request = self.request;
        let n = request.positions.len();
        let devices = backend.devices();
        if !devices.is_empty() {
            let on_cuda = || {
                let count = match domains {
                    Some(count) => count,
                    None => cuda_domains_for(n, devices)?,
                };
                catalogue_in_domains(&request, count, DomainLinker::Cuda(devices), progress)
            };
            match on_cuda() {
                Ok(output) => {
                    progress.check()?;
                    return Ok(self.result(
                        output.catalogue,
                        BackendKind::Cuda,
                        output.stage_seconds,
                    ));
                }
                Err(FofError::Gpu(err)) if backend.falls_back_after(&err) => {
                    backend
                        .clone()
                        .fall_back(format!("friends-of-friends on CUDA failed ({err})"));
                }
                Err(err) => return Err(err),
            }
        }
        let output = link_in_domains(
            request.positions,
            request.linking_length,
            request.frame,
            domains.unwrap_or(1),
            DomainLinker::Cpu,
            progress,
        )?;
        progress.check()?;
        Ok(self.finish(
            output.set_ids,
            BackendKind::Cpu,
            output.stage_seconds,
            progress,
        ))
    }

    /// The result from merged `set_ids` (one per particle, each the smallest index of its set,
    /// as [`link_in_domains`] returns them): the catalogue built on the CPU in member-index
    /// order, so bit for bit the CPU's, and `kind` the back-end that linked.
    pub fn finish(
        self,
        set_ids: Vec<u32>,
        kind: BackendKind,
        mut stage_seconds: Vec<(&'static str, f64)>,
        progress: &Progress,
    ) -> FofResult {
        let request = self.request;
        progress.report("catalogue", 0, 1);
        let start = std::time::Instant::now();
        let partition = catalogue::partition(&set_ids, request.min_members);
        drop(set_ids);
        let mut catalogue = catalogue::build_from_partition(
            partition,
            request.positions,
            request.masses,
            request.velocities,
            request.frame,
        );
        if !request.with_labels {
            catalogue.labels = None;
        }
        stage_seconds.push(("catalogue", start.elapsed().as_secs_f64()));
        progress.report("catalogue", 1, 1);
        self.result(catalogue, kind, stage_seconds)
    }

    /// The result of this run from its `catalogue`, made on `kind` in `stage_seconds`.
    fn result(
        self,
        catalogue: Catalogue,
        kind: BackendKind,
        stage_seconds: Vec<(&'static str, f64)>,
    ) -> FofResult {
        let request = self.request;
        FofResult {
            labels: catalogue.labels,
            halos: catalogue.halos,
            n_particles: request.positions.len(),
            n_sets_all_sizes: catalogue.n_sets_all_sizes,
            b: self.b,
            mean_separation: self.mean_separation,
            linking_length: request.linking_length,
            linking_length_from: self.source,
            min_members: request.min_members,
            frame: request.frame,
            backend: kind,
            stage_seconds,
        }
    }

    /// The linking length in position units.
    pub fn linking_length(&self) -> f64 {
        self.request.linking_length
    }

    /// The periodic frame, `None` for open boundaries.
    pub fn frame(&self) -> Option<BoxFrame> {
        self.request.frame
    }

    /// [`PreparedFof::find`] when one device (or the CPU) holds the whole run and no domain
    /// count is asked for (the single-process path, unchanged); else
    /// [`PreparedFof::find_in_domains`].
    pub fn find_spread(
        self,
        backend: &Backend,
        domains: Option<usize>,
        progress: &Progress,
    ) -> Result<FofResult, FofError> {
        let n = self.request.positions.len();
        let single = match (domains, backend.devices()) {
            (Some(count), _) => count <= 1 && backend.devices().len() <= 1,
            (None, []) => true,
            (None, devices) => {
                devices.len() == 1 && cuda_domains_for(n, devices).is_ok_and(|d| d == 1)
            }
        };
        if single {
            self.find(backend, progress)
        } else {
            self.find_in_domains(backend, domains, progress)
        }
    }
}

/// A catalogue, the back-end that made it and its device stage times (none on the CPU).
struct Built {
    catalogue: Catalogue,
    backend: BackendKind,
    stage_seconds: Vec<(&'static str, f64)>,
}

/// The catalogue from `backend`, and the back-end that made it. The CUDA back-end builds the
/// whole catalogue on the device (`cuda/catalogue.rs`: labels, sizes and minima identical to the
/// CPU's, float sums equal to rounding); when it fails and the back-end's fallback rule allows,
/// the CPU builds it instead.
fn catalogue_on(
    backend: &Backend,
    request: &CatalogueRequest<'_>,
    progress: &Progress,
) -> Result<Built, FofError> {
    if let Some(device) = backend.device() {
        match catalogue_cuda(device, request, progress) {
            Ok(output) => {
                return Ok(Built {
                    catalogue: output.catalogue,
                    backend: BackendKind::Cuda,
                    stage_seconds: output.stage_seconds,
                });
            }
            Err(FofError::Gpu(err)) if backend.falls_back_after(&err) => {
                backend
                    .clone()
                    .fall_back(format!("friends-of-friends on CUDA failed ({err})"));
            }
            Err(err) => return Err(err),
        }
    }
    Ok(Built {
        catalogue: catalogue_cpu(request, progress)?,
        backend: BackendKind::Cpu,
        stage_seconds: Vec::new(),
    })
}

/// Selects `species` from `snapshot` (file order: gas, dark, star, other) and finds their halos.
pub fn fof_snapshot(
    snapshot: &Snapshot,
    species: &[SpeciesKind],
    params: &FofParams,
    backend: &Backend,
    progress: &Progress,
) -> Result<FofResult, FofError> {
    let selected = select_particles(snapshot, species)?;
    find_halos(
        &selected.positions,
        &selected.masses,
        selected.velocities.as_deref(),
        params,
        backend,
        progress,
    )
}

/// Mean inter-particle separation (V/N)^(1/3), V from [`volume`].
pub fn mean_separation(positions: &[[f32; 3]], frame: Option<BoxFrame>) -> f64 {
    mean_separation_in(volume(positions, frame), positions.len())
}

/// (V/N)^(1/3) of `n` particles in `volume`, for callers that hold the volume and the count
/// (prepare_fof, MPI ranks): `powf(1/3)` rather than `cbrt`, to agree bit for bit with the
/// references (numpy `**(1/3)`).
pub(crate) fn mean_separation_in(volume: f64, n: usize) -> f64 {
    (volume / n as f64).powf(1.0 / 3.0)
}

/// The volume the particles fill: L³ when periodic, else the bounding box of the float32
/// positions (extents in float64).
pub fn volume(positions: &[[f32; 3]], frame: Option<BoxFrame>) -> f64 {
    match frame {
        Some(frame) => frame.size.powi(3),
        None => volume_of(PositionSummary::of(positions).extents(), frame),
    }
}

/// [`volume`] from the positions' per-axis `extents`.
fn volume_of(extents: [f64; 3], frame: Option<BoxFrame>) -> f64 {
    match frame {
        Some(frame) => frame.size.powi(3),
        None => extents[0] * extents[1] * extents[2],
    }
}

/// What the checks and the derivations need of the positions, from one pass on every thread.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PositionSummary {
    /// The first coordinate that is not finite: its particle's index and value.
    first_non_finite: Option<(usize, f32)>,
    /// Per-axis minimum and maximum of the finite coordinates.
    lo: [f32; 3],
    hi: [f32; 3],
    /// Whether any coordinate is below zero (the periodic frame's rule).
    any_negative: bool,
}

impl PositionSummary {
    /// Particles per piece of the parallel pass.
    const PIECE: usize = 1 << 16;

    fn empty() -> Self {
        Self {
            first_non_finite: None,
            lo: [f32::INFINITY; 3],
            hi: [f32::NEG_INFINITY; 3],
            any_negative: false,
        }
    }

    /// The summary of `positions`. Minima, maxima and "any" do not depend on the order in
    /// which pieces are joined, and the first non-finite index is the smallest of the pieces',
    /// so the result is the one a single thread's pass gives.
    fn of(positions: &[[f32; 3]]) -> Self {
        positions
            .par_chunks(Self::PIECE)
            .enumerate()
            .map(|(piece, chunk)| {
                let mut summary = Self::empty();
                for (k, p) in chunk.iter().enumerate() {
                    if summary.first_non_finite.is_none()
                        && let Some(&value) = p.iter().find(|x| !x.is_finite())
                    {
                        summary.first_non_finite = Some((piece * Self::PIECE + k, value));
                    }
                    for ((lo, hi), &x) in summary.lo.iter_mut().zip(&mut summary.hi).zip(p) {
                        *lo = lo.min(x);
                        *hi = hi.max(x);
                    }
                    summary.any_negative |= p.iter().any(|&x| x < 0.0);
                }
                summary
            })
            .reduce(Self::empty, Self::join)
    }

    fn join(a: Self, b: Self) -> Self {
        let first_non_finite = match (a.first_non_finite, b.first_non_finite) {
            (Some(x), Some(y)) => Some(if x.0 <= y.0 { x } else { y }),
            (x, y) => x.or(y),
        };
        Self {
            first_non_finite,
            lo: [0, 1, 2].map(|axis| a.lo[axis].min(b.lo[axis])),
            hi: [0, 1, 2].map(|axis| a.hi[axis].max(b.hi[axis])),
            any_negative: a.any_negative || b.any_negative,
        }
    }

    /// Per-axis max − min, in float64.
    fn extents(&self) -> [f64; 3] {
        [0, 1, 2].map(|axis| f64::from(self.hi[axis]) - f64::from(self.lo[axis]))
    }
}

/// Validates sizes and parameters before any work (the coordinates: [`PositionSummary`]).
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
    Ok(())
}

/// The particles (of per-axis `extents`) must fit in the box (to a relative 1e-5, for files
/// that store x = L).
fn check_extent(extents: [f64; 3], box_size: f64) -> Result<(), FofError> {
    for (axis, extent) in extents.into_iter().enumerate() {
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
