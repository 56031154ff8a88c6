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

// 1: separable weights. The lanes of a group own columns of the splat's box (wx: one expf per
// column) and walk its rows in steps of MEDIUM_LANES: lane j computes dy^2 and rgb * wy for row
// step + j (one expf per row and column block) and the group shares them by shuffles. The
// inside test (dy^2 > cut^2, then dx^2 + dy^2 <= cut^2) and the product wx * (rgb * wy) are the
// CPU's (splat_cpu.rs `splat_one`), so every value, and tau, is the same bits as with
// `splat_weight` per pixel. Set by the Rust loader.
#ifndef SEPARABLE_WEIGHTS
#define SEPARABLE_WEIGHTS 0
#endif

#if SEPARABLE_WEIGHTS
// Adds splat `s`, box b (inside the region), to the shared region; called by the MEDIUM_LANES
// lanes of one group (mask `group_mask`) together: every loop bound below is the same for all
// of them, so the shuffles see the whole group.
__device__ __forceinline__ void splat_separable(const SplatC& s, const int* b, int lane,
                                                unsigned int group_mask, int x0, int y0,
                                                int side, double scale,
                                                unsigned long long* region) {
    float cut2 = s.cut_px * s.cut_px;
    float inv_sigma2 = 1.0f / (s.sigma_px * s.sigma_px);
    for (int col0 = b[0]; col0 <= b[1]; col0 += MEDIUM_LANES) {
        int col = col0 + lane;
        bool col_ok = col <= b[1];
        float dx = ((float)col + 0.5f) - s.x_px;
        float dx2 = dx * dx;
        float wx = expf(-dx2 * inv_sigma2);
        for (int row0 = b[2]; row0 <= b[3]; row0 += MEDIUM_LANES) {
            float dy = ((float)(row0 + lane) + 0.5f) - s.y_px;
            float my_dy2 = dy * dy;
            float my_wy = expf(-my_dy2 * inv_sigma2);
            float my_e[CHANNELS];
#pragma unroll
            for (int c = 0; c < CHANNELS; ++c) my_e[c] = s.rgb[c] * my_wy;
            int rows = b[3] - row0 + 1;
            if (rows > MEDIUM_LANES) rows = MEDIUM_LANES;
            for (int j = 0; j < rows; ++j) {
                float dy2 = __shfl_sync(group_mask, my_dy2, j, MEDIUM_LANES);
                float e[CHANNELS];
#pragma unroll
                for (int c = 0; c < CHANNELS; ++c) {
                    e[c] = __shfl_sync(group_mask, my_e[c], j, MEDIUM_LANES);
                }
                if (!col_ok || dy2 > cut2 || !(dx2 + dy2 <= cut2)) continue;
                int at = ((row0 + j - y0) * side + (col - x0)) * CHANNELS;
#pragma unroll
                for (int c = 0; c < CHANNELS; ++c) {
                    float w = wx * e[c];
                    unsigned long long v = __double2ull_rn((double)w * scale);
                    if (v != 0) shared_add_u64(&region[at + c], v);
                }
            }
        }
    }
}
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
    // The group's lanes within its warp (MEDIUM_LANES divides 32).
    unsigned int group_mask =
        (MEDIUM_LANES == 32 ? 0xffffffffu : ((1u << MEDIUM_LANES) - 1u))
        << ((threadIdx.x & 31) / MEDIUM_LANES * MEDIUM_LANES);
    (void)group_mask;
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
#if SEPARABLE_WEIGHTS
        splat_separable(s, b, lane, group_mask, x0, y0, side, scale, region);
#else
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
#endif
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
