//! glibc's log10f written out operation by operation, select-based so that the CPU projection
//! evaluates [`LANES`] of it in vector registers, and the probe values that decide whether it
//! may be used (the CUDA kernel kernels/upload_log10.cu is the same algorithm, checked on the
//! same probes).
//!
//! Why: `f32::log10` is a libm call per value (the fdlibm reduction around glibc's table-driven
//! logf), taken twice per particle by a colour frame with log intensity and log colour: 17 % of
//! the projection's time. It is not correctly rounded, so only its own algorithm gives its bits;
//! this copy has no contraction into fused multiply-adds (Rust never fuses) and, on the 2-core
//! box (glibc 2.36, `__logf_fma`), gives the host's bits on every positive float. Another libm
//! may differ: [`lanes_match_host`] compares it with the host's `f32::log10` on the probe values
//! once per process, and the callers take `f32::log10` where it does not match.

// Indexed loops over the lanes are the point here: each is one vector operation per step.
#![allow(clippy::needless_range_loop)]

use super::project::LANES;
use std::sync::OnceLock;

/// glibc logf's 16 subintervals: 1/c (e_logf_data.c), as IEEE double bits.
const INVC: [u64; 16] = [
    0x3ff6_61ec_79f8_f3be,
    0x3ff5_71ed_4aaf_883d,
    0x3ff4_9539_f0f0_10b0,
    0x3ff3_c995_b0b8_0385,
    0x3ff3_0d19_0c88_64a5,
    0x3ff2_5e22_7b0b_8ea0,
    0x3ff1_bb4a_4a1a_343f,
    0x3ff1_2358_f08a_e5ba,
    0x3ff0_953f_4199_00a7,
    0x3ff0_0000_0000_0000,
    0x3fee_608c_fd9a_47ac,
    0x3fec_a4b3_1f02_6aa0,
    0x3feb_2036_576a_fce6,
    0x3fe9_c2d1_63a1_aa2d,
    0x3fe8_86e6_0378_41ed,
    0x3fe7_67dc_f553_4862,
];

/// glibc logf's 16 subintervals: log(c), as IEEE double bits.
const LOGC: [u64; 16] = [
    0xbfd5_7bf7_808c_aade,
    0xbfd2_bef0_a7c0_6ddb,
    0xbfd0_1eae_7f51_3a67,
    0xbfcb_31d8_a682_24e9,
    0xbfc6_574f_0ac0_7758,
    0xbfc1_aa2b_c79c_8100,
    0xbfba_4e76_ce8c_0e5e,
    0xbfb1_973c_5a61_1ccc,
    0xbfa2_52f4_38e1_0c1e,
    0x0000_0000_0000_0000,
    0x3faa_a5aa_5df2_5984,
    0x3fbc_5e53_aa36_2eb4,
    0x3fc5_26e5_7720_db08,
    0x3fcb_c286_0d22_4770,
    0x3fd1_058b_c8a0_7ee1,
    0x3fd4_0430_57b6_ee09,
];

/// glibc log10f of each lane's value where it is > 0 (subnormals scaled by 2²⁵ first; +∞
/// gives +∞); lanes ≤ 0 or NaN hold a meaningless value (no panic). The reduction to logf's
/// argument in [0.5, 2) (fdlibm e_log10f.c), logf itself (e_logf.c: r = z/c − 1 on one of 16
/// subintervals, a cubic in r), then the recombination with the exponent, one loop per step:
/// the table look-up is a loop of its own, so that the compiler vectorises the arithmetic
/// across the lanes (with the look-up inside, every step stayed scalar).
#[inline(always)]
pub fn log10_lanes(v: &[f32; LANES], out: &mut [f32; LANES]) {
    let two25 = f32::from_bits(0x4c00_0000);
    let ivln10 = f32::from_bits(0x3ede_5bd9);
    let log10_2hi = f32::from_bits(0x3e9a_2080);
    let log10_2lo = f32::from_bits(0x3554_27db);
    let a0 = f64::from_bits(0xbfd0_0ea3_48b8_8334);
    let a1 = f64::from_bits(0x3fd5_575b_0be0_0b6a);
    let a2 = f64::from_bits(0xbfdf_fffe_f20a_4123);
    let ln2 = f64::from_bits(0x3fe6_2e42_fefa_39ef);
    // log10f's reduction: x = 2^k'·m with logf's argument m, y = k' as f32.
    let mut x = [0.0f32; LANES];
    let mut y = [0.0f32; LANES];
    let mut m = [0u32; LANES];
    for l in 0..LANES {
        let subnormal = (v[l].to_bits() as i32) < 0x0080_0000;
        x[l] = if subnormal { v[l] * two25 } else { v[l] };
        let hx = x[l].to_bits() as i32;
        let k = if subnormal { -25 } else { 0 } + (hx >> 23) - 127;
        let i = ((k as u32) >> 31) as i32;
        m[l] = ((hx & 0x007f_ffff) | ((0x7f - i) << 23)) as u32;
        y[l] = (k + i) as f32;
    }
    // logf's subinterval, exponent and reduced argument of m.
    let mut sub = [0usize; LANES];
    let mut km = [0i32; LANES];
    let mut z = [0.0f64; LANES];
    for l in 0..LANES {
        let tmp = m[l].wrapping_sub(0x3f33_0000);
        sub[l] = ((tmp >> 19) % 16) as usize;
        km[l] = (tmp as i32) >> 23;
        z[l] = f64::from(f32::from_bits(m[l].wrapping_sub(tmp & (0x1ff << 23))));
    }
    let mut invc = [0.0f64; LANES];
    let mut logc = [0.0f64; LANES];
    for l in 0..LANES {
        invc[l] = f64::from_bits(INVC[sub[l]]);
        logc[l] = f64::from_bits(LOGC[sub[l]]);
    }
    let mut lg = [0.0f32; LANES];
    for l in 0..LANES {
        let r = z[l] * invc[l] - 1.0;
        let y0 = logc[l] + f64::from(km[l]) * ln2;
        let r2 = r * r;
        let p = a1 * r + a2;
        let p = a0 * r2 + p;
        let p = (p * r2 + (y0 + r)) as f32;
        // glibc returns 0 for m = 1 before the polynomial (the sign of zero in downward
        // rounding).
        lg[l] = if m[l] == 0x3f80_0000 { 0.0 } else { p };
    }
    for l in 0..LANES {
        let t = y[l] * log10_2lo + ivln10 * lg[l];
        let t = t + y[l] * log10_2hi;
        // +∞ (and NaN): x + x, as log10f returns them.
        out[l] = if x[l].to_bits() as i32 >= 0x7f80_0000 {
            x[l] + x[l]
        } else {
            t
        };
    }
}

/// Whether [`log10_lanes`] gives the host's `f32::log10` bits on every positive probe value
/// (checked once per process).
pub fn lanes_match_host() -> bool {
    static MATCHES: OnceLock<bool> = OnceLock::new();
    *MATCHES.get_or_init(|| {
        probe_values()
            .into_iter()
            .filter(|&v| v > 0.0)
            .collect::<Vec<f32>>()
            .chunks(LANES)
            .all(|block| {
                let mut v = [1.0f32; LANES];
                v[..block.len()].copy_from_slice(block);
                let mut out = [0.0f32; LANES];
                log10_lanes(&v, &mut out);
                v.iter()
                    .zip(out)
                    .all(|(v, t)| t.to_bits() == v.log10().to_bits())
            })
    })
}

/// Probe values: every exponent's mantissas sampled by a fixed pseudo-random sequence (about
/// 1.4 % of them round differently in a correctly rounded log10 than in glibc's), subnormals,
/// powers of ten, and the special values.
pub(crate) fn probe_values() -> Vec<f32> {
    let mut values = vec![
        1.0,
        10.0,
        0.1,
        2.0,
        0.5,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::MAX,
        f32::INFINITY,
        0.0,
        -0.0,
        -1.0,
        f32::NAN,
        f32::NEG_INFINITY,
    ];
    values.extend((-38..=38).map(|e| 10f32.powi(e)));
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    values.extend((0..1 << 16).map(|_| {
        // splitmix64: an even spread of bit patterns over the positive floats below infinity.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        f32::from_bits(1 + (z % 0x7F7F_FFFF) as u32)
    }));
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_give_the_host_bits_on_the_probes_and_a_sweep_of_every_binade() {
        assert!(lanes_match_host(), "this host's libm is not the one copied");
        // Every 997th positive float below infinity, and the neighbours of 1 and 10.
        let mut values: Vec<f32> = (1..0x7f80_0000u32)
            .step_by(997)
            .map(f32::from_bits)
            .collect();
        for centre in [1.0f32, 10.0] {
            let b = centre.to_bits();
            values.extend((b - 64..b + 64).map(f32::from_bits));
        }
        values.push(f32::INFINITY);
        while !values.len().is_multiple_of(LANES) {
            values.push(1.0);
        }
        let mut out = [0.0f32; LANES];
        for block in values.chunks_exact(LANES) {
            let v: [f32; LANES] = std::array::from_fn(|l| block[l]);
            log10_lanes(&v, &mut out);
            for l in 0..LANES {
                assert_eq!(out[l].to_bits(), v[l].log10().to_bits(), "{:e}", v[l]);
            }
        }
    }

    #[test]
    fn other_arguments_give_a_value_without_panicking() {
        let v = [
            0.0,
            -0.0,
            -1.0,
            f32::NAN,
            f32::NEG_INFINITY,
            -f32::MAX,
            -1e-40,
            1.0,
        ];
        let mut out = [0.0f32; LANES];
        log10_lanes(&v, &mut out);
        assert_eq!(out[7], 0.0);
    }
}
