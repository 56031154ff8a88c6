// Reorders the resident particle arrays on the device at upload (DESIGN §7, ordering for
// locality): particles in one coarse 3-D Morton cell of the data's bounding box become
// neighbours in memory, so a warp's particles mostly share a screen tile and the classify and
// sort kernels' warp-aggregated atomics collapse. A counting
// sort by cell key, O(N): bounds, keys + histogram, one-block scan, scatter. The order inside a
// cell is whatever the atomics give: the renderer's sums are fixed point, and the permutation
// (`perm[k]` = file index of device particle k) lets large splats drawn on the CPU keep their
// file order. Self-contained.

#define ORDER_SCAN_THREADS 1024

// f32 bits -> u32 with the same order (negative floats reversed), for atomicMin/Max.
__device__ __forceinline__ unsigned int ordered_bits(float v) {
    unsigned int b = __float_as_uint(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float from_ordered_bits(unsigned int u) {
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7FFFFFFFu) : ~u);
}

// bounds[0..3] = ordered min x, y, z; bounds[3..6] = ordered max (start: 0xFFFFFFFF and 0).
// Non-finite coordinates are skipped.
extern "C" __global__ void order_bounds(const float* __restrict__ pos, unsigned int n,
                                        unsigned int* __restrict__ bounds) {
    unsigned int lo[3] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    unsigned int hi[3] = {0u, 0u, 0u};
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += gridDim.x * blockDim.x) {
        for (int a = 0; a < 3; ++a) {
            float v = pos[3 * (size_t)i + a];
            if (!isfinite(v)) continue;
            unsigned int u = ordered_bits(v);
            lo[a] = u < lo[a] ? u : lo[a];
            hi[a] = u > hi[a] ? u : hi[a];
        }
    }
    for (int a = 0; a < 3; ++a) {
        for (int off = 16; off > 0; off >>= 1) {
            unsigned int l = __shfl_down_sync(0xffffffffu, lo[a], off);
            unsigned int h = __shfl_down_sync(0xffffffffu, hi[a], off);
            lo[a] = l < lo[a] ? l : lo[a];
            hi[a] = h > hi[a] ? h : hi[a];
        }
        if ((threadIdx.x & 31) == 0) {
            atomicMin(&bounds[a], lo[a]);
            atomicMax(&bounds[3 + a], hi[a]);
        }
    }
}

// Spreads the low 10 bits of v to every third bit.
__device__ __forceinline__ unsigned int spread3(unsigned int v) {
    v &= 0x3FFu;
    v = (v | (v << 16)) & 0x030000FFu;
    v = (v | (v << 8)) & 0x0300F00Fu;
    v = (v | (v << 4)) & 0x030C30C3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

// keys[i] = Morton cell of particle i on a 2^bits grid per axis (bits <= 10) over the bounds;
// counts[key] += 1 (one atomic per distinct key per warp). Non-finite coordinates go to cell 0.
extern "C" __global__ void order_keys(const float* __restrict__ pos, unsigned int n,
                                      const unsigned int* __restrict__ bounds, int bits,
                                      unsigned int* __restrict__ keys,
                                      unsigned int* __restrict__ counts) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int key = 0xFFFFFFFFu;
    if (i < n) {
        float cells = (float)(1u << bits);
        unsigned int q[3];
        for (int a = 0; a < 3; ++a) {
            float lo = from_ordered_bits(bounds[a]);
            float hi = from_ordered_bits(bounds[3 + a]);
            float v = pos[3 * (size_t)i + a];
            float t = hi > lo ? (v - lo) / (hi - lo) * cells : 0.0f;
            // NaN and below 0 -> 0 (the saturating conversion), above the grid -> its last cell.
            int c = __float2int_rz(t);
            c = c < 0 ? 0 : c;
            q[a] = (unsigned int)c >= (1u << bits) ? (1u << bits) - 1u : (unsigned int)c;
        }
        key = spread3(q[0]) | (spread3(q[1]) << 1) | (spread3(q[2]) << 2);
        keys[i] = key;
    }
    unsigned int peers = __match_any_sync(0xffffffffu, key);
    if (i < n && (threadIdx.x & 31) == __ffs(peers) - 1) {
        atomicAdd(&counts[key], (unsigned int)__popc(peers));
    }
}

// Exclusive prefix sum of counts[0..n) into cursor (one block of ORDER_SCAN_THREADS).
extern "C" __global__ void order_scan(const unsigned int* __restrict__ counts, unsigned int n,
                                      unsigned int* __restrict__ cursor) {
    __shared__ unsigned int part[ORDER_SCAN_THREADS];
    unsigned int t = threadIdx.x;
    unsigned int per = (n + ORDER_SCAN_THREADS - 1) / ORDER_SCAN_THREADS;
    unsigned int lo = t * per;
    unsigned int hi = lo + per < n ? lo + per : n;
    unsigned int sum = 0;
    for (unsigned int k = lo; k < hi; ++k) sum += counts[k];
    part[t] = sum;
    __syncthreads();
    for (unsigned int offset = 1; offset < ORDER_SCAN_THREADS; offset <<= 1) {
        unsigned int a = t >= offset ? part[t - offset] : 0;
        __syncthreads();
        part[t] += a;
        __syncthreads();
    }
    unsigned int run = part[t] - sum;
    for (unsigned int k = lo; k < hi; ++k) {
        cursor[k] = run;
        run += counts[k];
    }
}

// Moves particle i to its cell's next slot: out_* arrays in cell order, perm[slot] = i.
// `extra` (the intensity/colour arrays, n_extra of them, each of n floats) move with it.
extern "C" __global__ void order_scatter(const float* __restrict__ pos,
                                         const float* __restrict__ h,
                                         const float* __restrict__ extra0,
                                         const float* __restrict__ extra1, int n_extra,
                                         unsigned int n, const unsigned int* __restrict__ keys,
                                         unsigned int* __restrict__ cursor,
                                         float* __restrict__ out_pos, float* __restrict__ out_h,
                                         float* __restrict__ out_extra0,
                                         float* __restrict__ out_extra1,
                                         unsigned int* __restrict__ perm) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int key = i < n ? keys[i] : 0xFFFFFFFFu;
    unsigned int peers = __match_any_sync(0xffffffffu, key);
    int lane = threadIdx.x & 31;
    unsigned int leader = __ffs(peers) - 1;
    unsigned int base = 0;
    if (i < n && lane == (int)leader) base = atomicAdd(&cursor[key], (unsigned int)__popc(peers));
    base = __shfl_sync(0xffffffffu, base, leader);
    if (i >= n) return;
    unsigned int to = base + __popc(peers & ((1u << lane) - 1u));
    out_pos[3 * (size_t)to] = pos[3 * (size_t)i];
    out_pos[3 * (size_t)to + 1] = pos[3 * (size_t)i + 1];
    out_pos[3 * (size_t)to + 2] = pos[3 * (size_t)i + 2];
    out_h[to] = h[i];
    if (n_extra > 0) out_extra0[to] = extra0[i];
    if (n_extra > 1) out_extra1[to] = extra1[i];
    perm[to] = i;
}
