//! NVRTC compilation to CUBIN for the device's exact architecture, with an on-disk cache.
//!
//! CUBIN rather than PTX: PTX from a newer NVRTC does not load on an older driver, while a CUBIN
//! for the device's own architecture always does. Kernels include no CUDA headers, so user
//! machines need only the driver and libnvrtc.

use super::{DeviceInfo, GpuError};
use cudarc::nvrtc::{result, sys};
use std::ffi::{CStr, CString};
use std::path::PathBuf;

/// Compiles `source` (named `program` in messages) to a CUBIN for `arch` (e.g. `sm_90`).
pub fn compile_cubin(program: &str, source: &str, arch: &str) -> Result<Vec<u8>, GpuError> {
    let compile_error = |log: String| GpuError::Compile {
        program: program.to_owned(),
        arch: arch.to_owned(),
        log,
    };
    let c_source = CString::new(source).map_err(|_| compile_error("source contains NUL".into()))?;
    let c_name = CString::new(program).map_err(|_| compile_error("name contains NUL".into()))?;
    let prog = result::create_program(&c_source, Some(&c_name))
        .map_err(|e| compile_error(format!("{e:?}")))?;
    let options = [
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_owned(),
        "--fmad=false".to_owned(),
        "-lineinfo".to_owned(),
    ];
    // SAFETY: `prog` was just created and is destroyed exactly once below.
    let compiled = unsafe { result::compile_program(prog, &options) };
    let outcome = match compiled {
        Ok(()) => cubin_of(prog).map_err(compile_error),
        Err(e) => Err(compile_error(format!("{e:?}\n{}", program_log(prog)))),
    };
    // SAFETY: `prog` is valid and not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    outcome
}

fn program_log(prog: sys::nvrtcProgram) -> String {
    // SAFETY: `prog` is a live program; the log is NUL-terminated by NVRTC.
    match unsafe { result::get_program_log(prog) } {
        Ok(raw) => unsafe { CStr::from_ptr(raw.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
        Err(e) => format!("(no log: {e:?})"),
    }
}

fn cubin_of(prog: sys::nvrtcProgram) -> Result<Vec<u8>, String> {
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; `size` is a live usize.
    let status = unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) };
    if status != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
        return Err(format!("no CUBIN produced ({status:?})"));
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has exactly the size NVRTC reported.
    let status = unsafe { sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()) };
    if status != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("reading the CUBIN failed ({status:?})"));
    }
    Ok(cubin)
}

/// Compiled kernels on disk, keyed by source hash, device and driver/NVRTC versions.
#[derive(Debug, Clone)]
pub struct KernelCache {
    dir: Option<PathBuf>,
}

impl KernelCache {
    /// `$HALOSCOPE_KERNEL_CACHE`, else `$XDG_CACHE_HOME/haloscope/kernels`, else
    /// `~/.cache/haloscope/kernels`; no cache when none can be found.
    pub fn default_location() -> Self {
        let dir = std::env::var_os("HALOSCOPE_KERNEL_CACHE")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME")
                    .map(|d| PathBuf::from(d).join("haloscope/kernels"))
            })
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/haloscope/kernels"))
            });
        Self { dir }
    }

    /// A cache in `dir`.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
        }
    }

    /// The cache key of `source` compiled for `device`.
    pub fn key(&self, source: &str, device: &DeviceInfo) -> String {
        let mut hash = Fnv1a::default();
        hash.write(source.as_bytes());
        hash.write(device.name.as_bytes());
        hash.write(device.arch().as_bytes());
        hash.write(&device.driver_version.to_le_bytes());
        hash.write(&device.nvrtc_version.0.to_le_bytes());
        hash.write(&device.nvrtc_version.1.to_le_bytes());
        format!("{}-{:016x}", device.arch(), hash.finish())
    }

    /// The cached CUBIN for `key`, if any.
    pub fn load(&self, key: &str) -> Option<Vec<u8>> {
        let path = self.dir.as_ref()?.join(format!("{key}.cubin"));
        std::fs::read(path).ok().filter(|bytes| !bytes.is_empty())
    }

    /// Stores `cubin` under `key` (written to a temporary file, then renamed).
    pub fn store(&self, key: &str, cubin: &[u8]) -> Result<(), GpuError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let cache_error = |io_error| GpuError::Cache {
            path: dir.display().to_string(),
            io_error,
        };
        std::fs::create_dir_all(dir).map_err(cache_error)?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(cache_error)?;
        std::io::Write::write_all(&mut temp, cubin).map_err(cache_error)?;
        temp.persist(dir.join(format!("{key}.cubin")))
            .map_err(|e| cache_error(e.error))?;
        Ok(())
    }
}

/// FNV-1a, 64 bit: stable across Rust versions, unlike `DefaultHasher`.
#[derive(Debug)]
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device() -> DeviceInfo {
        DeviceInfo {
            name: "Test GPU".into(),
            compute_capability: (9, 0),
            total_memory_bytes: 1 << 30,
            multiprocessors: 132,
            l2_cache_bytes: 50 << 20,
            driver_version: 13000,
            nvrtc_version: (13, 0),
        }
    }

    #[test]
    fn cache_key_changes_with_source_and_driver() {
        let cache = KernelCache::in_dir("/nonexistent");
        let a = cache.key("kernel A", &device());
        assert_eq!(a, cache.key("kernel A", &device()));
        assert_ne!(a, cache.key("kernel B", &device()));
        let mut newer = device();
        newer.driver_version = 13010;
        assert_ne!(a, cache.key("kernel A", &newer));
        assert!(a.starts_with("sm_90-"));
    }

    #[test]
    fn cache_round_trips_through_disk() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = KernelCache::in_dir(dir.path());
        assert_eq!(cache.load("k"), None);
        cache.store("k", b"cubin bytes").expect("store");
        assert_eq!(cache.load("k").as_deref(), Some(&b"cubin bytes"[..]));
    }
}
