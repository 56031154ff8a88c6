// Smoothing lengths from the k-th nearest neighbour on the device: the twin of
// src/render/smoothing/ (grid.rs, search.rs). The grid is built here: bounds, the cell counts
// and modelled cost of each tried cell size, cell keys (sorted by src/gpu/sort.rs), cell
// starts (src/gpu/scan.rs), positions gathered in cell order. The search over it is
// knn_search.cu, compiled into the same module after this file.

#define KNN_BLOCK 256

// A position in cell order, padded to 16 bytes for one vector load.
struct alignas(16) KnnPoint {
    float x, y, z, w;
};

struct KnnGrid {
    int n[3];
    int periodic;
    double cell;
    double origin[3];
    double side;
};

__device__ __forceinline__ double rem_euclid(double x, double side) {
    double r = fmod(x, side);
    return r < 0.0 ? r + fabs(side) : r;
}

__device__ __forceinline__ bool finite3(float x, float y, float z) {
    return isfinite(x) && isfinite(y) && isfinite(z);
}

// Integer cell coordinate along axis a of the world coordinate v (as Frame::cell_of).
__device__ __forceinline__ int cell_coord(const KnnGrid& g, int a, float v) {
    double x = (double)v - g.origin[a];
    if (g.periodic) x = rem_euclid(x, g.side);
    double f = floor(x / g.cell);
    if (!(f > 0.0)) return 0;
    if (f >= (double)(g.n[a] - 1)) return g.n[a] - 1;
    return (int)f;
}

__device__ __forceinline__ unsigned cell_of(const KnnGrid& g, float x, float y, float z) {
    unsigned cx = cell_coord(g, 0, x), cy = cell_coord(g, 1, y), cz = cell_coord(g, 2, z);
    return (cz * (unsigned)g.n[1] + cy) * (unsigned)g.n[0] + cx;
}

// Per block: the bounds of the finite positions and their count (the host combines blocks;
// min and max are exact, so the order does not matter).
extern "C" __global__ void knn_bounds(const float* __restrict__ pos, unsigned n,
                                      float* __restrict__ block_lo, float* __restrict__ block_hi,
                                      unsigned* __restrict__ block_count) {
    __shared__ float lo[3][KNN_BLOCK];
    __shared__ float hi[3][KNN_BLOCK];
    __shared__ unsigned cnt[KNN_BLOCK];
    unsigned t = threadIdx.x;
    const float inf = __int_as_float(0x7f800000);
    float l[3] = {inf, inf, inf};
    float h[3] = {-inf, -inf, -inf};
    unsigned c = 0;
    for (unsigned i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) {
        float x = pos[3 * (size_t)i], y = pos[3 * (size_t)i + 1], z = pos[3 * (size_t)i + 2];
        if (!finite3(x, y, z)) continue;
        ++c;
        l[0] = fminf(l[0], x);
        l[1] = fminf(l[1], y);
        l[2] = fminf(l[2], z);
        h[0] = fmaxf(h[0], x);
        h[1] = fmaxf(h[1], y);
        h[2] = fmaxf(h[2], z);
    }
    for (int a = 0; a < 3; ++a) {
        lo[a][t] = l[a];
        hi[a][t] = h[a];
    }
    cnt[t] = c;
    __syncthreads();
    for (unsigned s = KNN_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) {
            for (int a = 0; a < 3; ++a) {
                lo[a][t] = fminf(lo[a][t], lo[a][t + s]);
                hi[a][t] = fmaxf(hi[a][t], hi[a][t + s]);
            }
            cnt[t] += cnt[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        for (int a = 0; a < 3; ++a) {
            block_lo[3 * blockIdx.x + a] = lo[a][0];
            block_hi[3 * blockIdx.x + a] = hi[a][0];
        }
        block_count[blockIdx.x] = cnt[0];
    }
}

// Particles per cell of a tried grid (counts zeroed by the host).
extern "C" __global__ void knn_count(const float* __restrict__ pos, unsigned n, KnnGrid g,
                                     unsigned* __restrict__ counts) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = pos[3 * (size_t)i], y = pos[3 * (size_t)i + 1], z = pos[3 * (size_t)i + 2];
    if (!finite3(x, y, z)) return;
    atomicAdd(&counts[cell_of(g, x, y, z)], 1u);
}

// Sums over the box of ±reach cells along one axis (stride between neighbours along it, len
// cells on it), wrapped when periodic, clipped otherwise. The first pass reads the counts.
__device__ __forceinline__ double box_along(const double* in, const unsigned* counts,
                                            int from_counts, unsigned index, unsigned stride,
                                            int len, int periodic, int reach) {
    int c = (int)((index / stride) % (unsigned)len);
    double sum = 0.0;
    for (int o = -reach; o <= reach; ++o) {
        int v = c + o;
        if (periodic) {
            v %= len;
            if (v < 0) v += len;
        } else if (v < 0 || v >= len) {
            continue;
        }
        unsigned j = (unsigned)((long long)index + (long long)(v - c) * (long long)stride);
        sum += from_counts ? (double)counts[j] : in[j];
    }
    return sum;
}

extern "C" __global__ void knn_box_pass(const double* __restrict__ in,
                                        const unsigned* __restrict__ counts, int from_counts,
                                        unsigned cells, unsigned stride, int len, int periodic,
                                        int reach, double* __restrict__ out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= cells) return;
    out[i] = box_along(in, counts, from_counts, i, stride, len, periodic, reach);
}

// Modelled search cost (as grid.rs's cell_cost), summed per block in a fixed order.
extern "C" __global__ void knn_cost(const unsigned* __restrict__ counts,
                                    const double* __restrict__ around, unsigned cells,
                                    double width3, double k, double visit,
                                    double* __restrict__ block_cost) {
    __shared__ double part[KNN_BLOCK];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    double cost = 0.0;
    if (i < cells && counts[i] > 0) {
        double mean = around[i] / width3;
        double rings = ceil(cbrt(k / (4.19 * mean))) + 1.0;
        double visited = (2.0 * rings + 1.0) * (2.0 * rings + 1.0) * (2.0 * rings + 1.0);
        cost = (double)counts[i] * (visit * visited + visited * mean);
    }
    part[t] = cost;
    __syncthreads();
    for (unsigned s = KNN_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) block_cost[blockIdx.x] = part[0];
}

// Sort keys of the chosen grid: the cell (`cells` for non-finite positions, sorted last) and
// the particle's index.
extern "C" __global__ void knn_keys(const float* __restrict__ pos, unsigned n, KnnGrid g,
                                    unsigned cells, unsigned long long* __restrict__ keys,
                                    unsigned* __restrict__ values) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = pos[3 * (size_t)i], y = pos[3 * (size_t)i + 1], z = pos[3 * (size_t)i + 2];
    keys[i] = finite3(x, y, z) ? cell_of(g, x, y, z) : cells;
    values[i] = i;
}

// Positions in cell order, one 16-byte load each in the search.
extern "C" __global__ void knn_gather(const float* __restrict__ pos,
                                      const unsigned* __restrict__ order, unsigned m,
                                      KnnPoint* __restrict__ sorted) {
    unsigned j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    size_t i = order[j];
    KnnPoint q = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2], 0.0f};
    sorted[j] = q;
}
