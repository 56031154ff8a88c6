// The k-th-neighbour search over the grid that knn.cu builds (compiled after it, in the same
// module): the twin of src/render/smoothing/search.rs. Every squared distance is computed in
// the CPU's f64 arithmetic (compiled with --fmad=false), and the search returns the exact k-th
// smallest of them whatever cells it visits, as long as it visits every cell that can hold a
// closer point: so every length equals the CPU's bit for bit.
//
// One thread per query, queries in cell order. Where the 32 queries of a warp lie in a box of
// at most `warp_box` cells (open boxes only), the warp searches together: it walks Chebyshev
// rings of cells around the box, skips a cell when no lane's k-th best could improve there,
// loads each cell's points once (one per lane) and passes them round by shuffles, so all lanes
// run the same loop. Elsewhere each lane walks its own rings, as the CPU does.

#define KNN_FULL 0xffffffffu

__device__ __forceinline__ double knn_inf() { return __longlong_as_double(0x7ff0000000000000LL); }

__device__ __forceinline__ int knn_min(int a, int b) { return a < b ? a : b; }

__device__ __forceinline__ int knn_max(int a, int b) { return a > b ? a : b; }

// The KCAP smallest squared distances offered, ascending, in registers (every index is a
// constant once the loops unroll). For k < KCAP the first KCAP - k slots start at -inf and
// never move, so the last slot is the k-th smallest offered: infinite until k were offered.
template <int KCAP>
struct KnnBest {
    double v[KCAP];

    __device__ __forceinline__ void init(int k) {
#pragma unroll
        for (int j = 0; j < KCAP; ++j) v[j] = j < KCAP - k ? -knn_inf() : knn_inf();
    }

    __device__ __forceinline__ double worst() const { return v[KCAP - 1]; }

    // Sorted insertion of d, the largest dropped (only called with d < worst()).
    __device__ __forceinline__ void insert(double d) {
#pragma unroll
        for (int j = 0; j < KCAP; ++j) {
            double lo = fmin(v[j], d);
            d = fmax(v[j], d);
            v[j] = lo;
        }
    }
};

// One query: its position, cell, offset inside the cell per axis and distance to the nearer
// face of its cell.
struct KnnQuery {
    double p[3];
    int centre[3];
    double inside[3];
    double face;
};

__device__ __forceinline__ void knn_query(const KnnGrid& g, KnnPoint pt, KnnQuery& q) {
    float f[3] = {pt.x, pt.y, pt.z};
    q.face = knn_inf();
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        q.p[a] = (double)f[a];
        double x = (double)f[a] - g.origin[a];
        if (g.periodic) x = rem_euclid(x, g.side);
        int c = cell_coord(g, a, f[a]);
        q.centre[a] = c;
        double in = x - (double)c * g.cell;
        in = in < 0.0 ? 0.0 : (in > g.cell ? g.cell : in);
        q.inside[a] = in;
        q.face = fmin(q.face, fmin(in, g.cell - in));
    }
}

// Distance from the query to the slab of cells at offset o along an axis (0 for its own).
__device__ __forceinline__ double knn_gap(int o, double inside, double cell) {
    return o == 0 ? 0.0
                  : (o > 0 ? (double)(o - 1) * cell + (cell - inside)
                           : (double)(-o - 1) * cell + inside);
}

// As knn_gap, on an axis of n cells: in a periodic box of even n the cell n/2 ahead is also
// n/2 behind, and the nearer way bounds it.
template <bool PERIODIC>
__device__ __forceinline__ double knn_gap_on(int o, double inside, double cell, int n) {
    double gap = knn_gap(o, inside, cell);
    if (PERIODIC && 2 * o == n) gap = fmin(gap, knn_gap(-o, inside, cell));
    return gap;
}

// Squared distance as search.rs's scan_members: f64, minimum image when periodic.
template <bool PERIODIC>
__device__ __forceinline__ double knn_d2(const double p[3], float x, float y, float z,
                                         double side) {
    double d[3] = {p[0] - (double)x, p[1] - (double)y, p[2] - (double)z};
    double d2 = 0.0;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        double v = d[a];
        if (PERIODIC && fabs(v) >= 0.49 * side) v -= side * round(v / side);
        d2 += v * v;
    }
    return d2;
}

// Cell c + o along an axis of n cells, wrapped once (offsets keep the sum in (-n, 2n)).
__device__ __forceinline__ int knn_wrap(int c, int o, int n) {
    int v = c + o;
    return v < 0 ? v + n : (v >= n ? v - n : v);
}

// The k-th smallest squared distance of member i, searched alone: search.rs's rings.
template <int KCAP, bool PERIODIC>
__device__ __forceinline__ double knn_lane(const KnnPoint* __restrict__ pos,
                           const unsigned* __restrict__ starts, const KnnGrid& g, unsigned i,
                           const KnnQuery& q, int k) {
    int lo[3], hi[3];
    int max_ring = 0;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        int n = g.n[a];
        if (PERIODIC) {
            int l = (n - 1) / 2;
            lo[a] = -l;
            hi[a] = n - 1 - l;
        } else {
            lo[a] = -q.centre[a];
            hi[a] = n - 1 - q.centre[a];
        }
        max_ring = knn_max(max_ring, knn_max(-lo[a], hi[a]));
    }
    KnnBest<KCAP> best;
    best.init(k);
    double worst = best.worst();
    for (int ring = 0; ring <= max_ring; ++ring) {
        int zlo = knn_max(lo[2], -ring), zhi = knn_min(hi[2], ring);
        int ylo = knn_max(lo[1], -ring), yhi = knn_min(hi[1], ring);
        int xlo = knn_max(lo[0], -ring), xhi = knn_min(hi[0], ring);
        for (int oz = zlo; oz <= zhi; ++oz) {
            double gz = knn_gap_on<PERIODIC>(oz, q.inside[2], g.cell, g.n[2]);
            int cz = knn_wrap(q.centre[2], oz, g.n[2]);
            for (int oy = ylo; oy <= yhi; ++oy) {
                double gy = knn_gap_on<PERIODIC>(oy, q.inside[1], g.cell, g.n[1]);
                double yz2 = gy * gy + gz * gz;
                if (yz2 > worst) continue;
                int cy = knn_wrap(q.centre[1], oy, g.n[1]);
                unsigned row = ((unsigned)cz * (unsigned)g.n[1] + (unsigned)cy) * (unsigned)g.n[0];
                bool full_row = (oz < 0 ? -oz : oz) == ring || (oy < 0 ? -oy : oy) == ring;
                // Inside the shell only the two x faces belong to this ring.
                int step = full_row ? 1 : 2 * ring;
                for (int ox = full_row ? xlo : -ring; ox <= (full_row ? xhi : ring); ox += step) {
                    if (ox < xlo || ox > xhi) continue;
                    double gx = knn_gap_on<PERIODIC>(ox, q.inside[0], g.cell, g.n[0]);
                    if (gx * gx + yz2 > worst) continue;
                    unsigned cell = row + (unsigned)knn_wrap(q.centre[0], ox, g.n[0]);
                    unsigned s = starts[cell], e = starts[cell + 1];
                    for (unsigned j = s; j < e; ++j) {
                        KnnPoint c = pos[j];
                        double d2 = knn_d2<PERIODIC>(q.p, c.x, c.y, c.z, g.side);
                        if (d2 < worst && j != i) {
                            best.insert(d2);
                            worst = best.worst();
                        }
                    }
                }
            }
        }
        double covered = (double)ring * g.cell + q.face;
        if (worst <= covered * covered) break;
    }
    return worst;
}

__device__ __forceinline__ int knn_warp_min(int v) {
    for (int o = 16; o > 0; o >>= 1) v = knn_min(v, __shfl_xor_sync(KNN_FULL, v, o));
    return v;
}

__device__ __forceinline__ int knn_warp_max(int v) {
    for (int o = 16; o > 0; o >>= 1) v = knn_max(v, __shfl_xor_sync(KNN_FULL, v, o));
    return v;
}

// The k-th smallest squared distance of member i, searched by the whole warp (open grids)
// over the rings of cells around the box b0..b1 that holds every lane's cell. After ring r
// every cell within r of the lane's own cell has been seen, so the CPU's stopping rule holds
// per lane; the warp stops when every active lane has stopped.
template <int KCAP>
__device__ __forceinline__ double knn_warp(const KnnPoint* __restrict__ pos,
                           const unsigned* __restrict__ starts, const KnnGrid& g, unsigned i,
                           const KnnQuery& q, int k, bool active, const int b0[3],
                           const int b1[3]) {
    int max_ring = 0;
#pragma unroll
    for (int a = 0; a < 3; ++a) max_ring = knn_max(max_ring, knn_max(b0[a], g.n[a] - 1 - b1[a]));
    unsigned lane = threadIdx.x & 31;
    KnnBest<KCAP> best;
    best.init(k);
    double worst = best.worst();
    bool done = !active;
    for (int ring = 0; ring <= max_ring; ++ring) {
        int zlo = knn_max(b0[2] - ring, 0), zhi = knn_min(b1[2] + ring, g.n[2] - 1);
        int ylo = knn_max(b0[1] - ring, 0), yhi = knn_min(b1[1] + ring, g.n[1] - 1);
        int xlo = knn_max(b0[0] - ring, 0), xhi = knn_min(b1[0] + ring, g.n[0] - 1);
        for (int cz = zlo; cz <= zhi; ++cz) {
            double gz = knn_gap(cz - q.centre[2], q.inside[2], g.cell);
            bool z_face = cz == b0[2] - ring || cz == b1[2] + ring;
            for (int cy = ylo; cy <= yhi; ++cy) {
                double gy = knn_gap(cy - q.centre[1], q.inside[1], g.cell);
                double yz2 = gy * gy + gz * gz;
                if (!__any_sync(KNN_FULL, !done && yz2 <= worst)) continue;
                bool full_row = ring == 0 || z_face || cy == b0[1] - ring || cy == b1[1] + ring;
                unsigned row = ((unsigned)cz * (unsigned)g.n[1] + (unsigned)cy) * (unsigned)g.n[0];
                // Inside the shell only the two x faces belong to this ring.
                int step = full_row ? 1 : b1[0] - b0[0] + 2 * ring;
                int from = full_row ? xlo : b0[0] - ring, to = full_row ? xhi : b1[0] + ring;
                for (int cx = from; cx <= to; cx += step) {
                    if (cx < xlo || cx > xhi) continue;
                    double gx = knn_gap(cx - q.centre[0], q.inside[0], g.cell);
                    if (!__any_sync(KNN_FULL, !done && gx * gx + yz2 <= worst)) continue;
                    unsigned s = starts[row + cx], e = starts[row + cx + 1];
                    for (unsigned base = s; base < e; base += 32) {
                        unsigned j = base + lane;
                        KnnPoint c = pos[j < e ? j : s];
                        int count = e - base < 32u ? (int)(e - base) : 32;
                        for (int t = 0; t < count; ++t) {
                            float x = __shfl_sync(KNN_FULL, c.x, t);
                            float y = __shfl_sync(KNN_FULL, c.y, t);
                            float z = __shfl_sync(KNN_FULL, c.z, t);
                            double d2 = knn_d2<false>(q.p, x, y, z, g.side);
                            if (d2 < worst && base + (unsigned)t != i) {
                                best.insert(d2);
                                worst = best.worst();
                            }
                        }
                    }
                }
            }
        }
        double covered = (double)ring * g.cell + q.face;
        if (worst <= covered * covered) done = true;
        if (__all_sync(KNN_FULL, done)) break;
    }
    return worst;
}

// The k-th neighbour distance of member first + thread (cell order) goes to out[order[i]];
// warps whose queries span at most warp_box cells of an open grid search together.
template <int KCAP>
__device__ __forceinline__ void knn_search(const KnnPoint* __restrict__ pos,
                                           const unsigned* __restrict__ starts,
                                           const KnnGrid& g, unsigned first, unsigned m, int k,
                                           unsigned warp_box,
                                           const unsigned* __restrict__ order,
                                           float* __restrict__ out) {
    unsigned i = first + blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lead = i - (threadIdx.x & 31);
    // Whole warps leave together; a warp's missing lanes take its first query's place.
    if (lead >= m) return;
    bool active = i < m;
    KnnQuery q;
    knn_query(g, pos[active ? i : lead], q);
    double worst;
    if (g.periodic) {
        if (!active) return;
        worst = knn_lane<KCAP, true>(pos, starts, g, i, q, k);
    } else {
        int b0[3], b1[3];
        unsigned volume = 1;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            b0[a] = knn_warp_min(q.centre[a]);
            b1[a] = knn_warp_max(q.centre[a]);
            volume *= (unsigned)(b1[a] - b0[a] + 1);
        }
        if (volume <= warp_box) {
            worst = knn_warp<KCAP>(pos, starts, g, i, q, k, active, b0, b1);
            if (!active) return;
        } else {
            if (!active) return;
            worst = knn_lane<KCAP, false>(pos, starts, g, i, q, k);
        }
    }
    out[order[i]] = isinf(worst) ? 0.0f : (float)sqrt(worst);
}

#define KNN_SEARCH(KCAP)                                                                     \
    extern "C" __global__ void knn_search_##KCAP(                                            \
        const KnnPoint* __restrict__ pos, const unsigned* __restrict__ starts, KnnGrid g,     \
        unsigned first, unsigned m, int k, unsigned warp_box,                                 \
        const unsigned* __restrict__ order, float* __restrict__ out) {                        \
        knn_search<KCAP>(pos, starts, g, first, m, k, warp_box, order, out);                  \
    }

// Lists of 16, 32 and 64 slots: the host takes the smallest that holds k.
KNN_SEARCH(16)
KNN_SEARCH(32)
KNN_SEARCH(64)
