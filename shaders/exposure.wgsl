// Auto exposure on the device (render/exposure.rs's nearest-rank percentile of every lit
// pixel's largest channel), from the fixed-point τ of shaders/splat.wgsl. Positive finite f32
// values order as their bit patterns do, so two histograms of 65 536 bins find the exact
// value: `histogram_high` counts by the high 16 bits, the host finds the bin holding the rank,
// and `histogram_low` counts that bin's values by their low 16 bits. The layout is tone.wgsl's.

struct Tone {
    // unused here
    params: vec4<f32>,
    // 2^(32 − k), 2^(−k), unused, unused
    fixed: vec4<f32>,
    // tile width, tile height in pixels, the high bin of the second pass, unused
    size: vec4<u32>,
};

@group(0) @binding(0) var<uniform> tone: Tone;
@group(0) @binding(1) var<storage, read> tau: array<u32>;
@group(0) @binding(2) var<storage, read_write> bins: array<atomic<u32>>;

// As tone.wgsl's, so that the percentile is taken of the values `resolve` would give.
fn tau_at(at: u32) -> f32 {
    return f32(tau[at + 1u]) * tone.fixed.x + f32(tau[at]) * tone.fixed.y;
}

// The bits of the pixel's largest channel, or 0 when it is not lit (τ ≤ 0 or not finite).
fn lit_bits(id: vec3<u32>) -> u32 {
    if id.x >= tone.size.x || id.y >= tone.size.y {
        return 0u;
    }
    let at = (id.y * tone.size.x + id.x) * 6u;
    let v = max(max(tau_at(at), tau_at(at + 2u)), tau_at(at + 4u));
    let bits = bitcast<u32>(v);
    if !(v > 0.0) || bits >= 0x7f800000u {
        return 0u;
    }
    return bits;
}

@compute @workgroup_size(16, 16)
fn histogram_high(@builtin(global_invocation_id) id: vec3<u32>) {
    let bits = lit_bits(id);
    if bits != 0u {
        atomicAdd(&bins[bits >> 16u], 1u);
    }
}

@compute @workgroup_size(16, 16)
fn histogram_low(@builtin(global_invocation_id) id: vec3<u32>) {
    let bits = lit_bits(id);
    if bits != 0u && (bits >> 16u) == tone.size.z {
        atomicAdd(&bins[bits & 0xffffu], 1u);
    }
}
