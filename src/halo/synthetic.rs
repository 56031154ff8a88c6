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
    fn splitmix_matches_the_published_sequence() {
        // First outputs for seed 1234567 from the reference C implementation.
        let mut rng = SplitMix64::new(1234567);
        assert_eq!(rng.next_u64(), 6457827717110365317);
        assert_eq!(rng.next_u64(), 3203168211198807973);
    }
}
