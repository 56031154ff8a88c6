//! Why a friends-of-friends run could not be done.

use crate::gpu::GpuError;
use crate::jobs::Cancelled;

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
    /// The lowest-mass separation was asked for, but some mass is not finite and positive.
    #[error(
        "cannot take the linking length from the lowest-mass particles: a particle mass is zero, negative or not finite"
    )]
    InvalidMassesForSeparation,
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
    /// The CUDA linker failed (out of device memory, a driver or compile error).
    #[error("CUDA friends-of-friends: {0}")]
    Gpu(#[from] GpuError),
    /// The user cancelled.
    #[error("friends-of-friends cancelled")]
    Cancelled,
    /// The cross-domain merge met an inconsistent message.
    #[error("friends-of-friends domain merge: particle {id}: {rule}")]
    DomainMerge {
        /// Global id of the particle concerned.
        id: u64,
        /// The rule it broke.
        rule: &'static str,
    },
    /// A message between domains has a length that is not a whole number of records.
    #[error(
        "friends-of-friends domain message {what}: {len} bytes is not a whole number of {record}-byte records"
    )]
    DomainMessage {
        /// Which message.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The record size.
        record: usize,
    },
    /// The split of the particles over the devices' slabs could not be made.
    #[error("friends-of-friends split on the devices: {0}")]
    DeviceSplit(String),
    /// A domain's worker thread panicked.
    #[error("friends-of-friends: a domain's worker thread stopped unexpectedly")]
    DomainPanicked,
    /// A slab sent back another number of labels than it owns of this rank's particles.
    #[error(
        "friends-of-friends over ranks: slab {slab} sent {sent} labels back for the {expected} particles of this rank it owns"
    )]
    LabelsBack {
        /// The slab (rank) that sent them.
        slab: usize,
        /// How many it sent.
        sent: usize,
        /// How many of this rank's particles it owns.
        expected: usize,
    },
    /// Another MPI rank failed; its own error is reported there.
    #[error("friends-of-friends stopped: another rank failed ({0})")]
    OtherRankFailed(&'static str),
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
