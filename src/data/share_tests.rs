//! The shares of 1 to 5 ranks, joined in rank order, equal the one-process read bit for bit.

use crate::data::demo::demo_snapshot;
use crate::data::gadget_hdf5::{self, GadgetWriteOptions};
use crate::data::share::{join_shares, read_share};
use crate::data::tipsy::{self, TipsyWriteOptions};
use crate::data::{LoadOptions, load_snapshot};
use crate::jobs::Progress;
use std::path::{Path, PathBuf};

fn shared(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/snapshots")
        .join(name);
    assert!(
        path.exists(),
        "shared data file missing: {}",
        path.display()
    );
    path
}

/// Every K in 1..=5, with and without a subsample: joined shares equal the full read, and each
/// share's `first`/`totals` place it exactly.
fn assert_shares_rebuild(path: &Path) {
    for max_particles in [None, Some(1001)] {
        let options = LoadOptions { max_particles };
        let whole = load_snapshot(path, &options, &Progress::none()).expect("full read");
        for ranks in 1..=5 {
            let shares: Vec<_> = (0..ranks)
                .map(|r| read_share(path, &options, &Progress::none(), r, ranks).expect("share"))
                .collect();
            for (s, species) in whole.species.iter().enumerate() {
                let mut at = 0u64;
                for share in &shares {
                    assert_eq!(share.totals[s], species.len() as u64);
                    assert_eq!(share.first[s], at, "{} K={ranks}", path.display());
                    at += share.snapshot.species[s].len() as u64;
                }
                assert_eq!(at, species.len() as u64);
            }
            let joined = join_shares(shares).expect("one share at least");
            assert!(
                joined == whole,
                "{} K={ranks} max={max_particles:?}: joined shares differ from the full read",
                path.display()
            );
        }
    }
}

#[test]
fn shares_rebuild_the_shared_tipsy_snapshots() {
    for name in ["test4.tbin", "run581.20000", "lambs.00200_subsamp_30K"] {
        assert_shares_rebuild(&shared(name));
    }
}

#[test]
fn shares_rebuild_the_shared_gadget_snapshot() {
    assert_shares_rebuild(&shared("g2_lcdm_gas_snapshot_003.hdf5"));
}

#[test]
fn shares_rebuild_synthetic_tipsy_in_every_encoding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = demo_snapshot(3000, 5);
    for (i, (double_positions, header_bytes)) in [(false, 32), (true, 28), (true, 32)]
        .into_iter()
        .enumerate()
    {
        let path = dir.path().join(format!("demo{i}.tbin"));
        let options = TipsyWriteOptions {
            double_positions,
            header_bytes,
            ..Default::default()
        };
        tipsy::write(&path, &snapshot, &options).expect("tipsy written");
        assert_shares_rebuild(&path);
    }
}

#[test]
fn shares_rebuild_synthetic_multi_file_gadget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = demo_snapshot(3000, 9);
    let options = GadgetWriteOptions {
        n_files: 3,
        ..Default::default()
    };
    let paths = gadget_hdf5::write(&dir.path().join("demo.hdf5"), &snapshot, &options)
        .expect("gadget written");
    assert_eq!(paths.len(), 3);
    assert_shares_rebuild(&paths[0]);
    let one = dir.path().join("one.hdf5");
    gadget_hdf5::write(&one, &snapshot, &GadgetWriteOptions::default()).expect("written");
    assert_shares_rebuild(&one);
}

#[test]
fn a_bad_rank_is_refused() {
    let err = read_share(
        &shared("test4.tbin"),
        &LoadOptions::default(),
        &Progress::none(),
        3,
        3,
    )
    .expect_err("rank 3 of 3");
    assert!(err.to_string().contains("share 3 of 3"), "{err}");
}
