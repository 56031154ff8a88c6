//! An open wgpu device for the renderer: opened here (a hardware adapter, or any adapter when
//! asked for explicitly), or borrowed from the window's eframe render state so that the
//! viewport draws on the device egui draws with.

use super::error::WgpuError;
use std::sync::{Arc, Mutex, PoisonError};

/// What the renderer needs beyond core WebGPU: nothing (compute passes and 32-bit atomics).
pub const REQUIRED_FEATURES: wgpu::Features = wgpu::Features::empty();

/// What the renderer uses when the adapter has it: 64-bit storage atomics for τ, f64 in shaders
/// for the kNN search (src/render/knn/wgpu.rs).
pub const OPTIONAL_FEATURES: wgpu::Features =
    super::pipelines::INT64_ATOMICS.union(crate::render::knn::wgpu::FEATURES);

/// An open wgpu device and queue with what is known about its adapter. Cheap to clone.
#[derive(Clone)]
pub struct WgpuContext {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter's name, driver and kind.
    pub info: wgpu::AdapterInfo,
    /// The device's limits (the adapter's own, as requested).
    pub limits: wgpu::Limits,
    /// The first error the device reported outside an error scope (validation, out of memory,
    /// device lost): wgpu's default handler would panic, this one keeps the message.
    errors: Arc<Mutex<Option<WgpuError>>>,
}

impl std::fmt::Debug for WgpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuContext")
            .field("adapter", &self.info.name)
            .field("backend", &self.info.backend)
            .finish_non_exhaustive()
    }
}

impl WgpuContext {
    /// Opens the first adapter that has [`REQUIRED_FEATURES`]: hardware adapters first; a
    /// software one (lavapipe, `DeviceType::Cpu`) only when `allow_software`.
    pub fn open(allow_software: bool) -> Result<Self, WgpuError> {
        // Vulkan, Metal and DirectX 12 only: GL compute is not on every GL driver, and
        // probing it through EGL prints driver errors on every machine without a display.
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        descriptor.backends = wgpu::Backends::PRIMARY;
        let instance = wgpu::Instance::new(descriptor);
        let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
        if adapters.is_empty() {
            return Err(WgpuError::NoAdapter {
                reason: "no wgpu adapter (no Vulkan, Metal or DirectX 12 driver found)".into(),
            });
        }
        let mut seen = Vec::new();
        let mut ranked: Vec<(u8, wgpu::Adapter)> = Vec::new();
        for adapter in adapters {
            let info = adapter.get_info();
            let software = info.device_type == wgpu::DeviceType::Cpu;
            let has_features = adapter.features().contains(REQUIRED_FEATURES);
            seen.push(format!(
                "{} ({:?}, {:?}{})",
                info.name,
                info.backend,
                info.device_type,
                if has_features {
                    ""
                } else {
                    ", missing features"
                }
            ));
            if !has_features || (software && !allow_software) {
                continue;
            }
            let rank = match (info.device_type, info.backend) {
                (wgpu::DeviceType::DiscreteGpu, _) => 0,
                (wgpu::DeviceType::IntegratedGpu, _) => 1,
                (wgpu::DeviceType::Cpu, _) => 3,
                _ => 2,
            };
            ranked.push((rank, adapter));
        }
        ranked.sort_by_key(|(rank, _)| *rank);
        let Some((_, adapter)) = ranked.into_iter().next() else {
            let wanted = if allow_software {
                "adapter"
            } else {
                "hardware adapter"
            };
            return Err(WgpuError::NoAdapter {
                reason: format!("no usable {wanted} among: {}", seen.join("; ")),
            });
        };
        let info = adapter.get_info();
        let limits = adapter.limits();
        let features = REQUIRED_FEATURES | (adapter.features() & OPTIONAL_FEATURES);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("haloscope render"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|err| WgpuError::NoAdapter {
            reason: format!("{}: the device did not open ({err})", info.name),
        })?;
        Ok(Self::wrap(device, queue, info))
    }

    /// Wraps a device opened elsewhere (eframe's render state). Fails when it lacks
    /// [`REQUIRED_FEATURES`].
    pub fn from_device(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
    ) -> Result<Self, WgpuError> {
        if !device.features().contains(REQUIRED_FEATURES) {
            return Err(WgpuError::MissingFeature {
                adapter: info.name.clone(),
                feature: "the renderer's required features",
            });
        }
        Ok(Self::wrap(device, queue, info))
    }

    fn wrap(device: wgpu::Device, queue: wgpu::Queue, info: wgpu::AdapterInfo) -> Self {
        let errors: Arc<Mutex<Option<WgpuError>>> = Arc::default();
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |err: wgpu::Error| {
            let mut slot = sink.lock().unwrap_or_else(PoisonError::into_inner);
            slot.get_or_insert(WgpuError::from_wgpu(&err));
        }));
        let sink = errors.clone();
        device.set_device_lost_callback(move |_reason, message| {
            let mut slot = sink.lock().unwrap_or_else(PoisonError::into_inner);
            slot.get_or_insert(WgpuError::DeviceLost { message });
        });
        let limits = device.limits();
        Self {
            device,
            queue,
            info,
            limits,
            errors,
        }
    }

    /// Whether `other` is this very context or a clone of it (one wrap of one device: the
    /// window's device as shared with its renderers, say).
    pub fn is_same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.errors, &other.errors)
    }

    /// Whether the adapter is a software one (lavapipe, SwiftShader, WARP).
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// `name (backend)`, as shown next to the back-end.
    pub fn adapter_label(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.backend)
    }

    /// Takes the first error the device reported since the last call.
    pub fn take_error(&self) -> Option<WgpuError> {
        self.errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Waits for the queue to finish, then reports any error the device raised.
    pub fn finish(&self) -> Result<(), WgpuError> {
        let polled = self.device.poll(wgpu::PollType::wait_indefinitely());
        if let Some(err) = self.take_error() {
            return Err(err);
        }
        polled.map_err(|err| WgpuError::DeviceLost {
            message: err.to_string(),
        })?;
        Ok(())
    }
}
