//! The CPU renderer gives the same τ bits whatever the thread count and whatever the reused
//! buffers held before (no per-frame state leaks into a frame).

use haloscope::data::SpeciesKind;
use haloscope::jobs::Progress;
use haloscope::render::synthetic::clustered_snapshot;
use haloscope::render::{
    Bounds, Brightness, Camera, CpuRenderer, RenderSettings, Renderer, SpeciesStyle, TauBuffer,
    ToneSettings, render_cpu, tone_map,
};

/// Dark matter coloured by log density, explicit brightness, framed on everything.
fn settings(
    snapshot: &haloscope::data::Snapshot,
    w: u32,
    h: u32,
    size_factor: f32,
) -> RenderSettings {
    let bounds = Bounds::of_snapshot(snapshot, &[]).expect("bounds");
    let mut style = SpeciesStyle::new(SpeciesKind::Dark);
    style.size_factor = size_factor;
    style.intensity = Some("Density".into());
    style.intensity_log = true;
    style.colour = style.intensity.clone();
    style.colour_log = true;
    style.palette = "viridis".into();
    let mut s = RenderSettings::new(w, h, Camera::frame_all(&bounds, w, h), vec![style]);
    s.brightness = Brightness::Explicit(1.0);
    s
}

fn render_with_threads(
    threads: usize,
    snapshot: &haloscope::data::Snapshot,
    s: &RenderSettings,
) -> TauBuffer {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    pool.install(|| render_cpu(snapshot, s, &Progress::none()).expect("render"))
        .tau
}

#[test]
fn tau_bits_do_not_depend_on_the_thread_count() {
    // 70 000 particles: three input chunks, so chunks are binned on different threads.
    let snapshot = clustered_snapshot(70_000, 7);
    // Size factors for mostly one-pixel and for few-pixel to many-tile splats; 301×173 leaves
    // partial tiles.
    for size_factor in [0.3, 3.0] {
        let s = settings(&snapshot, 301, 173, size_factor);
        let one = render_with_threads(1, &snapshot, &s);
        assert!(one.data.iter().filter(|v| **v > 0.0).count() > 1000);
        for threads in [2, 3] {
            let many = render_with_threads(threads, &snapshot, &s);
            let same = one
                .data
                .iter()
                .zip(&many.data)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "size factor {size_factor}: {threads} threads differ");
        }
    }
}

#[test]
fn reused_buffers_hold_nothing_over_from_the_last_frame() {
    let snapshot = clustered_snapshot(40_000, 3);
    let big = settings(&snapshot, 300, 200, 3.0);
    let small = settings(&snapshot, 150, 90, 1.0);
    let fresh = render_cpu(&snapshot, &small, &Progress::none())
        .expect("render")
        .tau;
    let mut renderer = CpuRenderer::new();
    // A τ of another size full of junk, then a larger frame, then the small one again.
    let mut tau = TauBuffer::new(7, 5);
    tau.data.fill(f32::NAN);
    renderer
        .render_into(&snapshot, &small, &Progress::none(), &mut tau)
        .expect("render");
    assert_eq!(tau, fresh);
    renderer
        .render_into(&snapshot, &big, &Progress::none(), &mut tau)
        .expect("render");
    assert_eq!((tau.width, tau.height), (300, 200));
    renderer
        .render_into(&snapshot, &small, &Progress::none(), &mut tau)
        .expect("render");
    assert_eq!(tau, fresh);
}

#[test]
fn tau_bits_do_not_depend_on_the_instruction_set() {
    // The hot loops run with AVX2 where the CPU has it; the baseline build must give the same
    // bits (no fused multiply-add anywhere), with intensity, colour and the 8-lane projection.
    use haloscope::render::cpu::Isa;
    let snapshot = clustered_snapshot(30_003, 11);
    for size_factor in [0.3, 3.0] {
        let s = settings(&snapshot, 257, 190, size_factor);
        let mut tau = [TauBuffer::default(), TauBuffer::default()];
        let mut isas = Vec::new();
        for (isa, tau) in [Isa::Baseline, Isa::detect()].into_iter().zip(&mut tau) {
            let mut renderer = CpuRenderer::with_isa(isa);
            isas.push(renderer.isa().name());
            renderer
                .render_into(&snapshot, &s, &Progress::none(), tau)
                .expect("render");
        }
        assert!(tau[0].data.iter().filter(|v| **v > 0.0).count() > 1000);
        let same = tau[0]
            .data
            .iter()
            .zip(&tau[1].data)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "size factor {size_factor}: {isas:?} differ");
    }
}

#[test]
fn hot_tiles_split_across_threads_keep_the_bits() {
    // Clustered data on a 400×300 image (7×5 tiles, the last row partial): with 8 threads the
    // tiles holding the halos cost more than 1/64 of the frame and are drawn as row bands on
    // several threads; one thread never splits. The bits must not change, at one-pixel and at
    // many-pixel radii.
    let snapshot = clustered_snapshot(30_000, 5);
    for size_factor in [0.3, 2.0] {
        let s = settings(&snapshot, 400, 300, size_factor);
        let mut tau = [TauBuffer::default(), TauBuffer::default()];
        let mut split = [0, 0];
        for ((threads, tau), split) in [1, 8].into_iter().zip(&mut tau).zip(&mut split) {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let mut renderer = CpuRenderer::new();
            pool.install(|| renderer.render_into(&snapshot, &s, &Progress::none(), tau))
                .expect("render");
            *split = renderer.splat_profile().split_tiles;
        }
        assert_eq!(split[0], 0);
        assert!(split[1] > 0, "size factor {size_factor}: nothing split");
        assert!(tau[0].data.iter().filter(|v| **v > 0.0).count() > 5_000);
        let same = tau[0]
            .data
            .iter()
            .zip(&tau[1].data)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(
            same,
            "size factor {size_factor}: split tiles changed the bits"
        );
    }
}

#[test]
fn an_image_tone_mapped_as_it_is_drawn_is_the_tone_map_of_tau() {
    // The CPU's 8-bit image under an explicit brightness never makes τ: each tile is
    // tone-mapped as it is drawn. Its bytes must be those of tone_map(τ) for colour and grey
    // frames, any tone settings and τ scale, and a reused renderer.
    let snapshot = clustered_snapshot(70_000, 11);
    let mut renderer = Renderer::cpu();
    let tones = [
        ToneSettings::default(),
        ToneSettings {
            contrast: 1.7,
            ..ToneSettings::default()
        },
        ToneSettings {
            gamma: 0.8,
            ..ToneSettings::default()
        },
    ];
    let mut cases = 0;
    for size_factor in [0.3, 3.0] {
        for grey in [false, true] {
            for (t, tone) in tones.iter().enumerate() {
                let extra_scale = [1.0, 0.37, 4.0][t];
                let mut s = settings(&snapshot, 301, 173, size_factor);
                s.tone = *tone;
                if grey {
                    s.species[0].colour = None;
                }
                let (image, stats) = renderer
                    .render_image_scaled(&snapshot, &s, extra_scale, &Progress::none())
                    .expect("image");
                assert!(stats.timings.iter().all(|t| t.stage != "tone"));
                let tau = render_cpu(&snapshot, &s, &Progress::none())
                    .expect("render")
                    .tau;
                let want = tone_map(&tau, extra_scale, tone).into_rgb8();
                let got = image.into_rgb8();
                assert_eq!(got.dimensions(), want.dimensions());
                let differing = got
                    .as_raw()
                    .iter()
                    .zip(want.as_raw())
                    .filter(|(a, b)| a != b)
                    .count();
                let case = format!("size {size_factor}, grey {grey}, tone {tone:?}");
                assert_eq!(differing, 0, "{case}");
                // A picture, not a blank or saturated one.
                let mut seen = [false; 256];
                got.as_raw()
                    .iter()
                    .for_each(|&v| seen[usize::from(v)] = true);
                assert!(seen.iter().filter(|&&s| s).count() > 20, "{case}");
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 12);
}
