//! Gadget HDF5 headers: which files make up a snapshot, what each particle type holds, and the
//! checks of every claimed count against dataset shapes and stored bytes before allocation.

use super::cosmology::Cosmology;
use super::kernel::{KernelConvention, SimCode};
use super::units::{UnitSource, Units};
use super::{Header, ReadError, SpeciesKind};
use hdf5::types::TypeDescriptor;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Gadget has particle types 0..5.
const N_PART_TYPES: usize = 6;
/// Most files a multi-file snapshot may claim (a sanity bound on `NumFilesPerSnapshot`).
const MAX_FILES: u64 = 1 << 16;
/// Cosmology attributes taken from `Header` (other codes keep them in `Parameters`/`Cosmology`).
const HEADER_COSMOLOGY: [&str; 6] = [
    "HubbleParam",
    "Omega0",
    "OmegaLambda",
    "OmegaBaryon",
    "Omega_m",
    "Omega_lambda",
];

/// The species kind of Gadget particle type `ptype`.
fn kind_of_part_type(ptype: usize) -> SpeciesKind {
    match ptype {
        0 => SpeciesKind::Gas,
        1 => SpeciesKind::Dark,
        4 => SpeciesKind::Star,
        _ => SpeciesKind::Other,
    }
}

/// One open file of the snapshot.
pub(crate) struct SnapshotFile {
    pub path: PathBuf,
    pub handle: hdf5::File,
}

/// One particle type in one file.
pub(crate) struct Part {
    pub file: usize,
    pub ptype: usize,
    pub count: u64,
    /// Global index (across all species and files) of its first particle.
    pub global_first: u64,
    /// `Header/MassTable` mass, used when the part has no `Masses` dataset.
    pub table_mass: Option<f64>,
    /// `SmoothingLength` or `SmoothingLengths`, as named in this file.
    pub smoothing_name: Option<String>,
}

/// What one species will be read from.
pub(crate) struct PlannedSpecies {
    pub kind: SpeciesKind,
    pub parts: Vec<Part>,
    pub has_velocities: bool,
    pub has_ids: bool,
    pub has_smoothing: bool,
    /// Named scalars present in every part, with the first part's unit attributes.
    pub fields: Vec<(String, BTreeMap<String, String>)>,
}

/// Everything known before reading particle data.
pub(crate) struct Plan {
    pub files: Vec<SnapshotFile>,
    pub header: Header,
    pub species: Vec<PlannedSpecies>,
}

impl Plan {
    /// Number of values the read will go through (for progress).
    pub fn elements_to_read(&self) -> u64 {
        self.species
            .iter()
            .map(|s| {
                let n: u64 = s.parts.iter().map(|p| p.count).sum();
                let per = 3
                    + 3 * u64::from(s.has_velocities)
                    + u64::from(s.has_ids)
                    + u64::from(s.has_smoothing)
                    + s.fields.len() as u64;
                let uniform_table = s.parts.iter().all(|p| p.table_mass.is_some());
                // Masses are read from datasets for the parts without a table mass (and only
                // when the table masses differ between parts, which is rare).
                let masses: u64 = s
                    .parts
                    .iter()
                    .filter(|p| p.table_mass.is_none() && !uniform_table)
                    .map(|p| p.count)
                    .sum();
                n * per + masses
            })
            .sum()
    }
}

fn h5err(path: &Path, what: &str) -> impl Fn(hdf5::Error) -> ReadError {
    let path = path.to_path_buf();
    let what = what.to_owned();
    move |e| ReadError::invalid(&path, format!("{what}: {e}"))
}

/// Opens the snapshot's files and plans the read.
pub(crate) fn plan(path: &Path) -> Result<Plan, ReadError> {
    let first = hdf5::File::open(path).map_err(h5err(path, "cannot open as HDF5"))?;
    let header_group = first
        .group("Header")
        .map_err(h5err(path, "no `Header` group (not a Gadget snapshot)"))?;
    let n_files = match attr_f64s(&header_group, "NumFilesPerSnapshot") {
        Some(v) => v.first().copied().unwrap_or(1.0),
        None => 1.0,
    };
    if !(n_files >= 1.0 && n_files <= MAX_FILES as f64) {
        return Err(ReadError::invalid(
            path,
            format!("Header/NumFilesPerSnapshot is {n_files}, expected 1 to {MAX_FILES}"),
        ));
    }
    let mut files = vec![SnapshotFile {
        path: path.to_path_buf(),
        handle: first,
    }];
    if n_files > 1.0
        && let Some((stem, ext)) = split_multi_file_name(path)
    {
        files.clear();
        for k in 0..n_files as u64 {
            let p = path.with_file_name(format!("{stem}.{k}.{ext}"));
            let handle = hdf5::File::open(&p).map_err(h5err(
                &p,
                &format!("file {k} of {n_files} of the snapshot cannot be opened"),
            ))?;
            files.push(SnapshotFile { path: p, handle });
        }
    }
    let header = read_header(&files[0])?;
    let species = plan_species(&files)?;
    Ok(Plan {
        files,
        header,
        species,
    })
}

/// Splits the file name `name.K.ext` of a multi-file snapshot into (`name`, `ext`).
fn split_multi_file_name(path: &Path) -> Option<(String, String)> {
    let name = path.file_name()?.to_str()?;
    let (rest, ext) = name.rsplit_once('.')?;
    let (stem, index) = rest.rsplit_once('.')?;
    index.parse::<u64>().ok()?;
    Some((stem.to_owned(), ext.to_owned()))
}

/// Header facts from the first file.
fn read_header(file: &SnapshotFile) -> Result<Header, ReadError> {
    let h = file
        .handle
        .group("Header")
        .map_err(h5err(&file.path, "Header"))?;
    let scalar = |name: &str| attr_f64s(&h, name).and_then(|v| v.first().copied());
    let box_size = scalar("BoxSize").filter(|b| b.is_finite());
    let mut header = Header {
        time: scalar("Time").unwrap_or(0.0),
        redshift: scalar("Redshift"),
        box_size,
        periodic: box_size.is_some_and(|b| b > 0.0),
        ..Header::default()
    };
    for group_name in ["Parameters", "Cosmology"] {
        if let Ok(g) = file.handle.group(group_name) {
            for name in g.attr_names().unwrap_or_default() {
                if let Some([v]) = attr_f64s(&g, &name).as_deref() {
                    header.parameters.insert(name, *v);
                }
            }
        }
    }
    for name in HEADER_COSMOLOGY {
        if let Some(v) = scalar(name) {
            header.parameters.insert(name.to_owned(), v);
        }
    }
    header.cosmology = Cosmology::from_parameters(&header.parameters, header.time, header.redshift);
    header.code = detect_code(&file.handle);
    header.kernel = KernelConvention::of(header.code, swift_kernel_name(&file.handle).as_deref());
    header.units = read_units(&file.handle, header.code, header.cosmology.comoving);
    Ok(header)
}

/// The code that wrote the file: SWIFT names itself in `Code`; Gadget-4 and AREPO write
/// `Config` and `Parameters` (AREPO's parameters name its mesh, e.g. `CellShapingFactor`);
/// Gadget-2/3 HDF5 has only `Header`.
fn detect_code(file: &hdf5::File) -> SimCode {
    let names_swift = |g: &str| {
        file.group(g).is_ok_and(|g| {
            g.attr_names()
                .unwrap_or_default()
                .iter()
                .any(|n| attr_text(&g, n).is_some_and(|t| t.contains("SWIFT")))
        })
    };
    if names_swift("Code") || file.link_exists("SWIFT") {
        return SimCode::Swift;
    }
    let parameters = file.group("Parameters").ok();
    let arepo = parameters.as_ref().is_some_and(|g| {
        [
            "CellShapingFactor",
            "CellShapingSpeed",
            "CellMaxAngleFactor",
        ]
        .iter()
        .any(|n| g.attr(n).is_ok())
    });
    if arepo {
        SimCode::Arepo
    } else if file.link_exists("Config") || parameters.is_some() {
        SimCode::Gadget4
    } else {
        SimCode::Gadget2
    }
}

/// SWIFT's kernel name (`HydroScheme` "Kernel function"), where the file gives it.
fn swift_kernel_name(file: &hdf5::File) -> Option<String> {
    let g = file.group("HydroScheme").ok()?;
    attr_text(&g, "Kernel function")
}

/// The unit system: `UnitLength_in_cm` etc. (Gadget/AREPO, in `Parameters`, `Units` or
/// `Header`) or SWIFT's "Unit length in cgs (U_L)" etc.; absent, Gadget's defaults. Gadget and
/// AREPO code lengths and masses carry h⁻¹ in comoving runs; SWIFT's never do.
fn read_units(file: &hdf5::File, code: SimCode, comoving: bool) -> Units {
    let value = |names: [&str; 2]| {
        ["Units", "Parameters", "Header"].iter().find_map(|g| {
            let g = file.group(g).ok()?;
            names
                .iter()
                .find_map(|n| attr_f64s(&g, n).and_then(|v| v.first().copied()))
                .filter(|v| v.is_finite() && *v > 0.0)
        })
    };
    let length = value(["UnitLength_in_cm", "Unit length in cgs (U_L)"]);
    let mass = value(["UnitMass_in_g", "Unit mass in cgs (U_M)"]);
    let velocity =
        value(["UnitVelocity_in_cm_per_s", "Unit velocity in cgs (U_V)"]).or_else(|| {
            // SWIFT writes a time unit instead of a velocity unit.
            let time = value(["Unit time in cgs (U_t)", "UnitTime_in_s"])?;
            Some(length? / time)
        });
    let defaults = Units::gadget_defaults(comoving);
    if length.is_none() && mass.is_none() && velocity.is_none() && code != SimCode::Swift {
        return defaults;
    }
    Units {
        length_cm: length.or(defaults.length_cm),
        mass_g: mass.or(defaults.mass_g),
        velocity_cm_per_s: velocity.or(defaults.velocity_cm_per_s),
        comoving,
        per_h: comoving && code != SimCode::Swift,
        source: UnitSource::File,
    }
}

/// A string attribute (fixed or variable length) as text.
fn attr_text(loc: &hdf5::Location, name: &str) -> Option<String> {
    let attr = loc.attr(name).ok()?;
    match attr.dtype().ok()?.to_descriptor().ok()? {
        TypeDescriptor::VarLenUnicode => attr
            .read_scalar::<hdf5::types::VarLenUnicode>()
            .ok()
            .map(|s| s.as_str().to_owned()),
        TypeDescriptor::VarLenAscii => attr
            .read_scalar::<hdf5::types::VarLenAscii>()
            .ok()
            .map(|s| s.as_str().to_owned()),
        TypeDescriptor::FixedAscii(_) => attr
            .read_scalar::<hdf5::types::FixedAscii<1024>>()
            .ok()
            .map(|s| s.as_str().trim_end_matches('\0').to_owned()),
        TypeDescriptor::FixedUnicode(_) => attr
            .read_scalar::<hdf5::types::FixedUnicode<1024>>()
            .ok()
            .map(|s| s.as_str().trim_end_matches('\0').to_owned()),
        _ => None,
    }
}

/// A numeric attribute as f64 values (any length), or `None` when absent or not numeric.
pub(crate) fn attr_f64s(loc: &hdf5::Location, name: &str) -> Option<Vec<f64>> {
    let attr = loc.attr(name).ok()?;
    match attr.dtype().ok()?.to_descriptor().ok()? {
        TypeDescriptor::Float(_) | TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) => {
            attr.read_raw::<f64>().ok()
        }
        _ => None,
    }
}

/// Every attribute of a dataset as text (numbers formatted, strings as stored).
fn attrs_as_text(ds: &hdf5::Dataset) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for name in ds.attr_names().unwrap_or_default() {
        let Ok(attr) = ds.attr(&name) else { continue };
        let Ok(desc) = attr.dtype().and_then(|t| t.to_descriptor()) else {
            continue;
        };
        let text = match desc {
            TypeDescriptor::Float(_) | TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) => {
                match attr.read_raw::<f64>() {
                    Ok(v) if v.len() == 1 => Some(v[0].to_string()),
                    Ok(v) => Some(format!("{v:?}")),
                    Err(_) => None,
                }
            }
            TypeDescriptor::VarLenUnicode => attr
                .read_scalar::<hdf5::types::VarLenUnicode>()
                .ok()
                .map(|s| s.as_str().to_owned()),
            TypeDescriptor::VarLenAscii => attr
                .read_scalar::<hdf5::types::VarLenAscii>()
                .ok()
                .map(|s| s.as_str().to_owned()),
            _ => None,
        };
        if let Some(text) = text {
            out.insert(name, text);
        }
    }
    out
}

/// Per-type counts of one file, checked to be non-negative integers.
fn part_counts(file: &SnapshotFile) -> Result<([u64; N_PART_TYPES], Vec<f64>), ReadError> {
    let h = file
        .handle
        .group("Header")
        .map_err(h5err(&file.path, "Header"))?;
    let raw = attr_f64s(&h, "NumPart_ThisFile").ok_or_else(|| {
        ReadError::invalid(
            &file.path,
            "Header/NumPart_ThisFile is missing or not numeric",
        )
    })?;
    let mut counts = [0u64; N_PART_TYPES];
    for (k, &v) in raw.iter().enumerate() {
        if !(v >= 0.0 && v.fract() == 0.0 && v < 1e15) {
            return Err(ReadError::invalid(
                &file.path,
                format!("Header/NumPart_ThisFile[{k}] is {v}, expected a count ≥ 0"),
            ));
        }
        if k >= N_PART_TYPES {
            if v > 0.0 {
                return Err(ReadError::invalid(
                    &file.path,
                    format!("Header/NumPart_ThisFile[{k}] = {v}: Gadget has types 0 to 5"),
                ));
            }
            continue;
        }
        counts[k] = v as u64;
    }
    let table = attr_f64s(&h, "MassTable").unwrap_or_default();
    Ok((counts, table))
}

/// Plans every species over every file; checks counts against the `Coordinates` shapes.
fn plan_species(files: &[SnapshotFile]) -> Result<Vec<PlannedSpecies>, ReadError> {
    let mut per_file = Vec::new();
    for file in files {
        let (counts, table) = part_counts(file)?;
        // A type with data but no header entry (short per-type arrays) is a lie too.
        for (ptype, &count) in counts.iter().enumerate() {
            let group = format!("PartType{ptype}");
            if count == 0
                && let Ok(ds) = file.handle.dataset(&format!("{group}/Coordinates"))
                && ds.shape().first().copied().unwrap_or(0) > 0
            {
                return Err(ReadError::invalid(
                    &file.path,
                    format!(
                        "{group}/Coordinates has {} rows but Header/NumPart_ThisFile gives {group} 0 particles",
                        ds.shape()[0]
                    ),
                ));
            }
        }
        per_file.push((counts, table));
    }
    let mut planned = Vec::new();
    let mut global = 0u64;
    for kind in SpeciesKind::ALL {
        let mut parts = Vec::new();
        for ptype in (0..N_PART_TYPES).filter(|&t| kind_of_part_type(t) == kind) {
            for (f, (counts, table)) in per_file.iter().enumerate() {
                let count = counts[ptype];
                if count == 0 {
                    continue;
                }
                let part = plan_part(&files[f], f, ptype, count, global, table)?;
                global += count;
                parts.push(part);
            }
        }
        if parts.is_empty() {
            continue;
        }
        planned.push(plan_columns(files, kind, parts)?);
    }
    Ok(planned)
}

/// Checks one part's `Coordinates` and mass source.
fn plan_part(
    file: &SnapshotFile,
    f: usize,
    ptype: usize,
    count: u64,
    global_first: u64,
    table: &[f64],
) -> Result<Part, ReadError> {
    let group_name = format!("PartType{ptype}");
    let group = file.handle.group(&group_name).map_err(|_| {
        ReadError::invalid(
            &file.path,
            format!("{group_name} is missing but Header/NumPart_ThisFile[{ptype}] = {count}"),
        )
    })?;
    let coords = group.dataset("Coordinates").map_err(|_| {
        ReadError::invalid(
            &file.path,
            format!("{group_name}/Coordinates is missing ({count} particles claimed)"),
        )
    })?;
    check_dataset(&coords, count, 3)
        .map_err(|m| ReadError::invalid(&file.path, format!("{group_name}/Coordinates: {m}")))?;
    let has_masses = group.link_exists("Masses");
    let table_mass = table.get(ptype).copied().filter(|&m| m > 0.0);
    let table_mass = if has_masses { None } else { table_mass };
    if !has_masses && table_mass.is_none() {
        return Err(ReadError::invalid(
            &file.path,
            format!(
                "{group_name} has no Masses dataset and Header/MassTable[{ptype}] is not positive"
            ),
        ));
    }
    let smoothing_name = ["SmoothingLength", "SmoothingLengths"]
        .into_iter()
        .find(|n| group.link_exists(n))
        .map(str::to_owned);
    Ok(Part {
        file: f,
        ptype,
        count,
        global_first,
        table_mass,
        smoothing_name,
    })
}

/// Datasets named specially; everything else 1-D and numeric becomes a named scalar.
const SPECIAL: [&str; 6] = [
    "Coordinates",
    "Velocities",
    "ParticleIDs",
    "Masses",
    "SmoothingLength",
    "SmoothingLengths",
];

/// Which optional columns every part of a species has.
fn plan_columns(
    files: &[SnapshotFile],
    kind: SpeciesKind,
    parts: Vec<Part>,
) -> Result<PlannedSpecies, ReadError> {
    let mut has_velocities = true;
    let mut has_ids = true;
    let mut fields: Option<Vec<(String, BTreeMap<String, String>)>> = None;
    for part in &parts {
        let file = &files[part.file];
        let group_name = format!("PartType{}", part.ptype);
        let group = file
            .handle
            .group(&group_name)
            .map_err(h5err(&file.path, &group_name))?;
        has_velocities &= group.link_exists("Velocities");
        has_ids &= group.link_exists("ParticleIDs");
        let mut here = Vec::new();
        let mut names = group.member_names().unwrap_or_default();
        names.sort();
        for name in names {
            let Ok(ds) = group.dataset(&name) else {
                continue;
            };
            let width = match name.as_str() {
                "Coordinates" | "Velocities" => 3,
                _ => 1,
            };
            if SPECIAL.contains(&name.as_str()) {
                check_dataset(&ds, part.count, width).map_err(|m| {
                    ReadError::invalid(&file.path, format!("{group_name}/{name}: {m}"))
                })?;
                continue;
            }
            let numeric = matches!(
                ds.dtype().and_then(|t| t.to_descriptor()),
                Ok(TypeDescriptor::Float(_)
                    | TypeDescriptor::Integer(_)
                    | TypeDescriptor::Unsigned(_))
            );
            // Named scalars are 1-D with one value per particle; (N, k) arrays such as
            // element abundances are left out.
            if numeric && ds.shape() == [part.count as usize] {
                check_dataset(&ds, part.count, 1).map_err(|m| {
                    ReadError::invalid(&file.path, format!("{group_name}/{name}: {m}"))
                })?;
                here.push((name, attrs_as_text(&ds)));
            }
        }
        fields = Some(match fields {
            None => here,
            Some(prev) => prev
                .into_iter()
                .filter(|(n, _)| here.iter().any(|(h, _)| h == n))
                .collect(),
        });
    }
    let has_smoothing = parts.iter().all(|p| p.smoothing_name.is_some());
    Ok(PlannedSpecies {
        kind,
        parts,
        has_velocities,
        has_ids,
        has_smoothing,
        fields: fields.unwrap_or_default(),
    })
}

/// Checks that `ds` has `rows` rows of `width` values (shape `(rows,)` or `(rows, width)`) and
/// stores enough bytes for them, so a lying shape cannot make the reader allocate.
pub(crate) fn check_dataset(ds: &hdf5::Dataset, rows: u64, width: usize) -> Result<(), String> {
    super::gadget_hdf5_checks::refuse_external(ds)?;
    let shape = ds.shape();
    let expected: Vec<usize> = if width == 1 {
        vec![rows as usize]
    } else {
        vec![rows as usize, width]
    };
    if shape != expected {
        return Err(format!(
            "expected shape {expected:?} (from the header counts), found {shape:?}"
        ));
    }
    let element_bytes = ds.dtype().map(|t| t.size()).unwrap_or(0) as u64;
    let needed = rows * width as u64 * element_bytes;
    let stored = ds.storage_size();
    let filtered = ds.dcpl().map(|p| !p.filters().is_empty()).unwrap_or(false);
    // Compressed data can be smaller than its content, but not by more than a generous ratio.
    let enough = if filtered {
        needed <= stored.saturating_mul(1000) + (1 << 20)
    } else {
        stored >= needed
    };
    if !enough {
        return Err(format!(
            "{rows} rows need {needed} bytes but the file stores only {stored}"
        ));
    }
    Ok(())
}
