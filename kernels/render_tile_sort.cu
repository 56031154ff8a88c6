// Step 5a of the pipeline: counting sort of the medium particles by tile (O(N)): the exclusive
// prefix sum of the per-tile histogram (one block), then a scatter that writes each medium splat
// to its tile's range. The scatter also compacts the large splats for the CPU / the large kernel.
// Order inside a tile is not fixed, which does not matter: tau is summed in fixed point.
// Needs render_common.cuh before it.

#define SCAN_THREADS 1024
// Chunks of SCAN_THREADS tiles whose counts are loaded together before they are scanned, so
// that the loads' latencies overlap.
#define SCAN_BATCH 8

// Inclusive scans of two values at once over a warp (all 32 lanes active).
__device__ __forceinline__ void warp_inclusive_scan2(unsigned int& a, unsigned int& b,
                                                     unsigned int lane) {
#pragma unroll
    for (unsigned int d = 1; d < 32; d <<= 1) {
        unsigned int up_a = __shfl_up_sync(0xffffffffu, a, d);
        unsigned int up_b = __shfl_up_sync(0xffffffffu, b, d);
        if (lane >= d) {
            a += up_a;
            b += up_b;
        }
    }
}

// Exclusive scans of the tile counts (-> tile_start, cursor) and of the segments per tile,
// ceil(count / segment) (-> seg_start); entry n_tiles of each holds the total. Keys from
// `wide_from` on (the wide-border tiles) use `wide_segment`. One block of SCAN_THREADS threads
// walks the tiles in chunks of SCAN_THREADS consecutive ones (thread t takes tile base + t:
// coalesced loads), each chunk scanned by warp shuffles and a scan of the warp totals, on top
// of the running total of the chunks before. Integer sums: the same values as any other order.
// (The first version gave each thread 32 consecutive tiles and scanned the thread totals:
// strided loads, one block, 132 us a frame on an H200 at 2048^2, 2 * 16384 tiles.)
extern "C" __global__ void tile_scan(const unsigned int* __restrict__ tile_count,
                                     unsigned int n_tiles, unsigned int segment,
                                     unsigned int wide_from, unsigned int wide_segment,
                                     unsigned int* __restrict__ tile_start,
                                     unsigned int* __restrict__ cursor,
                                     unsigned int* __restrict__ seg_start) {
    // Per chunk: the warp totals, then (from warp 0) their exclusive prefixes and the chunk's
    // total. Two sets used in turn, so that chunk i + 2 rewrites a set only after every thread
    // has passed chunk i + 1's first barrier, and so has read chunk i's values.
    __shared__ unsigned int warp_count[2][SCAN_THREADS / 32];
    __shared__ unsigned int warp_seg[2][SCAN_THREADS / 32];
    __shared__ unsigned int chunk_count[2];
    __shared__ unsigned int chunk_seg[2];
    unsigned int t = threadIdx.x;
    unsigned int lane = t & 31u, warp = t >> 5;
    unsigned int run_count = 0, run_seg = 0;
    unsigned int set = 0;
    for (unsigned int batch = 0; batch < n_tiles; batch += SCAN_BATCH * SCAN_THREADS) {
        unsigned int counts[SCAN_BATCH];
#pragma unroll
        for (int j = 0; j < SCAN_BATCH; ++j) {
            unsigned int k = batch + j * SCAN_THREADS + t;
            counts[j] = k < n_tiles ? tile_count[k] : 0u;
        }
#pragma unroll
        for (int j = 0; j < SCAN_BATCH; ++j) {
            unsigned int k = batch + j * SCAN_THREADS + t;
            unsigned int c = counts[j];
            unsigned int seg = k < wide_from ? segment : wide_segment;
            unsigned int segs = (c + seg - 1) / seg;
            unsigned int in_count = c, in_seg = segs;
            warp_inclusive_scan2(in_count, in_seg, lane);
            if (lane == 31) {
                warp_count[set][warp] = in_count;
                warp_seg[set][warp] = in_seg;
            }
            __syncthreads();
            // Warp 0 turns the 32 warp totals (SCAN_THREADS / 32) into exclusive prefixes.
            if (warp == 0) {
                unsigned int wc = warp_count[set][lane], ws = warp_seg[set][lane];
                unsigned int ic = wc, is = ws;
                warp_inclusive_scan2(ic, is, lane);
                warp_count[set][lane] = ic - wc;
                warp_seg[set][lane] = is - ws;
                if (lane == 31) {
                    chunk_count[set] = ic;
                    chunk_seg[set] = is;
                }
            }
            __syncthreads();
            unsigned int ex_count = run_count + warp_count[set][warp] + in_count - c;
            unsigned int ex_seg = run_seg + warp_seg[set][warp] + in_seg - segs;
            if (k < n_tiles) {
                tile_start[k] = ex_count;
                cursor[k] = ex_count;
                seg_start[k] = ex_seg;
            }
            run_count += chunk_count[set];
            run_seg += chunk_seg[set];
            set ^= 1u;
        }
    }
    if (t == 0) {
        tile_start[n_tiles] = run_count;
        cursor[n_tiles] = run_count;
        seg_start[n_tiles] = run_seg;
    }
}

extern "C" __global__ void scatter(ViewC view, StyleC style, const float* __restrict__ pos, const float* __restrict__ h,
    const float* __restrict__ intensity, const float* __restrict__ colour,
    const float* __restrict__ palette,
                                   unsigned int n, unsigned int index_base,
                                   const unsigned int* __restrict__ keys,
                                   unsigned int* __restrict__ cursor,
                                   SplatC* __restrict__ sorted,
                                   LargeC* __restrict__ large,
                                   unsigned int* __restrict__ large_count,
                                   const unsigned int* __restrict__ perm, int has_perm) {
    ParticlesC particles = {pos, h, intensity, colour, palette};
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int key = i < n ? keys[i] : KEY_INACTIVE;
    bool medium = key < KEY_SMALL;
    bool is_large = key == KEY_LARGE;
    SplatC s;
    if (medium || is_large) project_particle(view, style, particles, i, &s);
    int lane = threadIdx.x & 31;
    unsigned int lower = (1u << lane) - 1u;
    // Warp-aggregated slot reservation for the medium splats of each tile ...
    unsigned int peers = __match_any_sync(0xffffffffu, key);
    unsigned int leader = __ffs(peers) - 1;
    unsigned int base = 0;
    if (medium && lane == (int)leader) base = atomicAdd(&cursor[key], (unsigned int)__popc(peers));
    base = __shfl_sync(0xffffffffu, base, leader);
    if (medium) sorted[base + __popc(peers & lower)] = s;
    // ... and for the large ones.
    unsigned int large_lanes = __ballot_sync(0xffffffffu, is_large);
    if (large_lanes != 0) {
        unsigned int first = __ffs(large_lanes) - 1;
        unsigned int lbase = 0;
        if (lane == (int)first) lbase = atomicAdd(large_count, (unsigned int)__popc(large_lanes));
        lbase = __shfl_sync(0xffffffffu, lbase, first);
        if (is_large) {
            LargeC l;
            l.splat = s;
            // The file-order index (the resident copy may be in Morton order: render_order.cu),
            // by which the CPU sorts the large splats.
            l.index = has_perm ? perm[index_base + i] : index_base + i;
            large[lbase + __popc(large_lanes & lower)] = l;
        }
    }
}
