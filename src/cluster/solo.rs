//! One process: every collective is the identity.

use super::Collective;

/// The group of one process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Solo;

impl Collective for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn local_size(&self) -> usize {
        1
    }
    fn local_rank(&self) -> usize {
        0
    }
    fn barrier(&self) {}
    fn sum_i64(&self, _values: &mut [i64]) {}
    fn sum_u64(&self, _values: &mut [u64]) {}
    fn min_f64(&self, _values: &mut [f64]) {}
    fn max_f64(&self, _values: &mut [f64]) {}
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    fn gather_bytes(&self, _root: usize, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    fn broadcast_bytes(&self, _root: usize, _bytes: &mut Vec<u8>) {}
    fn all_to_all_bytes(&self, outgoing: &[Vec<u8>]) -> Vec<Vec<u8>> {
        outgoing.to_vec()
    }
}
