//! Kernel argument structs, laid out exactly as the C structs of kernels/render_common.cuh.

use super::super::project::{Splat, StyleParams, ViewParams};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// `ViewC`: [`ViewParams`] for the kernels (f64 look-at first, so the layout has no holes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct ViewC {
    lookat: [f64; 3],
    x_hat: [f32; 3],
    y_hat: [f32; 3],
    z_hat: [f32; 3],
    distance: f32,
    perspective: i32,
    scale: f32,
    half_width: f32,
    half_height: f32,
    width_px: i32,
    height_px: i32,
    near_depth: f32,
    far_depth: f32,
    min_radius_px: f32,
    border_px: f32,
}

// SAFETY: plain `repr(C)` data of f64/f32/i32 fields, mirrored by `ViewC` in render_common.cuh.
unsafe impl DeviceRepr for ViewC {}

impl From<&ViewParams> for ViewC {
    fn from(v: &ViewParams) -> Self {
        Self {
            lookat: v.lookat_world,
            x_hat: v.x_hat,
            y_hat: v.y_hat,
            z_hat: v.z_hat,
            distance: v.distance,
            perspective: i32::from(v.perspective),
            scale: v.scale,
            half_width: v.half_width,
            half_height: v.half_height,
            width_px: v.width_px,
            height_px: v.height_px,
            // f64::INFINITY as f32 stays infinite, as in ViewParams.
            near_depth: v.near,
            far_depth: v.far,
            min_radius_px: v.min_radius_px,
            border_px: v.border_px,
        }
    }
}

/// `StyleC`: [`StyleParams`] plus the palette length.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct StyleC {
    has_intensity: i32,
    intensity_log: i32,
    intensity_lo: f32,
    intensity_hi: f32,
    has_colour: i32,
    colour_log: i32,
    colour_lo: f32,
    colour_hi: f32,
    brightness: f32,
    size_factor: f32,
    palette_len: i32,
    pad: i32,
}

// SAFETY: plain `repr(C)` data of f32/i32 fields, mirrored by `StyleC` in render_common.cuh.
unsafe impl DeviceRepr for StyleC {}

impl StyleC {
    /// The kernel form of `style`, whose palette (if any) has `palette_len` stops.
    pub(crate) fn new(style: &StyleParams<'_>) -> Self {
        let (has_intensity, intensity_log, intensity_lo, intensity_hi) = match style.intensity {
            Some(n) => (1, i32::from(n.log), n.lo, n.hi),
            None => (0, 0, 0.0, 0.0),
        };
        let (has_colour, colour_log, colour_lo, colour_hi, palette_len) = match style.colour {
            Some((n, palette)) => (1, i32::from(n.log), n.lo, n.hi, palette.stops.len() as i32),
            None => (0, 0, 0.0, 0.0, 0),
        };
        Self {
            has_intensity,
            intensity_log,
            intensity_lo,
            intensity_hi,
            has_colour,
            colour_log,
            colour_lo,
            colour_hi,
            brightness: style.brightness,
            size_factor: style.size_factor,
            palette_len,
            pad: 0,
        }
    }
}

/// `SplatC`: a [`Splat`] on the device.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SplatC(pub(crate) Splat);

// SAFETY: `Splat` is `repr(C)` with seven f32 fields, mirrored by `SplatC`.
unsafe impl DeviceRepr for SplatC {}
// SAFETY: all-zero bits are a valid `Splat` (zeros).
unsafe impl ValidAsZeroBits for SplatC {}

/// `LargeC`: a large splat and its particle index in the species.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LargeC {
    /// The splat.
    pub(crate) splat: Splat,
    /// Index of the particle in its species (for a deterministic CPU order).
    pub(crate) index: u32,
}

// SAFETY: `repr(C)`: a `Splat` (seven f32) then a u32, mirrored by `LargeC` (32 bytes).
unsafe impl DeviceRepr for LargeC {}
// SAFETY: all-zero bits are a valid value.
unsafe impl ValidAsZeroBits for LargeC {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_c_structs() {
        // Sizes of the C structs in kernels/render_common.cuh (x86-64 / CUDA ABI).
        assert_eq!(std::mem::size_of::<ViewC>(), 104);
        assert_eq!(std::mem::size_of::<StyleC>(), 48);
        assert_eq!(std::mem::size_of::<SplatC>(), 28);
        assert_eq!(std::mem::size_of::<LargeC>(), 32);
    }
}
