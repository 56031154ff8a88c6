//! The viewport on the window's own wgpu device: the device egui draws with (eframe's render
//! state) is shared with the Splotch renderer, so no second device is opened and the frame is
//! drawn where it is shown. The window asks for [`REQUIRED_FEATURES`] where the adapter has them,
//! and for the renderer's [`OPTIONAL_FEATURES`] it has ([`request_float_blending`]) and hands its render state over once ([`share_render_state`]).

use crate::backend::{Backend, BackendChoice};
use crate::render::wgpu::{OPTIONAL_FEATURES, REQUIRED_FEATURES, WgpuContext};
use eframe::egui_wgpu;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The window's device, once shared.
static SHARED: OnceLock<Mutex<Option<WgpuContext>>> = OnceLock::new();

/// Makes a wgpu configuration's device request include [`REQUIRED_FEATURES`] when the chosen
/// adapter has them (the renderer needs f32 blending; egui does not care), and the renderer's
/// [`OPTIONAL_FEATURES`] the adapter has (64-bit τ atomics, f64 for the kNN search).
pub fn request_float_blending(config: &mut egui_wgpu::WgpuConfiguration) {
    if let egui_wgpu::WgpuSetup::CreateNew(setup) = &mut config.wgpu_setup {
        let base = setup.device_descriptor.clone();
        setup.device_descriptor = Arc::new(move |adapter: &wgpu::Adapter| {
            let mut descriptor = base(adapter);
            if adapter.features().contains(REQUIRED_FEATURES) {
                descriptor.required_features |= REQUIRED_FEATURES;
            }
            descriptor.required_features |= adapter.features() & OPTIONAL_FEATURES;
            descriptor
        });
    }
}

/// The renderer's context on `state`'s device, or why it cannot render there.
pub fn context_of(state: &egui_wgpu::RenderState) -> Result<WgpuContext, String> {
    WgpuContext::from_device(
        state.device.clone(),
        state.queue.clone(),
        state.adapter.get_info(),
    )
    .map_err(|err| err.to_string())
}

/// Keeps the window's device for the viewport's renderers (called once, at start-up).
pub fn share_render_state(state: &egui_wgpu::RenderState) {
    match context_of(state) {
        Ok(context) => {
            let slot = SHARED.get_or_init(Mutex::default);
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(context);
        }
        Err(err) => log::info!("the window's wgpu device cannot render particles: {err}"),
    }
}

/// The window's device as the renderer's back-end, when it was shared and is a hardware
/// adapter (a software one renders slower than the CPU back-end).
pub fn shared_backend() -> Option<Backend> {
    let slot = SHARED.get()?;
    let context = slot
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()?;
    (!context.is_software()).then(|| Backend::wgpu(context, BackendChoice::Auto))
}
