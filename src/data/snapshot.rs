use super::cosmology::Cosmology;
use super::kernel::{KernelConvention, SimCode};
use super::units::{FieldUnits, Units};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A particle family. Gadget PartType0 = gas, 1 = dark, 4 = star, 2/3/5 = other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpeciesKind {
    /// Gas (SPH) particles.
    Gas,
    /// Dark matter.
    Dark,
    /// Stars.
    Star,
    /// Everything else (Gadget PartType2, 3, 5 together).
    Other,
}

impl SpeciesKind {
    /// Every kind, in file order (gas, dark, star, other).
    pub const ALL: [SpeciesKind; 4] = [Self::Gas, Self::Dark, Self::Star, Self::Other];

    /// The name used on the command line, in JSON and in the GUI.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gas => "gas",
            Self::Dark => "dark",
            Self::Star => "star",
            Self::Other => "other",
        }
    }

    /// Parses `gas`, `dark`, `star` or `other` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name.trim()))
    }
}

impl std::fmt::Display for SpeciesKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Particle masses: one value for all (Gadget `MassTable`) or one per particle.
#[derive(Debug, Clone, PartialEq)]
pub enum Masses {
    /// Every particle has this mass.
    Uniform(f32),
    /// One mass per particle.
    PerParticle(Vec<f32>),
}

impl Masses {
    /// Mass of particle `i`.
    pub fn get(&self, i: usize) -> f32 {
        match self {
            Self::Uniform(m) => *m,
            Self::PerParticle(v) => v[i],
        }
    }
}

/// A named scalar per particle (`Density`, `InternalEnergy`, tipsy `rho`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The file's own name for it.
    pub name: String,
    /// One value per particle.
    pub values: Vec<f32>,
    /// Unit attributes from the file (e.g. Gadget-4 `to_cgs`, `a_scaling`), as text.
    pub units: BTreeMap<String, String>,
}

impl Field {
    /// The file's unit attributes of this field, typed.
    pub fn field_units(&self) -> FieldUnits {
        FieldUnits::from_attributes(&self.units)
    }
}

/// One particle family: structure of arrays, all of the same length.
#[derive(Debug, Clone, PartialEq)]
pub struct Species {
    /// Which family.
    pub kind: SpeciesKind,
    /// World positions in the file's length unit.
    pub positions: Vec<[f32; 3]>,
    /// Masses.
    pub masses: Masses,
    /// Velocities, where the file has them.
    pub velocities: Option<Vec<[f32; 3]>>,
    /// Particle IDs, where the file has them.
    pub ids: Option<Vec<u64>>,
    /// SPH smoothing lengths (world units), where the file has them.
    pub smoothing_lengths: Option<Vec<f32>>,
    /// Kernel support radius over h of the file's smoothing lengths (2 tipsy, 1 Gadget/AREPO,
    /// γ SWIFT); `None` when the lengths are estimates (kNN, demo) in the drawing convention.
    pub kernel_support: Option<f32>,
    /// Other named scalars.
    pub fields: Vec<Field>,
    /// Per-particle datasets the reader left out, as (name, why), e.g. a 2-D `Density`.
    pub left_out: Vec<(String, String)>,
}

impl Species {
    /// An empty family of `kind`.
    pub fn empty(kind: SpeciesKind) -> Self {
        Self {
            kind,
            positions: Vec::new(),
            masses: Masses::PerParticle(Vec::new()),
            velocities: None,
            ids: None,
            smoothing_lengths: None,
            kernel_support: None,
            fields: Vec::new(),
            left_out: Vec::new(),
        }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether there are no particles.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The named scalar `name`, matched case-insensitively.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }

    /// Names of every per-particle quantity: `mass`, `SmoothingLength` when present, the named
    /// scalars, `velocity` and `id` when present.
    pub fn field_names(&self) -> Vec<String> {
        let mut names = vec!["mass".to_owned()];
        if self.smoothing_lengths.is_some() {
            names.push("SmoothingLength".to_owned());
        }
        names.extend(self.fields.iter().map(|f| f.name.clone()));
        if self.velocities.is_some() {
            names.push("velocity".to_owned());
        }
        if self.ids.is_some() {
            names.push("id".to_owned());
        }
        names
    }
}

/// Header facts about the whole snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Header {
    /// Time (the expansion factor in comoving runs).
    pub time: f64,
    /// Redshift, where the file gives it or it follows from a comoving time.
    pub redshift: Option<f64>,
    /// Side of the periodic box in length units, where there is one.
    pub box_size: Option<f64>,
    /// Whether the box is periodic.
    pub periodic: bool,
    /// Cosmology and other parameters (`HubbleParam`, `Omega0`, `OmegaLambda`, ...).
    pub parameters: BTreeMap<String, f64>,
    /// The unit system of the code quantities.
    pub units: Units,
    /// The cosmology, from the parameters.
    pub cosmology: Cosmology,
    /// The code that wrote the file.
    pub code: SimCode,
    /// What the file's smoothing lengths mean.
    pub kernel: KernelConvention,
}

impl Header {
    /// The box side when the box is periodic (the minimum image applies), else `None`.
    pub fn periodic_box(&self) -> Option<f64> {
        self.box_size.filter(|_| self.periodic)
    }

    /// The expansion factor a of this snapshot (1 outside comoving runs).
    pub fn scale_factor(&self) -> f64 {
        self.cosmology.scale_factor(self.time)
    }
}

/// File formats Haloscope reads snapshots from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotFormat {
    /// Tipsy binary.
    Tipsy,
    /// Gadget/SWIFT/AREPO HDF5.
    GadgetHdf5,
    /// The built-in synthetic snapshot.
    Demo,
}

impl SnapshotFormat {
    /// Name used in `info --json`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tipsy => "tipsy",
            Self::GadgetHdf5 => "gadget-hdf5",
            Self::Demo => "demo",
        }
    }
}

/// Where a snapshot came from and how it was encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceInfo {
    /// The files read (several for multi-file Gadget snapshots; none for the demo).
    pub paths: Vec<PathBuf>,
    /// The format.
    pub format: SnapshotFormat,
    /// "big" or "little" (tipsy only).
    pub byte_order: Option<String>,
    /// Header size in bytes (tipsy only: 32 or 28).
    pub header_bytes: Option<u32>,
    /// Particles in the file(s) before any subsampling.
    pub particles_in_file: u64,
}

/// A particle snapshot: header plus one [`Species`] per family present, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Header facts.
    pub header: Header,
    /// Families present, in the order gas, dark, star, other.
    pub species: Vec<Species>,
    /// Where it came from.
    pub source: SourceInfo,
}

impl Snapshot {
    /// Total number of particles kept.
    pub fn n_particles(&self) -> usize {
        self.species.iter().map(Species::len).sum()
    }

    /// The family `kind`, if present.
    pub fn species(&self, kind: SpeciesKind) -> Option<&Species> {
        self.species.iter().find(|s| s.kind == kind)
    }

    /// The unit of field `name` of family `kind` for labels ("K", "1e10 Msun/h / (ckpc/h)^3",
    /// "g/cm^3"): the field's own `unit` attribute, else the snapshot's unit system where it
    /// knows physical units; `None` when nothing is known.
    pub fn unit_label(&self, kind: SpeciesKind, name: &str) -> Option<String> {
        let own = self
            .species(kind)
            .and_then(|s| s.field(name))
            .and_then(|f| f.units.get("unit").cloned());
        let known = self.header.units.length_cm.is_some();
        own.or_else(|| {
            self.header
                .units
                .field_unit(name)
                .filter(|u| known || u == "K")
        })
    }

    /// The family `kind`, mutable, if present.
    pub fn species_mut(&mut self, kind: SpeciesKind) -> Option<&mut Species> {
        self.species.iter_mut().find(|s| s.kind == kind)
    }
}
