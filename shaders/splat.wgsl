// Splotch splats as instanced triangles with additive blending into an Rgba32Float target
// (DESIGN §4). One instance per particle, one triangle covering the particle's footprint box
// of whole pixels; the fragment keeps pixel centres with dx² + dy² ≤ R² and adds
// exp(−dx²/σ²)·exp(−dy²/σ²)·e, the CPU twin's weight. The projection follows
// render/project.rs line for line, except that q = pos − lookat is taken as (pos − hi) − lo
// with the f64 look-at point split into two f32 parts.

struct View {
    lookat_hi: vec4<f32>,
    lookat_lo: vec4<f32>,
    x_hat: vec4<f32>,
    y_hat: vec4<f32>,
    z_hat: vec4<f32>,
    // distance, scale, half_width, half_height
    camera: vec4<f32>,
    // width_px, height_px, near, far
    image: vec4<f32>,
    // min_radius_px, size_factor, brightness, perspective (1 or 0)
    style: vec4<f32>,
    // tile origin x, y and tile width, height in pixels
    tile: vec4<f32>,
    // has_colour (1 or 0), palette stops, exactly 1 (see `mul`), unused
    colour: vec4<f32>,
};

const AMPLITUDE_FACTOR: f32 = 0.096304914;
const SIGMA_FACTOR: f32 = 0.41315374;
const CUT_FACTOR: f32 = 0.75;
const OFF_SCREEN: vec4<f32> = vec4<f32>(4.0, 4.0, 0.5, 1.0);

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> palette: array<vec4<f32>>;
// x, y, z, h per particle (h ≤ 0 for particles the CPU found non-finite).
@group(0) @binding(2) var<storage, read> pos_h: array<vec4<f32>>;
// Normalised intensity n and colour coordinate per particle.
@group(0) @binding(3) var<storage, read> values: array<vec2<f32>>;

struct Splat {
    @builtin(position) position: vec4<f32>,
    @location(0) @interpolate(flat) centre: vec2<f32>,
    @location(1) @interpolate(flat) sigma_cut: vec2<f32>,
    @location(2) @interpolate(flat) rgb: vec3<f32>,
};

// a·b rounded on its own: the product times a uniform 1 is a product the compiler cannot fold,
// so a following addition may be fused only as fma(a·b, 1, c), which rounds like the CPU's
// separate multiply and add (the CPU reference uses no fused multiply-add).
fn mul(a: f32, b: f32) -> f32 {
    return a * b * view.colour.z;
}

// a/b correctly rounded in practice: GPU division may be off by an ulp or two, and sub-pixel
// splats turn an ulp of position into a visible change of weight. One residual step (exact with
// fma) recovers the rounded quotient.
fn div(a: f32, b: f32) -> f32 {
    let q = a / b;
    let r = fma(-q, b, a);
    return q + r / b;
}

// √x refined the same way.
fn root(x: f32) -> f32 {
    let s = sqrt(x);
    if s == 0.0 {
        return s;
    }
    let r = fma(-s, s, x);
    return s + r / (2.0 * s);
}

fn sample_palette(x_in: f32) -> vec3<f32> {
    // matplotlib's lookup, as render/palette.rs: entry i holds x in [i/n, (i + 1)/n); below 0
    // and NaN (every comparison false) take entry 0, 1 and above the last entry.
    let n = u32(view.colour.y);
    let t = x_in * f32(n);
    var i = 0u;
    if t >= f32(n) {
        i = n - 1u;
    } else if t > 0.0 {
        i = u32(t);
    }
    return palette[i].xyz;
}

fn inactive() -> Splat {
    var out: Splat;
    out.position = OFF_SCREEN;
    out.centre = vec2<f32>(0.0);
    out.sigma_cut = vec2<f32>(1.0, 0.0);
    out.rgb = vec3<f32>(0.0);
    return out;
}

@vertex
fn vs_main(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance: u32) -> Splat {
    let p = pos_h[instance];
    let h = p.w;
    let q = (p.xyz - view.lookat_hi.xyz) - view.lookat_lo.xyz;
    let x_c = mul(q.x, view.x_hat.x) + mul(q.y, view.x_hat.y) + mul(q.z, view.x_hat.z);
    let y_c = mul(q.x, view.y_hat.x) + mul(q.y, view.y_hat.y) + mul(q.z, view.y_hat.z);
    let z_c = (mul(q.x, view.z_hat.x) + mul(q.y, view.z_hat.y) + mul(q.z, view.z_hat.z))
        - view.camera.x;
    let depth = -z_c;
    if !(depth > view.image.z && depth < view.image.w && h > 0.0) {
        return inactive();
    }
    var s = view.camera.y;
    if view.style.w > 0.5 {
        s = div(view.camera.y, depth);
    }
    let x_px = view.camera.z + mul(s, x_c);
    let y_px = view.camera.w - mul(s, y_c);
    let r0 = mul(mul(mul(2.0, h), s), view.style.y);
    let m = view.style.x;
    var c = 1.0;
    if m > 0.0 {
        c = div(root(mul(r0, r0) + mul(m, m)), r0);
    }
    let radius = mul(r0, c);
    if !(radius > 0.0 && radius < 1.0e30 && abs(x_px) < 1.0e30 && abs(y_px) < 1.0e30) {
        return inactive();
    }
    let cut = mul(CUT_FACTOR, radius);
    // Footprint box of whole pixels: columns i with |i + 0.5 − X| ≤ R, rows likewise.
    let i0 = ceil(x_px - cut - 0.5);
    let i1 = floor(x_px + cut - 0.5);
    let j0 = ceil(y_px - cut - 0.5);
    let j1 = floor(y_px + cut - 0.5);
    if i0 > i1 || j0 > j1 || i1 < 0.0 || j1 < 0.0 || i0 >= view.image.x || j0 >= view.image.y {
        return inactive();
    }
    let values_here = values[instance];
    let amplitude = div(div(mul(values_here.x, AMPLITUDE_FACTOR), h), c);
    var colour = vec3<f32>(1.0);
    if view.colour.x > 0.5 {
        colour = sample_palette(values_here.y);
    }
    let b = view.style.z;
    // The box's corners relative to the tile, kept just outside it so clip space stays small.
    let lo_x = clamp(i0 - view.tile.x, -1.0, view.tile.z + 1.0);
    let hi_x = clamp(i1 + 1.0 - view.tile.x, -1.0, view.tile.z + 1.0);
    let lo_y = clamp(j0 - view.tile.y, -1.0, view.tile.w + 1.0);
    let hi_y = clamp(j1 + 1.0 - view.tile.y, -1.0, view.tile.w + 1.0);
    // One triangle holding the box: (lo, lo), (lo + 2w, lo), (lo, lo + 2h). Raster engines
    // of compute GPUs set up few triangles per clock, and the disc test discards the extra
    // pixels, so one triangle (three projections) beats a quad (two triangles, four).
    let corner = array<vec2<f32>, 3>(
        vec2<f32>(lo_x, lo_y),
        vec2<f32>(2.0 * hi_x - lo_x, lo_y),
        vec2<f32>(lo_x, 2.0 * hi_y - lo_y),
    );
    let pixel = corner[vertex];
    var out: Splat;
    out.position = vec4<f32>(
        2.0 * pixel.x / view.tile.z - 1.0,
        1.0 - 2.0 * pixel.y / view.tile.w,
        0.5,
        1.0,
    );
    out.centre = vec2<f32>(x_px, y_px);
    out.sigma_cut = vec2<f32>(mul(SIGMA_FACTOR, radius), cut);
    out.rgb = vec3<f32>(colour.x * amplitude * b, colour.y * amplitude * b, colour.z * amplitude * b);
    return out;
}

@fragment
fn fs_main(splat: Splat) -> @location(0) vec4<f32> {
    // frag position = pixel centre (i + 0.5, j + 0.5) within the tile.
    let dx = (splat.position.x + view.tile.x) - splat.centre.x;
    let dy = (splat.position.y + view.tile.y) - splat.centre.y;
    let cut = splat.sigma_cut.y;
    if mul(dx, dx) + mul(dy, dy) > mul(cut, cut) {
        discard;
    }
    let s2 = mul(splat.sigma_cut.x, splat.sigma_cut.x);
    let w = exp(-(dx * dx) / s2) * exp(-(dy * dy) / s2);
    return vec4<f32>(splat.rgb * w, 0.0);
}
