// Step 4 of the pipeline: small particles (footprint box of one pixel), and medium ones with a
// box of a few pixels, are added straight into the global fixed-point tau with 64-bit integer
// atomics, with the weight the CPU gives them: the Gaussian at each pixel's sample point, over
// the CPU splatter's exact box with its disc test. tau_fixed holds CHANNELS values per pixel.
// Two ways (tuning.rs DIRECT_IN_CLASSIFY says which a channel count takes):
// - `direct_splat`, inside `classify` (render_classify.cu) while the particle's splat is in
//   registers: into the block's window of the image in shared memory, flushed with one atomic
//   per pixel and channel (when the block's boxes fit in one, render_classify.cu
//   `direct_block`); else the lanes of a warp that add to the same pixel in the same step
//   first sum their values by shuffles, and one lane adds the sum, one atomic per distinct
//   pixel and channel per warp (integer sums: the same bits in any grouping);
// - the `small_splat` kernel, a pass of its own after classify, one atomic per pixel and
//   channel of each particle.
// Needs render_common.cuh before it.

// Pixel index of a lane with nothing to add in a step (real ones are below 2^30: sides are at
// most 32768 px, MAX_IMAGE_SIDE_PX).
#define NO_PIXEL 0xFFFFFFFFu

// The position of the set bit of rank n (0-based, n < popc(m)) of m.
__device__ __forceinline__ int nth_set_bit(unsigned int m, int n) {
    int pos = 0;
#pragma unroll
    for (int w = 16; w >= 1; w >>= 1) {
        int c = __popc(m & ((1u << w) - 1u));
        if (n >= c) {
            n -= c;
            m >>= w;
            pos += w;
        }
    }
    return pos;
}

// `v` of lane `src` of the warp (full mask: every caller is in warp-uniform control flow).
__device__ __forceinline__ unsigned long long shfl_u64(unsigned long long v, int src) {
    unsigned int lo = __shfl_sync(0xffffffffu, (unsigned int)v, src);
    unsigned int hi = __shfl_sync(0xffffffffu, (unsigned int)(v >> 32), src);
    return ((unsigned long long)hi << 32) | lo;
}

// tau_fixed[pixel * CHANNELS + c] += w[c] for every lane with pixel != NO_PIXEL. Every lane of
// the warp calls it. The lanes with the same pixel form a group (match_any); a tree over the
// group's ranks (rank r takes rank r + d's partial sum, d = 1, 2, 4, ...) leaves the group's sum
// at rank 0, which adds it (values of 0 are not added: they change nothing).
__device__ __forceinline__ void warp_add_pixel(unsigned int pixel, unsigned long long* w,
                                               unsigned long long* __restrict__ tau_fixed) {
    unsigned int peers = __match_any_sync(0xffffffffu, pixel);
    int lane = (int)(threadIdx.x & 31u);
    int rank = __popc(peers & ((1u << lane) - 1u));
    int size = __popc(peers);
    int most = warp_max(size);
    for (int d = 1; d < most; d <<= 1) {
        bool take = (rank & (2 * d - 1)) == 0 && rank + d < size;
        int src = take ? nth_set_bit(peers, rank + d) : lane;
#pragma unroll
        for (int c = 0; c < CHANNELS; ++c) {
            unsigned long long other = shfl_u64(w[c], src);
            if (take) w[c] += other;
        }
    }
    if (rank == 0 && pixel != NO_PIXEL) {
        size_t at = (size_t)pixel * CHANNELS;
#pragma unroll
        for (int c = 0; c < CHANNELS; ++c) {
            if (w[c] != 0) atomicAdd(&tau_fixed[at + c], w[c]);
        }
    }
}

// The direct box of this lane's splat `s` when `direct` (pixel_box over the image) in b, and its
// pixel count (0: none).
__device__ __forceinline__ int direct_box(const ViewC& view, const SplatC& s, bool direct,
                                          int* b) {
    bool has_box = direct && pixel_box(s, 0, view.width_px - 1, 0, view.height_px - 1, b);
    return has_box ? (b[1] - b[0] + 1) * (b[3] - b[2] + 1) : 0;
}

// Draws this lane's splat `s` over its box b of `count` pixels (0: nothing). Every lane of the
// warp calls it: step k adds pixel k of each lane's box (row by row), so lanes whose particles
// have the same box meet on the same pixel; the step count is the warp's largest box.
// WINDOW: each lane adds its values to the block's shared window (corner win_x0, win_y0,
// win_w pixels a row, CHANNELS values a pixel) with shared atomics, no warp merge (the match
// and shuffle tree cost more than the shared atomics they would save); else into tau_fixed
// through warp_add_pixel. F32: fixed_of's f32 product (the caller checks f32_fixed_exact).
template <bool F32, bool WINDOW>
__device__ __forceinline__ void direct_splat(const ViewC& view, const SplatC& s, const int* b,
                                             int count, double scale, float scale_f,
                                             unsigned long long* __restrict__ tau_fixed,
                                             unsigned long long* window, int win_x0,
                                             int win_y0, int win_w) {
    int steps = warp_max(count);
    int col = b[0], row = b[2];
    for (int k = 0; k < steps; ++k) {
        unsigned long long w[CHANNELS];
#pragma unroll
        for (int c = 0; c < CHANNELS; ++c) w[c] = 0;
        bool inside = k < count && splat_weight<F32>(s, col, row, scale, scale_f, w);
        if (WINDOW) {
            if (inside) {
                size_t at = (size_t)((row - win_y0) * win_w + (col - win_x0)) * CHANNELS;
#pragma unroll
                for (int c = 0; c < CHANNELS; ++c) {
                    if (w[c] != 0) shared_add_u64(&window[at + c], w[c]);
                }
            }
        } else {
            unsigned int pixel =
                inside ? (unsigned int)row * (unsigned int)view.width_px + (unsigned int)col
                       : NO_PIXEL;
            warp_add_pixel(pixel, w, tau_fixed);
        }
        if (++col > b[1]) {
            col = b[0];
            ++row;
        }
    }
}

// Splat s over its clamped box, one atomic per pixel and channel.
template <bool F32>
__device__ __forceinline__ void small_one(const ViewC& view, const SplatC& s, double scale,
                                          float scale_f,
                                          unsigned long long* __restrict__ tau_fixed) {
    int b[4];
    if (!pixel_box(s, 0, view.width_px - 1, 0, view.height_px - 1, b)) return;
    for (int row = b[2]; row <= b[3]; ++row) {
        for (int col = b[0]; col <= b[1]; ++col) {
            unsigned long long w[CHANNELS];
            if (!splat_weight<F32>(s, col, row, scale, scale_f, w)) continue;
            size_t at = ((size_t)row * (size_t)view.width_px + (size_t)col) * CHANNELS;
#pragma unroll
            for (int c = 0; c < CHANNELS; ++c) {
                if (w[c] != 0) atomicAdd(&tau_fixed[at + c], w[c]);
            }
        }
    }
}

// The separate pass: one thread per particle, the particles classify keyed KEY_SMALL.
extern "C" __global__ void small_splat(ViewC view, StyleC style, const float* __restrict__ pos, const float* __restrict__ h,
    const float* __restrict__ intensity, const float* __restrict__ colour,
    const float* __restrict__ palette,
                                       unsigned int n, const unsigned int* __restrict__ keys,
                                       double scale,
                                       unsigned long long* __restrict__ tau_fixed) {
    ParticlesC particles = {pos, h, intensity, colour, palette};
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || keys[i] != KEY_SMALL) return;
    SplatC s;
    project_particle(view, style, particles, i, &s);
    if (f32_fixed_exact(scale)) {
        small_one<true>(view, s, scale, (float)scale, tau_fixed);
    } else {
        small_one<false>(view, s, scale, (float)scale, tau_fixed);
    }
}
