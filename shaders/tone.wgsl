// From the fixed-point τ of an image tile (shaders/splat.wgsl: per pixel, per channel, the
// (lo, hi) words of τ·2^k) to what leaves the device: `resolve` writes τ as f32 (three per
// pixel, for the CPU's auto exposure, FITS and 16-bit images), `tone8` applies render/tone.rs's
// tone_value and writes one packed RGBA8 word per pixel, so only the 8-bit image comes back (or
// none: the window copies those words into its texture, rows `size.w` words apart).

struct Tone {
    // tau_scale, gamma, contrast, unused
    params: vec4<f32>,
    // 2^(32 − k), 2^(−k), unused, unused
    fixed: vec4<f32>,
    // tile width, tile height in pixels, the histogram's high bin (exposure.wgsl), tone8's row
    // stride in words (at least the width: a texture copy wants rows of 256 bytes)
    size: vec4<u32>,
};

@group(0) @binding(0) var<uniform> tone: Tone;
@group(0) @binding(1) var<storage, read> tau: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn tau_at(at: u32) -> f32 {
    return f32(tau[at + 1u]) * tone.fixed.x + f32(tau[at]) * tone.fixed.y;
}

fn tone_value(t: f32) -> f32 {
    var v = 1.0 - exp(-(t * tone.params.x));
    if tone.params.y != 1.0 {
        v = pow(max(v, 0.0), tone.params.y);
    }
    v = tone.params.z * v;
    if !(v == v) {
        return 0.0;
    }
    return clamp(v, 0.0, 1.0);
}

fn level(t: f32) -> u32 {
    return u32(floor(tone_value(t) * 255.0 + 0.5));
}

@compute @workgroup_size(16, 16)
fn tone8(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= tone.size.x || id.y >= tone.size.y {
        return;
    }
    let at = (id.y * tone.size.x + id.x) * 6u;
    out[id.y * tone.size.w + id.x] = level(tau_at(at)) | (level(tau_at(at + 2u)) << 8u) | (level(tau_at(at + 4u)) << 16u) | (255u << 24u);
}

@compute @workgroup_size(16, 16)
fn resolve(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= tone.size.x || id.y >= tone.size.y {
        return;
    }
    let pixel = id.y * tone.size.x + id.x;
    for (var c = 0u; c < 3u; c += 1u) {
        out[3u * pixel + c] = bitcast<u32>(tau_at(6u * pixel + 2u * c));
    }
}
