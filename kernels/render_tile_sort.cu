// Step 5a of the pipeline: counting sort of the medium particles by tile (O(N)): the exclusive
// prefix sum of the per-tile histogram (one block), then a scatter that writes each medium splat
// to its tile's range. The scatter also compacts the large splats for the CPU / the large kernel.
// Order inside a tile is not fixed, which does not matter: tau is summed in fixed point.
// Needs render_common.cuh before it.

#define SCAN_THREADS 1024

// Exclusive scans of the tile counts (-> tile_start, cursor) and of the segments per tile,
// ceil(count / segment) (-> seg_start); entry n_tiles of each holds the total. Keys from
// `wide_from` on (the wide-border tiles) use `wide_segment`.
extern "C" __global__ void tile_scan(const unsigned int* __restrict__ tile_count,
                                     unsigned int n_tiles, unsigned int segment,
                                     unsigned int wide_from, unsigned int wide_segment,
                                     unsigned int* __restrict__ tile_start,
                                     unsigned int* __restrict__ cursor,
                                     unsigned int* __restrict__ seg_start) {
    __shared__ unsigned int part_count[SCAN_THREADS];
    __shared__ unsigned int part_seg[SCAN_THREADS];
    unsigned int t = threadIdx.x;
    unsigned int per = (n_tiles + SCAN_THREADS - 1) / SCAN_THREADS;
    unsigned int lo = t * per;
    unsigned int hi = lo + per < n_tiles ? lo + per : n_tiles;
    unsigned int sum_count = 0, sum_seg = 0;
    for (unsigned int k = lo; k < hi; ++k) {
        unsigned int c = tile_count[k];
        sum_count += c;
        unsigned int seg = k < wide_from ? segment : wide_segment;
        sum_seg += (c + seg - 1) / seg;
    }
    part_count[t] = sum_count;
    part_seg[t] = sum_seg;
    __syncthreads();
    // Hillis-Steele inclusive scan over the thread partials.
    for (unsigned int offset = 1; offset < SCAN_THREADS; offset <<= 1) {
        unsigned int a = t >= offset ? part_count[t - offset] : 0;
        unsigned int b = t >= offset ? part_seg[t - offset] : 0;
        __syncthreads();
        part_count[t] += a;
        part_seg[t] += b;
        __syncthreads();
    }
    unsigned int run_count = part_count[t] - sum_count;
    unsigned int run_seg = part_seg[t] - sum_seg;
    for (unsigned int k = lo; k < hi; ++k) {
        unsigned int c = tile_count[k];
        tile_start[k] = run_count;
        cursor[k] = run_count;
        seg_start[k] = run_seg;
        run_count += c;
        unsigned int seg = k < wide_from ? segment : wide_segment;
        run_seg += (c + seg - 1) / seg;
    }
    if (t == SCAN_THREADS - 1) {
        tile_start[n_tiles] = part_count[t];
        cursor[n_tiles] = part_count[t];
        seg_start[n_tiles] = part_seg[t];
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
