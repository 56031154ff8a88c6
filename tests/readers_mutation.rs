//! Randomized robustness of the tipsy reader (the bounded stand-in for the fuzz target in
//! `fuzz/`): thousands of valid files with random bytes flipped, inserted or cut, read from
//! memory with a fixed seed. Every case must return (never panic), and a file that still reads
//! must be self-consistent.

use haloscope::data::tipsy::{self, ByteOrder, TipsyWriteOptions};
use haloscope::data::{LoadOptions, demo};
use haloscope::jobs::Progress;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::path::Path;

fn valid_files() -> Vec<Vec<u8>> {
    let snap = demo::demo_snapshot(40, 2);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut out = Vec::new();
    for (byte_order, header_bytes, double_positions) in
        [(ByteOrder::Big, 32, false), (ByteOrder::Little, 28, true)]
    {
        let path = dir.path().join("f.tipsy");
        let options = TipsyWriteOptions {
            byte_order,
            header_bytes,
            double_positions,
        };
        tipsy::write(&path, &snap, &options).expect("written");
        out.push(std::fs::read(&path).expect("read"));
    }
    out
}

/// One edit of a file: overwrite a byte, or cut or grow the file at the end.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Truncate(usize),
    Append(Vec<u8>),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        // Header bytes are where the interesting lies live: weight them.
        (0usize..32, any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (0usize..4000, any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (0usize..4000).prop_map(Edit::Truncate),
        proptest::collection::vec(any::<u8>(), 1..64).prop_map(Edit::Append),
    ]
}

#[test]
fn mutated_tipsy_files_never_panic() {
    let files = valid_files();
    let config = Config {
        cases: 3_000,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = (0..files.len(), proptest::collection::vec(edit(), 1..6));
    runner
        .run(&strategy, |(which, edits)| {
            let mut bytes = files[which].clone();
            for e in edits {
                match e {
                    Edit::Set(i, b) => {
                        if let Some(slot) = bytes.get_mut(i) {
                            *slot = b;
                        }
                    }
                    Edit::Truncate(n) => bytes.truncate(n),
                    Edit::Append(extra) => bytes.extend(extra),
                }
            }
            for max_particles in [None, Some(7)] {
                let options = LoadOptions { max_particles };
                let result = tipsy::read_from_bytes(
                    &bytes,
                    Path::new("mutant"),
                    &options,
                    &Progress::none(),
                );
                if let Ok(s) = result {
                    let head = &bytes[..bytes.len().min(32)];
                    let layout = tipsy::detect_layout(head, bytes.len() as u64)
                        .map_err(TestCaseError::fail)?;
                    let total: u64 = layout.counts.iter().sum();
                    prop_assert_eq!(s.source.particles_in_file, total);
                    prop_assert_eq!(
                        s.n_particles() as u64,
                        max_particles.map_or(total, |m| m.min(total))
                    );
                    for sp in &s.species {
                        prop_assert!(sp.positions.iter().flatten().all(|x| x.is_finite()));
                    }
                } else if let Err(e) = result {
                    prop_assert!(e.to_string().starts_with("mutant: "), "{}", e);
                }
            }
            Ok(())
        })
        .expect("every mutant handled");
}
