//! Deterministic synthetic particle sets for tests and benchmarks: uniform background plus
//! compact clusters, the shape that stresses a friends-of-friends linker.

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", 2014):
/// tiny, seedable, and the same on every platform.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// `n` points in the periodic box `[0, box_size)³`: half uniform, half in clusters of 1000
/// members on average, each cluster a cuspy ball (radius ∝ u³ of the cluster's scale, so the
/// centre is very dense) of scale 0.3–3 mean separations of the whole set.
pub fn clustered_points(n: usize, box_size: f64, seed: u64) -> Vec<[f32; 3]> {
    let mut rng = SplitMix64::new(seed);
    let mean_separation = box_size / (n.max(1) as f64).cbrt();
    let n_clustered = n / 2;
    let n_clusters = (n_clustered / 1000).max(1);
    let centres: Vec<([f64; 3], f64)> = (0..n_clusters)
        .map(|_| {
            let c = [0; 3].map(|_| rng.next_f64() * box_size);
            (c, mean_separation * (0.3 + 2.7 * rng.next_f64()))
        })
        .collect();
    let wrap = |x: f64| {
        let y = x.rem_euclid(box_size);
        // rem_euclid can round up onto the excluded edge.
        (if y >= box_size { 0.0 } else { y }) as f32
    };
    let mut points = Vec::with_capacity(n);
    for i in 0..n {
        if i < n_clustered {
            let (centre, scale) = centres[(rng.next_u64() % n_clusters as u64) as usize];
            let r = scale * 8.0 * rng.next_f64().powi(3);
            // Isotropic direction: z uniform in [−1, 1], azimuth uniform.
            let z = 2.0 * rng.next_f64() - 1.0;
            let phi = std::f64::consts::TAU * rng.next_f64();
            let s = (1.0 - z * z).sqrt();
            let dir = [s * phi.cos(), s * phi.sin(), z];
            points.push([0, 1, 2].map(|a| wrap(centre[a] + r * dir[a])));
        } else {
            points.push([0; 3].map(|_| wrap(rng.next_f64() * box_size)));
        }
    }
    points
}

/// Points per independently seeded block of [`clustered_points_parallel`].
const BLOCK: usize = 1 << 20;

/// [`clustered_points`]' shape (the same clusters and the same half uniform) generated in
/// blocks of 2^20 points on rayon threads, each block from its own generator, so that 10⁹
/// points take seconds; the result depends on `seed` only, not on the thread count.
pub fn clustered_points_parallel(n: usize, box_size: f64, seed: u64) -> Vec<[f32; 3]> {
    use rayon::prelude::*;
    let mut rng = SplitMix64::new(seed);
    let mean_separation = box_size / (n.max(1) as f64).cbrt();
    let n_clustered = n / 2;
    let n_clusters = (n_clustered / 1000).max(1);
    let centres: Vec<([f64; 3], f64)> = (0..n_clusters)
        .map(|_| {
            let c = [0; 3].map(|_| rng.next_f64() * box_size);
            (c, mean_separation * (0.3 + 2.7 * rng.next_f64()))
        })
        .collect();
    // rem_euclid, and then the cast to float32, can round up onto the excluded edge.
    let wrap = |x: f64| {
        let y = x.rem_euclid(box_size) as f32;
        if f64::from(y) >= box_size { 0.0 } else { y }
    };
    let mut points = vec![[0f32; 3]; n];
    points
        .par_chunks_mut(BLOCK)
        .enumerate()
        .for_each(|(block, out)| {
            let mut rng =
                SplitMix64::new(seed ^ (block as u64 + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93));
            for (offset, point) in out.iter_mut().enumerate() {
                let i = block * BLOCK + offset;
                *point = if i < n_clustered {
                    let (centre, scale) = centres[(rng.next_u64() % n_clusters as u64) as usize];
                    let r = scale * 8.0 * rng.next_f64().powi(3);
                    let z = 2.0 * rng.next_f64() - 1.0;
                    let phi = std::f64::consts::TAU * rng.next_f64();
                    let s = (1.0 - z * z).sqrt();
                    let dir = [s * phi.cos(), s * phi.sin(), z];
                    [0, 1, 2].map(|a| wrap(centre[a] + r * dir[a]))
                } else {
                    [0; 3].map(|_| wrap(rng.next_f64() * box_size))
                };
            }
        });
    points
}

/// A two-mass zoom-in in the periodic box `[0, 1)³`: a coarse background of 10³ particles of mass
/// 1000 on a lattice of spacing 0.1, and at the centre of one coarse cell two fine clumps of
/// 5³ particles of mass 1 (lattices of spacing 0.0015) whose facing faces are 0.004 apart. The
/// fine particles' separation at the mean density is (1 / 1 000 250)^(1/3) ≈ 0.01, so b = 0.2
/// links within each clump (0.0015 < 0.002) but not across the gap: two groups of 125. The
/// mean separation of all 1250 particles is ≈ 0.093, and b times it (≈ 0.0186) joins the
/// clumps into one group of 250 while the background (0.1 apart) stays unlinked.
pub fn two_mass_zoom_in() -> (Vec<[f32; 3]>, Vec<f32>) {
    const FINE_SPACING: f64 = 0.0015;
    const GAP: f64 = 0.004;
    let mut positions = Vec::new();
    let mut masses = Vec::new();
    for i in 0..1000 {
        let cell = [i / 100, (i / 10) % 10, i % 10];
        positions.push(cell.map(|c| (0.1 * c as f64) as f32));
        masses.push(1000.0);
    }
    // Clump A spans x in [0.54, 0.546]; clump B starts GAP further on.
    let clump_side = 4.0 * FINE_SPACING;
    for start in [0.54, 0.54 + clump_side + GAP] {
        for i in 0..125 {
            let (a, b, c) = (i / 25, (i / 5) % 5, i % 5);
            positions.push([
                (start + FINE_SPACING * a as f64) as f32,
                (0.54 + FINE_SPACING * b as f64) as f32,
                (0.54 + FINE_SPACING * c as f64) as f32,
            ]);
            masses.push(1.0);
        }
    }
    (positions, masses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_reproducible_and_inside_the_box() {
        let a = clustered_points(5000, 2.0, 7);
        assert_eq!(a, clustered_points(5000, 2.0, 7));
        assert_ne!(a, clustered_points(5000, 2.0, 8));
        assert!(a.iter().flatten().all(|&x| (0.0..2.0).contains(&x)));
    }

    #[test]
    fn parallel_points_are_reproducible_and_inside_the_box() {
        let a = clustered_points_parallel(3 << 20, 1.0, 7);
        assert_eq!(a, clustered_points_parallel(3 << 20, 1.0, 7));
        assert!(a.iter().flatten().all(|&x| (0.0..1.0).contains(&x)));
        assert_ne!(a[..1000], a[1 << 20..(1 << 20) + 1000]);
    }

    #[test]
    fn splitmix_matches_the_published_sequence() {
        // First outputs for seed 1234567 from the reference C implementation.
        let mut rng = SplitMix64::new(1234567);
        assert_eq!(rng.next_u64(), 6457827717110365317);
        assert_eq!(rng.next_u64(), 3203168211198807973);
    }
}
