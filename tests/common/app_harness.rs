//! Helpers shared by the tests that drive the real app through egui_kittest.
//! Included with `#[path = "common/app_harness.rs"] mod app_harness;` by the app tests only.
#![allow(dead_code)]

use egui_kittest::Harness;
use haloscope::app::{
    HaloscopeApp, Pixels, RenderedImage, RendererFactory, ViewRequest, ViewportRenderer,
};
use haloscope::jobs::Progress;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a test waits for a worker (render, FoF, trials, movie) before failing.
pub const WORKER_TIMEOUT: Duration = Duration::from_secs(120);

/// The app, created on the harness's first frame.
pub fn app<'h>(harness: &'h Harness<'_, Option<HaloscopeApp>>) -> &'h HaloscopeApp {
    harness
        .state()
        .as_ref()
        .expect("app created on the first frame")
}

/// The app, mutably.
pub fn app_mut<'h>(harness: &'h mut Harness<'_, Option<HaloscopeApp>>) -> &'h mut HaloscopeApp {
    harness
        .state_mut()
        .as_mut()
        .expect("app created on the first frame")
}

/// Steps frames until `done` holds (workers run on their own threads), failing after
/// [`WORKER_TIMEOUT`].
pub fn step_until(
    harness: &mut Harness<'_, Option<HaloscopeApp>>,
    what: &str,
    done: impl Fn(&HaloscopeApp) -> bool,
) {
    let deadline = Instant::now() + WORKER_TIMEOUT;
    loop {
        harness.step();
        if done(app(harness)) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A renderer for tests only: a fixed gradient whose size follows the request (so snapshot
/// images do not follow the real renderer), after sleeping `delay` (so a render can be slow or
/// cancelled half way).
pub struct GradientRenderer {
    /// How long each render sleeps first.
    pub delay: Duration,
}

impl ViewportRenderer for GradientRenderer {
    fn backend_name(&self) -> String {
        "test".to_owned()
    }

    fn render(&mut self, request: &ViewRequest, _: &Progress) -> Result<RenderedImage, String> {
        std::thread::sleep(self.delay);
        let (w, h) = (request.width_px, request.height_px);
        let mut rgba = Vec::with_capacity((w * h * 4) as usize);
        for y in 0..h {
            for x in 0..w {
                rgba.extend([(255 * x / w) as u8, (255 * y / h) as u8, 96, 255]);
            }
        }
        Ok(test_image(w, h, rgba))
    }
}

/// A test renderer's image: `rgba` in host memory, made by back-end "test" in no time.
pub fn test_image(width_px: u32, height_px: u32, rgba: Vec<u8>) -> RenderedImage {
    RenderedImage {
        width_px,
        height_px,
        pixels: Pixels::Host(rgba),
        backend: "test".to_owned(),
        seconds: 0.0,
        stages: Vec::new(),
        legend: None,
    }
}

/// A factory of [`GradientRenderer`]s that sleep `delay` per render.
pub fn gradient_factory(delay: Duration) -> RendererFactory {
    Arc::new(move || Box::new(GradientRenderer { delay }))
}
