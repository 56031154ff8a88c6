//! Golden τ buffers per back-end (tests/goldens/README.md): the renders of
//! scripts/make-goldens.sh compared with the checked-in .npy files.
//!
//! The test runs the same script that made the goldens, with the binary under test, so the
//! commands cannot drift apart. Tolerances: a back-end against its own goldens, exact (0
//! differing bits); CUDA against the CPU goldens, ‖Δ‖/‖ref‖ < 1e-4 (DESIGN §4).

mod common;

use common::{haloscope_bin, shared_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every case the script renders, in its order.
const CASES: [&str; 3] = ["gas_colour", "gas_grey", "dark_knn"];

/// The largest relative L2 difference allowed between a GPU τ and the CPU golden.
const CROSS_BACKEND_TOLERANCE: f64 = 1e-4;

/// The script that renders the cases, relative to the project root.
const SCRIPT: &str = "scripts/make-goldens.sh";

/// The project root (where scripts/ and tests/goldens/ are): the crate's folder, or the working
/// directory where that is gone (a test binary carried to the GPU machine runs in a copy).
fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if manifest.join(SCRIPT).exists() {
        manifest
    } else {
        std::env::current_dir().expect("working directory")
    }
}

/// The binary under test: `$HALOSCOPE_BIN` (a bundled binary on the GPU machine), else the one
/// cargo built for these tests.
fn binary() -> PathBuf {
    let bin = std::env::var_os("HALOSCOPE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(haloscope_bin);
    assert!(
        bin.exists(),
        "haloscope binary {} not found (set HALOSCOPE_BIN)",
        bin.display()
    );
    bin
}

/// The checked-in golden of `case` made by `backend`.
fn golden(backend: &str, case: &str) -> PathBuf {
    root()
        .join("tests/goldens")
        .join(backend)
        .join(format!("{case}.npy"))
}

/// Renders `cases` on `backend` with scripts/make-goldens.sh into a fresh temporary folder, and
/// checks that every render reports that back-end (no silent fallback).
fn render(backend: &str, cases: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new("bash")
        .arg(root().join(SCRIPT))
        .arg(binary())
        .arg(backend)
        .arg(dir.path())
        .args(cases)
        .env("HALOSCOPE_SHARED", shared_dir())
        .output()
        .expect("run bash scripts/make-goldens.sh");
    assert!(
        output.status.success(),
        "make-goldens.sh {backend} {cases:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reports = String::from_utf8(output.stdout).expect("utf-8 JSON");
    let reports: Vec<serde_json::Value> = reports
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert_eq!(reports.len(), cases.len(), "one report per case");
    for (case, report) in cases.iter().zip(&reports) {
        assert_eq!(
            report["backend"], backend,
            "{case} rendered on another back-end"
        );
    }
    dir
}

/// A little-endian float32 C-order .npy file as it is stored.
struct Npy {
    /// The array shape (H, W, 3).
    shape: Vec<usize>,
    /// The values in file order.
    values: Vec<f32>,
}

/// Reads `path` (the format render --tau-out writes: .npy version 1.0, '<f4', C order).
fn read_npy(path: &Path) -> Npy {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(
        bytes.len() >= 10 && bytes.starts_with(b"\x93NUMPY\x01"),
        "{}: not a version 1 .npy file",
        path.display()
    );
    let data_start = 10 + usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    let header = std::str::from_utf8(&bytes[10..data_start]).expect("ASCII header");
    assert!(
        header.contains("'descr': '<f4'") && header.contains("'fortran_order': False"),
        "{}: expected little-endian float32 in C order, header {header}",
        path.display()
    );
    let shape = header
        .split("'shape': (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("shape in header")
        .split(',')
        .filter(|dim| !dim.trim().is_empty())
        .map(|dim| dim.trim().parse().expect("integer dimension"))
        .collect();
    let values = bytes[data_start..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Npy { shape, values }
}

/// ‖got − reference‖ / ‖reference‖ over every value (f64 sums).
fn relative_l2(got: &[f32], reference: &[f32]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (&g, &r) in got.iter().zip(reference) {
        diff += (f64::from(g) - f64::from(r)).powi(2);
        norm += f64::from(r).powi(2);
    }
    diff.sqrt() / norm.sqrt()
}

/// `Err` describing the difference unless `got` and the golden at `reference` are the same bits:
/// the number of differing values, the first differing pixel and the relative L2 difference.
fn compare_exact(got_path: &Path, reference_path: &Path) -> Result<(), String> {
    let (got, reference) = (read_npy(got_path), read_npy(reference_path));
    let name = reference_path.display();
    if got.shape != reference.shape {
        return Err(format!(
            "{name}: shape {:?}, golden {:?}",
            got.shape, reference.shape
        ));
    }
    let differing: Vec<usize> = (0..got.values.len())
        .filter(|&i| got.values[i].to_bits() != reference.values[i].to_bits())
        .collect();
    let Some(&first) = differing.first() else {
        return Ok(());
    };
    let (width, channels) = (reference.shape[1], reference.shape[2]);
    let pixel = first / channels;
    Err(format!(
        "{name}: {} of {} values differ (tolerance: 0 differing bits); first at row {}, column \
         {}, channel {}: got {:e} ({:#010x}), golden {:e} ({:#010x}); relative L2 difference {:e}",
        differing.len(),
        got.values.len(),
        pixel / width,
        pixel % width,
        first % channels,
        got.values[first],
        got.values[first].to_bits(),
        reference.values[first],
        reference.values[first].to_bits(),
        relative_l2(&got.values, &reference.values),
    ))
}

/// `Err` unless `got` is within [`CROSS_BACKEND_TOLERANCE`] of the golden at `reference`.
fn compare_close(got_path: &Path, reference_path: &Path) -> Result<(), String> {
    let (got, reference) = (read_npy(got_path), read_npy(reference_path));
    let name = reference_path.display();
    if got.shape != reference.shape {
        return Err(format!(
            "{name}: shape {:?}, golden {:?}",
            got.shape, reference.shape
        ));
    }
    let relative = relative_l2(&got.values, &reference.values);
    if relative < CROSS_BACKEND_TOLERANCE {
        Ok(())
    } else {
        Err(format!(
            "{name}: relative L2 difference {relative:e} (tolerance {CROSS_BACKEND_TOLERANCE:e})"
        ))
    }
}

/// Renders `case` on the CPU and compares it with its CPU golden bit for bit.
fn check_cpu(case: &str) {
    let dir = render("cpu", &[case]);
    let got = dir.path().join(format!("{case}.npy"));
    if let Err(message) = compare_exact(&got, &golden("cpu", case)) {
        panic!("{message}");
    }
}

#[test]
fn gas_colour_matches_the_cpu_golden() {
    check_cpu("gas_colour");
}

#[test]
fn gas_grey_matches_the_cpu_golden() {
    check_cpu("gas_grey");
}

#[test]
fn dark_knn_matches_the_cpu_golden() {
    check_cpu("dark_knn");
}

#[test]
#[ignore = "needs a CUDA device"]
fn cuda_renders_match_the_cuda_goldens_and_the_cpu_goldens() {
    let missing: Vec<String> = CASES
        .iter()
        .map(|case| golden("cuda", case))
        .filter(|path| !path.exists())
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "CUDA goldens missing: {missing:?}. Make them on a CUDA machine with the binary the \
         goldens pin (release build of the reference commit): `scripts/make-goldens.sh \
         target/release/haloscope cuda tests/goldens/cuda`, check them against the CPU goldens \
         with this test, and commit them"
    );
    let dir = render("cuda", &CASES);
    let mut failures = Vec::new();
    for case in CASES {
        let got = dir.path().join(format!("{case}.npy"));
        failures.extend(compare_exact(&got, &golden("cuda", case)).err());
        failures.extend(compare_close(&got, &golden("cpu", case)).err());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
