// ---------------------------------------------------------------------------------------------
// Friends-of-friends on spatial domains, split on the devices (src/halo/cuda/split.rs): each
// device routes its share of the particles to the slabs that need them (the owner and every
// slab for which it is a ghost), with the float64 operations of src/halo/domains/decompose.rs
// (compiled with --fmad=false), then compacts them per slab, owned and ghosts apart, in index
// order. Appended to kernels/fof.cu (wrap_coord).

// Rust's f64::rem_euclid.
__device__ double rem_euclid(double a, double b) {
    double r = fmod(a, b);
    return r < 0.0 ? r + fabs(b) : r;
}

// Lower and upper edge of slab d (infinite at the open ends), as Decomposition::interval.
__device__ void slab_interval(const double* __restrict__ cuts, u32 n_cuts, int periodic,
                              double box_lower, double box_size, u32 d, double* lower,
                              double* upper) {
    double first = periodic ? box_lower : -1.0 / 0.0;
    double last = periodic ? box_lower + box_size : 1.0 / 0.0;
    *lower = d == 0 ? first : cuts[d - 1];
    *upper = d < n_cuts ? cuts[d] : last;
}

// Decomposition::is_ghost_of.
__device__ bool is_ghost_of(double x, u32 d, const double* __restrict__ cuts, u32 n_cuts,
                            int periodic, double box_lower, double box_size, double ghost) {
    double lower, upper;
    slab_interval(cuts, n_cuts, periodic, box_lower, box_size, d, &lower, &upper);
    double gap;
    if (periodic) {
        if (upper - lower + 2.0 * ghost >= box_size) return true;
        gap = fmin(rem_euclid(lower - x, box_size), rem_euclid(x - upper, box_size));
    } else if (x < lower) {
        gap = lower - x;
    } else {
        gap = x - upper;
    }
    return gap <= ghost;
}

// Decomposition::deep_inside.
__device__ bool deep_inside(double x, u32 owner, const double* __restrict__ cuts, u32 n_cuts,
                            int periodic, double box_lower, double box_size, double ghost) {
    double lower, upper;
    slab_interval(cuts, n_cuts, periodic, box_lower, box_size, owner, &lower, &upper);
    double margin = 1.5 * ghost;
    if (!(x - lower > margin && upper - x > margin)) return false;
    if (!periodic) return true;
    for (u32 d = 0; d <= n_cuts; d++) {
        slab_interval(cuts, n_cuts, periodic, box_lower, box_size, d, &lower, &upper);
        if (!(upper - lower + 2.0 * ghost < box_size)) return false;
    }
    return true;
}

// Per particle of the share: its owner slab in bits 0-7 and, in bit 8 + d, whether it is a
// ghost of slab d (Decomposition::owner_of and ghost_domains: the walk outwards from the
// owner in both directions, stopping at the first slab out of reach). At most 24 slabs.
extern "C" __global__ void fof_route(const float* __restrict__ pos, u32 n, u32 axis,
                                     const double* __restrict__ cuts, u32 n_cuts, int periodic,
                                     double box_lower, double box_size, double ghost,
                                     u32* __restrict__ route) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = (double)pos[3 * (u64)i + axis];
    if (periodic) x = wrap_coord(x, box_lower, box_size);
    u32 owner = 0;
    while (owner < n_cuts && cuts[owner] <= x) owner++;
    u32 mask = 0;
    u32 n_slabs = n_cuts + 1;
    if (!deep_inside(x, owner, cuts, n_cuts, periodic, box_lower, box_size, ghost)) {
        for (int step = 1; step >= -1; step -= 2) {
            for (u32 k = 1; k < n_slabs; k++) {
                long long d = (long long)owner + step * (long long)k;
                if (periodic) {
                    d = ((d % (long long)n_slabs) + n_slabs) % n_slabs;
                } else if (d < 0 || d >= (long long)n_slabs) {
                    break;
                }
                if ((u32)d == owner ||
                    !is_ghost_of(x, (u32)d, cuts, n_cuts, periodic, box_lower, box_size, ghost))
                    break;
                mask |= 1u << (u32)d;
            }
        }
    }
    route[i] = owner | (mask << 8);
}

// For slab `slab`: flag 1 where the particle is owned by it, and where it is its ghost.
extern "C" __global__ void fof_route_flags(const u32* __restrict__ route, u32 n, u32 slab,
                                           u32* __restrict__ owned, u32* __restrict__ ghost) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 r = route[i];
    owned[i] = (r & 0xffu) == slab ? 1u : 0u;
    ghost[i] = (r >> (8 + slab)) & 1u;
}

// Slab `slab`'s particles of the share, owned ones at their owned scan, ghosts after the
// `n_owned` owned ones at their ghost scan: positions, global indices (`first` + i), and the
// masses and velocities when flagged.
extern "C" __global__ void fof_route_scatter(
    const u32* __restrict__ route, u32 n, u32 slab, const u32* __restrict__ owned_at,
    const u32* __restrict__ ghost_at, u32 n_owned, const float* __restrict__ pos, u32 first,
    const float* __restrict__ mass, int has_mass, const float* __restrict__ vel, int has_vel,
    float* __restrict__ out_pos, u32* __restrict__ out_id, float* __restrict__ out_mass,
    float* __restrict__ out_vel) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u32 r = route[i];
    u64 k;
    if ((r & 0xffu) == slab) {
        k = owned_at[i];
    } else if ((r >> (8 + slab)) & 1u) {
        k = (u64)n_owned + ghost_at[i];
    } else {
        return;
    }
    for (int a = 0; a < 3; a++) out_pos[3 * k + a] = pos[3 * (u64)i + a];
    out_id[k] = first + i;
    if (has_mass) out_mass[k] = mass[i];
    if (has_vel)
        for (int a = 0; a < 3; a++) out_vel[3 * k + a] = vel[3 * (u64)i + a];
}

// out[j] = the position (three floats) of particle index[j].
extern "C" __global__ void fof_gather_points(const float* __restrict__ pos,
                                             const u32* __restrict__ index, u32 m,
                                             float* __restrict__ out) {
    u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    u64 i = index[j];
    for (int a = 0; a < 3; a++) out[3 * (u64)j + a] = pos[3 * i + a];
}

// out[j] = src[index[j]].
extern "C" __global__ void fof_gather_words(const u32* __restrict__ src,
                                            const u32* __restrict__ index, u32 m,
                                            u32* __restrict__ out) {
    u32 j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    out[j] = src[index[j]];
}
