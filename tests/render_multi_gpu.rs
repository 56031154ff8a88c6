//! One frame over several CUDA devices (render/cuda/multi) against one device: τ and the 8-bit
//! image must be bit-identical, because the partial images are summed in fixed point with one
//! scale. Ignored here (no GPU); run on the GPU machine with `--ignored`. The tests that list
//! one device several times need one GPU; `two_devices_*` need two and fail with fewer.

mod common;

use haloscope::backend::{Backend, BackendChoice};
use haloscope::data::{LoadOptions, Snapshot, SpeciesKind, load_snapshot};
use haloscope::gpu::GpuDevice;
use haloscope::jobs::Progress;
use haloscope::render::cuda::MultiCudaRenderer;
use haloscope::render::synthetic::clustered_snapshot;
use haloscope::render::{
    Bounds, Brightness, Camera, CudaRenderer, CudaTuning, RenderSettings, Renderer,
    RendererOptions, SpeciesStyle,
};
use std::process::Command;
use std::sync::Arc;

fn device(ordinal: usize) -> Arc<GpuDevice> {
    let device = GpuDevice::open(ordinal)
        .unwrap_or_else(|e| panic!("CUDA device {ordinal} did not open ({e}): this test needs it"));
    eprintln!("device {ordinal}: {}", device.info());
    Arc::new(device)
}

/// The scenes: a clustered set at radii from sub-pixel to large splats, grey and colour, auto
/// and explicit exposure; a kNN-smoothed tipsy species; a Gadget gas with log Density.
fn scenes() -> Vec<(String, Snapshot, RenderSettings)> {
    let mut out = Vec::new();
    let clustered = clustered_snapshot(200_001, 5);
    let bounds = Bounds::of_snapshot(&clustered, &[]).expect("bounds");
    for (size_factor, colour, auto) in [
        (0.2f32, true, false),
        (1.5, true, true),
        (1.5, false, false),
        (12.0, true, false),
    ] {
        let mut style = SpeciesStyle::new(SpeciesKind::Dark);
        style.size_factor = size_factor;
        style.intensity = Some("Density".into());
        style.intensity_log = true;
        if colour {
            style.colour = style.intensity.clone();
            style.colour_log = true;
            style.palette = "viridis".into();
        }
        let mut settings =
            RenderSettings::new(400, 300, Camera::frame_all(&bounds, 400, 300), vec![style]);
        if !auto {
            settings.brightness = Brightness::Explicit(1.0);
        }
        out.push((
            format!("clustered size {size_factor} colour {colour} auto {auto}"),
            clustered.clone(),
            settings,
        ));
    }
    for (file, kind, field) in [
        ("snapshots/test4.tbin", SpeciesKind::Dark, None),
        (
            "snapshots/g2_lcdm_gas_snapshot_004.hdf5",
            SpeciesKind::Gas,
            Some("Density"),
        ),
    ] {
        let path = common::shared_data(file);
        let snapshot =
            load_snapshot(&path, &LoadOptions::default(), &Progress::none()).expect("load");
        let bounds = Bounds::of_snapshot(&snapshot, &[kind]).expect("bounds");
        let mut style = SpeciesStyle::new(kind);
        style.intensity = field.map(str::to_owned);
        style.intensity_log = field.is_some();
        style.colour = style.intensity.clone();
        style.colour_log = style.intensity_log;
        style.palette = "viridis".into();
        let settings =
            RenderSettings::new(320, 240, Camera::frame_all(&bounds, 320, 240), vec![style]);
        out.push((file.to_owned(), snapshot, settings));
    }
    out
}

/// τ bits, class counts and the auto-exposed 8-bit image of one frame on `devices` through
/// the [`Renderer`] every face uses.
fn frame_on(
    devices: &[Arc<GpuDevice>],
    tuning: CudaTuning,
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> (Vec<u32>, haloscope::render::ClassCounts, f32, Vec<u8>) {
    let backend = Backend::cuda_devices(devices.to_vec(), BackendChoice::Cuda);
    let mut renderer = Renderer::new(
        backend,
        RendererOptions {
            large: tuning.large,
        },
    )
    .expect("renderer");
    assert_eq!(renderer.cuda_device_count(), devices.len());
    let output = renderer
        .render(snapshot, settings, &Progress::none())
        .expect("render");
    let (image, stats) = renderer
        .render_image(snapshot, settings, &Progress::none())
        .expect("image");
    assert_eq!(stats.counts, output.stats.counts);
    let bits = output.tau.data.iter().map(|v| v.to_bits()).collect();
    (
        bits,
        output.stats.counts,
        output.stats.tau_scale,
        image.into_bytes(),
    )
}

/// Every scene on `devices` equals one device (`one`), τ and image bit for bit.
fn check_equal(one: &Arc<GpuDevice>, devices: &[Arc<GpuDevice>]) {
    for (name, snapshot, settings) in scenes() {
        let tuning = CudaTuning::default();
        let a = frame_on(std::slice::from_ref(one), tuning, &snapshot, &settings);
        let b = frame_on(devices, tuning, &snapshot, &settings);
        eprintln!("{name}: {:?}", a.1);
        assert!(a.1.active() > 1000, "{name}: too few particles drawn");
        assert!(a.0.iter().any(|&v| v != 0), "{name}: black τ");
        assert_eq!(a.1, b.1, "{name}: class counts differ");
        assert_eq!(a.2.to_bits(), b.2.to_bits(), "{name}: exposure differs");
        let differing = a.0.iter().zip(&b.0).filter(|(x, y)| x != y).count();
        assert_eq!(differing, 0, "{name}: {differing} τ values differ");
        assert_eq!(a.3, b.3, "{name}: images differ");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn one_device_listed_twice_or_three_times_equals_one_device() {
    let d = device(0);
    check_equal(&d, &[d.clone(), d.clone()]);
    check_equal(&d, &[d.clone(), d.clone(), d.clone()]);
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn streamed_shares_equal_resident_ones_and_frames_repeat() {
    let d = device(0);
    let snapshot = clustered_snapshot(150_000, 9);
    let bounds = Bounds::of_snapshot(&snapshot, &[]).expect("bounds");
    let mut style = SpeciesStyle::new(SpeciesKind::Dark);
    style.size_factor = 2.0;
    style.colour = Some("Density".into());
    style.colour_log = true;
    let mut settings =
        RenderSettings::new(256, 256, Camera::frame_all(&bounds, 256, 256), vec![style]);
    settings.brightness = Brightness::Explicit(1.0);
    let mut one = CudaRenderer::new(d.clone(), CudaTuning::default()).expect("one");
    let reference = one
        .render(&snapshot, &settings, &Progress::none())
        .expect("one device");
    let streamed = CudaTuning {
        chunk_particles: 7_777,
        resident: false,
        ..CudaTuning::default()
    };
    let mut multi = MultiCudaRenderer::new(&[d.clone(), d.clone()], streamed).expect("multi");
    let a = multi
        .render(&snapshot, &settings, &Progress::none())
        .expect("streamed");
    assert!(!multi.is_resident());
    assert_eq!(
        a.tau, reference.tau,
        "streamed shares differ from one device"
    );
    let mut resident =
        MultiCudaRenderer::new(&[d.clone(), d], CudaTuning::default()).expect("multi");
    let b = resident
        .render(&snapshot, &settings, &Progress::none())
        .expect("resident");
    assert!(resident.is_resident());
    let c = resident
        .render(&snapshot, &settings, &Progress::none())
        .expect("again");
    assert_eq!(
        resident.last_upload_seconds(),
        0.0,
        "second frame re-uploaded"
    );
    assert_eq!(b.tau, reference.tau);
    assert_eq!(c.tau, reference.tau);
}

#[test]
#[ignore = "needs two NVIDIA GPUs; run on the 2-GPU machine with --ignored"]
fn two_devices_equal_one_device_in_either_order() {
    let count = GpuDevice::count().expect("CUDA driver");
    assert!(
        count >= 2,
        "this test needs two CUDA devices, found {count}"
    );
    let (d0, d1) = (device(0), device(1));
    check_equal(&d0, &[d0.clone(), d1.clone()]);
    check_equal(&d1, &[d1.clone(), d0.clone()]);
}

#[test]
#[ignore = "needs two NVIDIA GPUs; run on the 2-GPU machine with --ignored"]
fn two_devices_give_the_cli_the_same_png_and_tau_bytes() {
    let count = GpuDevice::count().expect("CUDA driver");
    assert!(
        count >= 2,
        "this test needs two CUDA devices, found {count}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = common::shared_data("snapshots/g2_lcdm_gas_snapshot_004.hdf5");
    let mut outputs = Vec::new();
    for devices in ["0", "0,1"] {
        let png = dir.path().join(format!("{devices}.png"));
        let tau = dir.path().join(format!("{devices}.npy"));
        let status = Command::new(common::haloscope_bin())
            .args(["render", "--backend", "cuda", "--devices", devices])
            .args(["--width", "300", "--height", "200", "--color", "Density"])
            .arg(&file)
            .arg("--out")
            .arg(&png)
            .arg("--tau-out")
            .arg(&tau)
            .status()
            .expect("run haloscope");
        assert!(status.success(), "render --devices {devices}: {status}");
        let png_only = dir.path().join(format!("{devices}-image.png"));
        let status = Command::new(common::haloscope_bin())
            .args(["render", "--backend", "cuda", "--devices", devices])
            .args(["--width", "300", "--height", "200", "--color", "Density"])
            .arg(&file)
            .arg("--out")
            .arg(&png_only)
            .status()
            .expect("run haloscope");
        assert!(status.success(), "render --devices {devices}: {status}");
        let read = |p: &std::path::Path| std::fs::read(p).expect("output");
        outputs.push((read(&png), read(&tau), read(&png_only)));
    }
    assert_eq!(outputs[0].1, outputs[1].1, "τ .npy bytes differ");
    assert_eq!(outputs[0].0, outputs[1].0, "PNG bytes differ");
    assert_eq!(
        outputs[0].2, outputs[1].2,
        "device-tone-mapped PNG bytes differ"
    );
}
