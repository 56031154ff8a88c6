//! Spatial domains split on the devices, one slab per device: each device takes an even,
//! contiguous share of the particles (by index), routes every particle of it to the slabs that
//! need it (its owner and the slabs it is a ghost of, kernels/fof_split.cu) and compacts them
//! per slab; then each device gathers its slab's parts from every device, device to device.
//! The shares are in index order and the compaction is stable, so a slab holds its owned
//! particles then its ghosts, each in increasing index order: the host split's layout
//! (`domains/split.rs`), without the particles crossing the host twice.

use super::support::Kernels;
use crate::gpu::{self, GpuDevice, alloc, download_pinned, per_element, upload_pinned};
use crate::halo::domains::Decomposition;
use crate::halo::error::FofError;
use cudarc::driver::{CudaSlice, CudaStream};
use std::sync::Arc;

/// The most slabs a split on the devices routes (the route word's ghost bits).
pub const MAX_DEVICE_SLABS: usize = 24;

crate::kernel_args! {
    /// `fof_route`: `pos` 3·`n` floats, `cuts` `n_cuts` values, `route` `n` words; one thread
    /// per particle.
    struct RouteArgs<'a> {
        pos: &'a CudaSlice<f32>,
        n: u32,
        axis: u32,
        cuts: &'a CudaSlice<f64>,
        n_cuts: u32,
        periodic: i32,
        box_lower: f64,
        box_size: f64,
        ghost: f64,
        route: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_route_flags`: every array `n` words; one thread per particle.
    struct FlagsArgs<'a> {
        route: &'a CudaSlice<u32>,
        n: u32,
        slab: u32,
        owned: &'a mut CudaSlice<u32>,
        ghost: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_route_scatter`: `route`, `owned_at`, `ghost_at` `n` words, `pos` (and `vel`) 3·`n`
    /// floats, `mass` `n` when flagged; the outputs hold the slab's part (owned then ghosts);
    /// one thread per particle.
    struct ScatterArgs<'a> {
        route: &'a CudaSlice<u32>,
        n: u32,
        slab: u32,
        owned_at: &'a CudaSlice<u32>,
        ghost_at: &'a CudaSlice<u32>,
        n_owned: u32,
        pos: &'a CudaSlice<f32>,
        first: u32,
        mass: &'a CudaSlice<f32>,
        has_mass: i32,
        vel: &'a CudaSlice<f32>,
        has_vel: i32,
        out_pos: &'a mut CudaSlice<f32>,
        out_id: &'a mut CudaSlice<u32>,
        out_mass: &'a mut CudaSlice<f32>,
        out_vel: &'a mut CudaSlice<f32>,
    }
}

crate::kernel_args! {
    /// `fof_gather_points`: `pos` 3 floats per particle, `index` and `out` `m` entries (`out`
    /// 3 floats each); one thread per entry.
    struct GatherPointsArgs<'a> {
        pos: &'a CudaSlice<f32>,
        index: &'a CudaSlice<u32>,
        m: u32,
        out: &'a mut CudaSlice<f32>,
    }
}

crate::kernel_args! {
    /// `fof_gather_words`: `index` and `out` `m` entries; one thread per entry.
    struct GatherWordsArgs<'a> {
        src: &'a CudaSlice<u32>,
        index: &'a CudaSlice<u32>,
        m: u32,
        out: &'a mut CudaSlice<u32>,
    }
}

/// One device's share of the particles, by index: positions, and masses and velocities where
/// given per particle.
#[derive(Debug, Clone, Copy)]
pub struct Share<'a> {
    /// Global index of the share's first particle.
    pub first: usize,
    pub positions: &'a [[f32; 3]],
    pub masses: Option<&'a [f32]>,
    pub velocities: Option<&'a [[f32; 3]]>,
}

/// Particles of one share for one slab, on the share's device: the owned ones, then the ghosts,
/// each in increasing index order.
pub struct SlabPart {
    n_owned: usize,
    n_ghosts: usize,
    positions: CudaSlice<f32>,
    ids: CudaSlice<u32>,
    masses: Option<CudaSlice<f32>>,
    velocities: Option<CudaSlice<f32>>,
}

/// One device's share routed to every slab: part `d` goes to slab `d`.
pub struct RoutedShare {
    pub parts: Vec<SlabPart>,
}

/// A slab on its device: positions (3 floats each), global indices, masses (where given per
/// particle, else `uniform_mass` for all) and velocities; the `n_owned` owned particles first,
/// then the ghosts.
pub struct DeviceSlab {
    pub(super) n: usize,
    pub(super) n_owned: usize,
    pub(super) positions: CudaSlice<f32>,
    pub(super) ids: CudaSlice<u32>,
    pub(super) masses: Option<CudaSlice<f32>>,
    pub(super) uniform_mass: f32,
    pub(super) velocities: Option<CudaSlice<f32>>,
}

/// Uploads `share` to `device` and routes it over the slabs of `decomposition` (at most
/// [`MAX_DEVICE_SLABS`]).
pub fn route_share(
    device: &GpuDevice,
    share: &Share<'_>,
    decomposition: &Decomposition,
) -> Result<RoutedShare, FofError> {
    let n_slabs = decomposition.n_domains();
    if n_slabs > MAX_DEVICE_SLABS {
        return Err(FofError::DeviceSplit(format!(
            "{n_slabs} slabs split on the devices: at most {MAX_DEVICE_SLABS}"
        )));
    }
    let n = share.positions.len();
    if share.first + n > u32::MAX as usize {
        return Err(FofError::TooManyParticles(share.first + n));
    }
    device
        .context()
        .bind_to_thread()
        .map_err(gpu::GpuError::from)?;
    let kernels = Kernels::load(device)?;
    let stream = device.stream();
    let positions = upload_pinned(device, share.positions.as_flattened())?;
    let masses = share.masses.map(|m| upload_pinned(device, m)).transpose()?;
    let velocities = share
        .velocities
        .map(|v| upload_pinned(device, v.as_flattened()))
        .transpose()?;
    let cuts = stream.clone_htod(if decomposition.cuts.is_empty() {
        &[0.0][..]
    } else {
        &decomposition.cuts[..]
    })?;
    let (periodic, box_lower, box_size) = match decomposition.frame {
        Some(frame) => (1, frame.lower, frame.size),
        None => (0, 0.0, 0.0),
    };
    let n32 = n as u32;
    let mut route = alloc::<u32>(stream, n)?;
    let args = RouteArgs {
        pos: &positions,
        n: n32,
        axis: decomposition.axis as u32,
        cuts: &cuts,
        n_cuts: decomposition.cuts.len() as u32,
        periodic,
        box_lower,
        box_size,
        ghost: decomposition.ghost,
        route: &mut route,
    };
    // SAFETY: positions hold 3n floats, route n words, cuts n_cuts values (one placeholder
    // when there are none, never read); guarded by i < n.
    unsafe { gpu::launch(stream, &kernels.route, per_element(n, 0), args) }?;
    // One-word stand-ins for the mass and velocity arrays a share does not carry (never read
    // or written: the kernel is told so).
    let placeholder = stream.clone_htod(&[0f32])?;
    let mut no_mass = alloc::<f32>(stream, 1)?;
    let mut no_vel = alloc::<f32>(stream, 1)?;
    let mut parts = Vec::with_capacity(n_slabs);
    for slab in 0..n_slabs {
        let mut owned = alloc::<u32>(stream, n)?;
        let mut ghost = alloc::<u32>(stream, n)?;
        let args = FlagsArgs {
            route: &route,
            n: n32,
            slab: slab as u32,
            owned: &mut owned,
            ghost: &mut ghost,
        };
        // SAFETY: every array holds n words; guarded by i < n.
        unsafe { gpu::launch(stream, &kernels.route_flags, per_element(n, 0), args) }?;
        let owned_at = kernels.sort.scan().exclusive(&owned, n)?;
        let ghost_at = kernels.sort.scan().exclusive(&ghost, n)?;
        let n_owned = kernels.sort.scan().total(&owned, &owned_at, n)?;
        let n_ghosts = kernels.sort.scan().total(&ghost, &ghost_at, n)?;
        drop((owned, ghost));
        let local = n_owned + n_ghosts;
        let mut part = SlabPart {
            n_owned,
            n_ghosts,
            positions: alloc::<f32>(stream, 3 * local)?,
            ids: alloc::<u32>(stream, local)?,
            masses: masses
                .as_ref()
                .map(|_| alloc::<f32>(stream, local))
                .transpose()?,
            velocities: velocities
                .as_ref()
                .map(|_| alloc::<f32>(stream, 3 * local))
                .transpose()?,
        };
        if local > 0 {
            let args = ScatterArgs {
                route: &route,
                n: n32,
                slab: slab as u32,
                owned_at: &owned_at,
                ghost_at: &ghost_at,
                n_owned: n_owned as u32,
                pos: &positions,
                first: share.first as u32,
                mass: masses.as_ref().unwrap_or(&placeholder),
                has_mass: i32::from(masses.is_some()),
                vel: velocities.as_ref().unwrap_or(&placeholder),
                has_vel: i32::from(velocities.is_some()),
                out_pos: &mut part.positions,
                out_id: &mut part.ids,
                out_mass: part.masses.as_mut().unwrap_or(&mut no_mass),
                out_vel: part.velocities.as_mut().unwrap_or(&mut no_vel),
            };
            // SAFETY: an owned particle lands at its owned scan (< n_owned), a ghost at n_owned
            // plus its ghost scan (< local); the outputs hold local entries (3 floats for
            // positions and velocities); masses and velocities are read and written only when
            // flagged, else the one-word placeholders are passed and not touched.
            unsafe { gpu::launch(stream, &kernels.route_scatter, per_element(n, 0), args) }?;
        }
        parts.push(part);
    }
    stream.synchronize().map_err(gpu::GpuError::from)?;
    Ok(RoutedShare { parts })
}

/// Slab `slab` on `device`, gathered from its part of every routed share (in share order: the
/// owned parts, then the ghost parts), copied device to device; `uniform_mass` is every
/// particle's mass where the shares carry none per particle.
pub fn gather_slab(
    device: &GpuDevice,
    shares: &[RoutedShare],
    slab: usize,
    uniform_mass: f32,
) -> Result<DeviceSlab, FofError> {
    device
        .context()
        .bind_to_thread()
        .map_err(gpu::GpuError::from)?;
    let stream = device.stream();
    let parts: Vec<&SlabPart> = shares.iter().filter_map(|s| s.parts.get(slab)).collect();
    let n_owned: usize = parts.iter().map(|p| p.n_owned).sum();
    let n: usize = n_owned + parts.iter().map(|p| p.n_ghosts).sum::<usize>();
    let with_masses = parts.first().is_some_and(|p| p.masses.is_some());
    let with_velocities = parts.first().is_some_and(|p| p.velocities.is_some());
    let mut out = DeviceSlab {
        n,
        n_owned,
        positions: alloc::<f32>(stream, 3 * n)?,
        ids: alloc::<u32>(stream, n)?,
        masses: with_masses.then(|| alloc::<f32>(stream, n)).transpose()?,
        uniform_mass,
        velocities: with_velocities
            .then(|| alloc::<f32>(stream, 3 * n))
            .transpose()?,
    };
    // Where the next owned and the next ghost particle land.
    let (mut owned_at, mut ghost_at) = (0, n_owned);
    for part in parts {
        for (from, to, len) in [
            (0, owned_at, part.n_owned),
            (part.n_owned, ghost_at, part.n_ghosts),
        ] {
            if len == 0 {
                continue;
            }
            copy(
                stream,
                &part.positions,
                3 * from,
                &mut out.positions,
                3 * to,
                3 * len,
            )?;
            copy(stream, &part.ids, from, &mut out.ids, to, len)?;
            if let (Some(src), Some(dst)) = (&part.masses, &mut out.masses) {
                copy(stream, src, from, dst, to, len)?;
            }
            if let (Some(src), Some(dst)) = (&part.velocities, &mut out.velocities) {
                copy(stream, src, 3 * from, dst, 3 * to, 3 * len)?;
            }
        }
        owned_at += part.n_owned;
        ghost_at += part.n_ghosts;
    }
    // The parts may be freed (on their own devices) once the copies have finished.
    stream.synchronize().map_err(gpu::GpuError::from)?;
    Ok(out)
}

/// Copies `len` elements of `src` from `from` into `dst` at `to`, on `stream` (device to device,
/// also across devices).
fn copy<T: cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    src: &CudaSlice<T>,
    from: usize,
    dst: &mut CudaSlice<T>,
    to: usize,
    len: usize,
) -> Result<(), FofError> {
    stream
        .memcpy_dtod(
            &src.slice(from..from + len),
            &mut dst.slice_mut(to..to + len),
        )
        .map_err(gpu::GpuError::from)?;
    Ok(())
}

impl DeviceSlab {
    /// Particles, ghosts included.
    pub fn n_particles(&self) -> usize {
        self.n
    }

    /// Owned particles (the first ones).
    pub fn n_owned(&self) -> usize {
        self.n_owned
    }

    /// Global indices of the local particles `locals` (each below [`Self::n_particles`]).
    pub fn global_ids(&self, device: &GpuDevice, locals: &[u32]) -> Result<Vec<u32>, FofError> {
        if locals.is_empty() {
            return Ok(Vec::new());
        }
        check_locals(locals, self.n)?;
        let kernels = Kernels::load(device)?;
        let stream = device.stream();
        let index = stream.clone_htod(locals)?;
        let m = locals.len();
        let mut out = alloc::<u32>(stream, m)?;
        let args = GatherWordsArgs {
            src: &self.ids,
            index: &index,
            m: m as u32,
            out: &mut out,
        };
        // SAFETY: every index is below n (checked above), the length of ids; out holds m.
        unsafe { gpu::launch(stream, &kernels.gather_words, per_element(m, 0), args) }?;
        Ok(stream.clone_dtoh(&out)?)
    }

    /// Positions of the local particles `locals` (each below [`Self::n_particles`]).
    pub(super) fn points(
        &self,
        device: &GpuDevice,
        kernels: &Kernels,
        locals: &[u32],
    ) -> Result<Vec<[f32; 3]>, FofError> {
        if locals.is_empty() {
            return Ok(Vec::new());
        }
        check_locals(locals, self.n)?;
        let stream = device.stream();
        let index = stream.clone_htod(locals)?;
        let m = locals.len();
        let mut out = alloc::<f32>(stream, 3 * m)?;
        let args = GatherPointsArgs {
            pos: &self.positions,
            index: &index,
            m: m as u32,
            out: &mut out,
        };
        // SAFETY: every index is below n (checked above) and positions hold 3n floats; out
        // holds 3m.
        unsafe { gpu::launch(stream, &kernels.gather_points, per_element(m, 0), args) }?;
        let flat = stream.clone_dtoh(&out)?;
        Ok(flat.chunks_exact(3).map(|p| [p[0], p[1], p[2]]).collect())
    }

    /// Global indices of the owned particles, in order.
    pub fn owned_ids(&self, device: &GpuDevice) -> Result<Vec<u32>, FofError> {
        if self.n_owned == 0 {
            return Ok(Vec::new());
        }
        Ok(download_pinned(device, &self.ids, self.n_owned, |i| i)?)
    }
}

/// Every local index must lie in the slab.
fn check_locals(locals: &[u32], n: usize) -> Result<(), FofError> {
    match locals.iter().find(|&&k| k as usize >= n) {
        Some(&k) => Err(FofError::DeviceSplit(format!(
            "local index {k} beyond the slab's {n} particles"
        ))),
        None => Ok(()),
    }
}
