// Exclusive scan and stable LSD radix sort of (u64 key, u32 value) pairs, one tile of
// BLOCK × ITEMS elements per block (src/gpu/scan.rs and src/gpu/sort.rs drive them).
//
// Self-contained: NVRTC compiles this without CUDA headers.

typedef unsigned int u32;
typedef unsigned long long u64;

#define BLOCK 256
#define ITEMS 8
#define TILE (BLOCK * ITEMS)
#define RADIX_BITS 4
#define RADIX_BUCKETS 16

// ---------------------------------------------------------------------------------------------
// 1. Block-wide exclusive scan of 8 packed words per thread (Hillis & Steele), in shared memory
//    laid out word-major to avoid bank conflicts. Returns the exclusive prefix in `words`.

__device__ void block_exclusive_scan8(u32* words, u32 (*buf)[8][BLOCK]) {
    u32 t = threadIdx.x;
    for (int w = 0; w < 8; w++) buf[0][w][t] = words[w];
    __syncthreads();
    int src = 0;
    for (u32 offset = 1; offset < BLOCK; offset <<= 1) {
        for (int w = 0; w < 8; w++) {
            u32 v = buf[src][w][t];
            if (t >= offset) v += buf[src][w][t - offset];
            buf[1 - src][w][t] = v;
        }
        __syncthreads();
        src = 1 - src;
    }
    for (int w = 0; w < 8; w++) words[w] = buf[src][w][t] - words[w];
    __syncthreads();
}

// Exclusive scan of u32 values, one tile of TILE per block; tile totals go to tile_sums.
extern "C" __global__ void scan_tiles(const u32* __restrict__ in, u32* __restrict__ out,
                                      u32* __restrict__ tile_sums, u32 n) {
    __shared__ u32 buf[2][8][BLOCK];
    u64 first = (u64)blockIdx.x * TILE + (u64)threadIdx.x * ITEMS;
    u32 v[ITEMS];
    u32 own = 0;
    for (int j = 0; j < ITEMS; j++) {
        u64 i = first + j;
        v[j] = i < n ? in[i] : 0u;
        own += v[j];
    }
    u32 words[8] = {own, 0, 0, 0, 0, 0, 0, 0};
    block_exclusive_scan8(words, buf);
    u32 running = words[0];
    for (int j = 0; j < ITEMS; j++) {
        u64 i = first + j;
        if (i < n) out[i] = running;
        running += v[j];
    }
    if (threadIdx.x == BLOCK - 1) tile_sums[blockIdx.x] = running;
}

// Adds the scanned tile totals to every element of its tile.
extern "C" __global__ void scan_add(u32* __restrict__ out, const u32* __restrict__ tile_offsets,
                                    u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += tile_offsets[i / TILE];
}

// ---------------------------------------------------------------------------------------------
// 2. Stable LSD radix sort of (u64 key, u32 value), 4 bits a pass. Each thread owns ITEMS
//    consecutive elements of its block's tile; 16 digit counters are packed two to a word
//    (a tile holds at most 2048 < 2^16 elements, so no carry crosses a lane).

__device__ void tile_digits(const u64* __restrict__ keys, u32 n, u32 shift, u64 first,
                            u64* k, u32* d, u32* packed) {
    for (int w = 0; w < 8; w++) packed[w] = 0;
    for (int j = 0; j < ITEMS; j++) {
        u64 i = first + j;
        if (i < n) {
            k[j] = keys[i];
            d[j] = (u32)(k[j] >> shift) & (RADIX_BUCKETS - 1);
            packed[d[j] >> 1] += 1u << (16 * (d[j] & 1));
        } else {
            k[j] = 0;
            d[j] = RADIX_BUCKETS;
        }
    }
}

// Per tile and digit: how many keys of the tile have that digit; counts[digit * n_tiles + tile].
extern "C" __global__ void radix_count(const u64* __restrict__ keys, u32 n, u32 shift,
                                       u32* __restrict__ counts, u32 n_tiles) {
    __shared__ u32 totals[RADIX_BUCKETS];
    if (threadIdx.x < RADIX_BUCKETS) totals[threadIdx.x] = 0;
    __syncthreads();
    u64 first = (u64)blockIdx.x * TILE + (u64)threadIdx.x * ITEMS;
    u64 k[ITEMS];
    u32 d[ITEMS];
    u32 packed[8];
    tile_digits(keys, n, shift, first, k, d, packed);
    for (int digit = 0; digit < RADIX_BUCKETS; digit++) {
        u32 c = (packed[digit >> 1] >> (16 * (digit & 1))) & 0xffffu;
        if (c) atomicAdd(&totals[digit], c);
    }
    __syncthreads();
    if (threadIdx.x < RADIX_BUCKETS) counts[threadIdx.x * n_tiles + blockIdx.x] = totals[threadIdx.x];
}

// Moves each element to offsets[digit * n_tiles + tile] + its rank among the tile's elements
// with that digit (threads in element order, then items in order: stable).
extern "C" __global__ void radix_scatter(const u64* __restrict__ keys_in,
                                         const u32* __restrict__ values_in,
                                         u64* __restrict__ keys_out, u32* __restrict__ values_out,
                                         u32 n, u32 shift, const u32* __restrict__ offsets,
                                         u32 n_tiles) {
    __shared__ u32 buf[2][8][BLOCK];
    __shared__ u32 base[RADIX_BUCKETS];
    if (threadIdx.x < RADIX_BUCKETS) base[threadIdx.x] = offsets[threadIdx.x * n_tiles + blockIdx.x];
    u64 first = (u64)blockIdx.x * TILE + (u64)threadIdx.x * ITEMS;
    u64 k[ITEMS];
    u32 d[ITEMS];
    u32 packed[8];
    tile_digits(keys_in, n, shift, first, k, d, packed);
    block_exclusive_scan8(packed, buf);
    for (int j = 0; j < ITEMS; j++) {
        u32 digit = d[j];
        if (digit >= RADIX_BUCKETS) continue;
        u32 lane = 16 * (digit & 1);
        u32 rank = (packed[digit >> 1] >> lane) & 0xffffu;
        packed[digit >> 1] += 1u << lane;
        u32 dst = base[digit] + rank;
        keys_out[dst] = k[j];
        values_out[dst] = values_in[first + j];
    }
}
