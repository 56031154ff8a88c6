//! `haloscope fof`: friends-of-friends halos of one snapshot, catalogue and labels out.

use crate::backend::{BackendChoice, DeviceSelection};
use crate::cli::backend_start::BackendStart;
use crate::cli::progress_bar::terminal_progress;
use crate::data::LoadOptions;
use crate::gpu::GpuDevice;
use crate::halo::domains::{CUDA_BYTES_PER_PARTICLE, cuda_domains_for, lap};
use crate::halo::{
    self, FofParams, FofResult, LinkingLength, SeparationFrom, export, parse_species,
    snapshot_box_size,
};
use crate::output::{OutputPlan, check_writable};
use anyhow::{Context, anyhow};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `haloscope fof`.
#[derive(Debug, Args)]
pub struct FofArgs {
    /// Snapshot file (tipsy or Gadget HDF5).
    pub file: PathBuf,
    /// Linking length in units of a particle separation (see --ll-from).
    #[arg(long, default_value_t = 0.2, conflicts_with = "ll")]
    pub b: f64,
    /// Which separation b multiplies: the mean of all particles, (V/N)^(1/3); the lowest-mass
    /// particles', (m_min V / M_total)^(1/3); or auto: the lowest-mass one on a zoom-in (at most
    /// 16 discrete masses, within a relative 1e-6, spanning more than a factor of two), else
    /// the mean.
    #[arg(long, value_enum, default_value_t = LlFrom::Auto, conflicts_with = "ll")]
    pub ll_from: LlFrom,
    /// Absolute linking length, in the file's length unit.
    #[arg(long)]
    pub ll: Option<f64>,
    /// Smallest group kept as a halo.
    #[arg(long, default_value_t = 20)]
    pub min_members: usize,
    /// Periodic box side (tipsy files carry none); default: the file's BoxSize, if any.
    #[arg(long = "box", value_name = "L", conflicts_with = "no_periodic")]
    pub box_size: Option<f64>,
    /// Open boundaries even where the file declares a periodic box.
    #[arg(long)]
    pub no_periodic: bool,
    /// Species to link: all, or a comma list of gas, dark, star, other.
    #[arg(long, default_value = "dark")]
    pub species: String,
    /// Which implementation links the particles.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// CUDA devices to link on: all, or a list such as 0,1 (one spatial domain per device, split
    /// on the devices). Default: the first alone when it can hold the selection, else every
    /// device.
    #[arg(long)]
    pub devices: Option<DeviceSelection>,
    /// Spatial domains (slabs with a ghost layer, merged across): default one per CUDA device,
    /// more when a device cannot hold its share, and none on the CPU. The partition and the
    /// catalogue are those of one domain.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub domains: Option<u64>,
    /// Write the halo catalogue here (.csv, .hdf5 or .h5).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write per-particle halo labels here (.npy int32 or .csv; −1 = no halo).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Region to load (open boundaries then, unless --box is given).
    #[command(flatten)]
    pub region: super::region_args::RegionArgs,
}

/// `--ll-from` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LlFrom {
    /// The lowest-mass particles' separation on a zoom-in, else the mean.
    Auto,
    /// The mean separation of all particles.
    Mean,
    /// The lowest-mass particles' separation.
    LowestMass,
}

impl From<LlFrom> for SeparationFrom {
    fn from(value: LlFrom) -> Self {
        match value {
            LlFrom::Auto => Self::Auto,
            LlFrom::Mean => Self::Mean,
            LlFrom::LowestMass => Self::LowestMass,
        }
    }
}

/// Runs `haloscope fof`.
pub fn run(args: FofArgs) -> anyhow::Result<()> {
    let file = &args.file;
    // Before any work: no output over the snapshot or over the other output.
    let mut plan = OutputPlan::new();
    plan.input("FILE", file)?;
    plan.maybe_output("--out", args.out.as_deref())?;
    plan.maybe_output("--labels", args.labels.as_deref())?;
    for path in [&args.out, &args.labels].into_iter().flatten() {
        check_writable(path)?;
    }
    let in_file = |e: halo::FofError| anyhow!("{}: {e}", file.display());
    let species = parse_species(&args.species).map_err(in_file)?;
    let progress = terminal_progress();
    // The devices open while the file loads. Without --devices the first is opened (the rest,
    // if the selection turns out too large for it, once its size is known).
    let opening = BackendStart::spawn_reserving(
        args.backend,
        args.devices.clone().unwrap_or(DeviceSelection::First),
        device_reserve_bytes(file, args.region.region.is_some()),
    );
    let reading = Instant::now();
    let snapshot = args.region.load(file, &LoadOptions::default(), &progress)?;
    let read_seconds = reading.elapsed().as_secs_f64();
    let box_size = match (args.no_periodic, args.box_size) {
        (true, _) => None,
        (false, Some(size)) => Some(size),
        // A region is not the whole periodic box: linking across its faces would be wrong.
        (false, None) if args.region.region.is_some() => None,
        (false, None) => snapshot_box_size(&snapshot),
    };
    let params = FofParams {
        linking_length: match args.ll {
            Some(ll) => LinkingLength::Absolute(ll),
            None => LinkingLength::Relative(args.b),
        },
        separation_from: args.ll_from.into(),
        min_members: args.min_members,
        box_size,
        // Per-particle labels only when they are written (0.4 GB at 10⁸ particles).
        labels: args.labels.is_some(),
    };
    let start = Instant::now();
    // Wall time of the steps before the back-end's own stages, reported first in `stages`.
    let mut step = Instant::now();
    let mut stages = Vec::new();
    let selected = halo::select_particles(&snapshot, &species).map_err(in_file)?;
    stages.push(("select", lap(&mut step)));
    let prepared = halo::prepare_fof(
        &selected.positions,
        &selected.masses,
        selected.velocities.as_deref(),
        &params,
    )
    .map_err(in_file)?;
    stages.push(("prepare", lap(&mut step)));
    // Resolved once the input is known good, so that bad input is reported alone.
    let n_selected = selected.positions.len();
    let backend = match &args.devices {
        Some(devices) => opening.finish(devices),
        None => opening.finish_choosing(|first| default_devices(n_selected, first)),
    }
    .map_err(|e| anyhow!("{}: CUDA back-end unavailable: {e}", file.display()))?;
    stages.push(("open_backend", lap(&mut step)));
    let domains = args.domains.map(|d| d as usize);
    let mut result = prepared
        .find_spread(&backend, domains, &progress)
        .map_err(in_file)?;
    stages.push(("find", lap(&mut step)));
    stages.append(&mut result.stage_seconds);
    result.stage_seconds = stages;
    let seconds = start.elapsed().as_secs_f64();

    let writing = Instant::now();
    if let Some(out) = &args.out {
        let meta = export::CatalogueMeta::of_snapshot(file, &snapshot);
        export::write_catalogue_with_meta(out, &result, &meta).context("writing the catalogue")?;
    }
    if let Some(path) = &args.labels {
        // `params.labels` asked for them, so both back-ends return them.
        let labels = result
            .labels
            .as_deref()
            .context("the friends-of-friends back-end returned no labels")?;
        export::write_labels(path, labels).context("writing the labels")?;
    }
    let write_seconds = writing.elapsed().as_secs_f64();
    let species_names: Vec<&str> = selected.species.iter().map(|k| k.name()).collect();
    if args.json {
        let mut json = result_json(&result, file, &species_names, seconds);
        // Outside `seconds`, which starts once the particles are in memory and ends before the
        // outputs are written.
        json["read_seconds"] = read_seconds.into();
        json["write_seconds"] = write_seconds.into();
        println!("{}", crate::cli::with_lossy_note(json, [file.as_path()]));
    } else {
        print_summary(&result, file, &species_names, seconds);
    }
    Ok(())
}

/// Device memory to map while `file` loads: the domain budget
/// ([`CUDA_BYTES_PER_PARTICLE`]) for every particle the file could hold at 32
/// bytes a particle (a position, a velocity and an id; tipsy stores 36 or more), so about what
/// the device arrays take when every particle is linked, more when only some species are (each
/// device's share is cut to what it has free). A 14.4 GB tipsy file of 4×10⁸ dark particles
/// asks for 72 GB, which the driver maps in about 0.3 s of a load of seconds. Nothing for a
/// region (a share of unknown size).
fn device_reserve_bytes(file: &Path, region: bool) -> usize {
    const FILE_BYTES_PER_PARTICLE: u64 = 32;
    match std::fs::metadata(file) {
        Ok(meta) if meta.is_file() && !region => {
            let particles = meta.len() / FILE_BYTES_PER_PARTICLE;
            usize::try_from(particles)
                .unwrap_or(usize::MAX)
                .saturating_mul(CUDA_BYTES_PER_PARTICLE)
        }
        _ => 0,
    }
}

/// The devices `fof` links on when `--devices` is not given, from the `first` device opened
/// (none without CUDA): every device when the first cannot hold the selection in one domain,
/// else the first alone. End to end (`fof --labels --out`, clustered dark matter, 2× H200,
/// BENCHMARKS.md) the first alone linked 4×10⁸ in 1.3-1.5 s and both devices in 1.4-1.6 s,
/// while a selection too large for one device goes in sub-boxes there, 3.5× slower than split
/// over two.
fn default_devices(n: usize, first: &[Arc<GpuDevice>]) -> DeviceSelection {
    if !first.is_empty() && cuda_domains_for(n, first).is_ok_and(|domains| domains > 1) {
        DeviceSelection::All
    } else {
        DeviceSelection::First
    }
}

/// The `--json` object; field names follow ../shared/reference/fof.
pub fn result_json(
    result: &FofResult,
    file: &std::path::Path,
    species: &[&str],
    seconds: f64,
) -> serde_json::Value {
    let groups: Vec<serde_json::Value> = result
        .halos
        .iter()
        .enumerate()
        .map(|(rank, h)| {
            serde_json::json!({
                "rank": rank,
                "size": h.size,
                "min_index": h.min_index,
                "mass": h.mass,
                "com": h.com,
                "velocity": h.velocity,
                "radius_max": h.radius_max,
                "radius_rms": h.radius_rms,
            })
        })
        .collect();
    serde_json::json!({
        "file": crate::cli::json_path(file),
        "species": species,
        "n_particles": result.n_particles,
        "b": result.b,
        "mean_separation": result.mean_separation,
        "linking_length": result.linking_length,
        "linking_length_from": result.linking_length_from.describe(),
        "periodic": result.periodic(),
        "box_size": result.box_size(),
        "coordinate_frame_lower_corner": result.frame.map(|f| f.lower),
        "min_members": result.min_members,
        "n_groups": result.halos.len(),
        "n_fof_groups_all_sizes": result.n_sets_all_sizes,
        "n_particles_in_groups": result.n_particles_in_groups(),
        "sizes_sorted_desc": result.halos.iter().map(|h| h.size).collect::<Vec<_>>(),
        "groups": groups,
        "backend": result.backend.name(),
        "seconds": seconds,
        "stages": result
            .stage_seconds
            .iter()
            .map(|&(stage, s)| (stage.to_owned(), serde_json::Value::from(s)))
            .collect::<serde_json::Map<_, _>>(),
    })
}

/// Human summary on stderr.
pub(super) fn print_summary(
    result: &FofResult,
    file: &std::path::Path,
    species: &[&str],
    seconds: f64,
) {
    let boundary = match result.frame {
        Some(frame) => format!("periodic box {} from {}", frame.size, frame.lower),
        None => "open boundaries".to_owned(),
    };
    eprintln!(
        "{}: {} particles ({}), {boundary}",
        file.display(),
        result.n_particles,
        species.join(",")
    );
    let b = result.b.map(|b| format!("b = {b}, ")).unwrap_or_default();
    eprintln!(
        "{b}linking length {:.6e}; {} halos with ≥ {} members ({} particles); {:.3} s on {}",
        result.linking_length,
        result.halos.len(),
        result.min_members,
        result.n_particles_in_groups(),
        seconds,
        result.backend.name()
    );
    eprintln!(
        "linking length from: {}",
        result.linking_length_from.describe()
    );
    for (rank, h) in result.halos.iter().take(10).enumerate() {
        eprintln!(
            "  #{rank:<3} size {:>8}  mass {:.6e}  com [{:.6}, {:.6}, {:.6}]  r_max {:.4e}",
            h.size, h.mass, h.com[0], h.com[1], h.com[2], h.radius_max
        );
    }
    if result.halos.len() > 10 {
        eprintln!("  … {} more", result.halos.len() - 10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_follows_the_file_size_and_is_none_for_a_region_or_no_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("snap.tipsy");
        std::fs::write(&file, vec![0u8; 32 * 1000 + 31]).expect("write");
        assert_eq!(
            device_reserve_bytes(&file, false),
            1000 * CUDA_BYTES_PER_PARTICLE
        );
        assert_eq!(device_reserve_bytes(&file, true), 0);
        assert_eq!(device_reserve_bytes(dir.path(), false), 0);
        assert_eq!(device_reserve_bytes(&dir.path().join("missing"), false), 0);
    }
}
