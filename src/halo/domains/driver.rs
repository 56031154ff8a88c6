//! The in-process driver: decompose, link each domain (on the CPU, or on CUDA devices: one
//! domain per device at a time, several per device one after the other when a device cannot
//! hold its share), merge, and return the set ids of one process's linker.

use super::decompose::Decomposition;
use super::merge::{DomainLabels, GhostPair, LabelMap, label_domain, owner_edges};
use crate::gpu::GpuDevice;
use crate::halo::cpu::link_components;
use crate::halo::cuda::link_components_cuda;
use crate::halo::error::FofError;
use crate::halo::periodic::BoxFrame;
use crate::jobs::Progress;
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// Device bytes per particle of one CUDA link (positions, keys, sort buffers, cells, parents,
/// set ids), measured about 144; rounded up for the ghosts and the allocator's slack.
pub const CUDA_BYTES_PER_PARTICLE: usize = 160;

/// Where each domain's local friends-of-friends runs.
#[derive(Debug, Clone, Copy)]
pub enum DomainLinker<'a> {
    /// The rayon linker, domain after domain.
    Cpu,
    /// The CUDA linker: domain `d` on device `d mod devices.len()`, devices in parallel.
    Cuda(&'a [Arc<GpuDevice>]),
}

/// What [`link_in_domains`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainsOutput {
    /// Per particle: the smallest index of its friends-of-friends set (as one process's
    /// linker, up to the choice of representative).
    pub set_ids: Vec<u32>,
    /// Number of domains.
    pub n_domains: usize,
    /// Particles of the largest domain, ghosts included.
    pub largest_domain: usize,
    /// Ghost copies over all domains.
    pub n_ghosts: usize,
    /// Labels joined across domains.
    pub n_joined: usize,
    /// Wall seconds per stage, in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// How many domains the CUDA `devices` need for `n` particles: one per device at least, more
/// (a multiple of the device count) when a device's free memory cannot hold its share.
pub fn cuda_domains_for(n: usize, devices: &[Arc<GpuDevice>]) -> Result<usize, FofError> {
    let mut free = usize::MAX;
    for device in devices {
        free = free.min(device.memory()?.0);
    }
    let per_domain = (free / 10 * 9 / CUDA_BYTES_PER_PARTICLE).max(1);
    Ok(domains_for(n, devices.len(), per_domain))
}

/// Domains for `n` particles on `devices` devices holding `per_domain` particles each (5 %
/// kept for the ghosts): a multiple of the device count.
pub fn domains_for(n: usize, devices: usize, per_domain: usize) -> usize {
    let devices = devices.max(1);
    let needed = (n + n / 20).div_ceil(per_domain.max(1)).max(1);
    needed.div_ceil(devices) * devices
}

/// Links `positions` (the request of [`link_components`]) over `n_domains` slabs with
/// `linker`, then merges across the slabs.
pub fn link_in_domains(
    positions: &[[f32; 3]],
    linking_length: f64,
    frame: Option<BoxFrame>,
    n_domains: usize,
    linker: DomainLinker<'_>,
    progress: &Progress,
) -> Result<DomainsOutput, FofError> {
    let n = positions.len();
    if n > i32::MAX as usize {
        return Err(FofError::TooManyParticles(n));
    }
    let mut stages = Vec::new();
    let mut clock = Instant::now();
    let mut stage = |name: &'static str, clock: &mut Instant| {
        stages.push((name, clock.elapsed().as_secs_f64()));
        *clock = Instant::now();
    };
    progress.report("domains", 0, 1);
    let decomposition = Decomposition::balanced(positions, n_domains, linking_length, frame);
    let members = decomposition.members(positions);
    let largest_domain = members.iter().map(|m| m.indices.len()).max().unwrap_or(0);
    let n_ghosts = members.iter().map(|m| m.indices.len()).sum::<usize>() - n;
    progress.check()?;
    stage("decompose", &mut clock);

    let link_one = |d: usize, device: Option<&GpuDevice>| -> Result<DomainLabels, FofError> {
        progress.check()?;
        let m = &members[d];
        let local: Vec<[f32; 3]> = m
            .indices
            .par_iter()
            .map(|&i| positions[i as usize])
            .collect();
        let set_ids = match device {
            Some(device) => {
                link_components_cuda(device, &local, linking_length, frame, &Progress::none())?
                    .set_ids
            }
            None => link_components(&local, linking_length, frame, &Progress::none())?,
        };
        drop(local);
        let ids: Vec<u64> = m.indices.par_iter().map(|&i| u64::from(i)).collect();
        Ok(label_domain(
            &ids,
            &m.owned,
            |k| decomposition.owner(&positions[m.indices[k] as usize]),
            &set_ids,
        ))
    };
    let n_domains = decomposition.n_domains();
    let mut labels: Vec<Option<DomainLabels>> = vec![None; n_domains];
    match linker {
        DomainLinker::Cpu => {
            for (d, slot) in labels.iter_mut().enumerate() {
                *slot = Some(link_one(d, None)?);
                progress.report("domains", d as u64 + 1, n_domains as u64);
            }
        }
        DomainLinker::Cuda(devices) => {
            let per_device: Vec<Result<Vec<(usize, DomainLabels)>, FofError>> =
                std::thread::scope(|scope| {
                    let handles: Vec<_> = devices
                        .iter()
                        .enumerate()
                        .map(|(g, device)| {
                            let link_one = &link_one;
                            scope.spawn(move || {
                                (g..n_domains)
                                    .step_by(devices.len())
                                    .map(|d| link_one(d, Some(device)).map(|l| (d, l)))
                                    .collect()
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or(Err(FofError::DomainPanicked)))
                        .collect()
                });
            for result in per_device {
                for (d, l) in result? {
                    labels[d] = Some(l);
                }
            }
        }
    }
    let labels: Vec<DomainLabels> = labels.into_iter().flatten().collect();
    drop(members);
    stage("link domains", &mut clock);

    let mut incoming: Vec<Vec<GhostPair>> = vec![Vec::new(); n_domains];
    for l in &labels {
        for &(owner, pair) in &l.ghosts {
            incoming[owner].push(pair);
        }
    }
    let edges: Vec<_> = labels
        .par_iter()
        .zip(&incoming)
        .map(|(l, pairs)| owner_edges(l, pairs))
        .collect::<Result<Vec<_>, _>>()?
        .concat();
    let map = LabelMap::from_edges(&edges);
    let slots: Vec<AtomicU32> = (0..n).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    labels.par_iter().for_each(|l| {
        l.owned_ids
            .par_iter()
            .zip(&l.owned_labels)
            .for_each(|(&id, &label)| {
                slots[id as usize].store(map.resolve(label) as u32, Ordering::Relaxed);
            });
    });
    let set_ids = slots.into_par_iter().map(AtomicU32::into_inner).collect();
    stage("merge", &mut clock);
    Ok(DomainsOutput {
        set_ids,
        n_domains,
        largest_domain,
        n_ghosts,
        n_joined: map.len(),
        stage_seconds: stages,
    })
}
