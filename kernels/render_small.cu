// Step 4 of the pipeline: small particles (footprint box of one pixel), and medium ones with a
// box of a few pixels, are added straight into the global fixed-point tau with 64-bit integer
// atomics, with the weight the CPU gives them: the Gaussian at each pixel's sample point, over
// the CPU splatter's exact box with its disc test. tau_fixed holds CHANNELS values per pixel. Needs render_common.cuh before it.

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
    int b[4];
    if (!pixel_box(s, 0, view.width_px - 1, 0, view.height_px - 1, b)) return;
    for (int row = b[2]; row <= b[3]; ++row) {
        for (int col = b[0]; col <= b[1]; ++col) {
            unsigned long long w[CHANNELS];
            if (!splat_weight(s, col, row, scale, w)) continue;
            size_t at = ((size_t)row * (size_t)view.width_px + (size_t)col) * CHANNELS;
#pragma unroll
            for (int c = 0; c < CHANNELS; ++c) {
                if (w[c] != 0) atomicAdd(&tau_fixed[at + c], w[c]);
            }
        }
    }
}
