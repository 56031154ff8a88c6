// Step 5b of the pipeline: one thread block per (tile, segment of at most `segment` medium
// particles). The block accumulates its splats in a shared-memory copy of the tile plus a
// border of `margin` pixels (the border w plus the CPU box's one-pixel widening), in 64-bit fixed
// point (CHANNELS values per pixel), then adds the non-zero values to the global tau with integer atomics: borders shared
// with neighbouring tiles are combined without races, and the sum is the same in any order.
// MEDIUM_LANES threads work on one splat (its box pixels strided over the group).
// Needs render_common.cuh before it.

#ifndef MEDIUM_LANES
#define MEDIUM_LANES 8
#endif

// Tiles are keys tile_base .. tile_base + n_tiles - 1 of the sort (tile_base = n_tiles for the
// wide-border pass of large splats); block b handles segment seg_start[tile_base] + b.
extern "C" __global__ void medium_tiles(const SplatC* __restrict__ sorted,
                                        const unsigned int* __restrict__ tile_start,
                                        const unsigned int* __restrict__ seg_start,
                                        unsigned int tile_base, unsigned int n_tiles,
                                        unsigned int segment, int tile_px,
                                        int tiles_x, int margin, int width, int height,
                                        double scale,
                                        unsigned long long* __restrict__ tau_fixed) {
    extern __shared__ unsigned long long region[];
    unsigned int block = seg_start[tile_base] + blockIdx.x;
    if (block >= seg_start[tile_base + n_tiles]) return;
    // The tile owning this segment: the last t with seg_start[t] <= block.
    unsigned int lo = tile_base, hi = tile_base + n_tiles;
    while (hi - lo > 1) {
        unsigned int mid = (lo + hi) / 2;
        if (seg_start[mid] <= block) lo = mid; else hi = mid;
    }
    unsigned int key = lo;
    unsigned int first = tile_start[key] + (block - seg_start[key]) * segment;
    unsigned int end = tile_start[key + 1];
    if (first + segment < end) end = first + segment;

    unsigned int tile = key - tile_base;
    int side = tile_px + 2 * margin;
    int x0 = (int)(tile % tiles_x) * tile_px - margin;
    int y0 = (int)(tile / tiles_x) * tile_px - margin;
    int cells = side * side * CHANNELS;
    for (int k = threadIdx.x; k < cells; k += blockDim.x) region[k] = 0ull;
    __syncthreads();

    int group = threadIdx.x / MEDIUM_LANES;
    int lane = threadIdx.x % MEDIUM_LANES;
    int groups = blockDim.x / MEDIUM_LANES;
    int img_x1 = width - 1, img_y1 = height - 1;
    int reg_x1 = x0 + side - 1, reg_y1 = y0 + side - 1;
    for (unsigned int p = first + group; p < end; p += groups) {
        SplatC s = sorted[p];
        int b[4];
        if (!pixel_box(s, x0 > 0 ? x0 : 0, reg_x1 < img_x1 ? reg_x1 : img_x1, y0 > 0 ? y0 : 0,
                       reg_y1 < img_y1 ? reg_y1 : img_y1, b)) {
            continue;
        }
        int bw = b[1] - b[0] + 1;
        int count = bw * (b[3] - b[2] + 1);
        for (int k = lane; k < count; k += MEDIUM_LANES) {
            int col = b[0] + k % bw;
            int row = b[2] + k / bw;
            unsigned long long w[CHANNELS];
            if (!splat_weight(s, col, row, scale, w)) continue;
            int at = ((row - y0) * side + (col - x0)) * CHANNELS;
#pragma unroll
            for (int c = 0; c < CHANNELS; ++c) {
                if (w[c] != 0) shared_add_u64(&region[at + c], w[c]);
            }
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < cells; k += blockDim.x) {
        unsigned long long v = region[k];
        if (v == 0) continue;
        int cell = k / CHANNELS;
        int col = x0 + cell % side;
        int row = y0 + cell / side;
        if (col < 0 || row < 0 || col >= width || row >= height) continue;
        atomicAdd(&tau_fixed[((size_t)row * (size_t)width + (size_t)col) * CHANNELS + (k % CHANNELS)],
                  v);
    }
}
