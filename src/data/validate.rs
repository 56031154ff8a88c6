//! Checks of the values a reader decoded that the renderer and friends-of-friends cannot use:
//! smoothing lengths must be finite and above 0, masses finite and not negative. Each refusal
//! names the file, the species, the field, how many particles and the first one.

use super::{Masses, ReadError, Species};
use std::path::Path;

/// Refuses `species` when a smoothing length or a mass is unusable; `smoothing_name` is the
/// file's name for the smoothing lengths (`hsmooth`, `SmoothingLength`).
pub(crate) fn check_species(
    path: &Path,
    species: &Species,
    smoothing_name: &str,
) -> Result<(), ReadError> {
    if let Some(h) = &species.smoothing_lengths {
        let bad = |x: f32| !(x.is_finite() && x > 0.0);
        check_values(
            path,
            species,
            smoothing_name,
            h,
            bad,
            "NaN, infinite, zero or negative",
        )?;
    }
    let bad = |x: f32| !(x.is_finite() && x >= 0.0);
    match &species.masses {
        Masses::Uniform(m) if bad(*m) => Err(ReadError::invalid(
            path,
            format!(
                "{} masses: every particle has mass {m}, which is NaN, infinite or negative",
                species.kind.name()
            ),
        )),
        Masses::Uniform(_) => Ok(()),
        Masses::PerParticle(masses) => check_values(
            path,
            species,
            "mass",
            masses,
            bad,
            "NaN, infinite or negative",
        ),
    }
}

fn check_values(
    path: &Path,
    species: &Species,
    field: &str,
    values: &[f32],
    bad: impl Fn(f32) -> bool,
    rule: &str,
) -> Result<(), ReadError> {
    let Some(first) = values.iter().position(|&x| bad(x)) else {
        return Ok(());
    };
    let count = values[first..].iter().filter(|&&x| bad(x)).count();
    Err(ReadError::invalid(
        path,
        format!(
            "{} {field}: {count} of {} particles are {rule} (first: particle {first}, {})",
            species.kind.name(),
            values.len(),
            values[first]
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SpeciesKind;

    #[test]
    fn names_field_count_and_first_index() {
        let mut gas = Species::empty(SpeciesKind::Gas);
        gas.positions = vec![[0.0; 3]; 4];
        gas.masses = Masses::Uniform(1.0);
        gas.smoothing_lengths = Some(vec![0.1, 0.0, f32::NAN, 0.2]);
        let err = check_species(Path::new("s.bin"), &gas, "hsmooth").expect_err("bad h");
        assert_eq!(
            err.to_string(),
            "s.bin: gas hsmooth: 2 of 4 particles are NaN, infinite, zero or negative \
             (first: particle 1, 0)"
        );
        gas.smoothing_lengths = Some(vec![0.1; 4]);
        gas.masses = Masses::PerParticle(vec![1.0, 1.0, 1.0, -2.0]);
        let err = check_species(Path::new("s.bin"), &gas, "hsmooth").expect_err("bad m");
        assert_eq!(
            err.to_string(),
            "s.bin: gas mass: 1 of 4 particles are NaN, infinite or negative \
             (first: particle 3, -2)"
        );
        gas.masses = Masses::PerParticle(vec![0.0, 1.0, 1.0, 2.0]);
        assert!(check_species(Path::new("s.bin"), &gas, "hsmooth").is_ok());
    }
}
