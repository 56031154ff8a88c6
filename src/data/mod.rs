//! Snapshot and event-list models, and the readers that fill them.
//!
//! Every reader checks what a header claims against the file before allocating and turns bad
//! input into a [`ReadError`] that names the file and the problem.

mod error;
mod events_model;
mod gadget_hdf5_meta;
mod gadget_hdf5_write;
mod gadget_region;
mod snapshot;
mod subsample;
mod tipsy_format;
mod tipsy_region;
mod tipsy_write;
mod write_error;

pub mod demo;
pub mod events;
pub mod gadget_hdf5;
pub mod region;
pub mod tipsy;

pub use error::ReadError;
pub use events_model::EventList;
pub use snapshot::{
    Field, Header, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
};
pub use subsample::Subsample;
pub use write_error::WriteError;

use crate::jobs::Progress;
use std::path::Path;

/// Options shared by the snapshot readers.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Keep at most this many particles in total (uniform subsample, deterministic); `None` = all.
    pub max_particles: Option<u64>,
}

/// What a file turned out to be.
#[derive(Debug)]
pub enum Loaded {
    /// A particle snapshot.
    Snapshot(Snapshot),
    /// A list of neutrino events.
    Events(EventList),
}

/// Reads a snapshot, choosing the reader from the file's content (HDF5 signature, tipsy header).
pub fn load_snapshot(
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    reject_directory(path)?;
    if gadget_hdf5::looks_like_hdf5(path)? {
        gadget_hdf5::read(path, options, progress)
    } else {
        tipsy::read(path, options, progress)
    }
}

/// Reads a snapshot or an event list, whichever the file is.
pub fn load_any(
    path: &Path,
    options: &LoadOptions,
    progress: &Progress,
) -> Result<Loaded, ReadError> {
    reject_directory(path)?;
    if events::looks_like_events(path)? {
        events::read(&[path], progress).map(Loaded::Events)
    } else {
        load_snapshot(path, options, progress).map(Loaded::Snapshot)
    }
}

/// A directory opens like a file on Linux and only fails on the first read; say what it is.
fn reject_directory(path: &Path) -> Result<(), ReadError> {
    if path.is_dir() {
        return Err(ReadError::invalid(
            path,
            "is a directory, not a snapshot or event list",
        ));
    }
    Ok(())
}
