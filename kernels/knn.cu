// Smoothing lengths from the k-th nearest neighbour on the device: the twin of
// src/render/smoothing.rs, thread for thread the same search on the same host-built cell grid
// (members in cell order), in the same f64 arithmetic (compiled with --fmad=false), so every
// length equals the CPU's bit for bit. One thread per member; neighbouring threads share cells.
// KNN_MAX (defined by the host) bounds k: the k best squared distances live in registers/local
// memory, sorted ascending.

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

__device__ __forceinline__ double dist2(const KnnGrid& g, const float* a, float bx, float by,
                                        float bz) {
    double b[3] = {(double)bx, (double)by, (double)bz};
    double d2 = 0.0;
    for (int axis = 0; axis < 3; ++axis) {
        double d = (double)a[axis] - b[axis];
        if (g.periodic && fabs(d) >= 0.49 * g.side) d -= g.side * round(d / g.side);
        d2 += d * d;
    }
    return d2;
}

extern "C" __global__ void knn_lengths(const float* __restrict__ pos, const unsigned* __restrict__ starts,
                                       KnnGrid g, unsigned first, unsigned m, int k,
                                       float* __restrict__ out) {
    unsigned i = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    float p[3] = {pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]};
    int centre[3];
    double inside[3];
    long long lo[3], hi[3];
    long long max_ring = 0;
    for (int a = 0; a < 3; ++a) {
        double x = (double)p[a] - g.origin[a];
        if (g.periodic) x = rem_euclid(x, g.side);
        double f = floor(x / g.cell);
        long long c = f > 0.0 ? (long long)f : 0;
        if (c > g.n[a] - 1) c = g.n[a] - 1;
        centre[a] = (int)c;
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
    for (int a = 0; a < 3; ++a) {
        double f = fmin(inside[a], g.cell - inside[a]);
        face = fmin(face, f);
    }
    double best[KNN_MAX];
    int count = 0;
    for (long long ring = 0; ring <= max_ring; ++ring) {
        long long zlo = lo[2] > -ring ? lo[2] : -ring, zhi = hi[2] < ring ? hi[2] : ring;
        long long ylo = lo[1] > -ring ? lo[1] : -ring, yhi = hi[1] < ring ? hi[1] : ring;
        long long xlo = lo[0] > -ring ? lo[0] : -ring, xhi = hi[0] < ring ? hi[0] : ring;
        for (long long oz = zlo; oz <= zhi; ++oz) {
            for (long long oy = ylo; oy <= yhi; ++oy) {
                double gy = oy == 0 ? 0.0
                            : (oy > 0 ? (double)(oy - 1) * g.cell + (g.cell - inside[1])
                                      : (double)(-oy - 1) * g.cell + inside[1]);
                double gz = oz == 0 ? 0.0
                            : (oz > 0 ? (double)(oz - 1) * g.cell + (g.cell - inside[2])
                                      : (double)(-oz - 1) * g.cell + inside[2]);
                double yz2 = gy * gy + gz * gz;
                bool full_row = (oz < 0 ? -oz : oz) == ring || (oy < 0 ? -oy : oy) == ring;
                long long step = full_row ? 1 : 2 * ring;
                for (long long ox = full_row ? xlo : -ring; ox <= (full_row ? xhi : ring);
                     ox += (step > 0 ? step : 1)) {
                    if (!full_row && (ox < xlo || ox > xhi)) continue;
                    double gx = ox == 0 ? 0.0
                                : (ox > 0 ? (double)(ox - 1) * g.cell + (g.cell - inside[0])
                                          : (double)(-ox - 1) * g.cell + inside[0]);
                    if (count == k && gx * gx + yz2 > best[k - 1]) continue;
                    long long cx = ((long long)centre[0] + ox) % g.n[0];
                    long long cy = ((long long)centre[1] + oy) % g.n[1];
                    long long cz = ((long long)centre[2] + oz) % g.n[2];
                    if (cx < 0) cx += g.n[0];
                    if (cy < 0) cy += g.n[1];
                    if (cz < 0) cz += g.n[2];
                    unsigned long long cellno =
                        ((unsigned long long)cz * g.n[1] + cy) * g.n[0] + cx;
                    unsigned s = starts[cellno], e = starts[cellno + 1];
                    for (unsigned j = s; j < e; ++j) {
                        if (j == i) continue;
                        double d2 = dist2(g, p, pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]);
                        if (count == k && !(d2 < best[k - 1])) continue;
                        // Insert after the equal ones (partition_point(b <= d2)), dropping the
                        // last when full.
                        int at = count < k ? count : k - 1;
                        while (at > 0 && best[at - 1] > d2) {
                            best[at] = best[at - 1];
                            --at;
                        }
                        best[at] = d2;
                        if (count < k) ++count;
                    }
                }
            }
        }
        double covered = (double)ring * g.cell + face;
        if (count == k && best[k - 1] <= covered * covered) break;
    }
    out[i] = count >= k ? (float)sqrt(best[k - 1]) : 0.0f;
}
