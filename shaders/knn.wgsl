// The k-th nearest other member's squared distance, one invocation per grid member (members in
// cell order), on a grid built on the CPU (src/render/smoothing/grid.rs), searched shell by shell
// as src/render/smoothing/search.rs does. Needs wgpu::Features::SHADER_F64.
//
// Exactness (host: src/render/knn/wgpu.rs). Each squared distance must be the CPU's
// ((dx*dx + dy*dy) + dz*dz) in f64 with every operation rounded once. f64 add, subtract and
// multiply are taken to be IEEE (correctly rounded; Vulkan itself promises f64 only f32's
// precision); f32 to f64 is exact (the host keeps f32 subnormals, which may be flushed, away).
// SPIR-V from naga carries no NoContraction, so a driver may fuse a multiply into the add that
// uses it (llvmpipe does not: the probe in tests/knn_wgpu.rs). Here no multiply feeds an add
// whose result matters:
// - every square is multiplied by `params.one` (1.0, read from a buffer, so no compiler can fold
//   it) before it is added: fused, fma(round(d*d), one, s) = round(round(d*d) + s), the unfused
//   value; d*d itself feeds only that multiply, which cannot be contracted;
// - the periodic wrap adds or subtracts `side` itself (no product); whether to wrap is decided
//   without a division (Vulkan does not bound f64 division's error): with |d| <= side (the
//   host checks the coordinates span at most side per axis) the CPU's round(d / side) is +-1
//   exactly when fl(|d| / side) >= 0.5, i.e. when |d| / side >= 0.5 - 2^-55 (the midpoint
//   below 0.5 rounds to 0.5, ties to even), i.e. |d| - side/2 >= -side * 2^-55; for |d| in
//   [side/4, side] the subtraction is exact (Sterbenz; fused or not), below side/4 it rounds to
//   <= -side/4;
// - the final sqrt runs on the host (f64 sqrt, then f32), as the CPU's.
// Cell bounds only prune; they are compared with a relative margin of 2^-20, far above their
// rounding, so a cell is skipped or the search stopped only when the CPU's exact argument holds.
// The search then finds the exact k-th smallest of the same values: the CPU's, bit for bit.

struct Params {
    cell: f64,
    side: f64,
    one: f64,
    margin: f64,
    nx: u32,
    ny: u32,
    nz: u32,
    k: u32,
    first: u32,
    count: u32,
    periodic: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> params: Params;
// (x, y, z, unused) per member, in cell order.
@group(0) @binding(1) var<storage, read> members: array<vec4<f32>>;
// Member offsets per cell, one more than the cells.
@group(0) @binding(2) var<storage, read> starts: array<u32>;
// Per member: its offset inside its cell per axis (3 values, as the CPU's `inside`).
@group(0) @binding(3) var<storage, read> inside: array<f64>;
// Per member: its cell's index.
@group(0) @binding(4) var<storage, read> centres: array<u32>;
// Per member: the k-th squared distance, -1 when fewer than k others were found, -2 when a loop
// was cut short (see `complete`).
@group(0) @binding(5) var<storage, read_write> out: array<f64>;

const MAX_K: u32 = 64u;

var<private> best: array<f64, 64>;
var<private> held: u32;
var<private> worst: f64;
// False once any loop ended before its own exit condition held: a driver may cut long loops
// short (lavapipe's llvmpipe stops a shader's loops after 65 535 iterations in all). Such a
// member's result is not trusted; the host searches it on the CPU.
var<private> complete: bool;

fn insert(d2: f64) {
    let k = params.k;
    if held == k {
        held = k - 1u;
    }
    var at = held;
    while at > 0u && best[at - 1u] > d2 {
        best[at] = best[at - 1u];
        at = at - 1u;
    }
    if at > 0u && best[at - 1u] > d2 {
        complete = false;
    }
    best[at] = d2;
    held = held + 1u;
    if held == k {
        worst = best[k - 1u];
    }
}

fn full() -> bool {
    return held == params.k;
}

fn axis_n(a: u32) -> i32 {
    if a == 0u {
        return i32(params.nx);
    }
    if a == 1u {
        return i32(params.ny);
    }
    return i32(params.nz);
}

fn one_way(o: i32, x: f64) -> f64 {
    let cell = params.cell;
    if o == 0 {
        return f64(0.0);
    }
    if o > 0 {
        return f64(o - 1) * cell + (cell - x);
    }
    return f64(-o - 1) * cell + x;
}

// Lower bound of the distance to the cell at offset o along axis a (the nearer way round for
// the cell half a periodic box away).
fn gap(a: u32, o: i32, x: f64) -> f64 {
    let g = one_way(o, x);
    if params.periodic != 0u && 2 * o == axis_n(a) {
        return min(g, one_way(-o, x));
    }
    return g;
}

fn wrap(a: u32, c: i32, o: i32) -> i32 {
    let n = axis_n(a);
    var v = c + o;
    if v < 0 {
        v = v + n;
    } else if v >= n {
        v = v - n;
    }
    return v;
}

// The (lo, hi) offsets allowed along axis a: every cell once.
fn offset_range(a: u32, c: i32) -> vec2<i32> {
    let n = axis_n(a);
    if params.periodic != 0u {
        let lo = (n - 1) / 2;
        return vec2<i32>(-lo, n - 1 - lo);
    }
    return vec2<i32>(-c, n - 1 - c);
}

// The minimum image of d (see the header).
fn image(d: f64) -> f64 {
    let side = params.side;
    if params.periodic == 0u {
        return d;
    }
    let t = abs(d) - side * 0.5;
    if t >= -side * f64(2.7755575615628914e-17) {
        if d > 0.0 {
            return d - side;
        }
        return d + side;
    }
    return d;
}

fn scan_cell(c: u32, self_slot: u32, p: vec3<f64>) {
    let one = params.one;
    let end = starts[c + 1u];
    var j = starts[c];
    for (; j < end; j = j + 1u) {
        let q = members[j];
        let dx = image(p.x - f64(q.x));
        let dy = image(p.y - f64(q.y));
        let dz = image(p.z - f64(q.z));
        let sx = (dx * dx) * one;
        let sy = (dy * dy) * one;
        let sz = (dz * dz) * one;
        let d2 = (sx + sy) + sz;
        if (!full() || d2 < worst) && j != self_slot {
            insert(d2);
        }
    }
    if j < end {
        complete = false;
    }
}

// Scans the cell at offset ox along x in `row` unless it cannot hold anything closer than the
// current k-th.
fn visit(ox: i32, row: i32, cx: i32, yz2: f64, ix: f64, slot: u32, p: vec3<f64>) {
    let gx = gap(0u, ox, ix);
    if full() && gx * gx + yz2 > worst * params.margin {
        return;
    }
    scan_cell(u32(row + wrap(0u, cx, ox)), slot, p);
}

@compute @workgroup_size(64)
fn search(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x >= params.count {
        return;
    }
    let slot = params.first + id.x;
    held = 0u;
    worst = f64(0.0);
    complete = true;
    let margin = params.margin;
    let cell = params.cell;
    let m = members[slot];
    let p = vec3<f64>(f64(m.x), f64(m.y), f64(m.z));
    let centre_index = centres[slot];
    let nx = i32(params.nx);
    let ny = i32(params.ny);
    let cx = i32(centre_index % params.nx);
    let cy = i32((centre_index / params.nx) % params.ny);
    let cz = i32(centre_index / (params.nx * params.ny));
    let rx = offset_range(0u, cx);
    let ry = offset_range(1u, cy);
    let rz = offset_range(2u, cz);
    let max_ring = max(max(max(-rx.x, rx.y), max(-ry.x, ry.y)), max(-rz.x, rz.y));
    let ix = inside[3u * slot];
    let iy = inside[3u * slot + 1u];
    let iz = inside[3u * slot + 2u];
    let face = min(min(min(ix, cell - ix), min(iy, cell - iy)), min(iz, cell - iz));
    var ring = 0;
    var stopped = false;
    for (; ring <= max_ring; ring = ring + 1) {
        let x_lo = max(rx.x, -ring);
        let x_hi = min(rx.y, ring);
        let y_lo = max(ry.x, -ring);
        let y_hi = min(ry.y, ring);
        let z_lo = max(rz.x, -ring);
        let z_hi = min(rz.y, ring);
        var oz = z_lo;
        for (; oz <= z_hi; oz = oz + 1) {
            let gz = gap(2u, oz, iz);
            var oy = y_lo;
            for (; oy <= y_hi; oy = oy + 1) {
                let gy = gap(1u, oy, iy);
                let yz2 = gy * gy + gz * gz;
                if full() && yz2 > worst * margin {
                    continue;
                }
                let row = (wrap(2u, cz, oz) * ny + wrap(1u, cy, oy)) * nx;
                if abs(oz) == ring || abs(oy) == ring {
                    var ox = x_lo;
                    for (; ox <= x_hi; ox = ox + 1) {
                        visit(ox, row, cx, yz2, ix, slot, p);
                    }
                    if ox <= x_hi {
                        complete = false;
                    }
                } else {
                    // Inside the shell only the two x faces belong to this ring.
                    if -ring >= x_lo {
                        visit(-ring, row, cx, yz2, ix, slot, p);
                    }
                    if ring <= x_hi {
                        visit(ring, row, cx, yz2, ix, slot, p);
                    }
                }
            }
            if oy <= y_hi {
                complete = false;
            }
        }
        if oz <= z_hi {
            complete = false;
        }
        let covered = f64(ring) * cell + face;
        if full() && worst * margin <= covered * covered {
            stopped = true;
            break;
        }
    }
    if !stopped && ring <= max_ring {
        complete = false;
    }
    if !complete {
        out[slot] = f64(-2.0);
    } else if full() {
        out[slot] = worst;
    } else {
        out[slot] = f64(-1.0);
    }
}
