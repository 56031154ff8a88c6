//! Each code's smoothing-length convention: one gas distribution (kernel support radii H)
//! written as tipsy (h = H/2), Gadget-4 HDF5 (h = H) and SWIFT-flavoured HDF5 (h = H/γ, the
//! kernel named by the file or assumed cubic) renders to the same τ; `kernel_support`
//! overrides the file's convention.

use haloscope::data::gadget_hdf5::{self, GadgetWriteOptions};
use haloscope::data::kernel::SimCode;
use haloscope::data::tipsy::{TipsyWriteOptions, write as write_tipsy};
use haloscope::data::{
    Header, LoadOptions, Masses, Snapshot, SnapshotFormat, SourceInfo, Species, SpeciesKind,
    load_snapshot,
};
use haloscope::jobs::Progress;
use haloscope::render::{Brightness, Camera, RenderSettings, SpeciesStyle, TauBuffer, render_cpu};
use hdf5::types::VarLenUnicode;
use std::path::Path;

/// SWIFT's cubic-spline support over h (Dehnen & Aly 2012, table 1).
const CUBIC_GAMMA: f32 = 1.825_742;
/// SWIFT's Wendland C2 support over h.
const WENDLAND_C2_GAMMA: f32 = 1.936_492;

/// 400 gas particles in the unit cube with support radii H in [0.02, 0.1] (fixed LCG).
fn distribution() -> (Vec<[f32; 3]>, Vec<f32>) {
    let mut state = 0x2545_f491_u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 40) as f32) / (1u64 << 24) as f32
    };
    let mut positions = Vec::new();
    let mut support = Vec::new();
    for _ in 0..400 {
        positions.push([next(), next(), next()]);
        support.push(0.02 + 0.08 * next());
    }
    (positions, support)
}

/// A gas-only snapshot with smoothing lengths `h`.
fn gas_snapshot(positions: &[[f32; 3]], h: Vec<f32>) -> Snapshot {
    let mut gas = Species::empty(SpeciesKind::Gas);
    gas.positions = positions.to_vec();
    gas.masses = Masses::Uniform(1.0);
    gas.smoothing_lengths = Some(h);
    Snapshot {
        header: Header {
            time: 1.0,
            ..Header::default()
        },
        species: vec![gas],
        source: SourceInfo {
            paths: Vec::new(),
            format: SnapshotFormat::Demo,
            byte_order: None,
            header_bytes: None,
            particles_in_file: 0,
        },
    }
}

fn load(path: &Path) -> Snapshot {
    load_snapshot(path, &LoadOptions::default(), &Progress::none()).expect("reads back")
}

fn render(snapshot: &Snapshot, kernel_support: Option<f32>) -> TauBuffer {
    let camera = Camera::look_at([0.5, 0.5, 3.0], [0.5, 0.5, 0.5], [0.0, 1.0, 0.0], 30.0);
    let mut style = SpeciesStyle::new(SpeciesKind::Gas);
    style.kernel_support = kernel_support;
    let mut settings = RenderSettings::new(96, 80, camera, vec![style]);
    settings.brightness = Brightness::Explicit(1.0);
    settings.min_radius_px = 0.0;
    render_cpu(snapshot, &settings, &Progress::none())
        .expect("render")
        .tau
}

/// max |a − b| / max |a| over every channel.
fn relative_difference(a: &TauBuffer, b: &TauBuffer) -> f64 {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let peak = a.data.iter().fold(0f64, |m, x| m.max(f64::from(x.abs())));
    assert!(peak > 0.0, "an empty frame proves nothing");
    let diff = a
        .data
        .iter()
        .zip(&b.data)
        .fold(0f64, |m, (x, y)| m.max(f64::from((x - y).abs())));
    diff / peak
}

/// Writes `snapshot` as HDF5 and marks it as SWIFT's, naming `kernel` when given.
fn write_swift(path: &Path, snapshot: &Snapshot, kernel: Option<&str>) {
    let options = GadgetWriteOptions {
        plural_smoothing: true,
        ..GadgetWriteOptions::default()
    };
    gadget_hdf5::write(path, snapshot, &options).expect("written");
    let file = hdf5::File::open_rw(path).expect("opens");
    let text = |s: &str| -> VarLenUnicode { s.parse().expect("text") };
    file.create_group("Code")
        .expect("Code")
        .new_attr::<VarLenUnicode>()
        .create("Code")
        .expect("attr")
        .write_scalar(&text("SWIFT"))
        .expect("written");
    if let Some(kernel) = kernel {
        file.create_group("HydroScheme")
            .expect("HydroScheme")
            .new_attr::<VarLenUnicode>()
            .create("Kernel function")
            .expect("attr")
            .write_scalar(&text(kernel))
            .expect("written");
    }
}

#[test]
fn one_gas_distribution_renders_alike_from_every_code() {
    let (positions, support) = distribution();
    let dir = tempfile::tempdir().expect("tempdir");

    let tipsy_path = dir.path().join("gas.tipsy");
    let tipsy_h = support.iter().map(|s| s / 2.0).collect();
    let tipsy_snapshot = gas_snapshot(&positions, tipsy_h);
    write_tipsy(&tipsy_path, &tipsy_snapshot, &TipsyWriteOptions::default()).expect("tipsy");
    let tipsy = load(&tipsy_path);
    assert_eq!(tipsy.header.code, SimCode::Tipsy);
    let reference = render(&tipsy, None);

    let gadget_path = dir.path().join("gas_gadget.hdf5");
    let gadget_snapshot = gas_snapshot(&positions, support.clone());
    gadget_hdf5::write(&gadget_path, &gadget_snapshot, &Default::default()).expect("gadget");
    let gadget = load(&gadget_path);
    assert_eq!(gadget.header.code, SimCode::Gadget4);
    assert_eq!(gadget.header.kernel.support_over_h, 1.0);
    // h/2 is exact in binary, so Gadget's h draws bit for bit like tipsy's.
    assert_eq!(render(&gadget, None).data, reference.data);

    for (name, kernel, gamma) in [
        ("cubic", Some("Cubic spline (M4)"), CUBIC_GAMMA),
        ("assumed", None, CUBIC_GAMMA),
        ("wendland", Some("Wendland C2"), WENDLAND_C2_GAMMA),
    ] {
        let path = dir.path().join(format!("gas_swift_{name}.hdf5"));
        let h = support.iter().map(|s| s / gamma).collect();
        write_swift(&path, &gas_snapshot(&positions, h), kernel);
        let swift = load(&path);
        assert_eq!(swift.header.code, SimCode::Swift, "{name}");
        assert_eq!(swift.header.kernel.support_over_h, gamma, "{name}");
        assert_eq!(swift.header.kernel.assumed, kernel.is_none(), "{name}");
        let d = relative_difference(&reference, &render(&swift, None));
        assert!(d < 1e-6, "{name}: relative τ difference {d}");
        // Drawn with tipsy's rule instead, SWIFT's h gives a visibly different image.
        let wrong = relative_difference(&reference, &render(&swift, Some(2.0)));
        assert!(wrong > 1e-2, "{name}: {wrong}");
    }
}

#[test]
fn kernel_support_override_replaces_the_files_convention() {
    let (positions, support) = distribution();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gas.hdf5");
    let snapshot = gas_snapshot(&positions, support.clone());
    gadget_hdf5::write(&path, &snapshot, &Default::default()).expect("gadget");
    let gadget = load(&path);
    // `2h` draws the file's h as tipsy's: exactly the in-memory snapshot with the same h.
    assert_eq!(
        render(&gadget, Some(2.0)).data,
        render(&snapshot, None).data
    );
    // `h` is the file's own convention here.
    assert_eq!(render(&gadget, Some(1.0)).data, render(&gadget, None).data);
    assert_ne!(render(&gadget, Some(2.0)).data, render(&gadget, None).data);
    // Estimated lengths (no kernel convention) ignore the override.
    assert_eq!(snapshot.species[0].kernel_support, None);
    assert_eq!(
        render(&snapshot, Some(1.0)).data,
        render(&snapshot, None).data
    );
    // A bad factor is one clear error.
    let camera = Camera::look_at([0.5, 0.5, 3.0], [0.5, 0.5, 0.5], [0.0, 1.0, 0.0], 30.0);
    let mut style = SpeciesStyle::new(SpeciesKind::Gas);
    style.kernel_support = Some(f32::NAN);
    let settings = RenderSettings::new(16, 16, camera, vec![style]);
    let e = render_cpu(&gadget, &settings, &Progress::none()).expect_err("NaN support");
    assert!(e.to_string().contains("kernel support NaN"), "{e}");
}
