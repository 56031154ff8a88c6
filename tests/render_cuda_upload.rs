//! The resident upload's device-side log10 (src/render/cuda/log10.rs) gives the host's bits:
//! fields spread over every binade (subnormals to 1e38, with zeros, negatives, NaN and
//! infinity) render to the same τ resident (log10 on the device) as streamed (log10 on the
//! host), and match the CPU reference. Ignored here (no GPU); run on the GPU machine with
//! `--ignored`. Fails loudly without a device.

use haloscope::data::{Field, Snapshot, SpeciesKind};
use haloscope::gpu::GpuDevice;
use haloscope::jobs::Progress;
use haloscope::render::synthetic::clustered_snapshot;
use haloscope::render::{
    Bounds, Brightness, Camera, CudaRenderer, CudaTuning, LargeSplats, RenderSettings,
    SpeciesStyle, render_cpu,
};
use std::collections::BTreeMap;
use std::sync::Arc;

fn renderer(tuning: CudaTuning) -> CudaRenderer {
    let device = GpuDevice::open(0).expect("no CUDA device opened: these tests need one");
    CudaRenderer::new(Arc::new(device), tuning).expect("CUDA renderer")
}

/// Values over the whole positive float range from a fixed pseudo-random sequence, with every
/// 61st value one of the awkward ones.
fn spread_values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|i| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let bits = 1 + ((state >> 33) % 0x7F7F_FFFF) as u32;
            match i % 61 {
                0 => 0.0,
                1 => -2.5,
                2 => f32::NAN,
                3 => f32::INFINITY,
                4 => f32::from_bits(1 + i as u32),
                5 => 1.0,
                _ => f32::from_bits(bits),
            }
        })
        .collect()
}

fn snapshot() -> Snapshot {
    let mut snapshot = clustered_snapshot(200_000, 11);
    let species = &mut snapshot.species[0];
    let n = species.positions.len();
    species.fields[0].values = spread_values(n, 3);
    species.fields.push(Field {
        name: "Temperature".to_owned(),
        values: spread_values(n, 5),
        units: BTreeMap::new(),
    });
    snapshot
}

fn settings(snapshot: &Snapshot, colour: bool) -> RenderSettings {
    let bounds = Bounds::of_snapshot(snapshot, &[]).expect("bounds");
    let mut style = SpeciesStyle::new(SpeciesKind::Dark);
    style.size_factor = 0.5;
    style.intensity = Some("Density".into());
    style.intensity_log = true;
    if colour {
        style.colour = Some("Temperature".into());
        style.colour_log = true;
    }
    let mut settings =
        RenderSettings::new(384, 384, Camera::frame_all(&bounds, 384, 384), vec![style]);
    settings.brightness = Brightness::Explicit(1.0);
    settings.min_radius_px = 1.0;
    settings
}

#[test]
#[ignore = "needs an NVIDIA GPU; run on the GPU machine with --ignored"]
fn device_log10_gives_the_host_bits_resident_equal_to_streamed_and_the_cpu() {
    let snapshot = snapshot();
    let gpu = CudaTuning {
        large: LargeSplats::Gpu,
        ..CudaTuning::DEFAULT
    };
    let streamed = CudaTuning {
        chunk_particles: 9_999,
        resident: false,
        ..gpu
    };
    for colour in [false, true] {
        let s = settings(&snapshot, colour);
        let mut resident = renderer(gpu);
        let a = resident
            .render(&snapshot, &s, &Progress::none())
            .expect("resident render");
        assert!(resident.is_resident());
        assert_eq!(
            resident.device_log10(),
            Some(true),
            "the device log10 differs from this host's f32::log10 on the probe values"
        );
        let mut chunked = renderer(streamed);
        let b = chunked
            .render(&snapshot, &s, &Progress::none())
            .expect("streamed render");
        assert_eq!(
            chunked.device_log10(),
            None,
            "streamed frames take no device log"
        );
        assert!(a.tau.data.iter().any(|v| *v > 0.0), "black image");
        assert_eq!(
            a.tau, b.tau,
            "resident (device log10) and streamed τ differ, colour {colour}"
        );
        assert_eq!(a.stats.counts, b.stats.counts);
        let cpu = render_cpu(&snapshot, &s, &Progress::none()).expect("cpu render");
        let (mut diff, mut norm) = (0.0f64, 0.0f64);
        for (x, y) in a.tau.data.iter().zip(&cpu.tau.data) {
            diff += (f64::from(*x) - f64::from(*y)).powi(2);
            norm += f64::from(*y).powi(2);
        }
        let err = (diff / norm).sqrt();
        eprintln!(
            "colour {colour}: counts {:?}, relative L2 vs CPU {err:.3e}",
            a.stats.counts
        );
        assert!(norm > 0.0 && err < 1e-4, "‖τ_cuda − τ_cpu‖/‖τ_cpu‖ = {err}");
        assert_eq!(a.stats.counts, cpu.stats.counts);
    }
}
