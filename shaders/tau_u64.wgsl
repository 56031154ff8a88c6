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

// The tiles pass's register sums with `WIDE` (splat.wgsl): one u64 per pixel and channel,
// added with the adapter's 64-bit integer addition, where (lo, hi) pairs take a carry test.
alias Wide = u64;

fn wide_zero() -> Wide {
    return 0lu;
}

// x (a value times 2^k, +0 ≤ x < 2^62) rounded to nearest, ties to even, as `fixed_words`
// gives it: x below 2^23 as `fixed_words` rounds it (x + 2^23 rounds x to an integer), x from
// 2^23 up (an integer already) by the conversion, exact there. `u64(round(x))` instead gave
// other words on the H200 for every x from 2^32 up (NVIDIA's `round` there), so τ differed.
fn wide_of(x: f32) -> Wide {
    let near = u64(bitcast<u32>(x + 8388608.0) - 0x4b000000u);
    return select(u64(x), near, x < 8388608.0);
}

fn wide_add(acc: Wide, x: f32) -> Wide {
    return acc + wide_of(x);
}

// The sum as (lo, hi) words.
fn wide_words(acc: Wide) -> vec2<u32> {
    return vec2<u32>(u32(acc & 0xfffffffflu), u32(acc >> 32u));
}
