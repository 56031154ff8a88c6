//! Which particles set a relative linking length: all of them (the mean separation), or on a
//! zoom-in the highest-resolution (lowest-mass) ones.
//!
//! A zoom-in samples a region with light particles and the rest of the box with heavier ones, in a
//! few discrete mass levels. The mean separation of all particles is then far larger than the
//! spacing inside the region of interest, and `b` times it links whole filaments into one halo.
//! Zoom-in analyses use the spacing the lowest-mass particles would have if they filled the
//! volume at its mean density, (m_min / (M_total / V))^(1/3).

use crate::data::Masses;

/// Masses within this relative difference of a level's first mass belong to that level (float32
/// masses written from one float64 value differ by far less; distinct levels by far more).
pub const LEVEL_TOLERANCE: f64 = 1e-6;
/// More distinct levels than this is a continuous spread (gas, stars), not a zoom-in.
pub const MAX_LEVELS: usize = 16;
/// The heaviest level must exceed the lightest by more than this factor for a zoom-in (a run whose
/// dark matter varies by 10 % is single-resolution).
pub const ZOOM_SPAN: f64 = 2.0;

/// Which separation a relative linking length `b` multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SeparationFrom {
    /// The lowest-mass particles' separation on a zoom-in ([`is_zoom_in`]), else the mean.
    #[default]
    Auto,
    /// The mean separation of all N particles, (V/N)^(1/3).
    Mean,
    /// The lowest-mass particles' separation, (m_min V / M_total)^(1/3), whatever the masses.
    LowestMass,
}

/// What set the linking length of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LinkingLengthSource {
    /// `b` times the mean separation of all `n` particles.
    Mean {
        /// Particles linked.
        n: usize,
    },
    /// `b` times the separation of the `n_lowest` particles of mass `mass`.
    LowestMass {
        /// The lowest mass (the smallest member of its level).
        mass: f64,
        /// Particles in the lowest-mass level.
        n_lowest: usize,
        /// Particles linked.
        n: usize,
        /// Their separation at the mean density, (m_min V / M_total)^(1/3).
        separation: f64,
    },
    /// An absolute linking length given by the user.
    Given,
}

impl LinkingLengthSource {
    /// One line for the CLI, the JSON and the window.
    pub fn describe(&self) -> String {
        match self {
            Self::Mean { n } => format!("mean separation of all {n} particles"),
            Self::LowestMass {
                mass, n_lowest, n, ..
            } => {
                format!("lowest-mass particles (m = {mass:.6e}, {n_lowest} of {n})")
            }
            Self::Given => "given".to_owned(),
        }
    }
}

/// One mass level: its smallest mass and how many particles it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MassLevel {
    /// Smallest mass of the level.
    pub mass: f64,
    /// Particles in the level.
    pub count: usize,
}

/// The discrete mass levels of `n` particles, lightest first: masses grouped within a relative
/// [`LEVEL_TOLERANCE`] of each level's first mass. `None` when there are more than
/// [`MAX_LEVELS`] (a continuous spread) or a mass is not finite and positive.
pub fn mass_levels(masses: &Masses, n: usize) -> Option<Vec<MassLevel>> {
    match masses {
        Masses::Uniform(m) => mass_levels_of([(*m, n)]),
        Masses::PerParticle(m) => mass_levels_of(m.iter().map(|&m| (m, 1))),
    }
}

/// [`mass_levels`] of a sequence of (mass, how many particles have it) in particle order. A
/// mass met again joins the level it joined first (levels are only appended), so runs of one
/// mass, or every distinct mass once with its count in order of first appearance, give the
/// levels of the particles themselves.
pub fn mass_levels_of(masses: impl IntoIterator<Item = (f32, usize)>) -> Option<Vec<MassLevel>> {
    let mut levels: Vec<(f64, MassLevel)> = Vec::new();
    for (m, weight) in masses {
        let m = f64::from(m);
        if !(m.is_finite() && m > 0.0) {
            return None;
        }
        let found = levels
            .iter()
            .position(|(first, _)| (m - first).abs() <= LEVEL_TOLERANCE * first);
        match found {
            Some(i) => {
                let level = &mut levels[i].1;
                level.mass = level.mass.min(m);
                level.count += weight;
            }
            None if levels.len() == MAX_LEVELS => return None,
            None => levels.push((
                m,
                MassLevel {
                    mass: m,
                    count: weight,
                },
            )),
        }
    }
    let mut levels: Vec<MassLevel> = levels.into_iter().map(|(_, level)| level).collect();
    levels.sort_by(|a, b| a.mass.total_cmp(&b.mass));
    Some(levels)
}

/// A zoom-in: at least two discrete levels, the heaviest more than [`ZOOM_SPAN`] times the
/// lightest.
pub fn is_zoom_in(levels: &[MassLevel]) -> bool {
    match (levels.first(), levels.last()) {
        (Some(lo), Some(hi)) => hi.mass > ZOOM_SPAN * lo.mass,
        _ => false,
    }
}

/// The lowest mass and the number of particles within [`LEVEL_TOLERANCE`] of it, and the total
/// mass (float64 sum in particle order); `None` when a mass is not finite and positive.
pub fn lowest_mass(masses: &Masses, n: usize) -> Option<(f64, usize, f64)> {
    match masses {
        Masses::Uniform(m) => {
            let m = f64::from(*m);
            (m.is_finite() && m > 0.0).then_some((m, n, m * n as f64))
        }
        Masses::PerParticle(values) => {
            let mut min = f64::INFINITY;
            let mut total = 0.0;
            for &m in values {
                let m = f64::from(m);
                if !(m.is_finite() && m > 0.0) {
                    return None;
                }
                min = min.min(m);
                total += m;
            }
            let count = values
                .iter()
                .filter(|&&m| f64::from(m) - min <= LEVEL_TOLERANCE * min)
                .count();
            (!values.is_empty()).then_some((min, count, total))
        }
    }
}

/// The separation the `mass` particles would have filling `volume` at the mean density of
/// `total_mass`: (mass V / M_total)^(1/3) (`powf(1/3)` as the mean separation's rule).
pub fn lowest_mass_separation(mass: f64, total_mass: f64, volume: f64) -> f64 {
    (mass * volume / total_mass).powf(1.0 / 3.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_group_within_the_tolerance_and_sort_lightest_first() {
        let masses = Masses::PerParticle(vec![8.0, 1.0, 1.000_000_5, 8.0, 1.0]);
        let levels = mass_levels(&masses, 5).expect("two levels");
        assert_eq!(
            levels,
            vec![
                MassLevel {
                    mass: 1.0,
                    count: 3
                },
                MassLevel {
                    mass: 8.0,
                    count: 2
                }
            ]
        );
        assert!(is_zoom_in(&levels));
    }

    #[test]
    fn a_ten_percent_spread_or_one_mass_is_not_a_zoom_in() {
        let masses = Masses::PerParticle(vec![1.0, 1.1, 1.05]);
        assert!(!is_zoom_in(&mass_levels(&masses, 3).expect("three levels")));
        let uniform = mass_levels(&Masses::Uniform(2.0), 10).expect("one level");
        assert_eq!(
            uniform,
            vec![MassLevel {
                mass: 2.0,
                count: 10
            }]
        );
        assert!(!is_zoom_in(&uniform));
    }

    #[test]
    fn a_continuous_spread_has_no_levels() {
        let masses = Masses::PerParticle((1..=17).map(|i| i as f32).collect());
        assert_eq!(mass_levels(&masses, 17), None);
        let sixteen = Masses::PerParticle((1..=16).map(|i| i as f32).collect());
        assert_eq!(mass_levels(&sixteen, 16).map(|l| l.len()), Some(16));
        assert_eq!(mass_levels(&Masses::PerParticle(vec![1.0, 0.0]), 2), None);
    }

    #[test]
    fn lowest_mass_counts_its_level_and_sums_all() {
        let masses = Masses::PerParticle(vec![4.0, 1.0, 1.0, 2.0]);
        assert_eq!(lowest_mass(&masses, 4), Some((1.0, 2, 8.0)));
        assert_eq!(lowest_mass(&Masses::Uniform(2.0), 3), Some((2.0, 3, 6.0)));
        // Mass 1 of a total 8 in volume 8: one such particle per unit volume.
        assert_eq!(lowest_mass_separation(1.0, 8.0, 8.0), 1.0);
    }
}
