// Step 2 of the GPU Splotch pipeline (Rivi et al. 2014; DESIGN §4): one thread per particle
// projects, sizes and classifies it. Writes a key per particle (tile id for medium, or
// KEY_SMALL / KEY_LARGE / KEY_INACTIVE), the per-tile histogram of medium particles and the
// class counts. Needs render_common.cuh before it.

extern "C" __global__ void classify(ViewC view, StyleC style, const float* __restrict__ pos, const float* __restrict__ h,
    const float* __restrict__ intensity, const float* __restrict__ colour,
    const float* __restrict__ palette,
                                    unsigned int n, int tile_px, int tiles_x,
                                    unsigned int* __restrict__ keys,
                                    unsigned int* __restrict__ tile_count,
                                    unsigned long long* __restrict__ class_count) {
    ParticlesC particles = {pos, h, intensity, colour, palette};
    __shared__ unsigned int block_count[4];
    if (threadIdx.x < 4) block_count[threadIdx.x] = 0;
    __syncthreads();
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int key = KEY_INACTIVE;
    if (i < n) {
        SplatC s;
        int cls = project_particle(view, style, particles, i, &s);
        if (cls == CLASS_MEDIUM) {
            // The centre lies on the image (x, y >= 0), so truncation is floor.
            int tx = ((int)s.x_px) / tile_px;
            int ty = ((int)s.y_px) / tile_px;
            key = (unsigned int)(ty * tiles_x + tx);
        } else if (cls == CLASS_SMALL) {
            key = KEY_SMALL;
        } else if (cls == CLASS_LARGE) {
            key = KEY_LARGE;
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
    __syncthreads();
    if (threadIdx.x < 4 && block_count[threadIdx.x] != 0) {
        atomicAdd(&class_count[threadIdx.x], (unsigned long long)block_count[threadIdx.x]);
    }
}
