// Smoothing lengths from the k-th nearest neighbour on the device: the twin of
// src/render/smoothing/ (grid.rs, search.rs). The grid is built here too: bounds, the cell
// counts and modelled cost of each tried cell size, cell keys (sorted by src/gpu/sort.rs),
// cell starts (src/gpu/scan.rs), positions gathered in cell order. The search is the CPU's,
// thread for thread, in the same f64 arithmetic (compiled with --fmad=false): it finds the
// exact k-th smallest squared distance, so every length equals the CPU's bit for bit whatever
// the grid. KNN_MAX (defined by the host) bounds k: the k best squared distances live in
// thread-local memory, sorted ascending.

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

// Cell c + o along an axis of n cells, wrapped once (offsets keep the sum in (-n, 2n)).
__device__ __forceinline__ long long wrap(long long c, long long o, long long n) {
    long long v = c + o;
    return v < 0 ? v + n : (v >= n ? v - n : v);
}

// The k-th neighbour distance of member i (cell order) goes to out[order[i]].
extern "C" __global__ void knn_lengths(const KnnPoint* __restrict__ pos,
                                       const unsigned* __restrict__ starts, KnnGrid g,
                                       unsigned first, unsigned m, int k,
                                       const unsigned* __restrict__ order,
                                       float* __restrict__ out) {
    unsigned i = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    KnnPoint pi = pos[i];
    float p[3] = {pi.x, pi.y, pi.z};
    double pd[3] = {(double)pi.x, (double)pi.y, (double)pi.z};
    long long centre[3];
    double inside[3];
    long long lo[3], hi[3];
    long long max_ring = 0;
    for (int a = 0; a < 3; ++a) {
        double x = (double)p[a] - g.origin[a];
        if (g.periodic) x = rem_euclid(x, g.side);
        long long c = cell_coord(g, a, p[a]);
        centre[a] = c;
        double in = x - (double)c * g.cell;
        inside[a] = in < 0.0 ? 0.0 : (in > g.cell ? g.cell : in);
        long long n = g.n[a];
        if (g.periodic) {
            long long l = (n - 1) / 2;
            lo[a] = -l;
            hi[a] = n - 1 - l;
        } else {
            lo[a] = -c;
            hi[a] = n - 1 - c;
        }
        long long r = -lo[a] > hi[a] ? -lo[a] : hi[a];
        if (r > max_ring) max_ring = r;
    }
    double face = __longlong_as_double(0x7ff0000000000000LL);
    for (int a = 0; a < 3; ++a) face = fmin(face, fmin(inside[a], g.cell - inside[a]));
    double best[KNN_MAX];
    int count = 0;
    double worst = __longlong_as_double(0x7ff0000000000000LL);
    double side = g.side;
    for (long long ring = 0; ring <= max_ring; ++ring) {
        long long zlo = lo[2] > -ring ? lo[2] : -ring, zhi = hi[2] < ring ? hi[2] : ring;
        long long ylo = lo[1] > -ring ? lo[1] : -ring, yhi = hi[1] < ring ? hi[1] : ring;
        long long xlo = lo[0] > -ring ? lo[0] : -ring, xhi = hi[0] < ring ? hi[0] : ring;
        for (long long oz = zlo; oz <= zhi; ++oz) {
            double gz = oz == 0 ? 0.0
                        : (oz > 0 ? (double)(oz - 1) * g.cell + (g.cell - inside[2])
                                  : (double)(-oz - 1) * g.cell + inside[2]);
            long long cz = wrap(centre[2], oz, g.n[2]);
            for (long long oy = ylo; oy <= yhi; ++oy) {
                double gy = oy == 0 ? 0.0
                            : (oy > 0 ? (double)(oy - 1) * g.cell + (g.cell - inside[1])
                                      : (double)(-oy - 1) * g.cell + inside[1]);
                double yz2 = gy * gy + gz * gz;
                if (yz2 > worst) continue;
                long long cy = wrap(centre[1], oy, g.n[1]);
                unsigned long long row = ((unsigned long long)cz * g.n[1] + cy) * g.n[0];
                bool full_row = (oz < 0 ? -oz : oz) == ring || (oy < 0 ? -oy : oy) == ring;
                long long step = full_row || ring == 0 ? 1 : 2 * ring;
                for (long long ox = full_row ? xlo : -ring; ox <= (full_row ? xhi : ring);
                     ox += step) {
                    if (!full_row && (ox < xlo || ox > xhi)) continue;
                    double gx = ox == 0 ? 0.0
                                : (ox > 0 ? (double)(ox - 1) * g.cell + (g.cell - inside[0])
                                          : (double)(-ox - 1) * g.cell + inside[0]);
                    if (gx * gx + yz2 > worst) continue;
                    unsigned long long cellno = row + wrap(centre[0], ox, g.n[0]);
                    unsigned s = starts[cellno], e = starts[cellno + 1];
                    for (unsigned j = s; j < e; ++j) {
                        KnnPoint q = pos[j];
                        double d[3] = {pd[0] - (double)q.x, pd[1] - (double)q.y,
                                       pd[2] - (double)q.z};
                        double d2 = 0.0;
                        for (int a = 0; a < 3; ++a) {
                            double v = d[a];
                            if (g.periodic && fabs(v) >= 0.49 * side) v -= side * round(v / side);
                            d2 += v * v;
                        }
                        if (!(d2 < worst) || j == i) continue;
                        // Insert after the equal ones, dropping the last when full.
                        int at = count < k ? count : k - 1;
                        while (at > 0 && best[at - 1] > d2) {
                            best[at] = best[at - 1];
                            --at;
                        }
                        best[at] = d2;
                        if (count < k) ++count;
                        if (count == k) worst = best[k - 1];
                    }
                }
            }
        }
        double covered = (double)ring * g.cell + face;
        if (count == k && worst <= covered * covered) break;
    }
    out[order[i]] = count >= k ? (float)sqrt(worst) : 0.0f;
}
