//! The half stencil of neighbour cells the link kernels visit, and its per-block bit masks for
//! the Morton block linker (kernels/fof_blocks.cu).

/// Cell offsets (dx, dy, dz), flattened, with (dz, dy, dx) lexicographically positive, whose
/// cells can hold two points within ll: the gap between cells `d` apart on one axis is
/// `(|d| − 1)·side`; kept when the squared gaps sum to ≤ ll² (with the same slack as `cpu/grid.rs`).
pub fn half_stencil_offsets(linking_length: f64, side: f64) -> Vec<i32> {
    let reach = (linking_length / side * (1.0 + 1e-9)).floor() as i32 + 1;
    let limit = linking_length * linking_length * (1.0 + 1e-9);
    let gap = |d: i32| f64::from((d.abs() - 1).max(0)) * side;
    let mut offsets = Vec::new();
    for dz in 0..=reach {
        for dy in -reach..=reach {
            for dx in -reach..=reach {
                if (dz, dy, dx) <= (0, 0, 0) {
                    continue;
                }
                if gap(dx).powi(2) + gap(dy).powi(2) + gap(dz).powi(2) <= limit {
                    offsets.extend([dx, dy, dz]);
                }
            }
        }
    }
    offsets
}

/// Morton-local index (0..63) of a cell at local coordinates (0..4 each) inside its 4×4×4
/// block: the low 6 bits of its Morton key (as `morton_local` in kernels/fof_blocks.cu).
fn morton_local(x: i32, y: i32, z: i32) -> u32 {
    (crate::order::morton_key([x as u32, y as u32, z as u32]) & 63) as u32
}

/// For `fof_link_blocks`: per Morton-local cell position (64) and neighbour block offset (27,
/// index (bdx+1) + 3(bdy+1) + 9(bdz+1)), the mask of Morton-local cells of that block reached
/// by the half stencil `offsets` (flattened dx, dy, dz). `None` when the reach exceeds 4 cells
/// (one block side), where a cell's stencil could span more than the 3 blocks per axis.
pub fn block_stencil_masks(offsets: &[i32]) -> Option<Vec<u64>> {
    if offsets.iter().any(|d| d.abs() > 4) {
        return None;
    }
    let mut masks = vec![0u64; 64 * 27];
    for lz in 0..4 {
        for ly in 0..4 {
            for lx in 0..4 {
                let local = morton_local(lx, ly, lz) as usize;
                for d in offsets.chunks_exact(3) {
                    let t = [lx + d[0], ly + d[1], lz + d[2]];
                    let block = t.map(|v| v.div_euclid(4) + 1);
                    let inner = t.map(|v| v.rem_euclid(4));
                    let bo = (block[0] + 3 * block[1] + 9 * block[2]) as usize;
                    masks[local * 27 + bo] |= 1u64 << morton_local(inner[0], inner[1], inner[2]);
                }
            }
        }
    }
    Some(masks)
}
