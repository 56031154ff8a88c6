//! The viewport on the window's own wgpu device: the device egui draws with (eframe's render
//! state) is shared with the Splotch renderer, so no second device is opened and the frame is
//! drawn where it is shown. The window asks for [`REQUIRED_FEATURES`] where the adapter has them,
//! and for the renderer's [`OPTIONAL_FEATURES`] it has ([`request_float_blending`]) and hands its
//! render state over once ([`share_render_state`]). A frame a renderer leaves on that device is
//! shown as a native egui texture ([`show_texture`]): the image never visits the host.

use crate::backend::{Backend, BackendChoice};
use crate::render::wgpu::{FrameTexture, OPTIONAL_FEATURES, REQUIRED_FEATURES, WgpuContext};
use eframe::egui_wgpu;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The window's render state and the renderer's context on its device, once shared.
struct Shared {
    state: egui_wgpu::RenderState,
    context: WgpuContext,
}

static SHARED: OnceLock<Mutex<Option<Shared>>> = OnceLock::new();

/// What was shared, if anything.
fn shared<T>(read: impl FnOnce(&Shared) -> T) -> Option<T> {
    let slot = SHARED.get()?;
    let guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
    guard.as_ref().map(read)
}

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
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(Shared {
                state: state.clone(),
                context,
            });
        }
        Err(err) => log::info!("the window's wgpu device cannot render particles: {err}"),
    }
}

/// The renderer's context on the window's device, when it was shared (any adapter).
pub fn shared_context() -> Option<WgpuContext> {
    shared(|s| s.context.clone())
}

/// The window's device as the renderer's back-end, when it was shared and is a hardware
/// adapter (a software one renders slower than the CPU back-end).
pub fn shared_backend() -> Option<Backend> {
    let context = shared_context()?;
    (!context.is_software()).then(|| Backend::wgpu(context, BackendChoice::Auto))
}

/// Whether `context` is the window's device as shared ([`shared_context`]), so that its frames
/// can be shown as they are.
pub fn is_window_device(context: &WgpuContext) -> bool {
    shared(|s| s.context.is_same(context)).unwrap_or(false)
}

/// Shows `frame` (on the window's device) under egui texture `id`, or under a new id when
/// `id` is `None`; returns the id, or `None` when no window device was shared.
pub fn show_texture(frame: &FrameTexture, id: Option<egui::TextureId>) -> Option<egui::TextureId> {
    shared(|s| {
        let view = frame.texture().create_view(&Default::default());
        let mut renderer = s.state.renderer.write();
        match id {
            Some(id) => {
                renderer.update_egui_texture_from_wgpu_texture(
                    &s.state.device,
                    &view,
                    wgpu::FilterMode::Linear,
                    id,
                );
                id
            }
            None => {
                renderer.register_native_texture(&s.state.device, &view, wgpu::FilterMode::Linear)
            }
        }
    })
}

/// Forgets texture `id` of [`show_texture`].
pub fn free_texture(id: egui::TextureId) {
    shared(|s| s.state.renderer.write().free_texture(&id));
}

/// Opens a device as the window opens its own (eframe's default configuration with
/// [`request_float_blending`]), without a window, and shares it as the window's: `bench gui`
/// times the window's frames on it.
pub fn open_window_device_headless() -> Result<(), String> {
    let mut config = egui_wgpu::WgpuConfiguration::default();
    request_float_blending(&mut config);
    let instance = pollster::block_on(config.wgpu_setup.new_instance());
    let state = pollster::block_on(egui_wgpu::RenderState::create(
        &config,
        &instance,
        None,
        egui_wgpu::RendererOptions::default(),
    ))
    .map_err(|err| format!("opening a wgpu device as the window does: {err}"))?;
    share_render_state(&state);
    Ok(())
}
