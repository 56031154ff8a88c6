//! Bounded randomized robustness test of the event reader: damaged copies of a valid file
//! (bytes flipped, lines cut, junk inserted) must give events or a `ReadError`, never a panic,
//! and whatever is read obeys the model's ranges.

use haloscope::data::events;
use haloscope::jobs::Progress;
use proptest::prelude::*;
use std::io::Write;

const VALID: &str = "# MJD[days] log10(E/GeV) AngErr[deg] RA[deg] Dec[deg]\n\
54562.37 3.31 0.48 203.024 16.760\n\
54562.38 5.17 0.62 360.0 -90.0\r\n\
54562.39 2.10 1.10 0.000 90.0\n";

fn check(content: &[u8]) {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(content).expect("write");
    let _ = events::looks_like_events(file.path()).expect("peek never fails on a readable file");
    if let Ok(list) = events::read(&[file.path()], &Progress::none()) {
        assert!(!list.is_empty());
        assert_eq!(list.ra.len(), list.dec.len());
        assert_eq!(list.ra.len(), list.energy.len());
        for (&ra, &dec) in list.ra.iter().zip(&list.dec) {
            assert!((0.0..std::f64::consts::TAU).contains(&ra), "ra {ra}");
            assert!(dec.abs() <= std::f64::consts::FRAC_PI_2, "dec {dec}");
        }
        assert!(list.energy.iter().all(|e| e.is_finite()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn damaged_files_never_panic(
        edits in prop::collection::vec((0usize..200, any::<u8>(), 0u8..3), 0..8),
        cut in 0usize..200,
    ) {
        let mut bytes = VALID.as_bytes().to_vec();
        for (position, byte, kind) in edits {
            let at = position % (bytes.len() + 1);
            match kind {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ if at < bytes.len() => { bytes.remove(at); }
                _ => {}
            }
        }
        bytes.truncate(cut.max(1) * bytes.len() / 200);
        check(&bytes);
    }

    #[test]
    fn random_text_never_panics(text in "[ -~\t\r\n#,.eE+-]{0,300}") {
        check(format!("RA Dec logE\n{text}").as_bytes());
        check(text.as_bytes());
    }
}
