//! The k-th-neighbour search of one particle on the CPU [`Grid`]: shell by shell (Chebyshev
//! rings of cells); after ring s every particle closer than s·cell plus the query's distance to
//! its own cell's nearer face is known, so the search stops once the k-th best distance is
//! within that. Cells that cannot hold anything closer than the current k-th are skipped.

use super::grid::{Grid, cell_index};

/// One query: the particle, its cell and what bounds the cells' distances.
struct Query<'a> {
    /// The particle's index (skipped among its own cell's members).
    index: u32,
    /// Its position.
    p: &'a [f32; 3],
    /// Its cell.
    centre: [usize; 3],
    /// Cell offsets allowed per axis (see `offset_range`).
    ranges: [(i64, i64); 3],
    /// Its offset inside its cell per axis, for the cell-to-point distance bound.
    inside: [f64; 3],
}

/// The k smallest squared distances seen so far, ascending, and the k-th of them (infinite
/// until k are known) kept apart for the common rejection test.
pub(crate) struct Best {
    /// Ascending squared distances, at most `k`.
    values: Vec<f64>,
    /// Neighbours sought.
    k: usize,
    /// `values[k - 1]` once full, else infinity.
    worst: f64,
}

impl Best {
    /// Room for `k` distances.
    pub(crate) fn new(k: usize) -> Self {
        Self {
            values: Vec::with_capacity(k + 1),
            k,
            worst: f64::INFINITY,
        }
    }

    fn clear(&mut self) {
        self.values.clear();
        self.worst = f64::INFINITY;
    }

    fn full(&self) -> bool {
        self.values.len() == self.k
    }

    /// Inserts `d2` after the equal ones, dropping the largest when full. Called only with
    /// `d2 < worst`.
    #[inline]
    fn insert(&mut self, d2: f64) {
        if self.values.len() == self.k {
            self.values.pop();
        }
        let mut at = self.values.len();
        while at > 0 && self.values[at - 1] > d2 {
            at -= 1;
        }
        self.values.insert(at, d2);
        if self.values.len() == self.k {
            self.worst = self.values[self.k - 1];
        }
    }
}

impl Grid {
    /// Distance from particle `index` at `p` to its k-th nearest other particle (`best` holds
    /// k), 0 when there are fewer than k others.
    pub(crate) fn kth_distance(&self, index: u32, p: &[f32; 3], best: &mut Best) -> f32 {
        match self.frame.box_size {
            Some(side) => self.kth_distance_in::<true>(index, p, side, best),
            None => self.kth_distance_in::<false>(index, p, 1.0, best),
        }
    }

    fn kth_distance_in<const PERIODIC: bool>(
        &self,
        index: u32,
        p: &[f32; 3],
        side: f64,
        best: &mut Best,
    ) -> f32 {
        best.clear();
        let cell = self.shape.cell;
        let centre = self.frame.cell_of(&self.shape, p);
        let ranges: [(i64, i64); 3] = std::array::from_fn(|a| self.offset_range(a, centre[a]));
        let max_ring = ranges
            .iter()
            .map(|(lo, hi)| (-lo).max(*hi))
            .max()
            .unwrap_or(0);
        let inside: [f64; 3] = std::array::from_fn(|a| {
            let x = f64::from(p[a]) - self.frame.origin[a];
            let x = if PERIODIC { x.rem_euclid(side) } else { x };
            (x - centre[a] as f64 * cell).clamp(0.0, cell)
        });
        let query = Query {
            index,
            p,
            centre,
            ranges,
            inside,
        };
        // Every cell beyond ring s lies, along some axis, at least s cells plus p's distance to
        // its own cell's nearer face away: after ring s all points closer than that are known.
        let face = inside
            .iter()
            .map(|x| x.min(cell - x))
            .fold(f64::INFINITY, f64::min);
        for ring in 0..=max_ring {
            self.scan_ring::<PERIODIC>(&query, ring, side, best);
            let covered = ring as f64 * cell + face;
            if best.full() && best.worst <= covered * covered {
                break;
            }
        }
        if best.full() {
            best.worst.sqrt() as f32
        } else {
            0.0
        }
    }

    /// Offsets allowed along axis `a`: all cells once, even when the periodic ring wraps.
    fn offset_range(&self, a: usize, centre: usize) -> (i64, i64) {
        let n = self.shape.n[a] as i64;
        match self.frame.box_size {
            Some(_) => {
                let lo = (n - 1) / 2;
                (-lo, n - 1 - lo)
            }
            None => (-(centre as i64), n - 1 - centre as i64),
        }
    }

    /// Scans the cells at Chebyshev distance exactly `ring` from the query's cell.
    fn scan_ring<const PERIODIC: bool>(
        &self,
        query: &Query<'_>,
        ring: i64,
        side: f64,
        best: &mut Best,
    ) {
        let Query {
            index,
            p,
            centre,
            ref ranges,
            ref inside,
        } = *query;
        let cell = self.shape.cell;
        let one_way = |a: usize, o: i64| -> f64 {
            match o.cmp(&0) {
                std::cmp::Ordering::Equal => 0.0,
                std::cmp::Ordering::Greater => (o - 1) as f64 * cell + (cell - inside[a]),
                std::cmp::Ordering::Less => (-o - 1) as f64 * cell + inside[a],
            }
        };
        // Lower bound of the distance from p to any point of the cell at offset o along axis a.
        // In a periodic box of even n the cell n/2 ahead is also n/2 behind: the nearer way
        // bounds it (the far way alone would skip cells that hold the nearest points).
        let gap = |a: usize, o: i64| -> f64 {
            let g = one_way(a, o);
            if PERIODIC && 2 * o == self.shape.n[a] as i64 {
                g.min(one_way(a, -o))
            } else {
                g
            }
        };
        let clip = |a: usize| (ranges[a].0.max(-ring), ranges[a].1.min(ring));
        let (x_lo, x_hi) = clip(0);
        let (y_lo, y_hi) = clip(1);
        let (z_lo, z_hi) = clip(2);
        let point = p.map(f64::from);
        for oz in z_lo..=z_hi {
            let gz = gap(2, oz);
            for oy in y_lo..=y_hi {
                let gy = gap(1, oy);
                let yz2 = gy * gy + gz * gz;
                if yz2 > best.worst {
                    continue;
                }
                // The row's first cell index, computed once per row.
                let row = cell_index(
                    &self.shape.n,
                    [0, self.wrap(1, centre[1], oy), self.wrap(2, centre[2], oz)],
                );
                let mut visit = |ox: i64| {
                    // Skip cells that cannot hold anything closer than the current k-th.
                    let gx = gap(0, ox);
                    if gx * gx + yz2 > best.worst {
                        return;
                    }
                    let c = row + self.wrap(0, centre[0], ox);
                    let members =
                        &self.members[self.starts[c] as usize..self.starts[c + 1] as usize];
                    scan_members::<PERIODIC>(index, &point, members, side, best);
                };
                if oz.abs() == ring || oy.abs() == ring {
                    (x_lo..=x_hi).for_each(&mut visit);
                } else {
                    // Inside the shell only the two x faces belong to this ring.
                    if -ring >= x_lo {
                        visit(-ring);
                    }
                    if ring <= x_hi {
                        visit(ring);
                    }
                }
            }
        }
    }

    /// Cell `centre + offset` along axis `a`, wrapped once: offsets stay within
    /// `offset_range`, so the sum lies in (−n, 2n) and no division is needed.
    #[inline]
    fn wrap(&self, a: usize, centre: usize, offset: i64) -> usize {
        let n = self.shape.n[a] as i64;
        let v = centre as i64 + offset;
        let v = if v < 0 {
            v + n
        } else if v >= n {
            v - n
        } else {
            v
        };
        v as usize
    }
}

/// Offers every member but the query itself to `best`: squared distance in f64, minimum image
/// when periodic.
#[inline]
fn scan_members<const PERIODIC: bool>(
    index: u32,
    p: &[f64; 3],
    members: &[(u32, [f32; 3])],
    side: f64,
    best: &mut Best,
) {
    for (other, q) in members {
        let mut d2 = 0.0;
        for axis in 0..3 {
            let mut d = p[axis] - f64::from(q[axis]);
            // Below 0.49 sides d/side rounds to 0 and d stays as it is: the division is
            // skipped, the result is the same.
            if PERIODIC && d.abs() >= 0.49 * side {
                d -= side * (d / side).round();
            }
            d2 += d * d;
        }
        if d2 < best.worst && *other != index {
            best.insert(d2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::smoothing::grid::{Frame, Shape};

    /// The grid of `positions` (all finite) with the given shape, members sorted by cell.
    fn grid_of(positions: &[[f32; 3]], frame: Frame, shape: Shape) -> Grid {
        let cells: Vec<usize> = positions
            .iter()
            .map(|p| cell_index(&shape.n, frame.cell_of(&shape, p)))
            .collect();
        let mut starts = vec![0u32; shape.cells() + 1];
        for &c in &cells {
            starts[c + 1] += 1;
        }
        for c in 0..shape.cells() {
            starts[c + 1] += starts[c];
        }
        let mut cursor = starts.clone();
        let mut members = vec![(0, [0.0; 3]); positions.len()];
        for (i, &c) in cells.iter().enumerate() {
            members[cursor[c] as usize] = (i as u32, positions[i]);
            cursor[c] += 1;
        }
        Grid {
            frame,
            shape,
            starts,
            members,
        }
    }

    #[test]
    fn the_cell_half_a_periodic_box_ahead_is_searched_the_nearer_way_round() {
        // Four cells of 0.25 per axis: from x = 0.01 the cell two ahead ([0.5, 0.75)) is 0.49
        // away forwards but 0.26 backwards, and holds the nearest point (0.27 away, through
        // the wrap); the next lies 0.3 away in the cell one ahead along y.
        let positions = [
            [0.01, 0.125, 0.125],
            [0.74, 0.125, 0.125],
            [0.01, 0.425, 0.125],
        ];
        let frame = Frame::new(Some(1.0), [0.0; 3], [1.0; 3]);
        let shape = Shape {
            n: [4; 3],
            cell: 0.25,
        };
        let grid = grid_of(&positions, frame, shape);
        let mut best = Best::new(1);
        let h = grid.kth_distance(0, &positions[0], &mut best);
        // As scan_members: the f64 difference, its minimum image, squared.
        let length = |a: f32, b: f32| {
            let d = f64::from(a) - f64::from(b);
            let d = d - d.round();
            (d * d).sqrt() as f32
        };
        assert_eq!(h, length(0.01, 0.74));
        let mut best = Best::new(2);
        let h = grid.kth_distance(0, &positions[0], &mut best);
        assert_eq!(h, length(0.125, 0.425));
    }
}
