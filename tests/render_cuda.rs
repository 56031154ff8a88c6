//! The CUDA renderer against the CPU reference (DESIGN §4: ‖Δ‖/‖ref‖ < 1e-4 on τ). Ignored
//! here (no GPU); build with `cargo test --release --no-run --test render_cuda` and run on the
//! GPU machine with `--ignored`. Every test fails loudly when no device opens.

mod common;

use haloscope::data::{LoadOptions, Snapshot, SpeciesKind, load_snapshot};
use haloscope::gpu::GpuDevice;
use haloscope::jobs::Progress;
use haloscope::render::synthetic::clustered_snapshot;
use haloscope::render::{
    Bounds, Brightness, Camera, CudaRenderer, CudaTuning, LargeSplats, RenderSettings,
    SpeciesStyle, TauBuffer, ToneSettings, render_cpu,
};
use std::sync::Arc;

fn device() -> Arc<GpuDevice> {
    let device = GpuDevice::open(0).expect("no CUDA device opened: these tests need one");
    eprintln!("device: {}", device.info());
    Arc::new(device)
}

fn renderer(tuning: CudaTuning) -> CudaRenderer {
    CudaRenderer::new(device(), tuning).expect("CUDA renderer")
}

/// ‖a − b‖ / ‖b‖ over every τ value.
fn relative_l2(a: &TauBuffer, b: &TauBuffer) -> f64 {
    assert_eq!((a.width, a.height), (b.width, b.height));
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (x, y) in a.data.iter().zip(&b.data) {
        diff += (f64::from(*x) - f64::from(*y)).powi(2);
        norm += f64::from(*y).powi(2);
    }
    assert!(norm > 0.0, "reference image is black");
    (diff / norm).sqrt()
}

/// Renders on both back-ends, checks τ to 1e-4 and identical class counts; returns the counts.
fn check_against_cpu(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> haloscope::render::ClassCounts {
    let cpu = render_cpu(snapshot, settings, &Progress::none()).expect("cpu render");
    let gpu = r
        .render(snapshot, settings, &Progress::none())
        .expect("cuda render");
    let err = relative_l2(&gpu.tau, &cpu.tau);
    eprintln!("counts {:?}, relative L2 {err:.3e}", cpu.stats.counts);
    assert!(err < 1e-4, "‖τ_cuda − τ_cpu‖/‖τ_cpu‖ = {err}");
    assert_eq!(gpu.stats.counts, cpu.stats.counts);
    assert_eq!(gpu.stats.particles, cpu.stats.particles);
    if matches!(settings.brightness, Brightness::Auto { .. }) {
        let rel = (gpu.stats.tau_scale / cpu.stats.tau_scale - 1.0).abs();
        assert!(
            rel < 1e-3,
            "auto exposure {} vs {}",
            gpu.stats.tau_scale,
            cpu.stats.tau_scale
        );
    }
    cpu.stats.counts
}

fn synthetic_settings(snapshot: &Snapshot, side: u32, size_factor: f32) -> RenderSettings {
    let bounds = Bounds::of_snapshot(snapshot, &[]).expect("bounds");
    let mut style = SpeciesStyle::new(SpeciesKind::Dark);
    style.size_factor = size_factor;
    style.intensity = Some("Density".into());
    style.intensity_log = true;
    style.colour = style.intensity.clone();
    style.colour_log = true;
    let mut settings = RenderSettings::new(
        side,
        side,
        Camera::frame_all(&bounds, side, side),
        vec![style],
    );
    settings.brightness = Brightness::Explicit(1.0);
    settings
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn shared_snapshots_match_the_cpu() {
    let mut r = renderer(CudaTuning::default());
    for (file, kind, field) in [
        ("snapshots/test4.tbin", SpeciesKind::Dark, None),
        (
            "snapshots/g2_lcdm_gas_snapshot_004.hdf5",
            SpeciesKind::Gas,
            Some("Density"),
        ),
        ("snapshots/run581.20000", SpeciesKind::Star, None),
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
            RenderSettings::new(640, 480, Camera::frame_all(&bounds, 640, 480), vec![style]);
        eprintln!("{file}");
        let counts = check_against_cpu(&mut r, &snapshot, &settings);
        assert!(counts.active() > 1000, "{file}: too few particles drawn");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn every_radius_regime_matches_the_cpu() {
    let snapshot = clustered_snapshot(200_000, 7);
    let mut r = renderer(CudaTuning::default());
    // All small: tiny radii and no minimum radius.
    let mut small = synthetic_settings(&snapshot, 512, 0.02);
    small.min_radius_px = 0.0;
    let counts = check_against_cpu(&mut r, &snapshot, &small);
    // Without r_min many of them touch no pixel (inactive); of the rest most are small.
    assert!(counts.small > counts.medium * 3, "{counts:?}");
    // With r_min = 1 (class counts measured with the CPU renderer on this scene): size factor
    // 0.05 mixes small and medium, 0.2 is medium, 0.5 medium and large, 10 all large.
    for (size_factor, check) in [
        (0.05f32, "mixed"),
        (0.2, "medium"),
        (0.5, "medium+large"),
        (10.0, "large"),
    ] {
        let settings = synthetic_settings(&snapshot, 512, size_factor);
        let counts = check_against_cpu(&mut r, &snapshot, &settings);
        let active = counts.active();
        let ok = match check {
            "mixed" => counts.small > active / 20 && counts.medium > active / 2,
            "medium" => counts.medium > active * 99 / 100,
            "medium+large" => counts.medium > active / 2 && counts.large > active / 5,
            _ => counts.large == active,
        };
        assert!(ok, "{check}: {counts:?}");
    }
    // Auto exposure: τ and the chosen brightness agree.
    let mut auto = synthetic_settings(&snapshot, 300, 1.0);
    auto.brightness = Brightness::default();
    check_against_cpu(&mut r, &snapshot, &auto);
}

/// Particles on a lattice stepping by 1/3 px across tile borders (multiples of 16 px) and over
/// every image edge (centres off the image too), with radii in every class.
fn border_scene() -> Snapshot {
    let mut snapshot = clustered_snapshot(10, 1);
    let species = &mut snapshot.species[0];
    species.positions.clear();
    let mut h = Vec::new();
    let mut density = Vec::new();
    // Orthographic-like: camera at z = 10 looking at the origin, 90° fov, 160×96 image:
    // s = 80/10 = 8 px per unit; the image spans x ∈ [−10, 10], y ∈ [−6, 6].
    let mut k = 0u32;
    for iy in -40..=40 {
        for ix in -64..=64 {
            let x = ix as f32 * (10.5 / 64.0);
            let y = iy as f32 * (6.5 / 40.0);
            let class = k % 4;
            k += 1;
            species.positions.push([x, y, 0.0]);
            h.push([0.01, 0.08, 0.4, 1.2][class as usize]);
            density.push(1.0 + (k % 7) as f32);
        }
    }
    species.smoothing_lengths = Some(h);
    species.fields[0].values = density;
    species.masses = haloscope::data::Masses::Uniform(1.0);
    snapshot
}

fn border_settings() -> RenderSettings {
    let camera = Camera::look_at([0.0, 0.0, 10.0], [0.0; 3], [0.0, 1.0, 0.0], 90.0);
    let mut style = SpeciesStyle::new(SpeciesKind::Dark);
    style.intensity = Some("Density".into());
    style.colour = Some("Density".into());
    let mut settings = RenderSettings::new(160, 96, camera, vec![style]);
    settings.brightness = Brightness::Explicit(0.5);
    settings
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn tile_borders_and_image_edges_match_the_cpu() {
    let snapshot = border_scene();
    let settings = border_settings();
    for tuning in [
        CudaTuning::default(),
        CudaTuning {
            large: LargeSplats::Cpu,
            ..CudaTuning::default()
        },
    ] {
        let mut r = renderer(tuning);
        let counts = check_against_cpu(&mut r, &snapshot, &settings);
        assert!(
            counts.small > 0 && counts.medium > 0 && counts.large > 0,
            "{counts:?}"
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn chunked_equals_unchunked_and_frames_are_deterministic() {
    let snapshot = clustered_snapshot(300_000, 11);
    let settings = synthetic_settings(&snapshot, 400, 1.5);
    let mut whole = renderer(CudaTuning::default());
    let a = whole
        .render(&snapshot, &settings, &Progress::none())
        .expect("render");
    assert!(whole.is_resident());
    let b = whole
        .render(&snapshot, &settings, &Progress::none())
        .expect("render");
    assert_eq!(whole.last_upload_seconds(), 0.0, "second frame re-uploaded");
    assert_eq!(a.tau, b.tau, "two frames differ");
    let mut chunked = renderer(CudaTuning {
        chunk_particles: 7_777,
        resident: false,
        ..CudaTuning::default()
    });
    let c = chunked
        .render(&snapshot, &settings, &Progress::none())
        .expect("render");
    assert!(!chunked.is_resident());
    assert_eq!(c.tau, a.tau, "chunked τ differs from unchunked");
    assert_eq!(c.stats.counts, a.stats.counts);
    // A moved camera on resident data still matches the CPU.
    let mut moved = settings.clone();
    moved.camera.position[0] += 0.3;
    check_against_cpu(&mut whole, &snapshot, &moved);
    assert_eq!(whole.last_upload_seconds(), 0.0);
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn gpu_large_path_and_gpu_tone_map_match_the_cpu() {
    let snapshot = clustered_snapshot(100_000, 5);
    let settings = synthetic_settings(&snapshot, 256, 8.0);
    let mut r = renderer(CudaTuning {
        large: LargeSplats::Gpu,
        ..CudaTuning::default()
    });
    let counts = check_against_cpu(&mut r, &snapshot, &settings);
    assert!(counts.large > 0);
    let cpu = render_cpu(&snapshot, &settings, &Progress::none()).expect("cpu");
    r.render_frame(&snapshot, &settings, &Progress::none())
        .expect("frame");
    for tone in [
        ToneSettings::default(),
        ToneSettings {
            gamma: 0.7,
            contrast: 1.2,
            bits: haloscope::render::BitDepth::Sixteen,
        },
    ] {
        let gpu_image = r.download_image(1.0, &tone).expect("image").into_rgb16();
        let cpu_image = cpu.image(&tone).into_rgb16();
        let max_step = gpu_image
            .as_raw()
            .iter()
            .zip(cpu_image.as_raw())
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap_or(0);
        // One 8-bit level is 257 in 16-bit units; τ differs by ~1e-6 relative.
        assert!(max_step <= 257, "tone-mapped images differ by {max_step}");
    }
}

/// A small scene for compute-sanitizer (memcheck and racecheck).
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn sanitizer_small_scene() {
    let snapshot = border_scene();
    let settings = border_settings();
    let mut r = renderer(CudaTuning {
        chunk_particles: 4096,
        resident: false,
        large: LargeSplats::Gpu,
    });
    check_against_cpu(&mut r, &snapshot, &settings);
}

/// Runs everywhere: `auto` renders (on the CPU where no device opens, with the same τ as
/// render_cpu), `cuda` fails with a CUDA error there instead of panicking.
#[test]
fn backend_switch_falls_back_or_fails_cleanly() {
    use haloscope::backend::{Backend, BackendChoice, BackendKind};
    use haloscope::gpu::cuda_available;
    use haloscope::render::{RenderError, Renderer, RendererOptions};
    let snapshot = clustered_snapshot(2_000, 3);
    let settings = synthetic_settings(&snapshot, 64, 1.0);
    let cpu = render_cpu(&snapshot, &settings, &Progress::none()).expect("cpu");
    let render = |choice| {
        let backend = Backend::resolve(choice).map_err(RenderError::from)?;
        let mut renderer = Renderer::new(backend, RendererOptions::default())?;
        let output = renderer.render(&snapshot, &settings, &Progress::none())?;
        Ok::<_, RenderError>((output, renderer.kind()))
    };
    let (auto, backend) = render(BackendChoice::Auto).expect("auto");
    let (explicit_cpu, cpu_backend) = render(BackendChoice::Cpu).expect("cpu");
    assert_eq!(cpu_backend, BackendKind::Cpu);
    assert_eq!(explicit_cpu.tau, cpu.tau);
    if cuda_available().is_err() {
        assert_eq!(backend, BackendKind::Cpu);
        assert_eq!(auto.tau, cpu.tau);
        let err = render(BackendChoice::Cuda).expect_err("no CUDA, yet the cuda back-end rendered");
        assert!(matches!(err, RenderError::Gpu(_)), "{err}");
        assert!(err.to_string().starts_with("CUDA: "), "{err}");
    } else {
        assert!(relative_l2(&auto.tau, &cpu.tau) < 1e-4);
    }
}
