//! Writing the halo catalogue (CSV, HDF5) and per-particle labels or positions (NumPy `.npy`,
//! CSV).

use super::params::FofResult;
use crate::data::Snapshot;
use crate::render::{RenderError, npy};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a catalogue came from and what its columns are measured in: `#` lines before the CSV
/// header (pandas: `read_csv(..., comment="#")`), root attributes and per-column `unit`
/// attributes in HDF5.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogueMeta {
    /// The snapshot the halos were found in.
    pub source_file: Option<String>,
    /// The code that wrote it.
    pub code: Option<String>,
    /// Header time (the expansion factor in comoving runs).
    pub time: Option<f64>,
    /// Redshift, where known.
    pub redshift: Option<f64>,
    /// Unit of `com_*`, `radius_*` (e.g. "ckpc/h").
    pub length_unit: Option<String>,
    /// Unit of `mass` (e.g. "1e10 Msun/h").
    pub mass_unit: Option<String>,
    /// Unit of `vel_*` (e.g. "km/s").
    pub velocity_unit: Option<String>,
}

impl CatalogueMeta {
    /// The facts of `snapshot` read from `path`.
    pub fn of_snapshot(path: &Path, snapshot: &Snapshot) -> Self {
        let h = &snapshot.header;
        Self {
            source_file: Some(path.display().to_string()),
            code: Some(h.code.name().to_owned()),
            time: Some(h.time),
            redshift: h.redshift,
            length_unit: Some(h.units.length_label(false)),
            mass_unit: Some(h.units.mass_label()),
            velocity_unit: Some(h.units.velocity_label()),
        }
    }

    /// `(name, text)` of every known fact, in file order.
    fn entries(&self) -> Vec<(&'static str, String)> {
        let number = |v: Option<f64>| v.map(|v| v.to_string());
        [
            ("source_file", self.source_file.clone()),
            ("code", self.code.clone()),
            ("time", number(self.time)),
            ("redshift", number(self.redshift)),
            ("length_unit", self.length_unit.clone()),
            ("mass_unit", self.mass_unit.clone()),
            ("velocity_unit", self.velocity_unit.clone()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// Why an export failed. Displays as `<file>: <what>`.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The operating system refused or failed a write.
    #[error("{}: {io_error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        io_error: std::io::Error,
    },
    /// The HDF5 library failed.
    #[error("{}: HDF5: {message}", path.display())]
    Hdf5 {
        /// The file.
        path: PathBuf,
        /// What HDF5 said.
        message: String,
    },
    /// The `.npy` writer failed for another reason than I/O.
    #[error("{message}")]
    Npy {
        /// The file.
        path: PathBuf,
        /// What went wrong, naming the file.
        message: String,
    },
    /// The extension names no format we write.
    #[error("{}: unknown extension, expected {expected}", path.display())]
    UnknownExtension {
        /// The file.
        path: PathBuf,
        /// The extensions accepted.
        expected: &'static str,
    },
    /// The output was refused or its temporary file could not be made or renamed.
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

/// Lower-case extension of `path`.
fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Whether [`write_labels`] writes `path` as `.npy` (the format follows the extension).
pub(crate) fn labels_as_npy(path: &Path) -> bool {
    extension(path) == "npy"
}

/// Writes the catalogue as CSV (`.csv`) or HDF5 (`.hdf5`, `.h5`), chosen by extension.
pub fn write_catalogue(path: &Path, result: &FofResult) -> Result<(), ExportError> {
    write_catalogue_with_meta(path, result, &CatalogueMeta::default())
}

/// [`write_catalogue`] recording the source file, time, redshift and units of `meta`.
pub fn write_catalogue_with_meta(
    path: &Path,
    result: &FofResult,
    meta: &CatalogueMeta,
) -> Result<(), ExportError> {
    match extension(path).as_str() {
        "csv" => write_catalogue_csv(path, result, meta),
        "hdf5" | "h5" => write_catalogue_hdf5(path, result, meta),
        _ => Err(ExportError::UnknownExtension {
            path: path.to_owned(),
            expected: ".csv, .hdf5 or .h5",
        }),
    }
}

/// Writes per-particle labels as NumPy int32 (`.npy`) or one label per line (`.csv`).
pub fn write_labels(path: &Path, labels: &[i32]) -> Result<(), ExportError> {
    match extension(path).as_str() {
        "npy" => npy::write_i32_npy(path, &[labels.len()], labels).map_err(|e| npy_error(path, e)),
        "csv" => write_with(path, |out| {
            writeln!(out, "label")?;
            for label in labels {
                writeln!(out, "{label}")?;
            }
            Ok(())
        }),
        _ => Err(ExportError::UnknownExtension {
            path: path.to_owned(),
            expected: ".npy or .csv",
        }),
    }
}

/// Writes float32 positions as a NumPy `(N, 3)` array (`<f4`), atomically.
pub fn write_positions_npy(path: &Path, positions: &[[f32; 3]]) -> Result<(), ExportError> {
    npy::write_f32_npy(path, &[positions.len(), 3], positions.as_flattened())
        .map_err(|e| npy_error(path, e))
}

/// The export error of a failed `.npy` write.
fn npy_error(path: &Path, error: RenderError) -> ExportError {
    match error {
        RenderError::Io { path, error } => ExportError::Io {
            path,
            io_error: error,
        },
        other => ExportError::Npy {
            path: path.to_owned(),
            message: other.to_string(),
        },
    }
}

/// Writes `path` through `body` on a buffered writer, atomically (crate::output's rule: a
/// failed write leaves an older file untouched), mapping I/O errors to the file.
fn write_with(
    path: &Path,
    body: impl FnOnce(&mut std::io::BufWriter<&mut std::fs::File>) -> std::io::Result<()>,
) -> Result<(), ExportError> {
    crate::output::write_atomically(path, |out| {
        body(out).map_err(|io_error| ExportError::Io {
            path: path.to_owned(),
            io_error,
        })
    })
}

/// Catalogue as CSV: `# name: value` lines of `meta`, one header line, one row per halo in
/// catalogue order.
pub fn write_catalogue_csv(
    path: &Path,
    result: &FofResult,
    meta: &CatalogueMeta,
) -> Result<(), ExportError> {
    write_with(path, |out| {
        for (name, value) in meta.entries() {
            // One line per fact, whatever the text holds.
            writeln!(out, "# {name}: {}", value.replace(['\n', '\r'], " "))?;
        }
        writeln!(
            out,
            "rank,size,min_index,mass,com_x,com_y,com_z,vel_x,vel_y,vel_z,radius_max,radius_rms"
        )?;
        for (rank, h) in result.halos.iter().enumerate() {
            let v = h
                .velocity
                .map(|v| format!("{},{},{}", v[0], v[1], v[2]))
                .unwrap_or_else(|| ",,".to_owned());
            writeln!(
                out,
                "{rank},{},{},{},{},{},{},{v},{},{}",
                h.size,
                h.min_index,
                h.mass,
                h.com[0],
                h.com[1],
                h.com[2],
                h.radius_max,
                h.radius_rms
            )?;
        }
        Ok(())
    })
}

/// Catalogue as HDF5: one dataset per column (`size`, `min_index`, `mass`, `com` (n, 3),
/// `velocity` (n, 3) when known, `radius_max`, `radius_rms`) and run attributes on the root;
/// `meta`'s facts as root attributes and each column's `unit`. Written to a temporary file beside
/// `path` and renamed into place when complete.
pub fn write_catalogue_hdf5(
    path: &Path,
    result: &FofResult,
    meta: &CatalogueMeta,
) -> Result<(), ExportError> {
    write_catalogue_hdf5_with(path, |temp| write_hdf5(temp, result, meta))
}

/// Runs `write` (the HDF5 writes, given the temporary file's path) and renames the file into
/// place only if it succeeded; public so that a test can make the writes fail mid-way.
pub fn write_catalogue_hdf5_with(
    path: &Path,
    write: impl FnOnce(&Path) -> hdf5::Result<()>,
) -> Result<(), ExportError> {
    crate::output::write_via_temporary_path(path, |temp| {
        write(temp).map_err(|e| ExportError::Hdf5 {
            path: path.to_owned(),
            message: e.to_string(),
        })
    })
}

/// The HDF5 writes, with the library's own error type; the file is closed on return.
fn write_hdf5(path: &Path, result: &FofResult, meta: &CatalogueMeta) -> hdf5::Result<()> {
    let file = hdf5::File::create(path)?;
    let halos = &result.halos;
    let n = halos.len();
    let column = |name: &str, values: Vec<f64>| -> hdf5::Result<()> {
        file.new_dataset::<f64>()
            .shape([n])
            .create(name)?
            .write_raw(&values)
    };
    let vector = |name: &str, values: Vec<f64>| -> hdf5::Result<()> {
        file.new_dataset::<f64>()
            .shape([n, 3])
            .create(name)?
            .write_raw(&values)
    };
    file.new_dataset::<u64>()
        .shape([n])
        .create("size")?
        .write_raw(&halos.iter().map(|h| h.size as u64).collect::<Vec<_>>())?;
    file.new_dataset::<u64>()
        .shape([n])
        .create("min_index")?
        .write_raw(&halos.iter().map(|h| h.min_index as u64).collect::<Vec<_>>())?;
    column("mass", halos.iter().map(|h| h.mass).collect())?;
    vector("com", halos.iter().flat_map(|h| h.com).collect())?;
    if halos.iter().all(|h| h.velocity.is_some()) && n > 0 {
        vector(
            "velocity",
            halos
                .iter()
                .flat_map(|h| h.velocity.unwrap_or_default())
                .collect(),
        )?;
    }
    column("radius_max", halos.iter().map(|h| h.radius_max).collect())?;
    column("radius_rms", halos.iter().map(|h| h.radius_rms).collect())?;

    let scalar = |name: &str, value: f64| -> hdf5::Result<()> {
        file.new_attr::<f64>().create(name)?.write_scalar(&value)
    };
    scalar("linking_length", result.linking_length)?;
    scalar("mean_separation", result.mean_separation)?;
    // Which particles set the linking length, in the words of the CLI and the window.
    let source: hdf5::types::VarLenUnicode = result
        .linking_length_from
        .describe()
        .parse()
        .map_err(|e| hdf5::Error::from(format!("linking_length_from: {e:?}")))?;
    file.new_attr::<hdf5::types::VarLenUnicode>()
        .create("linking_length_from")?
        .write_scalar(&source)?;
    scalar("b", result.b.unwrap_or(f64::NAN))?;
    scalar("box_size", result.box_size().unwrap_or(f64::NAN))?;
    file.new_attr::<u8>()
        .create("periodic")?
        .write_scalar(&u8::from(result.periodic()))?;
    file.new_attr::<u64>()
        .create("min_members")?
        .write_scalar(&(result.min_members as u64))?;
    file.new_attr::<u64>()
        .create("n_particles")?
        .write_scalar(&(result.n_particles as u64))?;
    write_hdf5_meta(&file, meta)
}

/// `meta`'s facts as root attributes (numbers as f64, text as UTF-8) and `unit` attributes on
/// the columns they measure.
fn write_hdf5_meta(file: &hdf5::File, meta: &CatalogueMeta) -> hdf5::Result<()> {
    let text = |loc: &hdf5::Location, name: &str, value: &str| -> hdf5::Result<()> {
        let value: hdf5::types::VarLenUnicode = value
            .parse()
            .map_err(|e| hdf5::Error::from(format!("{name}: {e:?}")))?;
        loc.new_attr::<hdf5::types::VarLenUnicode>()
            .create(name)?
            .write_scalar(&value)
    };
    for (name, value) in meta.entries() {
        match name {
            "time" | "redshift" => {
                let v: f64 = value.parse().unwrap_or(f64::NAN);
                file.new_attr::<f64>().create(name)?.write_scalar(&v)?;
            }
            _ => text(file, name, &value)?,
        }
    }
    let columns = [
        (&meta.mass_unit, &["mass"][..]),
        (&meta.length_unit, &["com", "radius_max", "radius_rms"][..]),
        (&meta.velocity_unit, &["velocity"][..]),
    ];
    for (unit, names) in columns {
        let Some(unit) = unit else { continue };
        for name in names {
            if let Ok(ds) = file.dataset(name) {
                text(&ds, "unit", unit)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_describes_the_array() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("labels.npy");
        write_labels(&path, &[3, -1, 0]).expect("writes");
        let bytes = std::fs::read(&path).expect("reads back");
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).expect("ascii");
        assert!(header.starts_with("{'descr': '<i4', 'fortran_order': False, 'shape': (3,)}"));
        assert!(header.ends_with('\n'));
        let data: Vec<i32> = bytes[10 + header_len..]
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(data, vec![3, -1, 0]);
    }

    #[test]
    fn unknown_extensions_are_refused() {
        let err = write_labels(Path::new("labels.txt"), &[]).expect_err("txt");
        assert_eq!(
            err.to_string(),
            "labels.txt: unknown extension, expected .npy or .csv"
        );
    }
}
