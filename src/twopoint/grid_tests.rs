use super::*;

/// `count` coordinates (radians) on the grid of `1/per_degree`°, from a fixed-seed Philox draw.
fn grid_list(per_degree: u32, count: u32) -> (Vec<f64>, Vec<f64>) {
    let d = f64::from(per_degree);
    let ra = (0..count)
        .map(|i| {
            let k = philox_mantissa(3, 0, i) % u64::from(360 * per_degree);
            (k as f64 / d).to_radians()
        })
        .collect();
    let dec = (0..count)
        .map(|i| {
            let k = philox_mantissa(3, 1, i) % u64::from(180 * per_degree);
            (k as f64 / d - 90.0).to_radians()
        })
        .collect();
    (ra, dec)
}

fn step(grid: Option<CoordinateGrid>) -> Option<f64> {
    grid.map(CoordinateGrid::step_deg)
}

#[test]
fn detects_the_coarsest_grid_of_synthetic_lists() {
    let (ra, dec) = grid_list(100, 5_000);
    assert_eq!(step(detect_grid(&ra, &dec)), Some(0.01));
    let (ra, dec) = grid_list(2, 5_000);
    assert_eq!(step(detect_grid(&ra, &dec)), Some(0.5));
    let (ra, dec) = grid_list(10, 5_000);
    assert_eq!(step(detect_grid(&ra, &dec)), Some(0.1));
    // Continuous coordinates: no grid.
    let ra: Vec<f64> = (0..5_000).map(|i| scrambled_ra_of(9, 0, i)).collect();
    let dec: Vec<f64> = (0..5_000)
        .map(|i| scrambled_ra_of(9, 1, i) / 4.0 - 0.7)
        .collect();
    assert_eq!(detect_grid(&ra, &dec), None);
    // Finer than 0.01° (IC40 prints 0.001°) is not a grid.
    let (ra, dec) = grid_list(1000, 5_000);
    assert_eq!(detect_grid(&ra, &dec), None);
    assert_eq!(detect_grid(&[], &[]), None);
}

#[test]
fn one_value_off_the_grid_breaks_it() {
    let (mut ra, mut dec) = grid_list(10, 5_000);
    assert_eq!(step(detect_grid(&ra, &dec)), Some(0.1));
    ra[4_321] = 123.45f64.to_radians();
    assert_eq!(step(detect_grid(&ra, &dec)), Some(0.05));
    ra[4_321] = 123.456f64.to_radians();
    assert_eq!(detect_grid(&ra, &dec), None);
    ra[4_321] = 123.4f64.to_radians();
    dec[17] = (-12.3 + 1e-7f64).to_radians();
    assert_eq!(detect_grid(&ra, &dec), None);
}

#[test]
fn grid_scrambles_draw_only_grid_values() {
    for per_degree in [1, 10, 100] {
        let grid = CoordinateGrid::per_degree(per_degree).expect("grid");
        let scramble = Scramble::Grid(grid);
        let mut seen = std::collections::HashSet::new();
        for e in 0..20_000u32 {
            let ra = scramble.ra_of(5, 7, e);
            assert!((0.0..std::f64::consts::TAU).contains(&ra));
            let k = (ra.to_degrees() * f64::from(per_degree)).round();
            assert!(grid.holds_deg(ra.to_degrees()), "{ra}");
            // Bit for bit the value a reader gives for the decimal text of k / per_degree.
            let text = format!("{}", k / f64::from(per_degree));
            let parsed: f64 = text.parse().expect("number");
            assert_eq!(ra.to_bits(), parsed.to_radians().to_bits(), "{text}");
            seen.insert(k as u32);
        }
        if per_degree == 1 {
            // 20 000 draws over 360 values reach every one.
            assert_eq!(seen.len(), 360);
        }
    }
}

#[test]
fn grid_index_is_the_floor_of_the_continuous_draw() {
    let grid = CoordinateGrid::per_degree(10).expect("grid");
    for e in 0..5_000u32 {
        let u = philox_mantissa(1, 2, e) as f64 * (1.0 / 9_007_199_254_740_992.0);
        let k = (u * 3600.0).floor() as u32;
        assert_eq!(Scramble::Grid(grid).ra_of(1, 2, e), grid.ra_rad(k));
    }
    // Continuous keeps today's draws.
    assert_eq!(
        Scramble::Continuous.ra_of(1, 2, 3),
        scrambled_ra_of(1, 2, 3)
    );
}

#[test]
fn radians_factor_is_the_one_of_to_radians_and_the_kernel() {
    assert_eq!(RAD_PER_DEG, 1f64.to_radians());
    assert_eq!(RAD_PER_DEG.to_bits(), 0x3F91_DF46_A252_9D39);
    let source = include_str!("../../kernels/twopoint.cu");
    assert!(source.contains("0x1.1df46a2529d39p-6"));
}

#[test]
fn choice_and_edges() {
    let grid = CoordinateGrid::per_degree(10).expect("grid");
    assert_eq!(
        Scramble::choose(ScrambleChoice::Auto, Some(grid)),
        Ok(Scramble::Grid(grid))
    );
    assert_eq!(
        Scramble::choose(ScrambleChoice::Auto, None),
        Ok(Scramble::Continuous)
    );
    assert_eq!(
        Scramble::choose(ScrambleChoice::Continuous, Some(grid)),
        Ok(Scramble::Continuous)
    );
    assert!(Scramble::choose(ScrambleChoice::Grid, None).is_err());
    assert!(CoordinateGrid::per_degree(0).is_err());
    let edges: Vec<f64> = (1..=20).map(|k| 0.25 * f64::from(k)).collect();
    assert_eq!(
        bin_edges_on_grid(&edges, Some(grid)),
        [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]
    );
    assert_eq!(bin_edges_on_grid(&edges, None), Vec::<f64>::new());
    assert_eq!(grid.label(), "0.1°");
}

#[test]
fn notes_say_the_grid_the_scramble_and_the_edges() {
    let grid = CoordinateGrid::per_degree(10).expect("grid");
    assert_eq!(
        scramble_note(Some(grid), Scramble::Grid(grid)),
        "coordinates on a 0.1° grid: RA scrambled on the same grid (3600 values), so that \
         trials share the data's ties"
    );
    assert!(scramble_note(Some(grid), Scramble::Continuous).contains("on the continuum"));
    assert!(scramble_note(None, Scramble::Continuous).starts_with("coordinates on no grid"));
    assert_eq!(
        edges_on_grid_note(&[0.25, 0.5, 0.75, 1.0], Some(grid)).as_deref(),
        Some(
            "bin edges 0.5°, 1° are multiples of the 0.1° grid: pairs at exactly those \
             separations are counted as inside (≤)"
        )
    );
    assert_eq!(edges_on_grid_note(&[0.25, 0.75], Some(grid)), None);
    assert_eq!(edges_on_grid_note(&[0.5], None), None);
}
