//! Helpers shared by the CUDA friends-of-friends tests (`fof_cuda.rs`, `fof_cuda_catalogue.rs`):
//! the device and the device catalogue's contract against the CPU's.

use haloscope::gpu::GpuDevice;
use haloscope::halo::{BoxFrame, catalogue};

/// Device 0; a device that does not open fails the test.
pub fn device() -> GpuDevice {
    let device = GpuDevice::open(0).expect("these tests need a CUDA device; none opened");
    eprintln!("device: {}", device.info());
    device
}

/// The device catalogue's contract (src/halo/cuda/catalogue.rs): labels, set count, sizes
/// and smallest members identical; masses within a relative 1e-12; centres (minimum image when
/// periodic) and radii within 1e-9 of `scale`; mean velocities within 1e-9 of `speed_scale`
/// (the largest particle velocity component).
pub fn assert_catalogues_agree(
    cpu: &catalogue::Catalogue,
    gpu: &catalogue::Catalogue,
    frame: Option<BoxFrame>,
    scale: f64,
    speed_scale: f64,
) {
    assert_eq!(gpu.n_sets_all_sizes, cpu.n_sets_all_sizes);
    assert!(gpu.labels == cpu.labels, "labels differ");
    assert_eq!(gpu.halos.len(), cpu.halos.len());
    for (k, (g, c)) in gpu.halos.iter().zip(&cpu.halos).enumerate() {
        assert_eq!((g.size, g.min_index), (c.size, c.min_index), "halo {k}");
        assert!(
            (g.mass - c.mass).abs() <= 1e-12 * c.mass.abs(),
            "halo {k}: mass {} vs {}",
            g.mass,
            c.mass
        );
        for a in 0..3 {
            let d = g.com[a] - c.com[a];
            let d = frame.map_or(d, |f| f.min_image(d));
            assert!(
                d.abs() <= 1e-9 * scale,
                "halo {k}: com {:?} vs {:?}",
                g.com,
                c.com
            );
        }
        assert!(
            (g.radius_max - c.radius_max).abs() <= 1e-9 * scale,
            "halo {k}: rmax"
        );
        assert!(
            (g.radius_rms - c.radius_rms).abs() <= 1e-9 * scale,
            "halo {k}: rrms"
        );
        match (g.velocity, c.velocity) {
            (Some(gv), Some(cv)) => {
                for a in 0..3 {
                    assert!(
                        (gv[a] - cv[a]).abs() <= 1e-9 * speed_scale,
                        "halo {k}: velocity {gv:?} vs {cv:?}"
                    );
                }
            }
            (None, None) => {}
            other => panic!("halo {k}: velocity presence differs: {other:?}"),
        }
    }
}
