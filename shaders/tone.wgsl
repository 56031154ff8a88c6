// Tone map on the device (render/tone.rs's tone_value, 8 bits): one invocation per pixel of a
// tile reads τ from the Rgba32Float target and writes one packed RGBA8 word, so only the
// 8-bit image is read back.

struct Tone {
    // tau_scale, gamma, contrast, tile width in pixels
    params: vec4<f32>,
};

@group(0) @binding(0) var<uniform> tone: Tone;
@group(0) @binding(1) var tau: texture_2d<f32>;
@group(0) @binding(2) var<storage, read_write> image: array<u32>;

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
    let size = textureDimensions(tau);
    if id.x >= size.x || id.y >= size.y {
        return;
    }
    let t = textureLoad(tau, vec2<i32>(id.xy), 0);
    image[id.y * size.x + id.x] = level(t.x) | (level(t.y) << 8u) | (level(t.z) << 16u) | (255u << 24u);
}
