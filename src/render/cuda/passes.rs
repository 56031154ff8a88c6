//! The GPU passes of one frame, in launch order: clear, then per chunk classify (which draws
//! the small splats of RGB frames), tile sort, small (grey frames), medium tiles, wide-border
//! tiles, large (copied back or drawn on the GPU), and once per frame compose. Each pass records CUDA events around its kernels for the stage times.

use super::args::{
    ClassifyArgs, ComposeArgs, LargeArgs, ScatterArgs, SmallArgs, TileArgs, TileScanArgs,
};
use super::buffers::{ImageBuffers, SortBuffers};
use super::kernels::{Kernels, SplatKernels};
use super::launch::WIDE_BLOCK;
use super::params::{LargeC, StyleC, ViewC};
use super::tuning::{DIRECT_CUT_PX, SEGMENT, TILE_PX, WIDE_SEGMENT};
use crate::gpu::{self, EventTimer, GpuError, Mark};
use crate::render::options::LargeSplats;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaView, LaunchConfig};
use std::sync::Arc;

/// Sizes and kernels of one frame, fixed before its first pass.
pub(super) struct Plan<'k> {
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) tiles_x: usize,
    pub(super) n_tiles: usize,
    /// Border of the medium tiles' shared region (the border w, the CPU box's one-pixel
    /// widening and one pixel against f32 rounding).
    pub(super) margin: usize,
    /// The same for the wide-border pass.
    pub(super) wide_margin: usize,
    /// Border of the wide-border pass; 0 when it does not run (large splats on the CPU).
    pub(super) wide_border: f32,
    /// The kernels for the frame's channel count (grey or RGB).
    pub(super) splat: &'k SplatKernels,
    /// The medium and wide tile kernels and their dynamic shared bytes.
    pub(super) medium: (&'k CudaFunction, usize),
    pub(super) wide: (&'k CudaFunction, usize),
    /// Fixed-point scale 2^k.
    pub(super) scale: f64,
}

/// One chunk's particle arrays as the kernels see them (intensity and colour: a 3-float stand-in
/// where the style does not read them).
pub(super) struct ChunkViews<'a> {
    pub(super) pos: CudaView<'a, f32>,
    pub(super) h: CudaView<'a, f32>,
    pub(super) intensity: CudaView<'a, f32>,
    pub(super) colour: CudaView<'a, f32>,
}

/// One chunk of one species: `len` particles from `first` of the species.
pub(super) struct Chunk<'a> {
    pub(super) view: ViewC,
    pub(super) style: StyleC,
    pub(super) arrays: ChunkViews<'a>,
    pub(super) palette: &'a CudaSlice<f32>,
    pub(super) first: usize,
    pub(super) len: usize,
    /// The file index of each device particle when the resident copy was reordered.
    pub(super) perm: Option<&'a CudaSlice<u32>>,
}

/// What every pass of a frame works on.
pub(super) struct Passes<'a> {
    pub(super) stream: &'a Arc<CudaStream>,
    pub(super) kernels: &'a Kernels,
    pub(super) plan: Plan<'a>,
    pub(super) sort: &'a mut SortBuffers,
    pub(super) image: &'a mut ImageBuffers,
    pub(super) timer: EventTimer,
}

impl Passes<'_> {
    fn mark(&self) -> Result<Mark, GpuError> {
        EventTimer::mark(self.stream)
    }

    /// Zeroes the fixed-point τ the frame uses and the class counts.
    pub(super) fn clear(&mut self) -> Result<(), GpuError> {
        let t0 = self.mark()?;
        let channels = self.plan.splat.channels as usize;
        let used_fixed = self.plan.width * self.plan.height * channels;
        self.stream
            .memset_zeros(&mut self.image.tau_fixed.slice_mut(0..used_fixed))?;
        self.stream.memset_zeros(&mut self.sort.class_count)?;
        let t1 = self.mark()?;
        self.timer.stage("clear", &t0, &t1);
        Ok(())
    }

    /// (2) One thread per particle: key (tile, small, large, inactive), tile histogram, class
    /// counts; and, where the kernels have no small pass, (4) the small splats (and medium ones
    /// below the direct cut) straight into τ with atomics, while the particle is at hand.
    /// Returns the pass's end.
    pub(super) fn classify(&mut self, c: &Chunk<'_>) -> Result<Mark, GpuError> {
        let e0 = self.mark()?;
        self.stream.memset_zeros(&mut self.sort.tile_count)?;
        self.stream.memset_zeros(&mut self.sort.large_count)?;
        let p = &self.plan;
        let args = ClassifyArgs {
            view: c.view,
            style: c.style,
            pos: c.arrays.pos.slice(..),
            h: c.arrays.h.slice(..),
            intensity: c.arrays.intensity.slice(..),
            colour: c.arrays.colour.slice(..),
            palette: c.palette,
            n: c.len as u32,
            tile_px: TILE_PX as i32,
            tiles_x: p.tiles_x as i32,
            n_tiles: p.n_tiles as u32,
            direct_cut_px: DIRECT_CUT_PX,
            gpu_border_px: p.wide_border,
            scale: p.scale,
            keys: &mut self.sort.keys,
            tile_count: &mut self.sort.tile_count,
            class_count: &mut self.sort.class_count,
            tau_fixed: &mut self.image.tau_fixed,
        };
        // SAFETY: the views hold `len` particles (3·len positions); keys hold ≥ len entries,
        // tile_count 2·n_tiles + 1; every tile key written is < 2·n_tiles (centre on the
        // image); τ writes are clamped to the W×H image (`channels`·W·H ≤ 3·W·H entries, the
        // kernel compiled for `channels`); blocks of BLOCK threads, whole warps.
        unsafe { gpu::launch(self.stream, &p.splat.classify, per_particle(c), args) }?;
        let e1 = self.mark()?;
        self.timer.stage("classify", &e0, &e1);
        Ok(e1)
    }

    /// (5a) Counting sort by tile: the scan, then the scatter (which also compacts the large
    /// splats).
    pub(super) fn sort(&mut self, c: &Chunk<'_>, start: &Mark) -> Result<Mark, GpuError> {
        let n_tiles = self.plan.n_tiles as u32;
        let args = TileScanArgs {
            tile_count: &self.sort.tile_count,
            n_tiles: 2 * n_tiles,
            segment: SEGMENT,
            wide_from: n_tiles,
            wide_segment: WIDE_SEGMENT,
            tile_start: &mut self.sort.tile_start,
            cursor: &mut self.sort.cursor,
            seg_start: &mut self.sort.seg_start,
        };
        let one_block = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: one block of 1024 threads; the four arrays hold 2·n_tiles + 1 entries.
        unsafe { gpu::launch(self.stream, &self.kernels.tile_scan, one_block, args) }?;
        let args = ScatterArgs {
            view: c.view,
            style: c.style,
            pos: c.arrays.pos.slice(..),
            h: c.arrays.h.slice(..),
            intensity: c.arrays.intensity.slice(..),
            colour: c.arrays.colour.slice(..),
            palette: c.palette,
            n: c.len as u32,
            index_base: c.first as u32,
            keys: &self.sort.keys,
            cursor: &mut self.sort.cursor,
            sorted: &mut self.sort.sorted,
            large: &mut self.sort.large,
            large_count: &mut self.sort.large_count,
            perm: c.perm.unwrap_or(&self.sort.dummy_u32),
            has_perm: i32::from(c.perm.is_some()),
        };
        // SAFETY: cursor slots stay inside each tile's range (counts from the histogram of
        // the same keys); sorted and large hold `capacity` ≥ len entries; perm (when
        // has_perm) holds the resident species' n ≥ first + len entries.
        unsafe { gpu::launch(self.stream, &self.kernels.scatter, per_particle(c), args) }?;
        let e2 = self.mark()?;
        self.timer.stage("sort", start, &e2);
        Ok(e2)
    }

    /// (4) Small splats (and medium ones below the direct cut) straight into τ with atomics,
    /// where classify did not draw them; returns the pass's end, None when it did.
    pub(super) fn small(&mut self, c: &Chunk<'_>, start: &Mark) -> Result<Option<Mark>, GpuError> {
        let Some(small) = &self.plan.splat.small else {
            return Ok(None);
        };
        let args = SmallArgs {
            view: c.view,
            style: c.style,
            pos: c.arrays.pos.slice(..),
            h: c.arrays.h.slice(..),
            intensity: c.arrays.intensity.slice(..),
            colour: c.arrays.colour.slice(..),
            palette: c.palette,
            n: c.len as u32,
            keys: &self.sort.keys,
            scale: self.plan.scale,
            tau_fixed: &mut self.image.tau_fixed,
        };
        // SAFETY: writes only pixels clamped to the W×H image (`channels`·W·H ≤ 3·W·H
        // entries, the kernel compiled for `channels`).
        unsafe { gpu::launch(self.stream, small, per_particle(c), args) }?;
        let e3 = self.mark()?;
        self.timer.stage("small", start, &e3);
        Ok(Some(e3))
    }

    /// (5b) The medium tiles in shared memory, one block per (tile, segment).
    pub(super) fn medium(&mut self, c: &Chunk<'_>, start: &Mark) -> Result<Mark, GpuError> {
        let p = &self.plan;
        let blocks = p.n_tiles + c.len.div_ceil(SEGMENT as usize);
        let args = TileArgs {
            sorted: &self.sort.sorted,
            tile_start: &self.sort.tile_start,
            seg_start: &self.sort.seg_start,
            tile_base: 0,
            n_tiles: p.n_tiles as u32,
            segment: SEGMENT,
            tile_px: TILE_PX as i32,
            tiles_x: p.tiles_x as i32,
            margin: p.margin as i32,
            width: p.width as i32,
            height: p.height as i32,
            scale: p.scale,
            tau_fixed: &mut self.image.tau_fixed,
        };
        let (function, shared) = p.medium;
        // SAFETY: blocks beyond seg_start[n_tiles] return at once; shared memory holds the
        // (tile + 2·margin)² region of `channels` sums; global writes are clamped to the image.
        unsafe {
            gpu::launch(
                self.stream,
                function,
                gpu::blocks(blocks as u32, shared),
                args,
            )
        }?;
        let e4 = self.mark()?;
        self.timer.stage("medium", start, &e4);
        Ok(e4)
    }

    /// The wide-border tiles: large splats with the centre on the image and R below the wide
    /// border (large splats on the GPU only). The launch covers exactly the wide segments, whose
    /// count comes back on the `copy` stream (which waits only for the scan, so the small and
    /// medium passes queued before keep the device busy meanwhile): a bound of one block per
    /// tile and per wide segment of particles left about 4·10^5 empty 1024-thread blocks at 10^8
    /// particles, about 1 ms even when no splat is wide.
    pub(super) fn wide(&mut self, copy: &Arc<CudaStream>, start: &Mark) -> Result<(), GpuError> {
        let n = self.plan.n_tiles;
        let first = copy.clone_dtoh(&self.sort.seg_start.slice(n..n + 1))?;
        let last = copy.clone_dtoh(&self.sort.seg_start.slice(2 * n..2 * n + 1))?;
        let blocks = match (first.first(), last.first()) {
            (Some(&a), Some(&b)) => b.saturating_sub(a) as usize,
            _ => 0,
        };
        if blocks == 0 {
            let e5 = self.mark()?;
            self.timer.stage("wide_tiles", start, &e5);
            return Ok(());
        }
        let p = &self.plan;
        let args = TileArgs {
            sorted: &self.sort.sorted,
            tile_start: &self.sort.tile_start,
            seg_start: &self.sort.seg_start,
            tile_base: p.n_tiles as u32,
            n_tiles: p.n_tiles as u32,
            segment: WIDE_SEGMENT,
            tile_px: TILE_PX as i32,
            tiles_x: p.tiles_x as i32,
            margin: p.wide_margin as i32,
            width: p.width as i32,
            height: p.height as i32,
            scale: p.scale,
            tau_fixed: &mut self.image.tau_fixed,
        };
        let (function, shared) = p.wide;
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (WIDE_BLOCK, 1, 1),
            shared_mem_bytes: shared as u32,
        };
        // SAFETY: as the medium pass, over keys n_tiles..2·n_tiles with the wide margin
        // (shared memory sized for it; 1024 threads, a multiple of the lanes).
        unsafe { gpu::launch(self.stream, function, cfg, args) }?;
        let e5 = self.mark()?;
        self.timer.stage("wide_tiles", start, &e5);
        Ok(())
    }

    /// (3) The chunk's large splats: their count comes back on the `copy` stream (which waits
    /// only for the scatter); then either the list comes back too, tagged with `species`, for
    /// the CPU threads, or one warp per splat draws them on the GPU. `start`: the medium pass's
    /// end.
    pub(super) fn large(
        &mut self,
        copy: &Arc<CudaStream>,
        path: LargeSplats,
        start: &Mark,
        (species, cpu_list): (usize, &mut Vec<(usize, LargeC)>),
    ) -> Result<(), GpuError> {
        let count = copy
            .clone_dtoh(&self.sort.large_count)?
            .first()
            .copied()
            .unwrap_or(0) as usize;
        if count == 0 {
            return Ok(());
        }
        match path {
            LargeSplats::Cpu => {
                let list = copy.clone_dtoh(&self.sort.large.slice(0..count))?;
                // The scatter wrote file-order indices (also for a Morton-ordered resident
                // copy), so the CPU sums the large splats in the same order as when streaming.
                cpu_list.extend(list.into_iter().map(|l| (species, l)));
            }
            LargeSplats::Gpu => {
                let p = &self.plan;
                let args = LargeArgs {
                    large: &self.sort.large,
                    first: 0,
                    n: count as u32,
                    width: p.width as i32,
                    height: p.height as i32,
                    scale: p.scale,
                    tau_fixed: &mut self.image.tau_fixed,
                };
                // SAFETY: one warp per entry of the `count` compacted large splats; writes
                // clamped to the image.
                let cfg = gpu::per_element(count * 32, 0);
                unsafe { gpu::launch(self.stream, &p.splat.large, cfg, args) }?;
                let e5 = self.mark()?;
                self.timer.stage("large_gpu", start, &e5);
            }
        }
        Ok(())
    }

    /// (6) τ = fixed-point τ·2^-k (+ the CPU threads' τ when `has_cpu`).
    pub(super) fn compose(&mut self, has_cpu: bool, inv_scale: f64) -> Result<(), GpuError> {
        let c0 = self.mark()?;
        let n_values = (self.plan.width * self.plan.height * 3) as u64;
        let args = ComposeArgs {
            tau_fixed: &self.image.tau_fixed,
            tau_cpu: &self.image.tau_cpu,
            has_cpu: i32::from(has_cpu),
            channels: self.plan.splat.channels as i32,
            n: n_values,
            inv_scale,
            tau: &mut self.image.tau,
        };
        // SAFETY: all three buffers hold n_values entries (a grey frame reads tau_fixed[i / 3]);
        // tau_cpu is read only when it was filled this frame (has_cpu).
        let cfg = gpu::per_element(n_values as usize, 0);
        unsafe { gpu::launch(self.stream, &self.kernels.compose, cfg, args) }?;
        let c1 = self.mark()?;
        self.timer.stage("compose", &c0, &c1);
        Ok(())
    }
}

/// One thread per particle of the chunk.
fn per_particle(c: &Chunk<'_>) -> LaunchConfig {
    gpu::per_element(c.len, 0)
}
