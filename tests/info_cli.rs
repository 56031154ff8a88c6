//! `haloscope info` through the real binary: JSON and text output, several files, the particle
//! budget, and errors on missing, directory and damaged inputs.

mod common;

use common::{haloscope_bin, shared_data};
use serde_json::Value;
use std::process::{Command, Output};

fn info(args: &[&str]) -> Output {
    Command::new(haloscope_bin())
        .arg("info")
        .args(args)
        .output()
        .expect("binary runs")
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON value on stdout")
}

fn path_str(relative: &str) -> String {
    shared_data(relative).display().to_string()
}

#[test]
fn tipsy_json_describes_encoding_and_species() {
    let file = path_str("snapshots/run581.20000");
    let v = json_of(&info(&[&file, "--json"]));
    assert_eq!(v["format"], "tipsy");
    assert_eq!(v["byte_order"], "big");
    assert_eq!(v["header_bytes"], 32);
    assert_eq!(v["periodic"], false);
    assert_eq!(v["box_size"], Value::Null);
    assert_eq!(v["n_particles"], 8_948);
    assert_eq!(v["species"]["dark"]["count"], 3_627);
    assert_eq!(v["species"]["star"]["count"], 5_321);
    let fields: Vec<&str> = v["species"]["star"]["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        fields,
        ["mass", "metals", "tform", "eps", "phi", "velocity"]
    );
    assert!(v["species"].get("gas").is_none());
}

#[test]
fn gadget_json_describes_box_redshift_and_gas_fields() {
    let file = path_str("snapshots/g2_lcdm_gas_snapshot_004.hdf5");
    let v = json_of(&info(&[&file, "--json"]));
    assert_eq!(v["format"], "gadget-hdf5");
    assert_eq!(v["box_size"], 50_000.0);
    assert_eq!(v["periodic"], true);
    assert!(v["redshift"].as_f64().expect("redshift").abs() < 1e-6);
    assert_eq!(v["species"]["gas"]["count"], 32_768);
    assert_eq!(v["species"]["dark"]["count"], 32_768);
    let gas_fields = v["species"]["gas"]["fields"].as_array().expect("fields");
    for name in ["SmoothingLength", "Density", "InternalEnergy"] {
        assert!(gas_fields.iter().any(|f| f == name), "{name}");
    }
}

#[test]
fn several_files_give_an_array_and_max_particles_applies() {
    let a = path_str("snapshots/lambs.00200_subsamp_30K");
    let b = path_str("snapshots/g2_lcdm_gas_snapshot_003.hdf5");
    let v = json_of(&info(&[&a, &b, "--json", "--max-particles", "1000"]));
    let items = v.as_array().expect("an array for two files");
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["n_particles"], 1_000);
    assert_eq!(items[0]["particles_in_file"], 30_000);
    assert_eq!(items[1]["n_particles"], 1_000);
    assert_eq!(items[1]["species"]["gas"]["count"], 500);
}

#[test]
fn text_output_goes_to_stderr() {
    let file = path_str("snapshots/test4.tbin");
    let out = info(&[&file]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("big-endian, 32-byte header"), "{text}");
    assert!(text.contains("67495"), "{text}");
}

fn assert_error(out: &Output, file: &str, what: &str) {
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!("error: {file}: ");
    assert!(stderr.starts_with(&expected), "{stderr}");
    assert!(stderr.contains(what), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

#[test]
fn missing_file_directory_and_damaged_file_fail_with_one_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nothing.tbin").display().to_string();
    assert_error(&info(&[&missing]), &missing, "No such file");

    let folder = dir.path().display().to_string();
    assert_error(&info(&[&folder, "--json"]), &folder, "directory");

    let bytes = std::fs::read(shared_data("snapshots/run581.20000")).expect("read");
    let damaged = dir.path().join("run581.truncated");
    std::fs::write(&damaged, &bytes[..bytes.len() - 7]).expect("write");
    let damaged = damaged.display().to_string();
    assert_error(&info(&[&damaged]), &damaged, "not a tipsy file");

    let mut h5 = std::fs::read(shared_data("snapshots/g2_lcdm_gas_snapshot_003.hdf5")).expect("r");
    h5.truncate(4096);
    let damaged_h5 = dir.path().join("cut.hdf5");
    std::fs::write(&damaged_h5, &h5).expect("write");
    let damaged_h5 = damaged_h5.display().to_string();
    assert_error(&info(&[&damaged_h5]), &damaged_h5, "HDF5");
}

#[test]
fn event_list_json_gives_counts_columns_and_ranges() {
    let file = path_str("events/IC40_exp.csv");
    let v = json_of(&info(&[&file, "--json"]));
    assert_eq!(v["format"], "events");
    assert_eq!(v["n_events"], 36_900);
    assert_eq!(v["columns"].as_array().expect("columns").len(), 7);
    assert_eq!(v["columns"][3], "RA[deg]");
    // Ranges against an independent parse of the whitespace-separated rows.
    let text = std::fs::read_to_string(shared_data("events/IC40_exp.csv")).expect("read");
    let rows: Vec<Vec<f64>> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            l.split_whitespace()
                .map(|x| x.parse().expect("number"))
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 36_900);
    for (key, column) in [
        ("energy_range_log10_gev", 1),
        ("ra_range_deg", 3),
        ("dec_range_deg", 4),
    ] {
        let lo = rows.iter().map(|r| r[column]).fold(f64::INFINITY, f64::min);
        let hi = rows
            .iter()
            .map(|r| r[column])
            .fold(f64::NEG_INFINITY, f64::max);
        let range = v[key].as_array().expect(key);
        let got = (
            range[0].as_f64().expect("lo"),
            range[1].as_f64().expect("hi"),
        );
        assert!(
            (got.0 - lo).abs() < 1e-9 && (got.1 - hi).abs() < 1e-9,
            "{key}: {got:?} vs {lo}..{hi}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_reader_that_goes_away_ends_it_quietly() {
    use std::os::unix::process::ExitStatusExt;
    // A pipe whose reading end is closed before the program starts: its first write to stdout
    // fails (`haloscope info … --json | head -c 0`, deterministically).
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(haloscope_bin())
        .args(["info", "--json", &path_str("snapshots/run581.20000")])
        .stdout(writer)
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}
