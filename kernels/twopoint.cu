// Two-point pair counts of observed and scrambled-RA event lists on the GPU: the CUDA twin of
// src/twopoint/cpu/count.rs (DESIGN §6). Self-contained C++17 for NVRTC: no headers.
// src/twopoint/cuda/count.rs compiles this file with twopoint_fma.cu and twopoint_flat.cu
// appended (they use the helpers below).
//
// One launch handles a batch of trials; the trial (its offset b in the batch) is blockIdx.y.
// Per trial the spatial structure is rebuilt from scratch, because the RAs change:
//   tp_scramble  RA of every event (Philox4x32-10 keyed by (seed, trial, event), bit for bit as
//                src/twopoint/philox.rs, on the continuum or on the coordinates' grid as
//                src/twopoint/grid.rs), its (declination stripe, RA cell), and its rank in the
//                cell from an atomic counter (counting sort, step 1);
//   tp_scan      exclusive prefix sum of the cell counts (counting sort, step 2);
//   tp_scatter32 f32 unit vector and cut level written to the event's slot = cell start + rank
//                (counting sort, step 3);
//   counting     one thread per slot p scans the RA-window cells of its own stripe (slots > p
//                only, so each unordered pair is seen once) and of the stripes above it up to
//                δ + θ_max, and histograms pairs by [level][bin] in shared memory:
//                tp_count_flats2 (twopoint_flat.cu) where every lookup cell needs at most one
//                bin step (cuda/tables.rs `one_step`), else tp_count_b2fd (twopoint_fma.cu).
// Edge rule (src/twopoint/bins.rs): a pair is in bin k when c² = |u_p − u_q|² ≤ chord2_max[k].
// The f32 c² decides only when it is farther from every threshold than the f32 error bound
// (in32/out32 bands, derived in src/twopoint/cuda/tables.rs); otherwise c² is recomputed in f64
// exactly as the CPU does it. The GPU's f64 sin/cos may differ from the CPU's by an ulp or two,
// so an f64 c² within `ambiguity[k]` of a threshold is not decided here: the pair goes to a list
// that the host decides with the CPU's own arithmetic. Counts therefore equal the CPU's exactly.

typedef unsigned int u32;
typedef unsigned long long u64;

#define MAX_BINS 256
#define MAX_LUT_CELLS 1024
// A lookup entry: first candidate bin (low bits), LUT_DIRECT set when every f32 c² of the cell
// is certainly in that bin (cuda/tables.rs; tp_count_b2fd uses the flag).
#define LUT_BIN_MASK 0x7fffu
#define LUT_DIRECT 0x8000u

// One event in slot order: f32 unit vector and cut level (16 bytes: one vector load).
struct alignas(16) SlotPos {
    float x, y, z;
    u32 level;
};

// ---------------------------------------------------------------- Philox4x32-10 (philox.rs)

// The 53-bit draw m of (seed, trial, event) (philox.rs `philox_mantissa`).
__device__ __forceinline__ u64 philox_mantissa(u64 seed, u64 trial, u32 event) {
    u32 c0 = event, c1 = (u32)trial, c2 = (u32)(trial >> 32), c3 = 0u;
    u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const u32 lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
        const u32 lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
        const u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
    }
    return ((u64)c0 << 21) | ((u64)c1 >> 11);
}

// Continuous scramble: RA uniform on [0, 2π) (philox.rs `scrambled_ra_of`).
__device__ __forceinline__ double scrambled_ra(u64 seed, u64 trial, u32 event) {
    const u64 mantissa = philox_mantissa(seed, trial, event);
    // Exact power-of-two product, then one rounding: the same bits as the Rust expression.
    return ((double)mantissa * 0x1.0p-53) * 6.283185307179586;
}

// Grid scramble (src/twopoint/grid.rs `Scramble::ra_of`): grid index k = (m·n) >> 53 with
// n = 360·per_degree, exact as ((m << 11)·n) >> 64 (m < 2^53); then (k / per_degree) degrees
// times π/180 (0x1.1df46a2529d39p-6, Rust's `to_radians` factor): one correctly rounded
// division and one product, no FMA possible, so the bits equal the CPU's.
__device__ __forceinline__ double grid_scrambled_ra(u64 seed, u64 trial, u32 event,
                                                    u32 per_degree) {
    const u64 mantissa = philox_mantissa(seed, trial, event);
    const u64 values = 360ull * (u64)per_degree;
    const u32 k = (u32)__umul64hi(mantissa << 11, values);
    const double degrees = __ddiv_rn((double)k, (double)per_degree);
    return __dmul_rn(degrees, 0x1.1df46a2529d39p-6);
}

// RA cell of `ra` in a stripe of `cells` cells; monotone in `ra`, clamped to the stripe.
__device__ __forceinline__ u32 cell_in_stripe(double ra, double inv_cell_width, u32 cells) {
    const double x = floor(ra * inv_cell_width);
    if (!(x > 0.0)) return 0u;
    if (x >= (double)cells) return cells - 1u;
    return (u32)x;
}

// ---------------------------------------------------------------- counting sort

extern "C" __global__ void tp_scramble(
    u32 n, u64 seed, u64 first_trial, u32 use_observed, u32 grid_per_degree,
    const double* __restrict__ ra_observed,
    const u32* __restrict__ stripe_of_event, const u32* __restrict__ stripe_cell_base,
    const double* __restrict__ stripe_inv_cell_width, u32 total_cells,
    double* __restrict__ ra_out, u32* __restrict__ cell_out, u32* __restrict__ rank_out,
    u32* __restrict__ cell_count) {
    const u32 e = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 b = blockIdx.y;
    if (e >= n) return;
    const double ra = use_observed       ? ra_observed[e]
                      : grid_per_degree ? grid_scrambled_ra(seed, first_trial + b, e, grid_per_degree)
                                        : scrambled_ra(seed, first_trial + b, e);
    const u32 s = stripe_of_event[e];
    const u32 base = stripe_cell_base[s];
    const u32 cell = base + cell_in_stripe(ra, stripe_inv_cell_width[s], stripe_cell_base[s + 1] - base);
    const size_t i = (size_t)b * n + e;
    ra_out[i] = ra;
    cell_out[i] = cell;
    rank_out[i] = atomicAdd(&cell_count[(size_t)b * total_cells + cell], 1u);
}

// Exclusive prefix sum of one trial's cell counts; blockDim.x must be a multiple of 32, ≤ 1024.
extern "C" __global__ void tp_scan(u32 total_cells, const u32* __restrict__ cell_count,
                                   u32* __restrict__ cell_start) {
    __shared__ u32 warp_sums[32];
    const u32* counts = cell_count + (size_t)blockIdx.y * total_cells;
    u32* starts = cell_start + (size_t)blockIdx.y * (total_cells + 1);
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    u32 carry = 0;
    for (u32 tile = 0; tile < total_cells; tile += blockDim.x) {
        const u32 i = tile + threadIdx.x;
        const u32 value = i < total_cells ? counts[i] : 0u;
        u32 inclusive = value;
        for (u32 d = 1; d < 32; d <<= 1) {
            const u32 y = __shfl_up_sync(0xffffffffu, inclusive, d);
            if (lane >= d) inclusive += y;
        }
        if (lane == 31) warp_sums[warp] = inclusive;
        __syncthreads();
        if (warp == 0) {
            u32 w = lane < warps ? warp_sums[lane] : 0u;
            for (u32 d = 1; d < 32; d <<= 1) {
                const u32 y = __shfl_up_sync(0xffffffffu, w, d);
                if (lane >= d) w += y;
            }
            if (lane < warps) warp_sums[lane] = w;
        }
        __syncthreads();
        const u32 before = carry + (warp > 0 ? warp_sums[warp - 1] : 0u) + inclusive - value;
        if (i < total_cells) starts[i] = before;
        const u32 tile_total = warp_sums[warps - 1];
        __syncthreads();
        carry += tile_total;
    }
    if (threadIdx.x == 0) starts[total_cells] = carry;
}

// Unit vector of an event at RA `ra` with cpu/count.rs's operations: (cos δ · cos α,
// cos δ · sin α, sin δ). tp_scatter32's f32 copy and the counting kernels' f64 edge re-check
// both come from this, so the re-check sees the f64 bits the f32 values were rounded from.
__device__ __forceinline__ void position64(double ra, double cos_dec, double sin_dec, double& x,
                                           double& y, double& z) {
    double sin_ra, cos_ra;
    sincos(ra, &sin_ra, &cos_ra);
    x = cos_dec * cos_ra;
    y = cos_dec * sin_ra;
    z = sin_dec;
}

// f32 unit vector, level and event of each slot. No f64 copy is stored: the counting kernels
// recompute f64 vectors with position64 for the rare edge re-check.
extern "C" __global__ void tp_scatter32(
    u32 n, u32 total_cells, const double* __restrict__ ra, const u32* __restrict__ cell,
    const u32* __restrict__ rank, const u32* __restrict__ cell_start,
    const double* __restrict__ cos_dec, const double* __restrict__ sin_dec,
    const u32* __restrict__ level, SlotPos* __restrict__ pos32, u32* __restrict__ slot_event) {
    const u32 e = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 b = blockIdx.y;
    if (e >= n) return;
    const size_t i = (size_t)b * n + e;
    const u32 slot = cell_start[(size_t)b * (total_cells + 1) + cell[i]] + rank[i];
    double x, y, z;
    position64(ra[i], cos_dec[e], sin_dec[e], x, y, z);
    const size_t o = (size_t)b * n + slot;
    SlotPos p;
    p.x = (float)x;
    p.y = (float)y;
    p.z = (float)z;
    p.level = level[e];
    pos32[o] = p;
    slot_event[o] = e;
}

// ---------------------------------------------------------------- pair counting

// The bin of a pair whose f32 c² was too close to an edge, decided in f64 as the CPU does;
// n_bins when outside every bin, 0xffffffff when even f64 is too close to call (host decides).
__device__ __forceinline__ u32 exact_bin_inline(const double* __restrict__ a,
                                                const double* __restrict__ b, u32 n_bins,
                                                const double* __restrict__ chord2_max,
                                                const double* __restrict__ ambiguity) {
    const double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    // --fmad=false: no contraction, the CPU's ((dx·dx + dy·dy) + dz·dz) rounding for rounding.
    const double c2 = dx * dx + dy * dy + dz * dz;
    u32 k = 0;
    while (k < n_bins && c2 > chord2_max[k]) ++k;
    if (k < n_bins && chord2_max[k] - c2 <= ambiguity[k]) return 0xffffffffu;
    if (k > 0 && c2 - chord2_max[k - 1] <= ambiguity[k - 1]) return 0xffffffffu;
    return k;
}

// Shared-memory tables and per-launch constants of the counting kernels.
struct CountTables {
    const float* inside;   // shared
    const float* outside;  // shared
    const unsigned short* lut;  // shared
    u32 lut_cells;
    float lut_scale;
    float limit32;
    u32 n_bins;
    const double* chord2_max;
    const double* ambiguity;
};

// Appends pair (b, e, f) at its cut level to the host's list of pairs that even f64 cannot
// decide (the host re-checks them with the CPU's arithmetic). Pairs past the capacity are only
// counted; the host then grows the list and runs the launch again.
__device__ __forceinline__ void push_ambiguous(u32* __restrict__ ambiguous_count,
                                               u32 ambiguous_capacity, u32* __restrict__ ambiguous,
                                               u32 b, u32 e, u32 f, u32 level) {
    const u32 slot = atomicAdd(ambiguous_count, 1u);
    if (slot < ambiguous_capacity) {
        ambiguous[4 * slot] = b;
        ambiguous[4 * slot + 1] = e;
        ambiguous[4 * slot + 2] = f;
        ambiguous[4 * slot + 3] = level;
    }
}

// Shared tables and per-warp histograms: zeroed/loaded by the whole block.
#define COUNT_KERNEL_PROLOGUE                                                                   \
    __shared__ float s_inside[MAX_BINS];                                                        \
    __shared__ float s_outside[MAX_BINS];                                                       \
    __shared__ unsigned short s_lut[MAX_LUT_CELLS + 1];                                         \
    extern __shared__ u32 warp_histograms[]; /* [warp][level][bin] */                           \
    const u32 n_hist = n_levels * n_bins;                                                       \
    const u32 warps = blockDim.x >> 5;                                                          \
    for (u32 i = threadIdx.x; i < warps * n_hist; i += blockDim.x) warp_histograms[i] = 0u;     \
    for (u32 i = threadIdx.x; i < n_bins; i += blockDim.x) {                                    \
        s_inside[i] = inside32[i];                                                              \
        s_outside[i] = outside32[i];                                                            \
    }                                                                                           \
    for (u32 i = threadIdx.x; i <= lut_cells; i += blockDim.x) s_lut[i] = lut[i];               \
    __syncthreads();                                                                            \
    const u32 b = blockIdx.y;                                                                   \
    u32* my_hist = warp_histograms + (threadIdx.x >> 5) * n_hist;                               \
    const SlotPos* P = pos32 + (size_t)b * n;                                                   \
    const u32* starts = cell_start + (size_t)b * (total_cells + 1);                             \
    CountTables tb;                                                                             \
    tb.inside = s_inside;                                                                       \
    tb.outside = s_outside;                                                                     \
    tb.lut = s_lut;                                                                             \
    tb.lut_cells = lut_cells;                                                                   \
    tb.lut_scale = lut_scale;                                                                   \
    tb.limit32 = s_outside[n_bins - 1];                                                         \
    tb.n_bins = n_bins;                                                                         \
    tb.chord2_max = chord2_max;                                                                 \
    tb.ambiguity = ambiguity;

// Sums the block's warp histograms into the trial's global histogram.
#define COUNT_KERNEL_EPILOGUE                                                                   \
    __syncthreads();                                                                            \
    for (u32 i = threadIdx.x; i < n_hist; i += blockDim.x) {                                    \
        u32 sum = 0;                                                                            \
        for (u32 w = 0; w < warps; ++w) sum += warp_histograms[w * n_hist + i];                 \
        if (sum) atomicAdd(&histogram[(size_t)b * n_hist + i], (u64)sum);                       \
    }

// Slot runs [a0, a1) and [b0, b1) of stripe window (base, cells) holding every RA within hw of
// alpha, as cpu/count.rs's RA windows (with wrap at 0/2π): one unwrapped cell interval [lo, hi]
// (lo < 0 or hi ≥ cells when the window wraps), with no local-memory arrays.
__device__ __forceinline__ void window_slots(double alpha, double hw, double inv, u32 base,
                                             u32 cells, const u32* __restrict__ starts, u32& a0,
                                             u32& a1, u32& b0, u32& b1) {
    const double two_pi = 6.283185307179586;
    const double pi = 3.141592653589793;
    int lo = 0, hi = (int)cells - 1;
    if (hw < pi) {
        const double low = alpha - hw, high = alpha + hw;
        if (low < 0.0) {
            lo = (int)cell_in_stripe(low + two_pi, inv, cells) - (int)cells;
            hi = (int)cell_in_stripe(high, inv, cells);
        } else if (high >= two_pi) {
            lo = (int)cell_in_stripe(low, inv, cells);
            hi = (int)cell_in_stripe(high - two_pi, inv, cells) + (int)cells;
        } else {
            lo = (int)cell_in_stripe(low, inv, cells);
            hi = (int)cell_in_stripe(high, inv, cells);
        }
    }
    b0 = b1 = 0u;
    if (hi - lo + 1 >= (int)cells) {  // the runs would meet: the whole stripe
        a0 = starts[base];
        a1 = starts[base + cells];
        return;
    }
    a0 = starts[base + (u32)max(lo, 0)];
    a1 = starts[base + (u32)min(hi, (int)cells - 1) + 1u];
    if (lo < 0) {
        b0 = starts[base + (u32)(lo + (int)cells)];
        b1 = starts[base + cells];
    } else if (hi >= (int)cells) {
        b0 = starts[base];
        b1 = starts[base + (u32)(hi - (int)cells) + 1u];
    }
}

// Slot runs of window w (stripe t) of the event in slot p, whose own stripe is s: window_slots,
// with the own stripe's runs starting after p, so that each unordered pair is counted once.
__device__ __forceinline__ void event_window_slots(
    double alpha, u32 w, u32 t, u32 s, u32 p, const double* __restrict__ window_half_width,
    const double* __restrict__ stripe_inv_cell_width, const u32* __restrict__ stripe_cell_base,
    const u32* __restrict__ starts, u32& a0, u32& a1, u32& b0, u32& b1) {
    const u32 base = stripe_cell_base[t];
    window_slots(alpha, window_half_width[w], stripe_inv_cell_width[t], base,
                 stripe_cell_base[t + 1] - base, starts, a0, a1, b0, b1);
    if (t == s) {
        a0 = max(a0, p + 1u);
        b0 = max(b0, p + 1u);
    }
}

// ---------------------------------------------------------------- batched candidate loads

// The counting loop loads BATCH candidates before testing any: BATCH independent loads in flight
// per thread instead of one load-test chain per candidate (the counter is latency-bound).
// Chord arithmetic of count_pair_recompute: C2_FMA is the fused chain fma(dx, dx, fma(dy, dy,
// dz·dz)), three roundings of partial sums ≤ c², so the f32 bands of cuda/tables.rs hold (its
// module notes); any other value is the plain sum of squares.
#define C2_FMA 1
// Lookup modes: bin search from the shared table's entry; or the entry's bin itself where the
// host marked the cell LUT_DIRECT (the whole cell inside one bin's certain band), else search.
#define LOOKUP_SEARCH 0
#define LOOKUP_DIRECT 1

// Counts candidate slot q against slot p (event e) of trial b: f32 pre-filter, bin lookup,
// f64 re-check near an edge, ambiguous pairs to the host list. No f64 vectors are stored
// (tp_scatter32): the rare re-check recomputes both with position64.
template <int C2_ARITH, int LOOKUP>
__device__ __forceinline__ void count_pair_recompute(
    const CountTables& tb, const SlotPos& me, const SlotPos& other, u32 b, u32 n, u32 p, u32 q,
    u32 e, double alpha, const double* __restrict__ cos_dec, const double* __restrict__ sin_dec,
    const double* __restrict__ ra, const u32* __restrict__ slot_event, u32* my_hist,
    u32* __restrict__ ambiguous_count, u32 ambiguous_capacity, u32* __restrict__ ambiguous) {
    const float dx = me.x - other.x, dy = me.y - other.y, dz = me.z - other.z;
    const float c2 = C2_ARITH == C2_FMA ? __fmaf_rn(dx, dx, __fmaf_rn(dy, dy, __fmul_rn(dz, dz)))
                                        : dx * dx + dy * dy + dz * dz;
    if (!(c2 <= tb.limit32)) return;
    const u32 level = min(me.level, other.level);
    if (level == 0u) return;
    u32 cell = (u32)(c2 * tb.lut_scale);
    if (cell > tb.lut_cells) cell = tb.lut_cells;
    const u32 entry = tb.lut[cell];
    u32 k = entry & LUT_BIN_MASK;
    if (LOOKUP == LOOKUP_SEARCH || !(entry & LUT_DIRECT)) {
        while (c2 > tb.outside[k]) ++k;
        if (!(c2 <= tb.inside[k])) {
            // Rare (f32 too close to an edge): f64 vectors recomputed with position64.
            const u32 f = slot_event[(size_t)b * n + q];
            double pa[3], pc[3];
            position64(alpha, cos_dec[e], sin_dec[e], pa[0], pa[1], pa[2]);
            position64(ra[(size_t)b * n + f], cos_dec[f], sin_dec[f], pc[0], pc[1], pc[2]);
            k = exact_bin_inline(pa, pc, tb.n_bins, tb.chord2_max, tb.ambiguity);
            if (k == 0xffffffffu) {
                push_ambiguous(ambiguous_count, ambiguous_capacity, ambiguous, b, e, f, level);
                return;
            }
            if (k >= tb.n_bins) return;
        }
    }
    atomicAdd(&my_hist[level * tb.n_bins + k], 1u);
}

// Parameters of the counting kernels (tp_count_flats2 adds its cell table); the f64 re-check
// recomputes vectors from the declinations' cos and sin.
#define BATCHED_PARAMS                                                                          \
    u32 n, u32 total_cells, u32 n_bins, u32 n_levels, const SlotPos *__restrict__ pos32,        \
        const double *__restrict__ cos_dec, const double *__restrict__ sin_dec,                 \
        const u32 *__restrict__ slot_event, const double *__restrict__ ra,                      \
        const u32 *__restrict__ cell_start, const u32 *__restrict__ stripe_of_event,            \
        const u32 *__restrict__ window_start, const double *__restrict__ window_half_width,     \
        const u32 *__restrict__ stripe_cell_base, const double *__restrict__ stripe_inv_cell_width, \
        const float *__restrict__ inside32, const float *__restrict__ outside32,                \
        const double *__restrict__ chord2_max, const double *__restrict__ ambiguity,            \
        const unsigned short *__restrict__ lut, u32 lut_cells, float lut_scale,                 \
        u64 *__restrict__ histogram, u32 *__restrict__ ambiguous_count, u32 ambiguous_capacity, \
        u32 *__restrict__ ambiguous

// Defines kernel NAME: BATCH loads, then BATCH tests with the pair function PAIR, at least
// MIN_BLOCKS blocks per SM (the register cap that keeps it spill-free). A macro, not a
// template: the prologue declares the block's extern shared array, which must live in a kernel.
#define DEFINE_COUNT_BATCHED(NAME, BATCH, MIN_BLOCKS, PAIR)                                                         \
extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) NAME(BATCHED_PARAMS) {                      \
    COUNT_KERNEL_PROLOGUE                                                                          \
    for (u32 p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {      \
        const SlotPos me = P[p];                                                                   \
        if (me.level == 0) continue;                                                               \
        const u32 e = slot_event[(size_t)b * n + p];                                               \
        const double alpha = ra[(size_t)b * n + e];                                                \
        const u32 s = stripe_of_event[e];                                                          \
        const u32 w_end = window_start[e + 1];                                                     \
        for (u32 w = window_start[e], t = s; w < w_end; ++w, ++t) {                                \
            u32 a0, a1, b0, b1;                                                                    \
            event_window_slots(alpha, w, t, s, p, window_half_width, stripe_inv_cell_width,        \
                               stripe_cell_base, starts, a0, a1, b0, b1);                          \
            for (int r = 0; r < 2; ++r) {                                                          \
                u32 q = r == 0 ? a0 : b0;                                                          \
                const u32 q_end = r == 0 ? a1 : b1;                                                \
                for (; q + BATCH <= q_end; q += BATCH) {                                           \
                    SlotPos other[BATCH];                                                          \
_Pragma("unroll")                                                                                  \
                    for (int j = 0; j < BATCH; ++j) other[j] = P[q + j];                           \
_Pragma("unroll")                                                                                  \
                    for (int j = 0; j < BATCH; ++j) {                                              \
                        PAIR(tb, me, other[j], b, n, p, q + j, e, alpha, cos_dec, sin_dec, ra, slot_event,\
                                   my_hist, ambiguous_count, ambiguous_capacity, ambiguous);       \
                    }                                                                              \
                }                                                                                  \
                for (; q < q_end; ++q) {                                                           \
                    PAIR(tb, me, P[q], b, n, p, q, e, alpha, cos_dec, sin_dec, ra, slot_event, my_hist,\
                               ambiguous_count, ambiguous_capacity, ambiguous);                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    COUNT_KERNEL_EPILOGUE                                                                          \
}
