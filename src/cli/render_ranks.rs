//! `mpirun -n K haloscope render …`: the same options and outputs as one process, from K
//! ranks that each read only their share of the file (DESIGN: the MPI ranks). Every step that
//! can fail on one rank is agreed ([`agree`]) before the next collective call, so a failing
//! rank ends the job with its error and exit code 1 on every rank; rank 0 writes the outputs.

use super::render::{RenderArgs, check_outputs, settings_from_args};
use crate::backend::{BackendChoice, DeviceSelection};
use crate::cluster::{Collective, agree};
use crate::data::share::{Share, read_share};
use crate::data::{LoadOptions, Snapshot, Species};
use crate::jobs::Progress;
use crate::render::cuda::render_ranks_cuda;
use crate::render::ranks::{global, render_ranks};
use crate::render::resolve::validate_settings;
use crate::render::smoothing::DEFAULT_KNN;
use crate::render::{Bounds, Camera, RenderError, fits, npy, png};
use anyhow::{Context, bail};
use std::path::PathBuf;
use std::time::Instant;

/// Runs `haloscope render` as one rank of `group` (more than one rank).
pub fn run(args: RenderArgs, group: &dyn Collective) -> anyhow::Result<()> {
    let start = Instant::now();
    let (file, out) = agree(group, preflight(&args))?;
    let options = LoadOptions {
        max_particles: args.max_particles,
    };
    let progress = Progress::none();
    // CUDA: the rank's own device of its host opens while it reads its share. Under ranks
    // only `--backend cuda` renders on CUDA; every other choice renders on the CPU.
    let choice = match args.backend {
        BackendChoice::Cuda => BackendChoice::Cuda,
        _ => BackendChoice::Cpu,
    };
    let mut opening = args
        .devices
        .start_for_rank(choice, group, DeviceSelection::First);
    let read = read_share(&file, &options, &progress, group.rank(), group.size());
    let mut share = agree(group, read)?;
    args.style.apply_box(&mut share.snapshot);
    let load_seconds = start.elapsed().as_secs_f64();

    // What one process decides from the whole snapshot: the species drawn and the framing.
    let proxy = presence(&share);
    let kinds = agree(group, args.style.species_kinds(&proxy))?;
    let camera = whole_bounds(group, &share.snapshot, &kinds).map_or_else(
        || Camera::look_at([0.0, 0.0, 1.0], [0.0; 3], [0.0, 1.0, 0.0], 45.0),
        |bounds| Camera::frame_all(&bounds, args.width, args.height),
    );
    let mut settings = agree(group, settings_from_args(&args, &proxy, Some(camera)))?;
    agree(group, check_knn_over_whole(&share, &settings))?;
    let smoothed = global::agree_smoothing(group, &mut share, &settings, &progress);
    agree(group, smoothed)?;
    agree(group, validate_settings(&share.snapshot, &settings))?;
    global::agree_ranges(group, &share.snapshot, &mut settings);

    // CUDA: each rank on its own device of its host, the fixed-point images summed exactly.
    let device = match opening.join() {
        Some(backend) => {
            // Named as one process names it: "FILE: CUDA: …".
            let device = backend
                .map_err(RenderError::from)
                .map_err(anyhow::Error::from)
                .and_then(|b| b.device().cloned().context("no CUDA device"))
                .with_context(|| file.display().to_string());
            Some(agree(group, device)?)
        }
        None => None,
    };
    let backend = if device.is_some() { "cuda" } else { "cpu" };
    let frame = match device {
        Some(device) => {
            let with_tau = args.tau_out.is_some() || args.fits_out.is_some();
            let rendered = render_ranks_cuda(group, device, &share, &settings, with_tau, &progress);
            agree(group, rendered)?.map(|f| Frame {
                image: f.image,
                output: f.output,
                stats: f.stats,
            })
        }
        None => {
            let rendered = render_ranks(group, &share, &settings, &progress);
            agree(group, rendered)?.map(|output| Frame {
                image: output.image(&settings.tone),
                stats: output.stats.clone(),
                output: Some(output),
            })
        }
    };
    let written = match &frame {
        Some(frame) => write_outputs(&args, &share.snapshot, &settings, frame, &out, backend),
        None => Ok(()),
    };
    agree(group, written)?;
    let Some(frame) = frame else {
        return Ok(());
    };
    let stats = &frame.stats;
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let mut stages = serde_json::Map::new();
        stages.insert("load".into(), load_seconds.into());
        for stage in &stats.timings {
            stages.insert(stage.stage.into(), stage.seconds.into());
        }
        let report = serde_json::json!({
            "backend": backend,
            "ranks": group.size(),
            "file": super::json_path(&file),
            "out": super::json_path(&out),
            "width": settings.width,
            "height": settings.height,
            "species": settings.species.iter().map(|s| s.kind.name()).collect::<Vec<_>>(),
            "particles": stats.particles,
            "active": stats.counts.active(),
            "inactive": stats.counts.inactive,
            "small": stats.counts.small,
            "medium": stats.counts.medium,
            "large": stats.counts.large,
            "brightness": stats.brightness,
            "brightness_mode": if stats.auto_exposure { "auto" } else { "explicit" },
            "camera": settings.camera,
            "seconds": seconds,
            "render_seconds": stats.seconds,
            "stages": stages,
        });
        println!("{report}");
    } else {
        eprintln!(
            "rendered {} particles ({} active) at {}x{} on {} MPI ranks ({backend}), brightness {}, \
             in {seconds:.3} s -> {}",
            stats.particles,
            stats.counts.active(),
            settings.width,
            settings.height,
            group.size(),
            stats.brightness,
            out.display()
        );
    }
    Ok(())
}

/// The checks one process makes before reading, plus what the ranks do not support yet.
fn preflight(args: &RenderArgs) -> anyhow::Result<(PathBuf, PathBuf)> {
    if args.list_palettes {
        bail!("--list-palettes needs no MPI ranks: run it without mpirun");
    }
    let (Some(file), Some(out)) = (args.file.clone(), args.out.clone()) else {
        bail!("render needs FILE and --out");
    };
    if args.backend == BackendChoice::Wgpu {
        bail!(
            "--backend wgpu: under MPI ranks the CPU (auto, cpu) or CUDA (cuda) renders, \
             bit-identical to one process; use one of those"
        );
    }
    if args.region.region.is_some() {
        bail!("--region: not supported under MPI ranks yet; run it as one process");
    }
    check_outputs(args, &file, &out)?;
    Ok((file, out))
}

/// A stand-in for the whole snapshot where only presence matters (the default species): one
/// particle per species that has any on any rank, and the share's smoothing-length columns.
fn presence(share: &Share) -> Snapshot {
    let species = share
        .snapshot
        .species
        .iter()
        .zip(&share.totals)
        .map(|(s, &total)| Species {
            positions: if total > 0 {
                vec![[0.0; 3]]
            } else {
                Vec::new()
            },
            smoothing_lengths: s.smoothing_lengths.as_ref().map(|_| vec![1.0]),
            ..Species::empty(s.kind)
        })
        .collect();
    Snapshot {
        header: share.snapshot.header.clone(),
        species,
        source: share.snapshot.source.clone(),
    }
}

/// The bounds of the drawn species over every rank (min and max reduce exactly).
fn whole_bounds(
    group: &dyn Collective,
    snapshot: &Snapshot,
    kinds: &[crate::data::SpeciesKind],
) -> Option<Bounds> {
    let local = Bounds::of_snapshot(snapshot, kinds);
    let mut min = local.map_or([f64::INFINITY; 3], |b| b.min).to_vec();
    let mut max = local.map_or([f64::NEG_INFINITY; 3], |b| b.max).to_vec();
    group.min_f64(&mut min);
    group.max_f64(&mut max);
    (min[0] <= max[0]).then(|| Bounds {
        min: [min[0], min[1], min[2]],
        max: [max[0], max[1], max[2]],
    })
}

/// One process's `--knn` check, on the whole species' count rather than the share's.
fn check_knn_over_whole(
    share: &Share,
    settings: &crate::render::RenderSettings,
) -> Result<(), RenderError> {
    let k = settings.knn;
    for style in &settings.species {
        let Some(i) = share
            .snapshot
            .species
            .iter()
            .position(|s| s.kind == style.kind)
        else {
            continue;
        };
        let (species, n) = (&share.snapshot.species[i], share.totals[i]);
        if species.smoothing_lengths.is_none() && n > 0 && k > DEFAULT_KNN && k as u64 >= n {
            return Err(RenderError::setting(format!(
                "--knn {k}: species {} has only {n} particles (k must be below the particle count)",
                species.kind.name()
            )));
        }
    }
    Ok(())
}

/// Rank 0's frame: the image, τ when the outputs need it, and the facts.
struct Frame {
    image: image::DynamicImage,
    output: Option<crate::render::RenderOutput>,
    stats: crate::render::RenderStats,
}

/// Rank 0's outputs: the PNG, and τ as .npy and FITS where asked for.
fn write_outputs(
    args: &RenderArgs,
    snapshot: &Snapshot,
    settings: &crate::render::RenderSettings,
    frame: &Frame,
    out: &std::path::Path,
    backend: &str,
) -> anyhow::Result<()> {
    png::save_png(out, &frame.image)?;
    let output = || {
        frame
            .output
            .as_ref()
            .context("τ was not kept for --tau-out or --fits-out")
    };
    if let Some(tau_path) = &args.tau_out {
        npy::write_tau_npy(tau_path, &output()?.tau)?;
    }
    if let Some(fits_path) = &args.fits_out {
        let output = output()?;
        let facts = fits::RenderFacts {
            header: &snapshot.header,
            source: &snapshot.source,
            settings,
            stats: &output.stats,
            backend,
        };
        fits::write_render_fits(fits_path, output, &facts)?;
    }
    Ok(())
}
