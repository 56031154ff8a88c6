//! Deterministic clustered particle sets for benchmarks and tests (halos of many sizes on a
//! uniform background, with SPH-like smoothing lengths), independent of the snapshot readers.

use crate::data::{
    Field, Header, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
};
use std::collections::BTreeMap;

/// SplitMix64: small, fast, good enough for synthetic data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u = self.uniform().max(1e-300);
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// `n` dark-matter particles in the unit box: 25 % uniform, 75 % in Gaussian halos whose sizes
/// follow a power law (scale 0.004–0.04, members ∝ scale³). Smoothing length = distance that
/// holds ~32 neighbours at the particle's mean local density; `Density` ∝ that density. The same
/// `seed` gives the same bytes.
pub fn clustered_snapshot(n: usize, seed: u64) -> Snapshot {
    let mut rng = Rng(seed ^ 0x005e_ed0f_4a10);
    let n_background = n / 4;
    let n_halo = n - n_background;
    // Halo catalogue: scale s ∝ u^(−1/2) between 0.004 and 0.04, weight ∝ s³.
    let n_halos = (n / 2000).clamp(1, 20_000);
    let mut halos = Vec::with_capacity(n_halos);
    let mut total_weight = 0.0;
    for _ in 0..n_halos {
        let scale = (0.004 / rng.uniform().max(0.01).sqrt()).min(0.04);
        let centre = [
            0.1 + 0.8 * rng.uniform(),
            0.1 + 0.8 * rng.uniform(),
            0.1 + 0.8 * rng.uniform(),
        ];
        let weight = scale * scale * scale;
        total_weight += weight;
        halos.push((centre, scale, weight));
    }
    let mut positions = Vec::with_capacity(n);
    let mut smoothing = Vec::with_capacity(n);
    let mut density = Vec::with_capacity(n);
    let neighbours = 32.0;
    let sphere = 4.0 / 3.0 * std::f64::consts::PI;
    let background_density = n_background.max(1) as f64;
    let mut push = |p: [f64; 3], local_density: f64| {
        positions.push(p.map(|x| x as f32));
        smoothing.push((neighbours / (sphere * local_density)).cbrt() as f32);
        density.push(local_density as f32);
    };
    for _ in 0..n_background {
        push(
            [rng.uniform(), rng.uniform(), rng.uniform()],
            background_density,
        );
    }
    let mut placed = 0;
    for (index, (centre, scale, weight)) in halos.iter().enumerate() {
        let members = if index + 1 == halos.len() {
            n_halo - placed
        } else {
            ((weight / total_weight * n_halo as f64).round() as usize).min(n_halo - placed)
        };
        placed += members;
        // Mean density of a Gaussian blob of `members` particles inside one scale length.
        let core_density = members as f64 / (sphere * scale * scale * scale) * 0.2;
        for _ in 0..members {
            let offset = [rng.normal(), rng.normal(), rng.normal()];
            let r2 = offset.iter().map(|o| o * o).sum::<f64>();
            let local = core_density * (-0.5 * r2).exp() + background_density;
            push(
                std::array::from_fn(|a| centre[a] + scale * offset[a]),
                local,
            );
        }
    }
    let mut species = Species::empty(SpeciesKind::Dark);
    species.positions = positions;
    species.masses = Masses::Uniform(1.0 / n.max(1) as f32);
    species.smoothing_lengths = Some(smoothing);
    species.fields.push(Field {
        name: "Density".to_owned(),
        values: density,
        units: BTreeMap::new(),
    });
    Snapshot {
        header: Header {
            box_size: Some(1.0),
            periodic: false,
            ..Header::default()
        },
        species: vec![species],
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::Demo,
            byte_order: None,
            header_bytes: None,
            particles_in_file: n as u64,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_with_the_requested_count() {
        let a = clustered_snapshot(5000, 3);
        let b = clustered_snapshot(5000, 3);
        assert_eq!(a, b);
        assert_eq!(a.n_particles(), 5000);
        let dark = a.species(SpeciesKind::Dark).expect("dark");
        let h = dark.smoothing_lengths.as_ref().expect("h");
        assert!(h.iter().all(|h| *h > 0.0 && h.is_finite()));
        // Halo members are smaller than background particles.
        let min = h.iter().copied().fold(f32::INFINITY, f32::min);
        let max = h.iter().copied().fold(0.0, f32::max);
        assert!(max > 5.0 * min);
        assert_ne!(clustered_snapshot(5000, 4), a);
    }
}
