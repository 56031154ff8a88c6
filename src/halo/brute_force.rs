//! The O(N²) reference linker: every pair tested, a plain sequential union-find. For tests and
//! for checking the fast linkers on small inputs only.

use super::cpu::{dist2, dist2_periodic};
use super::periodic::BoxFrame;

/// Set ids (equal ⇔ same friends-of-friends set) by testing all N(N−1)/2 pairs with the same
/// rule as the fast linkers: d² ≤ ll² in float64, minimum image inside `frame` when periodic.
pub fn link_components_brute_force(
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
) -> Vec<u32> {
    let points: Vec<[f64; 3]> = positions
        .iter()
        .map(|p| match frame {
            Some(frame) => frame.wrap_point(p),
            None => p.map(f64::from),
        })
        .collect();
    let ll2 = linking_length * linking_length;
    let mut parent: Vec<u32> = (0..points.len() as u32).collect();
    let find = |parent: &mut Vec<u32>, mut x: u32| {
        while parent[x as usize] != x {
            let grandparent = parent[parent[x as usize] as usize];
            parent[x as usize] = grandparent;
            x = grandparent;
        }
        x
    };
    for i in 0..points.len() {
        for j in i + 1..points.len() {
            let d2 = match frame {
                Some(frame) => dist2_periodic(&points[i], &points[j], &frame),
                None => dist2(&points[i], &points[j]),
            };
            if d2 <= ll2 {
                let (ri, rj) = (find(&mut parent, i as u32), find(&mut parent, j as u32));
                parent[ri.max(rj) as usize] = ri.min(rj);
            }
        }
    }
    (0..points.len() as u32)
        .map(|i| find(&mut parent, i))
        .collect()
}
