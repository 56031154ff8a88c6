//! Angle bins θ_k = step·k and the exact edge test on squared chord lengths.
//!
//! Edge rule (DESIGN §6): a pair is inside bin k when Ψ ≤ θ_k, ties inside. The reference
//! (`ic40_reference.json`) computes Ψ from the exact decimal inputs, so a pair whose true Ψ equals
//! θ_k (same RA and Dec 0.5° apart, RA 0 vs 360, events at a pole: common in the rounded IC86-2011
//! release) must count. In f64 such a pair lands a few ulps either side of the edge.
//!
//! We compare squared chord lengths c² = |u_i − u_j|² = 4 sin²(Ψ/2) rather than dot products:
//! c² is computed from coordinate differences, so its relative error stays ~1e-15 at small
//! angles, whereas 1 − u_i·u_j loses about log10(1/θ²) digits. A pair is inside when
//! c² ≤ 4 sin²(θ_k/2)·(1 + [`EDGE_TOLERANCE`]). The tolerance is far above the f64 error of a true
//! tie (decimal → f64 parse, degrees → radians, sin/cos: each event is off by ≲ 2e-15 rad, so
//! c² of a tie at θ ≥ 0.25° is off by ≲ 2·2·2e-15/0.0044 ≈ 2e-12 relative; measured: 1.3e-13 at
//! most over the 39,747 exact ties of IC86-2011) and far below the closest non-tie (measured
//! with 60-digit arithmetic on the decimal inputs by scripts/bench/twopoint_edges.py: 8.0e-9
//! relative in IC86-2011, 6.7e-8 in IC40).

use super::TwoPointError;

/// Relative tolerance on c² that makes exact ties at a bin edge count as inside.
pub const EDGE_TOLERANCE: f64 = 1e-10;

/// Angle bins θ_k = step·k, k = 1..=count, with their squared-chord thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct AngleBins {
    /// Bin step in degrees.
    pub step_deg: f64,
    /// Upper edges θ_k in degrees.
    pub edges_deg: Vec<f64>,
    /// Inclusive upper thresholds on c² = |u_i − u_j|² for each bin (edge tolerance included).
    pub chord2_max: Vec<f64>,
    /// Lookup table from a cell of c² to the first bin that can hold it (see [`Self::bin_of`]).
    lookup: Vec<u16>,
    /// Cells per unit c² in `lookup`.
    lookup_scale: f64,
}

/// Cells of the c² lookup table.
const LOOKUP_CELLS: usize = 4096;

impl AngleBins {
    /// `count` bins of `step_deg` degrees; the largest edge must not exceed 180°.
    pub fn new(step_deg: f64, count: usize) -> Result<Self, TwoPointError> {
        if !(step_deg.is_finite() && step_deg > 0.0) {
            return Err(TwoPointError::Config(format!(
                "bin step must be a positive number of degrees, got {step_deg}"
            )));
        }
        if count == 0 || count > u16::MAX as usize {
            return Err(TwoPointError::Config(format!(
                "bin count must lie in 1..={}, got {count}",
                u16::MAX
            )));
        }
        let edges_deg: Vec<f64> = (1..=count).map(|k| step_deg * k as f64).collect();
        let max_deg = edges_deg[count - 1];
        if max_deg > 180.0 {
            return Err(TwoPointError::Config(format!(
                "largest angle {max_deg}° exceeds 180°"
            )));
        }
        let chord2_max: Vec<f64> = edges_deg
            .iter()
            .map(|&deg| {
                let half_chord = (deg.to_radians() / 2.0).sin();
                4.0 * half_chord * half_chord * (1.0 + EDGE_TOLERANCE)
            })
            .collect();
        let top = chord2_max[count - 1];
        let lookup_scale = LOOKUP_CELLS as f64 / top;
        // Cell m covers c² in [m/scale, (m+1)/scale); it starts at the first bin whose threshold
        // reaches the previous cell's start, so that rounding of c²·scale up by one cell never
        // skips a bin. `bin_of` then walks forward with exact comparisons.
        let lookup = (0..=LOOKUP_CELLS)
            .map(|m| {
                let low = m.saturating_sub(1) as f64 / lookup_scale;
                chord2_max.partition_point(|&t| t < low).min(count - 1) as u16
            })
            .collect();
        Ok(Self {
            step_deg,
            edges_deg,
            chord2_max,
            lookup,
            lookup_scale,
        })
    }

    /// Number of bins.
    pub fn len(&self) -> usize {
        self.edges_deg.len()
    }

    /// Whether there are no bins (never true for a constructed value).
    pub fn is_empty(&self) -> bool {
        self.edges_deg.is_empty()
    }

    /// Largest angle in radians.
    pub fn max_angle_rad(&self) -> f64 {
        self.edges_deg[self.len() - 1].to_radians()
    }

    /// The inclusive c² threshold of the largest bin.
    #[inline]
    pub fn chord2_limit(&self) -> f64 {
        self.chord2_max[self.len() - 1]
    }

    /// Smallest bin index b with c² ≤ `chord2_max[b]`, for c² ≤ [`Self::chord2_limit`].
    #[inline]
    pub fn bin_of(&self, chord2: f64) -> usize {
        let cell = ((chord2 * self.lookup_scale) as usize).min(LOOKUP_CELLS);
        let mut bin = self.lookup[cell] as usize;
        while bin + 1 < self.chord2_max.len() && chord2 > self.chord2_max[bin] {
            bin += 1;
        }
        bin
    }

    /// Smallest bin index by a plain scan (reference for tests and the brute force).
    pub fn bin_of_by_scan(&self, chord2: f64) -> Option<usize> {
        self.chord2_max.iter().position(|&t| chord2 <= t)
    }
}

/// Unit vector of (RA, Dec) in radians: (cos δ cos α, cos δ sin α, sin δ).
#[inline]
pub fn unit_vector(ra: f64, dec: f64) -> [f64; 3] {
    let (sin_dec, cos_dec) = dec.sin_cos();
    let (sin_ra, cos_ra) = ra.sin_cos();
    [cos_dec * cos_ra, cos_dec * sin_ra, sin_dec]
}

/// Squared chord length |a − b|² between two unit vectors.
#[inline]
pub fn chord2(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    let dx = a[0] - b[0];
    let dy = a[1] - b[1];
    let dz = a[2] - b[2];
    dx * dx + dy * dy + dz * dz
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_agrees_with_scan_everywhere() {
        let bins = AngleBins::new(0.25, 20).expect("bins");
        let top = bins.chord2_limit();
        for i in 0..=200_000u32 {
            let c2 = top * f64::from(i) / 200_000.0;
            assert_eq!(Some(bins.bin_of(c2)), bins.bin_of_by_scan(c2), "c2 {c2}");
        }
        for &t in &bins.chord2_max {
            for c2 in [t, t.next_down(), t.next_up()] {
                if c2 <= top {
                    assert_eq!(Some(bins.bin_of(c2)), bins.bin_of_by_scan(c2));
                }
            }
        }
    }

    #[test]
    fn edges_and_bad_configs() {
        let bins = AngleBins::new(0.25, 20).expect("bins");
        assert_eq!(bins.edges_deg[19], 5.0);
        assert_eq!(bins.len(), 20);
        assert!(AngleBins::new(0.0, 3).is_err());
        assert!(AngleBins::new(f64::NAN, 3).is_err());
        assert!(AngleBins::new(1.0, 0).is_err());
        assert!(AngleBins::new(10.0, 19).is_err());
        assert!(AngleBins::new(10.0, 18).is_ok());
    }

    #[test]
    fn exact_ties_count_as_inside() {
        let bins = AngleBins::new(0.25, 20).expect("bins");
        // Same RA, Dec 12.3 and 11.8 (0.5° apart in decimal): bin index 1 (θ = 0.5°).
        let a = unit_vector(275.1f64.to_radians(), 12.3f64.to_radians());
        let b = unit_vector(275.1f64.to_radians(), 11.8f64.to_radians());
        assert_eq!(bins.bin_of(chord2(&a, &b)), 1);
        // At the south pole every RA is the same point: Dec -90 vs -89.0 is exactly 1°.
        let pole = unit_vector(0.3, (-90.0f64).to_radians());
        let c = unit_vector(4.0, (-89.0f64).to_radians());
        assert_eq!(bins.bin_of(chord2(&pole, &c)), 3);
    }
}
