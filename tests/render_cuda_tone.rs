//! The CUDA image path (tone map and auto exposure on the device, only the image downloaded)
//! against the CPU: 8- and 16-bit images within one 8-bit level of the CPU's (per channel),
//! and the device's auto exposure equal bit for bit to the host's on the same τ. Ignored here
//! (no GPU); run on the GPU machine with `--ignored`. Fails loudly when no device opens.

mod common;

use haloscope::backend::{Backend, BackendChoice, BackendKind};
use haloscope::data::{LoadOptions, SpeciesKind, load_snapshot};
use haloscope::gpu::GpuDevice;
use haloscope::jobs::Progress;
use haloscope::render::{
    BitDepth, Bounds, Brightness, Camera, CudaRenderer, CudaTuning, RenderSettings, Renderer,
    RendererOptions, SpeciesStyle, ToneSettings, exposure,
};
use std::sync::Arc;

fn device() -> Arc<GpuDevice> {
    Arc::new(GpuDevice::open(0).expect("no CUDA device opened: these tests need one"))
}

/// The largest per-channel difference, in 8-bit levels, between two images of equal size.
fn max_level_difference(a: &image::DynamicImage, b: &image::DynamicImage) -> f64 {
    let (a, b) = (a.to_rgb32f(), b.to_rgb32f());
    assert_eq!(a.dimensions(), b.dimensions());
    a.as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| f64::from((x - y).abs()) * 255.0)
        .fold(0.0, f64::max)
}

fn settings_for(file: &str, kind: SpeciesKind, field: Option<&str>) -> RenderSettings {
    let snapshot = load(file);
    let bounds = Bounds::of_snapshot(&snapshot, &[kind]).expect("bounds");
    let mut style = SpeciesStyle::new(kind);
    style.intensity = field.map(str::to_owned);
    style.intensity_log = field.is_some();
    style.colour = style.intensity.clone();
    style.colour_log = style.intensity_log;
    style.palette = "viridis".into();
    RenderSettings::new(640, 480, Camera::frame_all(&bounds, 640, 480), vec![style])
}

fn load(file: &str) -> haloscope::data::Snapshot {
    load_snapshot(
        &common::shared_data(file),
        &LoadOptions::default(),
        &Progress::none(),
    )
    .expect("load")
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn device_images_match_the_cpu_within_one_level() {
    let device = device();
    let cuda_backend = Backend::cuda(device, BackendChoice::Cuda);
    let mut cuda = Renderer::new(cuda_backend, RendererOptions::default()).expect("cuda");
    let mut cpu = Renderer::cpu();
    let mut checked = 0;
    for (file, kind, field) in [
        ("snapshots/test4.tbin", SpeciesKind::Dark, None),
        (
            "snapshots/g2_lcdm_gas_snapshot_004.hdf5",
            SpeciesKind::Gas,
            Some("Density"),
        ),
    ] {
        let snapshot = load(file);
        for (brightness, gamma, bits) in [
            (Brightness::default(), 1.0, BitDepth::Eight),
            (Brightness::Explicit(2.0), 0.7, BitDepth::Eight),
            (Brightness::default(), 1.0, BitDepth::Sixteen),
        ] {
            let mut settings = settings_for(file, kind, field);
            settings.brightness = brightness;
            settings.tone = ToneSettings {
                gamma,
                contrast: 1.2,
                bits,
            };
            let (want, want_stats) = cpu
                .render_image(&snapshot, &settings, &Progress::none())
                .expect("cpu");
            let (got, got_stats) = cuda
                .render_image(&snapshot, &settings, &Progress::none())
                .expect("cuda");
            assert_eq!(cuda.kind(), BackendKind::Cuda);
            assert!(
                (got_stats.brightness / want_stats.brightness - 1.0).abs() < 1e-3,
                "{file}: brightness {} vs {}",
                got_stats.brightness,
                want_stats.brightness
            );
            let levels = max_level_difference(&got, &want);
            eprintln!("{file} {brightness:?} {bits:?}: max difference {levels:.3} levels");
            assert!(levels <= 1.0 + 1e-6, "{file}: {levels} levels apart");
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn device_auto_exposure_equals_the_host_on_the_same_tau() {
    let mut r = CudaRenderer::new(device(), CudaTuning::default()).expect("cuda renderer");
    let file = "snapshots/g2_lcdm_gas_snapshot_004.hdf5";
    let snapshot = load(file);
    let settings = settings_for(file, SpeciesKind::Gas, Some("Density"));
    let output = r
        .render(&snapshot, &settings, &Progress::none())
        .expect("render");
    let mut scratch = Vec::new();
    for (percentile, target) in [(99.5, 0.9), (50.0, 0.5), (100.0, 0.99), (0.0, 0.2)] {
        let host = exposure::auto_brightness(&output.tau, percentile, target, &mut scratch);
        let on_device = r.auto_brightness(percentile, target).expect("device");
        assert_eq!(host.to_bits(), on_device.to_bits(), "p {percentile}");
        assert_ne!(host, 1.0);
    }
    // Out-of-range arguments give 1, as on the host.
    assert_eq!(r.auto_brightness(101.0, 0.9).expect("device"), 1.0);
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn device_rgba_equals_the_rgb_image_with_opaque_alpha() {
    let device = device();
    let cuda_backend = Backend::cuda(device, BackendChoice::Cuda);
    let mut cuda = Renderer::new(cuda_backend, RendererOptions::default()).expect("cuda");
    let file = "snapshots/g2_lcdm_gas_snapshot_004.hdf5";
    let snapshot = load(file);
    let mut settings = settings_for(file, SpeciesKind::Gas, Some("Density"));
    settings.tone.gamma = 0.8;
    for extra_scale in [1.0, 2.5] {
        let (rgb, _) = cuda
            .render_image_scaled(&snapshot, &settings, extra_scale, &Progress::none())
            .expect("cuda rgb");
        let (rgba, stats) = cuda
            .render_rgba8_scaled(&snapshot, &settings, extra_scale, &Progress::none())
            .expect("cuda rgba");
        assert_eq!(cuda.kind(), BackendKind::Cuda);
        // Written on the device: no host conversion stage.
        assert!(stats.timings.iter().all(|t| t.stage != "rgba"));
        let rgb = rgb.into_rgb8();
        assert_eq!(rgba.len(), rgb.as_raw().len() / 3 * 4);
        for (pixel, (four, three)) in rgba.chunks_exact(4).zip(rgb.pixels()).enumerate() {
            assert_eq!(four, [three[0], three[1], three[2], 255], "pixel {pixel}");
        }
        assert!(
            rgba.chunks_exact(4).any(|p| p[..3] != [0, 0, 0]),
            "a blank image"
        );
    }
}
