// τ as u64 words added with one 64-bit atomic each, for adapters with 64-bit storage atomics
// (wgpu's SHADER_INT64_ATOMIC_ALL_OPS): the same bytes as the (lo, hi) pairs of
// tau_pairs.wgsl, half the atomics, and none waits for its result. Put before splat.wgsl.

// τ of the image tile: per pixel, per channel, v·2^k as one little-endian u64.
@group(0) @binding(4) var<storage, read_write> tau: array<atomic<u64>>;

// Adds the fixed-point pair f (lo, hi) into the u64 at word `at` (always even).
fn tau_add(at: u32, f: vec2<u32>) {
    if f.x == 0u && f.y == 0u {
        return;
    }
    atomicAdd(&tau[at >> 1u], (u64(f.y) << 32u) | u64(f.x));
}
