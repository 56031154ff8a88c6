//! Σ 1/h of a species whose particles are shared out over MPI ranks, with the bits one device
//! gets from the whole species: one device adds f64 partial sums of [`SUM_CHUNK`] consecutive
//! particles in chunk order, so each rank sends the sums of the chunks inside its share and
//! the terms of the (at most two) chunks its share cuts, and every rank adds them up in one
//! device's order. Every rank then picks one device's fixed-point exponent.

use super::split::SUM_CHUNK;
use std::collections::BTreeMap;

/// One rank's part of one chunk: a whole chunk's sum, or the terms of a chunk it holds in part.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    /// The chunk lies inside the share: its sum, as one device sums it.
    Whole(f64),
    /// The chunk is cut by the share's edge: the terms 1/h the share holds, in order.
    Part(Vec<f64>),
}

/// The pieces of a share of drawn lengths `h` (times `factor`) that starts at particle
/// `first` of the whole species, keyed by chunk.
pub(crate) fn pieces(h: &[f32], factor: f32, first: u64) -> Vec<(u64, Piece)> {
    let chunk = SUM_CHUNK as u64;
    let terms = |values: &[f32]| -> Vec<f64> {
        values
            .iter()
            .map(|&x| x * factor)
            .filter(|h| *h > 0.0 && h.is_finite())
            .map(|h| 1.0 / f64::from(h))
            .collect()
    };
    let mut out = Vec::new();
    let end = first + h.len() as u64;
    let mut at = first;
    while at < end {
        let c = at / chunk;
        let chunk_end = ((c + 1) * chunk).min(end);
        let values = &h[(at - first) as usize..(chunk_end - first) as usize];
        let whole_chunk = at == c * chunk && chunk_end == (c + 1) * chunk;
        let piece = if whole_chunk {
            Piece::Whole(terms(values).iter().sum())
        } else {
            Piece::Part(terms(values))
        };
        out.push((c, piece));
        at = chunk_end;
    }
    out
}

/// Σ 1/h of the whole species from every rank's pieces, in rank order: the terms of a cut
/// chunk joined in rank order and summed, then every chunk's sum added in chunk order.
pub(crate) fn combine(ranks: &[Vec<(u64, Piece)>]) -> f64 {
    let mut chunks: BTreeMap<u64, Piece> = BTreeMap::new();
    for (c, piece) in ranks.iter().flatten() {
        match (chunks.get_mut(c), piece) {
            (Some(Piece::Part(terms)), Piece::Part(more)) => terms.extend_from_slice(more),
            // A whole chunk has one owner.
            (_, piece) => {
                chunks.insert(*c, piece.clone());
            }
        }
    }
    let sums: Vec<f64> = chunks
        .values()
        .map(|piece| match piece {
            Piece::Whole(sum) => *sum,
            Piece::Part(terms) => terms.iter().sum(),
        })
        .collect();
    sums.iter().sum()
}

/// The pieces as bytes (little endian: chunk, tag 0 whole + sum, or tag 1 + count + terms).
pub(crate) fn to_bytes(pieces: &[(u64, Piece)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (c, piece) in pieces {
        out.extend_from_slice(&c.to_le_bytes());
        match piece {
            Piece::Whole(sum) => {
                out.push(0);
                out.extend_from_slice(&sum.to_le_bytes());
            }
            Piece::Part(terms) => {
                out.push(1);
                out.extend_from_slice(&(terms.len() as u64).to_le_bytes());
                terms
                    .iter()
                    .for_each(|t| out.extend_from_slice(&t.to_le_bytes()));
            }
        }
    }
    out
}

/// [`to_bytes`] read back; `None` when the bytes are not such a list.
pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Vec<(u64, Piece)>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let u64_at = |at: &mut usize| -> Option<u64> {
        let b: [u8; 8] = bytes.get(*at..*at + 8)?.try_into().ok()?;
        *at += 8;
        Some(u64::from_le_bytes(b))
    };
    while at < bytes.len() {
        let c = u64_at(&mut at)?;
        let tag = *bytes.get(at)?;
        at += 1;
        let piece = match tag {
            0 => Piece::Whole(f64::from_bits(u64_at(&mut at)?)),
            1 => {
                let n = u64_at(&mut at)? as usize;
                let mut terms = Vec::with_capacity(n.min(SUM_CHUNK));
                for _ in 0..n {
                    terms.push(f64::from_bits(u64_at(&mut at)?));
                }
                Piece::Part(terms)
            }
            _ => return None,
        };
        out.push((c, piece));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::split::{share_range, sum_inv_h};
    use super::*;

    #[test]
    fn shares_cut_anywhere_give_one_devices_sum_bit_for_bit() {
        let h: Vec<f32> = (0..3 * SUM_CHUNK + 12_345)
            .map(|i| {
                if i % 1000 == 7 {
                    0.0
                } else {
                    1e-4 + ((i * 7919) % 10_007) as f32 * 3e-5
                }
            })
            .collect();
        let factor = 0.5f32;
        let expected = sum_inv_h(&h, factor);
        for ranks in [1usize, 2, 3, 5, 64, 300_000] {
            let all: Vec<Vec<(u64, Piece)>> = (0..ranks)
                .map(|r| {
                    let range = share_range(h.len(), r, ranks);
                    let mine = pieces(&h[range.clone()], factor, range.start as u64);
                    from_bytes(&to_bytes(&mine)).expect("bytes read back")
                })
                .collect();
            assert_eq!(combine(&all).to_bits(), expected.to_bits(), "{ranks} ranks");
        }
    }

    #[test]
    fn pieces_name_their_chunks_and_bad_bytes_are_refused() {
        let h = vec![2.0f32; SUM_CHUNK + 10];
        let p = pieces(&h[5..], 1.0, 5);
        assert_eq!(p.len(), 2);
        assert!(matches!(&p[0], (0, Piece::Part(t)) if t.len() == SUM_CHUNK - 5));
        assert!(matches!(&p[1], (1, Piece::Part(t)) if t.len() == 10));
        let whole = pieces(&h[..SUM_CHUNK], 1.0, 0);
        assert_eq!(whole, vec![(0, Piece::Whole(SUM_CHUNK as f64 * 0.5))]);
        assert_eq!(from_bytes(&[1, 2, 3]), None);
        let mut bad = to_bytes(&whole);
        bad[8] = 9;
        assert_eq!(from_bytes(&bad), None);
    }
}
