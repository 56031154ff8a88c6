// tp_count_flats2, the counting kernel wherever its one-step cell table applies
// (cuda/tables.rs `one_step`): appended to kernels/twopoint.cu (after twopoint_fma.cu) by
// src/twopoint/cuda/count.rs; it reads tp_scatter32's slots like tp_count_b2fd, with the same
// candidates and edge rule.
//
// Lanes of a warp finish their runs at different times, so per-window work (f64 RA window →
// cells → 4 cell_start loads, ≈ 70 instructions) done inside the candidate loop runs with few
// active lanes. Here:
//   - each thread first computes ALL its windows' slot runs (the own stripe's start clamped to
//     p + 1, empty runs dropped) into its column of shared memory: the lanes of a warp start
//     together and neighbouring slots have as many windows, so this runs at (near) full lanes;
//   - then it walks all its runs in ONE loop, two candidates per step (at a run's odd end the
//     second candidate is neutralised with level 0, not branched around), so a warp takes
//     max over lanes of (Σ run lengths) / 2 steps instead of Σ over windows of the longest run;
//   - the bin comes from a per-lookup-cell float4 {inside[k], outside[k], inside[k + 1], k}: one
//     shared load and no search loop, valid when no cell's c² range reaches past outside[k + 1]
//     (cuda/tables.rs `one_step`; otherwise the host runs tp_count_b2fd);
//   - the histogram, run columns and cell table are reached through 32-bit shared addresses
//     held in registers (asm moves the compiler cannot rematerialise: without them it rebuilds
//     the shared window base, S2R SR_CgaCtaId …, at every pair and every run).
// Counts equal tp_count_b2fd's exactly: the same candidate slots, the same FMA c², the same f32
// bands, f64 re-check and host list.

// Runs per thread column (more windows are walked in chunks) and threads per block.
#define SHARED_RUNS 8
#define FLAT_THREADS 128

__shared__ float4 flat_cells[MAX_LUT_CELLS + 1];
__shared__ uint2 flat_runs[SHARED_RUNS * FLAT_THREADS];  // [run][thread]: {first, end} slot
extern __shared__ u32 flat_hist[];  // [warp][level][bin]

// Slot q of P through the read-only path (P is an opaque generic pointer, see flat_count).
__device__ __forceinline__ SlotPos load_slot(const SlotPos* P, u32 q) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(P + q));
    SlotPos s;
    s.x = v.x;
    s.y = v.y;
    s.z = v.z;
    s.level = __float_as_uint(v.w);
    return s;
}

// Per-launch constants of the flat counter.
struct FlatConsts {
    u32 n_bins;
    u32 lut_cells;
    float lut_scale;
    float limit32;
    u32 cells_addr;  // 32-bit shared address of flat_cells (opaque, see tp_count_flats2)
};

// count_pair_recompute<C2_FMA, ·> (twopoint.cu) with the one-step cell table; a pair of level 0 (a
// neutralised candidate included) is never counted. hist_addr: the warp's histogram.
__device__ __forceinline__ void flat_pair(const FlatConsts& fc, const SlotPos& me,
                                          const SlotPos& other, u32 hist_addr, u32 b, u32 n,
                                          u32 q, u32 e, const double* __restrict__ cos_dec,
                                          const double* __restrict__ sin_dec,
                                          const double* __restrict__ ra,
                                          const u32* __restrict__ slot_event,
                                          const double* __restrict__ chord2_max,
                                          const double* __restrict__ ambiguity,
                                          u32* __restrict__ ambiguous_count,
                                          u32 ambiguous_capacity, u32* __restrict__ ambiguous) {
    const float dx = me.x - other.x, dy = me.y - other.y, dz = me.z - other.z;
    const float c2 = __fmaf_rn(dx, dx, __fmaf_rn(dy, dy, __fmul_rn(dz, dz)));
    const u32 level = min(me.level, other.level);
    if (!(c2 <= fc.limit32) || level == 0u) return;
    const u32 cell = min((u32)(c2 * fc.lut_scale), fc.lut_cells);
    // One step at most (cuda/tables.rs `one_step`): bin k, or k + 1 above outside[k];
    // undecided above that bin's inside threshold (as the search's band check).
    float4 t;
    asm("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(t.x), "=f"(t.y), "=f"(t.z), "=f"(t.w)
        : "r"(fc.cells_addr + 16u * cell));
    const bool up = c2 > t.y;
    u32 k = __float_as_uint(t.w) + (up ? 1u : 0u);
    if (c2 > (up ? t.z : t.x)) {
        // Rare (f32 too close to an edge): f64 vectors recomputed with position64.
        const u32 f = slot_event[(size_t)b * n + q];
        double pa[3], pc[3];
        position64(ra[(size_t)b * n + e], cos_dec[e], sin_dec[e], pa[0], pa[1], pa[2]);
        position64(ra[(size_t)b * n + f], cos_dec[f], sin_dec[f], pc[0], pc[1], pc[2]);
        k = exact_bin_inline(pa, pc, fc.n_bins, chord2_max, ambiguity);
        if (k == 0xffffffffu) {
            push_ambiguous(ambiguous_count, ambiguous_capacity, ambiguous, b, e, f, level);
            return;
        }
        if (k >= fc.n_bins) return;
    }
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(hist_addr + 4u * (level * fc.n_bins + k))
                 : "memory");
}

// BATCHED_PARAMS plus the per-cell decision table (LUT_CELLS + 1 float4).
extern "C" __global__ void __launch_bounds__(FLAT_THREADS, 8)
    tp_count_flats2(BATCHED_PARAMS, const float4* __restrict__ cell_table) {
    const u32 n_hist = n_levels * n_bins;
    const u32 warps = blockDim.x >> 5;
    for (u32 i = threadIdx.x; i < warps * n_hist; i += blockDim.x) flat_hist[i] = 0u;
    for (u32 i = threadIdx.x; i <= lut_cells; i += blockDim.x) flat_cells[i] = cell_table[i];
    __syncthreads();
    FlatConsts fc;
    fc.n_bins = n_bins;
    fc.lut_cells = lut_cells;
    fc.lut_scale = lut_scale;
    fc.limit32 = outside32[n_bins - 1];
    // 32-bit shared addresses kept in registers: asm moves are opaque to the compiler, so it
    // does not rebuild them from the CTA's shared window (S2R SR_CgaCtaId, …) at each use.
    asm volatile("mov.u32 %0, %1;"
                 : "=r"(fc.cells_addr)
                 : "r"((u32)__cvta_generic_to_shared(flat_cells)));
    u32 hist_addr;
    asm volatile("mov.u32 %0, %1;"
                 : "=r"(hist_addr)
                 : "r"((u32)__cvta_generic_to_shared(flat_hist) +
                       4u * ((threadIdx.x >> 5) * n_hist)));
    u32 runs_addr;  // this thread's run column
    asm volatile("mov.u32 %0, %1;"
                 : "=r"(runs_addr)
                 : "r"((u32)__cvta_generic_to_shared(flat_runs) + 8u * threadIdx.x));
    const u32 b = blockIdx.y;
    // The trial's slot array, opaque too: one wide multiply-add per candidate address instead
    // of (b·n + q)·16 recomputed.
    const SlotPos* P;
    asm volatile("mov.b64 %0, %1;" : "=l"(P) : "l"(pos32 + (size_t)b * n));
    const u32* starts = cell_start + (size_t)b * (total_cells + 1);
    for (u32 p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {
        const SlotPos me = load_slot(P, p);
        if (me.level == 0) continue;
        const u32 e = slot_event[(size_t)b * n + p];
        const double alpha = ra[(size_t)b * n + e];
        const u32 s = stripe_of_event[e];
        u32 w = window_start[e];
        const u32 w_first = w, w_end = window_start[e + 1];
        while (w < w_end) {
            // Fill: every lane computes its windows now, at the lanes' common pace.
            u32 n_runs = 0;
            for (; w < w_end && n_runs + 2u <= SHARED_RUNS; ++w) {
                u32 a0, a1, b0, b1;
                event_window_slots(alpha, w, s + (w - w_first), s, p, window_half_width,
                                   stripe_inv_cell_width, stripe_cell_base, starts, a0, a1, b0,
                                   b1);
                if (a0 < a1) {
                    asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(
                                     runs_addr + n_runs * (8u * FLAT_THREADS)),
                                 "r"(a0), "r"(a1)
                                 : "memory");
                    ++n_runs;
                }
                if (b0 < b1) {
                    asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(
                                     runs_addr + n_runs * (8u * FLAT_THREADS)),
                                 "r"(b0), "r"(b1)
                                 : "memory");
                    ++n_runs;
                }
            }
            // Walk: one loop over the (non-empty) runs, two candidates per step.
            u32 r = 0, q = 0, q_end = 0;
            for (;;) {
                if (q >= q_end) {
                    if (r >= n_runs) break;
                    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                                 : "=r"(q), "=r"(q_end)
                                 : "r"(runs_addr + r * (8u * FLAT_THREADS))
                                 : "memory");
                    ++r;
                }
                const bool two = q + 1u < q_end;
                const SlotPos o0 = load_slot(P, q);
                SlotPos o1 = load_slot(P, two ? q + 1u : q);
                if (!two) o1.level = 0u;
                flat_pair(fc, me, o0, hist_addr, b, n, q, e, cos_dec, sin_dec, ra, slot_event,
                          chord2_max, ambiguity, ambiguous_count, ambiguous_capacity, ambiguous);
                flat_pair(fc, me, o1, hist_addr, b, n, q + 1u, e, cos_dec, sin_dec, ra,
                          slot_event, chord2_max, ambiguity, ambiguous_count, ambiguous_capacity,
                          ambiguous);
                q += 2u;
            }
        }
    }
    __syncthreads();
    for (u32 i = threadIdx.x; i < n_hist; i += blockDim.x) {
        u32 sum = 0;
        for (u32 v = 0; v < warps; ++v) sum += flat_hist[v * n_hist + i];
        if (sum) atomicAdd(&histogram[(size_t)b * n_hist + i], (u64)sum);
    }
}
