//! Rockstar and AHF ASCII catalogues: a `#` header line naming the columns, `#` comment lines,
//! then one whitespace-separated row per halo.
//!
//! Rockstar (`output_ascii`): `#ID DescID Mvir Vmax Vrms Rvir Rs Np X Y Z VX VY VZ …` in
//! `out_*.list`, `#id num_p mvir mbound_vir rvir vmax rvmax vrms x y z vx vy vz …` in
//! `halos_*.ascii`; comment lines `#a = …`, `#Box size: L Mpc/h`, `#Units: Positions in Mpc / h
//! (comoving)`, `#Units: … Radii in kpc / h (comoving)`, `#Units: Masses in Msun / h`. Columns
//! are found by name (case-insensitive), so both files and any column order read.
//! AHF: `#ID(1) hostHalo(2) numSubStruct(3) Mvir(4) npart(5) Xc(6) Yc(7) Zc(8) VXc(9) VYc(10)
//! VZc(11) Rvir(12) …`, lengths in kpc/h, masses in Msun/h.

use super::{Finder, FinderCatalogue, FinderHalo, LengthUnit};
use crate::data::ReadError;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Bytes of the first line looked at when detecting the format.
const HEAD_BYTES: u64 = 64 << 10;

/// The column names of a header line, without `#` and AHF's `(N)` suffixes.
fn column_names(line: &str) -> Vec<String> {
    line.trim_start_matches('#')
        .split_whitespace()
        .map(|t| match t.find('(') {
            Some(at) if t.ends_with(')') && t[at + 1..t.len() - 1].parse::<u32>().is_ok() => {
                t[..at].to_owned()
            }
            _ => t.to_owned(),
        })
        .collect()
}

/// The finder whose header the file's first line is, if any.
pub(super) fn detect(path: &Path) -> Result<Option<Finder>, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
    let mut first = String::new();
    // A binary file has no line end early on: invalid UTF-8 or none at all is "not ours".
    if BufReader::new(file.take(HEAD_BYTES))
        .read_line(&mut first)
        .is_err()
    {
        return Ok(None);
    }
    Ok(finder_of_header(&first))
}

/// The finder of a header line.
fn finder_of_header(line: &str) -> Option<Finder> {
    if !line.starts_with('#') {
        return None;
    }
    let raw: Vec<&str> = line.trim_start_matches('#').split_whitespace().collect();
    let names = column_names(line);
    let has = |n: &str| names.iter().any(|c| c.eq_ignore_ascii_case(n));
    if raw.first() == Some(&"ID(1)") && has("Xc") && has("Rvir") {
        return Some(Finder::Ahf);
    }
    if names.first().is_some_and(|n| n.eq_ignore_ascii_case("id"))
        && (has("DescID") || has("num_p"))
        && has("x")
        && has("rvir")
    {
        return Some(Finder::Rockstar);
    }
    None
}

/// Reads a Rockstar or AHF catalogue.
pub(super) fn read(path: &Path, finder: Finder) -> Result<FinderCatalogue, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
    let mut lines = BufReader::new(file).lines();
    let header = match lines.next() {
        Some(Ok(line)) => line,
        Some(Err(e)) => return Err(ReadError::io(path, e)),
        None => return Err(ReadError::invalid(path, "empty file")),
    };
    let names = column_names(&header);
    let column = |name: &str| -> Result<usize, ReadError> {
        names
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                ReadError::invalid(
                    path,
                    format!(
                        "line 1: the {} header has no `{name}` column",
                        finder.name()
                    ),
                )
            })
    };
    let optional = |name: &str| names.iter().position(|c| c.eq_ignore_ascii_case(name));
    let (id, host, n_part, mass, pos, vel, radius) = match finder {
        Finder::Ahf => (
            column("ID")?,
            optional("hostHalo"),
            column("npart")?,
            column("Mvir")?,
            [column("Xc")?, column("Yc")?, column("Zc")?],
            [optional("VXc"), optional("VYc"), optional("VZc")],
            column("Rvir")?,
        ),
        _ => (
            column("ID")?,
            optional("PID").or(optional("UPID")),
            optional("Np").map_or_else(|| column("num_p"), Ok)?,
            column("Mvir")?,
            [column("X")?, column("Y")?, column("Z")?],
            [optional("VX"), optional("VY"), optional("VZ")],
            column("Rvir")?,
        ),
    };
    // Rockstar's documented defaults, replaced by its `#Units:` lines when present.
    let (mut pos_unit, mut radius_unit) = match finder {
        Finder::Ahf => (LengthUnit::KpcH, LengthUnit::KpcH),
        _ => (LengthUnit::MpcH, LengthUnit::KpcH),
    };
    let mut box_size_kpc = None;
    let mut scale_factor = None;
    let mut halos = Vec::new();
    for (index, line) in lines.enumerate() {
        let number = index + 2;
        let line = line.map_err(|e| {
            ReadError::invalid(path, format!("line {number}: cannot be read as text: {e}"))
        })?;
        let text = line.trim();
        if let Some(comment) = text.strip_prefix('#') {
            read_comment(comment, &mut pos_unit, &mut radius_unit, &mut box_size_kpc);
            if let Some(a) = comment.trim().strip_prefix("a =") {
                scale_factor = a.trim().parse::<f64>().ok();
            }
            continue;
        }
        if text.is_empty() {
            continue;
        }
        let values: Vec<&str> = text.split_whitespace().collect();
        let value = |at: usize, name: &str| -> Result<f64, ReadError> {
            let token = values.get(at).ok_or_else(|| {
                ReadError::invalid(
                    path,
                    format!(
                        "line {number}: {} values, but `{name}` is column {}",
                        values.len(),
                        at + 1
                    ),
                )
            })?;
            token
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    ReadError::invalid(
                        path,
                        format!("line {number}, column `{name}`: {token:?} is not a finite number"),
                    )
                })
        };
        let count = value(n_part, "npart")?;
        if count < 0.0 {
            return Err(ReadError::invalid(
                path,
                format!("line {number}: negative particle count {count}"),
            ));
        }
        let velocity = match vel {
            [Some(vx), Some(vy), Some(vz)] => {
                Some([value(vx, "VX")?, value(vy, "VY")?, value(vz, "VZ")?])
            }
            _ => None,
        };
        halos.push(FinderHalo {
            id: value(id, "ID")? as i64,
            host: host
                .map(|at| value(at, "host"))
                .transpose()?
                .map(|h| h as i64),
            n_particles: count as u64,
            mass: value(mass, "Mvir")?,
            centre: [
                value(pos[0], "X")?,
                value(pos[1], "Y")?,
                value(pos[2], "Z")?,
            ],
            velocity,
            radius: value(radius, "Rvir")?,
        });
    }
    // Hosts: Rockstar writes PID −1, AHF hostHalo −1 or 0 (older versions count ids from 0).
    let zero_is_an_id = halos.iter().any(|h| h.id == 0);
    for h in &mut halos {
        h.host = h.host.filter(|&p| p > 0 || (p == 0 && zero_is_an_id));
    }
    let box_size = box_size_kpc.map(|b| b / pos_unit.in_kpc_h());
    let to_positions = radius_unit.in_kpc_h() / pos_unit.in_kpc_h();
    for h in &mut halos {
        h.radius *= to_positions;
    }
    Ok(FinderCatalogue {
        finder,
        paths: vec![path.to_path_buf()],
        table: "halos",
        length_unit: Some(pos_unit),
        mass_unit: "Msun/h",
        radius_name: "Rvir",
        box_size,
        scale_factor,
        halos,
    })
}

/// Rockstar's `Units:` and `Box size:` comments (the box in kpc/h).
fn read_comment(
    comment: &str,
    pos_unit: &mut LengthUnit,
    radius_unit: &mut LengthUnit,
    box_size: &mut Option<f64>,
) {
    let comment = comment.trim();
    let unit_in = |text: &str| {
        let t = text.to_ascii_lowercase();
        if t.starts_with("mpc") {
            Some(LengthUnit::MpcH)
        } else if t.starts_with("kpc") {
            Some(LengthUnit::KpcH)
        } else {
            None
        }
    };
    if let Some(rest) = comment.strip_prefix("Units:") {
        if let Some((_, unit)) = rest.split_once("Positions in")
            && let Some(u) = unit_in(unit.trim())
        {
            *pos_unit = u;
        }
        if let Some((_, unit)) = rest.split_once("Radii in")
            && let Some(u) = unit_in(unit.trim())
        {
            *radius_unit = u;
        }
    } else if let Some(rest) = comment.strip_prefix("Box size:") {
        let mut words = rest.split_whitespace();
        if let Some(size) = words.next().and_then(|w| w.parse::<f64>().ok()) {
            // Kept in kpc/h until the positions' unit is known (Rockstar writes Mpc/h).
            let unit = words.next().and_then(unit_in).unwrap_or(LengthUnit::MpcH);
            *box_size = Some(size * unit.in_kpc_h());
        }
    }
}
