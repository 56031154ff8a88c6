//! Cosmology of a snapshot, typed: h, Ω_m, Ω_Λ, Ω_b and whether the run integrates in comoving
//! coordinates, from the file's header and parameters.

use std::collections::BTreeMap;

/// The cosmology a snapshot was run with (each value where the file gives it).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cosmology {
    /// Dimensionless Hubble parameter h (H₀ = 100 h km/s/Mpc).
    pub hubble_param: Option<f64>,
    /// Total matter density Ω_m.
    pub omega_matter: Option<f64>,
    /// Dark-energy density Ω_Λ.
    pub omega_lambda: Option<f64>,
    /// Baryon density Ω_b.
    pub omega_baryon: Option<f64>,
    /// The run integrates in comoving coordinates (Header `Time` is the expansion factor a).
    pub comoving: bool,
}

/// The first of `names` present in `parameters`.
fn first(parameters: &BTreeMap<String, f64>, names: &[&str]) -> Option<f64> {
    names
        .iter()
        .find_map(|n| parameters.get(*n).copied())
        .filter(|v| v.is_finite())
}

impl Cosmology {
    /// From Gadget/AREPO (`HubbleParam`, `Omega0`, `OmegaLambda`, `OmegaBaryon`,
    /// `ComovingIntegrationOn`) or SWIFT (`h`, `Omega_m`, `Omega_lambda`, `Omega_b`,
    /// `Cosmological run`) names; `comoving` also when the header's time and redshift agree
    /// as a = 1/(1+z) in (0, 1) (Gadget-2 HDF5 files have nothing else).
    pub fn from_parameters(
        parameters: &BTreeMap<String, f64>,
        time: f64,
        redshift: Option<f64>,
    ) -> Self {
        let flag = first(
            parameters,
            &["ComovingIntegrationOn", "Cosmological run", "bComove"],
        );
        let consistent = redshift.is_some_and(|z| {
            z > 0.0 && time > 0.0 && time < 1.0 && ((1.0 + z) * time - 1.0).abs() < 1e-4
        });
        Self {
            hubble_param: first(parameters, &["HubbleParam", "h", "HubbleParam_h"]),
            omega_matter: first(parameters, &["Omega0", "Omega_m", "OmegaMatter", "dOmega0"]),
            omega_lambda: first(
                parameters,
                &["OmegaLambda", "Omega_lambda", "dLambda", "Omega_Lambda"],
            ),
            omega_baryon: first(parameters, &["OmegaBaryon", "Omega_b", "dOmegab"]),
            comoving: flag.map_or(consistent, |f| f != 0.0),
        }
    }

    /// The expansion factor of a header time: `time` in comoving runs, else 1.
    pub fn scale_factor(&self, time: f64) -> f64 {
        if self.comoving && time > 0.0 {
            time
        } else {
            1.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gadget_and_swift_names_give_the_same_cosmology() {
        let gadget: BTreeMap<String, f64> = [
            ("HubbleParam", 0.7),
            ("Omega0", 0.3),
            ("OmegaLambda", 0.7),
            ("OmegaBaryon", 0.04),
            ("ComovingIntegrationOn", 1.0),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        let swift: BTreeMap<String, f64> = [
            ("h", 0.7),
            ("Omega_m", 0.3),
            ("Omega_lambda", 0.7),
            ("Omega_b", 0.04),
            ("Cosmological run", 1.0),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        let g = Cosmology::from_parameters(&gadget, 0.5, Some(1.0));
        assert_eq!(g, Cosmology::from_parameters(&swift, 0.5, Some(1.0)));
        assert_eq!(g.hubble_param, Some(0.7));
        assert!(g.comoving);
        assert_eq!(g.scale_factor(0.5), 0.5);
        let bare = Cosmology::from_parameters(&BTreeMap::new(), 0.5, Some(1.0));
        assert!(bare.comoving, "a = 1/(1+z) marks a comoving Gadget-2 file");
        let static_run = Cosmology::from_parameters(&BTreeMap::new(), 3.0, None);
        assert!(!static_run.comoving);
        assert_eq!(static_run.scale_factor(3.0), 1.0);
    }
}
