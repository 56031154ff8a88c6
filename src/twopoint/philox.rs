//! Philox4x32-10 counter-based RNG (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as
//! easy as 1, 2, 3", SC'11; the Random123 reference), and the scrambled right ascension.
//!
//! Written with plain 32-bit operations so that CUDA C reproduces it bit for bit:
//!
//! ```c
//! // one round: (hi, lo) of the 64-bit products
//! lo0 = M0 * c0;  hi0 = __umulhi(M0, c0);   lo1 = M1 * c2;  hi1 = __umulhi(M1, c2);
//! c = { hi1 ^ c1 ^ k0,  lo1,  hi0 ^ c3 ^ k1,  lo0 };   k0 += W0;  k1 += W1;   // 10 rounds
//! ```
//!
//! Scrambled RA of event `e` (prepared, declination-sorted index) in trial `t` with seed `s`:
//! counter = (e, t mod 2³², t >> 32, 0), key = (s mod 2³², s >> 32); output words w0, w1 give
//! 53 bits m = (w0 << 21) | (w1 >> 11); RA = (m as f64 · 2⁻⁵³) · 2π, i.e. in C
//! `(double)m * 0x1.0p-53 * 6.283185307179586` evaluated left to right: the first product is
//! exact (a power of two), the second rounds once to nearest, so no FMA contraction can apply.
//! The result lies in [0, 2π): the largest m gives 2π − 2π·2⁻⁵³, which rounds below 2π.

/// Philox multiplier for word 0.
const M0: u32 = 0xD251_1F53;
/// Philox multiplier for word 2.
const M1: u32 = 0xCD9E_8D57;
/// Weyl increment of key word 0 (golden ratio).
const W0: u32 = 0x9E37_79B9;
/// Weyl increment of key word 1 (√3 − 1).
const W1: u32 = 0xBB67_AE85;

/// 2π as the f64 nearest to it (`6.283185307179586`).
const TWO_PI: f64 = std::f64::consts::TAU;

/// One Philox4x32 block with 10 rounds.
#[inline]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = counter;
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let p0 = u64::from(M0) * u64::from(c0);
        let p1 = u64::from(M1) * u64::from(c2);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        (c0, c1, c2, c3) = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0);
    }
    [c0, c1, c2, c3]
}

/// The 53-bit draw m (u = m·2⁻⁵³ in [0, 1)) of prepared event `event` in trial `trial` for
/// `seed`, from which both the continuous and the grid scramble take RA.
#[inline]
pub fn philox_mantissa(seed: u64, trial: u64, event: u32) -> u64 {
    let words = philox4x32_10(
        [event, trial as u32, (trial >> 32) as u32, 0],
        [seed as u32, (seed >> 32) as u32],
    );
    (u64::from(words[0]) << 21) | (u64::from(words[1]) >> 11)
}

/// The scrambled RA (radians, [0, 2π)) of prepared event `event` in trial `trial` for `seed`.
#[inline]
pub fn scrambled_ra_of(seed: u64, trial: u64, event: u32) -> f64 {
    let mantissa = philox_mantissa(seed, trial, event);
    (mantissa as f64 * (1.0 / 9_007_199_254_740_992.0)) * TWO_PI
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors from Random123's kat_vectors file (counter, key → output).
    #[test]
    fn random123_known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn ra_stays_below_two_pi_and_is_reproducible() {
        let largest = ((1u64 << 53) - 1) as f64 * (1.0 / 9_007_199_254_740_992.0) * TWO_PI;
        assert!(largest < TWO_PI);
        assert_eq!(scrambled_ra_of(7, 3, 11), scrambled_ra_of(7, 3, 11));
        assert_ne!(scrambled_ra_of(7, 3, 11), scrambled_ra_of(7, 4, 11));
        assert_ne!(scrambled_ra_of(7, 3, 11), scrambled_ra_of(8, 3, 11));
        let mean = (0..100_000u32)
            .map(|e| scrambled_ra_of(1, 0, e))
            .sum::<f64>()
            / 100_000.0;
        // Uniform on [0, 2π): mean π, standard error 2π/√12/√1e5 ≈ 0.0057.
        assert!((mean - std::f64::consts::PI).abs() < 0.03, "mean {mean}");
    }
}
