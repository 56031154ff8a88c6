//! A subsample of big snapshots for the previews drawn while the camera moves: every k-th
//! particle with its smoothing length stretched by k^(1/3) (the same volume per particle, as
//! when the mean density drops k-fold) and its mass times k, so the picture keeps its look.

use crate::data::{Field, Masses, Snapshot, Species};

/// Snapshots with more particles than this get a preview subsample of about this many.
pub const PREVIEW_PARTICLES: usize = 1_000_000;

/// Every `stride`-th particle of `species`, starting with the first.
fn subsample_species(species: &Species, stride: usize) -> Species {
    let pick = |n: usize| (0..n).step_by(stride);
    let stretch = (stride as f32).cbrt();
    let mut out = Species::empty(species.kind);
    out.positions = pick(species.len()).map(|i| species.positions[i]).collect();
    out.masses = match &species.masses {
        Masses::Uniform(m) => Masses::Uniform(m * stride as f32),
        Masses::PerParticle(m) => {
            Masses::PerParticle(pick(m.len()).map(|i| m[i] * stride as f32).collect())
        }
    };
    out.smoothing_lengths = species
        .smoothing_lengths
        .as_ref()
        .map(|h| pick(h.len()).map(|i| h[i] * stretch).collect());
    out.kernel_support = species.kernel_support;
    out.fields = species
        .fields
        .iter()
        .map(|f| Field {
            name: f.name.clone(),
            values: pick(f.values.len()).map(|i| f.values[i]).collect(),
            units: f.units.clone(),
        })
        .collect();
    out
}

/// The preview subsample of `snapshot`, `None` when it is small enough to preview whole.
pub fn preview_subsample(snapshot: &Snapshot) -> Option<Snapshot> {
    let n = snapshot.n_particles();
    if n <= PREVIEW_PARTICLES {
        return None;
    }
    let stride = n.div_ceil(PREVIEW_PARTICLES);
    Some(Snapshot {
        header: snapshot.header.clone(),
        species: snapshot
            .species
            .iter()
            .map(|s| subsample_species(s, stride))
            .collect(),
        source: snapshot.source.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_snapshots_get_a_stretched_subsample() {
        let small = crate::render::synthetic::clustered_snapshot(1000, 2);
        assert!(preview_subsample(&small).is_none());
        let big = crate::render::synthetic::clustered_snapshot(PREVIEW_PARTICLES * 2 + 1, 2);
        let preview = preview_subsample(&big).expect("subsample");
        // Stride 3: particles 0, 3, 6, ...
        let (full, sub) = (&big.species[0], &preview.species[0]);
        assert_eq!(sub.len(), full.len().div_ceil(3));
        assert_eq!(sub.positions[2], full.positions[6]);
        let (h, h_full) = (
            sub.smoothing_lengths.as_ref().expect("h"),
            full.smoothing_lengths.as_ref().expect("h"),
        );
        assert!((h[2] - h_full[6] * 3f32.cbrt()).abs() <= 1e-6 * h_full[6]);
        assert_eq!(sub.fields[0].values[2], full.fields[0].values[6]);
        assert!((sub.masses.get(2) - 3.0 * full.masses.get(6)).abs() < 1e-6);
    }
}
