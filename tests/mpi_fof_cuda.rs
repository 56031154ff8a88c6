//! `mpirun -n 2 haloscope fof --backend cuda` on a host with two GPUs (one per rank, each
//! slab linked and its interior halos summed on its rank's device): the labels file is
//! byte-identical to one process on one device and the catalogue has the same halos, sizes and
//! smallest members, with the sums within the device catalogue's tolerance. Ignored here (no
//! GPU); run on the 2-GPU machine with `--ignored` and Open MPI on the PATH.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::{haloscope_bin, shared_data};
use mpi_common::one_device_or_ranks;

/// The catalogue's rows (comment lines dropped), each split at the commas.
fn rows(csv: &str) -> Vec<Vec<String>> {
    csv.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

/// Whether two cells agree: integers exactly, other numbers within a relative 1e-9 (the device
/// sums the interior halos in another order than one device's whole catalogue), text exactly.
fn cells_agree(a: &str, b: &str) -> bool {
    let integer = |s: &str| s.parse::<i64>().ok();
    if let (Some(x), Some(y)) = (integer(a), integer(b)) {
        return x == y;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()) + 1e-12,
        _ => a == b,
    }
}

#[test]
#[ignore = "needs two NVIDIA GPUs and Open MPI; run on the 2-GPU machine with --ignored"]
fn two_ranks_on_two_gpus_give_one_devices_labels_and_halos() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, options) in [
        (
            "snapshots/test4.tbin",
            &["--box", "1", "--species", "all"][..],
        ),
        (
            "snapshots/g2_lcdm_gas_snapshot_003.hdf5",
            &["--species", "all"][..],
        ),
    ] {
        let path = shared_data(file);
        let path = path.to_str().expect("UTF-8 path");
        let run = |name: &str, ranks: usize| {
            let (csv, npy) = (format!("{name}.csv"), format!("{name}.npy"));
            let mut args = vec!["fof", path, "--backend", "cuda", "--out", &csv];
            args.extend(["--labels", &npy]);
            args.extend(options);
            let out = one_device_or_ranks(&haloscope_bin(), ranks, &args, dir.path());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{file} {name}: {stderr}");
            let read = |p: &str| std::fs::read(dir.path().join(p)).expect("output");
            (read(&csv), read(&npy))
        };
        let one = run("one", 1);
        let two = run("two", 2);
        assert_eq!(one.1, two.1, "{file}: labels bytes differ");
        let (one, two) = (
            rows(&String::from_utf8_lossy(&one.0)),
            rows(&String::from_utf8_lossy(&two.0)),
        );
        assert!(one.len() > 5, "{file}: a catalogue with halos");
        assert_eq!(one.len(), two.len(), "{file}: halo counts differ");
        for (k, (a, b)) in one.iter().zip(&two).enumerate() {
            assert_eq!(a.len(), b.len(), "{file}: row {k}");
            for (x, y) in a.iter().zip(b) {
                assert!(cells_agree(x, y), "{file}: row {k}: {x} against {y}");
            }
        }
    }
}
