//! Helpers for the friends-of-friends integration tests: SHA-256 (to compare label arrays with
//! the references' `label_sha256`) and an independent, simple cell-list FoF.
#![allow(dead_code)]

pub mod cuda;

/// SHA-256 of `data` as lower-case hex (FIPS 180-4), written out here to avoid a dependency.
pub fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (t, word) in block.chunks_exact(4).enumerate() {
            w[t] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for t in 16..64 {
            let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
            let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16]
                .wrapping_add(s0)
                .wrapping_add(w[t - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for t in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[t])
                .wrapping_add(w[t]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (state, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *state = state.wrapping_add(v);
        }
    }
    h.iter().map(|v| format!("{v:08x}")).collect()
}

/// A top-level number of a JSON text, parsed with Rust's correctly rounded `str::parse` (serde_json
/// without its `float_roundtrip` feature can be one ulp off, and these comparisons are exact).
pub fn exact_json_f64(text: &str, key: &str) -> f64 {
    let pattern = format!("\"{key}\":");
    let start = text.find(&pattern).expect("key present") + pattern.len();
    let rest = text[start..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c)))
        .unwrap_or(rest.len());
    rest[..end].parse().expect("a number")
}

/// SHA-256 of labels as little-endian int32, the encoding of the references' `label_sha256`.
pub fn labels_sha256(labels: &[i32]) -> String {
    let bytes: Vec<u8> = labels.iter().flat_map(|l| l.to_le_bytes()).collect();
    sha256_hex(&bytes)
}

/// Relabels set ids so that each set is named by its smallest member index.
pub fn canonical(ids: &[u32]) -> Vec<usize> {
    let mut first = std::collections::HashMap::new();
    ids.iter()
        .enumerate()
        .map(|(i, id)| *first.entry(*id).or_insert(i))
        .collect()
}

/// Friends-of-friends the textbook way, sharing no code with the library: a hash grid of cells of
/// side ≥ ll, every particle tests every later particle in the 27 neighbouring cells, plain
/// sequential union-find. Points are first wrapped into `[lower, lower + size)` when periodic.
/// Returns canonical set names (smallest member index).
pub fn simple_cell_list_fof(
    points: &[[f32; 3]],
    ll: f64,
    periodic: Option<(f64, f64)>,
) -> Vec<usize> {
    let wrap = |x: f64| match periodic {
        Some((lower, size)) => {
            let y = x - size * ((x - lower) / size).floor();
            if y >= lower + size { y - size } else { y }
        }
        None => x,
    };
    let p: Vec<[f64; 3]> = points
        .iter()
        .map(|q| q.map(|x| wrap(f64::from(x))))
        .collect();
    let (lower, cells_per_axis, side) = match periodic {
        Some((lower, size)) => {
            let n = ((size / ll).floor() as i64).max(1);
            (lower, n, size / n as f64)
        }
        None => {
            let lower = p.iter().flatten().fold(f64::INFINITY, |a, &b| a.min(b));
            (lower, i64::MAX, ll)
        }
    };
    let cell = |x: f64| ((x - lower) / side).floor() as i64;
    let mut grid: std::collections::HashMap<[i64; 3], Vec<usize>> = Default::default();
    for (i, q) in p.iter().enumerate() {
        let c = q.map(|x| cell(x).min(cells_per_axis - 1));
        grid.entry(c).or_default().push(i);
    }
    let mut parent: Vec<usize> = (0..p.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let ll2 = ll * ll;
    for (i, q) in p.iter().enumerate() {
        let c = q.map(|x| cell(x).min(cells_per_axis - 1));
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let mut nc = [c[0] + dx, c[1] + dy, c[2] + dz];
                    if periodic.is_some() {
                        nc = nc.map(|v| v.rem_euclid(cells_per_axis));
                    }
                    let Some(members) = grid.get(&nc) else {
                        continue;
                    };
                    for &j in members {
                        if j <= i {
                            continue;
                        }
                        let mut d2 = 0.0;
                        for a in 0..3 {
                            let mut d = q[a] - p[j][a];
                            if let Some((_, size)) = periodic {
                                if d > 0.5 * size {
                                    d -= size;
                                } else if d < -0.5 * size {
                                    d += size;
                                }
                            }
                            d2 += d * d;
                        }
                        if d2 <= ll2 {
                            let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
                            parent[ri.max(rj)] = ri.min(rj);
                        }
                    }
                }
            }
        }
    }
    (0..p.len()).map(|i| find(&mut parent, i)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sha256_of_known_strings() {
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            super::sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
