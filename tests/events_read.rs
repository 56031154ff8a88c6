//! Event-list reader: the shared IceCube releases and hand-made files with every accepted
//! variation and every rejected input.

mod common;

use common::{shared_data, shared_dir};
use haloscope::data::{EventList, ReadError, events};
use haloscope::jobs::Progress;
use std::io::Write;
use std::path::{Path, PathBuf};

fn read_paths(paths: &[PathBuf]) -> Result<EventList, ReadError> {
    let refs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    events::read(&refs, &Progress::none())
}

/// Writes `content` to a fresh temporary file.
fn temp_file(content: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(content).expect("write temp file");
    file
}

fn read_text(content: &str) -> Result<EventList, ReadError> {
    let file = temp_file(content.as_bytes());
    read_paths(&[file.path().to_path_buf()])
}

fn error_text(content: &str) -> String {
    match read_text(content) {
        Ok(list) => panic!("expected an error, read {} events", list.len()),
        Err(err) => err.to_string(),
    }
}

#[test]
fn ic40_release_has_36900_events_in_radians() {
    let path = shared_data("events/IC40_exp.csv");
    assert!(events::looks_like_events(&path).expect("peek"));
    let list = read_paths(&[path]).expect("read IC40");
    assert_eq!(list.len(), 36_900);
    assert_eq!(list.dec.len(), 36_900);
    assert_eq!(list.energy.len(), 36_900);
    // First row: 54562.37911273 3.31 0.48 203.024 16.760 218.374 106.712
    assert_eq!(list.mjd.as_ref().expect("mjd")[0], 54562.37911273);
    assert_eq!(list.energy[0], 3.31);
    assert_eq!(
        list.ang_err.as_ref().expect("ang_err")[0],
        0.48f64.to_radians()
    );
    assert_eq!(list.ra[0], 203.024f64.to_radians());
    assert_eq!(list.dec[0], 16.760f64.to_radians());
    assert_eq!(list.columns[0], "MJD[days]");
    assert_eq!(list.columns.len(), 7);
    assert!(
        list.ra
            .iter()
            .all(|ra| (0.0..std::f64::consts::TAU).contains(ra))
    );
}

#[test]
fn ic86_2011_two_files_concatenate_in_order() {
    let up = shared_data("events/IC86-2011/upgoing_events.txt");
    let down = shared_data("events/IC86-2011/downgoing_events.txt");
    assert!(events::looks_like_events(&up).expect("peek"));
    let list = read_paths(&[up.clone(), down.clone()]).expect("read IC86-2011");
    assert_eq!(list.len(), 138_322);
    assert_eq!(list.sources, vec![up.clone(), down]);
    // First upgoing row (CRLF): 55694 3.0 1.0 275.1 39.1
    assert_eq!(list.ra[0], 275.1f64.to_radians());
    assert_eq!(list.dec[0], 39.1f64.to_radians());
    assert_eq!(list.energy[0], 3.0);
    assert_eq!(list.columns, ["MJD", "log10(E)", "ang_err", "RA", "Dec"]);
    let up_only = read_paths(&[up]).expect("read upgoing");
    assert_eq!(up_only.len(), 69_227);
    assert_eq!(list.ra[..69_227], up_only.ra[..]);
    // RA = 360.0 in the file wraps to 0; the one event at Dec = -90 exactly is kept.
    assert!(
        list.ra
            .iter()
            .all(|ra| (0.0..std::f64::consts::TAU).contains(ra))
    );
    assert_eq!(
        list.dec
            .iter()
            .filter(|&&d| d == (-90.0f64).to_radians())
            .count(),
        1
    );
}

#[test]
fn binary_snapshots_are_not_event_lists() {
    for name in [
        "snapshots/lambs.00200_subsamp_30K",
        "snapshots/g2_lcdm_gas_snapshot_003.hdf5",
        "snapshots/run581.20000",
    ] {
        let path = shared_dir().join("data").join(name);
        assert!(!events::looks_like_events(&path).expect("peek"), "{name}");
    }
    let text = temp_file(b"x y z\n1 2 3\n");
    assert!(!events::looks_like_events(text.path()).expect("peek"));
    let empty = temp_file(b"");
    assert!(!events::looks_like_events(empty.path()).expect("peek"));
}

#[test]
fn csv_with_named_columns_comments_and_crlf() {
    let list = read_text(
        "# exported by hand\r\n# second comment\r\nDec [deg], RA [deg], logE, extra\r\n\
         10.5, 360, 4.25, a\r\n# a comment row\r\n\r\n-90, 0.5, 2.0, b\r\n",
    )
    .expect("read csv");
    assert_eq!(list.len(), 2);
    assert_eq!(list.ra, vec![0.0, 0.5f64.to_radians()]);
    assert_eq!(
        list.dec,
        vec![10.5f64.to_radians(), (-90.0f64).to_radians()]
    );
    assert_eq!(list.energy, vec![4.25, 2.0]);
    assert_eq!(list.ang_err, None);
    assert_eq!(list.mjd, None);
}

#[test]
fn header_without_hash_and_case_insensitive_names() {
    let list = read_text("mjd\tLOG10(E/GEV)\tANGERR[deg]\tra\tdec\n1\t2\t3\t4\t5\n").expect("read");
    assert_eq!(list.mjd, Some(vec![1.0]));
    assert_eq!(list.energy, vec![2.0]);
    assert_eq!(list.ang_err, Some(vec![3.0f64.to_radians()]));
    assert_eq!(list.ra, vec![4.0f64.to_radians()]);
}

#[test]
fn optional_column_missing_from_a_later_file_is_dropped() {
    let a = temp_file(b"MJD RA Dec logE\n1 10 20 3\n");
    let b = temp_file(b"RA Dec logE\n11 21 4\n");
    let list = read_paths(&[a.path().to_path_buf(), b.path().to_path_buf()]).expect("read");
    assert_eq!(list.len(), 2);
    assert_eq!(list.mjd, None);
    let list = read_paths(&[a.path().to_path_buf(), a.path().to_path_buf()]).expect("read");
    assert_eq!(list.mjd, Some(vec![1.0, 1.0]));
}

#[test]
fn bad_input_gives_errors_naming_line_and_column() {
    let cases: [(&str, &str); 12] = [
        ("", "empty file"),
        ("# only a comment\n", "empty file"),
        ("RA Dec logE\n", "no events"),
        ("MJD Dec logE\n1 2 3\n", "no RA column"),
        ("MJD RA logE\n1 2 3\n", "no Dec column"),
        ("RA Dec\n1 2\n", "no energy column"),
        (
            "RA Dec logE\n1 90.5 3\n",
            "line 2: column Dec: Dec 90.5 outside [-90, 90]",
        ),
        (
            "RA Dec logE\n1 2 3\n1 nan 3\n",
            "line 3: column Dec: `nan` is not finite",
        ),
        (
            "RA Dec logE\n1 2 x3\n",
            "line 2: column logE: `x3` is not a number",
        ),
        ("RA Dec logE\n1 2\n", "line 2: expected 3 fields"),
        (
            "RA Dec logE\n-0.5 2 3\n",
            "line 2: column RA: RA -0.5 outside [0, 360]",
        ),
        (
            "RA Dec logE AngErr\n1 2 3 0.4\n1 2 3 -0.1\n",
            "line 3: column AngErr: angular error -0.1 is negative",
        ),
    ];
    for (content, expected) in cases {
        let message = error_text(content);
        assert!(message.contains(expected), "{content:?}: {message}");
    }
    assert!(error_text("RA RA Dec logE\n1 2 3 4\n").contains("twice"));
    let binary = temp_file(&[0xff, 0xfe, 0x00, 0x01, b'\n', 0x80]);
    let err = read_paths(&[binary.path().to_path_buf()]).expect_err("binary");
    assert!(err.to_string().contains("not UTF-8"), "{err}");
    let missing = PathBuf::from("/nonexistent/events.txt");
    let err = read_paths(&[missing]).expect_err("missing");
    assert!(matches!(err, ReadError::Io { .. }));
    assert!(events::looks_like_events(Path::new("/nonexistent/events.txt")).is_err());
}

#[test]
fn cancelled_read_reports_cancelled() {
    let token = haloscope::jobs::CancelToken::new();
    token.cancel();
    let path = shared_data("events/IC40_exp.csv");
    let err = events::read(&[&path], &Progress::with_cancel(token)).expect_err("cancelled");
    assert!(matches!(err, ReadError::Cancelled { .. }));
}

#[test]
fn concatenating_lists_equals_reading_the_files_together() {
    let up = shared_data("events/IC86-2011/upgoing_events.txt");
    let down = shared_data("events/IC86-2011/downgoing_events.txt");
    let together = read_paths(&[up.clone(), down.clone()]).expect("both");
    let up = read_paths(&[up]).expect("up");
    let down = read_paths(&[down]).expect("down");
    let combined = EventList::concatenated(&[&up, &down]);
    assert_eq!(combined, together);
    assert_eq!(combined.len(), 138_322);
}
