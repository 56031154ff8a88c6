// Fused-multiply-add variants of tp_count_batch2 (issue 6, BENCHMARKS.md session 4, second
// pass): appended to kernels/twopoint.cu by src/twopoint/count_cuda.rs. The counter is bound by
// the instructions it runs per candidate (session 4: occupancy changed nothing), so these cut
// them:
//   - f32 c² = fma(dx, dx, fma(dy, dy, dz·dz)): 3 instructions instead of 5 under --fmad=false.
//     Three roundings of partial sums ≤ c² (dz², the inner and the outer fma; the products
//     inside an fma are exact), the same γ₃·c² as the plain sum (Higham §3.1), so the f32 bands
//     of cuda_tables.rs still hold (see its module notes);
//   - DIRECT: a lookup cell that lies inside one bin's certain band (LUT_DIRECT, decided on the
//     host) gives the bin with no bin search and no band check;
//   - AGGREGATE: lanes adding to the same (level, bin) word of the warp's histogram at once make
//     one shared atomic (__match_any_sync, the leader adds the peer count): same-address shared
//     atomics serialise.
// Counts are those of tp_count_batch2 exactly (same edge rule, same host list).

#define NO_WORD 0xffffffffu

// The warp-histogram word (level · n_bins + bin) of candidate `other` against `me`, or NO_WORD
// when the pair is outside every bin, below every cut, or left to the host (ambiguous list).
template <bool DIRECT>
__device__ __forceinline__ u32 pair_word_fma(
    const CountTables& tb, const SlotPos& me, const SlotPos& other, u32 b, u32 n, u32 q, u32 e,
    double alpha, const double* __restrict__ cos_dec, const double* __restrict__ sin_dec,
    const double* __restrict__ ra, const u32* __restrict__ slot_event,
    u32* __restrict__ ambiguous_count, u32 ambiguous_capacity, u32* __restrict__ ambiguous) {
    const float dx = me.x - other.x, dy = me.y - other.y, dz = me.z - other.z;
    const float c2 = __fmaf_rn(dx, dx, __fmaf_rn(dy, dy, __fmul_rn(dz, dz)));
    if (!(c2 <= tb.limit32)) return NO_WORD;
    const u32 level = min(me.level, other.level);
    if (level == 0u) return NO_WORD;
    u32 cell = (u32)(c2 * tb.lut_scale);
    if (cell > tb.lut_cells) cell = tb.lut_cells;
    const u32 entry = tb.lut[cell];
    u32 k = entry & LUT_BIN_MASK;
    if (DIRECT && (entry & LUT_DIRECT)) return level * tb.n_bins + k;
    while (c2 > tb.outside[k]) ++k;
    if (!(c2 <= tb.inside[k])) {
        // Rare (f32 too close to an edge): f64 vectors recomputed as tp_scatter computes them.
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
            return NO_WORD;
        }
        if (k >= tb.n_bins) return NO_WORD;
    }
    return level * tb.n_bins + k;
}

// Adds one pair to histogram word `word` of the warp (NO_WORD: nothing). AGGREGATE: the lanes
// here now with the same word add once, by their lowest lane, their number of pairs.
template <bool AGGREGATE>
__device__ __forceinline__ void add_word(u32* my_hist, u32 word) {
    if (word == NO_WORD) return;
    if (AGGREGATE) {
        const u32 peers = __match_any_sync(__activemask(), word);
        if ((threadIdx.x & 31u) == (u32)(__ffs(peers) - 1)) atomicAdd(&my_hist[word], __popc(peers));
    } else {
        atomicAdd(&my_hist[word], 1u);
    }
}

// Defines kernel NAME: tp_count_batch2's loop (BATCH loads, then BATCH tests) with the FMA c²
// and the DIRECT / AGGREGATE options above.
#define DEFINE_COUNT_FMA(NAME, BATCH, MIN_BLOCKS, DIRECT, AGGREGATE)                              \
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
                        add_word<AGGREGATE>(my_hist, pair_word_fma<DIRECT>(                        \
                            tb, me, other[j], b, n, q + j, e, alpha, cos_dec, sin_dec, ra,         \
                            slot_event, ambiguous_count, ambiguous_capacity, ambiguous));          \
                    }                                                                              \
                }                                                                                  \
                for (; q < q_end; ++q) {                                                           \
                    add_word<AGGREGATE>(my_hist, pair_word_fma<DIRECT>(                            \
                        tb, me, P[q], b, n, q, e, alpha, cos_dec, sin_dec, ra, slot_event,         \
                        ambiguous_count, ambiguous_capacity, ambiguous));                          \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    COUNT_KERNEL_EPILOGUE                                                                          \
}

// ptxas -v (sm_90): b2f and b2fd 64 registers (8 blocks per SM), b2fdm 68 (7 blocks; at 64 it
// spilled 32 bytes), no spills.
DEFINE_COUNT_FMA(tp_count_b2f, 2, 8, false, false)
DEFINE_COUNT_FMA(tp_count_b2fd, 2, 8, true, false)
DEFINE_COUNT_FMA(tp_count_b2fdm, 2, 7, true, true)
