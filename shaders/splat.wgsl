// Splotch splats on compute passes into a 64-bit fixed-point τ (DESIGN §4), the CUDA twin's
// method in portable WGSL: core WGSL has no 64-bit atomics, so τ values are (lo, hi) pairs of
// u32 words with an explicit carry, or u64 where the adapter has 64-bit atomics (the file put
// before this one says which). A value v goes in as v·2^k rounded to nearest (k from the
// frame's bound on τ), so sums in any order give the same bits.
//
// classify: one invocation per particle projects it exactly as render/project.rs does (the
//   look-at point split into two f32 parts, products kept unfused, division and √ refined to the
//   rounded result) and takes its box of whole pixels; a splat whose box has at most
//   SMALL_SIDE pixels a side is added straight into τ with atomics; a larger one leaves its
//   record (x, y, σ, cut, rgb) at its own index and counts itself into every 16×16 screen tile
//   its box touches (pooled per workgroup, see `pool_slot`).
// scatter: every recorded splat writes its index into the lists of the tiles it touches (the
//   host turned the counts into list offsets), for the tiles of one band, in runs of slots
//   reserved per workgroup.
// tiles: one workgroup per segment of a screen tile's list; batches of 256 records go through
//   workgroup memory. Splats whose box within the tile is at most `view.tuning.y` pixels a side
//   are drawn by 8 invocations each (the box's pixels strided over them, the batch's splats in
//   order of cost with CORDER) into fixed-point sums in workgroup memory (21-bit parts added
//   without waiting, see `add_parts`); for the larger ones
//   each quarter of the workgroup takes every fourth splat and each of its invocations sums a
//   2×2 group of pixels in registers (QUADS; else every invocation its own pixel, 32 holding an
//   8×4 block). Each pixel then adds its sums to τ once.
// τ itself and `tau_add` come from tau_pairs.wgsl or tau_u64.wgsl, put before this file.
// The weight of one pixel is the CPU twin's: |i + ½ − X| ≤ cut on both axes (the box),
// dx² + dy² ≤ cut², exp(−dx²/σ²)·exp(−dy²/σ²) times the splat's colour.

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
    // has_colour (1 or 0), palette stops, exactly 1 (see `mul`), 2^(k − 32)
    colour: vec4<f32>,
    // screen tiles across, screen tiles down, particles in the chunk, where the chunk's records
    // start in the batch's `records` (see `record_at`)
    grid: vec4<u32>,
    // widest box added directly with atomics, widest box within a screen tile drawn splat by
    // splat in workgroup memory (pixels; 0 turns each off) in the low byte with above it the
    // largest such box by area (pixels; 0 for none beyond the widest), the tiles pass's
    // pixels in 8×4 blocks per 32 invocations (1) or in rows (0), the medium sums as 21-bit
    // parts (1) or as (lo, hi) words with a carry (0)
    tuning: vec4<u32>,
};

// One band of screen tiles: range = (first tile, end tile, list offset of the first tile,
// unused); segments = (first segment, segments, where the segment table starts in `offsets`,
// unused). A segment is at most SEGMENT entries of one tile's list, (tile, start) in the table.
struct Band {
    range: vec4<u32>,
    segments: vec4<u32>,
};

const AMPLITUDE_FACTOR: f32 = 0.096304914;
const SIGMA_FACTOR: f32 = 0.41315374;
const CUT_FACTOR: f32 = 0.75;
// Screen tile side in pixels (the tiles pass's workgroup is TILE × TILE).
const TILE: u32 = 16u;
// Invocations per workgroup of the per-particle passes.
const GROUP: u32 = 256u;
// Most list entries one workgroup of the tiles pass sums: dense tiles are cut into segments
// that run side by side, adding their sums into τ with atomics.
const SEGMENT: u32 = 1024u;

@group(0) @binding(0) var<uniform> view: View;
@group(0) @binding(1) var<storage, read> palette: array<vec4<f32>>;
// x, y, z, h per particle (h ≤ 0 for particles the CPU found non-finite).
@group(0) @binding(2) var<storage, read> pos_h: array<vec4<f32>>;
// Normalised intensity n and colour coordinate per particle.
@group(0) @binding(3) var<storage, read> values: array<vec2<f32>>;
// Binding 4, τ, is declared with `tau_add` in tau_pairs.wgsl or tau_u64.wgsl.
// Two vec4 per particle of a batch of chunks, each chunk's from `view.grid.w` on: (x, y, σ,
// cut) and (rgb, 0); σ < 0 when not a tile splat. The tile lists hold indices into it.
@group(0) @binding(5) var<storage, read_write> records: array<vec4<f32>>;
// classify: splats per screen tile; scatter: the fill of each tile's list.
@group(0) @binding(6) var<storage, read_write> counts: array<atomic<u32>>;
// Start of each screen tile's list (tiles + 1 values, an exclusive prefix sum of the counts),
// then the segment table of every band.
@group(0) @binding(7) var<storage, read> offsets: array<u32>;
// The lists: particle indices, tile after tile, for one band.
@group(0) @binding(8) var<storage, read_write> entries: array<u32>;
@group(0) @binding(9) var<uniform> band: Band;

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

// v·2^k as (lo, hi) words, rounded to nearest: v·2^(k−32) splits exactly into its integer part
// (hi) and fraction, and the fraction times 2^32 is exact in f32 before rounding.
fn to_fixed(v: f32) -> vec2<u32> {
    let t = v * view.colour.w;
    let hi = floor(t);
    let lo = round((t - hi) * 4294967296.0);
    if lo >= 4294967296.0 {
        return vec2<u32>(0u, u32(hi) + 1u);
    }
    return vec2<u32>(u32(lo), u32(hi));
}

// Adds v·2^k into τ word pair `at`.
fn add_tau(at: u32, v: f32) {
    if !(v > 0.0) {
        return;
    }
    tau_add(at, to_fixed(v));
}

// A projected splat; `drawn` false when the particle draws nothing in this image tile.
struct Projected {
    drawn: bool,
    x_px: f32,
    y_px: f32,
    sigma: f32,
    cut: f32,
    rgb: vec3<f32>,
};

fn project(index: u32) -> Projected {
    var out: Projected;
    out.drawn = false;
    let p = pos_h[index];
    let h = p.w;
    let q = (p.xyz - view.lookat_hi.xyz) - view.lookat_lo.xyz;
    let x_c = mul(q.x, view.x_hat.x) + mul(q.y, view.x_hat.y) + mul(q.z, view.x_hat.z);
    let y_c = mul(q.x, view.y_hat.x) + mul(q.y, view.y_hat.y) + mul(q.z, view.y_hat.z);
    let z_c = (mul(q.x, view.z_hat.x) + mul(q.y, view.z_hat.y) + mul(q.z, view.z_hat.z))
        - view.camera.x;
    let depth = -z_c;
    if !(depth > view.image.z && depth < view.image.w && h > 0.0) {
        return out;
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
        return out;
    }
    let values_here = values[index];
    let amplitude = div(div(mul(values_here.x, AMPLITUDE_FACTOR), h), c);
    var colour = vec3<f32>(1.0);
    if view.colour.x > 0.5 {
        colour = sample_palette(values_here.y);
    }
    let b = view.style.z;
    out.drawn = true;
    out.x_px = x_px;
    out.y_px = y_px;
    out.sigma = mul(SIGMA_FACTOR, radius);
    out.cut = mul(CUT_FACTOR, radius);
    out.rgb = vec3<f32>(colour.x * amplitude * b, colour.y * amplitude * b, colour.z * amplitude * b);
    return out;
}

// The splat's box of whole pixels (|i + 0.5 − X| ≤ cut, rows likewise) clipped to the image
// tile, in image pixels: (i0, i1, j0, j1), empty when i0 > i1 or j0 > j1.
fn clipped_box(x_px: f32, y_px: f32, cut: f32) -> vec4<f32> {
    let i0 = max(ceil(x_px - cut - 0.5), view.tile.x);
    let i1 = min(floor(x_px + cut - 0.5), view.tile.x + view.tile.z - 1.0);
    let j0 = max(ceil(y_px - cut - 0.5), view.tile.y);
    let j1 = min(floor(y_px + cut - 0.5), view.tile.y + view.tile.w - 1.0);
    return vec4<f32>(i0, i1, j0, j1);
}

// The splat's weight at the centre of pixel (i, j), 0 outside its disc.
// Mesa (lavapipe) rewrites exp(a)·exp(b) as exp2 of a sum, so factors computed apart (a table,
// or once per column and row) give other bits there unless each is multiplied by the uniform
// 1 first. The tiles pass with such per-column and per-row factors in workgroup memory
// (batches of 128 records, larger splats in sub-batches of 16) kept τ's bits on the H200 but was
// slower (10⁸ colour, 2048²: R0 = 4 72 → 96-100 ms, R0 = 16 416 → 521-524 ms; the 10⁷ movie at
// 1080p 42.5 → 33.9 frames/s), so it is not used.
fn weight(i: f32, j: f32, x_px: f32, y_px: f32, s2: f32, cut2: f32) -> f32 {
    let dx = (i + 0.5) - x_px;
    let dy = (j + 0.5) - y_px;
    if mul(dx, dx) + mul(dy, dy) > cut2 {
        return 0.0;
    }
    return exp(-(dx * dx) / s2) * exp(-(dy * dy) / s2);
}

// `weight` from the offsets dx = i + ½ − X and dy = j + ½ − Y, with the disc test as a select
// rather than a branch, so that a compiler shares the exp of a column (or row) between the
// pixels of an invocation's 2×2 group (the tiles pass with QUADS). The pixel's value is the
// same: the same factors, product and test, written out per pixel (Mesa's exp2 rewrite, which
// needs each exp used once, still applies to every pixel before common terms are merged).
fn weight_at(dx: f32, dy: f32, s2: f32, cut2: f32) -> f32 {
    let w = exp(-(dx * dx) / s2) * exp(-(dy * dy) / s2);
    return select(w, 0.0, mul(dx, dx) + mul(dy, dy) > cut2);
}

// Index of τ word pair (pixel (i, j) of the image, channel 0) in the tile's buffer.
fn tau_index(i: f32, j: f32) -> u32 {
    let col = u32(i - view.tile.x);
    let row = u32(j - view.tile.y);
    return (row * u32(view.tile.z) + col) * 6u;
}

fn particle_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.x + gid.y * groups.x * GROUP;
}

// The first of the two `records` of the chunk's particle `index`.
fn record_at(index: u32) -> u32 {
    return 2u * (view.grid.w + index);
}

// Tile counts and list slots are pooled per workgroup: the invocations add 1 per tile into a
// small table in workgroup memory (open addressing by tile), and one global atomic per distinct
// tile then adds the workgroup's count (classify) or reserves its run of list slots (scatter).
// Neighbouring particles (a halo's, listed together) share their few tiles, so a dense tile
// takes one global atomic per workgroup instead of one per splat. A tile the table cannot take
// (its probes all held by other tiles), and every tile of a splat touching more than POOL_TILES,
// goes straight to the global counts as before. Only the order of a tile's list changes with
// this: the tiles pass sums integers, the same in any order.
const POOL_SLOTS: u32 = 1024u;
const POOL_PROBES: u32 = 8u;
const POOL_TILES: u32 = 16u;
const NO_TILE: u32 = 0xffffffffu;
var<workgroup> pool_tile: array<atomic<u32>, 1024>;
var<workgroup> pool_count: array<atomic<u32>, 1024>;
// scatter: the first list slot of the workgroup's run in each pooled tile.
var<workgroup> pool_base: array<u32, 1024>;

fn pool_clear(li: u32) {
    for (var s = li; s < POOL_SLOTS; s += GROUP) {
        atomicStore(&pool_tile[s], NO_TILE);
        atomicStore(&pool_count[s], 0u);
    }
}

// Whether a splat's tiles `t` (as `screen_tiles`) go through the pool.
fn pools(t: vec4<u32>) -> bool {
    return t.x <= t.y && t.z <= t.w && (t.y - t.x + 1u) * (t.w - t.z + 1u) <= POOL_TILES;
}

// The pool slot of `tile`, claimed when it is absent and `claim`; POOL_SLOTS when the probes
// meet only other tiles. Slots are never freed while the pool is in use, so a tile found, or
// refused, once stays found in the same slot, or refused, for the rest of the pass.
fn pool_slot(tile: u32, claim: bool) -> u32 {
    var s = (tile * 2654435761u) >> 22u;
    var probes = 0u;
    loop {
        if probes >= POOL_PROBES {
            return POOL_SLOTS;
        }
        var held = atomicLoad(&pool_tile[s]);
        if held == NO_TILE && claim {
            let r = atomicCompareExchangeWeak(&pool_tile[s], NO_TILE, tile);
            // A weak exchange may fail spuriously (the old value still NO_TILE): try again.
            if !r.exchanged && r.old_value == NO_TILE {
                continue;
            }
            held = select(r.old_value, tile, r.exchanged);
        }
        if held == tile {
            return s;
        }
        if held == NO_TILE {
            return POOL_SLOTS;
        }
        s = (s + 1u) & (POOL_SLOTS - 1u);
        probes += 1u;
    }
    return POOL_SLOTS;
}

@compute @workgroup_size(256)
fn classify(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    pool_clear(li);
    workgroupBarrier();
    let index = particle_index(gid, groups);
    if index < view.grid.z {
        classify_particle(index);
    }
    workgroupBarrier();
    for (var s = li; s < POOL_SLOTS; s += GROUP) {
        let tile = atomicLoad(&pool_tile[s]);
        if tile != NO_TILE {
            atomicAdd(&counts[tile], atomicLoad(&pool_count[s]));
        }
    }
}

// Projects particle `index`: adds a small splat straight into τ, or records a larger one and
// counts it into its screen tiles (through the pool).
fn classify_particle(index: u32) {
    let rec = record_at(index);
    records[rec] = vec4<f32>(0.0, 0.0, -1.0, 0.0);
    let s = project(index);
    if !s.drawn {
        return;
    }
    let bx = clipped_box(s.x_px, s.y_px, s.cut);
    if bx.x > bx.y || bx.z > bx.w {
        return;
    }
    let small = f32(view.tuning.x);
    // Merging the values of a subgroup's invocations that add to the same pixel in the same
    // step (ballot, shuffle, subgroupAdd of 21-bit parts, one atomic per group; exact) was
    // slower on an H200 at R0 = 0.3 with Morton-ordered particles (29.6 → 43-55 ms, 10⁸ colour).
    // So was CUDA's per-block window (`direct_block`: a workgroup's direct splats summed in
    // workgroup memory, 21-bit parts, when the union of their boxes fits 1024 pixels, then one
    // atomic per pixel and channel), τ the same bits: with the reorder, R0 = 0.3 / 1 / 4
    // 12.0 / 18.9 / 61.6 → 16.9 / 24.0 / 68.5 ms (10⁸ colour, 2048², SM clock up).
    if bx.y - bx.x < small && bx.w - bx.z < small {
        let s2 = mul(s.sigma, s.sigma);
        let cut2 = mul(s.cut, s.cut);
        for (var j = bx.z; j <= bx.w; j += 1.0) {
            for (var i = bx.x; i <= bx.y; i += 1.0) {
                let w = weight(i, j, s.x_px, s.y_px, s2, cut2);
                if w > 0.0 {
                    let at = tau_index(i, j);
                    add_tau(at, s.rgb.x * w);
                    add_tau(at + 2u, s.rgb.y * w);
                    add_tau(at + 4u, s.rgb.z * w);
                }
            }
        }
        return;
    }
    records[rec] = vec4<f32>(s.x_px, s.y_px, s.sigma, s.cut);
    records[rec + 1u] = vec4<f32>(s.rgb, 0.0);
    let t = screen_tiles(bx);
    let pooled = pools(t);
    for (var ty = t.z; ty <= t.w; ty += 1u) {
        for (var tx = t.x; tx <= t.y; tx += 1u) {
            let tile = ty * view.grid.x + tx;
            var slot = POOL_SLOTS;
            if pooled {
                slot = pool_slot(tile, true);
            }
            if slot < POOL_SLOTS {
                atomicAdd(&pool_count[slot], 1u);
            } else {
                atomicAdd(&counts[tile], 1u);
            }
        }
    }
}

// The screen tiles (tx0, tx1, ty0, ty1) a clipped box touches.
fn screen_tiles(bx: vec4<f32>) -> vec4<u32> {
    return vec4<u32>(
        u32(bx.x - view.tile.x) / TILE,
        u32(bx.y - view.tile.x) / TILE,
        u32(bx.z - view.tile.y) / TILE,
        u32(bx.w - view.tile.y) / TILE,
    );
}

// The screen tiles that particle `index`'s recorded splat touches; none (an empty range) when
// it is beyond the chunk or left no record.
fn recorded_tiles(index: u32) -> vec4<u32> {
    if index >= view.grid.z {
        return vec4<u32>(1u, 0u, 1u, 0u);
    }
    let a = records[record_at(index)];
    if a.z < 0.0 {
        return vec4<u32>(1u, 0u, 1u, 0u);
    }
    return screen_tiles(clipped_box(a.x, a.y, a.w));
}

@compute @workgroup_size(256)
fn scatter(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    pool_clear(li);
    workgroupBarrier();
    let index = particle_index(gid, groups);
    let t = recorded_tiles(index);
    let pooled = pools(t);
    // Count into the pool; a tile it refuses takes its slot from the global fill at once.
    for (var ty = t.z; ty <= t.w; ty += 1u) {
        for (var tx = t.x; tx <= t.y; tx += 1u) {
            let tile = ty * view.grid.x + tx;
            if tile >= band.range.x && tile < band.range.y {
                var slot = POOL_SLOTS;
                if pooled {
                    slot = pool_slot(tile, true);
                }
                if slot < POOL_SLOTS {
                    atomicAdd(&pool_count[slot], 1u);
                } else {
                    let at = atomicAdd(&counts[tile], 1u);
                    entries[offsets[tile] - band.range.z + at] = view.grid.w + index;
                }
            }
        }
    }
    workgroupBarrier();
    // One run of list slots per pooled tile; the counts start again to number the entries.
    for (var s = li; s < POOL_SLOTS; s += GROUP) {
        let tile = atomicLoad(&pool_tile[s]);
        if tile != NO_TILE {
            pool_base[s] = atomicAdd(&counts[tile], atomicLoad(&pool_count[s]));
            atomicStore(&pool_count[s], 0u);
        }
    }
    workgroupBarrier();
    if !pooled {
        return;
    }
    for (var ty = t.z; ty <= t.w; ty += 1u) {
        for (var tx = t.x; tx <= t.y; tx += 1u) {
            let tile = ty * view.grid.x + tx;
            if tile >= band.range.x && tile < band.range.y {
                let slot = pool_slot(tile, false);
                if slot < POOL_SLOTS {
                    let at = pool_base[slot] + atomicAdd(&pool_count[slot], 1u);
                    entries[offsets[tile] - band.range.z + at] = view.grid.w + index;
                }
            }
        }
    }
}

// Invocations drawing one splat of the workgroup-memory group (they take its box's pixels in
// turn); a power of two up to 32, fixed per pipeline (the host's `lanes` knob).
override LANES: u32 = 8u;

// One batch of a list: medium splats fill it from the front, larger ones from the back.
var<workgroup> batch_splat: array<vec4<f32>, 256>;
var<workgroup> batch_rgb: array<vec4<f32>, 256>;
// The splat's box within the screen tile as masks: bit x of the low half set for its columns,
// bit 16 + y for its rows, so that a pixel's test is one AND.
var<workgroup> batch_box: array<u32, 256>;
var<workgroup> batch_medium: atomic<u32>;
// With CORDER: the batch's medium splats per cost bin (rounds of LANES pixels, the last bin
// for every longer one).
const COST_BINS: u32 = 8u;
var<workgroup> batch_bins: array<atomic<u32>, 8>;
var<workgroup> batch_large: atomic<u32>;
// The medium splats' fixed-point sums per pixel and channel, pixel-major: (lo, hi) words, or
// with `view.tuning.w` the first two 21-bit parts (see `add_parts`).
var<workgroup> sum_lo: array<atomic<u32>, 768>;
var<workgroup> sum_hi: array<atomic<u32>, 768>;
var<workgroup> list_tile: u32;
var<workgroup> list_start: u32;
var<workgroup> list_end: u32;

// The tiles pass's variant, fixed per pipeline (the host compiles one per setting it uses):
// QUADS: each invocation of the larger splats' loop owns a 2×2 group of pixels, the workgroup's
// four quarters taking every fourth splat of a batch (see `tiles`); FOLD: the batch's rgb is
// loaded times 2^(k − 32), so `tile_fixed` converts without the product (the host uses it only
// where that is exact, see `fold_exact` in render/wgpu/frame.rs).
override QUADS: bool = false;
override FOLD: bool = false;
// Measuring aid: `tile_fixed` as `to_fixed`, with its carry test.
override CARRY: bool = false;
// INTFIX: `tile_fixed` by `fixed_bits` (integer operations on the value's bits) rather than
// `fixed_floor` (two roundings and two float-to-integer conversions, which run at a fraction
// of the float rate). On an H200 (10⁸ colour, 2048², the same call): R0 = 16 403.7 → 368.2 ms,
// R0 ≤ 4 unchanged. `fixed_words` with both of its cases as selects rather than branches was
// slower than `fixed_floor` (10⁷, R0 = 16: 43.7-44.5 → 46.1 ms; branches 39.5 ms).
override INTFIX: bool = false;
// FOLDK (with FOLD and INTFIX): the batch's rgb is loaded times 2^k rather than 2^(k − 32), so
// `tile_fixed` takes the words of the product straight (one product less per channel and
// pixel). Exact where FOLD is: as in `fold_exact` (render/wgpu/frame.rs), the scale commutes
// with rounding while values are normal, and a product below 2^−126 is at most
// 2^−126·max(1, 2^k) ≤ 2^−2 for k ≤ 124, whose words are 0 either way.
override FOLDK: bool = false;
// WIDE (with FOLD, and only after tau_u64.wgsl): the batch's rgb is loaded times 2^k (as with
// FOLDK) and each product becomes its fixed-point value by `wide_of` (one conversion to u64
// beside `fixed_words`' small case) rather than by `fixed_words`' shifts; the larger splats'
// register sums are u64 (`Wide`), added with one 64-bit addition rather than a carry test,
// each pixel of a 2×2 group behind its own branch (1) or all four without one (2). The same
// words: `wide_of` is `fixed_words` for every x in [+0, 2^62) (the render_wgpu test
// `wide_of_is_fixed_words`), and the values stay below the frame's bound times 2^k < 2^62.
// On an H200 through Vulkan (two calls, before and after alternated): the window's 10⁷ frame
// at 1920×1080 16.9-17.3 → 12.8-13.4 ms with 2 (13.6-13.8 with 1), its tiles pass 13.3 → 9.8
// ms; 10⁸ colour at 2048² with 2, R0 = 4 60.3 → 53.4 ms and R0 = 16 347 → 251 ms (R0 ≤ 1 within
// 0.5 ms).
override WIDE: u32 = 0u;
// CORDER: the medium splats of a batch placed in order of their lanes' rounds (see `tiles`).
// On an H200 through Vulkan (10⁸ colour, 2048², the same call): R0 = 4 48.3 → 40.7 ms, R0 = 16
// 236 → 218 ms, R0 ≤ 1 the same; the window's 10⁷ frame (with the runtime checks off too)
// 13.0 → 11.4-11.5 ms.
override CORDER: bool = false;

// `to_fixed` for the tiles pass: v·2^k as (lo, hi), v already times 2^(k − 32) with FOLD (2^k
// with FOLDK). Without `to_fixed`'s carry test, which never holds: t ≥ 0 (or NaN or ∞, which
// skip it alike), t − ⌊t⌋ lies on t's ulp grid, so it is at most 1 − 2^−24 (t < 1) or
// 1 − 2^−23 (t ≥ 1), and its rounded product by 2^32 stays below 2^32.
fn tile_fixed(v: f32) -> vec2<u32> {
    if CARRY && !FOLD {
        return to_fixed(v);
    }
    if FOLD && WIDE != 0u {
        return wide_words(wide_of(v));
    }
    if FOLD && INTFIX && FOLDK {
        return fixed_words(v);
    }
    var t = v;
    if !FOLD {
        t = v * view.colour.w;
    }
    if INTFIX {
        return fixed_bits(t);
    }
    return fixed_floor(t);
}

// The factor the batch's rgb is loaded with: 2^(k − 32) with FOLD, 2^k with FOLDK or WIDE.
fn fold_scale() -> f32 {
    if (INTFIX && FOLDK) || WIDE != 0u {
        return view.colour.w * 4294967296.0;
    }
    return view.colour.w;
}

// t·2^32 rounded to nearest, ties to even, as (lo, hi) words, for t in [0, 2^32) or −0: the
// whole part, then the fraction (exact) times 2^32 (exact) rounded by `round`.
fn fixed_floor(t: f32) -> vec2<u32> {
    let hi = floor(t);
    let lo = round((t - hi) * 4294967296.0);
    return vec2<u32>(u32(lo), u32(hi));
}

// `fixed_floor` by integer operations, the same words for every t in [0, 2^32) and −0
// (checked over every such f32 by the render_wgpu test `fixed_bits_is_fixed_floor`):
// x = |t|·2^32 is exact (a power-of-two scale of a normal or zero value stays normal; a
// subnormal t flushed to 0 here gives 0, as `fixed_floor` does, its x being below 2^−117).
fn fixed_bits(t: f32) -> vec2<u32> {
    return fixed_words(abs(t) * 4294967296.0);
}

// x ≥ +0, below 2^64, rounded to nearest, ties to even, as (lo, hi) words. From 2^23 up x is an
// integer, m·2^s with m the 24-bit significand and 0 ≤ s < 41: the 64-bit m << s, as words;
// first the usual case, a splat's value times 2^k between 2^23 and 2^55 (s below 32; below
// 2^23, s wraps far beyond). Below 2^23 x has a fraction: x + 2^23 lies in [2^23, 2^24], where
// the f32 spacing is 1, so the addition rounds x to the nearest integer, ties to even (as
// `round`), and the sum's bits less those of 2^23 are that integer (2^24 gives 2^23, right).
fn fixed_words(x: f32) -> vec2<u32> {
    let bits = bitcast<u32>(x);
    let s = (bits >> 23u) - 150u;
    let m = (bits & 0x7fffffu) | 0x800000u;
    if s < 32u {
        // m >> (32 − s) in two shifts below 32 (s = 0 gives 0).
        return vec2<u32>(m << s, (m >> 1u) >> (31u - s));
    }
    if bits < 0x4b000000u {
        return vec2<u32>(bitcast<u32>(x + 8388608.0) - 0x4b000000u, 0u);
    }
    return vec2<u32>(0u, m << ((s - 32u) & 31u));
}

// (lo, hi) += v·2^k in registers.
fn add_fixed(acc: vec2<u32>, v: f32) -> vec2<u32> {
    return add_pairs(acc, tile_fixed(v));
}

// The sum of two (lo, hi) pairs.
fn add_pairs(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    var hi = a.y + b.y;
    if lo < b.x {
        hi = hi + 1u;
    }
    return vec2<u32>(lo, hi);
}

// Adds v·2^k into the workgroup sum `at`, carrying as `tau_add` of tau_pairs.wgsl does.
fn add_shared(at: u32, v: f32) {
    if !(v > 0.0) {
        return;
    }
    let f = tile_fixed(v);
    var hi = f.y;
    if f.x != 0u {
        let old = atomicAdd(&sum_lo[at], f.x);
        if old + f.x < old {
            hi = hi + 1u;
        }
    }
    if hi != 0u {
        atomicAdd(&sum_hi[at], hi);
    }
}

// Adds v·2^k into the workgroup sum `at` as 21-bit parts: bits 0-20 into `sum_lo`, bits
// 21-41 into `sum_hi`, both by atomics whose result nobody waits for (`add_shared` waits for
// the low word to carry); the bits from 42 up (a splat carrying over 2^-20 of the frame's
// bound, rare) go straight into τ word pair `tau_at`. Exact: a workgroup adds at most SEGMENT
// = 2^10 splats, each once per pixel, so neither word passes 2^31.
fn add_parts(at: u32, tau_at: u32, v: f32) {
    if !(v > 0.0) {
        return;
    }
    // `fixed_words` straight from the value times 2^k (with WIDE) in place of `tile_fixed`
    // (the same words) was slower on an H200: R0 = 4's tiles pass 43.9 → 49.8 ms.
    let f = tile_fixed(v);
    atomicAdd(&sum_lo[at], f.x & 0x1fffffu);
    atomicAdd(&sum_hi[at], (f.x >> 21u) | ((f.y & 0x3ffu) << 11u));
    let top = f.y & ~0x3ffu;
    if top != 0u {
        tau_add(tau_at, vec2<u32>(0u, top));
    }
}

// The workgroup sum `at` as a (lo, hi) pair.
fn shared_sum(at: u32) -> vec2<u32> {
    let lo = atomicLoad(&sum_lo[at]);
    let hi = atomicLoad(&sum_hi[at]);
    if view.tuning.w != 0u {
        return add_pairs(vec2<u32>(hi << 21u, hi >> 11u), vec2<u32>(lo, 0u));
    }
    return vec2<u32>(lo, hi);
}

// Bits first..=last (both below 16) set.
fn span_mask(first: u32, last: u32) -> u32 {
    return ((2u << last) - 1u) & ~((1u << first) - 1u);
}

// CUDA's wide-border design was slower here: each larger splat listed once, by its centre
// tile, and a workgroup summing the tile plus a 12 px border as 21-bit parts (`add_parts`) in
// 43 KB of workgroup memory, with 8 or 32 invocations per splat over its box or its rows' chords.
// τ had the same bits, but on an H200 (10⁸ colour, 2048²) R0 = 4 took 96-226 ms against 62 and
// R0 = 16 738-949 against 369: six workgroup atomics per pixel and splat, where this pass adds
// in registers.
@compute @workgroup_size(16, 16)
fn tiles(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let segment = wg.x + wg.y * groups.x;
    if li == 0u {
        if segment < band.segments.y {
            let at = band.segments.z + 2u * (band.segments.x + segment);
            let t = offsets[at];
            list_tile = t;
            list_start = offsets[at + 1u];
            list_end = min(offsets[at + 1u] + SEGMENT, offsets[t + 1u] - band.range.z);
        } else {
            list_tile = 0u;
            list_start = 0u;
            list_end = 0u;
        }
    }
    for (var c = 0u; c < 3u; c += 1u) {
        atomicStore(&sum_lo[3u * li + c], 0u);
        atomicStore(&sum_hi[3u * li + c], 0u);
    }
    let tile = workgroupUniformLoad(&list_tile);
    let start = workgroupUniformLoad(&list_start);
    let end = workgroupUniformLoad(&list_end);
    let ox = view.tile.x + f32((tile % view.grid.x) * TILE);
    let oy = view.tile.y + f32((tile / view.grid.x) * TILE);
    // The invocation's pixel of the screen tile. With `view.tuning.z`, 32 consecutive
    // invocations (one warp on NVIDIA) hold an 8×4 block rather than two 16-pixel rows, so
    // that fewer of a warp's lanes idle beside busy ones at the edge of a larger splat's box
    // or disc, and more warps skip a splat whole.
    var px = lid.x;
    var py = lid.y;
    if view.tuning.z != 0u {
        px = ((li / 32u) % 2u) * 8u + li % 8u;
        py = (li / 64u) * 4u + (li % 32u) / 8u;
    }
    let i = ox + f32(px);
    let j = oy + f32(py);
    let inside = i < view.tile.x + view.tile.z && j < view.tile.y + view.tile.w;
    let medium_side = f32(view.tuning.y & 0xffu);
    let medium_area = f32(view.tuning.y >> 8u);
    let parts = view.tuning.w != 0u;
    let lane = li % LANES;
    let pixel_bits = (1u << px) | (1u << (16u + py));
    var r = vec2<u32>(0u);
    var g = vec2<u32>(0u);
    var b = vec2<u32>(0u);
    // QUADS: the invocation's quarter and its 2×2 group at (qx, qy) (image pixel (qi, qj)):
    // each 32 invocations of a quarter hold a 16×8 block.
    let quarter = li / 64u;
    let qx = 2u * (li % 8u);
    let qy = 2u * ((li % 64u) / 8u);
    let qi = ox + f32(qx);
    let qj = oy + f32(qy);
    let zero = Rgb(vec2<u32>(0u), vec2<u32>(0u), vec2<u32>(0u));
    var q00 = zero;
    var q10 = zero;
    var q01 = zero;
    var q11 = zero;
    // With WIDE the groups' sums are u64 (`Wide`) until the merge.
    let wide_nil = RgbWide(wide_zero(), wide_zero(), wide_zero());
    var p00 = wide_nil;
    var p10 = wide_nil;
    var p01 = wide_nil;
    var p11 = wide_nil;
    for (var first = start; first < end; first += 256u) {
        if li == 0u {
            atomicStore(&batch_medium, 0u);
            atomicStore(&batch_large, 0u);
        }
        if CORDER && li < COST_BINS {
            atomicStore(&batch_bins[li], 0u);
        }
        workgroupBarrier();
        // With CORDER a medium splat's slot is its cost bin's base (known after the barrier
        // below) plus `rank`, so the entry stays in registers until then.
        var bin = COST_BINS;
        var rank = 0u;
        var held_splat = vec4<f32>(0.0);
        var held_rgb = vec4<f32>(0.0);
        var held_box = 0u;
        if first + li < end {
            let index = entries[first + li];
            let a = records[2u * index];
            let bx = clipped_box(a.x, a.y, a.w);
            let x0 = max(bx.x - ox, 0.0);
            let x1 = min(bx.y - ox, f32(TILE - 1u));
            let y0 = max(bx.z - oy, 0.0);
            let y1 = min(bx.w - oy, f32(TILE - 1u));
            if x0 <= x1 && y0 <= y1 {
                held_splat = vec4<f32>(a.x, a.y, mul(a.z, a.z), mul(a.w, a.w));
                var rgb = records[2u * index + 1u];
                if FOLD {
                    // abs: a −0 channel (brightness −0) as +0, which `fixed_words` needs.
                    rgb = vec4<f32>(abs(rgb.xyz * fold_scale()), 0.0);
                }
                held_rgb = rgb;
                held_box = span_mask(u32(x0), u32(x1)) | (span_mask(u32(y0), u32(y1)) << 16u);
                // Medium: within the widest side, or (a sliver of a wide splat, say) within
                // the largest area.
                let area = (x1 - x0 + 1.0) * (y1 - y0 + 1.0);
                var slot = 256u;
                if (x1 - x0 < medium_side && y1 - y0 < medium_side) || area <= medium_area {
                    if CORDER {
                        // Bin by the lanes' rounds over the box (1 to COST_BINS).
                        let rounds = (u32(area) + LANES - 1u) / LANES;
                        bin = min(rounds, COST_BINS) - 1u;
                        rank = atomicAdd(&batch_bins[bin], 1u);
                    } else {
                        slot = atomicAdd(&batch_medium, 1u);
                    }
                } else {
                    slot = 255u - atomicAdd(&batch_large, 1u);
                }
                if slot < 256u {
                    batch_splat[slot] = held_splat;
                    batch_rgb[slot] = held_rgb;
                    batch_box[slot] = held_box;
                }
            }
        }
        workgroupBarrier();
        var medium = atomicLoad(&batch_medium);
        let large = atomicLoad(&batch_large);
        if CORDER {
            // The medium splats in order of cost, so that the groups of a warp, which take
            // neighbouring slots, run loops of like length (CUDA's COST_ORDER).
            medium = 0u;
            for (var c = 0u; c < COST_BINS; c += 1u) {
                if c == bin {
                    let slot = medium + rank;
                    batch_splat[slot] = held_splat;
                    batch_rgb[slot] = held_rgb;
                    batch_box[slot] = held_box;
                }
                medium += atomicLoad(&batch_bins[c]);
            }
            workgroupBarrier();
        }
        // Medium splats: LANES invocations per splat, into the workgroup sums. The lanes take
        // the box's pixels in row-major order, pixel p by lane p mod LANES, so that a box
        // narrower than LANES keeps every lane busy (striding columns left the lanes beyond
        // its width idle). Giving the groups of a warp splats a quarter of the batch apart,
        // so that overlapping neighbours would not add to the same words in one step, was
        // slower on an H200 (R0 = 4's tiles pass 43.9 → 46.9 ms), as were 4 and 16 lanes
        // (45.4, 46.3 ms).
        for (var k = li / LANES; k < medium; k += 256u / LANES) {
            let masks = batch_box[k];
            let sp = batch_splat[k];
            let rgb = batch_rgb[k];
            let x0 = firstTrailingBit(masks & 0xffffu);
            let x1 = firstLeadingBit(masks & 0xffffu);
            let y0 = firstTrailingBit(masks >> 16u);
            let width = x1 - x0 + 1u;
            let area = width * (firstLeadingBit(masks >> 16u) - y0 + 1u);
            let step_x = LANES % width;
            let step_y = LANES / width;
            var x = x0 + lane % width;
            var y = y0 + lane / width;
            for (var p = lane; p < area; p += LANES) {
                let xi = ox + f32(x);
                let yj = oy + f32(y);
                let w = weight(xi, yj, sp.x, sp.y, sp.z, sp.w);
                if w > 0.0 {
                    let at = 3u * (y * TILE + x);
                    if parts {
                        let tau_at = tau_index(xi, yj);
                        add_parts(at, tau_at, rgb.x * w);
                        add_parts(at + 1u, tau_at + 2u, rgb.y * w);
                        add_parts(at + 2u, tau_at + 4u, rgb.z * w);
                    } else {
                        add_shared(at, rgb.x * w);
                        add_shared(at + 1u, rgb.y * w);
                        add_shared(at + 2u, rgb.z * w);
                    }
                }
                x += step_x;
                y += step_y;
                if x > x1 {
                    x -= width;
                    y += 1u;
                }
            }
        }
        // Larger splats, with QUADS: each quarter of the workgroup takes every fourth splat,
        // each of its invocations a 2×2 group of pixels.
        if QUADS {
            for (var k = 256u - large + quarter; k < 256u; k += 4u) {
                let masks = batch_box[k];
                // The group's two columns and two rows within the box (clipped to the image
                // tile, so no pixel beyond its edge).
                let cols = (masks >> qx) & 3u;
                let rows = (masks >> (16u + qy)) & 3u;
                if cols == 0u || rows == 0u {
                    continue;
                }
                let sp = batch_splat[k];
                let rgb = batch_rgb[k].xyz;
                let dx0 = (qi + 0.5) - sp.x;
                let dx1 = ((qi + 1.0) + 0.5) - sp.x;
                let dy0 = (qj + 0.5) - sp.y;
                let dy1 = ((qj + 1.0) + 0.5) - sp.y;
                // Skipping a group whose every pixel is outside the disc (by its nearest
                // column and row, an exact test) gained nothing on an H200 (10⁷, R0 = 16:
                // 39.5 → 39.7 ms with INTFIX): the warps' lanes run in step.
                // Nor did letting each invocation draw only the splats whose box meets its
                // group, so that a warp draws as often as its busiest lane has splats rather
                // than its 16×8 block (τ the same bits; 10⁸ colour, 2048², the same call): as
                // a per-batch bit mask of the quarter's splats, drawn lowest first, R0 = 4
                // 61.6-62.2 → 58.7-58.8 ms with `medium=4` but R0 = 16 368.7-369.2 →
                // 375.5-376.0 (10⁷: 39.3 → 38.1-38.4); as a loop per invocation scanning to its
                // next splat, 10⁷ R0 = 16 39.3 → 44.7 ms (55.2 also testing the disc, which
                // changed τ's bits at F = 4 on the H200: not `weight_at`'s test there).
                // Bit 0 of `on` for pixel (0, 0), 1 for (1, 0), 2 for (0, 1), 3 for (1, 1).
                let on = (cols * (rows & 1u)) | ((cols * (rows >> 1u)) << 2u);
                let w00 = select(0.0, weight_at(dx0, dy0, sp.z, sp.w), (on & 1u) != 0u);
                let w10 = select(0.0, weight_at(dx1, dy0, sp.z, sp.w), (on & 2u) != 0u);
                let w01 = select(0.0, weight_at(dx0, dy1, sp.z, sp.w), (on & 4u) != 0u);
                let w11 = select(0.0, weight_at(dx1, dy1, sp.z, sp.w), (on & 8u) != 0u);
                if WIDE == 2u {
                    // Every pixel of the group, no branch: a weight outside the box or disc
                    // is +0, whose value adds 0 (a tile splat's σ is far above 0, so no
                    // weight is NaN).
                    p00 = add_rgb_wide(p00, rgb, w00);
                    p10 = add_rgb_wide(p10, rgb, w10);
                    p01 = add_rgb_wide(p01, rgb, w01);
                    p11 = add_rgb_wide(p11, rgb, w11);
                } else if WIDE != 0u {
                    if w00 > 0.0 {
                        p00 = add_rgb_wide(p00, rgb, w00);
                    }
                    if w10 > 0.0 {
                        p10 = add_rgb_wide(p10, rgb, w10);
                    }
                    if w01 > 0.0 {
                        p01 = add_rgb_wide(p01, rgb, w01);
                    }
                    if w11 > 0.0 {
                        p11 = add_rgb_wide(p11, rgb, w11);
                    }
                } else {
                    if w00 > 0.0 {
                        q00 = add_rgb(q00, rgb, w00);
                    }
                    if w10 > 0.0 {
                        q10 = add_rgb(q10, rgb, w10);
                    }
                    if w01 > 0.0 {
                        q01 = add_rgb(q01, rgb, w01);
                    }
                    if w11 > 0.0 {
                        q11 = add_rgb(q11, rgb, w11);
                    }
                }
            }
        } else if inside {
            // Larger splats: every invocation its own pixel, in registers.
            for (var k = 256u - large; k < 256u; k += 1u) {
                if (batch_box[k] & pixel_bits) != pixel_bits {
                    continue;
                }
                let sp = batch_splat[k];
                let w = weight(i, j, sp.x, sp.y, sp.z, sp.w);
                if w > 0.0 {
                    let rgb = batch_rgb[k];
                    r = add_fixed(r, rgb.x * w);
                    g = add_fixed(g, rgb.y * w);
                    b = add_fixed(b, rgb.z * w);
                }
            }
        }
        workgroupBarrier();
    }
    if QUADS {
        // The quarters' sums meet in the medium sums' words: each pixel's medium sums become
        // (lo, hi) pairs there, the quarters add theirs in turn, and the last adds τ.
        if end > start {
            if WIDE != 0u {
                q00 = rgb_words(p00);
                q10 = rgb_words(p10);
                q01 = rgb_words(p01);
                q11 = rgb_words(p11);
            }
            for (var c = 0u; c < 3u; c += 1u) {
                let pair = shared_sum(3u * li + c);
                atomicStore(&sum_lo[3u * li + c], pair.x);
                atomicStore(&sum_hi[3u * li + c], pair.y);
            }
            workgroupBarrier();
            for (var turn = 0u; turn < 4u; turn += 1u) {
                if quarter == turn {
                    merge_quad(turn, qx, qy, q00, ox, oy);
                    merge_quad(turn, qx + 1u, qy, q10, ox, oy);
                    merge_quad(turn, qx, qy + 1u, q01, ox, oy);
                    merge_quad(turn, qx + 1u, qy + 1u, q11, ox, oy);
                }
                workgroupBarrier();
            }
        }
    } else if inside && end > start {
        let at = tau_index(i, j);
        let p = 3u * (py * TILE + px);
        tau_add(at, add_pairs(r, shared_sum(p)));
        tau_add(at + 2u, add_pairs(g, shared_sum(p + 1u)));
        tau_add(at + 4u, add_pairs(b, shared_sum(p + 2u)));
    }
}

// One pixel's (lo, hi) sums of three channels.
struct Rgb {
    r: vec2<u32>,
    g: vec2<u32>,
    b: vec2<u32>,
};

// acc += rgb·w in fixed point.
fn add_rgb(acc: Rgb, rgb: vec3<f32>, w: f32) -> Rgb {
    let r = add_fixed(acc.r, rgb.x * w);
    let g = add_fixed(acc.g, rgb.y * w);
    return Rgb(r, g, add_fixed(acc.b, rgb.z * w));
}

// One pixel's u64 sums of three channels (WIDE).
struct RgbWide {
    r: Wide,
    g: Wide,
    b: Wide,
};

// acc += rgb·w in fixed point (rgb already times 2^k), each channel by one u64 addition.
fn add_rgb_wide(acc: RgbWide, rgb: vec3<f32>, w: f32) -> RgbWide {
    let r = wide_add(acc.r, rgb.x * w);
    let g = wide_add(acc.g, rgb.y * w);
    return RgbWide(r, g, wide_add(acc.b, rgb.z * w));
}

// The sums as (lo, hi) pairs for the merge.
fn rgb_words(acc: RgbWide) -> Rgb {
    return Rgb(wide_words(acc.r), wide_words(acc.g), wide_words(acc.b));
}

// Turn `turn` of the quarters' merge for pixel (x, y) of the screen tile whose origin is
// (ox, oy): each quarter adds its sums to the pixel's (lo, hi) pairs in `sum_lo` and `sum_hi`,
// the last adds the total to τ (pixels beyond the image tile's edge hold nothing, add nothing).
fn merge_quad(turn: u32, x: u32, y: u32, sums: Rgb, ox: f32, oy: f32) {
    let p = 3u * (y * TILE + x);
    let r = add_pairs(sums.r, vec2<u32>(atomicLoad(&sum_lo[p]), atomicLoad(&sum_hi[p])));
    let g = add_pairs(sums.g, vec2<u32>(atomicLoad(&sum_lo[p + 1u]), atomicLoad(&sum_hi[p + 1u])));
    let b = add_pairs(sums.b, vec2<u32>(atomicLoad(&sum_lo[p + 2u]), atomicLoad(&sum_hi[p + 2u])));
    if turn < 3u {
        atomicStore(&sum_lo[p], r.x);
        atomicStore(&sum_hi[p], r.y);
        atomicStore(&sum_lo[p + 1u], g.x);
        atomicStore(&sum_hi[p + 1u], g.y);
        atomicStore(&sum_lo[p + 2u], b.x);
        atomicStore(&sum_hi[p + 2u], b.y);
        return;
    }
    let i = ox + f32(x);
    let j = oy + f32(y);
    if i < view.tile.x + view.tile.z && j < view.tile.y + view.tile.w {
        let at = tau_index(i, j);
        tau_add(at, r);
        tau_add(at + 2u, g);
        tau_add(at + 4u, b);
    }
}
