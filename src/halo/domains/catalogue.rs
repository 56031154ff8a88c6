//! The whole catalogue on spatial domains in one process: the slabs split on the CUDA devices
//! when there is one per device (`on_devices.rs`), else copied out on the host in parallel
//! (`split.rs`), one host thread per CUDA device linking its slabs and building the catalogue
//! of their sets without ghosts on the device (`cuda/slab.rs`; on the CPU `slab_cpu.rs`, slab
//! after slab), then the merge of the few sets with a ghost (`merge.rs`) and their halos on the
//! CPU in global member order, so a halo that spans domains is summed exactly as one process's
//! CPU catalogue sums it.

use super::decompose::Decomposition;
use super::driver::DomainLinker;
use super::merge::{DomainLabels, GhostPair, LabelMap, boundary_labels, owner_edges};
use super::on_devices::{catalogue_split_on_devices, splits_on_devices};
use super::slab_cpu::slab_catalogue_cpu;
use super::split::{Slab, split};
use crate::gpu::GpuDevice;
use crate::halo::catalogue::{Catalogue, GroupKey, Halo, SlabCatalogue, halo_of};
use crate::halo::cuda::slab_catalogue_cuda;
use crate::halo::error::FofError;
use crate::halo::params::{CatalogueRequest, check_lengths};
use crate::jobs::Progress;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

/// What [`catalogue_in_domains`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainsCatalogue {
    /// The catalogue of the whole request (labels when asked for).
    pub catalogue: Catalogue,
    /// Number of domains.
    pub n_domains: usize,
    /// Ghost copies over all domains.
    pub n_ghosts: usize,
    /// Labels joined across domains.
    pub n_joined: usize,
    /// Wall seconds per stage, in order; "device busy, summed" over the device threads shows
    /// whether they overlapped (above the "devices" wall when they did); then the first
    /// slab's stages on its device.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// One domain after its device: interior halos with global smallest members, the labels of
/// its boundary sets for the merge, and its owned particles' local halo ranks when asked for.
pub(super) struct DomainResult {
    pub(super) stage_seconds: Vec<(&'static str, f64)>,
    halos: Vec<Halo>,
    n_interior_sets: usize,
    labels: Option<Vec<i32>>,
    boundary: DomainLabels,
}

/// Builds the catalogue of `request` over `n_domains` slabs with `linker` (on CUDA, domain `d`
/// on device `d mod devices.len()`, one host thread per device, its domains one after the
/// other).
pub fn catalogue_in_domains(
    request: &CatalogueRequest<'_>,
    n_domains: usize,
    linker: DomainLinker<'_>,
    progress: &Progress,
) -> Result<DomainsCatalogue, FofError> {
    let positions = request.positions;
    let n = positions.len();
    if n > i32::MAX as usize {
        return Err(FofError::TooManyParticles(n));
    }
    check_lengths(n, request.masses, request.velocities)?;
    let mut stages = Vec::new();
    let mut clock = Instant::now();
    progress.report("domains", 0, 1);
    let (decomposition, open_bounds) = Decomposition::balanced_with_bounds(
        positions,
        n_domains,
        request.linking_length,
        request.frame,
    );
    progress.check()?;
    stages.push(("decompose", lap(&mut clock)));
    let n_domains = decomposition.n_domains();
    let host_slabs;
    let device_owned;
    let (results, busy, n_ghosts, owned): (Vec<DomainResult>, f64, usize, Vec<&[u32]>) =
        match linker {
            DomainLinker::Cuda(devices) if splits_on_devices(n_domains, devices) => {
                let done = catalogue_split_on_devices(
                    request,
                    &decomposition,
                    open_bounds,
                    devices,
                    progress,
                    (&mut stages, &mut clock),
                )?;
                device_owned = done.owned_ids;
                let owned = device_owned.iter().map(Vec::as_slice).collect();
                (done.results, done.busy, done.n_ghosts, owned)
            }
            _ => {
                host_slabs = split(
                    &decomposition,
                    positions,
                    request.masses,
                    request.velocities,
                );
                let n_ghosts = host_slabs.iter().map(|s| s.ghosts.len()).sum();
                progress.check()?;
                stages.push(("split", lap(&mut clock)));
                let (results, busy) = match linker {
                    DomainLinker::Cpu => {
                        let start = Instant::now();
                        let results = host_slabs
                            .iter()
                            .map(|slab| {
                                let out = slab_catalogue_cpu(
                                    &local_request(request, slab),
                                    slab.owned.len(),
                                    progress,
                                )?;
                                host_domain_result(slab, &decomposition, positions, out)
                            })
                            .collect::<Result<Vec<_>, FofError>>()?;
                        (results, start.elapsed().as_secs_f64())
                    }
                    DomainLinker::Cuda(devices) => {
                        run_on_devices(&host_slabs, &decomposition, request, devices, progress)?
                    }
                };
                let owned = host_slabs.iter().map(|s| s.owned.as_slice()).collect();
                (results, busy, n_ghosts, owned)
            }
        };
    stages.push(("devices", lap(&mut clock)));
    stages.push(("device busy, summed", busy));
    // The first slab's own stages on its device (none on the CPU), after a marker.
    if let Some(first) = results.first().filter(|r| !r.stage_seconds.is_empty()) {
        stages.push(("first slab's device stages:", 0.0));
        stages.extend_from_slice(&first.stage_seconds);
    }
    let mut incoming: Vec<Vec<GhostPair>> = vec![Vec::new(); n_domains];
    for r in &results {
        for &(owner, pair) in &r.boundary.ghosts {
            incoming[owner].push(pair);
        }
    }
    let edges: Vec<_> = results
        .par_iter()
        .zip(&incoming)
        .map(|(r, pairs)| owner_edges(&r.boundary, pairs))
        .collect::<Result<Vec<_>, _>>()?
        .concat();
    let map = LabelMap::from_edges(&edges);
    // (final label, global id) of every owned member of a set with a ghost: grouped by label,
    // members in increasing index order; the final label is the set's smallest member.
    let mut crossing: Vec<(u64, u64)> = results
        .par_iter()
        .flat_map_iter(|r| {
            let b = &r.boundary;
            b.owned_ids
                .iter()
                .zip(&b.owned_labels)
                .map(|(&id, &label)| (map.resolve(label), id))
        })
        .collect();
    crossing.par_sort_unstable();
    let mut groups: Vec<(GroupKey, std::ops::Range<usize>)> = Vec::new();
    let mut n_crossing_sets = 0usize;
    let mut start = 0;
    while start < crossing.len() {
        let label = crossing[start].0;
        let end = start + crossing[start..].partition_point(|&(l, _)| l == label);
        n_crossing_sets += 1;
        if end - start >= request.min_members.max(1) {
            groups.push((
                GroupKey {
                    size: (end - start) as u32,
                    min_index: label as u32,
                },
                start..end,
            ));
        }
        start = end;
    }
    let members: Vec<u32> = crossing.par_iter().map(|&(_, id)| id as u32).collect();
    drop(crossing);
    let crossing_halos: Vec<Halo> = groups
        .par_iter()
        .map(|(group, range)| {
            halo_of(
                group,
                &members[range.clone()],
                positions,
                request.masses,
                request.velocities,
                request.frame,
            )
        })
        .collect();
    stages.push(("merge + crossing halos", lap(&mut clock)));

    let catalogue = assemble(request, &owned, results, groups, &members, crossing_halos);
    let catalogue = Catalogue {
        n_sets_all_sizes: catalogue.n_sets_all_sizes + n_crossing_sets,
        ..catalogue
    };
    stages.push(("assemble", lap(&mut clock)));
    progress.report("domains", 1, 1);
    Ok(DomainsCatalogue {
        catalogue,
        n_domains,
        n_ghosts,
        n_joined: map.len(),
        stage_seconds: stages,
    })
}

/// One device thread's domains (index and result) and its busy seconds.
type DeviceDone = (Vec<(usize, DomainResult)>, f64);

/// Seconds since `clock`, which restarts (the stage timers of the domain drivers).
pub fn lap(clock: &mut Instant) -> f64 {
    let seconds = clock.elapsed().as_secs_f64();
    *clock = Instant::now();
    seconds
}

/// `work(d, devices[d])` on one thread per device, results in device order (the first error
/// when any fails).
pub(super) fn on_each<T: Send>(
    devices: &[Arc<GpuDevice>],
    work: impl Fn(usize, &GpuDevice) -> Result<T, FofError> + Sync,
) -> Result<Vec<T>, FofError> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(d, device)| {
                let work = &work;
                scope.spawn(move || work(d, device))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(FofError::DomainPanicked)))
            .collect()
    })
}

/// Every slab on its device (one host thread per device), and the device threads' busy
/// seconds summed.
fn run_on_devices(
    slabs: &[Slab],
    decomposition: &Decomposition,
    request: &CatalogueRequest<'_>,
    devices: &[Arc<GpuDevice>],
    progress: &Progress,
) -> Result<(Vec<DomainResult>, f64), FofError> {
    let n_domains = slabs.len();
    let n_devices = devices.len().max(1);
    let run_one = |d: usize, device: &GpuDevice| -> Result<DomainResult, FofError> {
        progress.check()?;
        let slab = &slabs[d];
        let local = local_request(request, slab);
        let out = slab_catalogue_cuda(device, &local, slab.owned.len(), &Progress::none())?;
        host_domain_result(slab, decomposition, request.positions, out)
    };
    let per_device: Vec<DeviceDone> = on_each(devices, |g, device| {
        let start = Instant::now();
        let done = (g..n_domains)
            .step_by(n_devices)
            .map(|d| run_one(d, device).map(|r| (d, r)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((done, start.elapsed().as_secs_f64()))
    })?;
    let mut slots: Vec<Option<DomainResult>> = (0..n_domains).map(|_| None).collect();
    let mut busy = 0.0;
    for (done, seconds) in per_device {
        busy += seconds;
        for (d, r) in done {
            slots[d] = Some(r);
        }
    }
    let results: Vec<DomainResult> = slots.into_iter().flatten().collect();
    if results.len() != n_domains {
        return Err(FofError::DomainPanicked);
    }
    Ok((results, busy))
}

/// The request of one slab's particles, with `request`'s parameters.
fn local_request<'a>(request: &CatalogueRequest<'_>, slab: &'a Slab) -> CatalogueRequest<'a> {
    CatalogueRequest {
        positions: &slab.positions,
        masses: &slab.masses,
        velocities: slab.velocities.as_deref(),
        linking_length: request.linking_length,
        frame: request.frame,
        min_members: request.min_members,
        with_labels: request.with_labels,
    }
}

/// [`domain_result`] of a slab split on the host.
fn host_domain_result(
    slab: &Slab,
    decomposition: &Decomposition,
    positions: &[[f32; 3]],
    out: SlabCatalogue,
) -> Result<DomainResult, FofError> {
    domain_result(out, slab.owned.len(), decomposition, positions, |locals| {
        Ok(locals.iter().map(|&k| slab.global(k as usize)).collect())
    })
}

/// One slab's catalogue with global smallest members, and its boundary sets for the merge;
/// `global` gives the global indices of local particles of the slab (`n_owned` owned ones
/// first), `positions` are the whole request's.
pub(super) fn domain_result(
    out: SlabCatalogue,
    n_owned: usize,
    decomposition: &Decomposition,
    positions: &[[f32; 3]],
    global: impl FnOnce(&[u32]) -> Result<Vec<u32>, FofError>,
) -> Result<DomainResult, FofError> {
    let locals: Vec<u32> = out
        .halos
        .iter()
        .map(|h| h.min_index as u32)
        .chain(out.boundary.iter().map(|&(k, _)| k))
        .collect();
    let ids = global(&locals)?;
    if ids.len() != locals.len() || ids.iter().any(|&i| i as usize >= positions.len()) {
        return Err(FofError::DeviceSplit(format!(
            "{} global indices for {} local particles, or one beyond the {} particles",
            ids.len(),
            locals.len(),
            positions.len()
        )));
    }
    let (halo_ids, boundary_ids) = ids.split_at(out.halos.len());
    let halos = out
        .halos
        .into_iter()
        .zip(halo_ids)
        .map(|(h, &id)| Halo {
            min_index: id as usize,
            ..h
        })
        .collect();
    Ok(DomainResult {
        stage_seconds: out.stage_seconds,
        halos,
        n_interior_sets: out.n_interior_sets,
        labels: out.labels,
        boundary: boundary_labels(
            n_owned,
            &out.boundary,
            &boundary_ids
                .iter()
                .map(|&i| u64::from(i))
                .collect::<Vec<_>>(),
            |j| decomposition.owner(&positions[boundary_ids[j] as usize]),
        ),
    })
}

/// The catalogue from the domains' interior halos and the crossing halos (`groups` with their
/// `members` ranges): all in catalogue order, and the labels when asked for (`owned` holds the
/// global indices of each domain's owned particles, read only then). Its set count is the
/// interior sets only.
fn assemble(
    request: &CatalogueRequest<'_>,
    owned: &[&[u32]],
    results: Vec<DomainResult>,
    groups: Vec<(GroupKey, std::ops::Range<usize>)>,
    members: &[u32],
    crossing_halos: Vec<Halo>,
) -> Catalogue {
    // Origin of each halo: (domain, local rank) or (domains, crossing group).
    let n_domains = results.len();
    let mut tagged: Vec<(Halo, usize, usize)> = Vec::new();
    let mut n_interior = 0;
    let mut labels_of = Vec::with_capacity(n_domains);
    for (d, r) in results.into_iter().enumerate() {
        n_interior += r.n_interior_sets;
        labels_of.push(r.labels);
        tagged.extend(r.halos.into_iter().enumerate().map(|(k, h)| (h, d, k)));
    }
    tagged.extend(
        crossing_halos
            .into_iter()
            .enumerate()
            .map(|(k, h)| (h, n_domains, k)),
    );
    tagged.par_sort_unstable_by_key(|(h, _, _)| (std::cmp::Reverse(h.size), h.min_index));
    let labels = request.with_labels.then(|| {
        let mut rank_of: Vec<Vec<i32>> = vec![Vec::new(); n_domains + 1];
        for (d, ranks) in rank_of.iter_mut().enumerate() {
            let count = tagged.iter().filter(|t| t.1 == d).count();
            ranks.resize(count, -1);
        }
        for (rank, (_, d, k)) in tagged.iter().enumerate() {
            rank_of[*d][*k] = rank as i32;
        }
        let mut out = owned_labels(request.positions.len(), owned, &labels_of, &rank_of);
        for (k, (_, range)) in groups.iter().enumerate() {
            let rank = rank_of[n_domains][k];
            for &i in &members[range.clone()] {
                out[i as usize] = rank;
            }
        }
        out
    });
    Catalogue {
        halos: tagged.into_iter().map(|(h, _, _)| h).collect(),
        labels,
        n_sets_all_sizes: n_interior,
    }
}

/// The halo rank of each of `n` particles from the domains' owned particles: domain `d` owns
/// particles `owned[d]` (increasing, as both splits give them), whose local labels
/// `labels_of[d]` are ranks through `rank_of[d]`; -1 where a particle is in no kept halo (or in
/// a set with a ghost, whose rank the caller writes). Each piece of the output is written by
/// one thread from the run of each domain's ids that falls in it, so no two threads write the
/// same place and the pages are touched in parallel.
fn owned_labels(
    n: usize,
    owned: &[&[u32]],
    labels_of: &[Option<Vec<i32>>],
    rank_of: &[Vec<i32>],
) -> Vec<i32> {
    const PIECE: usize = 1 << 16;
    // Zeroed memory comes from the allocator untouched; each piece fills its own pages.
    let mut out = vec![0i32; n];
    out.par_chunks_mut(PIECE)
        .enumerate()
        .for_each(|(piece, labels)| {
            labels.fill(-1);
            let first = piece * PIECE;
            let end = first + labels.len();
            for (d, ids) in owned.iter().enumerate() {
                let Some(local) = &labels_of[d] else {
                    continue;
                };
                let from = ids.partition_point(|&i| (i as usize) < first);
                let to = ids.partition_point(|&i| (i as usize) < end);
                for (&i, &label) in ids[from..to].iter().zip(&local[from..to]) {
                    let rank = usize::try_from(label).ok().and_then(|l| rank_of[d].get(l));
                    if let Some(&rank) = rank {
                        labels[i as usize - first] = rank;
                    }
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_labels_are_the_ranks_of_each_domains_particles_and_minus_one_elsewhere() {
        // Three domains over 200 000 particles (several pieces): domain 0 owns the even
        // indices below 150 000, domain 1 the odd ones, domain 2 the rest, without labels.
        // Local labels beyond a domain's ranks, and -1, give -1.
        let n = 200_000;
        let even: Vec<u32> = (0..150_000).step_by(2).collect();
        let odd: Vec<u32> = (1..n as u32).step_by(2).collect();
        let labels_of = vec![
            Some((0..even.len() as i32).map(|k| k % 7).collect::<Vec<_>>()),
            Some((0..odd.len() as i32).map(|k| k % 6 - 1).collect()),
            None,
        ];
        let rank_of = vec![vec![10, 11, 12, 13, 14], vec![20, 21, 22, 23], vec![]];
        let rest: Vec<u32> = (150_000..n as u32).step_by(2).collect();
        let owned = [even.as_slice(), odd.as_slice(), rest.as_slice()];
        let out = owned_labels(n, &owned, &labels_of, &rank_of);
        let mut expected = vec![-1; n];
        for (d, ids) in owned.iter().enumerate() {
            if let Some(local) = &labels_of[d] {
                for (&i, &l) in ids.iter().zip(local) {
                    if let Some(&r) = usize::try_from(l).ok().and_then(|l| rank_of[d].get(l)) {
                        expected[i as usize] = r;
                    }
                }
            }
        }
        assert_eq!(out, expected);
        assert!(out.contains(&14) && out.contains(&23) && out.contains(&-1));
    }
}
