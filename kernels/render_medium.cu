// Step 5b of the pipeline: one thread block per (tile, segment of at most `segment` medium
// particles). The block accumulates its splats in a shared-memory copy of the tile plus a
// border of `margin` pixels (the border w plus the CPU box's one-pixel widening), in 64-bit fixed
// point (CHANNELS values per pixel), then flushes it to the global tau. Borders shared with
// neighbouring tiles are combined without races in one of two ways (`ring_mode`, measured in
// BENCHMARKS.md, session 4): 0 = every non-zero value by a 64-bit global atomic; 1 = border
// buffers: the ring outside the tile goes to the block's own slot of `slots` (plain stores) and
// `combine_borders` adds the slots into tau afterwards, one thread per pixel; the tile itself is
// a plain read-add-write when the block is the tile's only one, else an atomic. Integer sums: the
// same bits in any order. MEDIUM_LANES threads work on one splat (its box pixels strided over
// the group). Needs render_common.cuh before it.

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

// 1: the shared region holds each 64-bit value as three 32-bit words of 21-bit parts
// (v = p0 + p1 * 2^21 + p2 * 2^42), added with native 32-bit shared atomics whose result is not
// used (no compare-and-swap loop, no wait for the returned value). Exact while no word overflows:
// a block adds at most `segment` <= 2048 = 2^11 splats, each at most once per pixel, and every
// part is < 2^21, so each word stays < 2^32; the loader uses it only when segment <= 2048.
// The region is then 12 bytes per value instead of 8.
#ifndef RED_SUMS
#define RED_SUMS 0
#endif

#if RED_SUMS
#define REGION_WORDS 3
#else
#define REGION_WORDS 2
#endif

// region[at] += v, `values` = values in the region (the stride between the parts).
__device__ __forceinline__ void region_add(unsigned int* region, int values, int at,
                                           unsigned long long v) {
#if RED_SUMS
    unsigned int p0 = (unsigned int)(v & 0x1FFFFFull);
    unsigned int p1 = (unsigned int)((v >> 21) & 0x1FFFFFull);
    unsigned int p2 = (unsigned int)(v >> 42);
    if (p0 != 0) atomicAdd(&region[at], p0);
    if (p1 != 0) atomicAdd(&region[values + at], p1);
    if (p2 != 0) atomicAdd(&region[2 * values + at], p2);
#else
    (void)values;
    shared_add_u64(reinterpret_cast<unsigned long long*>(region) + at, v);
#endif
}

// The 64-bit sum at value `at`.
__device__ __forceinline__ unsigned long long region_get(const unsigned int* region, int values,
                                                         int at) {
#if RED_SUMS
    return (unsigned long long)region[at] + ((unsigned long long)region[values + at] << 21) +
           ((unsigned long long)region[2 * values + at] << 42);
#else
    (void)values;
    return reinterpret_cast<const unsigned long long*>(region)[at];
#endif
}

// Index of region cell (cx, cy) in the ring outside the tile (cells side^2 - tile^2): the
// `margin` rows above, then per tile row its `margin` cells left and right, then the rows below.
__device__ __forceinline__ int ring_index(int cx, int cy, int tile_px, int margin, int side) {
    if (cy < margin) return cy * side + cx;
    if (cy >= margin + tile_px) {
        return margin * side + 2 * margin * tile_px + (cy - margin - tile_px) * side + cx;
    }
    return margin * side + (cy - margin) * 2 * margin + (cx < margin ? cx : cx - tile_px);
}

#if SEPARABLE_WEIGHTS
// Adds splat `s`, box b (inside the region), to the shared region; called by the MEDIUM_LANES
// lanes of one group (mask `group_mask`) together: every loop bound below is the same for all
// of them, so the shuffles see the whole group.
__device__ __forceinline__ void splat_separable(const SplatC& s, const int* b, int lane,
                                                unsigned int group_mask, int x0, int y0,
                                                int side, double scale, unsigned int* region,
                                                int values) {
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
                    if (v != 0) region_add(region, values, at + c, v);
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
                                        unsigned long long* __restrict__ tau_fixed,
                                        int ring_mode,
                                        unsigned long long* __restrict__ slots) {
    // 8-byte aligned (the 64-bit layout reads it as unsigned long long).
    extern __shared__ unsigned long long region_u64[];
    unsigned int* region = reinterpret_cast<unsigned int*>(region_u64);
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
    int values = side * side * CHANNELS;
    for (int k = threadIdx.x; k < values * REGION_WORDS; k += blockDim.x) region[k] = 0u;
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
        splat_separable(s, b, lane, group_mask, x0, y0, side, scale, region, values);
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
                if (w[c] != 0) region_add(region, values, at + c, w[c]);
            }
        }
#endif
    }
    __syncthreads();
    // Border buffers: this block's slot holds its ring values; the tile's own pixels need no
    // atomic when no other block adds to them.
    int ring_values = (side * side - tile_px * tile_px) * CHANNELS;
    unsigned long long* slot = slots + (size_t)block * (size_t)ring_values;
    bool only_block = seg_start[key + 1] - seg_start[key] == 1;
    for (int k = threadIdx.x; k < values; k += blockDim.x) {
        unsigned long long v = region_get(region, values, k);
        int cell = k / CHANNELS;
        int cx = cell % side, cy = cell / side;
        bool inside_tile = cx >= margin && cx < margin + tile_px && cy >= margin &&
                           cy < margin + tile_px;
        if (ring_mode == 1 && !inside_tile) {
            // Every ring value is written (zeros too): slots are never cleared.
            slot[ring_index(cx, cy, tile_px, margin, side) * CHANNELS + k % CHANNELS] = v;
            continue;
        }
        if (v == 0) continue;
        int col = x0 + cx;
        int row = y0 + cy;
        if (col < 0 || row < 0 || col >= width || row >= height) continue;
        unsigned long long* at =
            &tau_fixed[((size_t)row * (size_t)width + (size_t)col) * CHANNELS + (k % CHANNELS)];
        if (ring_mode == 1 && only_block) {
            *at += v;
        } else {
            atomicAdd(at, v);
        }
    }
}

// The second pass of the border buffers (ring_mode 1): one thread per pixel adds the ring values
// that the blocks of every neighbouring tile (within ceil(margin / tile) tiles) left in their
// slots for it. Runs after `medium_tiles` on the same stream; no two threads touch one pixel.
extern "C" __global__ void combine_borders(const unsigned long long* __restrict__ slots,
                                           const unsigned int* __restrict__ seg_start,
                                           int tile_px, int tiles_x, int tiles_y, int margin,
                                           int width, int height,
                                           unsigned long long* __restrict__ tau_fixed) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (unsigned int)width * (unsigned int)height) return;
    int x = (int)(i % (unsigned int)width), y = (int)(i / (unsigned int)width);
    int tx = x / tile_px, ty = y / tile_px;
    int side = tile_px + 2 * margin;
    int ring_values = (side * side - tile_px * tile_px) * CHANNELS;
    int reach = (margin + tile_px - 1) / tile_px;
    unsigned long long acc[CHANNELS];
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) acc[c] = 0ull;
    for (int dy = -reach; dy <= reach; ++dy) {
        int ny = ty + dy;
        if (ny < 0 || ny >= tiles_y) continue;
        int cy = y - (ny * tile_px - margin);
        if (cy < 0 || cy >= side) continue;
        for (int dx = -reach; dx <= reach; ++dx) {
            int nx = tx + dx;
            if ((dx == 0 && dy == 0) || nx < 0 || nx >= tiles_x) continue;
            int cx = x - (nx * tile_px - margin);
            if (cx < 0 || cx >= side) continue;
            unsigned int key = (unsigned int)(ny * tiles_x + nx);
            size_t at = (size_t)ring_index(cx, cy, tile_px, margin, side) * CHANNELS;
            for (unsigned int b = seg_start[key]; b < seg_start[key + 1]; ++b) {
                const unsigned long long* v = slots + (size_t)b * (size_t)ring_values + at;
#pragma unroll
                for (int c = 0; c < CHANNELS; ++c) acc[c] += v[c];
            }
        }
    }
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) {
        if (acc[c] != 0) tau_fixed[(size_t)i * CHANNELS + c] += acc[c];
    }
}
