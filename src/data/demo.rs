//! Deterministic synthetic snapshot and event list for first start, tests and benchmarks.
//!
//! Every random number is a hash of (seed, particle or event index, draw number) — a
//! counter-based generator — so the output is the same for the same seed whatever the number of
//! threads, and any particle can be generated on its own, in parallel.
//!
//! The snapshot is a toy cosmic web in a periodic unit box: nodes joined by filaments, halos
//! (Plummer spheres, Plummer 1911) at the nodes and along the filaments, and a uniform
//! background. Gas gets the density of the component it was drawn from (in units of the mean
//! density), a temperature T ∝ ρ^(γ−1) with γ = 5/3 (adiabatic gas), and the SPH smoothing
//! length that encloses 32 neighbours at that density. Dark matter and stars get the radius that
//! encloses 32 particles of their own family at the density they were drawn from, so no family
//! needs a k-nearest-neighbour search before it can be drawn.

use super::{
    EventList, Field, Header, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
};
use rayon::prelude::*;
use std::f64::consts::{PI, TAU};

/// Number of web nodes; filaments join each node to its three nearest neighbours.
const N_NODES: usize = 24;
/// Fractions of particles in halos and filaments; the rest is uniform background.
const HALO_FRACTION: f64 = 0.45;
const FILAMENT_FRACTION: f64 = 0.35;
/// Gaussian thickness of a filament (box units).
const FILAMENT_SIGMA: f64 = 0.012;
/// Mean density inside a halo's Plummer radius, in units of the mean density of the box.
const HALO_OVERDENSITY: f64 = 2000.0;
/// SPH neighbour number used for the smoothing lengths.
const N_NEIGHBOURS: f64 = 32.0;

/// SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Counter-based random stream: uniform draws keyed by (seed, index, draw number).
#[derive(Clone, Copy)]
struct Rng {
    key: u64,
}

impl Rng {
    fn new(seed: u64, stream: u64, index: u64) -> Self {
        Self {
            key: mix(mix(seed ^ mix(stream)) ^ index),
        }
    }

    /// Uniform in [0, 1), 53 random bits.
    fn uniform(&self, draw: u64) -> f64 {
        (mix(self.key ^ mix(draw)) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller) from draws `draw` and `draw + 1`.
    fn normal(&self, draw: u64) -> f64 {
        let u1 = 1.0 - self.uniform(draw);
        let u2 = self.uniform(draw + 1);
        (-2.0 * u1.ln()).sqrt() * (TAU * u2).cos()
    }
}

/// A halo: centre, Plummer radius and the fraction of all particles it holds.
struct Halo {
    centre: [f64; 3],
    radius: f64,
    fraction: f64,
}

/// A filament from `a` to `a + d` (unwrapped across the periodic box).
struct Filament {
    a: [f64; 3],
    d: [f64; 3],
    length: f64,
}

/// The large-scale structure every particle is drawn from.
struct Web {
    halos: Vec<Halo>,
    halo_cdf: Vec<f64>,
    filaments: Vec<Filament>,
    filament_cdf: Vec<f64>,
}

fn cdf(weights: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut acc = 0.0;
    let mut out: Vec<f64> = weights
        .map(|w| {
            acc += w;
            acc
        })
        .collect();
    for c in &mut out {
        *c /= acc;
    }
    out
}

fn pick(cdf: &[f64], u: f64) -> usize {
    cdf.partition_point(|&c| c <= u)
        .min(cdf.len().saturating_sub(1))
}

fn periodic_delta(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|k| {
        let d = b[k] - a[k];
        d - d.round()
    })
}

impl Web {
    fn new(n_particles: u64, seed: u64) -> Self {
        let rng = Rng::new(seed, 1, 0);
        let nodes: Vec<[f64; 3]> = (0..N_NODES as u64)
            .map(|i| [0, 1, 2].map(|k| rng.uniform(3 * i + k)))
            .collect();
        let mut pairs = std::collections::BTreeSet::new();
        for (i, &a) in nodes.iter().enumerate() {
            let mut others: Vec<(f64, usize)> = (0..N_NODES)
                .filter(|&j| j != i)
                .map(|j| {
                    let d = periodic_delta(a, nodes[j]);
                    (d.iter().map(|x| x * x).sum::<f64>(), j)
                })
                .collect();
            others.sort_by(|x, y| x.0.total_cmp(&y.0));
            pairs.extend(others.iter().take(3).map(|&(_, j)| (i.min(j), i.max(j))));
        }
        let filaments: Vec<Filament> = pairs
            .into_iter()
            .map(|(i, j)| {
                let d = periodic_delta(nodes[i], nodes[j]);
                Filament {
                    a: nodes[i],
                    d,
                    length: d.iter().map(|x| x * x).sum::<f64>().sqrt(),
                }
            })
            .collect();
        // About one halo per 2000 particles, so that halos hold ~200+ particles at any size.
        let n_halos = (n_particles / 2000).clamp(N_NODES as u64, 20_000);
        let hrng = Rng::new(seed, 2, 0);
        let filament_cdf = cdf(filaments.iter().map(|f| f.length));
        let mut weights = Vec::new();
        let mut centres = Vec::new();
        for h in 0..n_halos {
            let draw = 16 * h;
            // Pareto-distributed masses (index 1, capped): many small halos, a few big ones.
            let w = (1.0 - hrng.uniform(draw)).powf(-0.9).min(200.0);
            let centre = if (h as usize) < N_NODES {
                nodes[h as usize]
            } else {
                let f = &filaments[pick(&filament_cdf, hrng.uniform(draw + 1))];
                let t = hrng.uniform(draw + 2);
                [0, 1, 2].map(|k| {
                    f.a[k]
                        + t * f.d[k]
                        + 0.5 * FILAMENT_SIGMA * hrng.normal(draw + 3 + 2 * k as u64)
                })
            };
            // Nodes are the big clusters.
            weights.push(if (h as usize) < N_NODES {
                10.0 * w + 20.0
            } else {
                w
            });
            centres.push(centre);
        }
        let total_w: f64 = weights.iter().sum();
        let halos: Vec<Halo> = centres
            .into_iter()
            .zip(&weights)
            .map(|(centre, &w)| {
                let fraction = HALO_FRACTION * w / total_w;
                // Mean density inside the radius = HALO_OVERDENSITY × mean: M(<a) = f/2^(3/2).
                let radius = (3.0 * fraction / (4.0 * PI * HALO_OVERDENSITY)).cbrt();
                Halo {
                    centre,
                    radius,
                    fraction,
                }
            })
            .collect();
        let halo_cdf = cdf(weights.into_iter());
        Self {
            halos,
            halo_cdf,
            filaments,
            filament_cdf,
        }
    }

    /// Position (wrapped into [0, 1)) and density in units of the mean density of the family
    /// drawn, for one particle; `core` shrinks halos (stars sit in halo centres) and puts every
    /// particle of the family in a halo.
    fn particle(&self, rng: &Rng, core: bool) -> ([f32; 3], f64) {
        let which = rng.uniform(0);
        let (pos, density) = if core || which < HALO_FRACTION {
            let h = &self.halos[pick(&self.halo_cdf, rng.uniform(1))];
            let a = if core { 0.3 * h.radius } else { h.radius };
            // Plummer radius by inverting M(<r)/M = r³/(r² + a²)^(3/2).
            let u = rng.uniform(2).max(1e-12);
            let r = (a / (u.powf(-2.0 / 3.0) - 1.0).sqrt()).min(10.0 * a);
            let dir = unit_vector(rng.uniform(3), rng.uniform(4));
            let rho =
                3.0 * h.fraction / (4.0 * PI * a.powi(3)) * (1.0 + r * r / (a * a)).powf(-2.5);
            ([0, 1, 2].map(|k| h.centre[k] + r * dir[k]), rho)
        } else if which < HALO_FRACTION + FILAMENT_FRACTION {
            let f = &self.filaments[pick(&self.filament_cdf, rng.uniform(1))];
            let t = rng.uniform(2);
            let off = [0, 1, 2].map(|k| FILAMENT_SIGMA * rng.normal(3 + 2 * k as u64));
            let along: f64 = (0..3).map(|k| off[k] * f.d[k]).sum::<f64>() / f.length.max(1e-9);
            let d2 = (off.iter().map(|x| x * x).sum::<f64>() - along * along).max(0.0);
            // Line density λ = fraction/length spread as a 2-D Gaussian across the filament.
            let lambda = FILAMENT_FRACTION * f.length
                / self.filaments.iter().map(|g| g.length).sum::<f64>()
                / f.length.max(1e-9);
            let rho = lambda / (TAU * FILAMENT_SIGMA * FILAMENT_SIGMA)
                * (-d2 / (2.0 * FILAMENT_SIGMA * FILAMENT_SIGMA)).exp();
            ([0, 1, 2].map(|k| f.a[k] + t * f.d[k] + off[k]), rho)
        } else {
            ([0, 1, 2].map(|k| rng.uniform(1 + k as u64)), 0.0)
        };
        // A core family lives in halos only: the halos hold all of it, not HALO_FRACTION, and
        // none of it is in the background.
        let family_density = if core {
            density / HALO_FRACTION
        } else {
            density + 1.0 - HALO_FRACTION - FILAMENT_FRACTION
        };
        let wrapped = pos.map(|x| {
            let w = x.rem_euclid(1.0) as f32;
            // rem_euclid can round up to exactly 1.0 in f32.
            if w >= 1.0 { 0.0 } else { w }
        });
        (wrapped, family_density)
    }
}

/// A uniformly distributed unit vector from two uniform draws.
fn unit_vector(u: f64, v: f64) -> [f64; 3] {
    let z = 2.0 * u - 1.0;
    let s = (1.0 - z * z).max(0.0).sqrt();
    [s * (TAU * v).cos(), s * (TAU * v).sin(), z]
}

/// Most particles a demo snapshot may have (about 5 GB of particle data): faces check a
/// user's size against it before generating.
pub const MAX_DEMO_PARTICLES: u64 = 100_000_000;

/// A synthetic snapshot of `n_particles` particles (40 % gas with `Density` and `Temperature`,
/// 50 % dark matter, 10 % stars; every family with smoothing lengths) in a periodic box of side
/// 1, the same for the same `seed` whatever the number of threads.
pub fn demo_snapshot(n_particles: u64, seed: u64) -> Snapshot {
    let web = Web::new(n_particles, seed);
    let n_gas = n_particles * 4 / 10;
    let n_star = n_particles / 10;
    let n_dark = n_particles - n_gas - n_star;
    let mut species = Vec::new();
    let mut first = 0u64;
    for (kind, n, mass) in [
        (SpeciesKind::Gas, n_gas, 0.16 * 0.8),
        (SpeciesKind::Dark, n_dark, 0.84),
        (SpeciesKind::Star, n_star, 0.16 * 0.2),
    ] {
        if n > 0 {
            species.push(demo_species(&web, kind, first, n, mass, n_particles, seed));
        }
        first += n;
    }
    Snapshot {
        header: Header {
            time: 1.0,
            redshift: Some(0.0),
            box_size: Some(1.0),
            periodic: true,
            ..Header::default()
        },
        species,
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::Demo,
            byte_order: None,
            header_bytes: None,
            particles_in_file: n_particles,
        },
    }
}

/// One family; `total_mass` is shared equally between its particles.
fn demo_species(
    web: &Web,
    kind: SpeciesKind,
    first: u64,
    n: u64,
    total_mass: f64,
    n_total: u64,
    seed: u64,
) -> Species {
    let mut sp = Species::empty(kind);
    sp.masses = Masses::Uniform((total_mass / n as f64) as f32);
    let n = n as usize;
    let core = kind == SpeciesKind::Star;
    let mut positions = vec![[0f32; 3]; n];
    let mut h = vec![0f32; n];
    if kind != SpeciesKind::Gas {
        // The generator knows the density each particle was drawn from, so it gives dark matter
        // and stars the radius that holds N_NEIGHBOURS particles of their own family there: what
        // a k-nearest-neighbour estimate (render::smoothing, k = 32) finds on average, without
        // its cost (seconds for 10⁵ particles on two cores).
        positions
            .par_iter_mut()
            .zip(h.par_iter_mut())
            .enumerate()
            .for_each(|(i, (p, h))| {
                let (pos, density) = web.particle(&Rng::new(seed, 3, first + i as u64), core);
                *p = pos;
                *h = enclosing_radius(n as f64 * density);
            });
        sp.positions = positions;
        sp.smoothing_lengths = Some(h);
        return sp;
    }
    let mut rho = vec![0f32; n];
    let mut temp = vec![0f32; n];
    positions
        .par_iter_mut()
        .zip(h.par_iter_mut())
        .zip(rho.par_iter_mut())
        .zip(temp.par_iter_mut())
        .enumerate()
        .for_each(|(i, (((p, h), rho), temp))| {
            let rng = Rng::new(seed, 3, first + i as u64);
            let (pos, density) = web.particle(&rng, false);
            *p = pos;
            *rho = density as f32;
            // SPH: the neighbours are particles of any family, at number density n_total·density.
            *h = enclosing_radius(n_total as f64 * density);
            // T ∝ ρ^(2/3) (adiabatic, γ = 5/3), 10⁴ K at the mean, 0.2 dex scatter.
            let scatter = 10f64.powf(0.2 * rng.normal(20));
            *temp = (1e4 * density.powf(2.0 / 3.0) * scatter).clamp(100.0, 1e8) as f32;
        });
    sp.positions = positions;
    sp.smoothing_lengths = Some(h);
    sp.fields = vec![
        Field {
            name: "Density".to_owned(),
            values: rho,
            units: [("unit".to_owned(), "mean density".to_owned())].into(),
        },
        Field {
            name: "Temperature".to_owned(),
            values: temp,
            units: [("unit".to_owned(), "K".to_owned())].into(),
        },
    ];
    sp
}

/// The radius of the sphere that holds N_NEIGHBOURS particles at `number_density` (per unit
/// box volume), capped at 0.1 box.
fn enclosing_radius(number_density: f64) -> f32 {
    let volume = N_NEIGHBOURS / number_density;
    (3.0 * volume / (4.0 * PI)).cbrt().min(0.1) as f32
}

/// Number of injected point sources in the demo event list.
const N_SOURCES: u64 = 6;
/// Fraction of events that come from each source.
const SOURCE_FRACTION: f64 = 0.004;
/// Spectral index of the background (close to the atmospheric neutrino spectrum).
const BACKGROUND_GAMMA: f64 = 3.0;
/// Spectral index of the sources (harder, as for astrophysical neutrinos).
const SOURCE_GAMMA: f64 = 1.8;

/// Draws log10(E/GeV) in [2, 7] from dN/dE ∝ E^−γ by inverting the power-law CDF.
fn log_energy(u: f64, gamma: f64) -> f64 {
    let (lo, hi) = (1e2f64, 1e7f64);
    let g = 1.0 - gamma;
    (lo.powf(g) + u * (hi.powf(g) - lo.powf(g)))
        .powf(1.0 / g)
        .log10()
}

/// A synthetic event list of `n_events` events: an isotropic background with spectrum E^−3
/// plus six point sources (0.4 % of the events each, Gaussian spread 0.3°–1°, harder E^−1.8),
/// the same for the same `seed`.
pub fn demo_events(n_events: usize, seed: u64) -> EventList {
    let srng = Rng::new(seed, 10, 0);
    let sources: Vec<(f64, f64, f64)> = (0..N_SOURCES)
        .map(|s| {
            let ra = TAU * srng.uniform(3 * s);
            let dec = (2.0 * srng.uniform(3 * s + 1) - 1.0).asin();
            let sigma = (0.3 + 0.7 * srng.uniform(3 * s + 2)).to_radians();
            (ra, dec, sigma)
        })
        .collect();
    let per_source = (SOURCE_FRACTION * n_events as f64).round() as usize;
    let n_from_sources = (per_source * N_SOURCES as usize).min(n_events);
    let events: Vec<[f64; 5]> = (0..n_events)
        .into_par_iter()
        .map(|i| {
            let rng = Rng::new(seed, 11, i as u64);
            let mjd = 55_000.0 + 1000.0 * rng.uniform(0);
            if i < n_from_sources {
                let (ra0, dec0, sigma) = sources[i % N_SOURCES as usize];
                let (ra, dec) = gaussian_around(ra0, dec0, sigma, &rng);
                [
                    ra,
                    dec,
                    log_energy(rng.uniform(5), SOURCE_GAMMA),
                    sigma,
                    mjd,
                ]
            } else {
                let ra = TAU * rng.uniform(1);
                let dec = (2.0 * rng.uniform(2) - 1.0).asin();
                let ang_err = 10f64.powf(-0.7 + 1.2 * rng.uniform(3)).to_radians();
                [
                    ra,
                    dec,
                    log_energy(rng.uniform(5), BACKGROUND_GAMMA),
                    ang_err,
                    mjd,
                ]
            }
        })
        .collect();
    let column = |k: usize| events.iter().map(|e| e[k]).collect::<Vec<f64>>();
    EventList {
        ra: column(0),
        dec: column(1),
        energy: column(2),
        ang_err: Some(column(3)),
        mjd: Some(column(4)),
        sources: Vec::new(),
        columns: [
            "MJD[days]",
            "log10(E/GeV)",
            "AngErr[deg]",
            "RA[deg]",
            "Dec[deg]",
        ]
        .map(str::to_owned)
        .to_vec(),
    }
}

/// A direction drawn from a 2-D Gaussian of width `sigma` (radians) in the tangent plane at
/// (ra0, dec0), returned as (ra in [0, 2π), dec).
fn gaussian_around(ra0: f64, dec0: f64, sigma: f64, rng: &Rng) -> (f64, f64) {
    let c = [dec0.cos() * ra0.cos(), dec0.cos() * ra0.sin(), dec0.sin()];
    let e1 = [-ra0.sin(), ra0.cos(), 0.0];
    let e2 = [-dec0.sin() * ra0.cos(), -dec0.sin() * ra0.sin(), dec0.cos()];
    let (x, y) = (sigma * rng.normal(10), sigma * rng.normal(12));
    let v = [0, 1, 2].map(|k| c[k] + x * e1[k] + y * e2[k]);
    let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let v = v.map(|a| a / norm);
    let ra = v[1].atan2(v[0]).rem_euclid(TAU);
    // rem_euclid can return TAU itself for tiny negative angles.
    let ra = if ra >= TAU { 0.0 } else { ra };
    (ra, v[2].clamp(-1.0, 1.0).asin())
}

#[cfg(test)]
#[path = "demo_tests.rs"]
mod tests;
