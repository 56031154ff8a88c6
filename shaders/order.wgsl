// Reorders one resident chunk of particles on the device at upload (DESIGN §7, ordering for
// locality), the WGSL twin of kernels/render_order.cu: particles in one coarse 3-D Morton cell
// of the chunk's bounding box become neighbours in memory, so the invocations of one subgroup
// of classify mostly project to the same few pixels and screen tiles and their atomics hit the
// same cache lines. A counting sort by cell key, O(N): bounds, keys + histogram, a three-pass
// scan of the cell counts (block sums, one workgroup over the block sums, the cells), scatter.
// The order inside a cell is whatever the atomics give: τ is summed in fixed point, so any
// order gives the same bits, and nothing maps a device particle back to its file index.

// n (particles in the chunk), bits per axis of the cell grid, cells (2^(3·bits)), blocks of
// BLOCK cells (cells / BLOCK, at most GROUP · TOP_PER).
struct Params {
    n: u32,
    bits: u32,
    cells: u32,
    blocks: u32,
};

const GROUP: u32 = 256u;
// Cells per workgroup of the block passes: 4 per invocation.
const BLOCK: u32 = 1024u;
const PER: u32 = 4u;
// Most block sums per invocation of the one-workgroup pass.
const TOP_PER: u32 = 8u;
// Words of `aux` before the block sums (the six bounds and two unused).
const SUMS_AT: u32 = 8u;

@group(0) @binding(0) var<uniform> params: Params;
// The chunk in file order: (x, y, z, h) and (n, colour).
@group(0) @binding(1) var<storage, read> in_pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in_val: array<vec2<f32>>;
// Words 0-2: ordered bits of min x, y, z; 3-5: of max x, y, z (start: all ones, and 0); from
// SUMS_AT: one per block, its cells' count, then the exclusive prefix sum of those.
@group(0) @binding(3) var<storage, read_write> aux: array<atomic<u32>>;
// Each particle's cell key.
@group(0) @binding(4) var<storage, read_write> keys: array<u32>;
// Particles per cell, then (in place) each cell's next free slot.
@group(0) @binding(5) var<storage, read_write> cells: array<atomic<u32>>;
// The chunk in cell order.
@group(0) @binding(6) var<storage, read_write> out_pos: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> out_val: array<vec2<f32>>;

var<workgroup> group_lo: array<atomic<u32>, 3>;
var<workgroup> group_hi: array<atomic<u32>, 3>;
var<workgroup> scan: array<u32, 256>;

fn particle_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.x + gid.y * groups.x * GROUP;
}

// f32 bits as a u32 of the same order (negative values reversed), for atomicMin/Max.
fn ordered_bits(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn from_ordered_bits(u: u32) -> f32 {
    return bitcast<f32>(select(~u, u & 0x7fffffffu, (u & 0x80000000u) != 0u));
}

// Whether the bits are of a finite value (tested on the bits, not left to float compares).
fn finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// The chunk's bounds over finite coordinates; grid-stride over a bounded number of workgroups,
// pooled per workgroup, one global atomic per workgroup and bound.
@compute @workgroup_size(256)
fn order_bounds(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    if li < 3u {
        atomicStore(&group_lo[li], 0xffffffffu);
        atomicStore(&group_hi[li], 0u);
    }
    workgroupBarrier();
    var lo = vec3<u32>(0xffffffffu);
    var hi = vec3<u32>(0u);
    let stride = groups.x * GROUP;
    for (var i = gid.x; i < params.n; i += stride) {
        let p = in_pos[i].xyz;
        for (var a = 0u; a < 3u; a += 1u) {
            if finite(p[a]) {
                let u = ordered_bits(p[a]);
                lo[a] = min(lo[a], u);
                hi[a] = max(hi[a], u);
            }
        }
    }
    for (var a = 0u; a < 3u; a += 1u) {
        atomicMin(&group_lo[a], lo[a]);
        atomicMax(&group_hi[a], hi[a]);
    }
    workgroupBarrier();
    if li < 3u {
        atomicMin(&aux[li], atomicLoad(&group_lo[li]));
        atomicMax(&aux[3u + li], atomicLoad(&group_hi[li]));
    }
}

// Spreads the low 10 bits of v to every third bit.
fn spread3(v_in: u32) -> u32 {
    var v = v_in & 0x3ffu;
    v = (v | (v << 16u)) & 0x030000ffu;
    v = (v | (v << 8u)) & 0x0300f00fu;
    v = (v | (v << 4u)) & 0x030c30c3u;
    v = (v | (v << 2u)) & 0x09249249u;
    return v;
}

// keys[i] = the Morton cell of particle i on a 2^bits grid per axis over the bounds; counts it.
// A coordinate below the bounds or not a number goes to cell 0 of its axis, one above them to
// the last.
@compute @workgroup_size(256)
fn order_keys(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let i = particle_index(gid, groups);
    if i >= params.n {
        return;
    }
    let side = 1u << params.bits;
    let p = in_pos[i].xyz;
    var q = vec3<u32>(0u);
    for (var a = 0u; a < 3u; a += 1u) {
        let lo = from_ordered_bits(atomicLoad(&aux[a]));
        let hi = from_ordered_bits(atomicLoad(&aux[3u + a]));
        var t = 0.0;
        if hi > lo {
            t = (p[a] - lo) / (hi - lo) * f32(side);
        }
        if t >= f32(side) {
            q[a] = side - 1u;
        } else if t > 0.0 {
            q[a] = min(u32(t), side - 1u);
        }
    }
    let key = spread3(q.x) | (spread3(q.y) << 1u) | (spread3(q.z) << 2u);
    keys[i] = key;
    atomicAdd(&cells[key], 1u);
}

// scan[li] becomes the inclusive prefix sum of scan[0..=li] over the workgroup.
fn scan_group(li: u32) {
    for (var offset = 1u; offset < GROUP; offset <<= 1u) {
        workgroupBarrier();
        var add = 0u;
        if li >= offset {
            add = scan[li - offset];
        }
        workgroupBarrier();
        scan[li] += add;
    }
    workgroupBarrier();
}

// One workgroup per block of BLOCK cells: the block's count into its sum word.
@compute @workgroup_size(256)
fn order_block_sums(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let first = wg.x * BLOCK + li * PER;
    var sum = 0u;
    for (var k = 0u; k < PER; k += 1u) {
        if first + k < params.cells {
            sum += atomicLoad(&cells[first + k]);
        }
    }
    scan[li] = sum;
    scan_group(li);
    if li == GROUP - 1u {
        atomicStore(&aux[SUMS_AT + wg.x], scan[li]);
    }
}

// One workgroup: the block sums become their exclusive prefix sum.
@compute @workgroup_size(256)
fn order_top_scan(@builtin(local_invocation_index) li: u32) {
    let first = li * TOP_PER;
    var sum = 0u;
    for (var k = 0u; k < TOP_PER; k += 1u) {
        if first + k < params.blocks {
            sum += atomicLoad(&aux[SUMS_AT + first + k]);
        }
    }
    scan[li] = sum;
    scan_group(li);
    var run = scan[li] - sum;
    for (var k = 0u; k < TOP_PER; k += 1u) {
        if first + k < params.blocks {
            let count = atomicLoad(&aux[SUMS_AT + first + k]);
            atomicStore(&aux[SUMS_AT + first + k], run);
            run += count;
        }
    }
}

// One workgroup per block: each cell's count becomes its first slot (the exclusive prefix sum
// over every cell), in place; each invocation reads and writes only its own PER cells.
@compute @workgroup_size(256)
fn order_cells_scan(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {
    let first = wg.x * BLOCK + li * PER;
    var counts = vec4<u32>(0u);
    for (var k = 0u; k < PER; k += 1u) {
        if first + k < params.cells {
            counts[k] = atomicLoad(&cells[first + k]);
        }
    }
    let sum = counts.x + counts.y + counts.z + counts.w;
    scan[li] = sum;
    scan_group(li);
    var run = atomicLoad(&aux[SUMS_AT + wg.x]) + scan[li] - sum;
    for (var k = 0u; k < PER; k += 1u) {
        if first + k < params.cells {
            atomicStore(&cells[first + k], run);
            run += counts[k];
        }
    }
}

// Moves particle i to its cell's next slot. The slots of a cell are its count, so the moves
// are a permutation of 0..n; a slot beyond the chunk (impossible unless the keys changed) is
// dropped rather than written out of bounds.
@compute @workgroup_size(256)
fn order_scatter(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let i = particle_index(gid, groups);
    if i >= params.n {
        return;
    }
    let slot = atomicAdd(&cells[keys[i]], 1u);
    if slot < params.n {
        out_pos[slot] = in_pos[i];
        out_val[slot] = in_val[i];
    }
}
