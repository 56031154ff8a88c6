//! From friends-of-friends sets to the halo catalogue: order, labels, masses, centres, radii.

use super::periodic::BoxFrame;
use crate::data::Masses;

/// One halo of the catalogue.
#[derive(Debug, Clone, PartialEq)]
pub struct Halo {
    /// Number of member particles.
    pub size: usize,
    /// Smallest member index (position within the selected particles).
    pub min_index: usize,
    /// Sum of the member masses (float64).
    pub mass: f64,
    /// Mass-weighted centre; periodic: members unwrapped around the smallest-index member, the
    /// centre wrapped back into the box frame.
    pub com: [f64; 3],
    /// Mass-weighted mean velocity, where velocities exist.
    pub velocity: Option<[f64; 3]>,
    /// Largest member distance from `com` (minimum image when periodic).
    pub radius_max: f64,
    /// Root-mean-square member distance from `com` (unweighted).
    pub radius_rms: f64,
}

/// The catalogue and per-particle labels built from set ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// Halos by size descending, ties by smallest member index.
    pub halos: Vec<Halo>,
    /// Per particle: index of its halo in `halos`, or −1.
    pub labels: Vec<i32>,
    /// Number of friends-of-friends sets of every size (singletons included).
    pub n_sets_all_sizes: usize,
}

/// Per-halo running sums.
#[derive(Clone, Default)]
struct Sums {
    mass: f64,
    moment: [f64; 3],
    momentum: [f64; 3],
    reference: [f64; 3],
}

/// Builds the catalogue from `set_ids` (one per particle, each `< set_ids.len()`, equal ids ⇔
/// one set). `masses` and `velocities` have been checked to match the particle count.
pub fn build(
    set_ids: &[u32],
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
    frame: Option<BoxFrame>,
    min_members: usize,
) -> Catalogue {
    let n = set_ids.len();
    let mut set_size = vec![0u32; n];
    let mut set_min_index = vec![u32::MAX; n];
    for (i, &id) in set_ids.iter().enumerate() {
        let id = id as usize;
        if set_size[id] == 0 {
            set_min_index[id] = i as u32;
        }
        set_size[id] += 1;
    }
    let n_sets_all_sizes = set_size.iter().filter(|&&s| s > 0).count();

    let mut kept: Vec<usize> = (0..n)
        .filter(|&id| set_size[id] > 0 && set_size[id] as usize >= min_members)
        .collect();
    kept.sort_unstable_by_key(|&id| (std::cmp::Reverse(set_size[id]), set_min_index[id]));
    let mut rank_of_set = vec![-1i32; n];
    for (rank, &id) in kept.iter().enumerate() {
        rank_of_set[id] = rank as i32;
    }
    let labels: Vec<i32> = set_ids.iter().map(|&id| rank_of_set[id as usize]).collect();

    let place = |i: usize| match frame {
        Some(frame) => frame.wrap_point(&positions[i]),
        None => positions[i].map(f64::from),
    };
    // Offset of a member from its halo's reference member, unwrapped by minimum image.
    let offset = |p: &[f64; 3], reference: &[f64; 3]| -> [f64; 3] {
        let mut d = [0.0; 3];
        for axis in 0..3 {
            d[axis] = p[axis] - reference[axis];
            if let Some(frame) = frame {
                d[axis] = frame.min_image(d[axis]);
            }
        }
        d
    };

    let mut sums = vec![Sums::default(); kept.len()];
    for (sum, &id) in sums.iter_mut().zip(&kept) {
        sum.reference = place(set_min_index[id] as usize);
    }
    for (i, &label) in labels.iter().enumerate() {
        let Ok(rank) = usize::try_from(label) else {
            continue;
        };
        let sum = &mut sums[rank];
        let m = f64::from(masses.get(i));
        let d = offset(&place(i), &sum.reference);
        sum.mass += m;
        for (moment, d) in sum.moment.iter_mut().zip(d) {
            *moment += m * d;
        }
        if let Some(v) = velocities {
            for (momentum, v) in sum.momentum.iter_mut().zip(v[i]) {
                *momentum += m * f64::from(v);
            }
        }
    }

    let mut halos: Vec<Halo> = kept
        .iter()
        .zip(&sums)
        .map(|(&id, sum)| {
            // A massless halo (possible only in hand-made input) is centred on its reference
            // member instead of dividing by zero.
            let weight = if sum.mass > 0.0 { sum.mass } else { 1.0 };
            let com = [0, 1, 2].map(|axis| {
                let x = sum.reference[axis] + sum.moment[axis] / weight;
                frame.map_or(x, |frame| frame.wrap(x))
            });
            Halo {
                size: set_size[id] as usize,
                min_index: set_min_index[id] as usize,
                mass: sum.mass,
                com,
                velocity: velocities.map(|_| sum.momentum.map(|p| p / weight)),
                radius_max: 0.0,
                radius_rms: 0.0,
            }
        })
        .collect();

    let mut sum_r2 = vec![0.0f64; halos.len()];
    for (i, &label) in labels.iter().enumerate() {
        let Ok(rank) = usize::try_from(label) else {
            continue;
        };
        let d = offset(&place(i), &halos[rank].com);
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        sum_r2[rank] += r2;
        halos[rank].radius_max = halos[rank].radius_max.max(r2.sqrt());
    }
    for (halo, r2) in halos.iter_mut().zip(sum_r2) {
        halo.radius_rms = (r2 / halo.size as f64).sqrt();
    }

    Catalogue {
        halos,
        labels,
        n_sets_all_sizes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_ordered_and_centred_across_the_periodic_edge() {
        // Sets: {0, 3} straddling the edge of [0, 10), {1, 2, 4}, {5} alone.
        let ids = [0, 1, 1, 0, 1, 5];
        let positions = [
            [9.5f32, 5.0, 5.0],
            [2.0, 2.0, 2.0],
            [3.0, 2.0, 2.0],
            [0.5, 5.0, 5.0],
            [4.0, 2.0, 2.0],
            [7.0, 7.0, 7.0],
        ];
        let masses = Masses::PerParticle(vec![1.0, 1.0, 1.0, 3.0, 2.0, 1.0]);
        let frame = BoxFrame {
            lower: 0.0,
            size: 10.0,
        };
        let cat = build(&ids, &positions, &masses, None, Some(frame), 2);
        assert_eq!(cat.n_sets_all_sizes, 3);
        assert_eq!(cat.labels, vec![1, 0, 0, 1, 0, -1]);
        assert_eq!(cat.halos.len(), 2);
        let big = &cat.halos[0];
        assert_eq!((big.size, big.min_index, big.mass), (3, 1, 4.0));
        // (2·1 + 3·1 + 4·2)/4 = 3.25
        assert_eq!(big.com, [3.25, 2.0, 2.0]);
        assert_eq!(big.radius_max, 1.25);
        let pair = &cat.halos[1];
        // Unwrapped around 9.5: 9.5·1 + 10.5·3 → 10.25, wrapped to 0.25.
        assert_eq!(pair.com, [0.25, 5.0, 5.0]);
        assert_eq!(pair.radius_max, 0.75);
        assert_eq!(
            pair.radius_rms,
            ((0.75f64.powi(2) + 0.25f64.powi(2)) / 2.0).sqrt()
        );
        assert_eq!(pair.velocity, None);
    }
}
