//! SUBFIND group files of Gadget-4 and AREPO (`fof_subhalo_tab_NNN.hdf5`, or `.K.hdf5` for each
//! of `Header/NumFiles` files): `Group/` (GroupPos, GroupMass, GroupLen, Group_R_Crit200,
//! GroupVel) and `Subhalo/` (SubhaloPos, SubhaloMass, SubhaloLen, SubhaloHalfmassRad,
//! SubhaloVel, SubhaloGrNr); per-file counts `Header/Ngroups_ThisFile` and
//! `Nsubhalos_ThisFile` (AREPO: `Nsubgroups_ThisFile`).

use super::{Finder, FinderCatalogue, FinderHalo, LengthUnit};
use crate::data::ReadError;
use std::path::{Path, PathBuf};

/// Most files of one catalogue.
const MAX_FILES: f64 = 65_536.0;

/// Which SUBFIND table to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubfindTable {
    /// FoF groups (`Group/`): radius `Group_R_Crit200`.
    #[default]
    Groups,
    /// Subhalos (`Subhalo/`): radius `SubhaloHalfmassRad`, host `SubhaloGrNr`.
    Subhalos,
}

/// The datasets and count attribute of one table.
struct Names {
    group: &'static str,
    counts: &'static [&'static str],
    pos: &'static str,
    mass: &'static str,
    len: &'static str,
    radius: &'static str,
    vel: &'static str,
    host: Option<&'static str>,
}

impl SubfindTable {
    fn names(self) -> Names {
        match self {
            Self::Groups => Names {
                group: "Group",
                counts: &["Ngroups_ThisFile"],
                pos: "GroupPos",
                mass: "GroupMass",
                len: "GroupLen",
                radius: "Group_R_Crit200",
                vel: "GroupVel",
                host: None,
            },
            Self::Subhalos => Names {
                group: "Subhalo",
                counts: &["Nsubhalos_ThisFile", "Nsubgroups_ThisFile"],
                pos: "SubhaloPos",
                mass: "SubhaloMass",
                len: "SubhaloLen",
                radius: "SubhaloHalfmassRad",
                vel: "SubhaloVel",
                host: Some("SubhaloGrNr"),
            },
        }
    }
}

/// The first value of a numeric attribute.
fn attr(loc: &hdf5::Location, name: &str) -> Option<f64> {
    loc.attr(name)
        .ok()?
        .read_raw::<f64>()
        .ok()?
        .first()
        .copied()
}

/// Whether an HDF5 file is a SUBFIND group file (its header counts groups).
pub(super) fn looks_like_subfind(path: &Path) -> bool {
    hdf5::File::open(path)
        .and_then(|f| f.group("Header"))
        .is_ok_and(|h| attr(&h, "Ngroups_ThisFile").is_some())
}

/// The files of the catalogue `path` belongs to.
fn catalogue_files(path: &Path, first: &hdf5::File) -> Result<Vec<PathBuf>, ReadError> {
    let header = first
        .group("Header")
        .map_err(|_| ReadError::invalid(path, "no `Header` group (not a SUBFIND group file)"))?;
    let n_files = attr(&header, "NumFiles").unwrap_or(1.0);
    if !(1.0..=MAX_FILES).contains(&n_files) || n_files.fract() != 0.0 {
        return Err(ReadError::invalid(
            path,
            format!("Header/NumFiles is {n_files}, expected a whole number from 1 to {MAX_FILES}"),
        ));
    }
    if n_files == 1.0 {
        return Ok(vec![path.to_path_buf()]);
    }
    // `name.K.hdf5`: every K from 0.
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let split = name
        .rsplit_once('.')
        .and_then(|(rest, ext)| Some((rest.rsplit_once('.')?, ext)))
        .filter(|((_, k), _)| k.parse::<u64>().is_ok());
    let Some(((stem, _), ext)) = split else {
        return Err(ReadError::invalid(
            path,
            format!(
                "Header/NumFiles is {n_files} but the name is not `name.K.{}`",
                "hdf5"
            ),
        ));
    };
    Ok((0..n_files as u64)
        .map(|k| path.with_file_name(format!("{stem}.{k}.{ext}")))
        .collect())
}

/// Reads `table` from every file of the catalogue.
pub(super) fn read(path: &Path, table: SubfindTable) -> Result<FinderCatalogue, ReadError> {
    let open = |p: &Path| {
        hdf5::File::open(p).map_err(|e| ReadError::invalid(p, format!("cannot open as HDF5: {e}")))
    };
    let first = open(path)?;
    let files = catalogue_files(path, &first)?;
    let header = first
        .group("Header")
        .map_err(|_| ReadError::invalid(path, "no `Header` group"))?;
    let length_unit = first
        .group("Parameters")
        .ok()
        .and_then(|p| attr(&p, "UnitLength_in_cm"))
        .and_then(LengthUnit::from_cm);
    let mass_unit = match first
        .group("Parameters")
        .ok()
        .and_then(|p| attr(&p, "UnitMass_in_g"))
    {
        Some(g) if (g / 1.989e43 - 1.0).abs() < 0.01 => "1e10 Msun/h",
        _ => "simulation mass unit",
    };
    let names = table.names();
    let mut halos = Vec::new();
    for file_path in &files {
        let file = open(file_path)?;
        read_file(&file, file_path, &names, &mut halos)?;
    }
    Ok(FinderCatalogue {
        finder: Finder::Subfind,
        paths: files,
        table: match table {
            SubfindTable::Groups => "groups",
            SubfindTable::Subhalos => "subhalos",
        },
        length_unit,
        mass_unit,
        radius_name: names.radius,
        box_size: attr(&header, "BoxSize").filter(|&b| b > 0.0),
        scale_factor: attr(&header, "Time").filter(|&a| a > 0.0),
        halos,
    })
}

/// Appends one file's rows of the table `names`.
fn read_file(
    file: &hdf5::File,
    path: &Path,
    names: &Names,
    halos: &mut Vec<FinderHalo>,
) -> Result<(), ReadError> {
    let header = file
        .group("Header")
        .map_err(|_| ReadError::invalid(path, "no `Header` group"))?;
    let count = names
        .counts
        .iter()
        .find_map(|n| attr(&header, n))
        .ok_or_else(|| {
            ReadError::invalid(path, format!("Header has no {} attribute", names.counts[0]))
        })?;
    if !(count >= 0.0 && count.fract() == 0.0) {
        return Err(ReadError::invalid(
            path,
            format!("Header/{} is {count}, expected a count", names.counts[0]),
        ));
    }
    let n = count as usize;
    if n == 0 {
        return Ok(());
    }
    let group = file.group(names.group).map_err(|_| {
        ReadError::invalid(
            path,
            format!(
                "`{}` group is missing but the header counts {n}",
                names.group
            ),
        )
    })?;
    let column = |name: &str, width: usize| -> Result<Vec<f64>, ReadError> {
        let at = format!("{}/{name}", names.group);
        let ds = group
            .dataset(name)
            .map_err(|_| ReadError::invalid(path, format!("{at} is missing")))?;
        let expected: Vec<usize> = if width == 1 { vec![n] } else { vec![n, width] };
        if ds.shape() != expected {
            return Err(ReadError::invalid(
                path,
                format!(
                    "{at}: expected shape {expected:?} (from the header count), found {:?}",
                    ds.shape()
                ),
            ));
        }
        let values = ds
            .read_raw::<f64>()
            .map_err(|e| ReadError::invalid(path, format!("{at}: {e}")))?;
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(ReadError::invalid(
                path,
                format!("{at}: row {} is NaN or infinite", i / width),
            ));
        }
        Ok(values)
    };
    let pos = column(names.pos, 3)?;
    let mass = column(names.mass, 1)?;
    let len = column(names.len, 1)?;
    let radius = column(names.radius, 1)?;
    let vel = group
        .link_exists(names.vel)
        .then(|| column(names.vel, 3))
        .transpose()?;
    let host = names.host.map(|h| column(h, 1)).transpose()?;
    let first_id = halos.len();
    for i in 0..n {
        halos.push(FinderHalo {
            id: (first_id + i) as i64,
            host: host.as_ref().map(|h| h[i] as i64),
            n_particles: len[i].max(0.0) as u64,
            mass: mass[i],
            centre: [pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]],
            velocity: vel.as_ref().map(|v| [v[3 * i], v[3 * i + 1], v[3 * i + 2]]),
            radius: radius[i],
        });
    }
    Ok(())
}
