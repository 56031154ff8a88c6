//! Exclusive prefix sum of `u32` values on the device (kernels/sort_scan.cu): one tile per block,
//! then the tile totals, scanned recursively, added back.

use super::memory::alloc;
use super::{GpuDevice, GpuError, per_element};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};
use std::sync::Arc;

/// The scan and radix-sort kernels, compiled together as one module.
pub(super) const SORT_SCAN_SOURCE: &str = include_str!("../../kernels/sort_scan.cu");

/// The module name of [`SORT_SCAN_SOURCE`] in the device's kernel cache.
pub(super) const SORT_SCAN_PROGRAM: &str = "sort_scan.cu";

/// Elements per scan or sort tile: `BLOCK` threads × `ITEMS` (8) items, as in
/// kernels/sort_scan.cu.
pub(super) const TILE: usize = 2048;

crate::kernel_args! {
    /// `scan_tiles`: `input` and `out` hold `n` elements, `tile_sums` one per tile of
    /// [`TILE`]; one block per tile.
    struct ScanTilesArgs<'a> {
        input: &'a CudaSlice<u32>,
        out: &'a mut CudaSlice<u32>,
        tile_sums: &'a mut CudaSlice<u32>,
        n: u32,
    }
}

crate::kernel_args! {
    /// `scan_add`: `out` holds `n` elements, `tile_offsets` one per tile of [`TILE`].
    struct ScanAddArgs<'a> {
        out: &'a mut CudaSlice<u32>,
        tile_offsets: &'a CudaSlice<u32>,
        n: u32,
    }
}

/// The exclusive scan on one device's stream.
pub struct Scan {
    stream: Arc<CudaStream>,
    scan_tiles: CudaFunction,
    scan_add: CudaFunction,
}

impl Scan {
    /// Compiles (or loads from the cache) kernels/sort_scan.cu on `device`.
    pub fn load(device: &GpuDevice) -> Result<Self, GpuError> {
        let module = device.module(SORT_SCAN_PROGRAM, SORT_SCAN_SOURCE)?;
        Ok(Self {
            stream: device.stream().clone(),
            scan_tiles: module.load_function("scan_tiles")?,
            scan_add: module.load_function("scan_add")?,
        })
    }

    /// Exclusive prefix sum of the first `n` values of `input`, in a new buffer of `n` (at
    /// least one) elements.
    pub fn exclusive(&self, input: &CudaSlice<u32>, n: usize) -> Result<CudaSlice<u32>, GpuError> {
        let stream = &self.stream;
        let n_tiles = n.div_ceil(TILE).max(1);
        let mut out = alloc::<u32>(stream, n.max(1))?;
        let mut tile_sums = alloc::<u32>(stream, n_tiles)?;
        let n32 = n as u32;
        let tiles = LaunchConfig {
            grid_dim: (n_tiles as u32, 1, 1),
            block_dim: (super::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let args = ScanTilesArgs {
            input,
            out: &mut out,
            tile_sums: &mut tile_sums,
            n: n32,
        };
        // SAFETY: one block per tile, elements guarded by i < n; tile_sums holds n_tiles.
        unsafe { super::launch(stream, &self.scan_tiles, tiles, args) }?;
        if n_tiles > 1 {
            let tile_offsets = self.exclusive(&tile_sums, n_tiles)?;
            let args = ScanAddArgs {
                out: &mut out,
                tile_offsets: &tile_offsets,
                n: n32,
            };
            // SAFETY: element i reads tile_offsets[i / TILE] < n_tiles; guarded by i < n.
            unsafe { super::launch(stream, &self.scan_add, per_element(n, 0), args) }?;
        }
        Ok(out)
    }

    /// The sum of the first `n` values of `input` from their exclusive scan `scan` (as
    /// [`Self::exclusive`] makes it): the last scan value plus the last value, 0 when `n` is 0.
    pub fn total(
        &self,
        input: &CudaSlice<u32>,
        scan: &CudaSlice<u32>,
        n: usize,
    ) -> Result<usize, GpuError> {
        if n == 0 {
            return Ok(0);
        }
        let last_scan = self.stream.clone_dtoh(&scan.slice(n - 1..n))?;
        let last_value = self.stream.clone_dtoh(&input.slice(n - 1..n))?;
        Ok((last_scan[0] + last_value[0]) as usize)
    }
}
