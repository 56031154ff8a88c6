//! The MPI process group under real `mpirun` ranks: every collective gives the exact answer on
//! every rank, for 1 to 4 ranks.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::haloscope_bin;
use mpi_common::mpirun;

#[test]
fn every_collective_is_exact_on_every_rank_for_one_to_four_ranks() {
    let dir = tempfile::tempdir().expect("tempdir");
    for ranks in 1..=4 {
        let out = mpirun(&haloscope_bin(), ranks, &["cluster-check"], dir.path());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{ranks} ranks: exit {:?}\nstdout: {stdout}\nstderr: {stderr}",
            out.status
        );
        let mut lines: Vec<&str> = stdout.lines().collect();
        lines.sort_unstable();
        let expected: Vec<String> = (0..ranks)
            .map(|r| format!("rank {r} of {ranks}: every collective exact"))
            .collect();
        assert_eq!(lines, expected, "{ranks} ranks; stderr: {stderr}");
    }
}
