//! Tipsy writer, for tests, benchmarks and exporting subsets.

use super::WriteError;
use super::tipsy_format::{ByteOrder, FAMILIES};
use super::{Snapshot, Species, SpeciesKind};
use std::io::Write;
use std::path::Path;

/// How to encode a tipsy file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TipsyWriteOptions {
    /// Byte order (standard files are big-endian).
    pub byte_order: ByteOrder,
    /// 32 (standard, with pad) or 28.
    pub header_bytes: u32,
    /// Store positions as f64.
    pub double_positions: bool,
}

impl Default for TipsyWriteOptions {
    fn default() -> Self {
        Self {
            byte_order: ByteOrder::Big,
            header_bytes: 32,
            double_positions: false,
        }
    }
}

/// Writes the gas, dark and star families of `snapshot` as a tipsy file.
///
/// Record values come from the species' fields by their tipsy names (`rho`, `temp`, `hsmooth`,
/// `metals`, `phi`, `eps`, `tform`, matched case-insensitively); a missing `hsmooth` comes from
/// the smoothing lengths, anything else missing is written as 0, like missing velocities.
pub fn write(
    path: &Path,
    snapshot: &Snapshot,
    options: &TipsyWriteOptions,
) -> Result<(), WriteError> {
    let unsupported = |message: String| WriteError::Unsupported {
        path: path.to_path_buf(),
        message,
    };
    if options.header_bytes != 32 && options.header_bytes != 28 {
        return Err(unsupported(format!(
            "tipsy header must be 32 or 28 bytes, not {}",
            options.header_bytes
        )));
    }
    if let Some(other) = snapshot.species(SpeciesKind::Other)
        && !other.is_empty()
    {
        return Err(unsupported(
            "tipsy has no family for `other` particles".to_owned(),
        ));
    }
    for species in &snapshot.species {
        if let super::Masses::PerParticle(m) = &species.masses
            && m.len() != species.len()
        {
            return Err(unsupported(format!(
                "{} has {} positions but {} masses",
                species.kind,
                species.len(),
                m.len()
            )));
        }
    }
    let count = |kind| snapshot.species(kind).map_or(0, Species::len);
    let counts = [SpeciesKind::Gas, SpeciesKind::Dark, SpeciesKind::Star].map(count);
    let mut as_i32 = [0i32; 3];
    for (out, &n) in as_i32.iter_mut().zip(&counts) {
        *out = i32::try_from(n)
            .map_err(|_| unsupported(format!("{n} particles do not fit a tipsy int32 count")))?;
    }
    let nbodies = as_i32
        .iter()
        .try_fold(0i32, |acc, &n| acc.checked_add(n))
        .ok_or_else(|| unsupported("more than 2³¹ particles in total".to_owned()))?;

    // crate::output's rule: a temporary file beside `path`, renamed into place when complete.
    crate::output::write_atomically_io(path, |writer| {
        let mut out = Encoder {
            inner: writer,
            order: options.byte_order,
        };
        out.f64(snapshot.header.time)?;
        let mut ints = vec![nbodies, 3, as_i32[0], as_i32[1], as_i32[2]];
        if options.header_bytes == 32 {
            ints.push(0);
        }
        for v in ints {
            out.u32(v as u32)?;
        }
        for (kind, extras) in FAMILIES {
            let Some(species) = snapshot.species(kind) else {
                continue;
            };
            write_family(&mut out, species, extras, options.double_positions)?;
        }
        Ok(())
    })
    .map_err(|err| match err {
        crate::output::OutputError::Io { path, io_error } => WriteError::Io { path, io_error },
        other => WriteError::Unsupported {
            path: path.to_path_buf(),
            message: other.to_string(),
        },
    })
}

/// Writes one family's records.
fn write_family<W: Write>(
    out: &mut Encoder<W>,
    species: &Species,
    extras: &[&str],
    double_positions: bool,
) -> std::io::Result<()> {
    let columns: Vec<Option<&[f32]>> = extras
        .iter()
        .map(|name| match species.field(name) {
            Some(field) => Some(field.values.as_slice()),
            None if *name == "hsmooth" => species.smoothing_lengths.as_deref(),
            None => None,
        })
        .collect();
    for (i, pos) in species.positions.iter().enumerate() {
        out.f32(species.masses.get(i))?;
        for &x in pos {
            if double_positions {
                out.f64(f64::from(x))?;
            } else {
                out.f32(x)?;
            }
        }
        let vel = species
            .velocities
            .as_ref()
            .and_then(|v| v.get(i).copied())
            .unwrap_or([0.0; 3]);
        for x in vel {
            out.f32(x)?;
        }
        for column in &columns {
            out.f32(column.and_then(|c| c.get(i).copied()).unwrap_or(0.0))?;
        }
    }
    Ok(())
}

/// Writes numbers in one byte order.
struct Encoder<W> {
    inner: W,
    order: ByteOrder,
}

impl<W: Write> Encoder<W> {
    fn u32(&mut self, v: u32) -> std::io::Result<()> {
        match self.order {
            ByteOrder::Big => self.inner.write_all(&v.to_be_bytes()),
            ByteOrder::Little => self.inner.write_all(&v.to_le_bytes()),
        }
    }

    fn f32(&mut self, v: f32) -> std::io::Result<()> {
        self.u32(v.to_bits())
    }

    fn f64(&mut self, v: f64) -> std::io::Result<()> {
        match self.order {
            ByteOrder::Big => self.inner.write_all(&v.to_bits().to_be_bytes()),
            ByteOrder::Little => self.inner.write_all(&v.to_bits().to_le_bytes()),
        }
    }
}
