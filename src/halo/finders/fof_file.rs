//! Haloscope's own friends-of-friends catalogue files read back (CSV with the columns
//! `size,min_index,mass,com_x,com_y,com_z,…,radius_max,radius_rms` found by name, `#` lines
//! skipped; HDF5 with the datasets `size`, `mass`, `com`, `radius_max`, `radius_rms`), so a
//! saved catalogue can drive a movie.

use super::super::Halo;
use crate::data::ReadError;
use std::path::Path;

/// Reads a FoF catalogue written by `haloscope fof --out` (CSV or HDF5, by content).
pub fn read_fof_catalogue(path: &Path) -> Result<Vec<Halo>, ReadError> {
    if crate::data::gadget_hdf5::looks_like_hdf5(path)? {
        read_hdf5(path)
    } else {
        read_csv(path)
    }
}

fn read_csv(path: &Path) -> Result<Vec<Halo>, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::io(path, e))?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let Some((_, header)) = lines.next() else {
        return Err(ReadError::invalid(path, "empty: no CSV header line"));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let column = |name: &str| {
        names.iter().position(|n| *n == name).ok_or_else(|| {
            ReadError::invalid(
                path,
                format!("the CSV header has no `{name}` column (not a haloscope FoF catalogue)"),
            )
        })
    };
    let at = [
        column("size")?,
        column("mass")?,
        column("com_x")?,
        column("com_y")?,
        column("com_z")?,
        column("radius_max")?,
        column("radius_rms")?,
    ];
    let mut halos = Vec::new();
    for (index, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let value = |k: usize| -> Result<f64, ReadError> {
            cells
                .get(at[k])
                .and_then(|c| c.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    ReadError::invalid(
                        path,
                        format!(
                            "line {}, column `{}`: expected a finite number",
                            index + 1,
                            names[at[k]]
                        ),
                    )
                })
        };
        halos.push(Halo {
            size: value(0)?.max(0.0) as usize,
            min_index: halos.len(),
            mass: value(1)?,
            com: [value(2)?, value(3)?, value(4)?],
            velocity: None,
            radius_max: value(5)?,
            radius_rms: value(6)?,
        });
    }
    Ok(halos)
}

fn read_hdf5(path: &Path) -> Result<Vec<Halo>, ReadError> {
    let file = hdf5::File::open(path)
        .map_err(|e| ReadError::invalid(path, format!("cannot open as HDF5: {e}")))?;
    let column = |name: &str| -> Result<Vec<f64>, ReadError> {
        file.dataset(name)
            .and_then(|d| d.read_raw::<f64>())
            .map_err(|e| {
                ReadError::invalid(
                    path,
                    format!("dataset `{name}`: {e} (not a haloscope FoF catalogue)"),
                )
            })
    };
    let (size, mass, com) = (column("size")?, column("mass")?, column("com")?);
    let (radius_max, radius_rms) = (column("radius_max")?, column("radius_rms")?);
    let n = size.len();
    if [mass.len(), radius_max.len(), radius_rms.len()] != [n; 3] || com.len() != 3 * n {
        return Err(ReadError::invalid(
            path,
            format!(
                "the columns have different lengths ({n} sizes, {} masses)",
                mass.len()
            ),
        ));
    }
    Ok((0..n)
        .map(|i| Halo {
            size: size[i].max(0.0) as usize,
            min_index: i,
            mass: mass[i],
            com: [com[3 * i], com[3 * i + 1], com[3 * i + 2]],
            velocity: None,
            radius_max: radius_max[i],
            radius_rms: radius_rms[i],
        })
        .collect())
}
