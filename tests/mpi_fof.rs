//! `mpirun -n K haloscope fof` under real ranks (K = 1..4, CPU back-end): the labels file and
//! the catalogue are byte-identical to one process's, on test4.tbin (periodic, halos across
//! every slab boundary), on a Gadget HDF5 file with velocities and on a synthetic tipsy file of
//! filaments through every slab; a rank that cannot read its share ends every rank, exit 1.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::{haloscope_bin, shared_data};
use haloscope::data::tipsy::{TipsyWriteOptions, write as write_tipsy};
use haloscope::data::{LoadOptions, Masses, SpeciesKind, load_snapshot};
use haloscope::jobs::Progress;
use mpi_common::{mpirun, solo};
use std::path::Path;

/// Runs `fof FILE extra… --out cat.csv --labels labels.npy` under `ranks` (0: one process
/// without a launcher) and returns the two files' bytes.
fn fof_files(dir: &Path, file: &Path, ranks: usize, extra: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let out = dir.join(format!("cat{ranks}.csv"));
    let labels = dir.join(format!("labels{ranks}.npy"));
    let mut args = vec![
        "fof".to_owned(),
        file.display().to_string(),
        "--backend".into(),
        "cpu".into(),
        "--out".into(),
        out.display().to_string(),
        "--labels".into(),
        labels.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = if ranks == 0 {
        solo(&haloscope_bin(), &args, dir)
    } else {
        mpirun(&haloscope_bin(), ranks, &args, dir)
    };
    assert!(
        output.status.success(),
        "{ranks} ranks on {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    (std::fs::read(out).unwrap(), std::fs::read(labels).unwrap())
}

/// A tipsy file of dark matter: three filaments along x through the whole box, compact clumps,
/// and a uniform background, in the periodic box [−0.5, 0.5)³ (tipsy keeps test4.tbin's header).
/// `mass(i)` is particle i's mass; `poison`, when given, replaces that particle's x.
fn write_filaments(path: &Path, mass: impl Fn(usize) -> f32, poison: Option<(usize, f32)>) {
    let mut positions = Vec::new();
    let mut state = 12345u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for f in 0..3 {
        let (y, z) = (next() - 0.5, next() - 0.5);
        for k in 0..400 {
            let x = (k as f64 + f as f64 * 0.3) / 400.0;
            positions.push([(x - 0.5) as f32, y as f32, z as f32]);
        }
    }
    for _ in 0..20 {
        let c = [0; 3].map(|_| 0.98 * next() - 0.49);
        for _ in 0..30 {
            positions.push(c.map(|c| (c + 0.004 * (next() - 0.5)) as f32));
        }
    }
    for _ in 0..2000 {
        positions.push([0; 3].map(|_| (next() - 0.5) as f32));
    }
    // test4.tbin's header and families, with its particles replaced.
    let mut snapshot = load_snapshot(
        &shared_data("snapshots/test4.tbin"),
        &LoadOptions::default(),
        &Progress::none(),
    )
    .expect("test4.tbin");
    for species in &mut snapshot.species {
        let mine = if species.kind == SpeciesKind::Dark {
            std::mem::take(&mut positions)
        } else {
            Vec::new()
        };
        let mut mine = mine;
        if let Some((i, x)) = poison.filter(|_| !mine.is_empty()) {
            mine[i][0] = x;
        }
        species.masses = Masses::PerParticle((0..mine.len()).map(&mass).collect());
        species.velocities = Some(
            (0..mine.len())
                .map(|i| [i as f32 * 1e-3, 1.0 - i as f32 * 1e-4, 0.5])
                .collect(),
        );
        species.smoothing_lengths = None;
        species.ids = None;
        species.fields.clear();
        species.positions = mine;
    }
    write_tipsy(path, &snapshot, &TipsyWriteOptions::default()).expect("write the tipsy file");
}

#[test]
fn ranks_write_the_files_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let synthetic = dir.path().join("filaments.tbin");
    write_filaments(&synthetic, |_| 1.0, None);
    // Two mass levels eight apart (a zoom-in): the linking length comes from the lowest-mass
    // particles, their count and the total mass summed in particle order over the ranks.
    let zoom = dir.path().join("zoom.tbin");
    write_filaments(&zoom, |i| if i % 3 == 0 { 8.0 } else { 1.0 }, None);
    let cases: [(std::path::PathBuf, &[&str]); 5] = [
        (
            shared_data("snapshots/test4.tbin"),
            &["--box", "1", "--species", "all"],
        ),
        (
            shared_data("snapshots/g2_lcdm_gas_snapshot_003.hdf5"),
            &["--species", "all"],
        ),
        (
            synthetic.clone(),
            &["--box", "1", "--ll", "0.003", "--min-members", "5"],
        ),
        (zoom, &["--box", "1", "--b", "0.5", "--min-members", "5"]),
        // Open boundaries: the volume is the bounding box of every rank's particles.
        (
            synthetic,
            &["--no-periodic", "--b", "0.4", "--min-members", "8"],
        ),
    ];
    for (file, extra) in &cases {
        let one = fof_files(dir.path(), file, 0, extra);
        assert!(
            one.0.len() > 200,
            "{}: a catalogue with halos",
            file.display()
        );
        for ranks in 1..=4 {
            let spread = fof_files(dir.path(), file, ranks, extra);
            assert!(
                spread.0 == one.0,
                "{ranks} ranks, {}: catalogue differs",
                file.display()
            );
            assert!(
                spread.1 == one.1,
                "{ranks} ranks, {}: labels differ",
                file.display()
            );
        }
    }
}

/// Also the default back-end (`auto`), which each rank opens on a thread while it reads its
/// share: without a CUDA device the ranks link on the CPU.
#[test]
fn json_reports_every_ranks_own_stages() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("filaments.tbin");
    write_filaments(&file, |_| 1.0, None);
    let file = file.display().to_string();
    let args = ["fof", &file, "--box", "1", "--json"];
    let output = mpirun(&haloscope_bin(), 3, &args, dir.path());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let ranks = json["rank_stages"].as_array().expect("rank_stages");
    assert_eq!(ranks.len(), 3);
    for (rank, stages) in ranks.iter().enumerate() {
        for stage in [
            "exchange",
            "slab_catalogue",
            "merge_label_domain",
            "merge_resolve",
            "order",
        ] {
            assert!(
                stages[stage].as_f64().is_some_and(|s| s >= 0.0),
                "rank {rank} has no {stage}: {stages}"
            );
        }
    }
    assert_eq!(ranks[0], json["stages"]);
    assert!(
        json["write_seconds"].as_f64().is_some_and(|s| s >= 0.0),
        "no write_seconds: {json}"
    );
}

#[test]
fn a_file_no_rank_can_read_ends_every_rank_with_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("short.tbin");
    std::fs::write(&bad, [0u8; 20]).unwrap();
    let bad = bad.display().to_string();
    let output = mpirun(
        &haloscope_bin(),
        3,
        &["fof", &bad, "--backend", "cpu"],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("short.tbin"), "{stderr}");
    assert_eq!(stderr.matches("error: ").count(), 1, "{stderr}");
}

#[test]
fn a_bad_coordinate_on_the_last_rank_ends_every_rank_and_names_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nan.tbin");
    // The last particle (index 3799 of the 3800) sits in the last rank's share.
    write_filaments(&file, |_| 1.0, Some((3799, f32::NAN)));
    let file = file.display().to_string();
    let args = ["fof", &file, "--box", "1", "--backend", "cpu"];
    let one = solo(&haloscope_bin(), &args, dir.path());
    assert_eq!(one.status.code(), Some(1));
    let one = String::from_utf8_lossy(&one.stderr).to_string();
    assert!(one.contains("3799"), "{one}");
    for ranks in [2, 3] {
        let output = mpirun(&haloscope_bin(), ranks, &args, dir.path());
        assert_eq!(output.status.code(), Some(1), "{ranks} ranks");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("3799"), "{ranks} ranks: {stderr}");
        // The failing rank's own error, once: the others only stopped.
        assert_eq!(
            stderr.matches("error: ").count(),
            1,
            "{ranks} ranks: {stderr}"
        );
        assert!(
            stderr.contains(&format!("rank {} of {ranks}", ranks - 1)),
            "{ranks} ranks: {stderr}"
        );
        assert!(
            !stderr.contains("another rank failed"),
            "{ranks} ranks: {stderr}"
        );
    }
}

#[test]
fn labels_as_csv_are_gathered_to_the_one_process_file() {
    // `.npy` labels are written by every rank at its places; any other format goes through
    // rank 0, which must give the same file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("filaments.tbin");
    write_filaments(&file, |_| 1.0, None);
    let file = file.display().to_string();
    let run = |ranks: usize| {
        let labels = dir.path().join(format!("labels{ranks}.csv"));
        let labels_arg = labels.display().to_string();
        let args = [
            "fof",
            &file,
            "--box",
            "1",
            "--backend",
            "cpu",
            "--ll",
            "0.003",
            "--labels",
            &labels_arg,
        ];
        let output = if ranks == 0 {
            solo(&haloscope_bin(), &args, dir.path())
        } else {
            mpirun(&haloscope_bin(), ranks, &args, dir.path())
        };
        assert!(
            output.status.success(),
            "{ranks} ranks: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::read(labels).unwrap()
    };
    let one = run(0);
    assert!(one.len() > 3800 * 2, "one label a line");
    for ranks in [2, 3] {
        assert!(run(ranks) == one, "{ranks} ranks: labels differ");
    }
}

#[test]
fn a_failed_job_leaves_an_older_labels_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nan.tbin");
    // The last rank's share holds a NaN: it fails, and every rank with it.
    write_filaments(&file, |_| 1.0, Some((3799, f32::NAN)));
    let labels = dir.path().join("labels.npy");
    std::fs::write(&labels, b"older labels").unwrap();
    let (file, labels_arg) = (file.display().to_string(), labels.display().to_string());
    let args = [
        "fof",
        &file,
        "--box",
        "1",
        "--backend",
        "cpu",
        "--labels",
        &labels_arg,
    ];
    let output = mpirun(&haloscope_bin(), 2, &args, dir.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(std::fs::read(&labels).unwrap(), b"older labels");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}
