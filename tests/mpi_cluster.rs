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

#[test]
fn a_panic_on_one_rank_ends_every_rank_with_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (ranks, panicking) in [(2, 1), (3, 0)] {
        let arg = panicking.to_string();
        // The deadline of `mpirun` fails the test if the other ranks are left waiting.
        let out = mpirun(
            &haloscope_bin(),
            ranks,
            &["cluster-check", "--panic-on-rank", &arg],
            dir.path(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{ranks} ranks: exit 0\n{stderr}");
        assert!(
            stderr.contains(&format!("rank {panicking} panics")),
            "{ranks} ranks: {stderr}"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains("every collective exact"),
            "{ranks} ranks: a rank finished after another panicked\n{stdout}"
        );
    }
}
