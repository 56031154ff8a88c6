//! Equal-area all-sky projections for the event sky map (pure maths, no UI).
//!
//! Both map the sphere into the ellipse x²/8 + y²/2 ≤ 1 (x ∈ [−2√2, 2√2], y ∈ [−√2, √2]).
//! Formulas: Snyder, "Map Projections — A Working Manual" (USGS PP 1395, 1987), §31 (Mollweide,
//! eqs. 31-1 to 31-5) and the Hammer–Aitoff form given there (p. 232, Hammer's equal-area).
//! Longitude is measured from the map centre; astronomers draw RA increasing to the left, so
//! [`sky_to_map`] flips x.

use serde::{Deserialize, Serialize};
use std::f64::consts::{FRAC_PI_2, PI, SQRT_2};

/// Which all-sky projection to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SkyProjection {
    /// Hammer–Aitoff (equal-area, curved parallels).
    HammerAitoff,
    /// Mollweide (equal-area, straight parallels).
    Mollweide,
}

impl SkyProjection {
    /// Name shown in the UI.
    pub fn label(self) -> &'static str {
        match self {
            Self::HammerAitoff => "Hammer–Aitoff",
            Self::Mollweide => "Mollweide",
        }
    }
}

/// Half-width of the map ellipse, 2√2.
pub const MAP_HALF_WIDTH: f64 = 2.0 * SQRT_2;
/// Half-height of the map ellipse, √2.
pub const MAP_HALF_HEIGHT: f64 = SQRT_2;

/// Projects longitude `lon` ∈ [−π, π] and latitude `lat` ∈ [−π/2, π/2] (radians) to map
/// coordinates (x right, y up).
pub fn project(projection: SkyProjection, lon: f64, lat: f64) -> [f64; 2] {
    match projection {
        SkyProjection::HammerAitoff => {
            // Snyder p. 232: z = √(1 + cos φ cos(λ/2)), x = 2√2 cos φ sin(λ/2)/z, y = √2 sin φ/z.
            // z ≥ 1 for |λ| ≤ π, so the division is safe.
            let z = (1.0 + lat.cos() * (0.5 * lon).cos()).sqrt();
            [
                2.0 * SQRT_2 * lat.cos() * (0.5 * lon).sin() / z,
                SQRT_2 * lat.sin() / z,
            ]
        }
        SkyProjection::Mollweide => {
            let theta = mollweide_theta(lat);
            // Snyder eqs. 31-1, 31-2 with R = 1.
            [2.0 * SQRT_2 / PI * lon * theta.cos(), SQRT_2 * theta.sin()]
        }
    }
}

/// The auxiliary angle θ of the Mollweide projection: 2θ + sin 2θ = π sin φ (Snyder eq. 31-4),
/// solved by Newton's method (eq. 31-5 in its 2θ form); at the poles θ = φ.
pub fn mollweide_theta(lat: f64) -> f64 {
    if (lat.abs() - FRAC_PI_2).abs() < 1e-9 {
        return lat;
    }
    let target = PI * lat.sin();
    let mut two_theta = 2.0 * lat;
    for _ in 0..50 {
        let f = two_theta + two_theta.sin() - target;
        let df = 1.0 + two_theta.cos();
        if df.abs() < 1e-15 {
            break;
        }
        let step = f / df;
        two_theta -= step;
        if step.abs() < 1e-13 {
            break;
        }
    }
    0.5 * two_theta
}

/// Map coordinates of an equatorial direction: RA and Dec in radians, map centred on RA = π
/// (so RA 0 and 2π meet at the rim) with RA increasing to the left, as on the sky.
pub fn sky_to_map(projection: SkyProjection, ra: f64, dec: f64) -> [f64; 2] {
    let lon = ra.rem_euclid(2.0 * PI) - PI;
    let [x, y] = project(projection, lon, dec);
    [-x, y]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inside_ellipse([x, y]: [f64; 2]) -> bool {
        x * x / 8.0 + y * y / 2.0 <= 1.0 + 1e-12
    }

    #[test]
    fn centre_rim_and_poles_land_on_the_ellipse_points() {
        for projection in [SkyProjection::HammerAitoff, SkyProjection::Mollweide] {
            let at = |lon: f64, lat: f64| project(projection, lon, lat);
            let [x, y] = at(0.0, 0.0);
            assert!(x.abs() < 1e-15 && y.abs() < 1e-15);
            let [x, y] = at(PI, 0.0);
            assert!((x - MAP_HALF_WIDTH).abs() < 1e-12 && y.abs() < 1e-12);
            let [x, y] = at(1.0, FRAC_PI_2);
            assert!(x.abs() < 1e-12 && (y - MAP_HALF_HEIGHT).abs() < 1e-12);
            let [x, y] = at(-1.0, -FRAC_PI_2);
            assert!(x.abs() < 1e-12 && (y + MAP_HALF_HEIGHT).abs() < 1e-12);
        }
    }

    #[test]
    fn mollweide_theta_solves_its_equation() {
        for i in -89..=89 {
            let lat = (i as f64).to_radians();
            let theta = mollweide_theta(lat);
            let residual = 2.0 * theta + (2.0 * theta).sin() - PI * lat.sin();
            assert!(residual.abs() < 1e-12, "lat {i}°: residual {residual}");
        }
    }

    #[test]
    fn hammer_aitoff_matches_a_hand_computed_point() {
        // λ = 90°, φ = 30°: z = √(1 + cos30°·cos45°), x = 2√2·cos30°·sin45°/z, y = √2·sin30°/z.
        let (c30, s45) = (3f64.sqrt() / 2.0, SQRT_2 / 2.0);
        let z = (1.0 + c30 * s45).sqrt();
        let [x, y] = project(SkyProjection::HammerAitoff, FRAC_PI_2, 30f64.to_radians());
        assert!((x - 2.0 * SQRT_2 * c30 * s45 / z).abs() < 1e-12);
        assert!((y - SQRT_2 * 0.5 / z).abs() < 1e-12);
    }

    #[test]
    fn every_direction_maps_inside_the_ellipse_and_ra_runs_leftwards() {
        for projection in [SkyProjection::HammerAitoff, SkyProjection::Mollweide] {
            for ra_deg in (0..=360).step_by(15) {
                for dec_deg in (-90..=90).step_by(15) {
                    let p = sky_to_map(
                        projection,
                        (ra_deg as f64).to_radians(),
                        (dec_deg as f64).to_radians(),
                    );
                    assert!(
                        inside_ellipse(p),
                        "{projection:?} {ra_deg} {dec_deg}: {p:?}"
                    );
                }
            }
            // RA = π is the centre; a larger RA is further left.
            let centre = sky_to_map(projection, PI, 0.0);
            let left = sky_to_map(projection, PI + 0.5, 0.0);
            assert!(centre[0].abs() < 1e-12 && left[0] < 0.0);
        }
    }
}
