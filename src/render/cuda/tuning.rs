//! What a caller may choose about the CUDA renderer ([`CudaTuning`]), and the fixed kernel
//! sizes and variants that every frame uses.
//!
//! The fixed values were chosen by measurement on an H200 (10⁸ particles, 2048², mean radii
//! 0.3–16 px); each comment says what it trades. They are constants, not settings, because no
//! user-facing path needs another value: every variant gives the same τ bits, only speed differs.

use crate::render::options::{LargeSplats, RendererOptions};

/// Choices of the CUDA renderer.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CudaTuning {
    /// Particles per kernel pass (and per upload when streaming); the first size tried when
    /// device memory runs out, halved until the scratch fits.
    pub chunk_particles: usize,
    /// Keep data resident on the device when they fit. False streams every frame through the
    /// pinned staging buffers, the path a frame takes anyway when the data do not fit.
    pub resident: bool,
    /// Where large splats go.
    pub large: LargeSplats,
}

impl CudaTuning {
    /// The defaults: resident data, 2^25-particle chunks, large splats on the GPU.
    pub const DEFAULT: Self = Self {
        chunk_particles: 1 << 25,
        resident: true,
        large: LargeSplats::Gpu,
    };

    /// The defaults with what a face chose in `options`.
    pub fn for_options(options: RendererOptions) -> Self {
        Self {
            large: options.large,
            ..Self::DEFAULT
        }
    }
}

impl Default for CudaTuning {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Smallest chunk tried when device memory runs out.
pub(super) const MIN_CHUNK: usize = 1 << 16;

/// Tile side in pixels of the medium pass (its shared region is the tile plus the borders).
pub(super) const TILE_PX: usize = 16;

/// Threads sharing one splat in the medium pass (a power of two up to 32; the kernel strides a
/// splat's box columns over them).
pub(super) const MEDIUM_LANES: u32 = 8;

/// Threads sharing one splat in the wide-border tile pass of large splats: their boxes span
/// tens of pixels, so bigger splats keep a whole warp busy.
pub(super) const WIDE_LANES: u32 = 32;

/// Medium splats per thread block (a tile with more gets several blocks). At most 2048, which
/// keeps the three-part shared sums exact (kernels/render_medium.cu, RED_SUMS).
pub(super) const SEGMENT: u32 = 2048;

/// Large splats per block of the wide-border tile pass (at most 2048: same sums). Every block
/// zeroes its whole region (84² pixels at the 32 px border) and flushes it with global atomics,
/// and with 256 splats each of its 32 warps fills a quarter of its one batch of 32: longer
/// segments spread both over more splats. Measured on an H200 (10⁸ particles, 2048², R0 = 16,
/// `--large gpu`), the RGB wide pass: 256 → 163.6 ms, 1024 → 144.6 ms, 2048 → 141.3 ms; grey:
/// 256 → 87.5 ms, 2048 → 73.0 ms.
pub(super) const WIDE_SEGMENT: u32 = 2048;

/// Medium splats with R below this many pixels go to the direct atomic kernel with the small
/// ones: their box is a few pixels, where global atomics beat sorting.
pub(super) const DIRECT_CUT_PX: f32 = 1.5;

/// With [`LargeSplats::Gpu`]: large splats with the centre on the image and R below this go to
/// the wide-border tile pass (the border capped by shared memory); the rest to one warp each.
pub(super) const GPU_BORDER_PX: f32 = 32.0;

/// Shared-memory 64-bit sums as two native 32-bit atomics with a carry rather than a 64-bit
/// atomic (a compare-and-swap loop on Hopper); both give the same bits. Used by the small and
/// large kernels and by the 64-bit-word tile passes, except the grey medium pass.
pub(super) const SPLIT_SHARED_ATOMICS: bool = true;

/// The same choice for the medium pass of grey frames, where the 64-bit atomic measured faster.
pub(super) const GREY_MEDIUM_SPLIT_ATOMICS: bool = false;

/// Thread blocks per SM that the grey medium pass's kernel is compiled to fit
/// (`__launch_bounds__(256, 6)`: at most 40 registers, which ptxas meets without spills for
/// the three-part sums). The RGB kernel would spill under that cap, and the wide pass launches
/// 1024-thread blocks, so both keep the compiler's choice.
pub(super) const GREY_MEDIUM_MIN_BLOCKS: u32 = 6;

/// Where small splats (and medium ones below [`DIRECT_CUT_PX`]) are drawn: inside the classify
/// pass, the lanes of a warp that meet on a pixel summing first (one atomic per distinct pixel
/// and channel of a warp), or by a pass of their own (one atomic per pixel and channel of each
/// particle). Measured on an H100, 10⁸ clustered particles at 2048², classify + small in ms:
/// RGB 9.93 → 8.68 at R0 = 0.3 and 17.31 → 15.91 at R0 = 1, grey 3.41 → 5.67 and 5.31 → 8.84
/// (with one value a pixel, the match and tree steps cost more than the atomics they save).
pub(super) const RGB_DIRECT_IN_CLASSIFY: bool = true;

/// The same choice for grey frames.
pub(super) const GREY_DIRECT_IN_CLASSIFY: bool = false;

/// Largest window of the image (pixels) in which a classify block of an RGB frame sums its
/// direct splats in shared memory (24 KiB: three 64-bit values a pixel), each lane adding its
/// own values with shared atomics, before one global atomic per pixel and channel; used where
/// the union of the block's boxes fits and has no more pixels than the boxes together (else
/// the warp merge straight into the global τ). Measured on an H200, 10⁸ particles at 2048²,
/// colour frames, without → with: R0 = 0.3 9.7 → 8.5 ms, R0 = 1 16.9 → 10.1 ms, R0 = 4 and 16
/// unchanged (classify +0.1 ms). The warp merge (match + shuffle tree) before the shared adds
/// made it slower (R0 = 1: 15.7 ms); 512 pixels fit too few blocks (13.5 ms); 1536 measured
/// 9.7 ms against 9.9 ms in the same run, within the noise.
pub(super) const RGB_DIRECT_WINDOW_PX: u32 = 1024;

/// Thread blocks per SM that the RGB medium pass's three-part kernel is compiled to fit
/// (`__launch_bounds__(256, 5)`: at most 48 registers, no spills; its 28-byte pixels leave
/// shared memory for 5 blocks of a 16 px tile with an 8 px border, where the compiler's
/// choice of 56 registers fitted 4).
pub(super) const RGB_MEDIUM_RED_MIN_BLOCKS: u32 = 5;

// The RGB wide pass (kernels/render_wide.cu, WIDE_COL_WORDS) holds a box's column weights in
// three words of 32 lanes: the wide region's side may not exceed 96 px.
const _: () = assert!(TILE_PX + 2 * (GPU_BORDER_PX as usize + 2) <= 96);

// The three-part shared sums are exact only for segments of at most 2^11 splats.
const _: () = assert!(SEGMENT <= 2048 && WIDE_SEGMENT <= 2048);
