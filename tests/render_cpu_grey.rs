//! Grey frames (colour `none` for every species) draw one plane and write it into τ's three
//! channels: τ must have the bits of the three-plane path, for every radius regime, several
//! species, and any thread count.

use haloscope::data::{Snapshot, SpeciesKind};
use haloscope::jobs::Progress;
use haloscope::render::synthetic::clustered_snapshot;
use haloscope::render::{
    Bounds, Brightness, Camera, CpuRenderer, RenderSettings, SpeciesStyle, TauBuffer,
};

/// Intensity by log density, colour `none`, explicit brightness, framed on everything.
fn grey_settings(snapshot: &Snapshot, w: u32, h: u32, size_factor: f32) -> RenderSettings {
    let bounds = Bounds::of_snapshot(snapshot, &[]).expect("bounds");
    let mut style = SpeciesStyle::new(SpeciesKind::Dark);
    style.size_factor = size_factor;
    style.intensity = Some("Density".into());
    style.intensity_log = true;
    let mut s = RenderSettings::new(w, h, Camera::frame_all(&bounds, w, h), vec![style]);
    s.brightness = Brightness::Explicit(1.3);
    s
}

fn render(threads: usize, grey: bool, snapshot: &Snapshot, s: &RenderSettings) -> TauBuffer {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    let mut renderer = CpuRenderer::new();
    renderer.set_grey_frames(grey);
    let mut tau = TauBuffer::default();
    pool.install(|| {
        renderer
            .render_into(snapshot, s, &Progress::none(), &mut tau)
            .expect("render")
    });
    tau
}

/// Index of the first value whose bits differ, if any.
fn first_difference(a: &TauBuffer, b: &TauBuffer) -> Option<usize> {
    assert_eq!((a.width, a.height), (b.width, b.height));
    a.data
        .iter()
        .zip(&b.data)
        .position(|(x, y)| x.to_bits() != y.to_bits())
}

#[test]
fn one_plane_gives_the_bits_of_three() {
    // 40 000 particles: two input chunks. Size factors for one-pixel, few-pixel and
    // many-tile splats (small records, medium and large splats); 301×173 leaves partial tiles.
    let snapshot = clustered_snapshot(40_000, 11);
    for size_factor in [0.3, 3.0, 12.0] {
        let s = grey_settings(&snapshot, 301, 173, size_factor);
        let rgb = render(1, false, &snapshot, &s);
        let lit = rgb.data.iter().filter(|v| **v > 0.0).count();
        assert!(lit > 3000, "size factor {size_factor}: {lit} values lit");
        // Grey: every pixel's three channels are equal.
        assert!(
            rgb.data
                .chunks_exact(3)
                .all(|p| p[0] == p[1] && p[1] == p[2])
        );
        for threads in [1, 3] {
            let grey = render(threads, true, &snapshot, &s);
            assert_eq!(
                first_difference(&rgb, &grey),
                None,
                "size factor {size_factor}, {threads} threads"
            );
        }
    }
}

#[test]
fn two_grey_species_and_a_reused_buffer_give_the_bits_of_three_planes() {
    let mut snapshot = clustered_snapshot(40_000, 5);
    let mut gas = snapshot.species[0].clone();
    gas.kind = SpeciesKind::Gas;
    gas.positions.iter_mut().for_each(|p| p[0] += 0.05);
    snapshot.species.push(gas);
    let mut s = grey_settings(&snapshot, 256, 200, 1.0);
    let mut second = SpeciesStyle::new(SpeciesKind::Gas);
    second.brightness = 0.4;
    second.size_factor = 4.0;
    s.species.push(second);
    let rgb = render(2, false, &snapshot, &s);
    // The same renderer draws a coloured frame first, so reused buffers hold other values.
    let mut renderer = CpuRenderer::new();
    let mut tau = TauBuffer::default();
    let mut coloured = s.clone();
    coloured.species[0].colour = Some("Density".into());
    renderer
        .render_into(&snapshot, &coloured, &Progress::none(), &mut tau)
        .expect("coloured");
    assert!(first_difference(&rgb, &tau).is_some());
    renderer
        .render_into(&snapshot, &s, &Progress::none(), &mut tau)
        .expect("grey");
    assert_eq!(first_difference(&rgb, &tau), None);
    assert!(rgb.data.iter().filter(|v| **v > 0.0).count() > 3000);
}
