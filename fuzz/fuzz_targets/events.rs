//! libFuzzer target: the event-list reader on arbitrary bytes must return, never panic, and any
//! list it returns must obey the model's ranges (run with `cargo +nightly fuzz run events` from
//! the project root).
#![no_main]

use haloscope::data::events::{looks_like_events_bytes, read_from_bytes};
use haloscope::jobs::Progress;
use libfuzzer_sys::fuzz_target;
use std::f64::consts::{FRAC_PI_2, TAU};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    // The format sniffer sees at most the first 8 KiB of a file.
    let _ = looks_like_events_bytes(&data[..data.len().min(8192)]);
    if let Ok(list) = read_from_bytes(data, Path::new("fuzz"), &Progress::none()) {
        let n = list.len();
        assert!(n > 0, "a list that reads has events");
        assert_eq!(list.dec.len(), n);
        assert_eq!(list.energy.len(), n);
        for column in [&list.ang_err, &list.mjd].into_iter().flatten() {
            assert_eq!(column.len(), n);
        }
        for (&ra, &dec) in list.ra.iter().zip(&list.dec) {
            assert!((0.0..TAU).contains(&ra), "ra {ra} outside [0, 2π)");
            assert!((-FRAC_PI_2..=FRAC_PI_2).contains(&dec), "dec {dec}");
        }
        let optional = list.ang_err.iter().chain(&list.mjd).flatten();
        assert!(list.energy.iter().chain(optional).all(|x| x.is_finite()));
    }
});
