//! The whole halo catalogue on the device: the CUDA twin of `catalogue::build` after the CUDA
//! linker and partition (kernels/fof_catalogue.cu), so that only the labels and a few numbers per halo cross
//! the bus instead of the CPU reducing 10⁸ particles.
//!
//! Exactness: sizes, smallest members, order and labels are integers and equal the CPU's
//! exactly. The float sums (mass, centre of mass, velocity, radii) are taken in a fixed order
//! (kept particles in sorted-cell order grouped by halo, chunks of [`CHUNK_MEMBERS`] summed
//! sequentially on the device, chunks added in order on the host), so they are the same run to
//! run, but not in the CPU's member-index order: they agree with the CPU catalogue to float64
//! rounding, stated as masses within a relative 1e-12 and centres and radii within 1e-9 of the
//! box size (or of the data extent when open), tested in tests/fof_cuda.rs. Bit identity would
//! need the CPU catalogue to adopt the same blocked order, changing its pinned results.

use super::link::{LinkRequest, Linked, Points};
use super::partition::{PartitionOnDevice, partition_on_device};
use super::support::DeviceRun;
use crate::data::Masses;
use crate::gpu::{self, GpuDevice, alloc, download_pinned, per_element, upload_pinned};
use crate::halo::catalogue::{Catalogue, GroupKey, Halo};
use crate::halo::error::FofError;
use crate::halo::params::{CatalogueRequest, check_lengths};
use crate::halo::periodic::BoxFrame;
use crate::jobs::Progress;
use cudarc::driver::CudaSlice;
use rayon::prelude::*;

/// Members per chunk of the device sums: long enough to amortise a thread, short enough that
/// the largest halo spreads over many threads.
const CHUNK_MEMBERS: usize = 256;

/// What [`catalogue_cuda`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct CudaCatalogueOutput {
    /// The catalogue, with labels when asked for (labels, sizes and minima identical to the
    /// CPU's).
    pub catalogue: Catalogue,
    /// Number of non-empty cells.
    pub n_cells: usize,
    /// Wall seconds per stage (each stage ends with a stream synchronisation), in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
}

/// Links `request.positions` on `device`, then builds the catalogue of the
/// sets with at least `request.min_members` members on the device (sizes, masses, centres,
/// velocities, radii), and the per-particle labels only when `request.with_labels` (else
/// neither labelled on the device nor downloaded: 4 bytes per particle saved on the bus; the
/// catalogue does not depend on it).
pub fn catalogue_cuda(
    device: &GpuDevice,
    request: &CatalogueRequest<'_>,
    progress: &Progress,
) -> Result<CudaCatalogueOutput, FofError> {
    let n = request.positions.len();
    check_lengths(n, request.masses, request.velocities)?;
    if n == 0 {
        return Ok(CudaCatalogueOutput {
            catalogue: Catalogue {
                halos: Vec::new(),
                labels: request.with_labels.then(Vec::new),
                n_sets_all_sizes: 0,
            },
            n_cells: 0,
            stage_seconds: Vec::new(),
        });
    }
    let mut run = DeviceRun::start(device, progress)?;
    let link = LinkRequest {
        points: Points::Host(request.positions),
        linking_length: request.linking_length,
        frame: request.frame,
    };
    let (linked, part) =
        partition_on_device(&mut run, &link, n, request.min_members, request.with_labels)?;
    progress.check()?;
    progress.report("cuda: catalogue", 0, 1);
    let halos = if part.groups.is_empty() {
        Vec::new()
    } else {
        halos_of_host_request(&run, request, &linked, &part)?
    };
    run.stage("catalogue sums")?;
    let labels = match &part.labels {
        Some(labels_dev) => {
            // The label words are i32 ranks (−1 = all ones) written as u32.
            let labels = download_pinned(device, labels_dev, n, |w| w as i32)?;
            run.stage("download labels")?;
            Some(labels)
        }
        None => None,
    };
    progress.report("cuda: catalogue", 1, 1);
    Ok(CudaCatalogueOutput {
        catalogue: Catalogue {
            halos,
            labels,
            n_sets_all_sizes: part.n_sets_all_sizes,
        },
        n_cells: part.n_cells,
        stage_seconds: run.into_stages(),
    })
}

/// The kept halos' sums of a host request: its masses and velocities uploaded, the smallest
/// members' positions read on the host, then [`halos_on_device`].
pub(super) fn halos_of_host_request(
    run: &DeviceRun<'_>,
    request: &CatalogueRequest<'_>,
    linked: &Linked,
    part: &PartitionOnDevice,
) -> Result<Vec<Halo>, FofError> {
    let masses_dev = match request.masses {
        Masses::PerParticle(m) => Some(upload_pinned(run.device, m)?),
        Masses::Uniform(_) => None,
    };
    let masses = match (request.masses, &masses_dev) {
        (Masses::Uniform(m), _) => DeviceMasses::Uniform(*m),
        (Masses::PerParticle(_), Some(m)) => DeviceMasses::PerParticle(m),
        (Masses::PerParticle(_), None) => DeviceMasses::Uniform(0.0),
    };
    let velocities_dev = match request.velocities {
        Some(v) => Some(upload_pinned(run.device, v.as_flattened())?),
        None => None,
    };
    let inputs = SumInputs {
        masses,
        velocities: velocities_dev.as_ref(),
        frame: request.frame,
    };
    let first_members: Vec<[f32; 3]> = part
        .groups
        .par_iter()
        .map(|g| {
            request
                .positions
                .get(g.min_index as usize)
                .copied()
                .unwrap_or_default()
        })
        .collect();
    halos_on_device(run, &inputs, &first_members, linked, part)
}

/// Particle masses on the device: one for all, or one per particle.
#[derive(Debug, Clone, Copy)]
pub(super) enum DeviceMasses<'a> {
    Uniform(f32),
    PerParticle(&'a CudaSlice<f32>),
}

/// What the halo sums read besides the linked cells: masses and velocities (3 floats per
/// particle) on the device, in the linked particles' order, and the periodic frame.
pub(super) struct SumInputs<'a> {
    pub(super) masses: DeviceMasses<'a>,
    pub(super) velocities: Option<&'a CudaSlice<f32>>,
    pub(super) frame: Option<BoxFrame>,
}

/// The kept halos' sums: members grouped by halo, chunk moments on the device, centres on the
/// host, chunk radii on the device, each halo's chunks added in order on the host.
/// `first_members` holds the position of each kept set's smallest member, the reference its
/// moments are taken about (as the CPU catalogue's).
pub(super) fn halos_on_device(
    run: &DeviceRun<'_>,
    inputs: &SumInputs<'_>,
    first_members: &[[f32; 3]],
    linked: &Linked,
    part: &PartitionOnDevice,
) -> Result<Vec<Halo>, FofError> {
    let frame = inputs.frame;
    let members = members_by_halo(run, linked, part, linked.order.len())?;
    let chunks = Chunks::of(&part.groups);
    let first_dev = run.stream.clone_htod(&chunks.first)?;
    let halo_dev = run.stream.clone_htod(&chunks.halo)?;
    let sums = Sums {
        members: &members,
        first: &first_dev,
        halo: &halo_dev,
        n_chunks: chunks.halo.len() as u32,
        linked,
        frame,
    };
    // As the CPU catalogue: the smallest member wrapped into the frame.
    let reference: Vec<[f64; 3]> = first_members
        .par_iter()
        .map(|p| match frame {
            Some(frame) => frame.wrap_point(p),
            None => p.map(f64::from),
        })
        .collect();
    let moments = sums.moments(run, &reference, inputs)?;
    let centred: Vec<Centred> = part
        .groups
        .par_iter()
        .enumerate()
        .map(|(h, _)| {
            let range = chunks.of_halo[h]..chunks.of_halo[h + 1];
            centre(
                &reference[h],
                &moments[range.start * 7..range.end * 7],
                frame,
            )
        })
        .collect();
    let com: Vec<[f64; 3]> = centred.iter().map(|c| c.com).collect();
    let radii = sums.radii(run, &com)?;
    Ok(centred
        .into_par_iter()
        .enumerate()
        .map(|(h, c)| {
            let range = chunks.of_halo[h]..chunks.of_halo[h + 1];
            let (mut sum_r2, mut max_r2) = (0.0f64, 0.0f64);
            for k in range {
                sum_r2 += radii[2 * k];
                max_r2 = max_r2.max(radii[2 * k + 1]);
            }
            let size = part.groups[h].size as usize;
            Halo {
                size,
                min_index: part.groups[h].min_index as usize,
                mass: c.mass,
                com: c.com,
                velocity: inputs.velocities.map(|_| c.velocity),
                // sqrt is monotonic and correctly rounded: sqrt(max r²) = max sqrt(r²).
                radius_max: max_r2.sqrt(),
                radius_rms: (sum_r2 / size as f64).sqrt(),
            }
        })
        .collect())
}

crate::kernel_args! {
    /// `fof_sorted_ranks`: cells as [`Linked`] (`n_cells` cells over n sorted positions);
    /// `rank_of_cell` `n_cells` entries; `sorted_rank` and `kept_flag` n; one thread per cell.
    struct SortedRanksArgs<'a> {
        cell_start: &'a CudaSlice<u32>,
        parent: &'a CudaSlice<u32>,
        rank_of_cell: &'a CudaSlice<u32>,
        n_cells: u32,
        sorted_rank: &'a mut CudaSlice<u32>,
        kept_flag: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_compact_members`: `sorted_rank` and `kept_offset` hold `n` entries; `keys` and
    /// `values` the kept total; one thread per sorted position.
    struct CompactMembersArgs<'a> {
        sorted_rank: &'a CudaSlice<u32>,
        kept_offset: &'a CudaSlice<u32>,
        n: u32,
        keys: &'a mut CudaSlice<u64>,
        values: &'a mut CudaSlice<u32>,
    }
}

crate::kernel_args! {
    /// `fof_halo_sums`: chunk k covers `members[chunk_first[k]..chunk_first[k + 1]]` (sorted
    /// positions); `order`, `sx`, `sy`, `sz` (and `masses`, `velocities` when flagged) hold n
    /// entries; `reference` 3 per halo; `partial` 7·`n_chunks`; one thread per chunk.
    struct HaloSumsArgs<'a> {
        members: &'a CudaSlice<u32>,
        chunk_first: &'a CudaSlice<u32>,
        chunk_halo: &'a CudaSlice<u32>,
        n_chunks: u32,
        order: &'a CudaSlice<u32>,
        sx: &'a CudaSlice<f64>,
        sy: &'a CudaSlice<f64>,
        sz: &'a CudaSlice<f64>,
        reference: &'a CudaSlice<f64>,
        periodic: i32,
        box_size: f64,
        masses: &'a CudaSlice<f32>,
        per_particle_mass: i32,
        uniform_mass: f64,
        velocities: &'a CudaSlice<f32>,
        has_velocities: i32,
        partial: &'a mut CudaSlice<f64>,
    }
}

crate::kernel_args! {
    /// `fof_halo_radii`: chunks as [`HaloSumsArgs`]; `com` 3 per halo; `partial` 2·`n_chunks`;
    /// one thread per chunk.
    struct HaloRadiiArgs<'a> {
        members: &'a CudaSlice<u32>,
        chunk_first: &'a CudaSlice<u32>,
        chunk_halo: &'a CudaSlice<u32>,
        n_chunks: u32,
        sx: &'a CudaSlice<f64>,
        sy: &'a CudaSlice<f64>,
        sz: &'a CudaSlice<f64>,
        com: &'a CudaSlice<f64>,
        periodic: i32,
        box_size: f64,
        partial: &'a mut CudaSlice<f64>,
    }
}

/// Sorted positions of the kept particles, grouped by halo rank (stable: sorted-cell order
/// within a halo).
fn members_by_halo(
    run: &DeviceRun<'_>,
    linked: &Linked,
    part: &PartitionOnDevice,
    n: usize,
) -> Result<CudaSlice<u32>, FofError> {
    let stream = run.stream;
    let mut sorted_rank = alloc::<u32>(stream, n)?;
    let mut kept_flag = alloc::<u32>(stream, n)?;
    let args = SortedRanksArgs {
        cell_start: &linked.cell_start,
        parent: &linked.parent,
        rank_of_cell: &part.rank_of_cell,
        n_cells: part.n_cells as u32,
        sorted_rank: &mut sorted_rank,
        kept_flag: &mut kept_flag,
    };
    // SAFETY: members of cell c are sorted positions cell_start[c]..cell_start[c+1] within
    // 0..n; parent[c] < n_cells indexes rank_of_cell.
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.sorted_ranks,
            per_element(part.n_cells, 0),
            args,
        )
    }?;
    let kept_offset = run.kernels.sort.scan().exclusive(&kept_flag, n)?;
    drop(kept_flag);
    let total: usize = part.groups.iter().map(|g| g.size as usize).sum();
    let mut keys = alloc::<u64>(stream, total)?;
    let mut values = alloc::<u32>(stream, total)?;
    let args = CompactMembersArgs {
        sorted_rank: &sorted_rank,
        kept_offset: &kept_offset,
        n: n as u32,
        keys: &mut keys,
        values: &mut values,
    };
    // SAFETY: kept_offset is the exclusive scan of the kept flags, so kept positions land
    // on distinct indices below the kept total (the sum of the kept sets' sizes).
    unsafe {
        gpu::launch(
            stream,
            &run.kernels.compact_members,
            per_element(n, 0),
            args,
        )
    }?;
    let n_groups = part.groups.len() as u32;
    let key_bits = (u32::BITS - n_groups.saturating_sub(1).leading_zeros()).max(1);
    let (_, members) = run
        .kernels
        .sort
        .sort_pairs(keys, values, total as u32, key_bits)?;
    Ok(members)
}

/// Chunks of at most `CHUNK_MEMBERS` members, none straddling two halos.
struct Chunks {
    /// First member of each chunk, then the total.
    first: Vec<u32>,
    /// Halo rank of each chunk.
    halo: Vec<u32>,
    /// First chunk of each halo, then the chunk count.
    of_halo: Vec<usize>,
}

impl Chunks {
    fn of(groups: &[GroupKey]) -> Self {
        let mut first = Vec::new();
        let mut halo = Vec::new();
        let mut of_halo = Vec::with_capacity(groups.len() + 1);
        let mut start = 0u32;
        for (rank, g) in groups.iter().enumerate() {
            of_halo.push(halo.len());
            for offset in (0..g.size).step_by(CHUNK_MEMBERS) {
                first.push(start + offset);
                halo.push(rank as u32);
            }
            start += g.size;
        }
        of_halo.push(halo.len());
        first.push(start);
        Self {
            first,
            halo,
            of_halo,
        }
    }
}

/// Mass, centre and velocity of one halo.
struct Centred {
    mass: f64,
    com: [f64; 3],
    velocity: [f64; 3],
}

/// Adds a halo's chunk sums (7 per chunk) in order and finishes as `catalogue::halo_of` does.
fn centre(reference: &[f64; 3], chunk_sums: &[f64], frame: Option<BoxFrame>) -> Centred {
    let mut mass = 0.0f64;
    let mut moment = [0.0f64; 3];
    let mut momentum = [0.0f64; 3];
    for sums in chunk_sums.chunks_exact(7) {
        mass += sums[0];
        for axis in 0..3 {
            moment[axis] += sums[1 + axis];
            momentum[axis] += sums[4 + axis];
        }
    }
    // As the CPU: a massless halo is centred on its reference member.
    let weight = if mass > 0.0 { mass } else { 1.0 };
    let com = [0, 1, 2].map(|axis| {
        let x = reference[axis] + moment[axis] / weight;
        frame.map_or(x, |frame| frame.wrap(x))
    });
    Centred {
        mass,
        com,
        velocity: momentum.map(|p| p / weight),
    }
}

/// The device arrays both sum kernels read.
struct Sums<'a> {
    members: &'a CudaSlice<u32>,
    first: &'a CudaSlice<u32>,
    halo: &'a CudaSlice<u32>,
    n_chunks: u32,
    linked: &'a Linked,
    frame: Option<BoxFrame>,
}

impl Sums<'_> {
    fn periodic(&self) -> (i32, f64) {
        self.frame.map_or((0, 0.0), |f| (1, f.size))
    }

    /// Per chunk: mass, moment (3) and momentum (3).
    fn moments(
        &self,
        run: &DeviceRun<'_>,
        reference: &[[f64; 3]],
        inputs: &SumInputs<'_>,
    ) -> Result<Vec<f64>, FofError> {
        let stream = run.stream;
        let reference_dev = stream.clone_htod(reference.as_flattened())?;
        // A kernel argument must point somewhere: one unread word where a flag is 0.
        let placeholder = stream.clone_htod(&[0f32])?;
        let (masses_dev, per_particle, uniform) = match inputs.masses {
            DeviceMasses::PerParticle(m) => (m, 1i32, 0.0),
            DeviceMasses::Uniform(m) => (&placeholder, 0i32, f64::from(m)),
        };
        let (velocities_dev, has_velocities) = match inputs.velocities {
            Some(v) => (v, 1i32),
            None => (&placeholder, 0i32),
        };
        let (periodic, box_size) = self.periodic();
        let n_chunks = self.n_chunks as usize;
        let mut partial = alloc::<f64>(stream, 7 * n_chunks)?;
        let [sx, sy, sz] = &self.linked.sorted_positions;
        let args = HaloSumsArgs {
            members: self.members,
            chunk_first: self.first,
            chunk_halo: self.halo,
            n_chunks: self.n_chunks,
            order: &self.linked.order,
            sx,
            sy,
            sz,
            reference: &reference_dev,
            periodic,
            box_size,
            masses: masses_dev,
            per_particle_mass: per_particle,
            uniform_mass: uniform,
            velocities: velocities_dev,
            has_velocities,
            partial: &mut partial,
        };
        // SAFETY: chunk k covers members first[k]..first[k+1] (within the kept total), each a
        // sorted position < n; order maps it to a particle < n (masses and velocities hold n
        // entries when flagged); halo[k] < the halo count that reference holds.
        unsafe {
            gpu::launch(
                stream,
                &run.kernels.halo_sums,
                per_element(n_chunks, 0),
                args,
            )
        }?;
        Ok(stream.clone_dtoh(&partial)?)
    }

    /// Per chunk: sum and maximum of the squared distances from the halo centre.
    fn radii(&self, run: &DeviceRun<'_>, com: &[[f64; 3]]) -> Result<Vec<f64>, FofError> {
        let stream = run.stream;
        let com_dev = stream.clone_htod(com.as_flattened())?;
        let (periodic, box_size) = self.periodic();
        let n_chunks = self.n_chunks as usize;
        let mut partial = alloc::<f64>(stream, 2 * n_chunks)?;
        let [sx, sy, sz] = &self.linked.sorted_positions;
        let args = HaloRadiiArgs {
            members: self.members,
            chunk_first: self.first,
            chunk_halo: self.halo,
            n_chunks: self.n_chunks,
            sx,
            sy,
            sz,
            com: &com_dev,
            periodic,
            box_size,
            partial: &mut partial,
        };
        // SAFETY: as in `moments`; com holds one centre per halo.
        unsafe {
            gpu::launch(
                stream,
                &run.kernels.halo_radii,
                per_element(n_chunks, 0),
                args,
            )
        }?;
        Ok(stream.clone_dtoh(&partial)?)
    }
}
