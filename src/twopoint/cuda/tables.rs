//! Host-side tables of the CUDA pair counter (kernels/twopoint*.cu): RA cells per declination
//! stripe, and the f32 / f64 edge bands that keep the GPU's counts equal to the CPU's.
//!
//! Error bounds (why the bands are safe):
//! - f32 pre-filter. The kernel rounds each f64 unit-vector component (|x| ≤ 1) to f32, error
//!   ≤ 2⁻²⁵; a difference of two such values is off by ≤ 2⁻²⁴ before and 2⁻²⁴·|d| after its
//!   own rounding, so |d₃₂ − d| ≤ ε_d = 2⁻²⁴(1 + |d|). Then |Σd₃₂² − Σd²| ≤ Σ ε_d(2|d_i| + ε_d)
//!   ≤ ε_d(2√3·c + 3ε_d) with Σ|d_i| ≤ √3·c, plus ≤ 3·2⁻²⁴·c² for the three f32 roundings of
//!   squares and sums (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1, γ₃).
//!   [`F32_SAFETY`] times that bound, at c = √(1.01·threshold), gives the band around each
//!   threshold inside which the f32 value does not decide. The counting kernels compute
//!   c² = fma(dx, dx, fma(dy, dy, dz·dz)): the products inside an fma are exact, so there are
//!   again three roundings (dz², the inner and the outer fma), each of a partial sum ≤ c², i.e.
//!   the same γ₃·c² (Higham §3.1): the same bands hold, with the same safety factor.
//! - Direct lookup cells. An f32 c² lands in lookup cell m only if m − 1 < c²·scale < m + 1
//!   (the f32 product is monotone and m, m + 1 are exact), so when
//!   outside32[k − 1] < (m − 2)/scale and (m + 2)/scale ≤ inside32[k] (a cell of margin on each
//!   side for the f64 divisions) every c² of cell m is certainly in bin k: the entry is marked
//!   [`LUT_DIRECT`] and `tp_count_b2fd` skips the bin search and band check there.
//! - f64 GPU vs CPU. CUDA's double sin/cos are within 2 ulp (CUDA C Programming Guide, "Mathematical
//!   Functions", double precision table), glibc's within 1 ulp, so each scrambled component
//!   differs by ≤ 3 ulp of a value ≤ 1 (≤ 7e-16) plus one ulp of the product with cos δ; d by
//!   ≤ 1.6e-15 + ulp(d); c² by ≤ 2√3·c·1.6e-15 + a few ulps of c². The ambiguity half-width is
//!   [`F64_SAFETY`] times that. A pair whose GPU c² lies inside it is decided by the host with the
//!   CPU's arithmetic. True ties sit 1e-10 (relative, `EDGE_TOLERANCE`) below a threshold, far
//!   outside this band for angles ≳ 0.06°, so the host sees almost no pairs.

use crate::twopoint::{Prepared, TwoPointError};
use std::f64::consts::{FRAC_PI_2, TAU};

/// Largest number of angle bins the kernel's shared-memory tables hold (`MAX_BINS`).
pub const MAX_BINS: usize = 256;
/// Largest `levels × bins` histogram per block.
pub const MAX_HISTOGRAM: usize = 2048;
/// Cells of the c² → first-candidate-bin lookup table (`MAX_LUT_CELLS` in the kernel).
pub const LUT_CELLS: usize = 1024;
/// Lookup entry flag: every f32 c² of the cell is certainly in the entry's bin.
pub const LUT_DIRECT: u16 = 0x8000;
/// Lookup entry bits holding the bin.
pub const LUT_BIN_MASK: u16 = 0x7fff;
/// Safety factor on the f32 error bound.
pub const F32_SAFETY: f64 = 4.0;
/// Safety factor on the f64 GPU-versus-CPU error bound.
pub const F64_SAFETY: f64 = 16.0;
/// Most RA cells in one stripe (tiny angles would ask for more).
const MAX_CELLS_PER_STRIPE: usize = 1 << 16;
/// Cells allowed whatever the event count (the cap is 4 per event above this).
const MIN_CELL_CAP: usize = 1 << 15;

/// Everything the kernel reads that depends on the prepared list and bins, not on the trial.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaTables {
    /// Stripe of each prepared event.
    pub stripe_of_event: Vec<u32>,
    /// Cut level of each prepared event.
    pub level: Vec<u32>,
    /// First global cell of each stripe; `stripe_cell_base[s + 1] − stripe_cell_base[s]` cells.
    pub stripe_cell_base: Vec<u32>,
    /// Cells per radian of RA in each stripe (cells / 2π).
    pub stripe_inv_cell_width: Vec<f64>,
    /// f32 c² at or below which a pair is certainly inside bin k.
    pub inside32: Vec<f32>,
    /// f32 c² above which a pair is certainly outside bin k.
    pub outside32: Vec<f32>,
    /// Half-width of the band around `chord2_max[k]` where the GPU's f64 c² is not trusted.
    pub ambiguity: Vec<f64>,
    /// First bin that an f32 c² in lookup cell m can fall in (`LUT_CELLS + 1` entries), with
    /// [`LUT_DIRECT`] set where the whole cell is certainly in that bin.
    pub lut: Vec<u16>,
    /// Lookup cells per unit of f32 c².
    pub lut_scale: f32,
    /// Per lookup cell (`LUT_CELLS + 1`), four f32 words for the one-step decision of
    /// `tp_count_flats2`: inside32[k], outside32[k], inside32[k + 1] (outside32[k] for the last
    /// bin) and the bits of k, the cell's first candidate bin.
    pub cell_table: Vec<f32>,
    /// Whether every c² of every lookup cell lies at or below outside32[k + 1] (k its first
    /// candidate bin), so that the bin search takes at most one step and `cell_table` decides.
    pub one_step: bool,
}

impl CudaTables {
    /// Total number of RA cells over all stripes.
    pub fn total_cells(&self) -> usize {
        self.stripe_cell_base.last().copied().unwrap_or(0) as usize
    }
}

/// f32 nearest to `x` towards −∞.
fn f32_down(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) > x { f.next_down() } else { f }
}

/// f32 nearest to `x` towards +∞.
fn f32_up(x: f64) -> f32 {
    let f = x as f32;
    if f64::from(f) < x { f.next_up() } else { f }
}

/// Bound on |f32 c² − f64 c²| near chord length `c` (see the module notes).
pub fn f32_chord2_error(c: f64) -> f64 {
    let unit = 2f64.powi(-24);
    let eps_d = unit * (1.0 + c);
    F32_SAFETY * (eps_d * (2.0 * 3f64.sqrt() * c + 3.0 * eps_d) + 3.0 * unit * c * c)
}

/// Bound on |GPU f64 c² − CPU f64 c²| near chord length `c` (see the module notes).
pub fn f64_chord2_ambiguity(c: f64) -> f64 {
    F64_SAFETY * (2.0 * 3f64.sqrt() * c * 1.6e-15 + 4.0 * f64::EPSILON * c * c)
}

/// Builds the kernel tables for `prepared`.
pub fn cuda_tables(prepared: &Prepared) -> Result<CudaTables, TwoPointError> {
    let n_bins = prepared.bins.len();
    let n_levels = prepared.cuts.len() + 1;
    if n_bins > MAX_BINS || n_bins * n_levels > MAX_HISTOGRAM {
        return Err(TwoPointError::Config(format!(
            "the CUDA counter handles at most {MAX_BINS} bins and {MAX_HISTOGRAM} bins × (cuts + 1); \
             got {n_bins} bins and {} cuts (use --backend cpu)",
            n_levels - 1
        )));
    }
    // A warp's shared u32 counters see at most 32 slots (one per thread) × (n − 1) partners;
    // 2^24 events keep that far below 2^32.
    if prepared.len() > 1 << 24 {
        return Err(TwoPointError::Config(format!(
            "the CUDA counter handles at most 2^24 events, got {}",
            prepared.len()
        )));
    }
    let stripes = prepared.stripe_count();
    let mut stripe_of_event = vec![0u32; prepared.len()];
    for s in 0..stripes {
        for slot in &mut stripe_of_event[prepared.stripe_start[s]..prepared.stripe_start[s + 1]] {
            *slot = s as u32;
        }
    }

    // RA cells about one stripe height wide (in true angle) at the stripe's widest declination,
    // so a search window of ±θ_max/cos δ overhangs by at most a quarter of θ_max per side.
    let height = prepared.stripe_height;
    let natural: Vec<usize> = (0..stripes)
        .map(|s| {
            let low = -FRAC_PI_2 + s as f64 * height;
            let high = (low + height).min(FRAC_PI_2);
            let widest = if low <= 0.0 && high >= 0.0 {
                1.0
            } else {
                low.cos().max(high.cos())
            };
            ((TAU * widest / height).floor() as usize).clamp(1, MAX_CELLS_PER_STRIPE)
        })
        .collect();
    // Tiny angles would ask for far more cells than events: widen the cells so that the
    // per-trial prefix sum and cell arrays stay O(events).
    let natural_total: usize = natural.iter().sum();
    let cap = (4 * prepared.len()).max(MIN_CELL_CAP);
    let shrink = if natural_total > cap {
        cap as f64 / natural_total as f64
    } else {
        1.0
    };
    let mut stripe_cell_base = Vec::with_capacity(stripes + 1);
    let mut stripe_inv_cell_width = Vec::with_capacity(stripes);
    let mut total = 0usize;
    for &cells in &natural {
        let cells = ((cells as f64 * shrink).floor() as usize).max(1);
        stripe_cell_base.push(total as u32);
        stripe_inv_cell_width.push(cells as f64 / TAU);
        total += cells;
    }
    stripe_cell_base.push(total as u32);

    let mut inside32 = Vec::with_capacity(n_bins);
    let mut outside32 = Vec::with_capacity(n_bins);
    let mut ambiguity = Vec::with_capacity(n_bins);
    for &threshold in &prepared.bins.chord2_max {
        let c = (threshold * 1.01).sqrt();
        let amb = f64_chord2_ambiguity(c);
        let band = f32_chord2_error(c) + amb;
        inside32.push(f32_down(threshold - band));
        outside32.push(f32_up(threshold + band));
        ambiguity.push(amb);
    }
    let top = f64::from(outside32[n_bins - 1]);
    let lut_scale = (LUT_CELLS as f64 / top) as f32;
    // Cell m starts at the first bin whose outer edge reaches the previous cell's start, so an
    // f32 product c²·scale rounded up by one cell never skips the right bin.
    let lut = lookup_table(&inside32, &outside32, LUT_CELLS, lut_scale);
    let (cell_table, one_step) = one_step_cells(&inside32, &outside32, &lut, lut_scale);
    Ok(CudaTables {
        stripe_of_event,
        level: prepared.level.iter().map(|&l| u32::from(l)).collect(),
        stripe_cell_base,
        stripe_inv_cell_width,
        inside32,
        outside32,
        ambiguity,
        lut,
        lut_scale,
        cell_table,
        one_step,
    })
}

/// The per-cell table of the one-step decision and whether one step always suffices. An f32
/// c² of cell m < `LUT_CELLS` is below (m + 2)/scale (module notes: the f32 product is
/// monotone, one cell of margin for the f64 division), and the last cell's c² is at most the
/// last outside threshold (the kernels drop larger c² first). So when that bound is at or below
/// outside32[k + 1], the search from k stops at k or k + 1.
fn one_step_cells(
    inside32: &[f32],
    outside32: &[f32],
    lut: &[u16],
    scale: f32,
) -> (Vec<f32>, bool) {
    let n_bins = outside32.len();
    let top = f64::from(outside32[n_bins - 1]);
    let mut one_step = true;
    let mut table = Vec::with_capacity(4 * lut.len());
    for (m, &entry) in lut.iter().enumerate() {
        let k = usize::from(entry & LUT_BIN_MASK);
        let upper = ((m as f64 + 2.0) / f64::from(scale)).min(top);
        let next_inside = if k + 1 < n_bins {
            one_step &= upper <= f64::from(outside32[k + 1]);
            inside32[k + 1]
        } else {
            outside32[k]
        };
        table.extend([
            inside32[k],
            outside32[k],
            next_inside,
            f32::from_bits(k as u32),
        ]);
    }
    (table, one_step)
}

/// The c² → bin lookup of `cells + 1` entries at `scale` cells per unit of c² (see the module
/// notes): entry m is the first bin whose outer edge reaches the previous cell's start, so an
/// f32 product c²·scale rounded up by one cell never skips the right bin, with [`LUT_DIRECT`]
/// where every c² of the cell is certainly in that bin.
fn lookup_table(inside32: &[f32], outside32: &[f32], cells: usize, scale: f32) -> Vec<u16> {
    let n_bins = outside32.len();
    let scale = f64::from(scale);
    (0..=cells)
        .map(|m| {
            let low = m.saturating_sub(1) as f64 / scale;
            let k = outside32
                .iter()
                .position(|&t| f64::from(t) >= low)
                .unwrap_or(n_bins - 1);
            // The last cell also holds every c² above the table: never direct.
            let below_ok = k == 0 || f64::from(outside32[k - 1]) < (m as f64 - 2.0) / scale;
            let above_ok = (m as f64 + 2.0) / scale <= f64::from(inside32[k]);
            let direct = m < cells && below_ok && above_ok;
            k as u16 | if direct { LUT_DIRECT } else { 0 }
        })
        .collect()
}

/// `tp_count_b2fd`'s f32 bin decision, emulated bit for bit (`f32::mul_add` is the correctly
/// rounded fused multiply-add, as `__fmaf_rn`), direct lookup cells included. For tests.
pub fn f32_decision_fma(tables: &CudaTables, a: [f32; 3], b: [f32; 3]) -> Option<Option<usize>> {
    let (dx, dy, dz) = (a[0] - b[0], a[1] - b[1], a[2] - b[2]);
    chord2_decision(
        tables,
        dx.mul_add(dx, dy.mul_add(dy, dz * dz)),
        Lookup::Direct,
    )
}

/// How a kernel finds a pair's bin from its f32 c².
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Bin search from the shared table's entry and band check: the reference the other two
    /// must match (and `tp_count_b2fd`'s path in cells not marked direct).
    Search,
    /// The shared table's [`LUT_DIRECT`] cells, else the search (`tp_count_b2fd`).
    Direct,
    /// One step from the cell's first bin with `cell_table`'s thresholds (`tp_count_flats2`;
    /// only valid when `one_step` holds).
    Cell,
}

/// The kernels' decision for an f32 c² with lookup mode `lookup`.
pub fn chord2_decision(tables: &CudaTables, c2: f32, lookup: Lookup) -> Option<Option<usize>> {
    let n_bins = tables.outside32.len();
    // NaN or beyond the last band: outside (the kernel's `!(c2 <= limit32)`).
    if c2.is_nan() || c2 > tables.outside32[n_bins - 1] {
        return Some(None);
    }
    let cell = ((c2 * tables.lut_scale) as usize).min(LUT_CELLS);
    if lookup == Lookup::Cell {
        let t = &tables.cell_table[4 * cell..4 * cell + 4];
        let up = c2 > t[1];
        let k = t[3].to_bits() as usize + usize::from(up);
        return (c2 <= if up { t[2] } else { t[0] }).then_some(Some(k));
    }
    let entry = tables.lut[cell];
    let mut k = usize::from(entry & LUT_BIN_MASK);
    if lookup != Lookup::Search && entry & LUT_DIRECT != 0 {
        return Some(Some(k));
    }
    while c2 > tables.outside32[k] {
        k += 1;
    }
    // The lookup must never start past the right bin.
    debug_assert!(k == 0 || c2 > tables.outside32[k - 1]);
    (c2 <= tables.inside32[k]).then_some(Some(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::EventList;
    use crate::twopoint::bins::{chord2, unit_vector};
    use crate::twopoint::{TwoPointConfig, prepare};

    fn small_prepared(config: &TwoPointConfig) -> Prepared {
        let mut list = EventList::default();
        for i in 0..200 {
            let t = f64::from(i);
            list.ra.push((t * 0.7).rem_euclid(TAU));
            list.dec
                .push((t * 0.013 - 1.3).clamp(-FRAC_PI_2, FRAC_PI_2));
            list.energy.push(t);
        }
        prepare(&list, config).expect("prepare")
    }

    #[test]
    fn cells_cover_each_stripe_and_bands_bracket_thresholds() {
        let prepared = small_prepared(&TwoPointConfig::default());
        let tables = cuda_tables(&prepared).expect("tables");
        assert_eq!(tables.stripe_cell_base.len(), prepared.stripe_count() + 1);
        // 5° max angle → 144 stripes of 1.25°; about 26,000 cells of ≈ 1.25° × 1.25°.
        assert_eq!(prepared.stripe_count(), 144);
        let cells = tables.total_cells();
        assert!((20_000..33_000).contains(&cells), "{cells} cells");
        for s in 0..prepared.stripe_count() {
            assert!(tables.stripe_cell_base[s + 1] > tables.stripe_cell_base[s]);
        }
        for (k, &t) in prepared.bins.chord2_max.iter().enumerate() {
            let (inside, outside) = (
                f64::from(tables.inside32[k]),
                f64::from(tables.outside32[k]),
            );
            assert!(inside < t && t < outside, "bin {k}");
            // Bands stay narrow: under 0.1 % of the threshold at 0.25°, shrinking with angle.
            assert!((outside - inside) / t < 1e-3, "bin {k}");
            // f64 ambiguity well inside the 1e-10 tie tolerance.
            assert!(tables.ambiguity[k] / t < 2.5e-11, "bin {k}");
        }
        let bins: Vec<u16> = tables.lut.iter().map(|&e| e & LUT_BIN_MASK).collect();
        assert!(bins.windows(2).all(|w| w[0] <= w[1]));
        // Most cells are direct (the narrowest bin spans ≈ 2.6 cells, bands < 0.1 %), never the
        // last one.
        let direct = tables.lut.iter().filter(|&&e| e & LUT_DIRECT != 0).count();
        assert!((700..LUT_CELLS).contains(&direct), "{direct} direct cells");
        assert_eq!(tables.lut[LUT_CELLS] & LUT_DIRECT, 0);
    }

    /// The direct lookup (and, where one step suffices, the cell table) decides every f32 c² as
    /// the bin search and band check do: a sweep of the table's range plus the f32 neighbours
    /// of every cell boundary and band edge.
    #[test]
    fn direct_lookup_cells_decide_as_the_bin_search() {
        // Default bins: the narrowest spans ≈ 2.6 lookup cells, so one step suffices; 3 bins of
        // 0.05°: 114 cells; 200 bins of 0.04°: the first spans 0.03 cells, so it does not.
        for (config, one_step) in [
            (TwoPointConfig::default(), true),
            (
                TwoPointConfig {
                    bin_step_deg: 0.05,
                    bin_count: 3,
                    cut_fractions: vec![0.2],
                },
                true,
            ),
            (
                TwoPointConfig {
                    bin_step_deg: 0.04,
                    bin_count: 200,
                    cut_fractions: vec![1.0],
                },
                false,
            ),
        ] {
            let tables = cuda_tables(&small_prepared(&config)).expect("tables");
            assert_eq!(tables.one_step, one_step);
            let top = tables.outside32[tables.outside32.len() - 1];
            let mut probes: Vec<f32> = (0..=400_000)
                .map(|i| (f64::from(top) * f64::from(i) / 400_000.0) as f32)
                .collect();
            let edges = (0..=LUT_CELLS + 1)
                .map(|m| m as f32 / tables.lut_scale)
                .chain(tables.inside32.iter().copied())
                .chain(tables.outside32.iter().copied());
            for x in edges {
                let mut down = x;
                let mut up = x;
                for _ in 0..4 {
                    probes.extend([down, up]);
                    down = down.next_down();
                    up = up.next_up();
                }
            }
            let mut direct = 0usize;
            for c2 in probes.into_iter().filter(|c| *c >= 0.0) {
                let searched = chord2_decision(&tables, c2, Lookup::Search);
                assert_eq!(
                    chord2_decision(&tables, c2, Lookup::Direct),
                    searched,
                    "c² {c2:e}"
                );
                if tables.one_step {
                    assert_eq!(
                        chord2_decision(&tables, c2, Lookup::Cell),
                        searched,
                        "cell table, c² {c2:e}"
                    );
                }
                let cell = ((c2 * tables.lut_scale) as usize).min(LUT_CELLS);
                if c2 <= top && tables.lut[cell] & LUT_DIRECT != 0 {
                    direct += 1;
                    assert!(searched.is_some_and(|bin| bin.is_some()), "c² {c2:e}");
                }
            }
            assert!(direct > 100_000, "{direct} probes took the direct path");
        }
    }

    #[test]
    fn bad_configs_are_errors_and_tiny_angles_keep_few_cells() {
        let tiny = TwoPointConfig {
            bin_step_deg: 0.05,
            bin_count: 3,
            cut_fractions: vec![0.2],
        };
        let prepared = small_prepared(&tiny);
        let tables = cuda_tables(&prepared).expect("tables");
        // 4800 stripes of 0.0375°: one cell each at least, the total capped at 2^15.
        assert_eq!(prepared.stripe_count(), 4800);
        assert!((4800..=1 << 15).contains(&tables.total_cells()));
        let config = TwoPointConfig {
            bin_step_deg: 0.01,
            bin_count: 300,
            cut_fractions: vec![1.0],
        };
        assert!(cuda_tables(&small_prepared(&config)).is_err());
    }

    /// Pairs placed at exactly θ_k·(1 + r) for tiny r: every certain f32 decision agrees with
    /// the f64 rule, and pairs away from edges are decided in f32.
    #[test]
    fn f32_decisions_agree_with_the_f64_rule_near_every_edge() {
        let prepared = small_prepared(&TwoPointConfig::default());
        let tables = cuda_tables(&prepared).expect("tables");
        assert!(tables.one_step);
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut uniform = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut decided, mut undecided) = (0, 0);
        for k in 0..prepared.bins.len() {
            let theta = prepared.bins.edges_deg[k].to_radians();
            for _ in 0..4000 {
                let r = (uniform() - 0.5) * 4e-3 * uniform().powi(3);
                let (ra, dec) = (uniform() * TAU, (uniform() * 2.0 - 1.0) * 1.4);
                let a = unit_vector(ra, dec);
                // Second point: step θ(1 + r) along a random bearing (spherical destination).
                let bearing = uniform() * TAU;
                let d = theta * (1.0 + r);
                let dec_b = (dec.sin() * d.cos() + dec.cos() * d.sin() * bearing.cos()).asin();
                let ra_b = (ra
                    + (bearing.sin() * d.sin() * dec.cos())
                        .atan2(d.cos() - dec.sin() * dec_b.sin()))
                .rem_euclid(TAU);
                let b = unit_vector(ra_b, dec_b);
                let exact = prepared.bins.bin_of_by_scan(chord2(&a, &b));
                let f = |v: [f64; 3]| [v[0] as f32, v[1] as f32, v[2] as f32];
                // The FMA c² with the bin search, with direct cells (b2fd) and with the cell
                // table (flats2; the default bins are one-step).
                let (dx, dy, dz) = (f(a)[0] - f(b)[0], f(a)[1] - f(b)[1], f(a)[2] - f(b)[2]);
                let c2_fma = dx.mul_add(dx, dy.mul_add(dy, dz * dz));
                for decision in [
                    chord2_decision(&tables, c2_fma, Lookup::Search),
                    f32_decision_fma(&tables, f(a), f(b)),
                    chord2_decision(&tables, c2_fma, Lookup::Cell),
                ] {
                    match decision {
                        Some(bin) => {
                            assert_eq!(bin, exact, "bin {k}, r {r}");
                            decided += 1;
                        }
                        None => undecided += 1,
                    }
                }
            }
        }
        assert!(undecided > 0, "no pair came near an edge");
        assert!(
            decided > 2 * undecided,
            "{decided} decided, {undecided} not"
        );
    }
}
