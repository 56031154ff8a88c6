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
#if DIRECT_IN_CLASSIFY
    // Every lane of the warp reaches this (the grid's threads are whole warps).
    // The scale test is the same for every thread: a uniform branch.
    if (f32_fixed_exact(scale)) {
        direct_splat<true>(view, s, key == KEY_SMALL, scale, (float)scale, tau_fixed);
    } else {
        direct_splat<false>(view, s, key == KEY_SMALL, scale, (float)scale, tau_fixed);
    }
#else
    (void)scale;
    (void)tau_fixed;
#endif
    // Warp-aggregated histogram: clustered particles that are neighbours in memory often share
    // a tile, so one atomic per distinct key per warp.
    unsigned int peers = __match_any_sync(0xffffffffu, key);
    int lane = threadIdx.x & 31;
    if (key < KEY_SMALL && lane == __ffs(peers) - 1) {
        atomicAdd(&tile_count[key], (unsigned int)__popc(peers));
    }
    __syncthreads();
    if (threadIdx.x < 4 && block_count[threadIdx.x] != 0) {
        atomicAdd(&class_count[threadIdx.x], (unsigned long long)block_count[threadIdx.x]);
    }
}
