//! libFuzzer target: the tipsy reader on arbitrary bytes must return, never panic or allocate
//! what a header claims (run with `cargo +nightly fuzz run tipsy` from the project root).
#![no_main]

use haloscope::data::LoadOptions;
use haloscope::data::tipsy::read_from_bytes;
use haloscope::jobs::Progress;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    for max_particles in [None, Some(3)] {
        let options = LoadOptions { max_particles };
        if let Ok(snapshot) = read_from_bytes(data, Path::new("fuzz"), &options, &Progress::none())
        {
            // A file that reads must be self-consistent.
            assert!(snapshot.n_particles() as u64 <= snapshot.source.particles_in_file);
            for species in &snapshot.species {
                assert!(species.positions.iter().flatten().all(|x| x.is_finite()));
            }
        }
    }
});
