// Optional GPU path for large splats (R >= border or centre off the image), used when the CPU
// threads would be the bottleneck: one warp per splat, its clamped box strided over the lanes,
// 64-bit integer atomics into the global fixed-point tau. Needs render_common.cuh before it.

extern "C" __global__ void large_splat(const LargeC* __restrict__ large, unsigned int first,
                                       unsigned int n, int width, int height, double scale,
                                       unsigned long long* __restrict__ tau_fixed) {
    unsigned int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (warp >= n) return;
    SplatC s = large[first + warp].splat;
    int b[4];
    if (!pixel_box(s, 0, width - 1, 0, height - 1, b)) return;
    long long bw = (long long)(b[1] - b[0]) + 1;
    long long count = bw * ((long long)(b[3] - b[2]) + 1);
    for (long long k = lane; k < count; k += 32) {
        int col = b[0] + (int)(k % bw);
        int row = b[2] + (int)(k / bw);
        unsigned long long w[CHANNELS];
        if (!splat_weight(s, col, row, scale, w)) continue;
        size_t at = ((size_t)row * (size_t)width + (size_t)col) * CHANNELS;
#pragma unroll
        for (int c = 0; c < CHANNELS; ++c) {
            if (w[c] != 0) atomicAdd(&tau_fixed[at + c], w[c]);
        }
    }
}
