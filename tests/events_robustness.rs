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

/// Reads `content` as an event file; `Err` is the message.
fn read_text(content: &[u8]) -> (tempfile::NamedTempFile, Result<events_model::List, String>) {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(content).expect("write");
    let result = events::read(&[file.path()], &Progress::none())
        .map(|l| events_model::List {
            ra: l.ra,
            dec: l.dec,
            energy: l.energy,
            mjd: l.mjd,
        })
        .map_err(|e| e.to_string());
    (file, result)
}

mod events_model {
    /// The columns a test compares.
    #[derive(Debug, PartialEq)]
    pub struct List {
        pub ra: Vec<f64>,
        pub dec: Vec<f64>,
        pub energy: Vec<f64>,
        pub mjd: Option<Vec<f64>>,
    }
}

#[test]
fn a_byte_order_mark_and_cr_only_line_ends_read_like_lf() {
    let (_, plain) = read_text(VALID.as_bytes());
    let plain = plain.expect("valid");
    assert_eq!(plain.ra.len(), 3);
    let mut with_bom = "\u{feff}".as_bytes().to_vec();
    with_bom.extend_from_slice(VALID.as_bytes());
    let (file, bom) = read_text(&with_bom);
    assert!(events::looks_like_events(file.path()).expect("peek"));
    assert_eq!(bom.expect("BOM"), plain);
    let cr_only = VALID.replace("\r\n", "\n").replace('\n', "\r");
    let (file, cr) = read_text(cr_only.as_bytes());
    assert!(events::looks_like_events(file.path()).expect("peek"));
    assert_eq!(cr.expect("CR only"), plain);
}

#[test]
fn error_lines_quote_at_most_80_characters_of_the_input() {
    let names: Vec<String> = (0..100_000).map(|i| format!("col{i}")).collect();
    let header = format!("RA Dec logE {}\n", names.join(" "));
    let (file, result) = read_text(format!("{header}1 2 3\n").as_bytes());
    let err = result.expect_err("too few fields");
    assert!(err.len() < 300, "{} bytes: {}", err.len(), &err[..300]);
    assert_eq!(
        err,
        format!(
            "{}: line 2: expected 100003 fields (RA Dec logE col0 col1 col2 col3 col4 col5 col6 \
             col7 col8 col9 col10 col11 col12 … (888901 bytes in all)), found 3",
            file.path().display()
        )
    );
    let long_value = "9".repeat(5000) + "x";
    let (_, result) = read_text(format!("RA Dec logE\n{long_value} 2 3\n").as_bytes());
    let err = result.expect_err("not a number");
    assert!(
        err.contains("… (5001 bytes in all)` is not a number"),
        "{err}"
    );
    assert!(err.len() < 300, "{err}");
}

#[test]
fn a_2_gb_sparse_file_is_refused_after_one_bounded_line() {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(b"RA Dec logE\n").expect("write");
    file.as_file().set_len(2 << 30).expect("sparse file");
    let started = std::time::Instant::now();
    let err = events::read(&[file.path()], &Progress::none())
        .expect_err("NULs are no events")
        .to_string();
    assert_eq!(
        err,
        format!(
            "{}: line 2: line longer than {} bytes (not an event list?)",
            file.path().display(),
            events::MAX_LINE_BYTES
        )
    );
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}
