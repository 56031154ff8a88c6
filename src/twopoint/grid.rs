//! Coordinates on a grid (catalogues that round RA and Dec, e.g. IC86-2011's 0.1°), and the
//! scramble that keeps the grid.
//!
//! Rounded coordinates put many pairs at exactly the separations the grid allows (a multiple of
//! 0.1° along a meridian, …); scrambles drawn from a continuum have no such ties, so a bin edge
//! on the grid collects an excess of observed pairs that is only the rounding. Scrambling RA on
//! the data's own grid gives the trials the same tie structure.
//!
//! Detection: the grid is `1/d` degrees for the smallest `d` of [`GRID_PER_DEGREE_CANDIDATES`]
//! such that every RA and every Dec, in degrees, lies within [`GRID_TOLERANCE_DEG`] of a
//! multiple of `1/d`. The candidates are closed under gcd (if two fit, the one of their gcd
//! fits), so this is the coarsest grid that holds every value. Steps finer than 0.01° are not
//! candidates: at a step s the share of a bin's pairs that lie exactly on its edge scales like
//! s² over the bin's area, about 1e-5 at 0.001° for 0.25° bins, far below a trial's Poisson
//! noise, while catalogues print such digits as plain precision (IC40's 0.001°).
//!
//! A grid-scrambled RA (see [`Scramble::ra_of`]) takes the 53-bit Philox draw `m` of the
//! continuous scramble (u = m·2⁻⁵³), the grid index k = ⌊u·n⌋ = (m·n) >> 53 in exact integer
//! arithmetic (n = 360·d values in [0°, 360°)), then RA = (k / d) converted to radians as the
//! event readers convert degrees: `(k as f64 / d as f64).to_radians()`. k / d is one correctly
//! rounded division (the f64 nearest the decimal value, as a reader parses it) and to_radians
//! one product by π/180, so a grid-scrambled RA is bit for bit the RA a file with that value
//! would give; kernels/twopoint.cu repeats the same three operations.

use super::TwoPointError;
use super::philox::{philox_mantissa, scrambled_ra_of};

/// Grid values per degree that the detector tries: steps 1°, 0.5°, 0.25°, 0.2°, 0.1°, 0.05°,
/// 0.02°, 0.01° (closed under gcd).
pub const GRID_PER_DEGREE_CANDIDATES: [u32; 8] = [1, 2, 4, 5, 10, 20, 50, 100];

/// How far (degrees) a value may lie from a grid multiple and still be on the grid: above the
/// ~1e-13° of a degree → radian → degree round trip, far below any grid step.
pub const GRID_TOLERANCE_DEG: f64 = 1e-9;

/// π/180 as f64, the factor of `f64::to_radians` (kernels/twopoint.cu writes it in hex).
pub const RAD_PER_DEG: f64 = std::f64::consts::PI / 180.0;

/// A grid of `1 / per_degree` degrees on which every RA and Dec of a list lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoordinateGrid {
    per_degree: u32,
}

impl CoordinateGrid {
    /// The grid of `1 / per_degree` degrees (`per_degree` ≥ 1).
    pub fn per_degree(per_degree: u32) -> Result<Self, TwoPointError> {
        if per_degree == 0 || per_degree > u32::MAX / 360 {
            return Err(TwoPointError::Config(format!(
                "grid values per degree {per_degree} outside 1..={}",
                u32::MAX / 360
            )));
        }
        Ok(Self { per_degree })
    }

    /// Grid values per degree.
    pub fn values_per_degree(self) -> u32 {
        self.per_degree
    }

    /// The step in degrees.
    pub fn step_deg(self) -> f64 {
        1.0 / f64::from(self.per_degree)
    }

    /// Number of RA values in [0°, 360°).
    pub fn ra_values(self) -> u32 {
        360 * self.per_degree
    }

    /// Whether `value_deg` lies within [`GRID_TOLERANCE_DEG`] of a multiple of the step.
    pub fn holds_deg(self, value_deg: f64) -> bool {
        let d = f64::from(self.per_degree);
        let scaled = value_deg * d;
        (scaled - scaled.round()).abs() <= GRID_TOLERANCE_DEG * d
    }

    /// RA (radians) of grid value `k` (k / per_degree degrees), as the readers convert it.
    #[inline]
    pub fn ra_rad(self, k: u32) -> f64 {
        (f64::from(k) / f64::from(self.per_degree)) * RAD_PER_DEG
    }

    /// The label used in text: the step in degrees, e.g. "0.1°".
    pub fn label(self) -> String {
        format!("{}°", self.step_deg())
    }
}

/// The coarsest candidate grid holding every RA and Dec (radians), or `None`.
pub fn detect_grid(ra_rad: &[f64], dec_rad: &[f64]) -> Option<CoordinateGrid> {
    if ra_rad.is_empty() && dec_rad.is_empty() {
        return None;
    }
    GRID_PER_DEGREE_CANDIDATES
        .iter()
        .map(|&d| CoordinateGrid { per_degree: d })
        .find(|grid| {
            ra_rad
                .iter()
                .chain(dec_rad)
                .all(|v| grid.holds_deg(v.to_degrees()))
        })
}

/// What the user asks for: scramble RA on the detected grid or on the continuum.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ScrambleChoice {
    /// On the grid when the coordinates lie on one, else on the continuum.
    #[default]
    Auto,
    /// On the detected grid (an error when there is none).
    Grid,
    /// Uniform on [0, 2π) whatever the coordinates.
    Continuous,
}

/// How trials draw RA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scramble {
    /// Uniform on [0, 2π) (53-bit Philox draw).
    Continuous,
    /// Uniform over the grid's RA values in [0°, 360°).
    Grid(CoordinateGrid),
}

impl Scramble {
    /// The scramble `choice` gives for coordinates on `grid` (`None`: on no grid).
    pub fn choose(
        choice: ScrambleChoice,
        grid: Option<CoordinateGrid>,
    ) -> Result<Self, TwoPointError> {
        match (choice, grid) {
            (ScrambleChoice::Continuous, _) | (ScrambleChoice::Auto, None) => Ok(Self::Continuous),
            (ScrambleChoice::Auto | ScrambleChoice::Grid, Some(grid)) => Ok(Self::Grid(grid)),
            (ScrambleChoice::Grid, None) => Err(TwoPointError::Config(
                "grid scramble asked for, but RA and Dec lie on no grid of 0.01° to 1°".into(),
            )),
        }
    }

    /// "grid" or "continuous" (the JSON's `scramble`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Continuous => "continuous",
            Self::Grid(_) => "grid",
        }
    }

    /// Values per degree of the grid scramble, 0 for the continuum (the CUDA kernel's argument).
    pub fn grid_per_degree(self) -> u32 {
        match self {
            Self::Continuous => 0,
            Self::Grid(grid) => grid.per_degree,
        }
    }

    /// Scrambled RA (radians, [0, 2π)) of prepared event `event` in trial `trial` for `seed`.
    #[inline]
    pub fn ra_of(self, seed: u64, trial: u64, event: u32) -> f64 {
        match self {
            Self::Continuous => scrambled_ra_of(seed, trial, event),
            Self::Grid(grid) => {
                let m = philox_mantissa(seed, trial, event);
                let k = (u128::from(m) * u128::from(grid.ra_values())) >> 53;
                grid.ra_rad(k as u32)
            }
        }
    }
}

/// The bin edges (degrees) that are multiples of `grid`'s step: pairs at exactly those
/// separations are ties that the `≤` edge rule counts inside.
pub fn bin_edges_on_grid(edges_deg: &[f64], grid: Option<CoordinateGrid>) -> Vec<f64> {
    let Some(grid) = grid else {
        return Vec::new();
    };
    edges_deg
        .iter()
        .copied()
        .filter(|&e| grid.holds_deg(e))
        .collect()
}

/// One line saying on which grid the coordinates lie and how trials draw RA.
pub fn scramble_note(grid: Option<CoordinateGrid>, scramble: Scramble) -> String {
    match (grid, scramble) {
        (None, _) => "coordinates on no grid (0.01° to 1°): RA scrambled on the continuum".into(),
        (Some(grid), Scramble::Grid(_)) => format!(
            "coordinates on a {} grid: RA scrambled on the same grid ({} values), so that \
             trials share the data's ties",
            grid.label(),
            grid.ra_values()
        ),
        (Some(grid), Scramble::Continuous) => format!(
            "coordinates on a {} grid, but RA scrambled on the continuum: trials lack the \
             data's ties at multiples of the grid",
            grid.label()
        ),
    }
}

/// One line naming the bin edges that are multiples of the grid, if any.
pub fn edges_on_grid_note(edges_deg: &[f64], grid: Option<CoordinateGrid>) -> Option<String> {
    let grid = grid?;
    let on_grid = bin_edges_on_grid(edges_deg, Some(grid));
    if on_grid.is_empty() {
        return None;
    }
    let list: Vec<String> = on_grid.iter().map(|e| format!("{e}°")).collect();
    Some(format!(
        "bin edges {} are multiples of the {} grid: pairs at exactly those separations are \
         counted as inside (≤)",
        list.join(", "),
        grid.label()
    ))
}

#[cfg(test)]
#[path = "grid_tests.rs"]
mod tests;
