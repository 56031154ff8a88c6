// Flattened-window counting kernels (issue 6, BENCHMARKS.md session 5): appended to
// kernels/twopoint.cu (after twopoint_fma.cu) by src/twopoint/count_cuda.rs.
//
// The lead's ncu source profile of tp_count_b2fd (session 5) showed 53 % of its warp
// instructions running with < 15 active lanes: the per-stripe window set-up (f64 RA window →
// cells → 4 cell_start loads, ≈ 70 instructions) ran ≈ 177 k times per trial at 3–5 lanes,
// because lanes of a warp finish their runs at different times and reach it one by one; the
// run, tail and bin-search blocks likewise. Here:
//   - tp_scatter_windows (scatter32 plus, per event, every window's slot runs) computes the
//     windows at full lanes once per (trial, window): windows[b][w] = {a0, a1, b0, b1}, the
//     same runs as window_slots, the own stripe's start already clamped to p + 1;
//   - the counter walks ALL its runs in one loop, 2 candidates per step (the second one
//     neutralised, not branched around, at a run's odd end), so a warp takes
//     max over lanes of (Σ run lengths) / 2 steps instead of Σ over windows of the longest run;
//     moving to the next run is a short block (one 16-byte load);
//   - the shared tables are file-scope __shared__ arrays, indexed directly (32-bit shared
//     addressing, no generic pointers to rematerialise per candidate);
//   - DECIDE_CELL: a per-lookup-cell float4 {inside[k], outside[k], inside[k+1], k} decides the
//     bin with one shared load and no loop, valid when no cell's c² range reaches past
//     outside[k + 1] (cuda_tables.rs checks this, `one_step`; otherwise the host uses b2fd).
// Counts equal tp_count_b2fd's exactly: the same candidate slots, the same FMA c², the same f32
// bands, f64 re-check and host list.

#define DECIDE_LUT 0
#define DECIDE_CELL 1
#define LOOP_NESTED 0
#define LOOP_FLAT 1
#define LOOP_SHARED 2
// LOOP_SHARED with the run columns at an opaque 32-bit shared address (no per-run
// rematerialisation of the shared window: the advance ran at ≈ 3 lanes, 9 instructions); and
// with the next step's two candidates loaded before the current two are tested (the first load
// use stalled ≈ 20 % of the samples in flats).
#define LOOP_SHARED_OPQ 3
#define LOOP_SHARED_PF 4
// LOOP_SHARED: slot runs per thread computed in the counter at (near) full lanes, before any
// candidate, into a shared column of SHARED_RUNS runs per thread (windows in chunks if more).
#define SHARED_RUNS 8
#define FLAT_THREADS 128

__shared__ float flat_inside[MAX_BINS];
__shared__ float flat_outside[MAX_BINS];
__shared__ unsigned short flat_lut[MAX_LUT_CELLS + 1];
__shared__ float4 flat_cells[MAX_LUT_CELLS + 1];
__shared__ uint2 flat_runs[SHARED_RUNS * FLAT_THREADS];  // [run][thread]: {first, end} slot
extern __shared__ u32 flat_hist[];  // [warp][level][bin]

// tp_scatter32, plus the slot runs of every search window of the event (events of level 0 are
// skipped by the counters and get none). One thread per event; trial = blockIdx.y.
extern "C" __global__ void tp_scatter_windows(
    u32 n, u32 total_cells, const double* __restrict__ ra, const u32* __restrict__ cell,
    const u32* __restrict__ rank, const u32* __restrict__ cell_start,
    const double* __restrict__ cos_dec, const double* __restrict__ sin_dec,
    const u32* __restrict__ level, SlotPos* __restrict__ pos32, u32* __restrict__ slot_event,
    const u32* __restrict__ stripe_of_event, const u32* __restrict__ window_start,
    const double* __restrict__ window_half_width, const u32* __restrict__ stripe_cell_base,
    const double* __restrict__ stripe_inv_cell_width, u32 n_windows, uint4* __restrict__ windows) {
    const u32 e = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 b = blockIdx.y;
    if (e >= n) return;
    const size_t i = (size_t)b * n + e;
    const u32* starts = cell_start + (size_t)b * (total_cells + 1);
    const u32 slot = starts[cell[i]] + rank[i];
    const double alpha = ra[i];
    double x, y, z;
    position64(alpha, cos_dec[e], sin_dec[e], x, y, z);
    const size_t o = (size_t)b * n + slot;
    SlotPos pos;
    pos.x = (float)x;
    pos.y = (float)y;
    pos.z = (float)z;
    pos.level = level[e];
    pos32[o] = pos;
    slot_event[o] = e;
    if (pos.level == 0u) return;
    const u32 s = stripe_of_event[e];
    uint4* out = windows + (size_t)b * n_windows;
    const u32 w_end = window_start[e + 1];
    for (u32 w = window_start[e], t = s; w < w_end; ++w, ++t) {
        const u32 base = stripe_cell_base[t];
        uint4 r;
        window_slots(alpha, window_half_width[w], stripe_inv_cell_width[t], base,
                     stripe_cell_base[t + 1] - base, starts, r.x, r.y, r.z, r.w);
        if (t == s) {
            // Own stripe: later slots only, so each unordered pair is counted once.
            r.x = max(r.x, slot + 1u);
            r.z = max(r.z, slot + 1u);
        }
        out[w] = r;
    }
}

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

// Per-launch constants of the flat counters (the tables themselves are the shared arrays).
struct FlatConsts {
    u32 n_bins;
    u32 lut_cells;
    float lut_scale;
    float limit32;
    u32 cells_addr;  // 32-bit shared address of flat_cells (opaque, see flat_count)
};

// count_pair_recompute<C2_FMA, ·> on the file-scope shared tables; a pair of level 0 (an empty
// neutralised candidate included) is never counted.
template <int DECIDE>
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
    u32 k;
    bool undecided;
    if (DECIDE == DECIDE_CELL) {
        // One step at most (cuda_tables.rs `one_step`): bin k, or k + 1 above outside[k];
        // undecided above that bin's inside threshold (as the search's band check).
        float4 t;
        asm("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];"
            : "=f"(t.x), "=f"(t.y), "=f"(t.z), "=f"(t.w)
            : "r"(fc.cells_addr + 16u * cell));
        const bool up = c2 > t.y;
        k = __float_as_uint(t.w) + (up ? 1u : 0u);
        undecided = c2 > (up ? t.z : t.x);
    } else {
        const u32 entry = flat_lut[cell];
        k = entry & LUT_BIN_MASK;
        undecided = false;
        if (!(entry & LUT_DIRECT)) {
            while (c2 > flat_outside[k]) ++k;
            undecided = !(c2 <= flat_inside[k]);
        }
    }
    if (undecided) {
        // Rare (f32 too close to an edge): f64 vectors recomputed as tp_scatter does.
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
    // 32-bit shared address of the warp's histogram word: no generic-to-shared conversion of
    // the block's shared window per pair.
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(hist_addr + 4u * (level * fc.n_bins + k))
                 : "memory");
}

// BATCHED_PARAMS plus the precomputed windows and the per-cell decision table.
#define FLAT_PARAMS                                                                             \
    BATCHED_PARAMS, const uint4 *__restrict__ windows, u32 n_windows,                          \
        const float4 *__restrict__ cell_table

#define BATCHED_ARGS                                                                            \
    n, total_cells, n_bins, n_levels, pos32, cos_dec, sin_dec, slot_event, ra, cell_start,      \
        stripe_of_event, window_start, window_half_width, stripe_cell_base,                    \
        stripe_inv_cell_width, inside32, outside32, chord2_max, ambiguity, lut, lut_cells,     \
        lut_scale, histogram, ambiguous_count, ambiguous_capacity, ambiguous

template <int DECIDE, int LOOP>
__device__ __forceinline__ void flat_count(FLAT_PARAMS) {
    const u32 n_hist = n_levels * n_bins;
    const u32 warps = blockDim.x >> 5;
    for (u32 i = threadIdx.x; i < warps * n_hist; i += blockDim.x) flat_hist[i] = 0u;
    if (DECIDE == DECIDE_CELL) {
        for (u32 i = threadIdx.x; i <= lut_cells; i += blockDim.x) flat_cells[i] = cell_table[i];
    } else {
        for (u32 i = threadIdx.x; i < n_bins; i += blockDim.x) {
            flat_inside[i] = inside32[i];
            flat_outside[i] = outside32[i];
        }
        for (u32 i = threadIdx.x; i <= lut_cells; i += blockDim.x) flat_lut[i] = lut[i];
    }
    __syncthreads();
    FlatConsts fc;
    fc.n_bins = n_bins;
    fc.lut_cells = lut_cells;
    fc.lut_scale = lut_scale;
    fc.limit32 = outside32[n_bins - 1];
    fc.cells_addr = 0u;
    if (DECIDE == DECIDE_CELL) {
        asm volatile("mov.u32 %0, %1;"
                     : "=r"(fc.cells_addr)
                     : "r"((u32)__cvta_generic_to_shared(flat_cells)));
    }
    const u32 b = blockIdx.y;
    // Opaque to the compiler (an asm move), so it stays in a register instead of being
    // rematerialised from the CTA's shared window (S2UR SR_CgaCtaId, …) at every pair.
    u32 hist_addr;
    asm volatile("mov.u32 %0, %1;"
                 : "=r"(hist_addr)
                 : "r"((u32)__cvta_generic_to_shared(flat_hist) +
                       4u * ((threadIdx.x >> 5) * n_hist)));
    // The trial's slot array, opaque like hist_addr: one wide multiply-add per candidate
    // address instead of (b·n + q)·16 recomputed.
    const SlotPos* P;
    asm volatile("mov.b64 %0, %1;" : "=l"(P) : "l"(pos32 + (size_t)b * n));
    const uint4* W = windows + (size_t)b * n_windows;
#define FLAT_PAIR(OTHER, Q)                                                                      \
    flat_pair<DECIDE>(fc, me, OTHER, hist_addr, b, n, Q, e, cos_dec, sin_dec, ra, slot_event,    \
                      chord2_max, ambiguity, ambiguous_count, ambiguous_capacity, ambiguous)
    for (u32 p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += gridDim.x * blockDim.x) {
        const SlotPos me = load_slot(P, p);
        if (me.level == 0) continue;
        const u32 e = slot_event[(size_t)b * n + p];
        u32 w = window_start[e];
        const u32 w_end = window_start[e + 1];
        if (LOOP == LOOP_FLAT) {
            u32 q = 0, q_end = 0, next0 = 0, next1 = 0;
            for (;;) {
                // Next non-empty run: the pending second run of the window, else the next window.
                while (q >= q_end) {
                    if (next0 < next1) {
                        q = next0;
                        q_end = next1;
                        next1 = 0u;
                    } else if (w < w_end) {
                        const uint4 r = W[w++];
                        q = r.x;
                        q_end = r.y;
                        next0 = r.z;
                        next1 = r.w;
                    } else {
                        break;
                    }
                }
                if (q >= q_end) break;
                // Two candidates per step; at a run's odd end the second is the first again
                // with level 0, which flat_pair never counts.
                const bool two = q + 1u < q_end;
                const SlotPos o0 = load_slot(P, q);
                SlotPos o1 = load_slot(P, two ? q + 1u : q);
                if (!two) o1.level = 0u;
                FLAT_PAIR(o0, q);
                FLAT_PAIR(o1, q + 1u);
                q += 2u;
            }
        } else if (LOOP == LOOP_SHARED_OPQ || LOOP == LOOP_SHARED_PF) {
            const double alpha = ra[(size_t)b * n + e];
            const u32 s = stripe_of_event[e];
            const u32* starts = cell_start + (size_t)b * (total_cells + 1);
            const u32 w_first = w;
            u32 runs_addr;  // this thread's run column
            asm volatile("mov.u32 %0, %1;"
                         : "=r"(runs_addr)
                         : "r"((u32)__cvta_generic_to_shared(flat_runs) + 8u * threadIdx.x));
            while (w < w_end) {
                u32 n_runs = 0;
                for (; w < w_end && n_runs + 2u <= SHARED_RUNS; ++w) {
                    const u32 t = s + (w - w_first);
                    const u32 base = stripe_cell_base[t];
                    u32 a0, a1, b0, b1;
                    window_slots(alpha, window_half_width[w], stripe_inv_cell_width[t], base,
                                 stripe_cell_base[t + 1] - base, starts, a0, a1, b0, b1);
                    if (t == s) {
                        // Own stripe: later slots only, so each unordered pair is counted once.
                        a0 = max(a0, p + 1u);
                        b0 = max(b0, p + 1u);
                    }
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
                u32 r = 0, q = 0, q_end = 0;
                SlotPos n0, n1;  // LOOP_SHARED_PF: the step's candidates, loaded a step ahead
                n0.level = n1.level = 0u;
                for (;;) {
                    if (q >= q_end) {
                        if (r >= n_runs) break;
                        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                                     : "=r"(q), "=r"(q_end)
                                     : "r"(runs_addr + r * (8u * FLAT_THREADS))
                                     : "memory");
                        ++r;
                        if (LOOP == LOOP_SHARED_PF) {
                            n0 = load_slot(P, q);
                            n1 = load_slot(P, min(q + 1u, q_end - 1u));
                        }
                    }
                    const bool two = q + 1u < q_end;
                    SlotPos o0, o1;
                    if (LOOP == LOOP_SHARED_PF) {
                        o0 = n0;
                        o1 = n1;
                        // Next step of this run (clamped into it; reloaded after a run change).
                        n0 = load_slot(P, min(q + 2u, q_end - 1u));
                        n1 = load_slot(P, min(q + 3u, q_end - 1u));
                    } else {
                        o0 = load_slot(P, q);
                        o1 = load_slot(P, two ? q + 1u : q);
                    }
                    if (!two) o1.level = 0u;
                    FLAT_PAIR(o0, q);
                    FLAT_PAIR(o1, q + 1u);
                    q += 2u;
                }
            }
        } else if (LOOP == LOOP_SHARED) {
            const double alpha = ra[(size_t)b * n + e];
            const u32 s = stripe_of_event[e];
            const u32* starts = cell_start + (size_t)b * (total_cells + 1);
            const u32 w_first = w;
            while (w < w_end) {
                // Fill: every lane computes its windows now, so the set-up runs at the lanes'
                // common pace (neighbouring slots have as many windows), not one by one.
                u32 n_runs = 0;
                for (; w < w_end && n_runs + 2u <= SHARED_RUNS; ++w) {
                    const u32 t = s + (w - w_first);
                    const u32 base = stripe_cell_base[t];
                    u32 a0, a1, b0, b1;
                    window_slots(alpha, window_half_width[w], stripe_inv_cell_width[t], base,
                                 stripe_cell_base[t + 1] - base, starts, a0, a1, b0, b1);
                    if (t == s) {
                        // Own stripe: later slots only, so each unordered pair is counted once.
                        a0 = max(a0, p + 1u);
                        b0 = max(b0, p + 1u);
                    }
                    if (a0 < a1) {
                        flat_runs[n_runs * FLAT_THREADS + threadIdx.x] = uint2{a0, a1};
                        ++n_runs;
                    }
                    if (b0 < b1) {
                        flat_runs[n_runs * FLAT_THREADS + threadIdx.x] = uint2{b0, b1};
                        ++n_runs;
                    }
                }
                // Walk: one loop over the (non-empty) runs, two candidates per step.
                u32 r = 0, q = 0, q_end = 0;
                for (;;) {
                    if (q >= q_end) {
                        if (r >= n_runs) break;
                        const uint2 run = flat_runs[r * FLAT_THREADS + threadIdx.x];
                        ++r;
                        q = run.x;
                        q_end = run.y;
                    }
                    const bool two = q + 1u < q_end;
                    const SlotPos o0 = load_slot(P, q);
                    SlotPos o1 = load_slot(P, two ? q + 1u : q);
                    if (!two) o1.level = 0u;
                    FLAT_PAIR(o0, q);
                    FLAT_PAIR(o1, q + 1u);
                    q += 2u;
                }
            }
        } else {
            for (; w < w_end; ++w) {
                const uint4 r = W[w];
                for (int run = 0; run < 2; ++run) {
                    u32 q = run == 0 ? r.x : r.z;
                    const u32 q_end = run == 0 ? r.y : r.w;
                    for (; q + 2u <= q_end; q += 2u) {
                        const SlotPos o0 = load_slot(P, q);
                        const SlotPos o1 = load_slot(P, q + 1u);
                        FLAT_PAIR(o0, q);
                        FLAT_PAIR(o1, q + 1u);
                    }
                    if (q < q_end) FLAT_PAIR(load_slot(P, q), q);
                }
            }
        }
    }
#undef FLAT_PAIR
    __syncthreads();
    for (u32 i = threadIdx.x; i < n_hist; i += blockDim.x) {
        u32 sum = 0;
        for (u32 v = 0; v < warps; ++v) sum += flat_hist[v * n_hist + i];
        if (sum) atomicAdd(&histogram[(size_t)b * n_hist + i], (u64)sum);
    }
}

// Precomputed windows, b2fd's nested run loops and lookup (isolates the window set-up).
extern "C" __global__ void __launch_bounds__(128, 8) tp_count_wpre(FLAT_PARAMS) {
    flat_count<DECIDE_LUT, LOOP_NESTED>(BATCHED_ARGS, windows, n_windows, cell_table);
}

// Precomputed windows, one loop over all runs, b2fd's lookup.
extern "C" __global__ void __launch_bounds__(128, 8) tp_count_flat(FLAT_PARAMS) {
    flat_count<DECIDE_LUT, LOOP_FLAT>(BATCHED_ARGS, windows, n_windows, cell_table);
}

// Windows computed in the counter into shared run columns, one loop, one-step cell table (no
// window buffer: FLAT_PARAMS' windows are unused and may be null).
extern "C" __global__ void __launch_bounds__(FLAT_THREADS, 8) tp_count_flats(FLAT_PARAMS) {
    flat_count<DECIDE_CELL, LOOP_SHARED>(BATCHED_ARGS, windows, n_windows, cell_table);
}

// tp_count_flats with the run columns at an opaque shared address.
extern "C" __global__ void __launch_bounds__(FLAT_THREADS, 8) tp_count_flats2(FLAT_PARAMS) {
    flat_count<DECIDE_CELL, LOOP_SHARED_OPQ>(BATCHED_ARGS, windows, n_windows, cell_table);
}

// tp_count_flats2 loading each step's candidates one step ahead.
extern "C" __global__ void __launch_bounds__(FLAT_THREADS, 8) tp_count_flatp(FLAT_PARAMS) {
    flat_count<DECIDE_CELL, LOOP_SHARED_PF>(BATCHED_ARGS, windows, n_windows, cell_table);
}

// tp_count_flatp at 7 blocks per SM (72 registers), in case 64 spill.
extern "C" __global__ void __launch_bounds__(FLAT_THREADS, 7) tp_count_flatp7(FLAT_PARAMS) {
    flat_count<DECIDE_CELL, LOOP_SHARED_PF>(BATCHED_ARGS, windows, n_windows, cell_table);
}

// As tp_count_flats with b2fd's lookup (less shared memory than the cell table).
extern "C" __global__ void __launch_bounds__(FLAT_THREADS, 8) tp_count_flatsl(FLAT_PARAMS) {
    flat_count<DECIDE_LUT, LOOP_SHARED>(BATCHED_ARGS, windows, n_windows, cell_table);
}

// Precomputed windows, one loop over all runs, one-step cell table.
extern "C" __global__ void __launch_bounds__(128, 8) tp_count_flatc(FLAT_PARAMS) {
    flat_count<DECIDE_CELL, LOOP_FLAT>(BATCHED_ARGS, windows, n_windows, cell_table);
}
