//! The derived field `Temperature` (K) of gas from its specific internal energy u:
//! T = (γ − 1)·u·μ·m_p/k_B with γ = 5/3 and the mean molecular weight
//! μ = 4/(1 + 3X + 4X·x_e) (X = 0.76 hydrogen mass fraction, x_e = n_e/n_H from the file's
//! `ElectronAbundance`), or, without it, μ = 4/(3 + 5X) (fully ionised primordial gas, an
//! assumption). Springel et al. 2001 (Gadget), and the Gadget-2 user guide §6.

use super::{Field, Snapshot, SpeciesKind};
use std::collections::BTreeMap;

/// Name of the derived field.
pub const TEMPERATURE_FIELD: &str = "Temperature";
/// Proton mass in g (CODATA 2018).
const PROTON_MASS_G: f64 = 1.672_621_923_69e-24;
/// Boltzmann's constant in erg/K (SI 2019, exact).
const BOLTZMANN_ERG_PER_K: f64 = 1.380_649e-16;
/// Adiabatic index of a monatomic ideal gas.
const GAMMA: f64 = 5.0 / 3.0;
/// Primordial hydrogen mass fraction.
const HYDROGEN_FRACTION: f64 = 0.76;

/// Temperature in K of specific internal energy `u_cgs` (erg/g) with electron abundance
/// `electrons` (n_e/n_H), or fully ionised primordial gas when `None`.
pub fn temperature_kelvin(u_cgs: f64, electrons: Option<f64>) -> f64 {
    let x = HYDROGEN_FRACTION;
    let mu = match electrons {
        Some(x_e) => 4.0 / (1.0 + 3.0 * x + 4.0 * x * x_e),
        None => 4.0 / (3.0 + 5.0 * x),
    };
    (GAMMA - 1.0) * u_cgs * mu * PROTON_MASS_G / BOLTZMANN_ERG_PER_K
}

/// Adds `Temperature` to the gas of `snapshot` where it has `InternalEnergy` (or SWIFT's
/// `InternalEnergies`) and no field of that name yet, and u can be put in erg/g: from the
/// field's `to_cgs` (with its a and h exponents) or else the snapshot's velocity unit squared.
pub fn add_temperature(snapshot: &mut Snapshot) {
    let a = snapshot.header.scale_factor();
    let h = snapshot.header.cosmology.hubble_param.unwrap_or(1.0);
    let velocity = snapshot.header.units.velocity_cm_per_s;
    let Some(gas) = snapshot.species_mut(SpeciesKind::Gas) else {
        return;
    };
    if gas.field(TEMPERATURE_FIELD).is_some() {
        return;
    }
    let Some(energy) = ["InternalEnergy", "InternalEnergies"]
        .into_iter()
        .find_map(|n| gas.field(n))
    else {
        return;
    };
    let to_cgs = energy
        .field_units()
        .physical_cgs_factor(a, h)
        .or(velocity.map(|v| v * v));
    let Some(to_cgs) = to_cgs.filter(|f| f.is_finite() && *f > 0.0) else {
        return;
    };
    let electrons = gas
        .field("ElectronAbundance")
        .filter(|e| e.values.len() == energy.values.len());
    let assumption = if electrons.is_some() {
        "from ElectronAbundance, X_H = 0.76, gamma = 5/3"
    } else {
        "assumed fully ionised primordial gas, X_H = 0.76, gamma = 5/3"
    };
    let values = energy
        .values
        .iter()
        .enumerate()
        .map(|(i, &u)| {
            let x_e = electrons.map(|e| f64::from(e.values[i]));
            temperature_kelvin(f64::from(u) * to_cgs, x_e) as f32
        })
        .collect();
    let units: BTreeMap<String, String> = [
        ("unit".to_owned(), "K".to_owned()),
        ("derived".to_owned(), assumption.to_owned()),
    ]
    .into();
    gas.fields.push(Field {
        name: TEMPERATURE_FIELD.to_owned(),
        values,
        units,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_follows_the_ideal_gas_formula() {
        // u = 1e10 erg/g = (1 km/s)², fully ionised: μ = 4/6.8.
        let t = temperature_kelvin(1e10, None);
        let expected = (2.0 / 3.0) * 1e10 * (4.0 / 6.8) * PROTON_MASS_G / BOLTZMANN_ERG_PER_K;
        assert_eq!(t, expected);
        assert!((t - 47.509).abs() < 1e-3, "{t}");
        // Neutral hydrogen-helium gas (x_e = 0): μ = 4/3.28 ≈ 1.22.
        let neutral = temperature_kelvin(1e10, Some(0.0));
        assert!((neutral / t - 6.8 / 3.28).abs() < 1e-12);
    }
}
