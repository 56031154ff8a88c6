//! Everything about an event list that scrambled trials leave unchanged.

use super::cuts::{CutLevels, EnergyCut, energy_cuts};
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
    /// Half-width in RA of the search window of each event: every event within θ_max of it has
    /// |Δα| ≤ this; π where the θ_max cap contains a pole.
    pub ra_half_width: Vec<f64>,
    /// Height of a declination stripe (radians).
    pub stripe_height: f64,
    /// `stripe_start[s]..stripe_start[s + 1]` are the prepared indices in stripe s.
    pub stripe_start: Vec<usize>,
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

    /// The last stripe that can hold a partner of prepared event `e` (Dec ≤ δ_e + θ_max).
    #[inline]
    pub fn last_stripe_for(&self, e: usize) -> usize {
        self.stripe_of(self.dec[e] + self.bins.max_angle_rad() + WINDOW_MARGIN_RAD)
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

    let theta_max = bins.max_angle_rad();
    // A point within θ of (α, δ) has |Δα| ≤ asin(sin θ / cos δ) when the cap misses the poles
    // (|δ| + θ < π/2); spherical law of sines on the pole–centre–tangent-point triangle.
    let ra_half_width = dec
        .iter()
        .zip(&cos_dec)
        .map(|(&d, &c)| {
            if d.abs() + theta_max + WINDOW_MARGIN_RAD >= FRAC_PI_2 {
                PI
            } else {
                let s = theta_max.sin() / c;
                if s >= 1.0 {
                    PI
                } else {
                    (s.asin() * (1.0 + 1e-9) + WINDOW_MARGIN_RAD).min(PI)
                }
            }
        })
        .collect();

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
        ra_half_width,
        stripe_height,
        stripe_start: vec![0; stripe_count + 1],
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
    Ok(prepared)
}
