//! Gadget-layout HDF5 writer, for tests, benchmarks and exporting.

use super::{Masses, Snapshot, Species, SpeciesKind, WriteError};
use hdf5::types::VarLenUnicode;
use ndarray::{ArrayView1, ArrayView2};
use std::path::{Path, PathBuf};

/// How to lay out a Gadget HDF5 snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GadgetWriteOptions {
    /// Store floats as f64 instead of f32.
    pub double_precision: bool,
    /// Length of the per-type header arrays (6 usually; Gadget-4 built with 2 types writes 2).
    pub n_types: usize,
    /// Name smoothing lengths `SmoothingLengths` (SWIFT) instead of `SmoothingLength`.
    pub plural_smoothing: bool,
    /// Split the particles over this many files `name.0.hdf5 …` (1 = one file at `path`).
    pub n_files: usize,
}

impl Default for GadgetWriteOptions {
    fn default() -> Self {
        Self {
            double_precision: false,
            n_types: 6,
            plural_smoothing: false,
            n_files: 1,
        }
    }
}

/// Gadget type written for each species (`other` goes to PartType2).
fn part_type(kind: SpeciesKind) -> usize {
    match kind {
        SpeciesKind::Gas => 0,
        SpeciesKind::Dark => 1,
        SpeciesKind::Other => 2,
        SpeciesKind::Star => 4,
    }
}

/// Writes `snapshot` in the Gadget layout; with `n_files` > 1, `path` must be named
/// `name.hdf5` and the files are `name.0.hdf5 …`. Returns the files written.
///
/// Uniform masses go to `Header/MassTable`, per-particle masses to `Masses` datasets;
/// `Header::parameters` go to the `Parameters` group; field units are written as string
/// attributes.
pub fn write(
    path: &Path,
    snapshot: &Snapshot,
    options: &GadgetWriteOptions,
) -> Result<Vec<PathBuf>, WriteError> {
    let unsupported = |message: String| WriteError::Unsupported {
        path: path.to_path_buf(),
        message,
    };
    let n_files = options.n_files.max(1);
    for sp in &snapshot.species {
        if part_type(sp.kind) >= options.n_types && !sp.is_empty() {
            return Err(unsupported(format!(
                "{} particles need PartType{} but only {} types are written",
                sp.kind,
                part_type(sp.kind),
                options.n_types
            )));
        }
        if let Masses::PerParticle(m) = &sp.masses
            && m.len() != sp.len()
        {
            return Err(unsupported(format!(
                "{} has {} positions but {} masses",
                sp.kind,
                sp.len(),
                m.len()
            )));
        }
    }
    let paths: Vec<PathBuf> = if n_files == 1 {
        vec![path.to_path_buf()]
    } else {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        (0..n_files)
            .map(|k| path.with_file_name(format!("{stem}.{k}.hdf5")))
            .collect()
    };
    for (k, file_path) in paths.iter().enumerate() {
        write_file(file_path, snapshot, options, k, n_files).map_err(|e| {
            WriteError::Unsupported {
                path: file_path.clone(),
                message: e.to_string(),
            }
        })?;
    }
    Ok(paths)
}

/// The rows of `species` that go to file `k` of `n`.
fn rows_of_file(len: usize, k: usize, n: usize) -> std::ops::Range<usize> {
    (len * k / n)..(len * (k + 1) / n)
}

fn write_file(
    path: &Path,
    snapshot: &Snapshot,
    options: &GadgetWriteOptions,
    k: usize,
    n_files: usize,
) -> hdf5::Result<()> {
    let file = hdf5::File::create(path)?;
    let header = file.create_group("Header")?;
    let mut this_file = vec![0u32; options.n_types];
    let mut total = vec![0u64; options.n_types];
    let mut mass_table = vec![0f64; options.n_types];
    for sp in &snapshot.species {
        let t = part_type(sp.kind);
        if t >= options.n_types {
            continue;
        }
        this_file[t] = rows_of_file(sp.len(), k, n_files).len() as u32;
        total[t] = sp.len() as u64;
        if let Masses::Uniform(m) = sp.masses {
            mass_table[t] = f64::from(m);
        }
    }
    let attr_1d_u32 = |name: &str, v: &[u32]| {
        header
            .new_attr_builder()
            .with_data(ArrayView1::from(v))
            .create(name)
            .map(|_| ())
    };
    attr_1d_u32("NumPart_ThisFile", &this_file)?;
    header
        .new_attr_builder()
        .with_data(ArrayView1::from(&total))
        .create("NumPart_Total")?;
    header
        .new_attr_builder()
        .with_data(ArrayView1::from(&mass_table))
        .create("MassTable")?;
    let scalar =
        |g: &hdf5::Group, name: &str, v: f64| g.new_attr::<f64>().create(name)?.write_scalar(&v);
    scalar(&header, "Time", snapshot.header.time)?;
    if let Some(z) = snapshot.header.redshift {
        scalar(&header, "Redshift", z)?;
    }
    if let Some(b) = snapshot.header.box_size {
        scalar(&header, "BoxSize", b)?;
    }
    header
        .new_attr::<i32>()
        .create("NumFilesPerSnapshot")?
        .write_scalar(&(n_files as i32))?;
    let params = file.create_group("Parameters")?;
    for (name, &v) in &snapshot.header.parameters {
        scalar(&params, name, v)?;
    }
    for sp in &snapshot.species {
        let t = part_type(sp.kind);
        let rows = rows_of_file(sp.len(), k, n_files);
        if t >= options.n_types || rows.is_empty() {
            continue;
        }
        write_species(
            &file.create_group(&format!("PartType{t}"))?,
            sp,
            rows,
            options,
        )?;
    }
    Ok(())
}

fn write_species(
    group: &hdf5::Group,
    sp: &Species,
    rows: std::ops::Range<usize>,
    options: &GadgetWriteOptions,
) -> hdf5::Result<()> {
    let n = rows.len();
    let vec3 = |name: &str, v: &[[f32; 3]]| -> hdf5::Result<()> {
        let flat = v[rows.clone()].as_flattened();
        if options.double_precision {
            let wide: Vec<f64> = flat.iter().map(|&x| f64::from(x)).collect();
            let view = ArrayView2::from_shape((n, 3), &wide).map_err(|e| e.to_string())?;
            group.new_dataset_builder().with_data(view).create(name)?;
        } else {
            let view = ArrayView2::from_shape((n, 3), flat).map_err(|e| e.to_string())?;
            group.new_dataset_builder().with_data(view).create(name)?;
        }
        Ok(())
    };
    let scalar = |name: &str, v: &[f32]| -> hdf5::Result<hdf5::Dataset> {
        let part = &v[rows.clone()];
        if options.double_precision {
            let wide: Vec<f64> = part.iter().map(|&x| f64::from(x)).collect();
            group
                .new_dataset_builder()
                .with_data(ArrayView1::from(&wide))
                .create(name)
        } else {
            group
                .new_dataset_builder()
                .with_data(ArrayView1::from(part))
                .create(name)
        }
    };
    vec3("Coordinates", &sp.positions)?;
    if let Some(v) = &sp.velocities {
        vec3("Velocities", v)?;
    }
    if let Some(ids) = &sp.ids {
        group
            .new_dataset_builder()
            .with_data(ArrayView1::from(&ids[rows.clone()]))
            .create("ParticleIDs")?;
    }
    if let Masses::PerParticle(m) = &sp.masses {
        scalar("Masses", m)?;
    }
    if let Some(h) = &sp.smoothing_lengths {
        let name = if options.plural_smoothing {
            "SmoothingLengths"
        } else {
            "SmoothingLength"
        };
        scalar(name, h)?;
    }
    for field in &sp.fields {
        let ds = scalar(&field.name, &field.values)?;
        for (key, value) in &field.units {
            let text: VarLenUnicode = value.parse().map_err(|e| format!("{e:?}"))?;
            ds.new_attr::<VarLenUnicode>()
                .create(key.as_str())?
                .write_scalar(&text)?;
        }
    }
    Ok(())
}
