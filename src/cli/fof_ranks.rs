//! `mpirun -n K haloscope fof …`: every rank reads only its share of the file and checks it,
//! the linking length and frame come from collectives (`halo::prepare_on_ranks`, bit for bit
//! one process's), the ranks link one slab each and merge across slabs
//! (`halo::domains::link_on_ranks`), masses and velocities travel with the particles to their slab
//! when the catalogue needs them, each slab catalogues its own sets and rank 0 the few across
//! slabs (`halo::domains::catalogue_on_ranks`), and the outputs are the same as one
//! process's. No rank holds the whole selection: a `.npy` labels file is written by every rank
//! at the places of the particles it read (`halo::export_ranks`), other outputs by rank 0.

use super::fof::{FofArgs, print_summary, result_json};
use crate::backend::{BackendKind, DeviceSelection};
use crate::cli::devices_args::DevicesArgs;
use crate::cli::progress_bar::terminal_progress;
use crate::cluster::Collective;
use crate::data::share::read_share;
use crate::data::{LoadOptions, Masses};
use crate::halo::domains::{
    DomainLinker, RankParticles, SlabOptions, catalogue_on_ranks, labels_to_readers, lap,
    link_on_ranks,
};
use crate::halo::{
    self, FofError, FofParams, FofResult, LinkingLength, RankSelection, SelectedParticles, export,
    export_ranks, parse_species,
};
use crate::jobs::Progress;
use crate::output::{OutputPlan, check_writable};
use anyhow::{Context, anyhow, bail};
use rayon::prelude::*;
use std::borrow::Cow;
use std::time::Instant;

/// Ends every rank when one failed: this rank's error, or [`FofError::OtherRankFailed`] (the
/// failing rank's own error is the one printed: `cli::end_ranks`).
fn agree<T>(
    group: &dyn Collective,
    step: &'static str,
    result: anyhow::Result<T>,
) -> anyhow::Result<T> {
    if group.any_failed(result.is_err()) {
        return Err(result
            .err()
            .unwrap_or_else(|| FofError::OtherRankFailed(step).into()));
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
        parse_species(&args.species).with_context(|| file.display().to_string())
    })();
    let species = agree(group, "checking the options", checked)?;
    let progress = if group.is_root() {
        terminal_progress()
    } else {
        Progress::none()
    };
    // The rank's devices open while its share loads, as one process's do.
    let devices = DevicesArgs {
        devices: args.devices.clone(),
    };
    let mut opening = devices.start_for_rank(args.backend, group, DeviceSelection::First);
    let mut step = Instant::now();
    let share = read_share(file, &LoadOptions::default(), &progress, rank, ranks)
        .map_err(anyhow::Error::from);
    let share = agree(group, "reading its share", share)?;
    // This rank's wall time per step; rank 0's are reported with --json as `stages`, every
    // rank's as `rank_stages`. The read is one of them but not of `seconds`, which, as one
    // process's, starts once the particles are in memory.
    let mut stages: Vec<(&'static str, f64)> = vec![("read_share", lap(&mut step))];
    let start = Instant::now();

    // This rank's selected particles and their global ids (index in one process's selection).
    let mut ids: Vec<u64> = Vec::new();
    let mut base = 0u64;
    for (i, s) in share.snapshot.species.iter().enumerate() {
        if species.contains(&s.kind) {
            let first = base + share.first[i];
            ids.par_extend((0..s.len()).into_par_iter().map(|k| first + k as u64));
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
            .with_context(|| file.display().to_string())
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
        .with_context(|| file.display().to_string())?;
    // The selection borrows the share's columns (one species) or holds their join, so the
    // share stays until the end.
    let meta = export::CatalogueMeta::of_snapshot(file, &share.snapshot);
    stages.push(("prepare", lap(&mut step)));

    // Each rank on its own device of its host, as `render` under ranks (without it every rank
    // of a host linked its slab on the first device).
    let backend = opening
        .join()
        .unwrap_or_else(|| devices.resolve_for_rank(args.backend, group, DeviceSelection::First))
        .map_err(|e| anyhow!("{}: CUDA back-end unavailable: {e}", file.display()));
    let backend = agree(group, "opening its back-end", backend)?;
    let linker = match backend.devices() {
        [] => DomainLinker::Cpu,
        devices => DomainLinker::Cuda(devices),
    };
    stages.push(("open_backend", lap(&mut step)));
    // Masses and velocities travel with the particles only when the catalogue needs them: no
    // masses when every particle has one mass, no velocities when the selection has none.
    let particles = RankParticles {
        ids: &ids,
        positions: &selected.positions,
        masses: prepared.uniform_mass.is_none().then_some(&*selected.masses),
        velocities: prepared
            .velocities
            .then_some(selected.velocities.as_deref()),
    };
    let options = SlabOptions {
        uniform_mass: prepared.uniform_mass.unwrap_or(0.0),
        min_members: args.min_members,
        with_labels: args.labels.is_some(),
    };
    let linked = link_on_ranks(
        group,
        particles,
        prepared.linking_length,
        prepared.frame,
        options,
        linker,
        &progress,
    )
    .with_context(|| file.display().to_string())?;
    stages.extend(linked.stage_seconds.iter().copied());
    // The ids stay for the labels' way back to this rank and their places in the file.
    drop(selected);
    let catalogue = catalogue_on_ranks(
        group,
        &linked,
        prepared.velocities,
        prepared.frame,
        args.min_members,
        args.labels.is_some(),
    )
    .with_context(|| file.display().to_string())?;
    stages.extend(catalogue.stage_seconds.iter().copied());
    step = Instant::now();

    // A `.npy` labels file is written by every rank at the places of the particles it read, so
    // the labels go back to their readers; any other format is written by rank 0 from every
    // label gathered.
    let npy_labels = args
        .labels
        .as_deref()
        .filter(|path| export::labels_as_npy(path));
    let mut labels_read = None;
    let labels = match &catalogue.labels {
        Some(labels) if npy_labels.is_some() => {
            labels_read = Some(
                labels_to_readers(group, &ids, &linked.input_owners, &linked.ids, labels)
                    .with_context(|| file.display().to_string())?,
            );
            None
        }
        Some(labels) => {
            // (id, halo index) pairs as [u32; 2] records (ids are below 2^31); rank 0 keeps
            // its own.
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
    stages.push((
        if labels_read.is_some() {
            "labels_back"
        } else {
            "gather_labels"
        },
        lap(&mut step),
    ));
    // Every rank's own stages for --json's `rank_stages`: a rank's stage holds its waits for
    // the others in the collectives, so rank 0's alone do not say which rank's work was slow.
    let gathered = group.gather_bytes(0, &stages_json(&stages).to_string().into_bytes());
    // As one process's `seconds`: the work, not the writing of the outputs.
    let seconds = start.elapsed().as_secs_f64();
    let writing = Instant::now();
    // Rank 0 writes the catalogue (and the labels it gathered) while the others wait to agree.
    let result = group.is_root().then(|| FofResult {
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
        backend: if backend.devices().is_empty() {
            BackendKind::Cpu
        } else {
            BackendKind::Cuda
        },
        stage_seconds: stages,
    });
    let written = result
        .as_ref()
        .map_or(Ok(()), |result| write_root_outputs(&args, &meta, result));
    agree(group, "writing the outputs", written)?;
    if let Some(path) = npy_labels {
        // The same on every rank: the catalogue built labels because --labels asked for them.
        let labels = labels_read.as_deref().context("no labels were built")?;
        export_ranks::write_labels_npy_on_ranks(group, path, prepared.n, &ids, labels)
            .context("writing the labels")?;
    }
    let write_seconds = writing.elapsed().as_secs_f64();
    let Some(result) = result else {
        return Ok(());
    };
    let rank_stages = gathered
        .iter()
        .map(|bytes| serde_json::from_slice::<serde_json::Value>(bytes))
        .collect::<Result<Vec<_>, _>>()
        .context("reading the ranks' stage times")?;
    let species_names: Vec<&str> = prepared.species.iter().map(|k| k.name()).collect();
    if args.json {
        let mut json = result_json(&result, file, &species_names, seconds);
        json["rank_stages"] = serde_json::Value::Array(rank_stages);
        // Rank 0's wall time writing the outputs (with the other ranks' `.npy` parts), outside
        // `seconds` as one process's.
        json["write_seconds"] = write_seconds.into();
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

/// Rank 0: the catalogue, and the labels when rank 0 gathered them (any format but `.npy`).
fn write_root_outputs(
    args: &FofArgs,
    meta: &export::CatalogueMeta,
    result: &FofResult,
) -> anyhow::Result<()> {
    if let Some(out) = &args.out {
        export::write_catalogue_with_meta(out, result, meta).context("writing the catalogue")?;
    }
    if let (Some(path), Some(labels)) = (&args.labels, &result.labels) {
        export::write_labels(path, labels).context("writing the labels")?;
    }
    Ok(())
}

/// A rank's stages as one JSON object (stage name to seconds).
fn stages_json(stages: &[(&'static str, f64)]) -> serde_json::Value {
    let pairs = stages
        .iter()
        .map(|&(stage, s)| (stage.to_owned(), serde_json::Value::from(s)));
    serde_json::Value::Object(pairs.collect())
}

/// Rank 0: every particle's halo index from its own (`ids`, `labels`) and the other ranks'
/// [u32 id, i32 label] records (`gathered[r]` for rank r > 0); each rank's ids increase.
fn join_labels(
    n: usize,
    ids: &[u64],
    labels: &[i32],
    gathered: &[Vec<u8>],
) -> anyhow::Result<Vec<i32>> {
    // Filled on every thread (four bytes a particle of the whole selection).
    let mut all: Vec<i32> = (0..n).into_par_iter().map(|_| i32::MIN).collect();
    let mut records = 0usize;
    scatter_increasing(&mut all, ids.len(), |j| ids[j], |j| labels[j])
        .context("rank 0's own labels")?;
    records += ids.len();
    for (rank, bytes) in gathered.iter().enumerate().skip(1) {
        // The gathered bytes are usually aligned for u32 words (a large allocation); the copy
        // is for when they are not.
        let copied;
        let pairs: &[[u32; 2]] = match bytemuck::try_cast_slice(bytes) {
            Ok(pairs) => pairs,
            Err(_) => {
                if !bytes.len().is_multiple_of(8) {
                    bail!(
                        "rank {rank}'s final labels are {} bytes, not whole records",
                        bytes.len()
                    );
                }
                copied = bytemuck::pod_collect_to_vec::<u8, [u32; 2]>(bytes);
                &copied
            }
        };
        scatter_increasing(
            &mut all,
            pairs.len(),
            |j| u64::from(pairs[j][0]),
            |j| pairs[j][1] as i32,
        )
        .with_context(|| format!("rank {rank}'s labels"))?;
        records += pairs.len();
    }
    // Every slot written and as many records as particles: each particle labelled once.
    if let Some(missing) = all.par_iter().position_first(|&s| s == i32::MIN) {
        bail!("no rank labelled particle {missing} of {n}");
    }
    if records != n {
        bail!("the ranks sent {records} labels for {n} particles");
    }
    Ok(all)
}

/// `into[id(j)] = value(j)` for `j < len` with increasing ids, on every thread without
/// atomics: each piece of `into` takes the records whose ids fall in it, found by bisection.
fn scatter_increasing(
    into: &mut [i32],
    len: usize,
    id: impl Fn(usize) -> u64 + Sync,
    value: impl Fn(usize) -> i32 + Sync,
) -> anyhow::Result<()> {
    const PIECE: usize = 1 << 16;
    let n = into.len() as u64;
    if (1..len).into_par_iter().any(|j| id(j - 1) >= id(j)) {
        bail!("particle ids do not increase");
    }
    if len > 0 && id(len - 1) >= n {
        bail!("a rank labelled particle {} of {n}", id(len - 1));
    }
    // The first record at or after `at` (bisection over the increasing ids).
    let first_from = |at: u64| {
        let (mut lo, mut hi) = (0, len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if id(mid) < at { lo = mid + 1 } else { hi = mid }
        }
        lo
    };
    into.par_chunks_mut(PIECE)
        .enumerate()
        .for_each(|(piece, chunk)| {
            let first = (piece * PIECE) as u64;
            let (from, to) = (first_from(first), first_from(first + chunk.len() as u64));
            for j in from..to {
                if let Some(slot) = chunk.get_mut((id(j) - first) as usize) {
                    *slot = value(j);
                }
            }
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of `ids` as the other ranks send them: [u32 id, i32 label] words.
    fn records(ids: &[u64], label: impl Fn(u64) -> i32) -> Vec<u8> {
        let pairs: Vec<[u32; 2]> = ids.iter().map(|&i| [i as u32, label(i) as u32]).collect();
        bytemuck::cast_slice(&pairs).to_vec()
    }

    #[test]
    fn labels_of_interleaved_ranks_join_in_particle_order() {
        let n = 300_000u64;
        let label = |i: u64| (i % 1000) as i32 - 500;
        let mine: Vec<u64> = (0..n).filter(|i| i % 3 == 0).collect();
        let theirs: Vec<u64> = (0..n).filter(|i| i % 3 != 0).collect();
        let mine_labels: Vec<i32> = mine.iter().map(|&i| label(i)).collect();
        let gathered = vec![Vec::new(), records(&theirs, label)];
        let all = join_labels(n as usize, &mine, &mine_labels, &gathered).unwrap();
        assert_eq!(all, (0..n).map(label).collect::<Vec<_>>());
    }

    #[test]
    fn a_missing_twice_given_or_foreign_particle_is_an_error() {
        let n = 10;
        let mine = [0u64, 2, 4, 6, 8];
        let labels = [0i32; 5];
        let join =
            |theirs: &[u64]| join_labels(n, &mine, &labels, &[Vec::new(), records(theirs, |_| 1)]);
        assert!(join(&[1, 3, 5, 7, 9]).is_ok());
        assert!(join(&[1, 3, 5, 7]).is_err(), "particle 9 missing");
        assert!(join(&[1, 3, 4, 5, 7, 9]).is_err(), "particle 4 twice");
        assert!(join(&[1, 3, 5, 7, 9, 10]).is_err(), "particle 10 of 10");
        assert!(join(&[1, 5, 3, 7, 9]).is_err(), "ids out of order");
        let odd = vec![Vec::new(), vec![0u8; 12]];
        assert!(join_labels(n, &mine, &labels, &odd).is_err());
    }
}
