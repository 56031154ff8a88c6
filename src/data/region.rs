//! Region loading: `box:x0,y0,z0,x1,y1,z1` or `sphere:x,y,z,r`, read without holding the rest.
//!
//! [`read_region`] streams a snapshot and keeps only the particles inside the region, so memory
//! follows what is kept (plus one chunk): tipsy records are decoded chunk by chunk
//! (`tipsy_region.rs`), Gadget HDF5 `Coordinates` are read in hyperslabs, selected, and the other
//! datasets are read only over the spans of kept rows (`gadget_region.rs`).
//!
//! Periodic wrapping: with a period `L` (a Gadget file's periodic `BoxSize`, or one given for a
//! tipsy file), a particle is inside when its minimum-image offset from the region's centre is,
//! so a region crossing the boundary keeps particles from the other side. Positions are left as
//! in the file (not unwrapped), the same as a full read. Without a period, a box is the closed
//! interval `x0 ≤ x ≤ x1` on each axis and a sphere `|p − c| ≤ r`.

use super::{Masses, ReadError, Snapshot, Species};
use crate::jobs::Progress;
use std::path::Path;

/// A region of space to load, in the file's length unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Region {
    /// An axis-aligned box from `lower` to `upper` (each `lower[i] ≤ upper[i]`).
    Box {
        /// Lower corner.
        lower: [f64; 3],
        /// Upper corner.
        upper: [f64; 3],
    },
    /// A sphere.
    Sphere {
        /// Centre.
        centre: [f64; 3],
        /// Radius (≥ 0).
        radius: f64,
    },
}

/// Why a region specification was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--region {text:?}: {rule}")]
pub struct RegionError {
    /// The specification as given.
    pub text: String,
    /// What was expected.
    pub rule: String,
}

impl Region {
    /// Parses `box:x0,y0,z0,x1,y1,z1` or `sphere:x,y,z,r` (finite numbers; x0 ≤ x1 on each
    /// axis; r ≥ 0).
    pub fn parse(text: &str) -> Result<Self, RegionError> {
        let fail = |rule: &str| RegionError {
            text: text.to_owned(),
            rule: rule.to_owned(),
        };
        let (kind, numbers) = text
            .split_once(':')
            .ok_or_else(|| fail("expected box:x0,y0,z0,x1,y1,z1 or sphere:x,y,z,r"))?;
        let values: Vec<f64> = numbers
            .split(',')
            .map(|v| v.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| fail("every value must be a number"))?;
        if !values.iter().all(|v| v.is_finite()) {
            return Err(fail("every value must be finite"));
        }
        match (kind.trim(), values.as_slice()) {
            ("box", &[x0, y0, z0, x1, y1, z1]) => {
                let (lower, upper) = ([x0, y0, z0], [x1, y1, z1]);
                if (0..3).any(|i| lower[i] > upper[i]) {
                    return Err(fail("each lower corner value must be ≤ the upper one"));
                }
                Ok(Self::Box { lower, upper })
            }
            ("box", _) => Err(fail("a box takes 6 numbers: x0,y0,z0,x1,y1,z1")),
            ("sphere", &[x, y, z, radius]) => {
                if radius < 0.0 {
                    return Err(fail("the radius must be ≥ 0"));
                }
                Ok(Self::Sphere {
                    centre: [x, y, z],
                    radius,
                })
            }
            ("sphere", _) => Err(fail("a sphere takes 4 numbers: x,y,z,r")),
            _ => Err(fail("the kind must be `box` or `sphere`")),
        }
    }

    /// A sphere around a halo centre (the window's "load the region around this halo").
    pub fn around(centre: [f64; 3], radius: f64) -> Self {
        Self::Sphere {
            centre,
            radius: radius.max(0.0),
        }
    }

    /// Whether `p` is inside; with `period`, by minimum image from the region's centre.
    pub fn contains(&self, p: [f32; 3], period: Option<f64>) -> bool {
        let offset = |x: f32, centre: f64| -> f64 {
            let d = f64::from(x) - centre;
            match period {
                Some(size) => d - size * (d / size).round(),
                None => d,
            }
        };
        match *self {
            Self::Box { lower, upper } => (0..3).all(|i| match period {
                Some(_) => {
                    let centre = 0.5 * (lower[i] + upper[i]);
                    let half = 0.5 * (upper[i] - lower[i]);
                    offset(p[i], centre).abs() <= half
                }
                None => {
                    let x = f64::from(p[i]);
                    lower[i] <= x && x <= upper[i]
                }
            }),
            Self::Sphere { centre, radius } => {
                let d2: f64 = (0..3).map(|i| offset(p[i], centre[i]).powi(2)).sum();
                d2 <= radius * radius
            }
        }
    }
}

/// Reads only the particles of `path` inside `region`. `period`: the periodic box side to wrap
/// by; `None` takes a Gadget file's `BoxSize` when its header says periodic, and no wrapping for
/// tipsy (whose header records no box).
pub fn read_region(
    path: &Path,
    region: &Region,
    period: Option<f64>,
    progress: &Progress,
) -> Result<Snapshot, ReadError> {
    super::reject_directory(path)?;
    if let Some(size) = period
        && !(size.is_finite() && size > 0.0)
    {
        return Err(ReadError::invalid(
            path,
            format!("the periodic box side for --region must be positive, got {size}"),
        ));
    }
    // What a whole read adds after decoding: tipsy's units and kernel convention, the checks
    // of smoothing lengths and masses, a derived temperature.
    let mut snapshot = if super::gadget_hdf5::looks_like_hdf5(path)? {
        super::gadget_region::read(path, region, period, progress)?
    } else {
        let mut snapshot = super::tipsy_region::read(path, region, period, progress)?;
        super::tipsy_units(path, &mut snapshot)?;
        snapshot
    };
    for species in &snapshot.species {
        super::validate::check_species(path, species, "smoothing length")?;
    }
    super::add_temperature(&mut snapshot);
    Ok(snapshot)
}

/// A snapshot already in memory cut to `region`, by the same rule and with the same result as
/// [`read_region`] on its file: empty species dropped, masses one value when all kept are equal.
pub fn filter_snapshot(snapshot: &Snapshot, region: &Region, period: Option<f64>) -> Snapshot {
    let species = snapshot
        .species
        .iter()
        .filter_map(|s| {
            let kept: Vec<usize> = (0..s.len())
                .filter(|&i| region.contains(s.positions[i], period))
                .collect();
            (!kept.is_empty()).then(|| keep_rows(s, &kept))
        })
        .collect();
    Snapshot {
        header: snapshot.header.clone(),
        species,
        source: snapshot.source.clone(),
    }
}

/// The rows `kept` (increasing) of `s`.
fn keep_rows(s: &Species, kept: &[usize]) -> Species {
    let pick = |v: &[f32]| kept.iter().map(|&i| v[i]).collect::<Vec<f32>>();
    let masses = match &s.masses {
        Masses::Uniform(m) => Masses::Uniform(*m),
        Masses::PerParticle(m) => collapse_masses(pick(m)),
    };
    Species {
        kind: s.kind,
        positions: kept.iter().map(|&i| s.positions[i]).collect(),
        masses,
        velocities: s
            .velocities
            .as_ref()
            .map(|v| kept.iter().map(|&i| v[i]).collect()),
        ids: s.ids.as_ref().map(|v| kept.iter().map(|&i| v[i]).collect()),
        smoothing_lengths: s.smoothing_lengths.as_deref().map(pick),
        kernel_support: s.kernel_support,
        left_out: s.left_out.clone(),
        fields: s
            .fields
            .iter()
            .map(|f| super::Field {
                name: f.name.clone(),
                values: pick(&f.values),
                units: f.units.clone(),
            })
            .collect(),
    }
}

/// One mass for all when every value is bit-equal (the readers' rule), else per particle.
pub(super) fn collapse_masses(masses: Vec<f32>) -> Masses {
    match masses.first() {
        Some(&m) if masses.iter().all(|x| x.to_bits() == m.to_bits()) => Masses::Uniform(m),
        _ => Masses::PerParticle(masses),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_boxes_and_spheres_and_names_the_rule_broken() {
        assert_eq!(
            Region::parse("box:0,1,2,3,4,5"),
            Ok(Region::Box {
                lower: [0.0, 1.0, 2.0],
                upper: [3.0, 4.0, 5.0]
            })
        );
        assert_eq!(
            Region::parse("sphere:1,2,3,0.5"),
            Ok(Region::Sphere {
                centre: [1.0, 2.0, 3.0],
                radius: 0.5
            })
        );
        let err = |t: &str| Region::parse(t).unwrap_err().to_string();
        assert_eq!(
            err("box:0,0,0,1,1"),
            "--region \"box:0,0,0,1,1\": a box takes 6 numbers: x0,y0,z0,x1,y1,z1"
        );
        assert!(err("box:1,0,0,0,1,1").contains("lower corner"));
        assert!(err("sphere:0,0,0,-1").contains("radius must be ≥ 0"));
        assert!(err("cube:0,0,0,1").contains("`box` or `sphere`"));
        assert!(err("sphere:0,x,0,1").contains("must be a number"));
        assert!(err("sphere:0,inf,0,1").contains("finite"));
        assert!(err("0,0,0,1").contains("expected box:"));
    }

    #[test]
    fn periodic_regions_wrap_and_open_ones_do_not() {
        let sphere = Region::Sphere {
            centre: [0.45, 0.0, 0.0],
            radius: 0.1,
        };
        // 0.45 → -0.48 is 0.07 across the boundary of a unit box.
        assert!(sphere.contains([-0.48, 0.0, 0.0], Some(1.0)));
        assert!(!sphere.contains([-0.48, 0.0, 0.0], None));
        // Corners exact in f32 and f64, so the closed edges are tested exactly.
        let cube = Region::Box {
            lower: [0.375, -0.125, -0.125],
            upper: [0.625, 0.125, 0.125],
        };
        assert!(cube.contains([-0.45, 0.0, 0.0], Some(1.0)));
        assert!(!cube.contains([-0.35, 0.0, 0.0], Some(1.0)));
        assert!(!cube.contains([-0.45, 0.0, 0.0], None));
        assert!(cube.contains([0.625, 0.125, -0.125], None));
        assert!(!cube.contains([0.625, 0.126, -0.125], None));
    }
}
