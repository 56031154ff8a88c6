//! Per-particle projection, radius, amplitude, emission and classification: the single source of
//! truth for the Splotch maths (DESIGN §4; notes §6–§8 and §12).
//!
//! Precision, so that a CUDA kernel can mirror [`project_particle`] line for line: the only f64
//! step is `q = pos − lookat` (one f64 subtraction per axis, then rounded to f32), which keeps
//! big boxes (Gadget coordinates ~5·10⁴) precise; everything after it is f32, evaluated exactly
//! in the order written in the code (left to right, no fused multiply-add).
//!
//! Since camera − lookat = distance·ẑ, (p − camera)·x̂ = q·x̂, (p − camera)·ŷ = q·ŷ and
//! (p − camera)·ẑ = q·ẑ − distance: the camera coordinates of DESIGN §4, computed relative to the
//! look-at point.

use super::RenderError;
use super::camera::{Camera, Projection};
use super::normalise::Normaliser;
use super::palette::Palette;

/// K_A = ½·(½·π^(−5/6)): Splotch classic amplitude normalisation, A = n·K_A/h (notes eq. 7).
pub const AMPLITUDE_FACTOR: f32 = 0.096_304_914;
/// K_σ = ½·π^(−1/6): σ = K_σ·r (notes eq. 10, `h2sigma`).
pub const SIGMA_FACTOR: f32 = 0.413_153_74;
/// The splat is cut at R = 0.75·r (notes eq. 10, `rfac`).
pub const CUT_FACTOR: f32 = 0.75;
/// Default minimum splat radius r_min in pixels (Splotch `minrad_pix`).
pub const DEFAULT_MIN_RADIUS_PX: f32 = 1.0;
/// Default tile guard band w in pixels: R ≥ w is "large" (Rivi et al., notes §12).
pub const DEFAULT_BORDER_PX: f32 = 8.0;

/// One projected particle ready to splat: a pixel receives τ += exp(−d²/σ²)·rgb where
/// d² = (i + 0.5 − x)² + (j + 0.5 − y)² ≤ cut². Plain `repr(C)` data for upload to a device.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Splat {
    /// Screen X in pixels (column coordinate; pixel i samples i + 0.5).
    pub x_px: f32,
    /// Screen Y in pixels (row coordinate, row 0 at the top).
    pub y_px: f32,
    /// Gaussian width σ = K_σ·r in pixels.
    pub sigma_px: f32,
    /// Cut radius R = 0.75·r in pixels.
    pub cut_px: f32,
    /// Emission e = colour·amplitude·brightness (RGB).
    pub rgb: [f32; 3],
}

/// Classification on the clipped radius R (DESIGN §4, notes §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParticleClass {
    /// Outside the depth range, off the image, touching no pixel, or with h ≤ 0 / non-finite data.
    Inactive,
    /// The footprint box covers exactly one pixel.
    Small,
    /// R < border and the centre on the image.
    Medium,
    /// R ≥ border, or the centre off the image while the footprint overlaps it.
    Large,
}

/// Result of [`project_particle`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projected {
    /// The class; the splat is meaningless when inactive.
    pub class: ParticleClass,
    /// Where and how bright.
    pub splat: Splat,
    /// Screen radius r in pixels after the minimum-radius correction.
    pub radius_px: f32,
}

/// Per-frame view constants (see the module docs for which are f64).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewParams {
    /// Look-at point (f64: subtracted from positions before rounding to f32).
    pub lookat_world: [f64; 3],
    /// Image right x̂.
    pub x_hat: [f32; 3],
    /// Image up ŷ.
    pub y_hat: [f32; 3],
    /// Backwards ẑ.
    pub z_hat: [f32; 3],
    /// |camera − lookat|.
    pub distance: f32,
    /// Perspective (s = scale/depth) or orthographic (s = scale).
    pub perspective: bool,
    /// (W/2)/tan(fov/2) for perspective; (W/2)/(tan(fov/2)·distance) for orthographic.
    pub scale: f32,
    /// W/2.
    pub half_width: f32,
    /// H/2.
    pub half_height: f32,
    /// W.
    pub width_px: i32,
    /// H.
    pub height_px: i32,
    /// Depth must exceed this.
    pub near: f32,
    /// Depth must be below this.
    pub far: f32,
    /// r_min in pixels (0 turns the correction off).
    pub min_radius_px: f32,
    /// Border w in pixels for the large class.
    pub border_px: f32,
}

/// Largest image side accepted.
pub const MAX_IMAGE_SIDE_PX: u32 = 32_768;

impl ViewParams {
    /// Checks the camera and the image size and derives the per-frame constants.
    pub fn new(
        camera: &Camera,
        width: u32,
        height: u32,
        min_radius_px: f32,
        border_px: f32,
    ) -> Result<Self, RenderError> {
        if width == 0 || height == 0 || width > MAX_IMAGE_SIDE_PX || height > MAX_IMAGE_SIDE_PX {
            return Err(RenderError::ImageSize { width, height });
        }
        if !(min_radius_px >= 0.0 && min_radius_px.is_finite()) {
            return Err(RenderError::setting(format!(
                "minimum radius {min_radius_px} px must be a finite number >= 0"
            )));
        }
        if !(border_px > 0.0 && border_px.is_finite()) {
            return Err(RenderError::setting(format!(
                "tile border {border_px} px must be a finite number > 0"
            )));
        }
        let basis = camera.basis()?;
        let half_width = 0.5 * f64::from(width);
        let tan_half = (camera.fov_deg.to_radians() * 0.5).tan();
        let (perspective, scale) = match camera.projection {
            Projection::Perspective => (true, half_width / tan_half),
            Projection::Orthographic => (false, half_width / (tan_half * basis.distance)),
        };
        let to_f32 = |v: [f64; 3]| v.map(|x| x as f32);
        Ok(Self {
            lookat_world: camera.lookat,
            x_hat: to_f32(basis.x_hat),
            y_hat: to_f32(basis.y_hat),
            z_hat: to_f32(basis.z_hat),
            distance: basis.distance as f32,
            perspective,
            scale: scale as f32,
            half_width: half_width as f32,
            half_height: (0.5 * f64::from(height)) as f32,
            width_px: width as i32,
            height_px: height as i32,
            near: camera.near as f32,
            far: camera.far as f32,
            min_radius_px,
            border_px,
        })
    }
}

/// Per-species constants for [`project_particle`].
#[derive(Debug, Clone, Copy)]
pub struct StyleParams<'a> {
    /// Intensity normalisation; `None` gives n = 1 for every particle.
    pub intensity: Option<Normaliser>,
    /// Colour normalisation and palette; `None` gives colour (1, 1, 1).
    pub colour: Option<(Normaliser, &'a Palette)>,
    /// Species brightness times the explicit global brightness (1 under auto exposure).
    pub brightness: f32,
    /// Radius multiplier (Splotch `smooth_factor<t>`).
    pub size_factor: f32,
}

/// The inactive result.
const INACTIVE: Projected = Projected {
    class: ParticleClass::Inactive,
    splat: Splat {
        x_px: 0.0,
        y_px: 0.0,
        sigma_px: 0.0,
        cut_px: 0.0,
        rgb: [0.0; 3],
    },
    radius_px: 0.0,
};

/// `x as i32` (toward zero, saturating, NaN → 0), written as a clamp and selects around an
/// unchecked conversion so that lane loops vectorise it: `as` itself compiles to a scalar
/// compare-and-move sequence per lane.
#[inline(always)]
pub fn to_i32_saturating(x: f32) -> i32 {
    /// −2³¹ (exact in f32).
    const LOWEST: f32 = -2_147_483_648.0;
    /// The largest f32 below 2³¹ (f32 spacing is 128 there).
    const BELOW_2_31: f32 = 2_147_483_520.0;
    let in_range = if x.is_nan() {
        0.0
    } else {
        x.clamp(LOWEST, BELOW_2_31)
    };
    // SAFETY: `in_range` is finite and in [−2³¹, 2³¹), where the truncation fits an i32.
    let t = unsafe { in_range.to_int_unchecked::<i32>() };
    if x >= 2_147_483_648.0 { i32::MAX } else { t }
}

/// ⌊x⌋ as i32 (saturating; NaN → 0) without a libm call: baseline x86-64 has no SSE4.1
/// `roundss`, so `f32::floor` is a function call in the hottest loop.
#[inline]
pub fn floor_i32(x: f32) -> i32 {
    let t = to_i32_saturating(x);
    if (t as f32) > x {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// ⌈x⌉ as i32 (saturating; NaN → 0) without a libm call.
#[inline]
pub fn ceil_i32(x: f32) -> i32 {
    let t = to_i32_saturating(x);
    if (t as f32) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

/// Particles projected together by [`project_lanes`].
pub const LANES: usize = 8;

/// The branch-free part of [`project_particle`] for [`LANES`] particles, one array per
/// quantity, so that the compiler evaluates it in vector registers. Lanes whose particle turns
/// out inactive hold meaningless values.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lanes {
    /// Depth −z_c.
    pub depth: [f32; LANES],
    /// Screen X.
    pub x_px: [f32; LANES],
    /// Screen Y.
    pub y_px: [f32; LANES],
    /// Radius r after the minimum-radius correction.
    pub radius_px: [f32; LANES],
    /// Minimum-radius factor c (1 when the correction is off; the amplitude is divided by it).
    pub c: [f32; LANES],
    /// Footprint box (i0, i1, j0, j1) of |i + 0.5 − X| ≤ R.
    pub footprint: [[i32; 4]; LANES],
}

/// Fills lane `l` of `out` for one particle: every operation of [`project_particle`] that needs
/// no branch, in the same order (so each lane has the bits of the scalar path).
#[inline(always)]
fn geometry(
    view: &ViewParams,
    size_factor: f32,
    pos_world: [f32; 3],
    h: f32,
    out: &mut Lanes,
    l: usize,
) {
    // The only f64 step: position relative to the look-at point.
    let q = [
        (f64::from(pos_world[0]) - view.lookat_world[0]) as f32,
        (f64::from(pos_world[1]) - view.lookat_world[1]) as f32,
        (f64::from(pos_world[2]) - view.lookat_world[2]) as f32,
    ];
    let (xh, yh, zh) = (view.x_hat, view.y_hat, view.z_hat);
    let x_c = q[0] * xh[0] + q[1] * xh[1] + q[2] * xh[2];
    let y_c = q[0] * yh[0] + q[1] * yh[1] + q[2] * yh[2];
    let z_c = (q[0] * zh[0] + q[1] * zh[1] + q[2] * zh[2]) - view.distance;
    let depth = -z_c;
    let s = if view.perspective {
        view.scale / depth
    } else {
        view.scale
    };
    let x_px = view.half_width + s * x_c;
    let y_px = view.half_height - s * y_c;
    let radius_uncorrected = 2.0 * h * s * size_factor;
    // c = √(r² + m²)/r with m = r_min; with the correction off c = 1, and r·1 and A/1 are exact.
    let m = view.min_radius_px;
    let c = if m > 0.0 {
        (radius_uncorrected * radius_uncorrected + m * m).sqrt() / radius_uncorrected
    } else {
        1.0
    };
    let radius_px = radius_uncorrected * c;
    let cut_px = CUT_FACTOR * radius_px;
    // Footprint box: columns i with |i + 0.5 − X| ≤ R, rows likewise (casts saturate).
    out.footprint[l] = [
        ceil_i32(x_px - cut_px - 0.5),
        floor_i32(x_px + cut_px - 0.5),
        ceil_i32(y_px - cut_px - 0.5),
        floor_i32(y_px + cut_px - 0.5),
    ];
    out.depth[l] = depth;
    out.x_px[l] = x_px;
    out.y_px[l] = y_px;
    out.radius_px[l] = radius_px;
    out.c[l] = c;
}

/// The branching part of [`project_particle`]: limits, amplitude, class and emission of lane `l`.
#[inline(always)]
fn finish(
    view: &ViewParams,
    style: &StyleParams<'_>,
    g: &Lanes,
    l: usize,
    h: f32,
    intensity_raw: f32,
    colour_raw: f32,
) -> Projected {
    let depth = g.depth[l];
    // NaN positions fail these comparisons and are dropped too.
    if !(depth > view.near && depth < view.far && h > 0.0 && h.is_finite()) {
        return INACTIVE;
    }
    let (x_px, y_px, radius_px) = (g.x_px[l], g.y_px[l], g.radius_px[l]);
    if !(radius_px > 0.0 && radius_px.is_finite() && x_px.is_finite() && y_px.is_finite()) {
        return INACTIVE;
    }
    let [i0, i1, j0, j1] = g.footprint[l];
    if i0 > i1 || j0 > j1 || i1 < 0 || j1 < 0 || i0 >= view.width_px || j0 >= view.height_px {
        return INACTIVE;
    }
    let sigma_px = SIGMA_FACTOR * radius_px;
    let cut_px = CUT_FACTOR * radius_px;
    let n = match &style.intensity {
        Some(norm) => norm.apply(intensity_raw),
        None => 1.0,
    };
    let amplitude = n * AMPLITUDE_FACTOR / h / g.c[l];
    let centre_on_image =
        x_px >= 0.0 && x_px < view.width_px as f32 && y_px >= 0.0 && y_px < view.height_px as f32;
    let class = if cut_px >= view.border_px || !centre_on_image {
        ParticleClass::Large
    } else if i0 == i1 && j0 == j1 {
        ParticleClass::Small
    } else {
        ParticleClass::Medium
    };

    let colour = match &style.colour {
        Some((norm, palette)) => palette.sample(norm.apply(colour_raw)),
        None => [1.0; 3],
    };
    let b = style.brightness;
    Projected {
        class,
        splat: Splat {
            x_px,
            y_px,
            sigma_px,
            cut_px,
            rgb: [
                colour[0] * amplitude * b,
                colour[1] * amplitude * b,
                colour[2] * amplitude * b,
            ],
        },
        radius_px,
    }
}

/// Projects one particle: world position, smoothing length h (world units) and the raw
/// intensity and colour values (ignored when the style has none).
///
/// Order of the f32 operations (mirrored by the CUDA kernel): q = pos − lookat (f64, rounded),
/// x_c, y_c, z_c as dot products, s = scale/depth (perspective), X = W/2 + s·x_c,
/// Y = H/2 − s·y_c, r = 2·h·s·size_factor, with r_min = m > 0: c = √(r² + m²)/r, r ← r·c,
/// A = n·K_A/h/c; σ = K_σ·r, R = 0.75·r; e = colour·A·brightness.
#[inline(always)]
pub fn project_particle(
    view: &ViewParams,
    style: &StyleParams<'_>,
    pos_world: [f32; 3],
    h: f32,
    intensity_raw: f32,
    colour_raw: f32,
) -> Projected {
    let mut g = Lanes::default();
    geometry(view, style.size_factor, pos_world, h, &mut g, 0);
    finish(view, style, &g, 0, h, intensity_raw, colour_raw)
}

/// The branch-free part of [`project_particle`] (camera space, screen position, radius with
/// the minimum-radius factor, footprint box) for [`LANES`] particles, lane by lane with the
/// scalar path's bits.
#[inline(always)]
pub fn geometry_lanes(
    view: &ViewParams,
    size_factor: f32,
    pos_world: &[[f32; 3]; LANES],
    h: &[f32; LANES],
    out: &mut Lanes,
) {
    for l in 0..LANES {
        geometry(view, size_factor, pos_world[l], h[l], out, l);
    }
}

/// The inputs of [`LANES`] consecutive particles, as [`project_particle`] takes them one by one.
#[derive(Debug, Clone, Copy)]
pub struct LaneInputs<'a> {
    /// World positions.
    pub pos_world: &'a [[f32; 3]; LANES],
    /// Smoothing lengths (world units).
    pub h: &'a [f32; LANES],
    /// Raw intensity values (ignored when the style has none).
    pub intensity_raw: &'a [f32; LANES],
    /// Raw colour values (ignored when the style has none).
    pub colour_raw: &'a [f32; LANES],
}

/// Projects [`LANES`] consecutive particles into `out`, bit-identical to [`project_particle`]
/// on each: the branch-free arithmetic runs lane-parallel, the limits and classes per lane.
/// `scratch` only holds intermediate values.
#[inline(always)]
pub fn project_lanes(
    view: &ViewParams,
    style: &StyleParams<'_>,
    input: LaneInputs<'_>,
    scratch: &mut Lanes,
    out: &mut [Projected; LANES],
) {
    let LaneInputs {
        pos_world,
        h,
        intensity_raw,
        colour_raw,
    } = input;
    geometry_lanes(view, style.size_factor, pos_world, h, scratch);
    for l in 0..LANES {
        out[l] = finish(
            view,
            style,
            scratch,
            l,
            h[l],
            intensity_raw[l],
            colour_raw[l],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(min_radius_px: f32) -> ViewParams {
        let camera = Camera::look_at([0.0, 0.0, 10.0], [0.0; 3], [0.0, 1.0, 0.0], 90.0);
        ViewParams::new(&camera, 100, 80, min_radius_px, DEFAULT_BORDER_PX).expect("view")
    }

    const WHITE: StyleParams<'static> = StyleParams {
        intensity: None,
        colour: None,
        brightness: 1.0,
        size_factor: 1.0,
    };

    #[test]
    fn constants_match_their_formulas() {
        let pi = std::f64::consts::PI;
        assert_eq!(AMPLITUDE_FACTOR, (0.5 * (0.5 * pi.powf(-5.0 / 6.0))) as f32);
        assert_eq!(SIGMA_FACTOR, (0.5 * pi.powf(-1.0 / 6.0)) as f32);
    }

    #[test]
    fn centre_particle_lands_on_the_centre_with_the_issue_radius() {
        // tan(45°) = 1: s = 50/10 = 5 px per world unit at depth 10.
        let p = project_particle(&view(0.0), &WHITE, [0.0; 3], 0.5, 0.0, 0.0);
        assert_eq!((p.splat.x_px, p.splat.y_px), (50.0, 40.0));
        assert_eq!(p.radius_px, 2.0 * 0.5 * 5.0);
        assert_eq!(p.splat.cut_px, 0.75 * 5.0);
        assert_eq!(p.splat.sigma_px, SIGMA_FACTOR * 5.0);
        assert_eq!(p.splat.rgb, [AMPLITUDE_FACTOR / 0.5; 3]);
        assert_eq!(p.class, ParticleClass::Medium);
        // +x goes right and +y goes up (smaller row).
        let q = project_particle(&view(0.0), &WHITE, [1.0, 1.0, 0.0], 0.5, 0.0, 0.0);
        assert_eq!((q.splat.x_px, q.splat.y_px), (55.0, 35.0));
    }

    #[test]
    fn minimum_radius_enlarges_and_dims() {
        // r = 2·0.01·5 = 0.1 px; m = 1: c = √(0.01 + 1)/0.1. Centred on pixel (50, 40).
        let p = project_particle(&view(1.0), &WHITE, [0.1, -0.1, 0.0], 0.01, 0.0, 0.0);
        assert_eq!((p.splat.x_px, p.splat.y_px), (50.5, 40.5));
        let r = 2.0f32 * 0.01 * 5.0;
        let c = (r * r + 1.0).sqrt() / r;
        assert_eq!(p.radius_px, r * c);
        assert_eq!(p.splat.rgb[0], AMPLITUDE_FACTOR / 0.01 / c);
        assert_eq!(p.class, ParticleClass::Small);
        // The same particle on a pixel corner touches four pixels.
        let corner = project_particle(&view(1.0), &WHITE, [0.0; 3], 0.01, 0.0, 0.0);
        assert_eq!(corner.class, ParticleClass::Medium);
    }

    #[test]
    fn classes_follow_the_rules() {
        let v = view(1.0);
        let behind = project_particle(&v, &WHITE, [0.0, 0.0, 20.0], 0.5, 0.0, 0.0);
        assert_eq!(behind.class, ParticleClass::Inactive);
        let off = project_particle(&v, &WHITE, [100.0, 0.0, 0.0], 0.5, 0.0, 0.0);
        assert_eq!(off.class, ParticleClass::Inactive);
        // R = 0.75·2·2·5 = 15 px ≥ 8: large.
        let big = project_particle(&v, &WHITE, [0.0; 3], 2.0, 0.0, 0.0);
        assert_eq!(big.class, ParticleClass::Large);
        // Centre just off the left edge (X = −0.5) with a disc reaching pixel 0: large.
        let edge = project_particle(&v, &WHITE, [-10.1, 0.0, 0.0], 0.2, 0.0, 0.0);
        assert!(edge.splat.x_px < 0.0);
        assert_eq!(edge.class, ParticleClass::Large);
        let zero_h = project_particle(&v, &WHITE, [0.0; 3], 0.0, 0.0, 0.0);
        assert_eq!(zero_h.class, ParticleClass::Inactive);
        let nan = project_particle(&v, &WHITE, [f32::NAN, 0.0, 0.0], 0.5, 0.0, 0.0);
        assert_eq!(nan.class, ParticleClass::Inactive);
    }

    #[test]
    fn orthographic_matches_perspective_at_the_lookat_plane() {
        let mut camera = Camera::look_at([1.0, 2.0, 10.0], [1.0, 2.0, 0.0], [0.0, 1.0, 0.0], 60.0);
        let persp = ViewParams::new(&camera, 64, 64, 1.0, 8.0).expect("view");
        camera.projection = Projection::Orthographic;
        let ortho = ViewParams::new(&camera, 64, 64, 1.0, 8.0).expect("view");
        let a = project_particle(&persp, &WHITE, [1.7, 1.4, 0.0], 0.3, 0.0, 0.0);
        let b = project_particle(&ortho, &WHITE, [1.7, 1.4, 0.0], 0.3, 0.0, 0.0);
        assert!((a.splat.x_px - b.splat.x_px).abs() < 1e-4);
        assert!((a.splat.y_px - b.splat.y_px).abs() < 1e-4);
        assert!((a.radius_px - b.radius_px).abs() < 1e-5);
        // Off the plane the orthographic scale does not change with depth.
        let c = project_particle(&ortho, &WHITE, [1.7, 1.4, 5.0], 0.3, 0.0, 0.0);
        assert_eq!(c.splat.x_px, b.splat.x_px);
    }

    #[test]
    fn lanes_give_the_single_particle_bits() {
        // Edge cases (behind, off-image, h ≤ 0, NaN, the image edge) mixed with random ones.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut pos: Vec<[f32; 3]> =
            vec![[0.0, 0.0, 20.0], [100.0, 0.0, 0.0], [f32::NAN, 0.0, 0.0]];
        let mut h = vec![0.5, 0.5, 0.5, 0.0, -1.0, f32::INFINITY, 0.2];
        pos.extend([[0.0; 3], [0.0; 3], [0.0; 3], [-10.1, 0.0, 0.0]]);
        while pos.len() < 8 * LANES {
            pos.push([
                24.0 * next() - 12.0,
                20.0 * next() - 10.0,
                12.0 * next() - 6.0,
            ]);
            // Half tiny (one-pixel footprints), half up to many pixels.
            let tiny = pos.len().is_multiple_of(2);
            h.push(if tiny {
                0.002 + 0.02 * next()
            } else {
                0.002 + 2.0 * next() * next()
            });
        }
        let values: Vec<f32> = (0..pos.len()).map(|_| 3.0 * next() - 0.5).collect();
        let palette = Palette::by_name("viridis").expect("palette");
        let norm = Normaliser::fixed(false, 0.0, 2.0);
        for (min_radius, perspective) in [(1.0, true), (0.0, true), (1.0, false)] {
            let mut camera = Camera::look_at([0.0, 0.0, 10.0], [0.0; 3], [0.0, 1.0, 0.0], 90.0);
            if !perspective {
                camera.projection = Projection::Orthographic;
            }
            let v = ViewParams::new(&camera, 100, 80, min_radius, DEFAULT_BORDER_PX).expect("view");
            let style = StyleParams {
                intensity: Some(norm),
                colour: Some((norm, &palette)),
                brightness: 0.7,
                size_factor: 1.3,
            };
            let mut scratch = Lanes::default();
            let mut out = [project_particle(&v, &style, [0.0; 3], 1.0, 0.0, 0.0); LANES];
            let mut classes = std::collections::HashSet::new();
            for first in (0..pos.len()).step_by(LANES) {
                let lane = |x: &[f32]| -> [f32; LANES] { std::array::from_fn(|l| x[first + l]) };
                let p: [[f32; 3]; LANES] = std::array::from_fn(|l| pos[first + l]);
                let (hl, vl) = (lane(&h), lane(&values));
                let input = LaneInputs {
                    pos_world: &p,
                    h: &hl,
                    intensity_raw: &vl,
                    colour_raw: &vl,
                };
                project_lanes(&v, &style, input, &mut scratch, &mut out);
                for l in 0..LANES {
                    let want = project_particle(&v, &style, p[l], hl[l], vl[l], vl[l]);
                    classes.insert(format!("{:?}", want.class));
                    assert_eq!(
                        format!("{:?}", out[l]),
                        format!("{want:?}"),
                        "particle {}",
                        first + l
                    );
                }
            }
            assert_eq!(classes.len(), 4, "{classes:?}");
        }
    }

    #[test]
    fn bad_views_are_errors() {
        let camera = Camera::look_at([0.0, 0.0, 10.0], [0.0; 3], [0.0, 1.0, 0.0], 90.0);
        assert!(matches!(
            ViewParams::new(&camera, 0, 10, 1.0, 8.0),
            Err(RenderError::ImageSize { .. })
        ));
        assert!(ViewParams::new(&camera, 10, 10, f32::NAN, 8.0).is_err());
    }
}
