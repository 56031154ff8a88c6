//! What a friends-of-friends run is asked (parameters, the request every back-end takes) and
//! what it returns.

use super::catalogue::Halo;
use super::error::FofError;
use super::periodic::BoxFrame;
use super::resolution::{LinkingLengthSource, SeparationFrom};
use crate::backend::BackendKind;
use crate::data::Masses;

/// How the linking length is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkingLength {
    /// `b` times a particle separation: the mean (V/N)^(1/3), or on a zoom-in the lowest-mass
    /// particles' ([`FofParams::separation_from`]).
    Relative(f64),
    /// An absolute length in position units.
    Absolute(f64),
}

/// Parameters of one friends-of-friends run.
#[derive(Debug, Clone, PartialEq)]
pub struct FofParams {
    /// Linking length, relative (`b`) or absolute.
    pub linking_length: LinkingLength,
    /// Which particles' separation a relative linking length multiplies.
    pub separation_from: SeparationFrom,
    /// Smallest set kept as a halo.
    pub min_members: usize,
    /// Side of the periodic box; `None` for open boundaries.
    pub box_size: Option<f64>,
    /// Whether to return per-particle labels ([`FofResult::labels`]). Off by default: at 10⁸
    /// particles they are 0.4 GB that the CUDA back-end would download (~0.03 s) for callers
    /// that only want the catalogue; the catalogue is the same either way.
    pub labels: bool,
}

impl Default for FofParams {
    fn default() -> Self {
        Self {
            linking_length: LinkingLength::Relative(0.2),
            separation_from: SeparationFrom::Auto,
            min_members: 20,
            box_size: None,
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
    /// Which particles set the linking length.
    pub linking_length_from: LinkingLengthSource,
    /// Smallest set kept as a halo.
    pub min_members: usize,
    /// The periodic box frame, `None` for open boundaries.
    pub frame: Option<BoxFrame>,
    /// The back-end that ran.
    pub backend: BackendKind,
    /// Seconds of each device stage, in run order (empty when the CPU ran).
    pub stage_seconds: Vec<(&'static str, f64)>,
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

/// One catalogue to build, the same request for every back-end: link `positions` with
/// `linking_length` (periodic inside `frame` when given), keep the sets of at least
/// `min_members`, and return per-particle labels only when `with_labels`.
#[derive(Debug, Clone, Copy)]
pub struct CatalogueRequest<'a> {
    /// Particle positions.
    pub positions: &'a [[f32; 3]],
    /// Particle masses (one per position, or one for all).
    pub masses: &'a Masses,
    /// Particle velocities, one per position, if any.
    pub velocities: Option<&'a [[f32; 3]]>,
    /// Linking length in position units.
    pub linking_length: f64,
    /// The periodic box frame, `None` for open boundaries.
    pub frame: Option<BoxFrame>,
    /// Smallest set kept as a halo.
    pub min_members: usize,
    /// Whether per-particle labels are returned.
    pub with_labels: bool,
}

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
