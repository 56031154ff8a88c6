//! `mpirun -n 2 haloscope render --backend cuda` on a host with two GPUs (one per rank): the
//! PNG and τ bytes equal one process on one device, because the ranks sum fixed-point images
//! with one device's scale. Ignored here (no GPU); run on the 2-GPU machine with `--ignored`
//! and Open MPI on the PATH.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::{haloscope_bin, shared_data};
use mpi_common::one_device_or_ranks;

#[test]
#[ignore = "needs two NVIDIA GPUs and Open MPI; run on the 2-GPU machine with --ignored"]
fn two_ranks_on_two_gpus_give_one_devices_png_and_tau_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (file, options) in [
        (
            "snapshots/g2_lcdm_gas_snapshot_004.hdf5",
            &["--color", "Density"][..],
        ),
        ("snapshots/test4.tbin", &[][..]),
    ] {
        let path = shared_data(file);
        let path = path.to_str().expect("UTF-8 path");
        let run = |name: &str, ranks: usize, with_tau: bool| {
            let mut args = vec!["render", path, "--backend", "cuda", "--width", "300"];
            args.extend(["--height", "200"]);
            let png = format!("{name}.png");
            let tau = format!("{name}.npy");
            args.extend(["--out", &png]);
            if with_tau {
                args.extend(["--tau-out", &tau]);
            }
            args.extend(options);
            let out = one_device_or_ranks(&haloscope_bin(), ranks, &args, dir.path());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{file} {name}: {stderr}");
            let read = |p: &str| std::fs::read(dir.path().join(p)).expect("output");
            (read(&png), with_tau.then(|| read(&tau)))
        };
        for with_tau in [true, false] {
            let one = run("one", 1, with_tau);
            let two = run("two", 2, with_tau);
            assert_eq!(one.1, two.1, "{file}: τ bytes differ");
            assert_eq!(
                one.0, two.0,
                "{file} (τ kept: {with_tau}): PNG bytes differ"
            );
        }
    }
}
