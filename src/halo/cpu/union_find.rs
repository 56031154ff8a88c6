//! Lock-free union-find on an array of atomic parents.
//!
//! Hooking always puts the larger root under the smaller (so parents only decrease and no cycle
//! can form), with a compare-and-swap on the larger root's parent; `find` halves paths as it goes.
//! This is the wait-free-find variant of Anderson & Woll, "Wait-free parallel algorithms for the
//! union-find problem" (STOC 1991), as used by GPU connected-components codes (e.g. ECL-CC,
//! Jaiganesh & Burtscher 2018). No recursion, memory O(n).

use std::sync::atomic::{AtomicU32, Ordering};

/// A disjoint-set forest over `0..n` that many threads may update at once.
#[derive(Debug)]
pub struct AtomicUnionFind {
    parent: Vec<AtomicU32>,
}

impl AtomicUnionFind {
    /// `n` singletons. `n` must fit in `u32` (the caller checks).
    pub fn new(n: usize) -> Self {
        Self {
            parent: (0..n).map(|i| AtomicU32::new(i as u32)).collect(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// The current root of `x`, halving the path on the way (each visited node is pointed at its
    /// grandparent, which is always still an ancestor because parents only move towards roots).
    pub fn find(&self, x: u32) -> u32 {
        let mut x = x;
        loop {
            let p = self.parent[x as usize].load(Ordering::Relaxed);
            if p == x {
                return x;
            }
            let gp = self.parent[p as usize].load(Ordering::Relaxed);
            if gp != p {
                // A failed exchange means another thread already moved x closer to its root.
                let _ = self.parent[x as usize].compare_exchange_weak(
                    p,
                    gp,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            x = gp;
        }
    }

    /// Joins the sets of `a` and `b`. Returns whether they were separate.
    pub fn union(&self, a: u32, b: u32) -> bool {
        let mut ra = self.find(a);
        let mut rb = self.find(b);
        loop {
            if ra == rb {
                return false;
            }
            let (low, high) = if ra < rb { (ra, rb) } else { (rb, ra) };
            match self.parent[high as usize].compare_exchange(
                high,
                low,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                // `high` stopped being a root under us: find the new roots and try again.
                Err(_) => {
                    ra = self.find(high);
                    rb = self.find(low);
                }
            }
        }
    }

    /// Whether `a` and `b` are (already) in one set.
    pub fn same_set(&self, a: u32, b: u32) -> bool {
        // Roots only ever merge, so a positive answer stays true; a negative one may be stale
        // while other threads are hooking, which callers treat as "test the pair".
        self.find(a) == self.find(b)
    }

    /// The root of every element, once all unions are done.
    pub fn roots(&self) -> Vec<u32> {
        use rayon::prelude::*;
        (0..self.parent.len() as u32)
            .into_par_iter()
            .map(|x| self.find(x))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn roots_are_the_smallest_member_of_each_set() {
        let uf = AtomicUnionFind::new(8);
        assert!(uf.union(5, 3));
        assert!(uf.union(7, 5));
        assert!(!uf.union(3, 7));
        assert!(uf.union(6, 1));
        assert_eq!(uf.roots(), vec![0, 1, 2, 3, 4, 3, 1, 3]);
    }

    #[test]
    fn concurrent_unions_give_one_chain() {
        // Every thread links its own stride of neighbours; together they join 0..n into one set.
        let n = 100_000u32;
        let uf = AtomicUnionFind::new(n as usize);
        (0..n - 1).into_par_iter().rev().for_each(|i| {
            uf.union(i + 1, i);
        });
        assert!(uf.roots().iter().all(|&r| r == 0));
    }
}
