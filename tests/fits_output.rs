//! `haloscope render --fits-out`: the FITS file read back with the fitsio crate (exact header
//! values, pixels equal to the `--tau-out` .npy) and with astropy, which must be installed
//! (scripts/setup.sh): without it the astropy test fails.

mod common;

use common::{haloscope_bin, shared_data};
use fitsio::FitsFile;
use haloscope::render::npy::read_npy_f32;
use std::path::{Path, PathBuf};
use std::process::Command;

const GAS: &str = "snapshots/g2_lcdm_gas_snapshot_004.hdf5";
const WIDTH: usize = 24;
const HEIGHT: usize = 16;

/// Renders the gas with `extra` arguments into `dir`: (FITS path, τ .npy path, JSON report).
fn render(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf, serde_json::Value) {
    let (fits, tau, png) = (
        dir.join("gas.fits"),
        dir.join("tau.npy"),
        dir.join("gas.png"),
    );
    let output = Command::new(haloscope_bin())
        .arg("render")
        .arg(shared_data(GAS))
        .args(["--out", png.to_str().expect("utf-8")])
        .args(["--tau-out", tau.to_str().expect("utf-8")])
        .args(["--fits-out", fits.to_str().expect("utf-8")])
        .args([
            "--width",
            &WIDTH.to_string(),
            "--height",
            &HEIGHT.to_string(),
        ])
        .args([
            "--species",
            "gas",
            "--intensity",
            "Density",
            "--log-intensity",
        ])
        .args([
            "--camera",
            "25000,25000,120000",
            "--lookat",
            "25000,25000,25000",
        ])
        .args(["--up", "0,1,0", "--fov", "40", "--backend", "cpu", "--json"])
        .args(extra)
        .output()
        .expect("run haloscope");
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = serde_json::from_slice(&output.stdout).expect("JSON report");
    (fits, tau, report)
}

/// τ of the .npy (H, W, 3) as FITS stores plane `plane`: bottom row first.
fn npy_plane_bottom_up(values: &[f32], plane: usize) -> Vec<f32> {
    (0..HEIGHT)
        .rev()
        .flat_map(|row| (0..WIDTH).map(move |col| (row * WIDTH + col) * 3 + plane))
        .map(|i| values[i])
        .collect()
}

#[test]
fn fits_holds_tau_the_image_and_the_render_in_its_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fits_path, tau_path, report) = render(
        dir.path(),
        &[
            "--color",
            "Density",
            "--log-color",
            "--palette",
            "magma_r",
            "--gamma",
            "0.8",
        ],
    );
    let (shape, tau) = read_npy_f32(&tau_path).expect("τ .npy");
    assert_eq!(shape, vec![HEIGHT, WIDTH, 3]);
    let mut file = FitsFile::open(&fits_path).expect("open FITS");
    let primary = file.primary_hdu().expect("primary");
    let naxis: i64 = primary.read_key(&mut file, "NAXIS").expect("NAXIS");
    assert_eq!(naxis, 0, "the primary HDU holds the header only");
    let primary_palette: String = primary.read_key(&mut file, "PALETT1").expect("PALETT1");
    assert_eq!(primary_palette, "magma_r");
    let tau_hdu = file.hdu("TAU").expect("TAU extension");
    let text =
        |file: &mut FitsFile, key: &str| -> String { tau_hdu.read_key(file, key).expect(key) };
    let float = |file: &mut FitsFile, key: &str| -> f64 { tau_hdu.read_key(file, key).expect(key) };
    assert_eq!(text(&mut file, "EXTNAME"), "TAU");
    assert_eq!(text(&mut file, "SRCFILE"), "g2_lcdm_gas_snapshot_004.hdf5");
    assert_eq!(text(&mut file, "SRCFMT"), "gadget-hdf5");
    assert_eq!(text(&mut file, "PROJECT"), "perspective");
    assert_eq!(text(&mut file, "BACKEND"), "cpu");
    assert_eq!(text(&mut file, "EXPOSURE"), "auto");
    assert_eq!(text(&mut file, "SPECIE1"), "gas");
    assert_eq!(text(&mut file, "INTENS1"), "Density");
    assert_eq!(text(&mut file, "COLOR1"), "Density");
    assert_eq!(text(&mut file, "PALETT1"), "magma_r");
    for (key, want) in [
        ("CAMPOSX", 25000.0),
        ("CAMPOSY", 25000.0),
        ("CAMPOSZ", 120000.0),
        ("LOOKATZ", 25000.0),
        ("CAMUPY", 1.0),
        ("FOV", 40.0),
        ("NEAR", 0.0),
        ("SIZEF1", 1.0),
    ] {
        assert_eq!(float(&mut file, key), want, "{key}");
    }
    assert_eq!(float(&mut file, "GAMMA"), f64::from(0.8f32));
    let bright = report["brightness"].as_f64().expect("brightness");
    // cfitsio writes 15 significant digits: the brightness, an f32 widened, comes back to 1e-14.
    let written = float(&mut file, "BRIGHT");
    assert!(
        (written - bright).abs() <= 1e-14 * bright.abs(),
        "BRIGHT {written} vs {bright}"
    );
    let time: f64 = tau_hdu.read_key(&mut file, "TIME").expect("TIME");
    assert!(time > 0.0 && time <= 1.0, "expansion factor {time}");
    let ilog: i64 = tau_hdu.read_key(&mut file, "ILOG1").expect("ILOG1");
    assert_eq!(ilog, 1);
    // τ: three planes, each the .npy's channel with the bottom row first, bit for bit.
    let data: Vec<f32> = tau_hdu.read_image(&mut file).expect("τ pixels");
    assert_eq!(data.len(), 3 * WIDTH * HEIGHT);
    for plane in 0..3 {
        let got = &data[plane * WIDTH * HEIGHT..(plane + 1) * WIDTH * HEIGHT];
        assert_eq!(got, npy_plane_bottom_up(&tau, plane), "plane {plane}");
    }
    assert!(tau.iter().any(|&v| v > 0.0), "something was drawn");
    let image = file.hdu("IMAGE").expect("IMAGE extension");
    let pixels: Vec<u8> = image.read_image(&mut file).expect("image pixels");
    assert_eq!(pixels.len(), 3 * WIDTH * HEIGHT);
    assert!(pixels.iter().any(|&p| p > 0));
    let palette: String = image
        .read_key(&mut file, "PALETT1")
        .expect("key in IMAGE too");
    assert_eq!(palette, "magma_r");
}

#[test]
fn a_grey_render_has_one_plane_and_sixteen_bit_images_stay_sixteen_bit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fits_path, tau_path, _) =
        render(dir.path(), &["--color", "none", "--bits", "16", "--ortho"]);
    let (_, tau) = read_npy_f32(&tau_path).expect("τ .npy");
    let mut file = FitsFile::open(&fits_path).expect("open FITS");
    let tau_hdu = file.hdu("TAU").expect("TAU");
    let naxis: i64 = tau_hdu.read_key(&mut file, "NAXIS").expect("NAXIS");
    assert_eq!(naxis, 2);
    let data: Vec<f32> = tau_hdu.read_image(&mut file).expect("τ");
    assert_eq!(data, npy_plane_bottom_up(&tau, 0));
    let palette: String = tau_hdu.read_key(&mut file, "PALETT1").expect("PALETT1");
    assert_eq!(palette, "none");
    let projection: String = tau_hdu.read_key(&mut file, "PROJECT").expect("PROJECT");
    assert_eq!(projection, "orthographic");
    // The orthographic width keeps the perspective scale at the look-at plane: 2·d·tan(fov/2).
    let width: f64 = tau_hdu.read_key(&mut file, "ORTHOW").expect("ORTHOW");
    assert!((width - 2.0 * 95000.0 * 20f64.to_radians().tan()).abs() < 1e-6);
    let image = file.hdu("IMAGE").expect("IMAGE");
    let bitpix: i64 = image.read_key(&mut file, "BITPIX").expect("BITPIX");
    assert_eq!(bitpix, 16);
    let pixels: Vec<u16> = image.read_image(&mut file).expect("pixels");
    assert_eq!(pixels.len(), WIDTH * HEIGHT);
    assert!(pixels.iter().any(|&p| p > 255), "16-bit values");
}

#[test]
fn astropy_reads_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (fits_path, tau_path, _) = render(dir.path(), &["--color", "Density", "--log-color"]);
    // Fails (does not skip) without astropy: scripts/setup.sh installs it.
    let script = r#"
import sys
import numpy as np
from astropy.io import fits
fits_path, tau_path = sys.argv[1], sys.argv[2]
with fits.open(fits_path) as hdul:
    assert [h.name for h in hdul] == ["PRIMARY", "TAU", "IMAGE"], [h.name for h in hdul]
    assert hdul["PRIMARY"].data is None
    tau = hdul["TAU"].data
    tau_npy = np.load(tau_path)
    # FITS keeps the bottom row first: flip rows back, channels last.
    assert np.array_equal(np.moveaxis(tau[:, ::-1, :], 0, -1), tau_npy)
    header = hdul[0].header
    assert header["SRCFILE"] == "g2_lcdm_gas_snapshot_004.hdf5", header["SRCFILE"]
    assert header["PALETT1"] == "inferno", header["PALETT1"]
    assert header["FOV"] == 40.0
    assert hdul["IMAGE"].data.dtype == np.uint8
    assert hdul["IMAGE"].data.shape == tau.shape, hdul["IMAGE"].data.shape
print("astropy ok", tau.shape)
"#;
    let output = Command::new("python3")
        .args(["-c", script])
        .arg(&fits_path)
        .arg(&tau_path)
        .output()
        .expect("python3 runs (scripts/setup.sh installs it with astropy)");
    assert!(
        output.status.success(),
        "astropy check failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("astropy ok (3, {HEIGHT}, {WIDTH})")
    );
}

#[test]
fn a_fits_path_in_a_missing_folder_is_one_clear_error_before_rendering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fits = dir.path().join("missing").join("gas.fits");
    let output = Command::new(haloscope_bin())
        .arg("render")
        .arg(shared_data(GAS))
        .args(["--out", dir.path().join("gas.png").to_str().expect("utf-8")])
        .args(["--fits-out", fits.to_str().expect("utf-8")])
        .output()
        .expect("run haloscope");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains("gas.fits"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("list").count(),
        0,
        "nothing written"
    );
}
