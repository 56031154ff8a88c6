//! `mpirun -n K haloscope fof …`: every rank reads only its share of the file and checks it,
//! the linking length and frame come from collectives (`halo::prepare_on_ranks`, bit for bit
//! one process's), the ranks link one slab each and merge across slabs
//! (`halo::domains::link_on_ranks`), masses and velocities follow the particles to their slab
//! when the catalogue needs them, each slab catalogues its own sets and rank 0 the few across
//! slabs (`halo::domains::catalogue_on_ranks`), and rank 0 writes the same outputs as one
//! process. No rank holds the whole selection; rank 0 gathers the labels when `--labels` asks.

use super::fof::{FofArgs, print_summary, result_json};
use crate::backend::{BackendKind, DeviceSelection};
use crate::cli::devices_args::DevicesArgs;
use crate::cli::progress_bar::terminal_progress;
use crate::cluster::Collective;
use crate::data::share::read_share;
use crate::data::{LoadOptions, Masses};
use crate::halo::domains::{DomainLinker, RankLabels, catalogue_on_ranks, lap, link_on_ranks};
use crate::halo::{
    self, FofParams, FofResult, LinkingLength, RankPrepared, RankSelection, SelectedParticles,
    export, parse_species,
};
use crate::jobs::Progress;
use crate::output::{OutputPlan, check_writable};
use anyhow::{Context, anyhow, bail};
use rayon::prelude::*;
use std::borrow::Cow;
use std::time::Instant;

/// Particles per task of the parallel passes here.
const CHUNK: usize = 1 << 20;

/// Ends every rank when one failed: this rank's error, or a line saying another rank failed.
fn agree<T>(group: &dyn Collective, step: &str, result: anyhow::Result<T>) -> anyhow::Result<T> {
    if group.any_failed(result.is_err()) {
        return Err(result.err().unwrap_or_else(|| {
            anyhow!("stopped: another MPI rank failed while {step} (its error is printed there)")
        }));
    }
    result
}

/// Runs `haloscope fof` as one rank of `group`.
pub fn run(args: FofArgs, group: &dyn Collective) -> anyhow::Result<()> {
    let file = &args.file;
    let (rank, ranks) = (group.rank(), group.size());
    let checked = (|| {
        if args.region.region.is_some() {
            bail!("--region is not supported under MPI ranks: run one process");
        }
        let mut plan = OutputPlan::new();
        plan.input("FILE", file)?;
        plan.maybe_output("--out", args.out.as_deref())?;
        plan.maybe_output("--labels", args.labels.as_deref())?;
        if group.is_root() {
            for path in [&args.out, &args.labels].into_iter().flatten() {
                check_writable(path)?;
            }
        }
        parse_species(&args.species).map_err(|e| anyhow!("{}: {e}", file.display()))
    })();
    let species = agree(group, "checking the options", checked)?;
    let progress = if group.is_root() {
        terminal_progress()
    } else {
        Progress::none()
    };
    let share = read_share(file, &LoadOptions::default(), &progress, rank, ranks)
        .map_err(anyhow::Error::from);
    let share = agree(group, "reading its share", share)?;
    let start = Instant::now();
    // This rank's wall time per step; rank 0's are reported with --json as `stages`.
    let mut stages: Vec<(&'static str, f64)> = Vec::new();
    let mut step = Instant::now();

    // This rank's selected particles, their global ids (index in one process's selection) and
    // the id ranges it holds (one per selected species, for the masses' way back below).
    let mut ids = Vec::new();
    let mut ranges: Vec<u64> = Vec::new();
    let mut base = 0u64;
    for (i, s) in share.snapshot.species.iter().enumerate() {
        if species.contains(&s.kind) {
            let first = base + share.first[i];
            ids.extend((0..s.len() as u64).map(|k| first + k));
            ranges.extend([first, s.len() as u64]);
            base += share.totals[i];
        }
    }
    let selected = if ids.is_empty() {
        Ok(SelectedParticles {
            positions: Cow::Borrowed(&[]),
            masses: Cow::Owned(Masses::PerParticle(Vec::new())),
            velocities: None,
            species: Vec::new(),
        })
    } else {
        halo::select_particles(&share.snapshot, &species)
            .map_err(|e| anyhow!("{}: {e}", file.display()))
    };
    let selected = agree(group, "selecting the particles", selected)?;
    let box_size = match (args.no_periodic, args.box_size) {
        (true, _) => None,
        (false, Some(size)) => Some(size),
        (false, None) => halo::snapshot_box_size(&share.snapshot),
    };
    let params = FofParams {
        linking_length: match args.ll {
            Some(ll) => LinkingLength::Absolute(ll),
            None => LinkingLength::Relative(args.b),
        },
        separation_from: args.ll_from.into(),
        min_members: args.min_members,
        box_size,
        labels: args.labels.is_some(),
    };
    let rank_share = RankSelection {
        snapshot: &share.snapshot,
        kinds: &species,
        selected: &selected,
        ids: &ids,
    };
    let prepared = halo::prepare_on_ranks(group, &rank_share, &params)
        .map_err(|e| anyhow!("{}: {e}", file.display()))?;
    // The selection borrows the share's columns (one species) or holds their join, so the
    // share stays until the end.
    let meta = export::CatalogueMeta::of_snapshot(file, &share.snapshot);
    stages.push(("prepare", lap(&mut step)));

    // Each rank on its own device of its host, as `render` under ranks (without it every rank
    // of a host linked its slab on the first device).
    let devices = DevicesArgs {
        devices: args.devices.clone(),
    };
    let backend = devices
        .resolve_for_rank(args.backend, group, DeviceSelection::First)
        .map_err(|e| anyhow!("{}: CUDA back-end unavailable: {e}", file.display()));
    let backend = agree(group, "opening its back-end", backend)?;
    let linker = match backend.devices() {
        [] => DomainLinker::Cpu,
        devices => DomainLinker::Cuda(devices),
    };
    stages.push(("open_backend", lap(&mut step)));
    let linked = link_on_ranks(
        group,
        &ids,
        &selected.positions,
        prepared.linking_length,
        prepared.frame,
        linker,
        &progress,
    )
    .map_err(|e| anyhow!("{}: {e}", file.display()))?;
    stages.extend(linked.stage_seconds.iter().copied());
    step = Instant::now();
    let SelectedParticles {
        positions,
        masses,
        velocities,
        ..
    } = selected;
    drop(positions);
    let (owned_masses, owned_velocities) = masses_to_owners(
        group,
        &prepared,
        &ranges,
        &linked,
        &masses,
        velocities.as_deref(),
    );
    let owned = agree(
        group,
        "sending masses and velocities to the slabs",
        owned_masses,
    )?;
    drop((masses, velocities, ids));
    stages.push(("masses", lap(&mut step)));
    let catalogue = catalogue_on_ranks(
        group,
        &linked,
        &owned,
        owned_velocities.as_deref(),
        prepared.frame,
        args.min_members,
        args.labels.is_some(),
    )
    .map_err(|e| anyhow!("{}: {e}", file.display()))?;
    drop((owned, owned_velocities));
    stages.extend(catalogue.stage_seconds.iter().copied());
    step = Instant::now();

    // (id, halo index) pairs as [u32; 2] records (ids are below 2^31); rank 0 keeps its own.
    let labels = match &catalogue.labels {
        Some(labels) => {
            // Native byte order, as every message between the ranks of one job (merge.rs).
            let pairs: Vec<[u32; 2]> = if group.is_root() {
                Vec::new()
            } else {
                linked
                    .ids
                    .par_iter()
                    .zip(labels.par_iter())
                    .map(|(&id, &label)| [id as u32, label as u32])
                    .collect()
            };
            let gathered = group.gather_bytes(0, bytemuck::cast_slice(&pairs));
            drop(pairs);
            let all = if group.is_root() {
                join_labels(prepared.n, &linked.ids, labels, &gathered).map(Some)
            } else {
                Ok(None)
            };
            agree(group, "gathering the labels", all)?
        }
        None => None,
    };
    stages.push(("gather_labels", lap(&mut step)));
    if !group.is_root() {
        return Ok(());
    }
    let kind = if backend.devices().is_empty() {
        BackendKind::Cpu
    } else {
        BackendKind::Cuda
    };
    let result = FofResult {
        labels,
        halos: catalogue.halos,
        n_particles: prepared.n,
        n_sets_all_sizes: catalogue.n_sets_all_sizes,
        b: prepared.b,
        mean_separation: prepared.mean_separation,
        linking_length: prepared.linking_length,
        linking_length_from: prepared.source,
        min_members: args.min_members,
        frame: prepared.frame,
        backend: kind,
        stage_seconds: stages,
    };
    let seconds = start.elapsed().as_secs_f64();
    if let Some(out) = &args.out {
        export::write_catalogue_with_meta(out, &result, &meta).context("writing the catalogue")?;
    }
    if let Some(path) = &args.labels {
        let labels = result.labels.as_deref().context("no labels were built")?;
        export::write_labels(path, labels).context("writing the labels")?;
    }
    let species_names: Vec<&str> = prepared.species.iter().map(|k| k.name()).collect();
    if args.json {
        let json = result_json(&result, file, &species_names, seconds);
        println!("{}", crate::cli::with_lossy_note(json, [file.as_path()]));
    } else {
        print_summary(&result, file, &species_names, seconds);
        eprintln!(
            "{ranks} MPI ranks; {} ghost copies on rank 0's slab",
            linked.n_ghosts
        );
    }
    Ok(())
}

/// Rank 0: every particle's halo index from its own (`ids`, `labels`) and the other ranks'
/// [u32 id, i32 label] records (`gathered[r]` for rank r > 0).
fn join_labels(
    n: usize,
    ids: &[u64],
    labels: &[i32],
    gathered: &[Vec<u8>],
) -> anyhow::Result<Vec<i32>> {
    let mut all = vec![i32::MIN; n];
    let mut put = |id: u64, label: i32| -> anyhow::Result<()> {
        let slot = all
            .get_mut(id as usize)
            .with_context(|| format!("a rank labelled particle {id} of {n}"))?;
        *slot = label;
        Ok(())
    };
    for (&id, &l) in ids.iter().zip(labels) {
        put(id, l)?;
    }
    for bytes in gathered.iter().skip(1) {
        if !bytes.len().is_multiple_of(8) {
            bail!(
                "a rank's final labels are {} bytes, not whole records",
                bytes.len()
            );
        }
        for pair in bytes.chunks_exact(8) {
            let [id, label] = bytemuck::pod_read_unaligned::<[u32; 2]>(pair);
            put(u64::from(id), label as i32)?;
        }
    }
    if let Some(missing) = all.iter().position(|&s| s == i32::MIN) {
        bail!("no rank labelled particle {missing} of {n}");
    }
    Ok(all)
}

/// The masses and velocities of the particles each rank's slab owns (`linked.ids` order), sent
/// from the ranks that read them (in this rank's selection order: `masses`, `velocities`;
/// `ranges` its [first id, count] per species). Only what the catalogue needs travels: no
/// masses when every particle has one mass, no velocities when the selection has none.
fn masses_to_owners(
    group: &dyn Collective,
    prepared: &RankPrepared,
    ranges: &[u64],
    linked: &RankLabels,
    masses: &Masses,
    velocities: Option<&[[f32; 3]]>,
) -> (anyhow::Result<Masses>, Option<Vec<[f32; 3]>>) {
    // Both decided for the whole selection, so that senders and owners agree on the records.
    let send_masses = prepared.uniform_mass.is_none();
    let send_velocities = prepared.velocities;
    let n_owned = linked.ids.len();
    if !send_masses && !send_velocities {
        let m = prepared.uniform_mass.unwrap_or(0.0);
        return (Ok(Masses::Uniform(m)), None);
    }
    let width = 4 * usize::from(send_masses) + 12 * usize::from(send_velocities);
    // Every rank's id ranges, so an owner knows which rank read each of its particles.
    let mut origins: Vec<(u64, u64, usize)> = Vec::new();
    for (rank, bytes) in group
        .all_gather_bytes(bytemuck::cast_slice(ranges))
        .iter()
        .enumerate()
    {
        let words: Vec<u64> = bytemuck::pod_collect_to_vec(bytes);
        for pair in words.chunks_exact(2) {
            if pair[1] > 0 {
                origins.push((pair[0], pair[0] + pair[1], rank));
            }
        }
    }
    origins.sort_unstable();
    // The records for each owner in input order, in parallel chunks joined in order.
    let ranks = group.size();
    let parts: Vec<Vec<Vec<u8>>> = linked
        .owners
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(chunk, owners)| {
            let mut out: Vec<Vec<u8>> = vec![Vec::new(); ranks];
            for (k, &owner) in owners.iter().enumerate() {
                let i = chunk * CHUNK + k;
                let Some(into) = out.get_mut(owner as usize) else {
                    continue;
                };
                if send_masses {
                    into.extend_from_slice(&masses.get(i).to_le_bytes());
                }
                if send_velocities {
                    // A rank with particles has velocities when the selection has them.
                    let v = velocities
                        .and_then(|v| v.get(i))
                        .copied()
                        .unwrap_or_default();
                    into.extend_from_slice(bytemuck::bytes_of(&v));
                }
            }
            out
        })
        .collect();
    let outgoing: Vec<Vec<u8>> = (0..ranks)
        .into_par_iter()
        .map(|d| {
            let mut all = Vec::with_capacity(parts.iter().map(|p| p[d].len()).sum());
            for p in &parts {
                all.extend_from_slice(&p[d]);
            }
            all
        })
        .collect();
    drop(parts);
    let incoming = group.all_to_all_bytes(&outgoing);
    drop(outgoing);
    // Each owned particle's record: the rank that read it (its id in that rank's ranges) and
    // the place in that rank's message (the earlier particles from that rank come first).
    let from: Vec<Option<u32>> = linked
        .ids
        .par_iter()
        .map(|&id| {
            let at = origins.partition_point(|o| o.0 <= id);
            at.checked_sub(1)
                .and_then(|at| origins.get(at))
                .filter(|o| id < o.1)
                .map(|o| o.2 as u32)
        })
        .collect();
    let mut offsets = Vec::with_capacity(n_owned);
    let mut next = vec![0usize; incoming.len()];
    for (k, rank) in from.iter().enumerate() {
        let Some(rank) = rank.map(|r| r as usize).filter(|&r| r < next.len()) else {
            return (
                Err(anyhow!("particle {} is in no rank's share", linked.ids[k])),
                None,
            );
        };
        offsets.push(next[rank]);
        next[rank] += width;
    }
    if let Some(rank) = (0..next.len()).find(|&r| next[r] != incoming[r].len()) {
        return (
            Err(anyhow!(
                "rank {rank} sent {} bytes of masses and velocities for particles that need {}",
                incoming[rank].len(),
                next[rank]
            )),
            None,
        );
    }
    let record = |k: usize| {
        let rank = from[k].unwrap_or(0) as usize;
        &incoming[rank][offsets[k]..offsets[k] + width]
    };
    let owned_masses: Vec<f32> = if send_masses {
        (0..n_owned)
            .into_par_iter()
            .map(|k| bytemuck::pod_read_unaligned::<f32>(&record(k)[..4]))
            .collect()
    } else {
        Vec::new()
    };
    let skip = 4 * usize::from(send_masses);
    let owned_velocities: Vec<[f32; 3]> = if send_velocities {
        (0..n_owned)
            .into_par_iter()
            .map(|k| bytemuck::pod_read_unaligned::<[f32; 3]>(&record(k)[skip..skip + 12]))
            .collect()
    } else {
        Vec::new()
    };
    let owned = if send_masses {
        Masses::PerParticle(owned_masses)
    } else {
        Masses::Uniform(prepared.uniform_mass.unwrap_or(0.0))
    };
    (Ok(owned), send_velocities.then_some(owned_velocities))
}
