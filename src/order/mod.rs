//! Morton and Hilbert keys for particle positions, and reordering for locality.
//!
//! Positions are quantised to `bits` per axis (≤ 21, so a key fits in 63 bits) inside a
//! bounding box; nearby particles get nearby keys, so sorting by key puts particles that are
//! close in space close in memory, which helps the cache of grid searches and tile kernels.

use rayon::prelude::*;

/// Which space-filling curve orders the particles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Curve {
    /// Keep file order.
    None,
    /// Z-order (bit interleaving).
    Morton,
    /// 3-D Hilbert curve (Skilling's transpose algorithm).
    Hilbert,
}

/// Maximum quantisation bits per axis for 64-bit keys.
pub const MAX_BITS: u32 = 21;

/// Quantises `pos` in the box `[lo, lo + extent)` to `bits`-bit integer coordinates (clamped).
pub fn quantise(pos: [f32; 3], lo: [f64; 3], extent: f64, bits: u32) -> [u32; 3] {
    let cells = (1u64 << bits) as f64;
    let max = (1u32 << bits) - 1;
    std::array::from_fn(|a| {
        let t = (f64::from(pos[a]) - lo[a]) / extent * cells;
        if t.is_nan() || t <= 0.0 {
            0
        } else {
            (t as u64).min(u64::from(max)) as u32
        }
    })
}

/// Spreads the low 21 bits of `v` so that two zero bits follow each bit.
fn spread_bits(v: u32) -> u64 {
    let mut x = u64::from(v) & 0x1f_ffff;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    x = (x | (x << 2)) & 0x1249_2492_4924_9249;
    x
}

/// Morton key of integer coordinates (x in the lowest bit of each triple).
pub fn morton_key(q: [u32; 3]) -> u64 {
    spread_bits(q[0]) | (spread_bits(q[1]) << 1) | (spread_bits(q[2]) << 2)
}

/// Hilbert key of `bits`-bit integer coordinates (J. Skilling, "Programming the Hilbert curve",
/// AIP Conf. Proc. 707, 381 (2004): axes → transpose, then interleave).
pub fn hilbert_key(q: [u32; 3], bits: u32) -> u64 {
    let mut x = q;
    let m = 1u32 << (bits - 1);
    // Inverse undo of excess work.
    let mut bit = m;
    while bit > 1 {
        let p = bit - 1;
        for i in 0..3 {
            if x[i] & bit != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        bit >>= 1;
    }
    // Gray encode.
    x[1] ^= x[0];
    x[2] ^= x[1];
    let mut t = 0;
    let mut bit = m;
    while bit > 1 {
        if x[2] & bit != 0 {
            t ^= bit - 1;
        }
        bit >>= 1;
    }
    for v in &mut x {
        *v ^= t;
    }
    // Interleave the transpose: the highest bit of x[0] is the key's top bit.
    let mut key = 0u64;
    for b in (0..bits).rev() {
        for v in &x {
            key = (key << 1) | u64::from((v >> b) & 1);
        }
    }
    key
}

/// Keys of every position along `curve` inside the bounding box of the positions.
pub fn keys(positions: &[[f32; 3]], curve: Curve, bits: u32) -> Vec<u64> {
    let bits = bits.clamp(1, MAX_BITS);
    let (lo, extent) = bounding_cube(positions);
    positions
        .par_iter()
        .enumerate()
        .map(|(i, &p)| {
            let q = quantise(p, lo, extent, bits);
            match curve {
                Curve::None => i as u64,
                Curve::Morton => morton_key(q),
                Curve::Hilbert => hilbert_key(q, bits),
            }
        })
        .collect()
}

/// The permutation that sorts `positions` along `curve` (stable: ties keep file order).
pub fn permutation(positions: &[[f32; 3]], curve: Curve, bits: u32) -> Vec<u32> {
    let keys = keys(positions, curve, bits.clamp(1, MAX_BITS));
    if 3 * bits.clamp(1, MAX_BITS) <= 32 && positions.len() <= 1 << 32 {
        // Key and index packed in one u64 (key above the 32 index bits): one sort of plain
        // words, no indirect key reads; the same order as a stable sort by key.
        let mut packed: Vec<u64> = keys
            .par_iter()
            .enumerate()
            .map(|(i, &k)| (k << 32) | i as u64)
            .collect();
        packed.par_sort_unstable();
        return packed.par_iter().map(|&w| w as u32).collect();
    }
    let mut order: Vec<u32> = (0..positions.len() as u32).collect();
    order.par_sort_by_key(|&i| keys[i as usize]);
    order
}

/// Applies `order` to `values`: out[k] = values[order[k]].
pub fn apply<T: Copy + Send + Sync>(values: &[T], order: &[u32]) -> Vec<T> {
    order.par_iter().map(|&i| values[i as usize]).collect()
}

/// Reorders every per-particle array of `species` (positions, masses, velocities, IDs,
/// smoothing lengths, fields) along `curve`; arrays of another length than the positions are
/// left alone. `Curve::None` keeps file order.
pub fn reorder_species(species: &mut crate::data::Species, curve: Curve, bits: u32) {
    if curve == Curve::None || species.positions.len() > u32::MAX as usize {
        return;
    }
    let n = species.positions.len();
    let order = permutation(&species.positions, curve, bits);
    fn permute<T: Copy + Send + Sync>(values: &mut Vec<T>, order: &[u32], n: usize) {
        if values.len() == n {
            *values = apply(values, order);
        }
    }
    permute(&mut species.positions, &order, n);
    if let crate::data::Masses::PerParticle(m) = &mut species.masses {
        permute(m, &order, n);
    }
    if let Some(v) = &mut species.velocities {
        permute(v, &order, n);
    }
    if let Some(v) = &mut species.ids {
        permute(v, &order, n);
    }
    if let Some(v) = &mut species.smoothing_lengths {
        permute(v, &order, n);
    }
    for field in &mut species.fields {
        permute(&mut field.values, &order, n);
    }
}

/// Lower corner and side of the smallest cube holding every finite position (side ≥ tiny).
fn bounding_cube(positions: &[[f32; 3]]) -> ([f64; 3], f64) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in positions {
        for a in 0..3 {
            let v = f64::from(p[a]);
            if v.is_finite() {
                lo[a] = lo[a].min(v);
                hi[a] = hi[a].max(v);
            }
        }
    }
    if lo[0] > hi[0] {
        return ([0.0; 3], 1.0);
    }
    let extent = (0..3).map(|a| hi[a] - lo[a]).fold(0.0, f64::max);
    // Slightly larger than the extent so the maximum lands inside the last cell.
    (lo, (extent * (1.0 + 1e-9)).max(f64::MIN_POSITIVE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_interleaves_bits() {
        assert_eq!(morton_key([1, 0, 0]), 0b001);
        assert_eq!(morton_key([0, 1, 0]), 0b010);
        assert_eq!(morton_key([0, 0, 1]), 0b100);
        assert_eq!(morton_key([3, 0, 0]), 0b001_001);
        assert_eq!(morton_key([(1 << 21) - 1; 3]), (1u64 << 63) - 1);
    }

    /// A Hilbert curve visits every cell once, and consecutive keys are face neighbours.
    #[test]
    fn hilbert_is_a_continuous_bijection() {
        let bits = 3;
        let n = 1u32 << bits;
        let mut cell_of_key = vec![None; (n * n * n) as usize];
        for x in 0..n {
            for y in 0..n {
                for z in 0..n {
                    let k = hilbert_key([x, y, z], bits) as usize;
                    assert!(cell_of_key[k].is_none(), "key {k} used twice");
                    cell_of_key[k] = Some([x, y, z]);
                }
            }
        }
        let cells: Vec<[u32; 3]> = cell_of_key.into_iter().map(|c| c.expect("gap")).collect();
        for pair in cells.windows(2) {
            let step: u32 = (0..3).map(|a| pair[0][a].abs_diff(pair[1][a])).sum();
            assert_eq!(step, 1, "jump between {:?} and {:?}", pair[0], pair[1]);
        }
    }

    #[test]
    fn permutation_sorts_and_is_a_permutation() {
        let positions: Vec<[f32; 3]> = (0..500)
            .map(|i| {
                let t = i as f32 * 0.618_034;
                [t.fract(), (t * 7.0).fract(), (t * 13.0).fract()]
            })
            .collect();
        for (curve, bits) in [
            (Curve::None, 10),
            (Curve::Morton, 10),
            (Curve::Hilbert, 10),
            (Curve::Morton, 21),
            (Curve::Hilbert, 21),
        ] {
            let order = permutation(&positions, curve, bits);
            let mut seen = order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..500).collect::<Vec<u32>>());
            let keys = keys(&positions, curve, bits);
            // Sorted by key, ties in file order (what a stable sort gives).
            assert!(order.windows(2).all(|w| {
                let (a, b) = (keys[w[0] as usize], keys[w[1] as usize]);
                a < b || (a == b && w[0] < w[1])
            }));
        }
    }

    /// Every per-particle array moves with its particle: (position, h, field, id) tuples are the
    /// same set before and after, and the positions end in Morton-key order.
    #[test]
    fn reorder_species_moves_every_array_together() {
        let mut species = crate::data::Species::empty(crate::data::SpeciesKind::Gas);
        species.positions = (0..300)
            .map(|i| {
                let t = i as f32 * 0.618_034;
                [t.fract(), (t * 5.0).fract(), (t * 11.0).fract()]
            })
            .collect();
        species.smoothing_lengths = Some((0..300).map(|i| i as f32 * 0.5).collect());
        species.ids = Some((0..300).map(|i| 1000 + i as u64).collect());
        species.masses = crate::data::Masses::PerParticle((0..300).map(|i| i as f32).collect());
        species.fields.push(crate::data::Field {
            name: "T".to_owned(),
            values: (0..300).map(|i| i as f32 * 2.0).collect(),
            units: Default::default(),
        });
        let before = species.positions.clone();
        reorder_species(&mut species, Curve::Morton, 10);
        let ids = species.ids.as_ref().expect("ids");
        let h = species.smoothing_lengths.as_ref().expect("h");
        let crate::data::Masses::PerParticle(m) = &species.masses else {
            panic!("masses became uniform");
        };
        for (k, &id) in ids.iter().enumerate() {
            let i = (id - 1000) as usize;
            assert_eq!(species.positions[k], before[i]);
            assert_eq!(h[k], i as f32 * 0.5);
            assert_eq!(m[k], i as f32);
            assert_eq!(species.fields[0].values[k], i as f32 * 2.0);
        }
        let mut sorted_ids = ids.clone();
        sorted_ids.sort_unstable();
        assert_eq!(sorted_ids, (1000..1300).collect::<Vec<u64>>());
        let keys = keys(&species.positions, Curve::Morton, 10);
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
    }
}
