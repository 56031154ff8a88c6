//! Tests of [`super::FrameRenderer`] that run everywhere (the CUDA twin: tests/movie_cuda.rs).

use super::*;
use crate::backend::BackendChoice;
use crate::data::SpeciesKind;
use crate::data::demo::demo_snapshot;
use crate::gpu::cuda_available;
use crate::movie::CameraPath;
use crate::movie::presets::{Orbit, orbit};
use crate::render::{Camera, SpeciesStyle};

fn demo_path() -> CameraPath {
    orbit(
        &Orbit {
            center: [0.5, 0.5, 0.5],
            radius: 1.8,
            axis: [0.0, 1.0, 0.0],
            start_direction: [0.0, 0.0, 1.0],
            elevation_deg: 15.0,
            turns: 0.25,
            duration_s: 1.0,
            fov_deg: 45.0,
        },
        0.0,
    )
    .expect("orbit")
}

fn gas_settings() -> RenderSettings {
    let mut style = SpeciesStyle::new(SpeciesKind::Gas);
    style.intensity = Some("Density".into());
    style.intensity_log = true;
    style.colour = style.intensity.clone();
    style.colour_log = true;
    let camera = Camera::look_at([0.0, 0.0, 1.0], [0.0; 3], [0.0, 1.0, 0.0], 45.0);
    RenderSettings::new(48, 32, camera, vec![style])
}

/// The frame a fresh CPU renderer makes at `sample` with an explicit brightness.
fn reference_frame(
    snapshot: &Snapshot,
    sample: &PathSample,
    brightness: f32,
    settings: &RenderSettings,
) -> RgbImage {
    let mut settings = settings.clone();
    settings.camera = sample.pose.to_render_camera();
    settings.brightness = Brightness::Explicit(brightness);
    let output =
        crate::render::render_cpu(snapshot, &settings, &Progress::none()).expect("cpu render");
    output.image(&settings.tone).into_rgb8()
}

#[test]
fn cpu_frames_use_the_first_frames_exposure_and_the_paths_brightness() {
    let snapshot = demo_snapshot(4_000, 1);
    let path = demo_path();
    let first = path.sample(path.start_s());
    let settings = gas_settings();
    let mut renderer = FrameRenderer::new(
        &snapshot,
        settings.clone(),
        &first,
        Backend::cpu(),
        &Progress::none(),
    )
    .expect("renderer");
    assert_eq!(renderer.backend(), BackendKind::Cpu);
    assert_eq!(renderer.fallback_reason(), None);
    assert!(!renderer.is_resident());
    // The base brightness is the auto exposure of the first frame, measured on its own.
    let mut auto = settings.clone();
    auto.camera = first.pose.to_render_camera();
    let expected = crate::render::render_cpu(&snapshot, &auto, &Progress::none())
        .expect("auto")
        .stats
        .tau_scale;
    assert_eq!(renderer.base_brightness(), expected);
    assert!(expected > 0.0);
    let last = path.sample(path.end_s());
    for sample in [&first, &last] {
        let frame = renderer.frame(&snapshot, sample).expect("frame");
        assert_eq!(
            frame,
            reference_frame(&snapshot, sample, expected, &settings)
        );
    }
    // The path's brightness multiplies the base.
    let mut brighter = last;
    brighter.settings.brightness = Some(2.0);
    let frame = renderer.frame(&snapshot, &brighter).expect("frame");
    assert_eq!(
        frame,
        reference_frame(&snapshot, &brighter, 2.0 * expected, &settings)
    );
    assert_ne!(frame, renderer.frame(&snapshot, &last).expect("frame"));
}

#[test]
fn an_explicit_brightness_is_the_base_and_frames_are_eight_bit() {
    let snapshot = demo_snapshot(2_000, 1);
    let path = demo_path();
    let first = path.sample(path.start_s());
    let mut settings = gas_settings();
    settings.brightness = Brightness::Explicit(0.25);
    settings.tone.bits = BitDepth::Sixteen;
    let mut renderer = FrameRenderer::new(
        &snapshot,
        settings.clone(),
        &first,
        Backend::cpu(),
        &Progress::none(),
    )
    .expect("renderer");
    assert_eq!(renderer.base_brightness(), 0.25);
    assert_eq!(renderer.settings().tone.bits, BitDepth::Eight);
    settings.tone.bits = BitDepth::Eight;
    let frame = renderer.frame(&snapshot, &first).expect("frame");
    assert_eq!(frame, reference_frame(&snapshot, &first, 0.25, &settings));
}

#[test]
fn the_backend_choice_is_honoured_or_fails_cleanly() {
    let snapshot = demo_snapshot(2_000, 1);
    let path = demo_path();
    let first = path.sample(path.start_s());
    let open = |choice| {
        let backend = Backend::resolve(choice).map_err(RenderError::from)?;
        FrameRenderer::new(
            &snapshot,
            gas_settings(),
            &first,
            backend,
            &Progress::none(),
        )
    };
    if cuda_available().is_err() {
        let auto = open(BackendChoice::Auto).expect("auto falls back");
        assert_eq!(auto.backend(), BackendKind::Cpu);
        let reason = auto.fallback_reason().expect("a reason");
        assert!(reason.starts_with("no CUDA device ("), "{reason}");
        let err = open(BackendChoice::Cuda).expect_err("no CUDA, yet cuda opened");
        assert!(matches!(err, RenderError::Gpu(_)), "{err}");
        assert!(err.to_string().starts_with("CUDA: "), "{err}");
    } else {
        let cuda = open(BackendChoice::Cuda).expect("cuda");
        assert_eq!(cuda.backend(), BackendKind::Cuda);
        assert!(cuda.is_resident());
    }
    // A bad setting is reported before the renderer starts.
    let mut bad = gas_settings();
    bad.species[0].palette = "no-such-palette".into();
    let err = FrameRenderer::new(&snapshot, bad, &first, Backend::cpu(), &Progress::none())
        .expect_err("bad palette");
    assert!(matches!(err, RenderError::UnknownPalette { .. }), "{err}");
}

#[test]
fn missing_smoothing_lengths_are_filled_once_for_drawn_species_only() {
    let mut snapshot = demo_snapshot(3_000, 1);
    for kind in [SpeciesKind::Gas, SpeciesKind::Dark] {
        assert!(snapshot.species(kind).is_some_and(|s| !s.is_empty()));
    }
    let gas_h = snapshot
        .species(SpeciesKind::Gas)
        .and_then(|s| s.smoothing_lengths.clone())
        .expect("demo gas has smoothing lengths");
    let mut settings = gas_settings();
    settings.species.push(SpeciesStyle::new(SpeciesKind::Dark));
    settings.knn = 8;
    // The demo gives every family smoothing lengths; drop those of dark matter and stars so
    // that they are missing, as in a dark-matter-only simulation file.
    for kind in [SpeciesKind::Dark, SpeciesKind::Star] {
        if let Some(species) = snapshot.species_mut(kind) {
            species.smoothing_lengths = None;
        }
    }
    fill_missing_smoothing_lengths(&mut snapshot, &settings, &Progress::none()).expect("knn");
    let dark = snapshot.species(SpeciesKind::Dark).expect("dark");
    // The demo box is periodic with side 1.
    let expected = knn_smoothing_lengths(&dark.positions, 8, Some(1.0), &Progress::none())
        .expect("reference knn");
    assert_eq!(dark.smoothing_lengths.as_ref(), Some(&expected));
    let gas = snapshot.species(SpeciesKind::Gas).expect("gas");
    assert_eq!(gas.smoothing_lengths.as_ref(), Some(&gas_h));
    let star = snapshot.species(SpeciesKind::Star).expect("star");
    assert!(star.smoothing_lengths.is_none(), "stars are not drawn");
}

#[test]
fn the_renderer_can_move_to_a_worker_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<FrameRenderer>();
}
