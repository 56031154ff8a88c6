// Step 2 of the GPU Splotch pipeline (Rivi et al. 2014; DESIGN §4): one thread per particle
// projects, sizes and classifies it. Writes a key per particle, the per-tile histogram and the
// class counts (always the CPU reference's classes). The key routes the particle:
// - KEY_SMALL: direct atomics (render_small.cu), for small particles and for medium ones with
//   R < direct_cut_px (a box of a few pixels: atomics beat sorting there); drawn here at once
//   when DIRECT_IN_CLASSIFY, else by the small_splat pass;
// - tile id t < n_tiles: the medium tile kernel;
// - n_tiles + t: the wide-border tile kernel, for large particles with the centre on the image
//   and R < gpu_border_px (0 turns this off: every large particle goes to KEY_LARGE);
// - KEY_LARGE: the CPU threads (or the per-warp GPU kernel); KEY_INACTIVE: dropped.
// Compiled per channel count (CHANNELS, DIRECT_IN_CLASSIFY). Needs render_common.cuh and
// render_small.cu before it.

#ifndef DIRECT_IN_CLASSIFY
#define DIRECT_IN_CLASSIFY 1
#endif

// Largest window (pixels) of the image that the block's direct splats are summed in, in shared
// memory, before one global atomic per pixel and channel; 0: none, straight to the global tau
// (set by the loader, tuning.rs RGB_DIRECT_WINDOW_PX).
#ifndef BLOCK_WINDOW_PX
#define BLOCK_WINDOW_PX 0
#endif

// The sum of v over the warp (every lane calls it).
__device__ __forceinline__ int warp_sum(int v) {
#if __CUDA_ARCH__ >= 800
    return (int)__reduce_add_sync(0xffffffffu, (unsigned int)v);
#else
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
#endif
}

// Bounds of a warp's direct boxes, for the block's window (render_classify.cu direct_block):
// the negated smallest column and row and the largest (so that one max serves all four; -far
// where the warp has none) and the boxes' pixel total.
struct WarpBoxes {
    int v[5];
};

#define FAR_PX (1 << 30)

__device__ __forceinline__ WarpBoxes warp_boxes(const int* b, int count) {
    WarpBoxes w;
    w.v[0] = warp_max(count > 0 ? -b[0] : -FAR_PX);
    w.v[1] = warp_max(count > 0 ? b[1] : -FAR_PX);
    w.v[2] = warp_max(count > 0 ? -b[2] : -FAR_PX);
    w.v[3] = warp_max(count > 0 ? b[3] : -FAR_PX);
    w.v[4] = warp_sum(count);
    return w;
}

// The direct splats of the block (this thread's: box b of `count` pixels, 0 when none): into
// its shared window when the union of their boxes fits in BLOCK_WINDOW_PX pixels and has no
// more pixels than the boxes together (else the flush would cost about as many atomics as it
// saves), then one global atomic per non-zero window value; else straight to tau_fixed through
// the warp merge. Integer sums: the same bits in any grouping (shared_add_u64 is exact modulo
// 2^64 and every partial sum of a pixel is at most its total, below 2^62).
// `slots`: each warp's WarpBoxes, written before a __syncthreads that every thread of the
// block passed, so the decision is block-uniform; with the window, every thread of the block
// must call it (it has __syncthreads). window: BLOCK_WINDOW_PX * CHANNELS values.
template <bool F32>
__device__ __forceinline__ void direct_block(const ViewC& view, const SplatC& s, const int* b,
                                             int count, double scale,
                                             unsigned long long* __restrict__ tau_fixed,
                                             const WarpBoxes* slots,
                                             unsigned long long* window) {
    float scale_f = (float)scale;
#if BLOCK_WINDOW_PX > 0
    // Lane l combines warp l's slot (blocks have at most 32 warps), then the warp combines all.
    int lane = (int)(threadIdx.x & 31u);
    bool has = lane < (int)(blockDim.x / 32u);
    int nx0 = warp_max(has ? slots[lane].v[0] : -FAR_PX);
    int x1 = warp_max(has ? slots[lane].v[1] : -FAR_PX);
    int ny0 = warp_max(has ? slots[lane].v[2] : -FAR_PX);
    int y1 = warp_max(has ? slots[lane].v[3] : -FAR_PX);
    int boxes_total = warp_sum(has ? slots[lane].v[4] : 0);
    int win_x0 = -nx0, win_y0 = -ny0;
    // No box: boxes_total = 0 (then the widths are meaningless and unused).
    int win_w = x1 - win_x0 + 1, win_h = y1 - win_y0 + 1;
    bool use = boxes_total > 0 && win_w <= BLOCK_WINDOW_PX && win_h <= BLOCK_WINDOW_PX &&
               win_w * win_h <= BLOCK_WINDOW_PX && win_w * win_h <= boxes_total;
    if (use) {
        int values = win_w * win_h * CHANNELS;
        for (int k = threadIdx.x; k < values; k += blockDim.x) window[k] = 0;
        __syncthreads();
        direct_splat<F32, true>(view, s, b, count, scale, scale_f, tau_fixed, window, win_x0,
                                win_y0, win_w);
        __syncthreads();
        for (int k = threadIdx.x; k < values; k += blockDim.x) {
            unsigned long long v = window[k];
            if (v == 0) continue;
            int cell = k / CHANNELS;
            int row = win_y0 + cell / win_w;
            int col = win_x0 + cell % win_w;
            atomicAdd(&tau_fixed[((size_t)row * (size_t)view.width_px + (size_t)col) * CHANNELS +
                                 (k % CHANNELS)],
                      v);
        }
        return;
    }
    if (boxes_total == 0) return;
#endif
    (void)slots;
    (void)window;
    direct_splat<F32, false>(view, s, b, count, scale, scale_f, tau_fixed, nullptr, 0, 0, 0);
}

extern "C" __global__ void classify(ViewC view, StyleC style, const float* __restrict__ pos, const float* __restrict__ h,
    const float* __restrict__ intensity, const float* __restrict__ colour,
    const float* __restrict__ palette,
                                    unsigned int n, int tile_px, int tiles_x,
                                    unsigned int n_tiles, float direct_cut_px,
                                    float gpu_border_px, double scale,
                                    unsigned int* __restrict__ keys,
                                    unsigned int* __restrict__ tile_count,
                                    unsigned long long* __restrict__ class_count,
                                    unsigned long long* __restrict__ tau_fixed) {
    ParticlesC particles = {pos, h, intensity, colour, palette};
    __shared__ unsigned int block_count[4];
    if (threadIdx.x < 4) block_count[threadIdx.x] = 0;
    __syncthreads();
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int key = KEY_INACTIVE;
    SplatC s;
    if (i < n) {
        int cls = project_particle(view, style, particles, i, &s);
        bool centre_on_image = s.x_px >= 0.0f && s.x_px < (float)view.width_px &&
                               s.y_px >= 0.0f && s.y_px < (float)view.height_px;
        // The centre lies on the image (x, y >= 0), so truncation is floor.
        unsigned int tile = centre_on_image
                                ? (unsigned int)((((int)s.y_px) / tile_px) * tiles_x +
                                                 ((int)s.x_px) / tile_px)
                                : 0u;
        if (cls == CLASS_SMALL || (cls == CLASS_MEDIUM && s.cut_px < direct_cut_px)) {
            key = KEY_SMALL;
        } else if (cls == CLASS_MEDIUM) {
            key = tile;
        } else if (cls == CLASS_LARGE) {
            key = centre_on_image && s.cut_px < gpu_border_px ? n_tiles + tile : KEY_LARGE;
        }
        keys[i] = key;
        atomicAdd(&block_count[cls], 1u);
    }
    // Warp-aggregated histogram: clustered particles that are neighbours in memory often share
    // a tile, so one atomic per distinct key per warp.
    unsigned int peers = __match_any_sync(0xffffffffu, key);
    int lane = threadIdx.x & 31;
    if (key < KEY_SMALL && lane == __ffs(peers) - 1) {
        atomicAdd(&tile_count[key], (unsigned int)__popc(peers));
    }
#if DIRECT_IN_CLASSIFY
    // Every lane of the warp reaches this (the grid's threads are whole warps).
    int b[4] = {0, 0, 0, 0};
    int count = direct_box(view, s, key == KEY_SMALL, b);
#if BLOCK_WINDOW_PX > 0
    __shared__ unsigned long long window[BLOCK_WINDOW_PX * CHANNELS];
    __shared__ WarpBoxes slots[32];
    WarpBoxes mine = warp_boxes(b, count);
    if (lane == 0) slots[threadIdx.x / 32u] = mine;
#else
    unsigned long long* window = nullptr;
    const WarpBoxes* slots = nullptr;
#endif
#endif
    // Also publishes the warps' slots to direct_block.
    __syncthreads();
    if (threadIdx.x < 4 && block_count[threadIdx.x] != 0) {
        atomicAdd(&class_count[threadIdx.x], (unsigned long long)block_count[threadIdx.x]);
    }
#if DIRECT_IN_CLASSIFY
    // The scale test is the same for every thread: a uniform branch.
    if (f32_fixed_exact(scale)) {
        direct_block<true>(view, s, b, count, scale, tau_fixed, slots, window);
    } else {
        direct_block<false>(view, s, b, count, scale, tau_fixed, slots, window);
    }
#else
    (void)scale;
    (void)tau_fixed;
#endif
}
