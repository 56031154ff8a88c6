//! Stable LSD radix sort of (`u64` key, `u32` value) pairs on the device
//! (kernels/sort_scan.cu): per pass, digit counts per tile, their exclusive scan, a stable
//! scatter.

use super::memory::alloc;
use super::scan::{SORT_SCAN_PROGRAM, SORT_SCAN_SOURCE, Scan, TILE};
use super::{BLOCK, GpuDevice, GpuError};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};
use std::sync::Arc;

/// Bits per pass (16 buckets, as `RADIX_BITS` in kernels/sort_scan.cu).
const RADIX_BITS: u32 = 4;

crate::kernel_args! {
    /// `radix_count`: `keys` holds `n` keys; `counts` 16 × `n_tiles` (digit-major); one block
    /// per tile of [`TILE`].
    struct RadixCountArgs<'a> {
        keys: &'a CudaSlice<u64>,
        n: u32,
        shift: u32,
        counts: &'a mut CudaSlice<u32>,
        n_tiles: u32,
    }
}

crate::kernel_args! {
    /// `radix_scatter`: the four key/value arrays hold `n` elements; `offsets` is the exclusive
    /// scan of `radix_count`'s 16 × `n_tiles` counts; one block per tile of [`TILE`].
    struct RadixScatterArgs<'a> {
        keys_in: &'a CudaSlice<u64>,
        values_in: &'a CudaSlice<u32>,
        keys_out: &'a mut CudaSlice<u64>,
        values_out: &'a mut CudaSlice<u32>,
        n: u32,
        shift: u32,
        offsets: &'a CudaSlice<u32>,
        n_tiles: u32,
    }
}

/// The radix sort on one device's stream.
pub struct RadixSort {
    stream: Arc<CudaStream>,
    scan: Scan,
    radix_count: CudaFunction,
    radix_scatter: CudaFunction,
}

impl RadixSort {
    /// Compiles (or loads from the cache) kernels/sort_scan.cu on `device`.
    pub fn load(device: &GpuDevice) -> Result<Self, GpuError> {
        let module = device.module(SORT_SCAN_PROGRAM, SORT_SCAN_SOURCE)?;
        Ok(Self {
            stream: device.stream().clone(),
            scan: Scan::load(device)?,
            radix_count: module.load_function("radix_count")?,
            radix_scatter: module.load_function("radix_scatter")?,
        })
    }

    /// The exclusive scan this sort uses (same module, same stream).
    pub fn scan(&self) -> &Scan {
        &self.scan
    }

    /// Sorts the first `n` (key, value) pairs by the low `key_bits` bits of the keys, stably;
    /// returns the sorted keys and values (the inputs' buffers, or their alternates).
    pub fn sort_pairs(
        &self,
        mut keys: CudaSlice<u64>,
        mut values: CudaSlice<u32>,
        n: u32,
        key_bits: u32,
    ) -> Result<(CudaSlice<u64>, CudaSlice<u32>), GpuError> {
        let stream = &self.stream;
        let len = n as usize;
        let n_tiles = len.div_ceil(TILE);
        let n_tiles32 = n_tiles as u32;
        let buckets = 1usize << RADIX_BITS;
        let mut keys_alt = alloc::<u64>(stream, len)?;
        let mut values_alt = alloc::<u32>(stream, len)?;
        let mut counts = alloc::<u32>(stream, buckets * n_tiles)?;
        let tiles = LaunchConfig {
            grid_dim: (n_tiles32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut shift = 0u32;
        while shift < key_bits {
            let args = RadixCountArgs {
                keys: &keys,
                n,
                shift,
                counts: &mut counts,
                n_tiles: n_tiles32,
            };
            // SAFETY: one block per tile of keys (guarded by i < n); counts holds 16·n_tiles.
            unsafe { super::launch(stream, &self.radix_count, tiles, args) }?;
            let offsets = self.scan.exclusive(&counts, buckets * n_tiles)?;
            let args = RadixScatterArgs {
                keys_in: &keys,
                values_in: &values,
                keys_out: &mut keys_alt,
                values_out: &mut values_alt,
                n,
                shift,
                offsets: &offsets,
                n_tiles: n_tiles32,
            };
            // SAFETY: offsets are the exclusive scan of the tile digit counts, so every element
            // lands on a distinct index below n of the output arrays.
            unsafe { super::launch(stream, &self.radix_scatter, tiles, args) }?;
            std::mem::swap(&mut keys, &mut keys_alt);
            std::mem::swap(&mut values, &mut values_alt);
            shift += RADIX_BITS;
        }
        Ok((keys, values))
    }
}
