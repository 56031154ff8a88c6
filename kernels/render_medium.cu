// Step 5b of the pipeline: one thread block per (tile, segment of at most `segment` medium
// particles). The block accumulates its splats in a shared-memory copy of the tile plus a
// border of `margin` pixels (the border w plus the CPU box's one-pixel widening), in 64-bit fixed
// point (CHANNELS values per pixel), then flushes every non-zero value to the global tau with a
// 64-bit atomic, so borders shared with neighbouring tiles combine without races. Integer sums:
// the same bits in any order. MEDIUM_LANES threads work on one splat. Needs render_common.cuh
// before it.

// 1: each row of the tile passes shuffles only wy to the group, and the lanes make dy^2 and
// rgb * wy themselves (splat_separable_warp), rather than shuffling dy^2 and the CHANNELS
// products. RGB only: measured on an H200 (10^8 particles, 2048^2, together with fixed_of's f32
// product), the RGB medium pass went 17.5 -> 15.3 ms at R0 = 4 and the wide pass 192 -> 164 ms
// at R0 = 16, while the grey passes went 7.9 -> 8.7 and 87 -> 96 ms.
#define SHFL_WY_ONLY (CHANNELS > 1)

#ifndef MEDIUM_LANES
#define MEDIUM_LANES 8
#endif

// 1: the shared region holds each 64-bit value as adjacent 32-bit words of 21-bit parts
// (v = p0 + p1 * 2^21 + p2 * 2^42, so that one address with immediate offsets reaches every
// part), added with native 32-bit shared atomics whose result is not used (no compare-and-swap
// loop, no wait for the returned value). Exact while no word overflows: a block adds at most
// `segment` <= 2048 = 2^11 splats, each at most once per pixel, and every part is < 2^21, so
// each word stays < 2^32; the loader uses it only when segment <= 2048.
#ifndef RED_SUMS
#define RED_SUMS 0
#endif

// 1: warp w of a tile block takes the block's runs of 32 consecutive splats w, w + warps, ...
// (lane l loads splat l of the run), rather than splats w, w + warps, w + 2 warps, ...: the
// warp's 28-byte records are then one contiguous span, where the strided loads used 4 of every
// 32 bytes of each sector they touched. In a step the groups draw the run's splats g * steps +
// step (g: the group), so that, as before, the splats drawn together are apart in the sort
// (nearby splats would add to the same shared words in one instruction). Medium pass only:
// the wide pass's blocks spread a short segment over all 32 warps (see WIDE_SEGMENT), and it
// was not measured with runs. Measured on an H200 (10^8 particles, 2048^2, R0 = 4, main
// a93ffc3 in the same call): RGB medium pass 15.3-15.4 -> 14.4 ms, grey 7.9 -> 7.5 ms.
#ifndef CHUNK_LOADS
#define CHUNK_LOADS (MEDIUM_LANES < 32)
#endif

// 1 (with CHUNK_LOADS): the groups of a warp draw the run's splats in order of drawing cost
// (column blocks of MEDIUM_LANES, then rows; batch_order), four of like cost a step, rather
// than in the run's order. A step's loops run to the largest box of its groups (warp_max), so
// a group with a smaller box adds zeros to its idle word meanwhile. A CPU count of the pass's
// loops on the clustered scene at R0 = 4 (2048^2): 0.87x the row steps at 10^8 particles
// (0.79x at 10^7). Measured on an H200 (10^8 particles, 2048^2, R0 = 4, main c922cba's binary
// in the same call, two rounds each): RGB medium pass 14.45-14.47 -> 13.57-13.58 ms (frame
// 20.0 -> 19.2-19.3 ms), grey 7.49-7.51 -> 7.28-7.29 ms. Which group draws a splat does not
// change its values, and the sums are integers: the same tau bits.
#ifndef COST_ORDER
#define COST_ORDER CHUNK_LOADS
#endif

// Tried and slower, so not kept (H200, 10^8 particles, 2048^2, R0 = 4, 2026-11-29; the
// variants in one process with cases alternating, main 8ff039c's binary in the same call): one
// splat per warp with the lanes on a 4 x 8 pixel block of its box, so that the 32 words of each
// shared add lie in 32 banks at the 36 px side (lanes outside the disc adding 0 to a word of
// their own bank), took the RGB medium pass 14.4 -> 20.5 ms and the grey one 7.5 -> 15.6 ms;
// with the set-ups staged in shared memory instead of shuffled, 21.5 ms; 8 x 4 lanes, 23.1 ms;
// 4 x 8 at 6 blocks/SM (40 registers), 20.8 ms. Likely cause: medium splats are mostly a few
// pixels across, so a warp per splat leaves most lanes idle and pays the set-up shuffles and
// the loop overhead per splat instead of per four. The 2-way conflicts that ncu reports for
// about half of the shared-load wavefronts are the flush's loads: 10.7 M wavefronts in a launch
// of 9.0 M cycles on 132 SMs, under 1 % of the L1's cycles, so no flush layout can pay either.
// Untried: each lane still loads its 28-byte record as seven 4-byte loads (ncu: 4.5 of each
// 32-byte sector used a request); 16-byte loads of the warp's contiguous span, handed to the
// lanes by shuffles, would cut those L1 requests.

// The three-part layout per pixel. Grey: the one value's three words (12 bytes). RGB: p0 and p1
// of each channel (8 bytes a channel) and one spare word, 28 bytes, where nine words took 36:
// the third part (v >= 2^42 needs a splat carrying about 1/2^20 of the frame's bound, rare) is
// added straight to the global tau instead (TOP_GLOBAL), so that the region is 22 % smaller
// (more blocks per SM, a wider border for the wide pass). The odd word count per pixel keeps
// the lanes' neighbouring pixels in distinct banks. Rust mirrors PIXEL_BYTES (launch.rs).
#if CHANNELS > 1
#define TOP_GLOBAL 1
#define CHANNEL_BYTES 8
#define PIXEL_BYTES (8 * CHANNELS + 4)
#else
#define TOP_GLOBAL 0
#define CHANNEL_BYTES 12
#define PIXEL_BYTES 12
#endif

// Value `at` (pixel * CHANNELS + channel) of the 64-bit-word region += v.
__device__ __forceinline__ void region_add(unsigned int* region, int at, unsigned long long v) {
    shared_add_u64(reinterpret_cast<unsigned long long*>(region) + at, v);
}

// The region's sum for channel c of pixel `cell` (without the third part where TOP_GLOBAL
// added it to the global tau).
__device__ __forceinline__ unsigned long long region_get(const unsigned int* region, int cell,
                                                         int c) {
#if RED_SUMS
    const unsigned int* w = region + (cell * PIXEL_BYTES + c * CHANNEL_BYTES) / 4;
    unsigned long long v = (unsigned long long)w[0] + ((unsigned long long)w[1] << 21);
#if !TOP_GLOBAL
    v += (unsigned long long)w[2] << 42;
#endif
    return v;
#else
    return reinterpret_cast<const unsigned long long*>(region)[cell * CHANNELS + c];
#endif
}

// 32-bit words of the region of side^2 pixels.
__device__ __forceinline__ int region_words(int side) {
#if RED_SUMS
    return side * side * (PIXEL_BYTES / 4);
#else
    return side * side * CHANNELS * 2;
#endif
}

// The value of `v` at lane `src` of this lane's MEDIUM_LANES-lane segment, with the full-warp
// mask: shfl.sync written out, because the intrinsic compiles to a convergence check (BRA.DIV)
// before every shuffle; every caller is in warp-uniform control flow, so the mask is exact.
__device__ __forceinline__ float shfl_segment(float v, int src) {
    float out;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, %3, 0xffffffff;"
                 : "=f"(out)
                 : "f"(v), "r"(src), "n"(((32 - MEDIUM_LANES) << 8) | 0x1f));
    return out;
}

// [addr] += v on a 32-bit shared-memory word (32-bit shared address), as a reduction (`red`:
// the old value is not returned). Unconditional: a lane with nothing to add passes v = 0 and a
// harmless address, because ptxas turns every predicated shared atomic into a branch with a
// BSSY/BSYNC divergence region (with predicated atomics, control flow was a quarter of this
// kernel's warp instructions).
__device__ __forceinline__ void red_shared(unsigned int addr, unsigned int v) {
    asm volatile("red.shared.add.u32 [%0], %1;" : : "r"(addr), "r"(v) : "memory");
}

// The set-up of one splat for the tile pass, made by one lane for the splat it loaded and
// handed by shuffles to the group that draws it (rather than every lane of the group repeating
// it). `packed`: the box in region coordinates, x | y << 8 | columns << 16 |
// rows << 24 (0 columns and rows: nothing to draw); bytes suffice, since a region side is
// at most 160 (side^2 * 8 bytes <= MAX_TILE_SHARED_BYTES = 200 KiB, launch.rs).
struct TileSplat {
    float x_px;
    float y_px;
    float cut2;
    float inv_sigma2;
    float rgb[CHANNELS];
    unsigned int packed;
};

__device__ __forceinline__ TileSplat tile_splat(const SplatC& s, const int* b, bool valid, int x0,
                                                int y0) {
    TileSplat t;
    t.x_px = s.x_px;
    t.y_px = s.y_px;
    t.cut2 = s.cut_px * s.cut_px;
    t.inv_sigma2 = 1.0f / (s.sigma_px * s.sigma_px);
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) t.rgb[c] = s.rgb[c];
    t.packed = valid ? (unsigned int)(b[0] - x0) | (unsigned int)(b[2] - y0) << 8 |
                           (unsigned int)(b[1] - b[0] + 1) << 16 |
                           (unsigned int)(b[3] - b[2] + 1) << 24
                     : 0u;
    return t;
}

// `v` of lane `src` of the warp (full mask; warp-uniform control flow, as shfl_segment).
__device__ __forceinline__ float shfl_warp(float v, int src) {
    float out;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(out) : "f"(v), "r"(src));
    return out;
}

// For lane p, the lane whose splat is the p-th costliest of the warp's batch (t: each lane's
// set-up; no box: cost 0, last). Cost: column blocks of MEDIUM_LANES, then rows, as the
// group's loops in splat_separable_warp take them. A bitonic sort over the warp (15
// butterfly shuffles, warp-uniform control flow) of (cost descending, then the lanes in the
// order 0, 4, 8, ..., 28, 1, 5, ...: splats of equal cost drawn together are apart in the
// run, as before). Box sides are at most 160 px (TileSplat), so the key fits 16 bits.
__device__ __forceinline__ int batch_order(const TileSplat& t, int warp_lane) {
    unsigned int cols = (t.packed >> 16) & 0xffu, rows = t.packed >> 24;
    unsigned int cost = (cols + MEDIUM_LANES - 1u) / MEDIUM_LANES * 256u + rows;
    unsigned int tie = ((unsigned int)(warp_lane & 3) << 3) | ((unsigned int)warp_lane >> 2);
    unsigned int v = ((0xffffu - cost) << 5) | tie;
#pragma unroll
    for (int k = 2; k <= 32; k <<= 1) {
#pragma unroll
        for (int j = k >> 1; j > 0; j >>= 1) {
            unsigned int o;
            asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                         : "=r"(o)
                         : "r"(v), "r"(j));
            // Ascending over the lanes (k = 32: every lane keeps the ascending choice).
            bool low = ((warp_lane & j) == 0) == ((warp_lane & k) == 0);
            v = low ? (o < v ? o : v) : (o > v ? o : v);
        }
    }
    unsigned int tie_at = v & 31u;
    return (int)(((tie_at & 7u) << 2) | (tie_at >> 3));
}

__device__ __forceinline__ TileSplat shfl_tile_splat(const TileSplat& t, int src) {
    TileSplat o;
    o.x_px = shfl_warp(t.x_px, src);
    o.y_px = shfl_warp(t.y_px, src);
    o.cut2 = shfl_warp(t.cut2, src);
    o.inv_sigma2 = shfl_warp(t.inv_sigma2, src);
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) o.rgb[c] = shfl_warp(t.rgb[c], src);
    o.packed = __float_as_uint(shfl_warp(__uint_as_float(t.packed), src));
    return o;
}

// Whether splat rgb can have a top part (v >= 2^42) at all: every weight is wx * (rgb * wy)
// with wx, wy = expf(<= 0) within 2 ulp of a value <= 1, so w < 2 rgb and v <= rn(2 rgb *
// scale) (rgb * 2^k exact in f64), below 2^42 when rgb * scale < 2^41 (NaN rgb gives v = 0).
__device__ __forceinline__ bool may_have_top_part(const SplatC& s, double scale) {
    bool top = false;
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) top = top || (double)s.rgb[c] * scale >= 2199023255552.0;
    return top;
}

// Adds the splats of the MEDIUM_LANES-lane groups of one warp to the shared region, all groups
// together: t = this group's splat (0 columns and rows: none). The lanes of a
// group own columns of their splat's box (wx: one expf per column) and walk its rows in steps
// of MEDIUM_LANES: lane j computes dy^2 and rgb * wy for row step + j (one expf per row and
// column block) and the group reads them by shuffles. Every loop bound is the warp's largest
// (`warp_max`), so the loops are warp-uniform and the shuffles use the full mask (plain SHFL;
// a group mask compiled to MATCH.ANY + REDUX + VOTE before each one); a lane outside its box
// carries dx^2 or dy^2 = NaN, which fails the disc test. The disc test dx^2 + dy^2 <= cut^2
// alone is the CPU's pair of tests (splat_cpu.rs `splat_one`: dy^2 > cut^2 rejects the row,
// then dx^2 + dy^2 <= cut^2): dx^2 >= 0, so fl(dx^2 + dy^2) >= dy^2 and a row with
// dy^2 > cut^2 fails it too. The product wx * (rgb * wy) is the CPU's, so every value, and tau,
// is the same bits as with `splat_weight` per pixel.
// With TOP_GLOBAL, third parts go to tau_fixed (width px per row) at once. F32: fixed_of's f32
// product (the caller checks f32_fixed_exact).
template <bool F32>
__device__ __forceinline__ void splat_separable_warp(const TileSplat& t, int lane, int x0, int y0,
                                                     int side, double scale, float scale_f,
                                                     unsigned int region_addr,
                                                     unsigned int idle_addr, bool any_top,
                                                     unsigned int* region, int width,
                                                     unsigned long long* __restrict__ tau_fixed) {
    const float nan = __int_as_float(0x7fffffff);
    float cut2 = t.cut2;
    float inv_sigma2 = t.inv_sigma2;
    int box_x = (int)(t.packed & 0xffu), box_y = (int)((t.packed >> 8) & 0xffu);
    int cols = (int)((t.packed >> 16) & 0xffu), rows = (int)(t.packed >> 24);
    int max_cols = warp_max(cols);
    int max_rows = warp_max(rows);
#if RED_SUMS
    unsigned int row_bytes = PIXEL_BYTES * (unsigned int)side;
#if !TOP_GLOBAL
    (void)width;
    (void)tau_fixed;
#endif
#else
    (void)width;
    (void)tau_fixed;
    (void)region_addr;
    (void)idle_addr;
    (void)any_top;
#endif
    for (int col_off = 0; col_off < max_cols; col_off += MEDIUM_LANES) {
        int cx = box_x + col_off + lane;  // region column
        float dx = ((float)(x0 + cx) + 0.5f) - t.x_px;
        float dx2 = col_off + lane < cols ? dx * dx : nan;
        float wx = expf(-dx2 * inv_sigma2);
        for (int row_off = 0; row_off < max_rows; row_off += MEDIUM_LANES) {
            int my_row = y0 + box_y + row_off + lane;
            float dy = ((float)my_row + 0.5f) - t.y_px;
            float my_dy2 = row_off + lane < rows ? dy * dy : nan;
            float my_wy = expf(-my_dy2 * inv_sigma2);
#if !SHFL_WY_ONLY
            float my_e[CHANNELS];
#pragma unroll
            for (int c = 0; c < CHANNELS; ++c) my_e[c] = t.rgb[c] * my_wy;
#endif
            int row_steps = max_rows - row_off;
#if !RED_SUMS
            int row_stride = side * CHANNELS;
            int at = (box_y + row_off) * row_stride + cx * CHANNELS;
#else
            unsigned int row_addr =
                region_addr + PIXEL_BYTES * (unsigned int)((box_y + row_off) * side + cx);
            // Opaque to the optimiser: otherwise it keeps one precomputed address per row of
            // the step in registers across the loop (ptxas: 40 -> 48 registers).
            asm("" : "+r"(row_addr));
#endif
            // Row j of this step. SHFL_WY_ONLY: lane j's wy, shuffled to the group (one shuffle
            // a row instead of 1 + CHANNELS), and dy^2 and rgb * wy each lane makes itself from
            // the same operands with the same operations as lane j, so the same bits; else lane
            // j's dy^2 and rgb * wy, shuffled.
            // `top`: add the third parts (a constant at each call: two copies of the rows).
            auto add_row = [&](int j, bool top) {
#if SHFL_WY_ONLY
                float wy = shfl_segment(my_wy, j);
                float dyj = ((float)(y0 + box_y + row_off + j) + 0.5f) - t.y_px;
                float dy2 = row_off + j < rows ? dyj * dyj : nan;
                float e[CHANNELS];
#pragma unroll
                for (int c = 0; c < CHANNELS; ++c) e[c] = t.rgb[c] * wy;
#else
                float dy2 = shfl_segment(my_dy2, j);
                float e[CHANNELS];
#pragma unroll
                for (int c = 0; c < CHANNELS; ++c) e[c] = shfl_segment(my_e[c], j);
#endif
                bool inside = dx2 + dy2 <= cut2;  // false for NaN: outside the box
#if RED_SUMS
                // A lane outside the disc adds 0 to its own idle word, which changes nothing.
                unsigned int addr = inside ? row_addr + (unsigned int)j * row_bytes : idle_addr;
#endif
#pragma unroll
                for (int c = 0; c < CHANNELS; ++c) {
                    float w = wx * e[c];
#if RED_SUMS
                    w = inside ? w : 0.0f;
                    unsigned long long v = fixed_of<F32>(w, scale, scale_f);
                    // The 21-bit parts (see RED_SUMS) at immediate offsets; without a top part
                    // v < 2^42, so v >> 21 needs no mask.
                    red_shared(addr + CHANNEL_BYTES * c, (unsigned int)(v & 0x1FFFFFull));
                    if (top) {
                        red_shared(addr + CHANNEL_BYTES * c + 4u,
                                   (unsigned int)((v >> 21) & 0x1FFFFFull));
#if TOP_GLOBAL
                        // Only a lane inside the disc has v != 0, and its pixel is on the image
                        // (the box is clamped to it).
                        unsigned long long top_part = (v >> 42) << 42;
                        if (top_part != 0) {
                            // Pixel indices are below 2^30 (sides <= 32768 px).
                            unsigned int pixel = (unsigned int)(y0 + box_y + row_off + j) *
                                                     (unsigned int)width +
                                                 (unsigned int)(x0 + cx);
                            atomicAdd(&tau_fixed[(size_t)pixel * CHANNELS + c], top_part);
                        }
#else
                        red_shared(addr + CHANNEL_BYTES * c + 8u, (unsigned int)(v >> 42));
#endif
                    } else {
                        red_shared(addr + CHANNEL_BYTES * c + 4u, (unsigned int)(v >> 21));
                    }
#else
                    unsigned long long v = fixed_of<F32>(w, scale, scale_f);
                    if (inside && v != 0) region_add(region, at + j * row_stride + c, v);
                    (void)top;
#endif
                }
            };
            // Rows row_steps - 1 down to 0 of this step, entered once at the first (a
            // fall-through switch on the warp-uniform count: no bound test per row), in a copy
            // with and one without the third parts (any_top is warp-uniform).
            int steps = row_steps < MEDIUM_LANES ? row_steps : MEDIUM_LANES;
#define ROW_CASE(K, TOP) \
    case K:              \
        if (K <= MEDIUM_LANES) add_row(K - 1, TOP);
#define ROW_SWITCH(TOP)                                                                        \
    switch (steps) {                                                                           \
        ROW_CASE(32, TOP) ROW_CASE(31, TOP) ROW_CASE(30, TOP) ROW_CASE(29, TOP)                \
        ROW_CASE(28, TOP) ROW_CASE(27, TOP) ROW_CASE(26, TOP) ROW_CASE(25, TOP)                \
        ROW_CASE(24, TOP) ROW_CASE(23, TOP) ROW_CASE(22, TOP) ROW_CASE(21, TOP)                \
        ROW_CASE(20, TOP) ROW_CASE(19, TOP) ROW_CASE(18, TOP) ROW_CASE(17, TOP)                \
        ROW_CASE(16, TOP) ROW_CASE(15, TOP) ROW_CASE(14, TOP) ROW_CASE(13, TOP)                \
        ROW_CASE(12, TOP) ROW_CASE(11, TOP) ROW_CASE(10, TOP) ROW_CASE(9, TOP)                 \
        ROW_CASE(8, TOP) ROW_CASE(7, TOP) ROW_CASE(6, TOP) ROW_CASE(5, TOP) ROW_CASE(4, TOP)   \
        ROW_CASE(3, TOP) ROW_CASE(2, TOP) ROW_CASE(1, TOP) default : break;                    \
    }
#if MEDIUM_LANES <= 8
#define ROW_STEPS(TOP) ROW_SWITCH(TOP)
#else
            // Many lanes (the wide pass): a plain loop, since 16 or 32 unrolled rows take more
            // registers than the 1024-thread blocks allow (ptxas: up to 119).
#define ROW_STEPS(TOP)                                 \
    _Pragma("unroll 1") for (int j = 0; j < steps; ++j) { \
        add_row(j, TOP);                               \
    }
#endif
#if RED_SUMS
            if (any_top) {
                ROW_STEPS(true)
            } else {
                ROW_STEPS(false)
            }
#else
            ROW_STEPS(false)
#endif
#undef ROW_STEPS
#undef ROW_SWITCH
#undef ROW_CASE
        }
    }
}

// Launch bounds of the tile kernel, set by the Rust loader (kernels.rs, GREY_MEDIUM_MIN_BLOCKS):
// `__launch_bounds__(256, 6)` caps registers at 40 for 6 blocks per SM on the grey medium pass's
// own module; empty (the compiler's choice) elsewhere.
#ifndef TILE_LAUNCH_BOUNDS
#define TILE_LAUNCH_BOUNDS
#endif

// The segment a tile-pass block handles and its tile's region. Tiles are keys tile_base ..
// tile_base + n_tiles - 1 of the sort; block b takes segment seg_start[tile_base] + b, splats
// [first, end) of the sorted array, drawn into the region of side^2 pixels whose corner is
// (x0, y0). False for a block past the last segment. Shared by medium_tiles and render_wide.cu's
// wide_tiles.
struct TileSegment {
    unsigned int first, end;
    int x0, y0, side;
};

__device__ __forceinline__ bool tile_segment(const unsigned int* __restrict__ tile_start,
                                             const unsigned int* __restrict__ seg_start,
                                             unsigned int tile_base, unsigned int n_tiles,
                                             unsigned int segment, int tile_px, int tiles_x,
                                             int margin, TileSegment& seg) {
    unsigned int block = seg_start[tile_base] + blockIdx.x;
    if (block >= seg_start[tile_base + n_tiles]) return false;
    // The tile owning this segment: the last t with seg_start[t] <= block.
    unsigned int lo = tile_base, hi = tile_base + n_tiles;
    while (hi - lo > 1) {
        unsigned int mid = (lo + hi) / 2;
        if (seg_start[mid] <= block) lo = mid; else hi = mid;
    }
    unsigned int key = lo;
    seg.first = tile_start[key] + (block - seg_start[key]) * segment;
    seg.end = tile_start[key + 1];
    if (seg.first + segment < seg.end) seg.end = seg.first + segment;
    unsigned int tile = key - tile_base;
    seg.side = tile_px + 2 * margin;
    seg.x0 = (int)(tile % tiles_x) * tile_px - margin;
    seg.y0 = (int)(tile / tiles_x) * tile_px - margin;
    return true;
}

// One block per segment of a tile (tile_segment; tile_base = n_tiles for the wide-border pass
// of large splats).
extern "C" __global__ void TILE_LAUNCH_BOUNDS medium_tiles(const SplatC* __restrict__ sorted,
                                        const unsigned int* __restrict__ tile_start,
                                        const unsigned int* __restrict__ seg_start,
                                        unsigned int tile_base, unsigned int n_tiles,
                                        unsigned int segment, int tile_px,
                                        int tiles_x, int margin, int width, int height,
                                        double scale,
                                        unsigned long long* __restrict__ tau_fixed) {
    // 8-byte aligned (the 64-bit layout reads it as unsigned long long).
    extern __shared__ unsigned long long region_u64[];
    unsigned int* region = reinterpret_cast<unsigned int*>(region_u64);
    TileSegment seg;
    if (!tile_segment(tile_start, seg_start, tile_base, n_tiles, segment, tile_px, tiles_x, margin,
                      seg))
        return;
    unsigned int first = seg.first, end = seg.end;
    int side = seg.side, x0 = seg.x0, y0 = seg.y0;
    int values = side * side * CHANNELS;
    int words = region_words(side);
    for (int k = threadIdx.x; k < words; k += blockDim.x) region[k] = 0u;
    __syncthreads();

    int lane = threadIdx.x % MEDIUM_LANES;
    int img_x1 = width - 1, img_y1 = height - 1;
    int reg_x1 = x0 + side - 1, reg_y1 = y0 + side - 1;
    // Warp w of the block takes the segment's splats w, w + warps, w + 2 warps, ... (spread
    // over every warp even when the segment is short: a segment's last block may hold few of
    // its splats), or with CHUNK_LOADS its runs of 32 splats w, w + warps, ..., in batches of
    // 32: lane l loads batch splat l and makes its set-up (box,
    // 1 / sigma^2, ...), then the groups of the warp draw the batch's splats, 32 / MEDIUM_LANES
    // at a time, together (warp-uniform loops, see splat_separable_warp); a lane past the
    // warp's splats or with an empty box draws nothing. Batch and step counts go through
    // warp_max so that the compiler sees them uniform (no convergence checks before shuffles).
    const int per_step = 32 / MEDIUM_LANES;
    int warp_lane = (int)(threadIdx.x & 31u);
    int group_in_warp = warp_lane / MEDIUM_LANES;
    unsigned int warp = threadIdx.x / 32u;
    unsigned int warps = blockDim.x / 32u;
    unsigned int total = end > first ? end - first : 0u;
#if CHUNK_LOADS
    // Runs of 32 splats (see CHUNK_LOADS): run r starts at splat 32 r of the segment.
    unsigned int runs = (total + 31u) / 32u;
    unsigned int warp_runs = runs > warp ? (runs - warp + warps - 1u) / warps : 0u;
    int batches = warp_max((int)warp_runs);
#else
    unsigned int warp_splats = total > warp ? (total - warp + warps - 1u) / warps : 0u;
    int batches = warp_max((int)((warp_splats + 31u) / 32u));
#endif
    unsigned int region_addr = (unsigned int)__cvta_generic_to_shared(region);
    // A pixel per lane of the warp for the adds of 0 by lanes outside the disc (side >= 20, so
    // lane l's pixel l is in the region).
    unsigned int idle_addr = region_addr + PIXEL_BYTES * (unsigned int)warp_lane;
    // The same for every thread: a uniform branch per splat step.
    bool f32 = f32_fixed_exact(scale);
    float scale_f = (float)scale;
    for (int batch = 0; batch < batches; ++batch) {
#if CHUNK_LOADS
        // This warp's run warp + batch * warps (< runs, so run_first < total).
        unsigned int run_first = (warp + (unsigned int)batch * warps) * 32u;
        unsigned int i = run_first + (unsigned int)warp_lane;
        bool valid = i < total;
        SplatC s = sorted[first + (valid ? i : run_first)];
#else
        unsigned int batch_first = (unsigned int)batch * 32u;  // < warp_splats
        unsigned int i = batch_first + (unsigned int)warp_lane;
        bool valid = i < warp_splats;
        SplatC s = sorted[first + warp + (valid ? i : batch_first) * warps];
#endif
        int b[4] = {0, 0, 0, 0};
        valid = pixel_box(s, x0 > 0 ? x0 : 0, reg_x1 < img_x1 ? reg_x1 : img_x1,
                          y0 > 0 ? y0 : 0, reg_y1 < img_y1 ? reg_y1 : img_y1, b) &&
                valid;
        TileSplat mine = tile_splat(s, b, valid, x0, y0);
        // Whether any splat of the batch can have a top part: if none, every pixel skips
        // its third add.
        bool any_top = __any_sync(0xffffffffu, valid && may_have_top_part(s, scale));
#if COST_ORDER
        // The splats with a box come first in the order: only they need steps.
        int order = batch_order(mine, warp_lane);
        int in_batch = __popc(__ballot_sync(0xffffffffu, mine.packed != 0u));
#else
#if CHUNK_LOADS
        unsigned int left = total - run_first;
#else
        unsigned int left = warp_splats - batch_first;
#endif
        int in_batch = left < 32u ? (int)left : 32;
#endif
        int steps = warp_max((in_batch + per_step - 1) / per_step);
        for (int step = 0; step < steps; ++step) {
            // The lane whose splat this group draws in this step: COST_ORDER, the splat at
            // place step * per_step + group of the order; else group * steps + step <
            // per_step * steps <= 32 (steps <= 32 / per_step), or step * per_step + group.
#if COST_ORDER
            TileSplat t = shfl_tile_splat(
                mine, __float_as_int(shfl_warp(__int_as_float(order),
                                               step * per_step + group_in_warp)));
#elif CHUNK_LOADS
            TileSplat t = shfl_tile_splat(mine, group_in_warp * steps + step);
#else
            TileSplat t = shfl_tile_splat(mine, step * per_step + group_in_warp);
#endif
            if (f32) {
                splat_separable_warp<true>(t, lane, x0, y0, side, scale, scale_f, region_addr,
                                           idle_addr, any_top, region, width, tau_fixed);
            } else {
                splat_separable_warp<false>(t, lane, x0, y0, side, scale, scale_f, region_addr,
                                            idle_addr, any_top, region, width, tau_fixed);
            }
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < values; k += blockDim.x) {
        int cell = k / CHANNELS;
        unsigned long long v = region_get(region, cell, k % CHANNELS);
        if (v == 0) continue;
        int col = x0 + cell % side;
        int row = y0 + cell / side;
        if (col < 0 || row < 0 || col >= width || row >= height) continue;
        atomicAdd(&tau_fixed[((size_t)row * (size_t)width + (size_t)col) * CHANNELS + (k % CHANNELS)],
                  v);
    }
}
