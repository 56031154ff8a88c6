// The wide-border pass of large splats (R < the wide border, centre on the image): one thread
// block of 1024 threads per (tile, segment of at most `segment` splats), the tile plus a border
// of `margin` pixels summed in shared memory in render_medium.cu's three-part layout (RED_SUMS),
// then flushed to the global tau with 64-bit atomics, as medium_tiles does. Needs
// render_common.cuh and render_medium.cu (MEDIUM_LANES 32, RED_SUMS 1) before it.
//
// What differs from medium_tiles with 32 lanes: the whole warp draws one splat, its box walked
// as one run of pixels (row after row, 32 consecutive pixels per step), where medium_tiles puts
// the lanes on 32 columns and walks the rows: a box 25 columns wide left 7 of 32 lanes idle on
// every row, one 38 wide 26 of 64 (WIDE_CHORDS: the run holds only each row's chord of the
// disc). Each lane's wx comes by a shuffle from the lane that made it for that column (one expf
// per column, as before), wy from the lane of its row. Lanes outside the disc add to their own
// word in a spare area past the region (never read), so no weight is zeroed, and the f32
// fixed-point scale is folded into rgb (wide_fold_exact).

// Columns of a box the pass supports: 3 words of 32 (the region side is at most 96 px: the
// assertion in tuning.rs; 84 px at the 32 px border).
#define WIDE_COL_WORDS 3

// Whether rn(wx * rn((rgb * 2^k) * wy)) equals rn(rn(wx * rn(rgb * wy)) * 2^k) for every value
// that can reach fixed_of<true>, so that the f32 product by the scale can be folded into rgb
// once per splat. Multiplying by 2^k commutes with rounding wherever both sides are normal f32
// numbers; with 0 <= k <= 124 every product below 2^-126 gives a fixed-point value below
// 2^(k - 126) <= 1/4 on both sides (0 after rounding to an integer), rgb * 2^k is exact (k >= 0:
// a subnormal rgb only gains exponent), and the caller uses it only where no splat of the batch
// can have a top part (rgb * 2^k < 2^41: no overflow). NaN stays NaN (0) on both sides.
__device__ __forceinline__ bool wide_fold_exact(double scale) {
    return f32_fixed_exact(scale) && scale >= 1.0 &&
           scale <= 21267647932558653966460912964485513216.0;  // 2^124
}

// The set-up of splat t that wide_walk and chord_walk share: rgb (times the scale with FOLD),
// wx of box columns lane, lane + 32, lane + 64 (one word with ONE_WORD, boxes of at most 32
// columns) and dx^2 of column lane; NaN past the box.
template <bool FOLD, bool ONE_WORD>
__device__ __forceinline__ void walk_setup(const TileSplat& t, int lane, int bx, int cols,
                                           float scale_f, float* rgb, float* wx_of,
                                           float& dx2_of) {
    const float nan = __int_as_float(0x7fffffff);
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) rgb[c] = FOLD ? t.rgb[c] * scale_f : t.rgb[c];
    dx2_of = nan;
#pragma unroll
    for (int k = 0; k < (ONE_WORD ? 1 : WIDE_COL_WORDS); ++k) {
        int c = 32 * k + lane;
        float dx = ((float)(bx + c) + 0.5f) - t.x_px;
        float dx2 = c < cols ? dx * dx : nan;
        wx_of[k] = 32 * k < cols ? expf(-dx2 * t.inv_sigma2) : nan;
        if (k == 0) dx2_of = dx2;
    }
}

// wx and dx^2 of box column col (lanes in warp-uniform control flow): by shuffles from the
// lanes that made them in walk_setup with ONE_WORD, else wx from the column's word and dx^2
// recomputed with walk_setup's operations (the same bits either way).
template <bool ONE_WORD>
__device__ __forceinline__ void column_at(const TileSplat& t, const float* wx_of, float dx2_of,
                                          int bx, int cols, int col, float& wx, float& dx2) {
    wx = shfl_warp(wx_of[0], col);
    if (ONE_WORD) {
        dx2 = shfl_warp(dx2_of, col);
    } else {
        float w1 = shfl_warp(wx_of[1], col);
        wx = col >= 32 ? w1 : wx;
        if (cols > 64) {
            float w2 = shfl_warp(wx_of[2], col);
            wx = col >= 64 ? w2 : wx;
        }
        float dx = ((float)(bx + col) + 0.5f) - t.x_px;
        dx2 = dx * dx;
    }
}

// Adds the splat's value at one pixel, rgb[c]·wy·wx per channel in fixed point, into the
// region's words at shared address a (the lane's spare pixel when it is outside the disc, then
// never read): 21-bit parts as red_shared adds, the part from bit 42 up into the global tau at
// (row, col) of the image with TOP_GLOBAL. Without TOP a value is below 2^42
// (may_have_top_part).
template <bool F32, bool FOLD, bool TOP>
__device__ __forceinline__ void add_pixel(const float* rgb, float wx, float wy, unsigned int a,
                                          bool inside, int row, int col, double scale,
                                          float scale_f, int width,
                                          unsigned long long* __restrict__ tau_fixed) {
#pragma unroll
    for (int c = 0; c < CHANNELS; ++c) {
        float e = rgb[c] * wy;
        float w = wx * e;
        unsigned long long v = FOLD ? __float2ull_rn(w) : fixed_of<F32>(w, scale, scale_f);
        red_shared(a + CHANNEL_BYTES * c, (unsigned int)(v & 0x1FFFFFull));
        if (TOP) {
            red_shared(a + CHANNEL_BYTES * c + 4u, (unsigned int)((v >> 21) & 0x1FFFFFull));
#if TOP_GLOBAL
            unsigned long long top_part = inside ? (v >> 42) << 42 : 0ull;
            if (top_part != 0) {
                // Pixel indices are below 2^30 (sides <= 32768 px).
                unsigned int pixel = (unsigned int)row * (unsigned int)width + (unsigned int)col;
                atomicAdd(&tau_fixed[(size_t)pixel * CHANNELS + c], top_part);
            }
#else
            red_shared(a + CHANNEL_BYTES * c + 8u, (unsigned int)(v >> 42));
#endif
        } else {
            red_shared(a + CHANNEL_BYTES * c + 4u, (unsigned int)(v >> 21));
        }
    }
#if !TOP_GLOBAL
    (void)inside;
    (void)row;
    (void)col;
    (void)width;
    (void)tau_fixed;
#endif
}

// Draws splat t over its box: columns bx .. bx + cols - 1 and rows by .. by + rows - 1 of the
// image, whose pixel (0, 0) is at region address box_addr (row_bytes a row). The box is walked
// in windows of at most 32 rows; in each, lane l starts at pixel l of the window (row-major,
// `cols` a row) and moves 32 pixels a step, `step_cols` columns and `step_rows` rows, one row
// more where the column wraps, its address following. wx comes by a shuffle from the lane that
// made it for the column (wx_of: columns lane, lane + 32, lane + 64), wy from the lane of the
// row (the shuffles read only the low 5 bits of the source lane). SHFL (boxes of at most 32
// columns): dx^2 and dy^2 by shuffles too; else each lane recomputes them from the same operands
// with the same operations as the lanes that made wx and wy: the same bits either way. Each
// choice alone for every box, on an H200: shuffles at R0 = 16 (10^8 particles at 2048², boxes
// mostly of one column word) 134.3 ms against 137.0, recomputing at F = 1 of the Splotch kit's
// file (wider boxes) 6.73 ms against 6.99.
// F32: fixed_of's f32 product; FOLD: rgb already times the scale (wide_fold_exact); TOP: the
// batch may have third parts (as in splat_separable_warp).
template <bool F32, bool FOLD, bool TOP, bool SHFL>
__device__ __forceinline__ void wide_walk(const TileSplat& t, int lane, int bx, int by, int cols,
                                          int rows, unsigned int box_addr,
                                          unsigned int row_bytes, double scale, float scale_f,
                                          unsigned int spare_addr, int width,
                                          unsigned long long* __restrict__ tau_fixed) {
    const float nan = __int_as_float(0x7fffffff);
    float inv_sigma2 = t.inv_sigma2;
    float rgb[CHANNELS];
    float wx_of[WIDE_COL_WORDS];
    float dx2_of;
    walk_setup<FOLD, SHFL>(t, lane, bx, cols, scale_f, rgb, wx_of, dx2_of);
    int step_rows = 32 / cols;
    int step_cols = 32 - step_rows * cols;
    int start_row = lane / cols;
    int start_col = lane - start_row * cols;
    unsigned int step_bytes = (unsigned int)step_rows * row_bytes + PIXEL_BYTES * (unsigned int)step_cols;
    unsigned int wrap_bytes = row_bytes - PIXEL_BYTES * (unsigned int)cols;
    for (int row_off = 0; row_off < rows; row_off += 32) {
        int win = rows - row_off < 32 ? rows - row_off : 32;
        float my_dy = ((float)(by + row_off + lane) + 0.5f) - t.y_px;
        float my_dy2 = lane < win ? my_dy * my_dy : nan;
        float my_wy = expf(-my_dy2 * inv_sigma2);
        int steps = (win * cols + 31) / 32;
        int col = start_col, row = start_row;
        unsigned int addr = box_addr + (unsigned int)(row_off + row) * row_bytes +
                            PIXEL_BYTES * (unsigned int)col;
#pragma unroll 1
        for (int s = 0; s < steps; ++s) {
            float wx, dx2, dy2;
            column_at<SHFL>(t, wx_of, dx2_of, bx, cols, col, wx, dx2);
            float wy = shfl_warp(my_wy, row);
            if (SHFL) {
                dy2 = shfl_warp(my_dy2, row);
            } else {
                float dy = ((float)(by + row_off + row) + 0.5f) - t.y_px;
                dy2 = dy * dy;
            }
            // A lane past the window: NaN fails the disc test. The disc test alone is the CPU's
            // pair of tests (see splat_separable_warp).
            dy2 = row < win ? dy2 : nan;
            bool inside = dx2 + dy2 <= t.cut2;
            unsigned int a = inside ? addr : spare_addr;
            add_pixel<F32, FOLD, TOP>(rgb, wx, wy, a, inside, by + row_off + row, bx + col, scale,
                                      scale_f, width, tau_fixed);
            col += step_cols;
            row += step_rows;
            addr += step_bytes;
            if (col >= cols) {
                col -= cols;
                row += 1;
                addr += wrap_bytes;
            }
        }
    }
}

// 1: wide_draw walks only each row's chord of the disc (chord_walk), where wide_walk walks
// the whole box and its lanes outside the disc add to their spare pixel: a disc covers pi/4 of
// its box, so about a fifth fewer steps, each dearer (the row of a pixel comes from an OR
// reduction and two population counts, the chord's start by one more shuffle). Measured on an
// H200 (10^8 particles, 2048^2, R0 = 16, main c922cba's binary in the same call, two rounds
// each): RGB wide pass 130.45 -> 127.09-127.17 ms (frame 138.4-138.5 -> 134.9-135.1 ms);
// `bench gui` (10^7 particles) wide_tiles median 4.52 -> 4.36 ms.
#ifndef WIDE_CHORDS
#define WIDE_CHORDS 1
#endif

// Whether box column c (image column bx + c) of a row at dy2 is in the disc: the per-pixel
// test of wide_walk and splat_separable_warp, with the same operands and operations.
__device__ __forceinline__ bool in_disc(const TileSplat& t, int bx, int c, float dy2) {
    float d = ((float)(bx + c) + 0.5f) - t.x_px;
    return d * d + dy2 <= t.cut2;
}

// As wide_walk, but over the pixels of the box that are in the disc, row by row: in each window
// of at most 32 rows, lane r finds row r's chord, the box columns [lo, hi] in the disc, and a
// warp scan numbers the window's chord pixels; lane l takes pixel l, l + 32, ... of that run.
// The chord is exact: the columns in the disc are an interval (dx = ((c + 0.5) - x) rounds
// monotonically in c, dx^2 in |dx|, dx^2 + dy^2 in dx^2), estimated from sqrt(cut^2 - dy^2),
// whose f32 errors are far below a pixel (the worst, cancellation in cut^2 - dy^2 near 0 with
// cut <= 45 px, moves an end by about 0.01 px), then moved by one column where the disc test
// of the column says the estimate is on the wrong side, as sample_range does for the box. So
// exactly the pixels wide_walk adds to the region are added, with the same values. Nonempty
// chords are consecutive rows (a column's rows in the disc are those with dy^2 below a bound,
// and dy^2 falls then rises along the rows: nested intervals), so the row of a pixel is the
// first nonempty row plus the rows that end before it: the rows ended in earlier steps and,
// in this step, the ends below the lane's pixel (one bit each in an OR-reduced word).
// NARROW (boxes of at most 32 columns): dx^2 by a shuffle, else recomputed (as wide_walk).
template <bool F32, bool FOLD, bool TOP, bool NARROW>
__device__ __forceinline__ void chord_walk(const TileSplat& t, int lane, int bx, int by,
                                           int cols, int rows, unsigned int box_addr,
                                           unsigned int row_bytes, double scale, float scale_f,
                                           unsigned int spare_addr, int width,
                                           unsigned long long* __restrict__ tau_fixed) {
    const float nan = __int_as_float(0x7fffffff);
    float inv_sigma2 = t.inv_sigma2;
    float rgb[CHANNELS];
    float wx_of[WIDE_COL_WORDS];
    float dx2_of;
    walk_setup<FOLD, NARROW>(t, lane, bx, cols, scale_f, rgb, wx_of, dx2_of);
    unsigned int below = (1u << lane) - 1u;  // the lanes below this one
    for (int row_off = 0; row_off < rows; row_off += 32) {
        int win = rows - row_off < 32 ? rows - row_off : 32;
        float my_dy = ((float)(by + row_off + lane) + 0.5f) - t.y_px;
        float my_dy2 = lane < win ? my_dy * my_dy : nan;
        float my_wy = expf(-my_dy2 * inv_sigma2);
        int lo = 0, hi = -1;
        if (lane < win) {
            // Box rows have dy^2 <= cut^2 (pixel_box), so the difference is >= 0.
            float half = sqrtf(t.cut2 - my_dy2);
            lo = sat_int(ceilf(t.x_px - half - 0.5f)) - bx;
            hi = sat_int(floorf(t.x_px + half - 0.5f)) - bx;
            if (in_disc(t, bx, lo - 1, my_dy2)) {
                lo -= 1;
            } else if (!in_disc(t, bx, lo, my_dy2)) {
                lo += 1;
            }
            if (in_disc(t, bx, hi + 1, my_dy2)) {
                hi += 1;
            } else if (!in_disc(t, bx, hi, my_dy2)) {
                hi -= 1;
            }
            lo = lo > 0 ? lo : 0;
            hi = hi < cols - 1 ? hi : cols - 1;
        }
        int len = hi >= lo ? hi - lo + 1 : 0;
        // Inclusive scan of the chord lengths: row r's pixels are run places [end - len, end).
        int end = len;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            int o;
            asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(o) : "r"(end), "r"(d));
            end += lane >= d ? o : 0;
        }
        int total = __float_as_int(shfl_warp(__int_as_float(end), 31));
        unsigned int nonempty = __ballot_sync(0xffffffffu, len > 0);
        if (nonempty == 0u) continue;  // warp-uniform
        int first_row = __ffs(nonempty) - 1;
        // Run place of the row's first pixel and its first column (< 96: tuning.rs), packed.
        unsigned int info = ((unsigned int)(end - len) << 8) | (unsigned int)(lo & 0xff);
        int done = 0;  // nonempty rows that end at or before this step's first place
        for (int q0 = 0; q0 < total; q0 += 32) {
            unsigned int ends = __reduce_or_sync(
                0xffffffffu, len > 0 && end > q0 && end <= q0 + 32 ? 1u << (end - q0 - 1) : 0u);
            int q = q0 + lane;
            // Past the run (q >= total): any row, not drawn.
            int row = (first_row + done + __popc(ends & below)) & 31;
            done += __popc(ends);
            unsigned int ri = __float_as_uint(shfl_warp(__uint_as_float(info), row));
            float wy = shfl_warp(my_wy, row);
            float dy2 = shfl_warp(my_dy2, row);
            int col = (int)(ri & 0xffu) + (q - (int)(ri >> 8));
            float wx, dx2;
            column_at<NARROW>(t, wx_of, dx2_of, bx, cols, col, wx, dx2);
            dy2 = q < total ? dy2 : nan;
            bool inside = dx2 + dy2 <= t.cut2;
            unsigned int a = inside ? box_addr + (unsigned int)(row_off + row) * row_bytes +
                                          PIXEL_BYTES * (unsigned int)col
                                    : spare_addr;
            add_pixel<F32, FOLD, TOP>(rgb, wx, wy, a, inside, by + row_off + row, bx + col, scale,
                                      scale_f, width, tau_fixed);
        }
    }
}

// Splat t (its box in region coordinates in t.packed) by the whole warp.
template <bool F32, bool FOLD, bool TOP>
__device__ __forceinline__ void wide_draw(const TileSplat& t, int lane, int x0, int y0, int side,
                                          double scale, float scale_f, unsigned int region_addr,
                                          unsigned int spare_addr, int width,
                                          unsigned long long* __restrict__ tau_fixed) {
    int box_x = (int)(t.packed & 0xffu), box_y = (int)((t.packed >> 8) & 0xffu);
    int cols = (int)((t.packed >> 16) & 0xffu), rows = (int)(t.packed >> 24);
    if (cols == 0 || rows == 0) return;  // the splat is the warp's: uniform
    unsigned int row_bytes = PIXEL_BYTES * (unsigned int)side;
    unsigned int box_addr = region_addr + (unsigned int)box_y * row_bytes + PIXEL_BYTES * (unsigned int)box_x;
#if WIDE_CHORDS
    if (cols <= 32) {
        chord_walk<F32, FOLD, TOP, true>(t, lane, x0 + box_x, y0 + box_y, cols, rows, box_addr,
                                         row_bytes, scale, scale_f, spare_addr, width, tau_fixed);
    } else {
        chord_walk<F32, FOLD, TOP, false>(t, lane, x0 + box_x, y0 + box_y, cols, rows, box_addr,
                                          row_bytes, scale, scale_f, spare_addr, width, tau_fixed);
    }
#else
    if (cols <= 32) {
        wide_walk<F32, FOLD, TOP, true>(t, lane, x0 + box_x, y0 + box_y, cols, rows, box_addr,
                                        row_bytes, scale, scale_f, spare_addr, width, tau_fixed);
    } else {
        wide_walk<F32, FOLD, TOP, false>(t, lane, x0 + box_x, y0 + box_y, cols, rows, box_addr,
                                         row_bytes, scale, scale_f, spare_addr, width, tau_fixed);
    }
#endif
}

// One block per segment of a tile (tile_segment in render_medium.cu; tile_base = n_tiles).
// Dynamic shared memory: the region of
// side^2 pixels, then 32 spare pixels (one per lane) for the adds of lanes outside the disc.
extern "C" __global__ void TILE_LAUNCH_BOUNDS wide_tiles(const SplatC* __restrict__ sorted,
                                        const unsigned int* __restrict__ tile_start,
                                        const unsigned int* __restrict__ seg_start,
                                        unsigned int tile_base, unsigned int n_tiles,
                                        unsigned int segment, int tile_px,
                                        int tiles_x, int margin, int width, int height,
                                        double scale,
                                        unsigned long long* __restrict__ tau_fixed) {
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

    int img_x1 = width - 1, img_y1 = height - 1;
    int reg_x1 = x0 + side - 1, reg_y1 = y0 + side - 1;
    // Warp w takes the segment's splats w, w + warps, ... in batches of 32: lane l loads batch
    // splat l and makes its set-up, then the warp draws the batch's splats one by one.
    int lane = (int)(threadIdx.x & 31u);
    unsigned int warp = threadIdx.x / 32u;
    unsigned int warps = blockDim.x / 32u;
    unsigned int total = end > first ? end - first : 0u;
    unsigned int warp_splats = total > warp ? (total - warp + warps - 1u) / warps : 0u;
    int batches = warp_max((int)((warp_splats + 31u) / 32u));
    unsigned int region_addr = (unsigned int)__cvta_generic_to_shared(region);
    unsigned int spare_addr = region_addr + 4u * (unsigned int)words + PIXEL_BYTES * (unsigned int)lane;
    bool f32 = f32_fixed_exact(scale);
    bool fold = wide_fold_exact(scale);
    float scale_f = (float)scale;
    for (int batch = 0; batch < batches; ++batch) {
        unsigned int batch_first = (unsigned int)batch * 32u;  // < warp_splats
        unsigned int i = batch_first + (unsigned int)lane;
        bool valid = i < warp_splats;
        SplatC s = sorted[first + warp + (valid ? i : batch_first) * warps];
        int b[4] = {0, 0, 0, 0};
        valid = pixel_box(s, x0 > 0 ? x0 : 0, reg_x1 < img_x1 ? reg_x1 : img_x1,
                          y0 > 0 ? y0 : 0, reg_y1 < img_y1 ? reg_y1 : img_y1, b) &&
                valid;
        TileSplat mine = tile_splat(s, b, valid, x0, y0);
        bool any_top = __any_sync(0xffffffffu, valid && may_have_top_part(s, scale));
        unsigned int left = warp_splats - batch_first;
        int in_batch = warp_max(left < 32u ? (int)left : 32);
        for (int step = 0; step < in_batch; ++step) {
            TileSplat t = shfl_tile_splat(mine, step);
            if (any_top) {
                if (f32) {
                    wide_draw<true, false, true>(t, lane, x0, y0, side, scale, scale_f,
                                                 region_addr, spare_addr, width, tau_fixed);
                } else {
                    wide_draw<false, false, true>(t, lane, x0, y0, side, scale, scale_f,
                                                  region_addr, spare_addr, width, tau_fixed);
                }
            } else if (fold) {
                wide_draw<true, true, false>(t, lane, x0, y0, side, scale, scale_f, region_addr,
                                             spare_addr, width, tau_fixed);
            } else if (f32) {
                wide_draw<true, false, false>(t, lane, x0, y0, side, scale, scale_f, region_addr,
                                              spare_addr, width, tau_fixed);
            } else {
                wide_draw<false, false, false>(t, lane, x0, y0, side, scale, scale_f, region_addr,
                                               spare_addr, width, tau_fixed);
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
