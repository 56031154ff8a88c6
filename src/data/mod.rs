//! Snapshot and event-list models, and the readers that fill them.
//!
//! Every reader checks what a header claims against the file before allocating and turns bad
//! input into a [`ReadError`] that names the file and the problem.

mod error;
mod events_model;
mod gadget_hdf5_checks;
mod gadget_hdf5_meta;
mod gadget_hdf5_write;
mod gadget_region;
mod share_hdf5;
mod share_tipsy;
mod snapshot;
mod subsample;
mod temperature;
mod tipsy_format;
mod tipsy_kept;
mod tipsy_region;
mod tipsy_write;
mod validate;
mod write_error;

pub mod cosmology;
pub mod demo;
pub mod events;
pub mod gadget_hdf5;
pub mod kernel;
pub mod param_file;
pub mod region;
pub mod share;
pub mod tipsy;
pub mod units;

pub use error::ReadError;
pub use events_model::EventList;
pub use snapshot::{
    Field, Header, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
};
pub use subsample::Subsample;
pub use temperature::{TEMPERATURE_FIELD, add_temperature};
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
    let mut snapshot = if gadget_hdf5::looks_like_hdf5(path)? {
        gadget_hdf5::read(path, options, progress)?
    } else {
        let mut snapshot = tipsy::read(path, options, progress)?;
        tipsy_units(path, &mut snapshot)?;
        snapshot
    };
    add_temperature(&mut snapshot);
    Ok(snapshot)
}

/// Tipsy's units, cosmology and kernel convention: from a `.param` file beside the snapshot
/// when there is one, else box units. Tipsy gas h has support 2h.
fn tipsy_units(path: &Path, snapshot: &mut Snapshot) -> Result<(), ReadError> {
    let header = &mut snapshot.header;
    header.code = kernel::SimCode::Tipsy;
    header.kernel = kernel::KernelConvention::splotch();
    for sp in &mut snapshot.species {
        if sp.smoothing_lengths.is_some() {
            sp.kernel_support = Some(header.kernel.support_over_h);
        }
    }
    let Some(param) = param_file::find_beside(path) else {
        header.units.source = units::UnitSource::TipsyNoParam;
        return Ok(());
    };
    let params = param_file::read(&param)?;
    // A folder's lone .param that gives no units at all (another tool's file) is not ours.
    if !params.contains_key("dKpcUnit") && !params.contains_key("dMsolUnit") {
        header.units.source = units::UnitSource::TipsyNoParam;
        return Ok(());
    }
    let found = param_file::units(&param, &params)?;
    if let Some(h) = param_file::hubble_param(&params, &found) {
        header.parameters.insert("HubbleParam".to_owned(), h);
    }
    for (name, value) in &params {
        if ["dOmega0", "dLambda", "dOmegab", "bComove", "dHubble0"].contains(&name.as_str()) {
            header.parameters.insert(name.clone(), *value);
        }
    }
    header.units = found;
    header.cosmology =
        cosmology::Cosmology::from_parameters(&header.parameters, header.time, header.redshift);
    if header.cosmology.comoving && header.redshift.is_none() && header.time > 0.0 {
        header.redshift = Some(1.0 / header.time - 1.0);
    }
    Ok(())
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

/// Refuses what is not a regular file before opening it: a directory opens like a file on Linux
/// and only fails on the first read, a FIFO or device would block or never end the read.
fn reject_directory(path: &Path) -> Result<(), ReadError> {
    match crate::output::special_file_kind(path) {
        Some(kind) => Err(ReadError::invalid(
            path,
            format!("is {kind}, not a snapshot or event list"),
        )),
        None => Ok(()),
    }
}
