//! Everything about an event list that scrambled trials leave unchanged.

use super::cuts::{CutLevels, EnergyCut, energy_cuts};
use super::grid::{CoordinateGrid, Scramble, ScrambleChoice, detect_grid};
use super::{AngleBins, TwoPointConfig, TwoPointError};
use crate::data::EventList;
use std::f64::consts::{FRAC_PI_2, PI};

/// Stripes per largest angle: the sky is cut into declination stripes of height θ_max/4, so
/// that the stripes a search visits overhang its ±θ_max band by at most half a θ_max.
const STRIPES_PER_MAX_ANGLE: f64 = 4.0;

/// Safety margin (radians) on search windows, so that rounding never drops a pair at θ_max.
const WINDOW_MARGIN_RAD: f64 = 1e-9;

/// Events sorted by declination (stable: ties keep file order), with bins, cuts and search
/// windows. Index `e` below is the prepared (dec-sorted) index; trials key their RNG by it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Angle bins.
    pub bins: AngleBins,
    /// Energy cuts in the configuration's order.
    pub cuts: Vec<EnergyCut>,
    /// Cut thresholds ordered for the level test.
    pub levels: CutLevels,
    /// Index in the input event list of each prepared event.
    pub original_index: Vec<u32>,
    /// Observed right ascension (radians, [0, 2π)).
    pub ra: Vec<f64>,
    /// Declination (radians), ascending.
    pub dec: Vec<f64>,
    /// sin δ.
    pub sin_dec: Vec<f64>,
    /// cos δ.
    pub cos_dec: Vec<f64>,
    /// log10(E/GeV).
    pub energy: Vec<f64>,
    /// Number of cuts each event passes (see [`CutLevels`]).
    pub level: Vec<u8>,
    /// Search windows: event e looks in stripes `stripe_of(δ_e)`, `+1`, … (one per entry of
    /// `window_half_width[window_start[e]..window_start[e + 1]]`), in each within |Δα| ≤ the
    /// entry (π: the whole stripe). Every partner within θ_max lies inside.
    pub window_half_width: Vec<f64>,
    /// Offsets into `window_half_width`, one per event plus the end.
    pub window_start: Vec<u32>,
    /// Height of a declination stripe (radians).
    pub stripe_height: f64,
    /// `stripe_start[s]..stripe_start[s + 1]` are the prepared indices in stripe s.
    pub stripe_start: Vec<usize>,
    /// The grid every RA and Dec lies on, if any (see [`detect_grid`]).
    pub coordinate_grid: Option<CoordinateGrid>,
    /// How trials draw RA: on the grid when there is one, unless [`Prepared::set_scramble`]
    /// says otherwise.
    pub scramble: Scramble,
}

impl Prepared {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.dec.len()
    }

    /// Whether there are no events (never true for a prepared list).
    pub fn is_empty(&self) -> bool {
        self.dec.is_empty()
    }

    /// Sets how trials draw RA; `Grid` needs a detected grid. Trials of different scrambles
    /// must not be mixed in one analysis.
    pub fn set_scramble(&mut self, choice: ScrambleChoice) -> Result<(), TwoPointError> {
        self.scramble = Scramble::choose(choice, self.coordinate_grid)?;
        Ok(())
    }

    /// Number of declination stripes.
    pub fn stripe_count(&self) -> usize {
        self.stripe_start.len() - 1
    }

    /// The stripe holding declination `dec` (clamped to the sky).
    #[inline]
    pub fn stripe_of(&self, dec: f64) -> usize {
        let s = ((dec + FRAC_PI_2) / self.stripe_height).floor();
        (s.max(0.0) as usize).min(self.stripe_count() - 1)
    }
}

/// Sorts events by declination and precomputes bins, cut levels and search windows.
pub fn prepare(events: &EventList, config: &TwoPointConfig) -> Result<Prepared, TwoPointError> {
    let n = events.len();
    if n == 0 {
        return Err(TwoPointError::NoEvents);
    }
    if n > u32::MAX as usize || events.dec.len() != n || events.energy.len() != n {
        return Err(TwoPointError::BadInput(format!(
            "event list columns disagree or exceed 2^32 events (ra {}, dec {}, energy {})",
            n,
            events.dec.len(),
            events.energy.len()
        )));
    }
    if config.cut_fractions.len() > u8::MAX as usize {
        return Err(TwoPointError::Config("at most 255 energy cuts".into()));
    }
    let bins = AngleBins::new(config.bin_step_deg, config.bin_count)?;
    let cuts = energy_cuts(&config.cut_fractions, &events.energy)?;
    let levels = CutLevels::new(&cuts);

    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| events.dec[a as usize].total_cmp(&events.dec[b as usize]));
    let pick = |column: &[f64]| -> Vec<f64> { order.iter().map(|&i| column[i as usize]).collect() };
    let ra = pick(&events.ra);
    let dec = pick(&events.dec);
    let energy = pick(&events.energy);
    let sin_dec: Vec<f64> = dec.iter().map(|d| d.sin()).collect();
    let cos_dec: Vec<f64> = dec.iter().map(|d| d.cos()).collect();
    let level = energy.iter().map(|&e| levels.level(e)).collect();
    let coordinate_grid = detect_grid(&events.ra, &events.dec);
    let scramble = Scramble::choose(ScrambleChoice::Auto, coordinate_grid)?;

    let theta_max = bins.max_angle_rad();
    let stripe_height = theta_max / STRIPES_PER_MAX_ANGLE;
    let stripe_count = ((PI / stripe_height).ceil() as usize).max(1);
    let mut prepared = Prepared {
        bins,
        cuts,
        levels,
        original_index: order,
        ra,
        dec,
        sin_dec,
        cos_dec,
        energy,
        level,
        window_half_width: Vec::new(),
        window_start: Vec::new(),
        stripe_height,
        stripe_start: vec![0; stripe_count + 1],
        coordinate_grid,
        scramble,
    };
    // Declinations are sorted, so each stripe is a contiguous run; membership uses the same
    // floor rule as `stripe_of`, so boundaries agree.
    let mut stripe_start = vec![0usize; stripe_count + 1];
    let mut e = 0usize;
    for (s, slot) in stripe_start.iter_mut().enumerate().take(stripe_count) {
        while e < n && prepared.stripe_of(prepared.dec[e]) < s {
            e += 1;
        }
        *slot = e;
    }
    stripe_start[stripe_count] = n;
    prepared.stripe_start = stripe_start;
    let mut window_start = Vec::with_capacity(n + 1);
    let mut window_half_width = Vec::with_capacity(n * 6);
    for e in 0..n {
        window_start.push(window_half_width.len() as u32);
        let dec = prepared.dec[e];
        let first = prepared.stripe_of(dec);
        let last = prepared.stripe_of(dec + theta_max + WINDOW_MARGIN_RAD);
        for t in first..=last {
            let low = t as f64 * stripe_height - FRAC_PI_2;
            let high = low + stripe_height;
            window_half_width.push(stripe_half_width(dec, theta_max, low, high));
        }
    }
    window_start.push(window_half_width.len() as u32);
    if window_half_width.len() > u32::MAX as usize {
        return Err(TwoPointError::Config(
            "too many search windows: use fewer events or a smaller largest angle".into(),
        ));
    }
    prepared.window_start = window_start;
    prepared.window_half_width = window_half_width;
    Ok(prepared)
}

/// Largest |Δα| of a point within θ of (0, δ) with declination in [low, high] (radians), plus a
/// safety margin; π when the cap reaches a pole.
///
/// On the cap's boundary, cos Δα = (cos θ − sin δ sin δ')/(cos δ cos δ'); |Δα| peaks at the
/// tangent latitude sin δ* = sin δ / cos θ, where it equals asin(sin θ / cos δ), and falls
/// monotonically away from it, so the maximum over the band is at δ* clamped into the band.
fn stripe_half_width(dec: f64, theta: f64, low: f64, high: f64) -> f64 {
    if dec.abs() + theta + WINDOW_MARGIN_RAD >= FRAC_PI_2 {
        return PI;
    }
    let low = low.max(dec - theta - WINDOW_MARGIN_RAD);
    let high = high.min(dec + theta + WINDOW_MARGIN_RAD);
    if low > high {
        // Cannot happen for the stripes visited; searching the whole stripe is always correct.
        return PI;
    }
    let tangent = (dec.sin() / theta.cos()).clamp(-1.0, 1.0).asin();
    let nearest = tangent.clamp(low, high);
    let x = (theta.cos() - dec.sin() * nearest.sin()) / (dec.cos() * nearest.cos());
    // Margin on x before acos: acos is steep near 1, so rounding of x (~1e-16) must not shrink
    // the window below a true partner.
    let half_width = (x - 1e-12).clamp(-1.0, 1.0).acos();
    (half_width * (1.0 + 1e-9) + WINDOW_MARGIN_RAD).min(PI)
}
