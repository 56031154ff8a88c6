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

// The tiles pass's register sums with `WIDE` (splat.wgsl), which needs 64-bit integers: the
// host sets WIDE only with tau_u64.wgsl, so these (lo, hi) stand-ins keep the module valid
// and are never reached.
alias Wide = vec2<u32>;

fn wide_zero() -> Wide {
    return vec2<u32>(0u);
}

fn wide_of(x: f32) -> Wide {
    return fixed_words(x);
}

fn wide_add(acc: Wide, x: f32) -> Wide {
    return add_pairs(acc, wide_of(x));
}

fn wide_words(acc: Wide) -> vec2<u32> {
    return acc;
}
