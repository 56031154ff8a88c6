//! Device buffers: allocation that reports running out of memory as [`GpuError::OutOfMemory`]
//! (so callers can fall back or shrink), zeroed buffers and byte fills.

use super::GpuError;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DeviceRepr, DriverError, ValidAsZeroBits, sys,
};
use std::sync::Arc;

/// Device memory for `len` elements (at least one, so that every buffer can be passed to a
/// kernel), uninitialised: the caller writes every element before reading it.
pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, GpuError> {
    let bytes = len.max(1) * std::mem::size_of::<T>();
    // SAFETY: the buffer's contents are undefined until written; callers write before reading
    // (each says which kernel or copy does).
    unsafe { stream.alloc::<T>(len.max(1)) }.map_err(|e| out_of_memory_or_driver(e, bytes))
}

/// Device memory for `len` elements, every byte zero.
pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, GpuError> {
    let bytes = len * std::mem::size_of::<T>();
    stream
        .alloc_zeros::<T>(len)
        .map_err(|e| out_of_memory_or_driver(e, bytes))
}

/// Sets every byte of `buffer` to `value` (asynchronously, on `stream`).
pub fn fill_bytes<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    buffer: &mut CudaSlice<T>,
    value: u8,
) -> Result<(), GpuError> {
    use cudarc::driver::DevicePtrMut;
    let bytes = buffer.num_bytes();
    let (ptr, _record) = buffer.device_ptr_mut(stream);
    // SAFETY: ptr points at `bytes` bytes of device memory owned by `buffer`, which outlives the
    // asynchronous memset on `stream` (the guard records the use on the stream).
    unsafe { cudarc::driver::result::memset_d8_async(ptr, value, bytes, stream.cu_stream()) }?;
    Ok(())
}

/// A failed allocation of `bytes`: out of memory is its own, recoverable error.
fn out_of_memory_or_driver(error: DriverError, bytes: usize) -> GpuError {
    match error.0 {
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => GpuError::OutOfMemory {
            requested_bytes: bytes,
        },
        _ => GpuError::Driver(error),
    }
}

/// Maps `bytes` of device memory into the device's memory pool ahead of need and keeps them
/// there: the stream-ordered allocations (`stream.alloc`, which every buffer here uses) then
/// take them without the driver mapping fresh pages, which is most of the first allocations'
/// cost in a new context. The pool no longer hands memory that it holds back to the driver at
/// synchronisation, so call this only in a process that renders and exits. Without
/// stream-ordered allocation on the device, nothing is done.
pub fn reserve_pool(stream: &Arc<CudaStream>, bytes: usize) -> Result<(), GpuError> {
    let context = stream.context();
    if !context.has_async_alloc() || bytes == 0 {
        return Ok(());
    }
    // SAFETY: the device handle is the context's own; the attribute takes a u64 (cuda.h).
    unsafe {
        let pool = cudarc::driver::result::device::get_mem_pool(context.cu_device())?;
        let mut keep = u64::MAX;
        cudarc::driver::result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut keep as *mut u64).cast(),
        )?;
    }
    let block = alloc::<u8>(stream, bytes)?;
    drop(block);
    stream.synchronize()?;
    Ok(())
}

/// Device memory the context's pool holds without handing it out (mapped by [`reserve_pool`]
/// or freed by this process and kept): stream-ordered allocations take it before asking the
/// driver, so it is free to this process although the driver counts it as used.
pub fn pool_idle_bytes(context: &CudaContext) -> Result<usize, GpuError> {
    if !context.has_async_alloc() {
        return Ok(0);
    }
    // SAFETY: the device handle is the context's own.
    let pool = unsafe { cudarc::driver::result::device::get_mem_pool(context.cu_device()) }?;
    let attribute = |attribute| -> Result<u64, GpuError> {
        let mut value = 0u64;
        // SAFETY: `pool` is the device's; both attributes read are a u64 (cuda.h).
        unsafe {
            cudarc::driver::result::mem_pool::get_attribute(
                pool,
                attribute,
                (&mut value as *mut u64).cast(),
            )
        }?;
        Ok(value)
    };
    let reserved = attribute(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?;
    let used = attribute(sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?;
    Ok(usize::try_from(reserved.saturating_sub(used)).unwrap_or(usize::MAX))
}
