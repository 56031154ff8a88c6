//! `mpirun -n K haloscope fof …`: every rank reads only its share of the file, the ranks link
//! one slab each and merge across slabs (`halo::domains::link_on_ranks`), and rank 0 builds the
//! catalogue in global member order and writes the same outputs as one process.
//!
//! Rank 0 also gathers the selected particles (positions, masses, velocities) to validate the
//! input and derive the linking length exactly as one process does, and for the catalogue sums:
//! it needs memory for the whole selection, the other ranks for their share and slab.

use super::fof::{FofArgs, print_summary, result_json};
use crate::backend::{BackendKind, DeviceSelection};
use crate::cli::devices_args::DevicesArgs;
use crate::cli::progress_bar::terminal_progress;
use crate::cluster::Collective;
use crate::data::share::{Share, join_shares, read_share};
use crate::data::{LoadOptions, Masses, Snapshot, Species, SpeciesKind};
use crate::halo::domains::{DomainLinker, from_bytes, lap, link_on_ranks, to_bytes};
use crate::halo::{self, BoxFrame, FofParams, LinkingLength, export, parse_species};
use crate::jobs::Progress;
use crate::output::{OutputPlan, check_writable};
use anyhow::{Context, anyhow, bail};
use std::time::Instant;

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
    // Rank 0's wall time per step, reported with --json as `stages`.
    let mut stages: Vec<(&'static str, f64)> = Vec::new();
    let mut step = Instant::now();

    // This rank's selected particles and their global ids (index in one process's selection).
    let mut ids = Vec::new();
    let mut positions = Vec::new();
    let mut base = 0u64;
    for (i, s) in share.snapshot.species.iter().enumerate() {
        if species.contains(&s.kind) {
            let first = base + share.first[i];
            ids.extend((0..s.len() as u64).map(|k| first + k));
            positions.extend_from_slice(&s.positions);
            base += share.totals[i];
        }
    }

    // Rank 0: the whole selection, validated and prepared exactly as one process does. Rank 0
    // keeps its own share where it is (it sends nothing to itself).
    let mine = if group.is_root() {
        Vec::new()
    } else {
        encode_selected(&share.snapshot, &species)
    };
    let gathered = group.gather_bytes(0, &mine);
    drop(mine);
    let whole = if group.is_root() {
        rebuild(share, &species, &gathered)
    } else {
        drop(share);
        Ok(None)
    };
    drop(gathered);
    let whole = agree(group, "gathering the selection", whole)?;
    stages.push(("gather_selection", lap(&mut step)));
    let selected = match &whole {
        Some(snapshot) => Some(
            halo::select_particles(snapshot, &species)
                .map_err(|e| anyhow!("{}: {e}", file.display())),
        )
        .transpose(),
        None => Ok(None),
    };
    let selected = agree(group, "selecting the particles", selected)?;
    let box_size = match (args.no_periodic, args.box_size, &whole) {
        (true, _, _) => None,
        (false, Some(size), _) => Some(size),
        (false, None, Some(snapshot)) => halo::snapshot_box_size(snapshot),
        (false, None, None) => None,
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
    let prepared = match &selected {
        Some(s) => Some(
            halo::prepare_fof(&s.positions, &s.masses, s.velocities.as_deref(), &params)
                .map_err(|e| anyhow!("{}: {e}", file.display())),
        )
        .transpose(),
        None => Ok(None),
    };
    let prepared = agree(group, "checking the particles", prepared)?;
    let mut setup = prepared
        .as_ref()
        .map(|p| {
            let frame = p.frame();
            to_bytes(&[
                p.linking_length(),
                frame.map_or(f64::NAN, |f| f.lower),
                frame.map_or(f64::NAN, |f| f.size),
            ])
        })
        .unwrap_or_default();
    group.broadcast_bytes(0, &mut setup);
    let setup = from_bytes::<f64>(&setup, "linking length and frame")?;
    let [linking_length, lower, size] = setup[..] else {
        bail!("rank {rank}: the linking length and frame did not arrive");
    };
    let frame = (!size.is_nan()).then_some(BoxFrame { lower, size });
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
        &positions,
        linking_length,
        frame,
        linker,
        &progress,
    )
    .map_err(|e| anyhow!("{}: {e}", file.display()))?;
    drop(positions);
    stages.extend(linked.stage_seconds.iter().copied());
    step = Instant::now();
    // (id, label) pairs as the bytes of [u64; 2] records; rank 0 keeps its own.
    let mut pairs = Vec::new();
    if !group.is_root() {
        pairs.reserve(linked.ids.len() * 16);
        for (&id, &label) in linked.ids.iter().zip(&linked.labels) {
            pairs.extend_from_slice(&id.to_le_bytes());
            pairs.extend_from_slice(&label.to_le_bytes());
        }
    }
    let gathered = group.gather_bytes(0, &pairs);
    drop(pairs);
    let (Some(prepared), Some(selected)) = (prepared, &selected) else {
        return Ok(());
    };
    let n = selected.positions.len();
    let mut set_ids = vec![u32::MAX; n];
    let mut label = |id: u64, label: u64| -> anyhow::Result<()> {
        let slot = set_ids
            .get_mut(id as usize)
            .with_context(|| format!("a rank labelled particle {id} of {n}"))?;
        *slot = label as u32;
        Ok(())
    };
    for (&id, &l) in linked.ids.iter().zip(&linked.labels) {
        label(id, l)?;
    }
    for bytes in gathered.iter().skip(1) {
        if !bytes.len().is_multiple_of(16) {
            bail!(
                "a rank's final labels are {} bytes, not whole records",
                bytes.len()
            );
        }
        for pair in bytes.chunks_exact(16) {
            let (id, l) = pair.split_at(8);
            label(u64_le(id), u64_le(l))?;
        }
    }
    if let Some(missing) = set_ids.iter().position(|&s| s == u32::MAX) {
        bail!("no rank labelled particle {missing} of {n}");
    }
    stages.push(("gather_labels", lap(&mut step)));
    let kind = if backend.devices().is_empty() {
        BackendKind::Cpu
    } else {
        BackendKind::Cuda
    };
    let result = prepared.finish(set_ids, kind, stages, &progress);
    let seconds = start.elapsed().as_secs_f64();
    let whole = whole.as_ref().context("rank 0 holds the whole selection")?;
    if let Some(out) = &args.out {
        let meta = export::CatalogueMeta::of_snapshot(file, whole);
        export::write_catalogue_with_meta(out, &result, &meta).context("writing the catalogue")?;
    }
    if let Some(path) = &args.labels {
        let labels = result.labels.as_deref().context("no labels were built")?;
        export::write_labels(path, labels).context("writing the labels")?;
    }
    let species_names: Vec<&str> = selected.species.iter().map(|k| k.name()).collect();
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

/// The little-endian u64 of 8 bytes (the pair records above).
fn u64_le(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(bytes);
    u64::from_le_bytes(b)
}

/// This share's selected species as bytes: per species (in file order) its count, positions,
/// masses (uniform or per particle) and velocities (if any).
fn encode_selected(snapshot: &Snapshot, species: &[SpeciesKind]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in snapshot
        .species
        .iter()
        .filter(|s| species.contains(&s.kind))
    {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(bytemuck::cast_slice(&s.positions));
        match &s.masses {
            Masses::Uniform(m) => {
                out.push(0);
                out.extend_from_slice(&m.to_le_bytes());
            }
            Masses::PerParticle(m) => {
                out.push(1);
                out.extend_from_slice(bytemuck::cast_slice(m));
            }
        }
        match &s.velocities {
            Some(v) => {
                out.push(1);
                out.extend_from_slice(bytemuck::cast_slice(v));
            }
            None => out.push(0),
        }
    }
    out
}

/// Rank 0: its own share (`own`, moved in) and every other rank's selected species (from
/// [`encode_selected`], `gathered[r]` for rank r > 0) joined into the snapshot one process
/// reads (the share reader's join); of every species only the columns the selection carries
/// are kept (positions, masses, velocities), and the other species are left empty.
fn rebuild(
    own: Share,
    species: &[SpeciesKind],
    gathered: &[Vec<u8>],
) -> anyhow::Result<Option<Snapshot>> {
    let template = Snapshot {
        header: own.snapshot.header.clone(),
        species: own.snapshot.species.iter().map(empty_like).collect(),
        source: own.snapshot.source.clone(),
    };
    let (first, totals) = (own.first.clone(), own.totals.clone());
    let mut mine = own.snapshot;
    for s in &mut mine.species {
        if species.contains(&s.kind) {
            s.ids = None;
            s.smoothing_lengths = None;
            s.fields.clear();
        } else {
            *s = empty_like(s);
        }
    }
    let mut shares = Vec::with_capacity(gathered.len());
    shares.push(Share {
        snapshot: mine,
        first: own.first,
        totals: own.totals,
    });
    for bytes in gathered.iter().skip(1) {
        let mut snapshot = template.clone();
        let mut reader = Reader { bytes, at: 0 };
        for s in snapshot
            .species
            .iter_mut()
            .filter(|s| species.contains(&s.kind))
        {
            let n = u64::from_le_bytes(reader.take(8)?.try_into()?) as usize;
            s.positions = bytemuck::pod_collect_to_vec(reader.take(12 * n)?);
            s.masses = match reader.take(1)?[0] {
                0 => Masses::Uniform(f32::from_le_bytes(reader.take(4)?.try_into()?)),
                _ => Masses::PerParticle(bytemuck::pod_collect_to_vec(reader.take(4 * n)?)),
            };
            s.velocities = match reader.take(1)?[0] {
                0 => None,
                _ => Some(bytemuck::pod_collect_to_vec(reader.take(12 * n)?)),
            };
        }
        shares.push(Share {
            snapshot,
            first: first.clone(),
            totals: totals.clone(),
        });
    }
    Ok(join_shares(shares))
}

/// `s` without particles: the same family, mass rule (a uniform mass kept, per-particle masses
/// emptied), velocity column (emptied), kernel support and notes, and no ids, lengths or fields.
fn empty_like(s: &Species) -> Species {
    Species {
        kind: s.kind,
        positions: Vec::new(),
        masses: match &s.masses {
            Masses::Uniform(m) => Masses::Uniform(*m),
            Masses::PerParticle(_) => Masses::PerParticle(Vec::new()),
        },
        velocities: s.velocities.as_ref().map(|_| Vec::new()),
        ids: None,
        smoothing_lengths: None,
        kernel_support: s.kernel_support,
        fields: Vec::new(),
        left_out: s.left_out.clone(),
    }
}

/// A cursor over a rank's message.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// The next `len` bytes, or an error naming the short message.
    fn take(&mut self, len: usize) -> anyhow::Result<&'a [u8]> {
        let end = self.at.checked_add(len).filter(|&e| e <= self.bytes.len());
        let end = end.with_context(|| {
            format!(
                "a rank's selection message ends at byte {} of the {len} more expected",
                self.bytes.len()
            )
        })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
}
