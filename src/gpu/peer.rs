//! Direct access between two devices' memories (NVLink or PCIe peer access), so that copies
//! from one device's buffers to another's do not go through host memory.

use super::{GpuDevice, GpuError};
use cudarc::driver::sys;

/// Lets `first`'s context read `other`'s memory directly where the devices can (a no-op for
/// the same device, or where the driver says they cannot: copies then go through the host).
pub fn enable_peer_access(first: &GpuDevice, other: &GpuDevice) -> Result<(), GpuError> {
    let (a, b) = (first.context(), other.context());
    if a.cu_device() == b.cu_device() {
        return Ok(());
    }
    let mut can = 0i32;
    // SAFETY: both handles come from open contexts; `can` is a valid out-pointer.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.cu_device(), b.cu_device()) }.result()?;
    if can == 0 {
        return Ok(());
    }
    a.bind_to_thread()?;
    // SAFETY: `a` is bound to this thread and `b` is an open context.
    let result = unsafe { sys::cuCtxEnablePeerAccess(b.cu_ctx(), 0) };
    match result {
        sys::cudaError_enum::CUDA_SUCCESS
        | sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        other => other.result().map_err(GpuError::from)?,
    }
    // cudarc allocates from each device's memory pool (cuMemAllocAsync), which context peer
    // access does not cover: without pool access the driver stages peer copies through host
    // memory (2.8 ms for 100 MB between two NVLinked H200s). Only speed depends on it.
    for (owner, peer) in [(a, b), (b, a)] {
        if let Err(err) = grant_pool_access(owner.cu_device(), peer.ordinal()) {
            log::warn!(
                "peer access to a device's memory pool refused ({err}): copies go through the host"
            );
        }
    }
    Ok(())
}

/// Lets device `peer` read and write the allocations of `owner`'s current memory pool.
fn grant_pool_access(owner: sys::CUdevice, peer: usize) -> Result<(), GpuError> {
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `owner` is an open device and `pool` a valid out-pointer.
    unsafe { sys::cuDeviceGetMemPool(&mut pool, owner) }.result()?;
    let access = sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: peer as i32,
        },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: `pool` came from the driver above; `access` is one valid descriptor.
    unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }.result()?;
    Ok(())
}
