//! The catalogue's slabs split on the CUDA devices, one slab per device (`halo::cuda::split`):
//! each device routes its share of the particles, then gathers its slab device to device and
//! catalogues it there, so the particles cross the host bus once, in parallel over the devices,
//! instead of being copied out on the host first.

use super::catalogue::{DomainResult, domain_result, lap, on_each};
use super::decompose::{BoxCorners, Decomposition};
use crate::data::Masses;
use crate::gpu::{GpuDevice, enable_peer_access};
use crate::halo::cuda::{
    MAX_DEVICE_SLABS, RoutedShare, Share, SlabSettings, device_slab_catalogue, gather_slab,
    route_share,
};
use crate::halo::error::FofError;
use crate::halo::params::CatalogueRequest;
use crate::jobs::Progress;
use std::sync::Arc;
use std::time::Instant;

/// Whether `n_domains` slabs are split on `devices`: one slab per device, two or more.
pub(super) fn splits_on_devices(n_domains: usize, devices: &[Arc<GpuDevice>]) -> bool {
    n_domains == devices.len() && (2..=MAX_DEVICE_SLABS).contains(&n_domains)
}

/// What [`catalogue_split_on_devices`] returns.
pub(super) struct SplitDone {
    /// One per slab, in slab order.
    pub(super) results: Vec<DomainResult>,
    /// Per slab, the global indices of its owned particles when labels were asked for (else
    /// empty).
    pub(super) owned_ids: Vec<Vec<u32>>,
    /// Ghost copies over all slabs.
    pub(super) n_ghosts: usize,
    /// The device threads' busy seconds of the catalogue stage, summed.
    pub(super) busy: f64,
}

/// Slab `d` of `decomposition` routed, gathered and catalogued on `devices[d]`;
/// `open_bounds` is the positions' bounding box for open boundaries, as the decomposition
/// measured it. The stages "route on devices" and "gather slabs" are added to `timing`'s
/// stages (its clock restarts at each).
pub(super) fn catalogue_split_on_devices(
    request: &CatalogueRequest<'_>,
    decomposition: &Decomposition,
    open_bounds: Option<BoxCorners>,
    devices: &[Arc<GpuDevice>],
    progress: &Progress,
    timing: (&mut Vec<(&'static str, f64)>, &mut Instant),
) -> Result<SplitDone, FofError> {
    let (stages, clock) = timing;
    let positions = request.positions;
    let n = positions.len();
    let n_devices = devices.len();
    for a in devices {
        for b in devices {
            enable_peer_access(a, b)?;
        }
    }
    let (per_particle_mass, uniform_mass) = match request.masses {
        Masses::PerParticle(m) => (Some(m.as_slice()), 0.0),
        Masses::Uniform(m) => (None, *m),
    };
    let routed: Vec<RoutedShare> = on_each(devices, |d, device| {
        progress.check()?;
        let range = d * n / n_devices..(d + 1) * n / n_devices;
        let share = Share {
            first: range.start,
            positions: &positions[range.clone()],
            masses: per_particle_mass.map(|m| &m[range.clone()]),
            velocities: request.velocities.map(|v| &v[range.clone()]),
        };
        route_share(device, &share, decomposition)
    })?;
    stages.push(("route on devices", lap(clock)));
    let slabs = on_each(devices, |e, device| {
        gather_slab(device, &routed, e, uniform_mass)
    })?;
    drop(routed);
    let n_ghosts = slabs.iter().map(|s| s.n_particles() - s.n_owned()).sum();
    stages.push(("gather slabs", lap(clock)));
    // A box holding every position, for the open grid of each slab's linker (a periodic box's
    // grid follows its frame).
    let grid_box = open_bounds.unwrap_or(([0.0; 3], [0.0; 3]));
    let settings = SlabSettings {
        min_members: request.min_members,
        with_labels: request.with_labels,
    };
    let done = on_each(devices, |e, device| {
        progress.check()?;
        let start = Instant::now();
        let slab = &slabs[e];
        let out = device_slab_catalogue(
            device,
            slab,
            request.linking_length,
            request.frame,
            grid_box,
            settings,
            &Progress::none(),
        )?;
        let result = domain_result(out, slab.n_owned(), decomposition, positions, |locals| {
            slab.global_ids(device, locals)
        })?;
        let owned = if request.with_labels {
            slab.owned_ids(device)?
        } else {
            Vec::new()
        };
        Ok((result, owned, start.elapsed().as_secs_f64()))
    })?;
    drop(slabs);
    let mut out = SplitDone {
        results: Vec::with_capacity(n_devices),
        owned_ids: Vec::with_capacity(n_devices),
        n_ghosts,
        busy: 0.0,
    };
    for (result, owned, seconds) in done {
        out.results.push(result);
        out.owned_ids.push(owned);
        out.busy += seconds;
    }
    Ok(out)
}
