//! libFuzzer target: the Gadget HDF5 reader on arbitrary bytes, written to a temporary file
//! (the reader opens files through the HDF5 library; a core-driver image would skip the
//! multi-file and external-storage paths), must return, never panic; a snapshot it returns is
//! self-consistent (run with `cargo +nightly fuzz run gadget_hdf5` from the project root).
#![no_main]

use haloscope::data::LoadOptions;
use haloscope::data::gadget_hdf5::read;
use haloscope::jobs::Progress;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("haloscope-fuzz-{}.hdf5", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    for max_particles in [None, Some(3)] {
        let options = LoadOptions { max_particles };
        if let Ok(snapshot) = read(&path, &options, &Progress::none()) {
            assert!(snapshot.n_particles() as u64 <= snapshot.source.particles_in_file);
            for species in &snapshot.species {
                assert!(species.positions.iter().flatten().all(|x| x.is_finite()));
                if let Some(h) = &species.smoothing_lengths {
                    assert!(h.iter().all(|&x| x.is_finite() && x > 0.0));
                }
            }
        }
    }
});
