// ---------------------------------------------------------------------------------------------
// 4b. (appended to kernels/fof.cu by the loader; uses its hash, union-find and geometry.)
//     Morton order only: coarse blocks of 4×4×4 cells. A block is a run of 64 consecutive
//     Morton keys (cell key >> 6 is the block's own Morton key), so its non-empty cells are
//     consecutive in the sorted cell list: a block table entry (first cell, 64-bit occupancy
//     mask in Morton-local bit order) gives every cell of the block by one bit test and a
//     popcount. One hash probe then serves a whole block of neighbour cells instead of one.

// Morton-local index (0..63) of 2-bit local coordinates, the low 6 bits of the cell's key.
__device__ u32 morton_local(u32 x, u32 y, u32 z) {
    return (x & 1u) | ((y & 1u) << 1) | ((z & 1u) << 2) | ((x & 2u) << 2) | ((y & 2u) << 3) |
           ((z & 2u) << 4);
}

__device__ u64 block_of_coords(u64 coords) {
    u32 x = (u32)(coords & 0x1fffffULL) >> 2;
    u32 y = (u32)((coords >> 21) & 0x1fffffULL) >> 2;
    u32 z = (u32)((coords >> 42) & 0x1fffffULL) >> 2;
    return pack_coords(x, y, z);
}

__device__ bool is_block_head(const u64* __restrict__ cell_coords, u32 c) {
    return c == 0 || block_of_coords(cell_coords[c]) != block_of_coords(cell_coords[c - 1]);
}

// counters[0] += number of blocks (first cells of a block), one global atomic per thread block.
extern "C" __global__ void fof_block_count(const u64* __restrict__ cell_coords, u32 n_cells,
                                           u32* counters) {
    __shared__ u32 heads;
    if (threadIdx.x == 0) heads = 0;
    __syncthreads();
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < n_cells && is_block_head(cell_coords, c)) atomicAdd(&heads, 1u);
    __syncthreads();
    if (threadIdx.x == 0 && heads > 0) atomicAdd(&counters[0], heads);
}

// The first cell of every block inserts (block coords → first cell, occupancy mask).
extern "C" __global__ void fof_block_insert(const u64* __restrict__ cell_coords, u32 n_cells,
                                            u64* __restrict__ table_keys,
                                            u32* __restrict__ table_first,
                                            u64* __restrict__ table_occupied, u64 mask) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells || !is_block_head(cell_coords, c)) return;
    u64 key = block_of_coords(cell_coords[c]);
    u64 occupied = 0;
    for (u32 d = c; d < n_cells && d < c + 64; d++) {
        u64 coords = cell_coords[d];
        if (block_of_coords(coords) != key) break;
        occupied |= 1ULL << morton_local((u32)coords & 3u, (u32)(coords >> 21) & 3u,
                                         (u32)(coords >> 42) & 3u);
    }
    u64 slot = hash_slot(key, mask);
    while (true) {
        u64 previous = atomicCAS(&table_keys[slot], EMPTY_KEY, key);
        if (previous == EMPTY_KEY) {
            table_first[slot] = c;
            table_occupied[slot] = occupied;
            return;
        }
        slot = (slot + 1) & mask;
    }
}

__device__ u64 block_find(const u64* __restrict__ table_keys, u64 mask, u64 key) {
    u64 slot = hash_slot(key, mask);
    while (true) {
        u64 k = table_keys[slot];
        if (k == key) return slot;
        if (k == EMPTY_KEY) return EMPTY_KEY;
        slot = (slot + 1) & mask;
    }
}

// Dense alternative to the hash (when the grid has few blocks per non-empty cell): slot =
// row-major block index over ceil(dims / 4) blocks, no probing; an empty block has occupancy 0.
// Block coordinates are ≥ 0 here; those beyond the grid have no slot.
__device__ u64 block_slot(const u64* __restrict__ table_keys, u64 mask, int dense, u32 nbx,
                          u32 nby, u32 nbz, u32 bx, u32 by, u32 bz) {
    if (dense) {
        if (bx >= nbx || by >= nby || bz >= nbz) return EMPTY_KEY;
        return (u64)bx + (u64)nbx * ((u64)by + (u64)nby * (u64)bz);
    }
    return block_find(table_keys, mask, pack_coords(bx, by, bz));
}

// Dense block table: every cell ORs its bit into its block's occupancy (zeroed before), the
// block's first cell (in sorted order) writes its index. No count, no probing.
extern "C" __global__ void fof_block_dense(const u64* __restrict__ cell_coords, u32 n_cells,
                                           u32 nbx, u32 nby, u32* __restrict__ table_first,
                                           u64* __restrict__ table_occupied) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    u64 coords = cell_coords[c];
    u32 x = (u32)(coords & 0x1fffffULL), y = (u32)((coords >> 21) & 0x1fffffULL),
        z = (u32)((coords >> 42) & 0x1fffffULL);
    u64 slot = (u64)(x >> 2) + (u64)nbx * ((u64)(y >> 2) + (u64)nby * (u64)(z >> 2));
    atomicOr(&table_occupied[slot], 1ULL << morton_local(x & 3u, y & 3u, z & 3u));
    if (is_block_head(cell_coords, c)) table_first[slot] = c;
}

// fof_link over the block table. Fast path: the host's table stencil_masks[local * 27 + bo]
// holds, for a cell at Morton-local position `local`, the half-stencil cells inside the
// neighbour block at block offset bo = (bdx+1) + 3(bdy+1) + 9(bdz+1) (reach ≤ 4 < block side),
// so a cell probes at most 27 (in practice ≤ 8 non-empty) blocks. It needs block coordinates
// that wrap like cell coordinates: open boundaries, or a periodic grid with dims divisible by
// 4, or a cell whose whole stencil stays inside the grid. Other cells (near a periodic face of
// a grid not divisible by 4) walk the stencil offsets one by one, each through the block table.
extern "C" __global__ void fof_link_blocks(const u32* __restrict__ cell_start,
                                           const u64* __restrict__ cell_coords, u32 n_cells,
                                           const double* __restrict__ sx,
                                           const double* __restrict__ sy,
                                           const double* __restrict__ sz,
                                           const u64* __restrict__ table_keys,
                                           const u32* __restrict__ table_first,
                                           const u64* __restrict__ table_occupied, u64 mask,
                                           const u64* __restrict__ stencil_masks, int use_masks,
                                           const int* __restrict__ stencil, u32 n_stencil,
                                           int reach, u32 dim_x, u32 dim_y, u32 dim_z,
                                           int periodic, double box_size, double ll2,
                                           int dense, u32* parent) {
    u32 c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    u64 coords = cell_coords[c];
    int cell[3] = {(int)(coords & 0x1fffffULL), (int)((coords >> 21) & 0x1fffffULL),
                   (int)((coords >> 42) & 0x1fffffULL)};
    int dims[3] = {(int)dim_x, (int)dim_y, (int)dim_z};
    u32 nbx = (dim_x + 3u) >> 2, nby = (dim_y + 3u) >> 2, nbz = (dim_z + 3u) >> 2;
    bool wrap_blocks = periodic && dims[0] % 4 == 0 && dims[1] % 4 == 0 && dims[2] % 4 == 0;
    bool interior = true;
    for (int a = 0; a < 3; a++) interior = interior && cell[a] >= reach && cell[a] + reach < dims[a];
    if (use_masks && (!periodic || wrap_blocks || interior)) {
        u32 local = morton_local((u32)cell[0] & 3u, (u32)cell[1] & 3u, (u32)cell[2] & 3u);
        for (int bo = 0; bo < 27; bo++) {
            u64 wanted = stencil_masks[local * 27 + bo];
            if (wanted == 0) continue;
            int q[3] = {(cell[0] >> 2) + bo % 3 - 1, (cell[1] >> 2) + (bo / 3) % 3 - 1,
                        (cell[2] >> 2) + bo / 9 - 1};
            bool inside = true;
            for (int a = 0; a < 3; a++) {
                if (wrap_blocks) {
                    int nb = dims[a] >> 2;
                    q[a] = (q[a] + nb) % nb;
                } else if (q[a] < 0) {
                    inside = false;
                }
            }
            if (!inside) continue;
            u64 slot =
                block_slot(table_keys, mask, dense, nbx, nby, nbz, q[0], q[1], q[2]);
            if (slot == EMPTY_KEY) continue;
            u64 occupied = table_occupied[slot];
            u64 hits = occupied & wanted;
            if (hits == 0) continue;
            u32 first = table_first[slot];
            while (hits) {
                u32 bit = (u32)(__ffsll((long long)hits) - 1);
                hits &= hits - 1;
                u32 b = first + (u32)__popcll(occupied & ((1ULL << bit) - 1));
                link_cells(cell_start, sx, sy, sz, periodic, box_size, ll2, parent, c, b);
            }
        }
        return;
    }
    u64 cached_key = EMPTY_KEY;
    u64 cached_slot = EMPTY_KEY;
    for (u32 o = 0; o < n_stencil; o++) {
        int q[3];
        bool inside = true;
        for (int a = 0; a < 3; a++) {
            q[a] = cell[a] + stencil[3 * o + a];
            if (periodic) {
                q[a] %= dims[a];
                if (q[a] < 0) q[a] += dims[a];
            } else if (q[a] < 0 || q[a] >= dims[a]) {
                inside = false;
            }
        }
        if (!inside) continue;
        u64 key = pack_coords((u32)q[0] >> 2, (u32)q[1] >> 2, (u32)q[2] >> 2);
        if (key != cached_key) {
            cached_key = key;
            cached_slot = block_slot(table_keys, mask, dense, nbx, nby, nbz, (u32)q[0] >> 2,
                                     (u32)q[1] >> 2, (u32)q[2] >> 2);
        }
        if (cached_slot == EMPTY_KEY) continue;
        u64 occupied = table_occupied[cached_slot];
        u32 bit = morton_local((u32)q[0] & 3u, (u32)q[1] & 3u, (u32)q[2] & 3u);
        if (((occupied >> bit) & 1ULL) == 0) continue;
        u32 b = table_first[cached_slot] + (u32)__popcll(occupied & ((1ULL << bit) - 1));
        link_cells(cell_start, sx, sy, sz, periodic, box_size, ll2, parent, c, b);
    }
}
