//! `mpirun -n K haloscope render` (K = 1..4, CPU): the PNG and τ bytes equal one process's, on
//! the shared snapshots and a synthetic one; a rank that cannot read its share ends the job
//! with one error and exit code 1, without hanging.
#![cfg(feature = "mpi")]

mod common;
mod mpi_common;

use common::{haloscope_bin, shared_data};
use haloscope::data::demo::demo_snapshot;
use haloscope::data::gadget_hdf5;
use haloscope::data::tipsy::{self, TipsyWriteOptions};
use mpi_common::{mpirun, solo};
use std::path::Path;

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Renders `file` with `options` as one process and under 1 to 4 ranks, and compares the bytes
/// of the PNG and of τ.
fn assert_ranks_match_one_process(file: &Path, options: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = file.to_str().expect("UTF-8 path");
    let args = |name: &str| -> Vec<String> {
        let mut args = vec![
            "render".to_owned(),
            file.to_owned(),
            "--backend".to_owned(),
            "cpu".to_owned(),
            "--out".to_owned(),
            format!("{name}.png"),
            "--tau-out".to_owned(),
            format!("{name}.npy"),
            "--fits-out".to_owned(),
            format!("{name}.fits"),
        ];
        args.extend(options.iter().map(|s| (*s).to_owned()));
        args
    };
    let one = solo(&haloscope_bin(), &refs(&args("one")), dir.path());
    assert!(
        one.status.success(),
        "one process: {}",
        String::from_utf8_lossy(&one.stderr)
    );
    let png = std::fs::read(dir.path().join("one.png")).expect("one.png");
    let tau = std::fs::read(dir.path().join("one.npy")).expect("one.npy");
    let fits = std::fs::read(dir.path().join("one.fits")).expect("one.fits");
    for ranks in 1..=4 {
        let name = format!("k{ranks}");
        let out = mpirun(&haloscope_bin(), ranks, &refs(&args(&name)), dir.path());
        assert!(
            out.status.success(),
            "{file} {options:?} on {ranks} ranks: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got_png = std::fs::read(dir.path().join(format!("{name}.png"))).expect("png");
        let got_tau = std::fs::read(dir.path().join(format!("{name}.npy"))).expect("npy");
        let got_fits = std::fs::read(dir.path().join(format!("{name}.fits"))).expect("fits");
        assert!(
            got_fits == fits,
            "{file} {options:?}: FITS of {ranks} ranks differs"
        );
        assert!(
            got_tau == tau,
            "{file} {options:?}: τ of {ranks} ranks differs"
        );
        assert!(
            got_png == png,
            "{file} {options:?}: PNG of {ranks} ranks differs"
        );
    }
}

#[test]
fn test4_dark_matter_with_knn_smoothing_matches_one_process() {
    let file = shared_data("snapshots/test4.tbin");
    // 40000 particles: two chunks of the splatter, so a chunk boundary falls inside a share.
    let options = [
        "--width",
        "160",
        "--height",
        "120",
        "--knn",
        "8",
        "--max-particles",
        "40000",
    ];
    assert_ranks_match_one_process(&file, &options);
}

#[test]
fn gadget_gas_and_dark_in_colour_match_one_process() {
    let file = shared_data("snapshots/g2_lcdm_gas_snapshot_003.hdf5");
    let options = [
        "--width",
        "150",
        "--height",
        "110",
        "--species",
        "gas,dark",
        "--intensity",
        "gas=Density",
        "--log-intensity=gas",
        "--color",
        "gas=InternalEnergy",
        "--log-color=gas",
        "--knn",
        "8",
        "--max-particles",
        "30000",
    ];
    assert_ranks_match_one_process(&file, &options);
}

#[test]
fn dark_and_stars_at_explicit_brightness_and_16_bits_match_one_process() {
    let file = shared_data("snapshots/run581.20000");
    let options = [
        "--width",
        "97",
        "--height",
        "131",
        "--species",
        "dark,star",
        "--brightness",
        "3",
        "--bits",
        "16",
    ];
    assert_ranks_match_one_process(&file, &options);
}

#[test]
fn synthetic_gas_subsampled_matches_one_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("demo.tbin");
    tipsy::write(
        &path,
        &demo_snapshot(6000, 3),
        &TipsyWriteOptions::default(),
    )
    .expect("written");
    let options = [
        "--width",
        "120",
        "--height",
        "90",
        "--max-particles",
        "4001",
    ];
    assert_ranks_match_one_process(&path, &options);
}

#[test]
fn a_rank_that_cannot_read_its_share_ends_every_rank_with_one_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = std::fs::read(shared_data("snapshots/lambs.00200_subsamp_30K")).expect("read");
    // Particle 25000's x (32-byte header, 36-byte dark records, big-endian): NaN, so only the
    // rank whose share holds the last sixth of the file fails.
    let at = 32 + 25_000 * 36 + 4;
    bytes[at..at + 4].copy_from_slice(&f32::NAN.to_be_bytes());
    let damaged = dir.path().join("damaged.tbin");
    std::fs::write(&damaged, &bytes).expect("write damaged copy");
    for ranks in [2, 3] {
        let out = mpirun(
            &haloscope_bin(),
            ranks,
            &[
                "render",
                "damaged.tbin",
                "--backend",
                "cpu",
                "--out",
                "x.png",
            ],
            dir.path(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{ranks} ranks succeeded: {stderr}");
        assert_eq!(
            stderr.matches("error: ").count(),
            1,
            "{ranks} ranks: one error line expected: {stderr}"
        );
        assert!(
            stderr.contains(&format!("rank {} of {ranks}", ranks - 1))
                && stderr.contains("dark particle 25000: position is NaN or infinite"),
            "{ranks} ranks: {stderr}"
        );
        assert!(!dir.path().join("x.png").exists(), "no PNG after a failure");
    }
}

#[test]
fn a_bad_position_in_the_second_half_of_a_gadget_file_ends_every_rank() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut snapshot = demo_snapshot(3000, 4);
    let species = &mut snapshot.species[0];
    let last = species.positions.len() - 1;
    species.positions[last][1] = f32::INFINITY;
    let kind = species.kind.name();
    gadget_hdf5::write(&dir.path().join("bad.hdf5"), &snapshot, &Default::default())
        .expect("written");
    let args = ["render", "bad.hdf5", "--backend", "cpu", "--out", "x.png"];
    let out = mpirun(&haloscope_bin(), 2, &args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("error: ").count(), 1, "{stderr}");
    assert!(
        stderr.contains("rank 1 of 2")
            && stderr.contains(&format!(
                "{kind} particle {last}: position is NaN or infinite"
            )),
        "{stderr}"
    );
    assert!(!dir.path().join("x.png").exists(), "no PNG after a failure");
}
