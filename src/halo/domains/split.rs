//! The particles of every domain copied out in one parallel count and one parallel scatter:
//! each domain's owned particles then its ghosts, each part in increasing index order, with
//! their positions (and masses and velocities where per particle), ready for a device.

use super::decompose::Decomposition;
use crate::data::Masses;
use rayon::prelude::*;

/// Particles per task of the two passes.
const CHUNK: usize = 1 << 16;

/// One domain's particles: the owned ones, then the ghosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Slab {
    /// Indices of the owned particles, increasing.
    pub owned: Vec<u32>,
    /// Indices of the ghosts, increasing.
    pub ghosts: Vec<u32>,
    /// Positions of `owned` then `ghosts`.
    pub positions: Vec<[f32; 3]>,
    /// The masses in the same order: one for all, or one per particle.
    pub masses: Masses,
    /// Velocities in the same order, when given.
    pub velocities: Option<Vec<[f32; 3]>>,
}

impl Slab {
    /// Global index of local particle `k` (owned first, then ghosts).
    pub fn global(&self, k: usize) -> u32 {
        match self.owned.get(k) {
            Some(&i) => i,
            None => self.ghosts[k - self.owned.len()],
        }
    }
}

/// Where one chunk of the input writes into one domain: its share of the domain's owned part
/// and of its ghost part.
struct Dest<'a> {
    owned: &'a mut [u32],
    owned_pos: &'a mut [[f32; 3]],
    owned_mass: &'a mut [f32],
    owned_vel: &'a mut [[f32; 3]],
    ghosts: &'a mut [u32],
    ghost_pos: &'a mut [[f32; 3]],
    ghost_mass: &'a mut [f32],
    ghost_vel: &'a mut [[f32; 3]],
}

/// `buffer` cut into consecutive pieces of `counts` (an empty buffer into empty pieces).
fn carve<T>(buffer: &mut [T], counts: impl Iterator<Item = usize>) -> Vec<&mut [T]> {
    let keep = !buffer.is_empty();
    let mut rest = buffer;
    counts
        .map(|count| {
            let take = if keep { count } else { 0 };
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(take);
            rest = tail;
            head
        })
        .collect()
}

/// Every domain of `decomposition` with its particles of `positions` (and of `masses` and
/// `velocities`, each one per position where given).
pub fn split(
    decomposition: &Decomposition,
    positions: &[[f32; 3]],
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
) -> Vec<Slab> {
    let n_domains = decomposition.n_domains();
    // Per chunk and domain: (owned, ghosts) counts.
    let counts: Vec<Vec<(usize, usize)>> = positions
        .par_chunks(CHUNK)
        .map(|points| {
            let mut counts = vec![(0usize, 0usize); n_domains];
            let mut ghosts = Vec::new();
            for p in points {
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                counts[owner].0 += 1;
                decomposition.ghost_domains(x, owner, &mut ghosts);
                for &d in &ghosts {
                    counts[d].1 += 1;
                }
            }
            counts
        })
        .collect();
    let per_mass = matches!(masses, Masses::PerParticle(_));
    let mut slabs: Vec<Slab> = (0..n_domains)
        .map(|d| {
            let owned: usize = counts.iter().map(|c| c[d].0).sum();
            let ghosts: usize = counts.iter().map(|c| c[d].1).sum();
            let local = owned + ghosts;
            Slab {
                owned: vec![0; owned],
                ghosts: vec![0; ghosts],
                positions: vec![[0.0; 3]; local],
                masses: match masses {
                    Masses::Uniform(m) => Masses::Uniform(*m),
                    Masses::PerParticle(_) => Masses::PerParticle(vec![0.0; local]),
                },
                velocities: velocities.map(|_| vec![[0.0; 3]; local]),
            }
        })
        .collect();
    let n_chunks = counts.len();
    let mut dests: Vec<Vec<Dest<'_>>> = (0..n_chunks)
        .map(|_| Vec::with_capacity(n_domains))
        .collect();
    for (d, slab) in slabs.iter_mut().enumerate() {
        let n_owned = slab.owned.len();
        let owned_counts = || counts.iter().map(|c| c[d].0);
        let ghost_counts = || counts.iter().map(|c| c[d].1);
        let (owned_pos, ghost_pos) = slab.positions.split_at_mut(n_owned);
        let mass: &mut [f32] = match &mut slab.masses {
            Masses::PerParticle(m) if per_mass => m.as_mut_slice(),
            _ => &mut [],
        };
        let (owned_mass, ghost_mass) = mass.split_at_mut(mass.len().min(n_owned));
        let vel: &mut [[f32; 3]] = match &mut slab.velocities {
            Some(v) => v.as_mut_slice(),
            None => &mut [],
        };
        let (owned_vel, ghost_vel) = vel.split_at_mut(vel.len().min(n_owned));
        let pieces = carve(&mut slab.owned, owned_counts())
            .into_iter()
            .zip(carve(owned_pos, owned_counts()))
            .zip(carve(owned_mass, owned_counts()))
            .zip(carve(owned_vel, owned_counts()))
            .zip(carve(&mut slab.ghosts, ghost_counts()))
            .zip(carve(ghost_pos, ghost_counts()))
            .zip(carve(ghost_mass, ghost_counts()))
            .zip(carve(ghost_vel, ghost_counts()));
        for (chunk, (((((((a, b), c), e), f), g), h), i)) in pieces.enumerate() {
            dests[chunk].push(Dest {
                owned: a,
                owned_pos: b,
                owned_mass: c,
                owned_vel: e,
                ghosts: f,
                ghost_pos: g,
                ghost_mass: h,
                ghost_vel: i,
            });
        }
    }
    positions
        .par_chunks(CHUNK)
        .zip(dests.par_iter_mut())
        .enumerate()
        .for_each(|(chunk, (points, dest))| {
            let mut at = vec![(0usize, 0usize); n_domains];
            let mut ghosts = Vec::new();
            for (offset, p) in points.iter().enumerate() {
                let index = chunk * CHUNK + offset;
                let x = decomposition.coordinate(p);
                let owner = decomposition.owner_of(x);
                decomposition.ghost_domains(x, owner, &mut ghosts);
                let mass = match masses {
                    Masses::PerParticle(m) => m.get(index).copied(),
                    Masses::Uniform(_) => None,
                };
                let velocity = velocities.and_then(|v| v.get(index).copied());
                let (o, to) = (&mut at[owner].0, &mut dest[owner]);
                to.owned[*o] = index as u32;
                to.owned_pos[*o] = *p;
                if let (Some(m), Some(slot)) = (mass, to.owned_mass.get_mut(*o)) {
                    *slot = m;
                }
                if let (Some(v), Some(slot)) = (velocity, to.owned_vel.get_mut(*o)) {
                    *slot = v;
                }
                *o += 1;
                for &d in &ghosts {
                    let (g, to) = (&mut at[d].1, &mut dest[d]);
                    to.ghosts[*g] = index as u32;
                    to.ghost_pos[*g] = *p;
                    if let (Some(m), Some(slot)) = (mass, to.ghost_mass.get_mut(*g)) {
                        *slot = m;
                    }
                    if let (Some(v), Some(slot)) = (velocity, to.ghost_vel.get_mut(*g)) {
                        *slot = v;
                    }
                    *g += 1;
                }
            }
        });
    drop(dests);
    slabs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::halo::periodic::BoxFrame;

    #[test]
    fn slabs_match_the_members_of_the_decomposition() {
        let positions: Vec<[f32; 3]> = (0..200_000u32)
            .map(|i| {
                let x = (i.wrapping_mul(2_654_435_761) >> 8) as f32 / (1u32 << 24) as f32;
                [x, (i % 97) as f32 / 97.0, 0.5]
            })
            .collect();
        let masses = Masses::PerParticle((0..200_000).map(|i| i as f32).collect());
        let velocities: Vec<[f32; 3]> = (0..200_000).map(|i| [i as f32, 0.0, 1.0]).collect();
        let frame = BoxFrame {
            lower: 0.0,
            size: 1.0,
        };
        let dec = Decomposition::balanced(&positions, 3, 0.01, Some(frame));
        let members = dec.members(&positions);
        let slabs = split(&dec, &positions, &masses, Some(&velocities));
        assert_eq!(slabs.len(), 3);
        for (slab, m) in slabs.iter().zip(&members) {
            let owned: Vec<u32> = m
                .indices
                .iter()
                .zip(&m.owned)
                .filter(|(_, o)| **o)
                .map(|(i, _)| *i)
                .collect();
            let ghosts: Vec<u32> = m
                .indices
                .iter()
                .zip(&m.owned)
                .filter(|(_, o)| !**o)
                .map(|(i, _)| *i)
                .collect();
            assert_eq!(slab.owned, owned);
            assert_eq!(slab.ghosts, ghosts);
            assert!(!slab.ghosts.is_empty());
            for k in 0..slab.positions.len() {
                let i = slab.global(k) as usize;
                assert_eq!(slab.positions[k], positions[i]);
                assert_eq!(slab.masses.get(k), i as f32);
                assert_eq!(slab.velocities.as_ref().map(|v| v[k]), Some(velocities[i]));
            }
        }
    }
}
