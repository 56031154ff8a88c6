//! The layout of one frame on the device: the image's tiles (where a side exceeds the
//! renderer's tile limit), each chunk's view uniform, the fixed-point exponent, and the screen
//! tiles' list offsets and bands that the splat passes (`draw.rs`) read.

use super::WgpuRenderer;
use super::data::palette_stops;
use super::pipelines::TILE;
use crate::render::palette::Palette;
use crate::render::project::ViewParams;
use crate::render::{RenderError, SpeciesStyle};
use wgpu::util::DeviceExt;

/// Bytes of one pixel's fixed-point τ: three channels of (lo, hi) u32 words.
pub(crate) const TAU_PIXEL_BYTES: u64 = 24;
/// Bytes of one particle's splat record (two vec4).
pub(crate) const RECORD_BYTES: u64 = 32;
/// Most list entries of one band (also bounded by the adapter's binding limit): 512 MiB.
pub(crate) const MAX_ENTRIES: u64 = 1 << 27;
/// Most list entries one workgroup of the tiles pass sums (`SEGMENT` in splat.wgsl).
pub(crate) const SEGMENT: u32 = 1024;

/// The shader's `View` uniform: ten vec4s of f32 and two of u32.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct ViewUniform {
    lookat_hi: [f32; 4],
    lookat_lo: [f32; 4],
    x_hat: [f32; 4],
    y_hat: [f32; 4],
    z_hat: [f32; 4],
    camera: [f32; 4],
    image: [f32; 4],
    style: [f32; 4],
    tile: [f32; 4],
    colour: [f32; 4],
    pub(super) grid: [u32; 4],
    tuning: [u32; 4],
}

/// A rectangle of the image drawn in one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tile {
    pub(crate) x0: u32,
    pub(crate) y0: u32,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

impl Tile {
    /// Pixels in the tile.
    pub(crate) fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Screen tiles across and down.
    pub(super) fn grid(&self) -> (u32, u32) {
        (self.width.div_ceil(TILE), self.height.div_ceil(TILE))
    }
}

/// The tiles of a `width`×`height` image, at most `side` pixels a side, row by row.
pub(crate) fn tiles(width: u32, height: u32, side: u32) -> Vec<Tile> {
    let side = side.max(1);
    let mut out = Vec::new();
    for y0 in (0..height).step_by(side as usize) {
        for x0 in (0..width).step_by(side as usize) {
            out.push(Tile {
                x0,
                y0,
                width: side.min(width - x0),
                height: side.min(height - y0),
            });
        }
    }
    out
}

fn split(v: f64) -> (f32, f32) {
    let hi = v as f32;
    (hi, (v - f64::from(hi)) as f32)
}

/// Everything a chunk's uniform depends on besides the particles.
pub(crate) struct UniformInputs<'a> {
    pub(crate) view: &'a ViewParams,
    pub(crate) style: &'a SpeciesStyle,
    pub(crate) brightness: f32,
    pub(crate) stops: usize,
    pub(crate) has_colour: bool,
    pub(crate) tile: Tile,
    pub(crate) fixed_exponent: i32,
    /// The splat paths (`view.tuning` of shaders/splat.wgsl): widest box added directly,
    /// widest box within a screen tile drawn in workgroup memory, pixel blocks, 21-bit parts.
    pub(crate) paths: [u32; 4],
}

/// The uniform of one species' chunk of `particles` in one tile.
pub(crate) fn view_uniform(inputs: &UniformInputs<'_>, particles: u32) -> ViewUniform {
    let UniformInputs {
        view,
        style,
        brightness,
        stops,
        has_colour,
        tile,
        fixed_exponent,
        paths,
    } = *inputs;
    let [(hx, lx), (hy, ly), (hz, lz)] = view.lookat_world.map(split);
    let v4 = |v: [f32; 3]| [v[0], v[1], v[2], 0.0];
    let (tiles_x, tiles_y) = tile.grid();
    ViewUniform {
        lookat_hi: [hx, hy, hz, 0.0],
        lookat_lo: [lx, ly, lz, 0.0],
        x_hat: v4(view.x_hat),
        y_hat: v4(view.y_hat),
        z_hat: v4(view.z_hat),
        camera: [view.distance, view.scale, view.half_width, view.half_height],
        image: [
            view.width_px as f32,
            view.height_px as f32,
            view.near,
            view.far,
        ],
        style: [
            view.min_radius_px,
            style.size_factor,
            style.brightness * brightness,
            if view.perspective { 1.0 } else { 0.0 },
        ],
        tile: [
            tile.x0 as f32,
            tile.y0 as f32,
            tile.width as f32,
            tile.height as f32,
        ],
        // z: the exact 1 the shader multiplies products by to keep them unfused.
        colour: [
            if has_colour { 1.0 } else { 0.0 },
            stops as f32,
            1.0,
            power_of_two(fixed_exponent - 32),
        ],
        grid: [tiles_x, tiles_y, particles, 0],
        tuning: paths,
    }
}

/// 2^e as f32 (e within the normal range: [`fixed_exponent`] keeps it there).
pub(crate) fn power_of_two(e: i32) -> f32 {
    2f64.powi(e) as f32
}

/// The fixed-point exponent k of a frame whose every pixel has τ ≤ `bound`: bound·2^k < 2^62,
/// so the high words never overflow; kept where 2^(k − 32), 2^(32 − k) and 2^−k are normal f32.
pub(crate) fn fixed_exponent(bound: f64) -> Result<i32, RenderError> {
    if !bound.is_finite() {
        return Err(RenderError::setting(
            "the tau bound K_A*brightness*sum(1/h) is not finite (smoothing lengths too small)",
        ));
    }
    if bound <= 0.0 {
        return Ok(0);
    }
    let e = (bound * 1.01).log2().floor() as i32 + 1;
    Ok((62 - e).clamp(-94, 126))
}

/// Whether the tiles pass may fold 2^(k − 32) into each splat's rgb (splat.wgsl's `FOLD`):
/// rn(rn(rgb·2^(k−32))·w) then has the bits of rn(rn(rgb·w)·2^(k−32)). A power-of-two scale
/// commutes with rounding where every value is a normal f32, and rgb·2^k is at most the frame's
/// bound (below 2^62), so nothing overflows. Where a product or rgb·2^(k−32) falls below 2^−126
/// (subnormal, or flushed to zero), both sides stay at most 2^−126·max(1, 2^(k−32)), which is
/// at most 2^−34 for k ≤ 124, and give the fixed-point value 0 either way.
pub(crate) fn fold_exact(fixed_exponent: i32) -> bool {
    fixed_exponent <= 124
}

/// Per species of a frame: its palette buffer and style.
pub(crate) struct FrameSpecies<'a> {
    pub(crate) style: &'a SpeciesStyle,
    pub(crate) palette: wgpu::Buffer,
    pub(crate) stops: usize,
}

/// Builds the per-species palette buffers of a frame.
pub(crate) fn frame_species<'a>(
    renderer: &WgpuRenderer,
    styles: &'a [SpeciesStyle],
) -> Result<Vec<FrameSpecies<'a>>, RenderError> {
    styles
        .iter()
        .map(|style| {
            let stops = palette_stops(&Palette::by_name(&style.palette)?);
            let palette =
                renderer
                    .context
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("palette"),
                        contents: bytemuck::cast_slice(&stops),
                        usage: wgpu::BufferUsages::STORAGE,
                    });
            Ok(FrameSpecies {
                style,
                palette,
                stops: stops.len(),
            })
        })
        .collect()
}

/// Ranges of screen tiles whose lists hold at most `cap` entries together (a single tile may
/// hold more only when `cap` is below one chunk, which the renderer's limits rule out).
pub(crate) fn bands(counts: &[u32], cap: u64) -> Vec<(usize, usize, u64)> {
    let mut out = Vec::new();
    let (mut start, mut held) = (0usize, 0u64);
    for (tile, &count) in counts.iter().enumerate() {
        let count = u64::from(count);
        if held + count > cap && tile > start {
            out.push((start, tile, held));
            (start, held) = (tile, 0);
        }
        held += count;
    }
    if held > 0 {
        out.push((start, counts.len(), held));
    }
    out
}

/// One band of screen tiles and its segments.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TableBand {
    /// First screen tile of the band.
    pub(super) first_tile: u32,
    /// One past its last tile.
    pub(super) end_tile: u32,
    /// List entries of its tiles together.
    pub(super) entries: u64,
    /// Its first segment in the table.
    pub(super) first_segment: u32,
    /// Its segments (workgroups of the tiles pass).
    pub(super) segments: u32,
}

/// The host's part of a chunk's lists: the tiles' list offsets (tiles + 1 words, an exclusive
/// prefix sum wrapping in u32, since the shader subtracts a band's base in u32 too and a band
/// spans less than 2^32), then (tile, start within its band) per segment of every band.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ListTable {
    /// The offsets, then the segments, as uploaded.
    pub(crate) words: Vec<u32>,
    /// The bands, drawn one after another.
    pub(crate) bands: Vec<TableBand>,
}

/// The list table of `counts` in bands of at most `cap` entries; `None` when no tile has any.
pub(crate) fn list_table(counts: &[u32], cap: u64) -> Option<ListTable> {
    let mut words = Vec::with_capacity(counts.len() + 1);
    let mut sum = 0u64;
    for &count in counts {
        words.push(sum as u32);
        sum += u64::from(count);
    }
    words.push(sum as u32);
    if sum == 0 {
        return None;
    }
    let mut table_bands = Vec::new();
    let mut segment = 0u32;
    for (first, end, held) in bands(counts, cap) {
        let first_segment = segment;
        let base = words[first];
        for (tile, &count) in counts.iter().enumerate().take(end).skip(first) {
            let start = words[tile].wrapping_sub(base);
            for k in 0..count.div_ceil(SEGMENT) {
                words.extend([tile as u32, start + k * SEGMENT]);
                segment += 1;
            }
        }
        table_bands.push(TableBand {
            first_tile: first as u32,
            end_tile: end as u32,
            entries: held,
            first_segment,
            segments: segment - first_segment,
        });
    }
    Some(ListTable {
        words,
        bands: table_bands,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_hold_at_most_the_cap_and_cover_every_listed_tile() {
        let counts = [3, 0, 4, 2, 0, 0, 5, 1];
        assert_eq!(bands(&counts, 6), vec![(0, 2, 3), (2, 6, 6), (6, 8, 6)]);
        // A tile above the cap gets a band of its own.
        assert_eq!(bands(&[2, 9, 2], 4), vec![(0, 1, 2), (1, 2, 9), (2, 3, 2)]);
        assert_eq!(bands(&[0, 0], 4), vec![]);
        assert_eq!(bands(&counts, 100), vec![(0, 8, 15)]);
    }

    #[test]
    fn the_list_table_cuts_dense_tiles_into_segments_per_band() {
        let counts = [3, 0, SEGMENT + 5, 2];
        let table = list_table(&counts, u64::from(SEGMENT) + 7).expect("entries");
        let s = SEGMENT;
        assert_eq!(
            table.words,
            vec![0, 3, 3, s + 8, s + 10, 0, 0, 2, 0, 2, s, 3, s + 5]
        );
        let band = |first_tile, end_tile, entries, first_segment, segments| TableBand {
            first_tile,
            end_tile,
            entries,
            first_segment,
            segments,
        };
        assert_eq!(
            table.bands,
            vec![band(0, 2, 3, 0, 1), band(2, 4, u64::from(s) + 7, 1, 3)]
        );
        assert_eq!(list_table(&[0, 0], 10), None);
    }

    #[test]
    fn the_fixed_exponent_keeps_the_bound_below_2_to_62() {
        assert_eq!(fixed_exponent(1.0).ok(), Some(61));
        assert_eq!(fixed_exponent(0.0).ok(), Some(0));
        for bound in [1e-6, 0.3, 7.0, 1e9] {
            let k = fixed_exponent(bound).expect("finite");
            assert!(bound * 1.01 * 2f64.powi(k) < 2f64.powi(62), "{bound}: {k}");
            assert!(
                bound * 1.01 * 2f64.powi(k + 1) >= 2f64.powi(62),
                "{bound}: {k}"
            );
        }
        assert_eq!(fixed_exponent(1e-60).ok(), Some(126));
        assert!(fixed_exponent(f64::INFINITY).is_err());
    }
}
