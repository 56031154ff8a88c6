//! The CUDA renderer's paths give the same τ: grey (one channel) and coloured frames, both large
//! paths, the wide-border tile pass and the 64-bit-word fallback of the tile sums match the CPU
//! reference; resident (Morton-ordered on the device) and streamed chunked data and
//! Morton/Hilbert-reordered particles match each other bit for bit. Ignored here (no GPU); run
//! on the GPU machine with `--ignored`. Fails loudly without a device.

use haloscope::data::{Snapshot, SpeciesKind};
use haloscope::gpu::GpuDevice;
use haloscope::jobs::Progress;
use haloscope::order::{Curve, reorder_species};
use haloscope::render::synthetic::clustered_snapshot;
use haloscope::render::{
    Bounds, Brightness, Camera, ClassCounts, CudaRenderer, CudaTuning, LargeSplats, RenderSettings,
    SpeciesStyle, TauBuffer, render_cpu,
};
use std::sync::Arc;

fn renderer(tuning: CudaTuning) -> CudaRenderer {
    let device = GpuDevice::open(0).expect("no CUDA device opened: these tests need one");
    CudaRenderer::new(Arc::new(device), tuning).expect("CUDA renderer")
}

fn gpu_tau(r: &mut CudaRenderer, snapshot: &Snapshot, settings: &RenderSettings) -> TauBuffer {
    r.render(snapshot, settings, &Progress::none())
        .expect("cuda render")
        .tau
}

/// ‖τ_cuda − τ_cpu‖ / ‖τ_cpu‖ < 1e-4 and identical class counts; returns the counts.
fn check_against_cpu(
    r: &mut CudaRenderer,
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> ClassCounts {
    let cpu = render_cpu(snapshot, settings, &Progress::none()).expect("cpu render");
    let gpu = r
        .render(snapshot, settings, &Progress::none())
        .expect("cuda render");
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (x, y) in gpu.tau.data.iter().zip(&cpu.tau.data) {
        diff += (f64::from(*x) - f64::from(*y)).powi(2);
        norm += f64::from(*y).powi(2);
    }
    assert!(norm > 0.0, "reference image is black");
    let err = (diff / norm).sqrt();
    eprintln!("counts {:?}, relative L2 {err:.3e}", cpu.stats.counts);
    assert!(err < 1e-4, "‖τ_cuda − τ_cpu‖/‖τ_cpu‖ = {err}");
    assert_eq!(gpu.stats.counts, cpu.stats.counts);
    cpu.stats.counts
}

/// Log-density intensity; a colour field only when `colour`.
fn settings(snapshot: &Snapshot, side: u32, size_factor: f32, colour: bool) -> RenderSettings {
    let bounds = Bounds::of_snapshot(snapshot, &[]).expect("bounds");
    let mut style = SpeciesStyle::new(SpeciesKind::Dark);
    style.size_factor = size_factor;
    style.intensity = Some("Density".into());
    style.intensity_log = true;
    if colour {
        style.colour = style.intensity.clone();
        style.colour_log = true;
    }
    let mut settings = RenderSettings::new(
        side,
        side,
        Camera::frame_all(&bounds, side, side),
        vec![style],
    );
    settings.brightness = Brightness::Explicit(1.0);
    settings
}

/// The defaults with large splats on the GPU (every splat in fixed point: bit-exact between
/// paths).
const GPU: CudaTuning = CudaTuning {
    large: LargeSplats::Gpu,
    ..CudaTuning::DEFAULT
};

/// Streamed through the staging buffers in chunks of 7 777 particles, in file order.
const CHUNKED: CudaTuning = CudaTuning {
    chunk_particles: 7_777,
    resident: false,
    ..GPU
};

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn grey_frames_match_the_cpu_on_both_large_paths() {
    let snapshot = clustered_snapshot(200_000, 7);
    let mut main = renderer(GPU);
    let mut chunked = renderer(CHUNKED);
    let mut cpu_large = renderer(CudaTuning::default());
    // All small (no minimum radius), mixed, medium, medium + large, all large.
    for (size_factor, min_radius) in [
        (0.02f32, 0.0f32),
        (0.05, 1.0),
        (0.2, 1.0),
        (0.5, 1.0),
        (10.0, 1.0),
    ] {
        let mut s = settings(&snapshot, 512, size_factor, false);
        s.min_radius_px = min_radius;
        let counts = check_against_cpu(&mut main, &snapshot, &s);
        // CPU counts: 57970 active at 0.02 without r_min (the rest touch no pixel), all 200000
        // from 0.05 on.
        assert!(counts.active() > 50_000, "{counts:?}");
        let reference = gpu_tau(&mut main, &snapshot, &s);
        assert_eq!(
            gpu_tau(&mut chunked, &snapshot, &s),
            reference,
            "chunked at {size_factor}"
        );
        // Large splats on CPU threads add a float τ: close, not bit-identical.
        check_against_cpu(&mut cpu_large, &snapshot, &s);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn coloured_frames_match_the_cpu_on_both_large_paths() {
    let snapshot = clustered_snapshot(150_000, 9);
    let mut main = renderer(GPU);
    let mut cpu_large = renderer(CudaTuning::default());
    for size_factor in [0.2f32, 1.0, 6.0] {
        let s = settings(&snapshot, 400, size_factor, true);
        check_against_cpu(&mut main, &snapshot, &s);
        check_against_cpu(&mut cpu_large, &snapshot, &s);
    }
}

/// Fixed-point τ does not depend on the order of the additions, so reordering the particles
/// along a space-filling curve (and chunking) leaves every bit of the image unchanged.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn reordered_and_chunked_particles_give_the_same_bits() {
    let snapshot = clustered_snapshot(300_000, 11);
    for colour in [false, true] {
        for size_factor in [0.05f32, 0.3, 3.0] {
            let s = settings(&snapshot, 480, size_factor, colour);
            let mut r = renderer(GPU);
            let reference = gpu_tau(&mut r, &snapshot, &s);
            assert_eq!(gpu_tau(&mut r, &snapshot, &s), reference, "repeated frame");
            for curve in [Curve::Morton, Curve::Hilbert] {
                let mut reordered = snapshot.clone();
                reorder_species(&mut reordered.species[0], curve, 21);
                assert_ne!(
                    reordered.species[0].positions,
                    snapshot.species[0].positions
                );
                let mut r = renderer(GPU);
                assert_eq!(gpu_tau(&mut r, &reordered, &s), reference, "{curve:?}");
            }
            let mut chunked = renderer(CHUNKED);
            assert_eq!(gpu_tau(&mut chunked, &snapshot, &s), reference, "chunked");
        }
    }
}

/// The resident copy, reordered on the device in Morton order, gives the same bits as streamed
/// chunks in file order, on both large paths: with large splats on the CPU the copied-back
/// indices must map to file order, or the CPU's f32 sums would run in another order.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn resident_morton_copy_gives_the_same_bits_as_streamed_file_order_on_both_large_paths() {
    let snapshot = clustered_snapshot(300_000, 5);
    for large in [LargeSplats::Cpu, LargeSplats::Gpu] {
        for (size_factor, colour) in [(0.3f32, false), (3.0, false), (3.0, true)] {
            let s = settings(&snapshot, 480, size_factor, colour);
            let tuning = CudaTuning {
                large,
                ..CudaTuning::default()
            };
            let mut morton = renderer(tuning);
            let out = morton
                .render(&snapshot, &s, &Progress::none())
                .expect("cuda render");
            assert!(morton.is_resident());
            if size_factor > 1.0 {
                assert!(out.stats.counts.large > 0, "{:?}", out.stats.counts);
            }
            let what = format!("{large:?}, size {size_factor}, colour {colour}");
            let mut chunked = renderer(CudaTuning { large, ..CHUNKED });
            assert_eq!(
                gpu_tau(&mut chunked, &snapshot, &s),
                out.tau,
                "chunked, {what}"
            );
            assert_eq!(
                gpu_tau(&mut morton, &snapshot, &s),
                out.tau,
                "repeated, {what}"
            );
        }
    }
    // The Morton renderer still matches the CPU reference with large splats on the CPU.
    let mut r = renderer(CudaTuning::default());
    check_against_cpu(&mut r, &snapshot, &settings(&snapshot, 480, 3.0, false));
}

/// Tile borders of several widths, grey and coloured, with an image side that is not a multiple
/// of the tile: a border wider than a tile (the region reaches two tiles away), a border of
/// 30 px (the coloured medium region, 80² pixels of 28 bytes, just fits the three-part sums),
/// and one of 34 px, where it (88² pixels) no longer fits in shared memory and the tile pass
/// falls back to 64-bit-word sums. Resident and streamed chunks give the same bits.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn tile_borders_and_word_sums_match_the_cpu() {
    let snapshot = clustered_snapshot(200_000, 13);
    let mut reference = renderer(GPU);
    let mut chunked = renderer(CHUNKED);
    for colour in [false, true] {
        for (side, size_factor, border_px) in [
            (500u32, 0.3f32, 8.0f32),
            (480, 1.5, 20.0),
            (512, 6.0, 8.0),
            (500, 1.5, 30.0),
            (500, 1.5, 34.0),
        ] {
            let mut s = settings(&snapshot, side, size_factor, colour);
            s.border_px = border_px;
            let counts = check_against_cpu(&mut reference, &snapshot, &s);
            assert!(counts.medium + counts.large == 200_000, "{counts:?}");
            let tau = gpu_tau(&mut reference, &snapshot, &s);
            let out = chunked
                .render(&snapshot, &s, &Progress::none())
                .expect("cuda render");
            let what =
                format!("colour {colour}, side {side}, size {size_factor}, border {border_px}");
            assert_eq!(out.stats.counts, counts, "{what}");
            assert!(out.tau == tau, "{what}");
        }
    }
}

/// A small grey scene with every class, chunked and resident, for compute-sanitizer (memcheck,
/// racecheck).
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn sanitizer_small_grey_scene() {
    let snapshot = clustered_snapshot(20_000, 3);
    let mut r = renderer(CudaTuning {
        chunk_particles: 4096,
        ..CHUNKED
    });
    // Small and medium splats (no minimum radius), then medium and large (CPU counts: 14874
    // medium, 5126 large).
    let mut small = settings(&snapshot, 200, 0.05, false);
    small.min_radius_px = 0.0;
    let counts = check_against_cpu(&mut r, &snapshot, &small);
    assert!(counts.small > 0, "{counts:?}");
    let counts = check_against_cpu(&mut r, &snapshot, &settings(&snapshot, 200, 2.0, false));
    assert!(counts.medium > 0 && counts.large > 0, "{counts:?}");
    // The resident path: the copy reordered on the device.
    let mut r = renderer(GPU);
    let counts = check_against_cpu(&mut r, &snapshot, &settings(&snapshot, 200, 1.0, false));
    assert!(counts.medium > 0, "{counts:?}");
    assert!(r.is_resident());
}

/// The same scene in colour, for compute-sanitizer: small splats drawn in the classify pass,
/// the coloured medium, wide-border and large kernels.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn sanitizer_small_colour_scene() {
    let snapshot = clustered_snapshot(20_000, 3);
    let mut r = renderer(CudaTuning {
        chunk_particles: 4096,
        ..CHUNKED
    });
    let mut small = settings(&snapshot, 200, 0.05, true);
    small.min_radius_px = 0.0;
    let counts = check_against_cpu(&mut r, &snapshot, &small);
    assert!(counts.small > 0, "{counts:?}");
    let counts = check_against_cpu(&mut r, &snapshot, &settings(&snapshot, 200, 2.0, true));
    assert!(counts.medium > 0 && counts.large > 0, "{counts:?}");
    let mut r = renderer(GPU);
    let counts = check_against_cpu(&mut r, &snapshot, &settings(&snapshot, 200, 1.0, true));
    assert!(counts.medium > 0, "{counts:?}");
    assert!(r.is_resident());
}

/// The medium kernel skips the top 21-bit part of every pixel in a batch of splats none of
/// which can reach 2^42 in fixed point. A second species of 1000 copies with h / 10⁴ (and
/// size × 10⁴: the same discs, 10⁴ × brighter) dominates Σ 1/h, so the fixed-point scale leaves
/// the clustered species' values below 2^41 (no top parts) while the copies' reach 2^50 (top
/// parts): both paths in one frame. The τ matches the CPU's within 1e-4, and streamed chunks
/// give the same bits; grey (third parts in shared memory) and coloured (third parts added to
/// the global τ at once).
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn batches_with_and_without_top_parts_match_the_cpu() {
    let mut snapshot = clustered_snapshot(200_000, 21);
    let dark = &snapshot.species[0];
    let copies = 1000;
    let mut bright = haloscope::data::Species::empty(SpeciesKind::Star);
    bright.positions = dark.positions[..copies].to_vec();
    bright.masses = haloscope::data::Masses::Uniform(1.0);
    let h = dark.smoothing_lengths.as_ref().expect("smoothing lengths");
    bright.smoothing_lengths = Some(h[..copies].iter().map(|h| h * 1e-4).collect());
    snapshot.species.push(bright);
    let mut main = renderer(GPU);
    let mut chunked = renderer(CHUNKED);
    for (size_factor, colour) in [(0.3f32, false), (1.0, false), (0.3, true), (1.0, true)] {
        let mut s = settings(&snapshot, 480, size_factor, colour);
        let mut star = SpeciesStyle::new(SpeciesKind::Star);
        star.size_factor = size_factor * 1e4;
        s.species.push(star);
        let counts = check_against_cpu(&mut main, &snapshot, &s);
        assert!(counts.medium > 100_000, "{counts:?}");
        let reference = gpu_tau(&mut main, &snapshot, &s);
        assert!(
            gpu_tau(&mut chunked, &snapshot, &s) == reference,
            "chunked at {size_factor}, colour {colour}"
        );
    }
}

/// A brightness so small that the fixed-point scale 2^k is beyond the f32 range (k > 127): the
/// RGB kernels then convert weights through the f64 product (render_common.cuh `fixed_of`), as
/// grey ones always do, rather than the f32 one. Grey and coloured frames with small, medium
/// and large splats match the CPU's within 1e-4, and streamed chunks give the same bits.
#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn fixed_point_scales_beyond_f32_match_the_cpu() {
    let snapshot = clustered_snapshot(100_000, 23);
    let mut main = renderer(GPU);
    let mut chunked = renderer(CHUNKED);
    for (size_factor, colour) in [(0.3f32, false), (2.0, false), (0.3, true), (2.0, true)] {
        let mut s = settings(&snapshot, 320, size_factor, colour);
        s.brightness = Brightness::Explicit(1e-30);
        check_against_cpu(&mut main, &snapshot, &s);
        let reference = gpu_tau(&mut main, &snapshot, &s);
        assert!(
            gpu_tau(&mut chunked, &snapshot, &s) == reference,
            "chunked at {size_factor}, colour {colour}"
        );
    }
}
