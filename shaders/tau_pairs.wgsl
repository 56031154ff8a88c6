// τ as (lo, hi) u32 word pairs added with 32-bit atomics and an explicit carry: what every
// adapter has. Put before splat.wgsl, which calls `tau_add`.

// τ of the image tile: per pixel, per channel, (lo, hi) words of v·2^k.
@group(0) @binding(4) var<storage, read_write> tau: array<atomic<u32>>;

// Adds the fixed-point pair f into τ word pair `at` (lo at `at`, hi after it): the invocation
// whose addition wraps the low word carries one into the high word.
fn tau_add(at: u32, f: vec2<u32>) {
    var hi = f.y;
    if f.x != 0u {
        let old = atomicAdd(&tau[at], f.x);
        if old + f.x < old {
            hi = hi + 1u;
        }
    }
    if hi != 0u {
        atomicAdd(&tau[at + 1u], hi);
    }
}
