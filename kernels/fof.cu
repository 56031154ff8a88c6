// Friends-of-friends on the GPU: cell keys, cell table, union-find linking (the sort by cell
// key is the generic radix sort of kernels/sort_scan.cu).
//
// The twin of src/halo/cpu/link.rs (DESIGN §5). Cells have side ≤ ll/√3, so all members of one
// cell are friends and the union-find runs over cells; a pair of neighbouring cells joins at the
// first member pair with d² ≤ ll² (float64, minimum image when periodic), evaluated with the
// same operations in the same order as the CPU (compiled with --fmad=false), so the partition is
// identical. Neighbour cells are found through a table of the non-empty 4×4×4 blocks of cells
// (kernels/fof_blocks.cu; open-addressing hash when the grid is sparse), so memory stays O(N)
// however fine the grid. Union-find: hooking by compare-and-swap of the larger
// root under the smaller, path halving in find (Anderson & Woll 1991; ECL-CC, Jaiganesh &
// Burtscher 2018). No recursion, no per-thread stack.
//
// Self-contained: NVRTC compiles this without CUDA headers.

typedef unsigned int u32;
typedef unsigned long long u64;

#define EMPTY_KEY 0xffffffffffffffffULL

// ---------------------------------------------------------------------------------------------
// Geometry: the same float64 operations as BoxFrame::wrap, BoxFrame::min_image and
// CellGrid::build's cell index in src/halo.

__device__ double wrap_coord(double x, double lower, double size) {
    double upper = lower + size;
    if (x >= lower && x < upper) return x;
    double y = x - size * floor((x - lower) / size);
    if (y >= upper) y -= size;
    return y < lower ? lower : y;
}

__device__ double min_image(double d, double size) {
    double half = 0.5 * size;
    if (d > half) return d - size;
    if (d < -half) return d + size;
    return d;
}

__device__ u32 cell_index(double x, double lower, double side, u32 dim) {
    double t = floor((x - lower) / side);
    if (t <= 0.0) return 0;
    if (t >= (double)(dim - 1)) return dim - 1;
    return (u32)t;
}

__device__ u64 pack_coords(u32 x, u32 y, u32 z) {
    return (u64)x | ((u64)y << 21) | ((u64)z << 42);
}

// Spreads the low 21 bits of v so that two zero bits follow each bit (as order::morton_key).
__device__ u64 spread_bits(u32 v) {
    u64 x = (u64)v & 0x1fffffULL;
    x = (x | (x << 32)) & 0x001f00000000ffffULL;
    x = (x | (x << 16)) & 0x001f0000ff0000ffULL;
    x = (x | (x << 8)) & 0x100f00f00f00f00fULL;
    x = (x | (x << 4)) & 0x10c30c30c30c30c3ULL;
    x = (x | (x << 2)) & 0x1249249249249249ULL;
    return x;
}

// Position of particle i, wrapped into the periodic frame when periodic, in float64.
__device__ void load_position(const float* __restrict__ pos, u64 i, int periodic,
                              double box_lower, double box_size, double* p) {
    for (int a = 0; a < 3; a++) {
        double x = (double)pos[3 * i + a];
        p[a] = periodic ? wrap_coord(x, box_lower, box_size) : x;
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Cell keys: the Morton (Z-order) key of the cell coordinates.

extern "C" __global__ void fof_cell_keys(const float* __restrict__ pos, u32 n, int periodic,
                                         double box_lower, double box_size, double lower_x,
                                         double lower_y, double lower_z, double side, u32 dim_x,
                                         u32 dim_y, u32 dim_z, u64* __restrict__ keys,
                                         u32* __restrict__ values) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double p[3];
    load_position(pos, i, periodic, box_lower, box_size, p);
    u32 cx = cell_index(p[0], lower_x, side, dim_x);
    u32 cy = cell_index(p[1], lower_y, side, dim_y);
    u32 cz = cell_index(p[2], lower_z, side, dim_z);
    u64 key = spread_bits(cx) | (spread_bits(cy) << 1) | (spread_bits(cz) << 2);
    keys[i] = key;
    values[i] = i;
}

// ---------------------------------------------------------------------------------------------
// 2. Sorted positions and cells (after the radix sort by cell key, kernels/sort_scan.cu).

// Wrapped float64 positions in sorted order, and a 1 where a new cell starts.
extern "C" __global__ void fof_gather(const float* __restrict__ pos, const u32* __restrict__ order,
                                      const u64* __restrict__ sorted_keys, u32 n, int periodic,
                                      double box_lower, double box_size, double* __restrict__ sx,
                                      double* __restrict__ sy, double* __restrict__ sz,
                                      u32* __restrict__ head) {
    u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) return;
    double p[3];
    load_position(pos, order[s], periodic, box_lower, box_size, p);
    sx[s] = p[0];
    sy[s] = p[1];
    sz[s] = p[2];
    head[s] = (s == 0 || sorted_keys[s] != sorted_keys[s - 1]) ? 1u : 0u;
}

// For every cell head: its start and packed coordinates; the last thread closes the list.
extern "C" __global__ void fof_cells(const u32* __restrict__ head, const u32* __restrict__ cell_of_head,
                                     const double* __restrict__ sx, const double* __restrict__ sy,
                                     const double* __restrict__ sz, u32 n, double lower_x,
                                     double lower_y, double lower_z, double side, u32 dim_x,
                                     u32 dim_y, u32 dim_z, u32* __restrict__ cell_start,
                                     u64* __restrict__ cell_coords) {
    u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n) return;
    if (head[s]) {
        u32 c = cell_of_head[s];
        cell_start[c] = s;
        cell_coords[c] = pack_coords(cell_index(sx[s], lower_x, side, dim_x),
                                     cell_index(sy[s], lower_y, side, dim_y),
                                     cell_index(sz[s], lower_z, side, dim_z));
    }
    if (s == n - 1) cell_start[cell_of_head[s] + head[s]] = n;
}

// ---------------------------------------------------------------------------------------------
// 3. The slot of a key in an open-addressing hash table (linear probing; kernels/fof_blocks.cu).

__device__ u64 hash_slot(u64 key, u64 mask) {
    // MurmurHash3's 64-bit finaliser (Appleby).
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ULL;
    key ^= key >> 33;
    return key & mask;
}

// ---------------------------------------------------------------------------------------------
// 4. Union-find over cells.

// Root of x with path halving; parents are read through volatile so that other blocks' hooks
// are seen (no stale L1 copies).
__device__ u32 find_root(u32* parent, u32 x) {
    volatile u32* vparent = parent;
    while (true) {
        u32 p = vparent[x];
        if (p == x) return x;
        u32 gp = vparent[p];
        if (gp != p) atomicCAS(&parent[x], p, gp);
        x = gp;
    }
}

// Joins the sets of a and b: the larger root is hooked under the smaller by compare-and-swap,
// retried from the new roots when another thread hooked first.
__device__ void unite(u32* parent, u32 a, u32 b) {
    u32 ra = find_root(parent, a);
    u32 rb = find_root(parent, b);
    while (ra != rb) {
        u32 low = ra < rb ? ra : rb;
        u32 high = ra < rb ? rb : ra;
        if (atomicCAS(&parent[high], high, low) == high) return;
        ra = find_root(parent, high);
        rb = find_root(parent, low);
    }
}

extern "C" __global__ void fof_init_parent(u32* __restrict__ parent, u32 n_cells) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < n_cells) parent[c] = c;
}

// Cells c and b (b from c's half stencil) join when some member pair is within ll.
__device__ void link_cells(const u32* __restrict__ cell_start, const double* __restrict__ sx,
                           const double* __restrict__ sy, const double* __restrict__ sz,
                           int periodic, double box_size, double ll2, u32* parent, u32 c,
                           u32 b) {
    if (b == c) return;
    if (find_root(parent, c) == find_root(parent, b)) return;
    u32 a_first = cell_start[c];
    u32 a_last = cell_start[c + 1];
    u32 b_first = cell_start[b];
    u32 b_last = cell_start[b + 1];
    for (u32 i = a_first; i < a_last; i++) {
        double px = sx[i], py = sy[i], pz = sz[i];
        for (u32 j = b_first; j < b_last; j++) {
            double dx = px - sx[j];
            double dy = py - sy[j];
            double dz = pz - sz[j];
            if (periodic) {
                dx = min_image(dx, box_size);
                dy = min_image(dy, box_size);
                dz = min_image(dz, box_size);
            }
            if (dx * dx + dy * dy + dz * dz <= ll2) {
                unite(parent, c, b);
                return;
            }
        }
    }
}

// Every cell points at its root (the smallest cell index of its set).
extern "C" __global__ void fof_compress(u32* parent, u32 n_cells) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < n_cells) parent[c] = find_root(parent, c);
}

// Per particle (input order): the root cell of its cell, a set id below n.
extern "C" __global__ void fof_labels(const u32* __restrict__ cell_start,
                                      const u32* __restrict__ parent,
                                      const u32* __restrict__ order, u32 n_cells,
                                      u32* __restrict__ set_ids) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    u32 root = parent[c];
    for (u32 s = cell_start[c]; s < cell_start[c + 1]; s++) set_ids[order[s]] = root;
}

// ---------------------------------------------------------------------------------------------
// 5. From sets to halo labels (the catalogue's first step, as catalogue::partition on the CPU).
//    Sizes and smallest members are integers, so the atomics' order does not matter.

// Per cell: its member count is added to its root's set size and its smallest particle index
// taken into the root's smallest member (set_size starts at 0, set_min at all ones).
extern "C" __global__ void fof_set_stats(const u32* __restrict__ cell_start,
                                         const u32* __restrict__ parent,
                                         const u32* __restrict__ order, u32 n_cells,
                                         u32* set_size, u32* set_min) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    u32 root = parent[c];
    u32 first = cell_start[c];
    u32 last = cell_start[c + 1];
    u32 smallest = 0xffffffffu;
    for (u32 s = first; s < last; s++) smallest = order[s] < smallest ? order[s] : smallest;
    atomicAdd(&set_size[root], last - first);
    atomicMin(&set_min[root], smallest);
}

// Counts the roots of sets without ghosts (counters[0]: sets of every size) and lists the roots
// of those with at least min_members members (counters[1] of them, in a racy order the host
// sorts; slots at or beyond capacity are never written).
extern "C" __global__ void fof_kept_sets(const u32* __restrict__ parent,
                                         const u32* __restrict__ set_size,
                                         const u32* __restrict__ set_min,
                                         const u32* __restrict__ has_ghost, u32 n_cells,
                                         u32 min_members, u32 capacity, u32* counters,
                                         u32* __restrict__ kept_root, u32* __restrict__ kept_size,
                                         u32* __restrict__ kept_min) {
    __shared__ u32 block_roots;
    if (threadIdx.x == 0) block_roots = 0;
    __syncthreads();
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    // Sets that hold a ghost (particles at or beyond n_owned of a domain) are neither counted
    // nor kept: the merge across domains owns them.
    if (c < n_cells && parent[c] == c && has_ghost[c] == 0) {
        // One global atomic per block instead of one per root.
        atomicAdd(&block_roots, 1u);
        u32 size = set_size[c];
        if (size >= min_members) {
            u32 k = atomicAdd(&counters[1], 1u);
            if (k < capacity) {
                kept_root[k] = c;
                kept_size[k] = size;
                kept_min[k] = set_min[c];
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && block_roots > 0) atomicAdd(&counters[0], block_roots);
}

// A domain's particles are its owned ones (indices below n_owned) then its ghosts: every set
// with a ghost member gets has_ghost[root] = 1 (has_ghost starts at zeros).
extern "C" __global__ void fof_ghost_sets(const u32* __restrict__ cell_start,
                                          const u32* __restrict__ parent,
                                          const u32* __restrict__ order, u32 n_cells,
                                          u32 n_owned, u32* __restrict__ has_ghost) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    for (u32 s = cell_start[c]; s < cell_start[c + 1]; s++) {
        if (order[s] >= n_owned) {
            has_ghost[parent[c]] = 1;
            return;
        }
    }
}

// The members of the sets with a ghost, as (particle index, root) pairs in a racy order: each
// such cell reserves its slots with one atomic on counter[0] (the total needed, even past
// capacity; slots at or beyond capacity are never written).
extern "C" __global__ void fof_boundary_members(const u32* __restrict__ cell_start,
                                                const u32* __restrict__ parent,
                                                const u32* __restrict__ order,
                                                const u32* __restrict__ has_ghost, u32 n_cells,
                                                u32 capacity, u32* counter,
                                                u32* __restrict__ member,
                                                u32* __restrict__ member_set) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    u32 root = parent[c];
    if (has_ghost[root] == 0) return;
    u32 first = cell_start[c];
    u32 count = cell_start[c + 1] - first;
    u32 at = atomicAdd(counter, count);
    for (u32 k = 0; k < count; k++) {
        if (at + k < capacity) {
            member[at + k] = order[first + k];
            member_set[at + k] = root;
        }
    }
}

// rank_of_cell[root of the k-th halo in catalogue order] = k (every other entry stays −1).
extern "C" __global__ void fof_rank_roots(const u32* __restrict__ ranked_roots, u32 n_kept,
                                          u32* __restrict__ rank_of_cell) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n_kept) rank_of_cell[ranked_roots[k]] = k;
}

// Per particle (input order): the halo rank of its set, or −1 (all ones), as fof_labels.
extern "C" __global__ void fof_halo_labels(const u32* __restrict__ cell_start,
                                           const u32* __restrict__ parent,
                                           const u32* __restrict__ order,
                                           const u32* __restrict__ rank_of_cell, u32 n_cells,
                                           u32* __restrict__ labels) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    u32 label = rank_of_cell[parent[c]];
    for (u32 s = cell_start[c]; s < cell_start[c + 1]; s++) labels[order[s]] = label;
}
