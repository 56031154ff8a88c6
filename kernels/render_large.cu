// Optional GPU path for large splats (R >= border or centre off the image), used when the CPU
// threads would be the bottleneck: one warp per splat, its clamped box row by row with the
// lanes across each row's columns (no 64-bit division per pixel), 64-bit integer atomics into the global fixed-point tau. Needs render_common.cuh before it.

// Adds splat s at pixel (col, row).
template <bool F32>
__device__ __forceinline__ void large_add(const SplatC& s, int col, int row, int width,
                                          double scale, float scale_f,
                                          unsigned long long* __restrict__ tau_fixed) {
    unsigned long long w[CHANNELS];
    if (!splat_weight<F32>(s, col, row, scale, scale_f, w)) return;
    size_t at = ((size_t)row * (size_t)width + (size_t)col) * CHANNELS;
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) {
        if (w[c] != 0) atomicAdd(&tau_fixed[at + c], w[c]);
    }
}

// Splat s over its box b (clamped to the image) by the lanes of one warp.
template <bool F32>
__device__ __forceinline__ void large_draw(const SplatC& s, const int* b, int lane, int width,
                                           double scale, float scale_f,
                                           unsigned long long* __restrict__ tau_fixed) {
    int bw = b[1] - b[0] + 1;
    if (bw >= 32) {
        // Rows one after another, the lanes across each row's columns.
        for (int row = b[2]; row <= b[3]; ++row) {
            for (int col = b[0] + lane; col <= b[1]; col += 32) {
                large_add<F32>(s, col, row, width, scale, scale_f, tau_fixed);
            }
        }
    } else {
        // A narrow box (a splat cut by the image edge): its pixels strided over the lanes.
        // bw < 32 and height <= 32768 (MAX_IMAGE_SIDE_PX), so the count fits 32 bits.
        unsigned int ubw = (unsigned int)bw;
        unsigned int count = ubw * (unsigned int)(b[3] - b[2] + 1);
        for (unsigned int k = lane; k < count; k += 32) {
            large_add<F32>(s, b[0] + (int)(k % ubw), b[2] + (int)(k / ubw), width, scale,
                           scale_f, tau_fixed);
        }
    }
}

extern "C" __global__ void large_splat(const LargeC* __restrict__ large, unsigned int first,
                                       unsigned int n, int width, int height, double scale,
                                       unsigned long long* __restrict__ tau_fixed) {
    unsigned int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (warp >= n) return;
    SplatC s = large[first + warp].splat;
    int b[4];
    if (!pixel_box(s, 0, width - 1, 0, height - 1, b)) return;
    if (f32_fixed_exact(scale)) {
        large_draw<true>(s, b, lane, width, scale, (float)scale, tau_fixed);
    } else {
        large_draw<false>(s, b, lane, width, scale, (float)scale, tau_fixed);
    }
}
