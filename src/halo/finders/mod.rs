//! Halo catalogues from other finders: Gadget-4/AREPO SUBFIND (`fof_subhalo_tab_NNN[.K].hdf5`),
//! Rockstar ASCII (`out_*.list`, `halos_*.ascii`) and AHF (`*_halos`), read into one
//! [`FinderCatalogue`] and shown like friends-of-friends results ([`FinderCatalogue::to_fof_result`]).
//!
//! Length units. Each reader converts radii into its positions' unit: Rockstar positions are in
//! Mpc/h and radii in kpc/h (its `#Units:` lines, read when present); AHF gives both in kpc/h;
//! SUBFIND writes the simulation's own unit (its `Parameters/UnitLength_in_cm`, when written).
//! [`FinderCatalogue::length_factor`] places the catalogue on a snapshot by this rule: the
//! snapshot's `UnitLength_in_cm` (1 kpc/h or 1 Mpc/h) when given; else the ratio of the two box
//! sizes when both are known and it is 1, 1000 or 1/1000; else an error naming both files. A
//! SUBFIND catalogue without units is in its snapshot's unit by construction (factor 1).
//! Masses stay in the catalogue's own unit ([`FinderCatalogue::mass_unit`]).

mod fof_file;
mod subfind;
mod text;

use super::params::FofResult;
use super::periodic::BoxFrame;
use super::resolution::LinkingLengthSource;
use super::{Halo, catalogue};
use crate::backend::BackendKind;
use crate::data::{Header, ReadError};
use std::path::{Path, PathBuf};

pub use fof_file::read_fof_catalogue;
pub use subfind::SubfindTable;

/// Which finder wrote a catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finder {
    /// SUBFIND (Gadget-4, AREPO) group files.
    Subfind,
    /// Rockstar ASCII halo lists.
    Rockstar,
    /// The Amiga Halo Finder's `_halos` files.
    Ahf,
}

impl Finder {
    /// The finder's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Subfind => "SUBFIND",
            Self::Rockstar => "Rockstar",
            Self::Ahf => "AHF",
        }
    }
}

/// A comoving length unit with h, as halo finders write them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthUnit {
    /// kpc/h.
    KpcH,
    /// Mpc/h.
    MpcH,
}

impl LengthUnit {
    /// The unit's size in kpc/h.
    pub fn in_kpc_h(self) -> f64 {
        match self {
            Self::KpcH => 1.0,
            Self::MpcH => 1000.0,
        }
    }

    /// `"kpc/h"` or `"Mpc/h"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::KpcH => "kpc/h",
            Self::MpcH => "Mpc/h",
        }
    }

    /// The unit of Gadget's `UnitLength_in_cm` (1 kpc/h or 1 Mpc/h within 1 %), else `None`.
    pub fn from_cm(cm: f64) -> Option<Self> {
        const KPC_CM: f64 = 3.085_678e21;
        [Self::KpcH, Self::MpcH]
            .into_iter()
            .find(|u| (cm / (KPC_CM * u.in_kpc_h()) - 1.0).abs() < 0.01)
    }

    /// The length unit a snapshot header records (`UnitLength_in_cm` in its parameters).
    pub fn of_snapshot(header: &Header) -> Option<Self> {
        header
            .parameters
            .get("UnitLength_in_cm")
            .and_then(|&cm| Self::from_cm(cm))
    }
}

/// One halo as a finder describes it, lengths in the catalogue's [`FinderCatalogue::length_unit`].
#[derive(Debug, Clone, PartialEq)]
pub struct FinderHalo {
    /// The finder's id (SUBFIND: the row number).
    pub id: i64,
    /// Host halo id for subhalos (SUBFIND subhalos: the group number), `None` for hosts.
    pub host: Option<i64>,
    /// Number of particles.
    pub n_particles: u64,
    /// Mass in [`FinderCatalogue::mass_unit`].
    pub mass: f64,
    /// Centre.
    pub centre: [f64; 3],
    /// Velocity, where the file gives one.
    pub velocity: Option<[f64; 3]>,
    /// The finder's radius (Rvir; SUBFIND groups R_Crit200, subhalos the half-mass radius).
    pub radius: f64,
}

/// A catalogue from another finder.
#[derive(Debug, Clone, PartialEq)]
pub struct FinderCatalogue {
    /// The finder that wrote it.
    pub finder: Finder,
    /// The files read (several for a multi-file SUBFIND catalogue).
    pub paths: Vec<PathBuf>,
    /// What the rows are (e.g. "groups", "subhalos", "halos").
    pub table: &'static str,
    /// Unit of centres and radii; `None`: the simulation's own (SUBFIND without units).
    pub length_unit: Option<LengthUnit>,
    /// Unit of the masses, as the finder defines it.
    pub mass_unit: &'static str,
    /// Name of the radius column.
    pub radius_name: &'static str,
    /// Periodic box side in [`Self::length_unit`], when the file records it.
    pub box_size: Option<f64>,
    /// Expansion factor, when the file records it.
    pub scale_factor: Option<f64>,
    /// The halos in file order.
    pub halos: Vec<FinderHalo>,
}

/// Whether `path` is a halo catalogue this module reads (by content, not by name).
pub fn looks_like_catalogue(path: &Path) -> Result<bool, ReadError> {
    // A folder, FIFO or device is no catalogue; reading one to find out could block forever.
    if crate::output::special_file_kind(path).is_some() {
        return Ok(false);
    }
    if crate::data::gadget_hdf5::looks_like_hdf5(path)? {
        return Ok(subfind::looks_like_subfind(path));
    }
    Ok(text::detect(path)?.is_some())
}

/// Reads a catalogue; SUBFIND files give `subfind_table`'s rows.
pub fn read_catalogue(
    path: &Path,
    subfind_table: SubfindTable,
) -> Result<FinderCatalogue, ReadError> {
    if let Some(kind) = crate::output::special_file_kind(path) {
        return Err(ReadError::invalid(
            path,
            format!("is {kind}, not a halo catalogue"),
        ));
    }
    if crate::data::gadget_hdf5::looks_like_hdf5(path)? {
        return subfind::read(path, subfind_table);
    }
    match text::detect(path)? {
        Some(finder) => text::read(path, finder),
        None => Err(ReadError::invalid(
            path,
            "not a halo catalogue: expected a SUBFIND HDF5 group file, or a first line \
             `#ID DescID Mvir …` (Rockstar) or `#ID(1) hostHalo(2) …` (AHF)",
        )),
    }
}

impl FinderCatalogue {
    /// The first file, which names the catalogue in messages.
    pub fn path(&self) -> &Path {
        self.paths.first().map_or(Path::new(""), PathBuf::as_path)
    }

    /// Factor from the catalogue's lengths to the snapshot's (module docs give the rule).
    pub fn length_factor(&self, snapshot: &Header) -> Result<f64, ReadError> {
        let Some(unit) = self.length_unit else {
            return Ok(1.0);
        };
        if let Some(target) = LengthUnit::of_snapshot(snapshot) {
            return Ok(unit.in_kpc_h() / target.in_kpc_h());
        }
        if let (Some(ours), Some(theirs)) = (self.box_size, snapshot.box_size) {
            let ratio = theirs / ours;
            if let Some(f) = [1.0, 1000.0, 1e-3]
                .into_iter()
                .find(|f| (ratio / f - 1.0).abs() < 1e-3)
            {
                return Ok(f);
            }
            return Err(ReadError::invalid(
                self.path(),
                format!(
                    "the catalogue's box ({ours} {}) and the snapshot's ({theirs}) differ by a \
                     factor of {ratio}, not 1 or 1000: is this the snapshot's catalogue?",
                    unit.name()
                ),
            ));
        }
        Err(ReadError::invalid(
            self.path(),
            format!(
                "lengths are in {} but the snapshot's length unit cannot be decided: it records \
                 no UnitLength_in_cm of 1 kpc/h or 1 Mpc/h, and no box size to compare with{}",
                unit.name(),
                if self.box_size.is_some() {
                    ""
                } else {
                    " (nor does the catalogue)"
                }
            ),
        ))
    }

    /// The halos in the model the window and the exports show, lengths times `factor`: size =
    /// particle count, `min_index` = row, both radii = the finder's radius.
    pub fn to_halos(&self, factor: f64) -> Vec<Halo> {
        self.halos
            .iter()
            .enumerate()
            .map(|(row, h)| catalogue::Halo {
                size: h.n_particles as usize,
                min_index: row,
                mass: h.mass,
                com: h.centre.map(|x| x * factor),
                velocity: h.velocity,
                radius_max: h.radius * factor,
                radius_rms: h.radius * factor,
            })
            .collect()
    }

    /// A [`FofResult`] holding these halos (no linking: `b` none, linking length 0), so the
    /// Halos panel shows, flies to and exports them like its own.
    pub fn to_fof_result(&self, factor: f64, frame: Option<BoxFrame>) -> FofResult {
        let halos = self.to_halos(factor);
        FofResult {
            labels: None,
            n_particles: halos.iter().map(|h| h.size).sum(),
            n_sets_all_sizes: halos.len(),
            halos,
            b: None,
            mean_separation: 0.0,
            linking_length: 0.0,
            linking_length_from: LinkingLengthSource::Mean { n: 0 },
            min_members: 0,
            frame,
            backend: BackendKind::Cpu,
            stage_seconds: Vec::new(),
        }
    }
}
