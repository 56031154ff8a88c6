//! Finding a CUDA device without ever letting a missing driver panic.

use super::{GpuError, KernelCache, compile_cubin};
use cudarc::driver::{CudaContext, CudaModule, CudaStream, sys};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Whether both libcuda and libnvrtc can be loaded. Must be checked before any cudarc call:
/// cudarc panics on first use when a library is missing.
pub fn cuda_available() -> Result<(), GpuError> {
    // SAFETY: these only try to dlopen the libraries by name; nothing is called in them.
    if !unsafe { sys::is_culib_present() } {
        return Err(GpuError::NoDriver);
    }
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(GpuError::NoNvrtc);
    }
    Ok(())
}

/// What the device is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Marketing name ("NVIDIA H100 80GB HBM3").
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Device memory in bytes.
    pub total_memory_bytes: usize,
    /// Number of streaming multiprocessors.
    pub multiprocessors: i32,
    /// L2 cache size in bytes.
    pub l2_cache_bytes: i32,
    /// Driver version as CUDA encodes it (13000 = 13.0).
    pub driver_version: i32,
    /// NVRTC version (major, minor).
    pub nvrtc_version: (i32, i32),
}

impl DeviceInfo {
    /// The NVRTC architecture flag value for this device (`sm_90`).
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (sm_{}{}, {:.1} GiB, {} SMs, driver {}.{}, NVRTC {}.{})",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.total_memory_bytes as f64 / (1u64 << 30) as f64,
            self.multiprocessors,
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10,
            self.nvrtc_version.0,
            self.nvrtc_version.1
        )
    }
}

/// An open CUDA device with its stream and compiled kernel modules.
pub struct GpuDevice {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    cache: KernelCache,
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice")
            .field("info", &self.info)
            .finish()
    }
}

impl GpuDevice {
    /// How many CUDA devices the driver lists (0 when there is no driver).
    pub fn count() -> Result<usize, GpuError> {
        cuda_available()?;
        cudarc::driver::result::init()?;
        Ok(CudaContext::device_count()?.max(0) as usize)
    }

    /// Opens device `ordinal`, or says why it cannot.
    pub fn open(ordinal: usize) -> Result<Self, GpuError> {
        cuda_available()?;
        cudarc::driver::result::init()?;
        if CudaContext::device_count()? <= ordinal as i32 {
            return Err(GpuError::NoDevice);
        }
        let context = CudaContext::new(ordinal)?;
        let info = query_info(&context)?;
        let stream = context.default_stream();
        Ok(Self {
            context,
            stream,
            info,
            cache: KernelCache::default_location(),
            modules: Mutex::new(HashMap::new()),
        })
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The driver context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.context
    }

    /// The stream kernels are launched on by default.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Device memory free to this process (the driver's free memory and what the pool holds
    /// unused, [`super::memory::pool_idle_bytes`]) and the total, in bytes.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        let (free, total) = self.context.mem_get_info()?;
        let idle = super::memory::pool_idle_bytes(&self.context)?;
        Ok((free.saturating_add(idle).min(total), total))
    }

    /// The module compiled from `source` (a kernels/*.cu file, named `program` in messages),
    /// compiled to CUBIN for this device on first use and cached on disk and in memory.
    pub fn module(&self, program: &str, source: &str) -> Result<Arc<CudaModule>, GpuError> {
        let mut modules = self
            .modules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(module) = modules.get(program) {
            return Ok(module.clone());
        }
        let key = self.cache.key(source, &self.info);
        let cubin = match self.cache.load(&key) {
            Some(cubin) => cubin,
            None => {
                let cubin = compile_cubin(program, source, &self.info.arch())?;
                // A cache that cannot be written only costs a recompile next time.
                let _ = self.cache.store(&key, &cubin);
                cubin
            }
        };
        let module = self
            .context
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))?;
        modules.insert(program.to_owned(), module.clone());
        Ok(module)
    }
}

fn query_info(context: &Arc<CudaContext>) -> Result<DeviceInfo, GpuError> {
    use sys::CUdevice_attribute::{
        CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    };
    let mut driver_version = 0;
    // SAFETY: the driver library is loaded and initialised; the pointer is to a live i32.
    unsafe { sys::cuDriverGetVersion(&mut driver_version) }.result()?;
    let (mut nvrtc_major, mut nvrtc_minor) = (0, 0);
    // SAFETY: libnvrtc is present (checked by cuda_available); pointers are to live i32s.
    let nvrtc_status =
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut nvrtc_major, &mut nvrtc_minor) };
    if nvrtc_status != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(GpuError::NoNvrtc);
    }
    Ok(DeviceInfo {
        name: context.name()?,
        compute_capability: context.compute_capability()?,
        total_memory_bytes: context.total_mem()?,
        multiprocessors: context.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        l2_cache_bytes: context.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        driver_version,
        nvrtc_version: (nvrtc_major, nvrtc_minor),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On machines without CUDA, opening a device is an error, never a panic.
    #[test]
    fn open_without_cuda_is_an_error_not_a_panic() {
        if cuda_available().is_err() {
            let err = GpuDevice::open(0).expect_err("no driver, yet a device opened");
            assert!(matches!(err, GpuError::NoDriver | GpuError::NoNvrtc));
        } else {
            // A machine with CUDA: the device opens and reports a sane architecture.
            let device = GpuDevice::open(0).expect("CUDA present but device failed to open");
            assert!(device.info().compute_capability.0 >= 3);
        }
    }
}
