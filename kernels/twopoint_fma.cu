// Fused-multiply-add variants of tp_count_batch2 (issue 6, BENCHMARKS.md session 4, second
// pass): appended to kernels/twopoint.cu by src/twopoint/count_cuda.rs. The counter is bound by
// the instructions it runs per candidate (session 4: occupancy changed nothing), so these cut
// them:
//   - f32 c² = fma(dx, dx, fma(dy, dy, dz·dz)): 3 instructions instead of 5 under --fmad=false.
//     Three roundings of partial sums ≤ c² (dz², the inner and the outer fma; the products
//     inside an fma are exact), the same γ₃·c² as the plain sum (Higham §3.1), so the f32 bands
//     of cuda_tables.rs still hold (see its module notes);
//   - LOOKUP_DIRECT: a lookup cell that lies inside one bin's certain band (LUT_DIRECT, decided
//     on the host) gives the bin with no bin search and no band check.
// tp_count_b2fd (both) is the default: 1 % faster than batch2 on an H200, exact.
// Measured and rejected (session 4, run 3; code in git history): warp-aggregated shared atomics
// (__match_any_sync, the leader adds the peer count): 1.36× slower; ncu showed 3.2 M bank
// conflicts for 127 M shared atomics in batch2, so same-address serialisation was not a cost;
// an 8× finer direct table read through L1 (b2fx, run 4; commit 299a7c4): 13 % fewer warp
// instructions but 70 registers (7 blocks per SM) and no faster than b2fd.
// Counts are those of tp_count_batch2 exactly (same edge rule, same host list).

// Lookup modes of count_pair_fma: bin search from the shared table's entry (as batch2); the
// shared table's LUT_DIRECT cells, else the search.
#define LOOKUP_SEARCH 0
#define LOOKUP_DIRECT 1

// count_pair_recompute with the FMA c² and lookup mode LOOKUP: one pair into the warp's
// histogram, or to the host list when even f64 cannot decide.
template <int LOOKUP>
__device__ __forceinline__ void count_pair_fma(
    const CountTables& tb, const SlotPos& me, const SlotPos& other, u32 b, u32 n, u32 q, u32 e, double alpha,
    const double* __restrict__ cos_dec, const double* __restrict__ sin_dec,
    const double* __restrict__ ra, const u32* __restrict__ slot_event, u32* my_hist,
    u32* __restrict__ ambiguous_count, u32 ambiguous_capacity, u32* __restrict__ ambiguous) {
    const float dx = me.x - other.x, dy = me.y - other.y, dz = me.z - other.z;
    const float c2 = __fmaf_rn(dx, dx, __fmaf_rn(dy, dy, __fmul_rn(dz, dz)));
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
            // Rare (f32 too close to an edge): f64 vectors recomputed as tp_scatter does.
            const u32 f = slot_event[(size_t)b * n + q];
            double pa[3], pc[3];
            position64(alpha, cos_dec[e], sin_dec[e], pa[0], pa[1], pa[2]);
            position64(ra[(size_t)b * n + f], cos_dec[f], sin_dec[f], pc[0], pc[1], pc[2]);
            k = exact_bin_inline(pa, pc, tb.n_bins, tb.chord2_max, tb.ambiguity);
            if (k == 0xffffffffu) {
                const u32 slot = atomicAdd(ambiguous_count, 1u);
                if (slot < ambiguous_capacity) {
                    ambiguous[4 * slot] = b;
                    ambiguous[4 * slot + 1] = e;
                    ambiguous[4 * slot + 2] = f;
                    ambiguous[4 * slot + 3] = level;
                }
                return;
            }
            if (k >= tb.n_bins) return;
        }
    }
    atomicAdd(&my_hist[level * tb.n_bins + k], 1u);
}

// Defines kernel NAME: tp_count_batch2's loop (BATCH loads, then BATCH tests) with the FMA c²
// and lookup mode LOOKUP.
#define DEFINE_COUNT_FMA(NAME, BATCH, MIN_BLOCKS, LOOKUP)                                         \
extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) NAME(BATCHED_PARAMS) {              \
    COUNT_KERNEL_PROLOGUE                                                                          \
    for (u32 p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {      \
        const SlotPos me = P[p];                                                                   \
        if (me.level == 0) continue;                                                               \
        const u32 e = slot_event[(size_t)b * n + p];                                               \
        const double alpha = ra[(size_t)b * n + e];                                                \
        const u32 s = stripe_of_event[e];                                                          \
        const u32 w_end = window_start[e + 1];                                                     \
        for (u32 w = window_start[e], t = s; w < w_end; ++w, ++t) {                                \
            const u32 base = stripe_cell_base[t];                                                  \
            u32 a0, a1, b0, b1;                                                                    \
            window_slots(alpha, window_half_width[w], stripe_inv_cell_width[t], base,              \
                         stripe_cell_base[t + 1] - base, starts, a0, a1, b0, b1);                  \
            if (t == s) {                                                                          \
                /* Own stripe: later slots only, so each unordered pair is counted once. */        \
                a0 = max(a0, p + 1u);                                                              \
                b0 = max(b0, p + 1u);                                                              \
            }                                                                                      \
            for (int r = 0; r < 2; ++r) {                                                          \
                u32 q = r == 0 ? a0 : b0;                                                          \
                const u32 q_end = r == 0 ? a1 : b1;                                                \
                for (; q + BATCH <= q_end; q += BATCH) {                                           \
                    SlotPos other[BATCH];                                                          \
_Pragma("unroll")                                                                                  \
                    for (int j = 0; j < BATCH; ++j) other[j] = P[q + j];                           \
_Pragma("unroll")                                                                                  \
                    for (int j = 0; j < BATCH; ++j) {                                              \
                        count_pair_fma<LOOKUP>(tb, me, other[j], b, n, q + j, e, alpha,  \
                            cos_dec, sin_dec, ra, slot_event, my_hist, ambiguous_count,            \
                            ambiguous_capacity, ambiguous);                                        \
                    }                                                                              \
                }                                                                                  \
                for (; q < q_end; ++q) {                                                           \
                    count_pair_fma<LOOKUP>(tb, me, P[q], b, n, q, e, alpha, cos_dec,     \
                        sin_dec, ra, slot_event, my_hist, ambiguous_count, ambiguous_capacity,     \
                        ambiguous);                                                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    COUNT_KERNEL_EPILOGUE                                                                          \
}

// ptxas -v (sm_90): 64 registers (8 blocks per SM), no spills.
DEFINE_COUNT_FMA(tp_count_b2f, 2, 8, LOOKUP_SEARCH)
DEFINE_COUNT_FMA(tp_count_b2fd, 2, 8, LOOKUP_DIRECT)
