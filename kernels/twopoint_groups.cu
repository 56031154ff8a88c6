// Group counting kernels (issue 6, BENCHMARKS.md session 4): appended to kernels/twopoint.cu by
// src/twopoint/count_cuda.rs (uses its SlotPos, CountTables, window_slots, count_pair_recompute,
// BATCHED_PARAMS and COUNT_KERNEL_PROLOGUE / _EPILOGUE; fed by tp_scatter32).
//
// Why: the thread-per-event kernels run ~13 of 32 lanes per instruction (ncu, sessions 1–3)
// because neighbouring threads scan windows of different lengths. Here GROUP consecutive slots
// (consecutive in the (stripe, RA cell) order, so near each other on the sky) scan the UNION of
// their windows together: per stripe, the group's lanes stage GROUP candidates at a time in
// shared memory (one coalesced 16-byte load per lane) and every lane tests its own event against
// every staged candidate, so all lanes of a group run the same loop. A lane counts a candidate
// only if it lies in its OWN window runs (and after its own slot in its own stripe), so every
// unordered pair is counted exactly once, by the same rule and edge arithmetic as tp_count
// (count_pair_recompute): the counts are the per-thread kernels', bit for bit.
//
// Union window of a stripe t: each lane's cell interval [lo, hi] in unwrapped cell coordinates
// (lo < 0 or hi ≥ cells when it wraps at 0/2π, as window_slots); the group's union [LO, HI] is
// their hull, turned into at most two slot runs (the whole stripe when it spans ≥ cells). The
// runs start no earlier than the smallest "first slot allowed" of the lanes with a window in t
// (p + 1 in the own stripe), since no lane may count a slot below it.

// Shuffle-reduces `v` over the GROUP lanes of `mask` (width GROUP) with min or max.
template <u32 GROUP>
__device__ __forceinline__ int group_min(u32 mask, int v) {
#pragma unroll
    for (u32 d = GROUP / 2; d > 0; d >>= 1) v = min(v, __shfl_xor_sync(mask, v, d, GROUP));
    return v;
}
template <u32 GROUP>
__device__ __forceinline__ int group_max(u32 mask, int v) {
#pragma unroll
    for (u32 d = GROUP / 2; d > 0; d >>= 1) v = max(v, __shfl_xor_sync(mask, v, d, GROUP));
    return v;
}
template <u32 GROUP>
__device__ __forceinline__ u32 group_min_u32(u32 mask, u32 v) {
#pragma unroll
    for (u32 d = GROUP / 2; d > 0; d >>= 1) v = min(v, __shfl_xor_sync(mask, v, d, GROUP));
    return v;
}

// Unwrapped cell interval [lo, hi] of stripe `cells` holding every RA within hw of alpha
// (window_slots's cells before they become slot runs; the whole stripe as [0, cells − 1]).
__device__ __forceinline__ void window_cells(double alpha, double hw, double inv, u32 cells,
                                             int& lo, int& hi) {
    const double two_pi = 6.283185307179586;
    const double pi = 3.141592653589793;
    lo = 0;
    hi = (int)cells - 1;
    if (!(hw < pi)) return;
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

// Slot runs [a0, a1) and [b0, b1) of the unwrapped cell interval [lo, hi] of a stripe (empty
// b run when it does not wrap); exactly window_slots's runs for the same interval.
__device__ __forceinline__ void cell_interval_slots(int lo, int hi, u32 base, u32 cells,
                                                    const u32* __restrict__ starts, u32& a0,
                                                    u32& a1, u32& b0, u32& b1) {
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

// The group scan of one block-uniform step: slot p (this thread), its group of GROUP lanes.
// `stage` is this group's GROUP staged candidates in shared memory.
template <u32 GROUP>
__device__ __forceinline__ void count_group_step(
    const CountTables& tb, u32 b, u32 n, u32 p, SlotPos* stage, u32 sub, u32 mask,
    const SlotPos* __restrict__ P, const u32* __restrict__ starts,
    const double* __restrict__ cos_dec, const double* __restrict__ sin_dec,
    const u32* __restrict__ slot_event, const double* __restrict__ ra,
    const u32* __restrict__ stripe_of_event, const u32* __restrict__ window_start,
    const double* __restrict__ window_half_width, const u32* __restrict__ stripe_cell_base,
    const double* __restrict__ stripe_inv_cell_width, u32* my_hist,
    u32* __restrict__ ambiguous_count, u32 ambiguous_capacity, u32* __restrict__ ambiguous) {
    SlotPos me;
    me.x = me.y = me.z = 0.0f;
    me.level = 0u;
    if (p < n) me = P[p];
    const bool active = me.level != 0u;
    u32 e = 0, s = 0, w_first = 0, w_count = 0;
    double alpha = 0.0;
    if (active) {
        e = slot_event[(size_t)b * n + p];
        alpha = ra[(size_t)b * n + e];
        s = stripe_of_event[e];
        w_first = window_start[e];
        w_count = window_start[e + 1] - w_first;
    }
    // The group's stripes [t_begin, t_end): the union of its lanes' window stripes.
    const u32 t_begin = group_min_u32<GROUP>(mask, active ? s : 0xffffffffu);
    const u32 t_end = (u32)group_max<GROUP>(mask, active ? (int)(s + w_count) : 0);
    for (u32 t = t_begin; t < t_end; ++t) {
        const u32 base = stripe_cell_base[t];
        const u32 cells = stripe_cell_base[t + 1] - base;
        const bool mine_t = active && t >= s && t - s < w_count;
        // This lane's cells, slot runs and first allowed slot in stripe t (none if no window).
        int lo = 0x7fffffff, hi = -0x7fffffff;
        u32 a0 = 0, a1 = 0, b0 = 0, b1 = 0, first_allowed = 0xffffffffu;
        if (mine_t) {
            window_cells(alpha, window_half_width[w_first + (t - s)], stripe_inv_cell_width[t],
                         cells, lo, hi);
            cell_interval_slots(lo, hi, base, cells, starts, a0, a1, b0, b1);
            // Own stripe: later slots only, so each unordered pair is counted once.
            first_allowed = t == s ? p + 1u : 0u;
            a0 = max(a0, first_allowed);
            b0 = max(b0, first_allowed);
        }
        const int union_lo = group_min<GROUP>(mask, lo);
        const int union_hi = group_max<GROUP>(mask, hi);
        const u32 floor_slot = group_min_u32<GROUP>(mask, first_allowed);
        if (union_lo > union_hi) continue;  // group-uniform: no lane has a window here
        u32 runs[4];
        cell_interval_slots(union_lo, union_hi, base, cells, starts, runs[0], runs[1], runs[2],
                            runs[3]);
        for (u32 r = 0; r < 2; ++r) {
            const u32 r_begin = max(runs[2 * r], floor_slot), r_end = runs[2 * r + 1];
            for (u32 q0 = r_begin; q0 < r_end; q0 += GROUP) {
                // Stage GROUP candidates: lane `sub` loads q0 + sub (coalesced).
                if (q0 + sub < r_end) stage[sub] = P[q0 + sub];
                __syncwarp(mask);
                const u32 m = min(GROUP, r_end - q0);
                for (u32 j = 0; j < m; ++j) {
                    const u32 q = q0 + j;
                    if ((q >= a0 && q < a1) || (q >= b0 && q < b1)) {
                        count_pair_recompute(tb, me, stage[j], b, n, p, q, e, alpha, cos_dec,
                                             sin_dec, ra, slot_event, my_hist, ambiguous_count,
                                             ambiguous_capacity, ambiguous);
                    }
                }
                // Everyone has read the stage before it is overwritten.
                __syncwarp(mask);
            }
        }
    }
}

// Defines kernel NAME with groups of GROUP lanes (one event per thread, grid stride over
// block-sized steps so that every lane of a group takes the same trip count).
#define DEFINE_COUNT_GROUPS(NAME, GROUP, MIN_BLOCKS)                                            \
    extern "C" __global__ void __launch_bounds__(128, MIN_BLOCKS) NAME(BATCHED_PARAMS) {        \
        COUNT_KERNEL_PROLOGUE                                                                   \
        __shared__ SlotPos s_stage[128];                                                        \
        const u32 lane = threadIdx.x & 31u;                                                     \
        const u32 sub = threadIdx.x & (GROUP - 1u);                                             \
        const u32 mask = (GROUP == 32u ? 0xffffffffu : ((1u << GROUP) - 1u))                    \
                         << (lane & ~(GROUP - 1u));                                             \
        SlotPos* stage = s_stage + (threadIdx.x & ~(GROUP - 1u));                               \
        for (u32 p0 = blockIdx.x * blockDim.x; p0 < n; p0 += gridDim.x * blockDim.x) {          \
            count_group_step<GROUP>(tb, b, n, p0 + threadIdx.x, stage, sub, mask, P, starts,    \
                                    cos_dec, sin_dec, slot_event, ra, stripe_of_event,          \
                                    window_start, window_half_width, stripe_cell_base,          \
                                    stripe_inv_cell_width, my_hist, ambiguous_count,            \
                                    ambiguous_capacity, ambiguous);                             \
        }                                                                                       \
        COUNT_KERNEL_EPILOGUE                                                                   \
    }

DEFINE_COUNT_GROUPS(tp_count_groups8, 8u, 8)
DEFINE_COUNT_GROUPS(tp_count_groups16, 16u, 8)
DEFINE_COUNT_GROUPS(tp_count_groups4, 4u, 8)
