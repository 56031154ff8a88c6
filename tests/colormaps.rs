//! Every palette with a matplotlib name against what matplotlib's `cmap(x)` returns
//! (tests/data/matplotlib_colormaps.json, written by scripts/colormaps/make_expected.py through
//! matplotlib itself), within 1/255 per channel.

use haloscope::render::colormaps::{ALIASES, MATPLOTLIB_VERSION};
use haloscope::render::palette::{Palette, matplotlib_table, palette_names};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Expected {
    matplotlib: String,
    scale: f64,
    x: Vec<f32>,
    all_names: Vec<String>,
    maps: BTreeMap<String, ExpectedMap>,
}

#[derive(Deserialize)]
struct ExpectedMap {
    n: usize,
    grid: Vec<i64>,
    points: Vec<i64>,
}

fn expected() -> Expected {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/matplotlib_colormaps.json"
    );
    let text = std::fs::read_to_string(path).expect("tests/data/matplotlib_colormaps.json");
    serde_json::from_str(&text).expect("valid expected colour maps")
}

/// The largest difference (in 255ths) between `palette` at `xs` and the expected RGB values.
fn worst_difference(palette: &Palette, xs: &[f32], expected: &[i64], scale: f64) -> f64 {
    assert_eq!(expected.len(), 3 * xs.len(), "{}", palette.name);
    xs.iter()
        .zip(expected.chunks_exact(3))
        .flat_map(|(&x, want)| {
            let got = palette.sample(x);
            (0..3).map(move |c| (f64::from(got[c]) - want[c] as f64 / scale).abs() * 255.0)
        })
        .fold(0.0, f64::max)
}

#[test]
fn every_matplotlib_name_matches_matplotlib_within_one_level() {
    let expected = expected();
    assert_eq!(expected.matplotlib, MATPLOTLIB_VERSION);
    let names: Vec<&str> = palette_names()
        .into_iter()
        .filter(|name| matplotlib_table(name).is_some())
        .chain(ALIASES.iter().map(|(alias, _)| *alias))
        .collect();
    assert!(names.len() >= 70, "{} matplotlib names", names.len());
    let mut checked = 0;
    for base in names {
        for name in [base.to_owned(), format!("{base}_r")] {
            let want = expected
                .maps
                .get(&name)
                .unwrap_or_else(|| panic!("{name} missing from the expected file"));
            let palette = Palette::by_name(&name).expect("offered name loads");
            assert_eq!(palette.stops.len(), want.n, "{name}: entries");
            // np.linspace(0, 1, N) as matplotlib computes it, then the float32 the renderer uses.
            let grid: Vec<f32> = (0..want.n)
                .map(|i| (i as f64 / (want.n - 1) as f64) as f32)
                .collect();
            let on_grid = worst_difference(&palette, &grid, &want.grid, expected.scale);
            let off_grid = worst_difference(&palette, &expected.x, &want.points, expected.scale);
            assert!(on_grid <= 1.0, "{name}: {on_grid} levels off on the grid");
            assert!(
                off_grid <= 1.0,
                "{name}: {off_grid} levels off between entries"
            );
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        expected.maps.len(),
        "every expected map was compared"
    );
}

#[test]
fn haloscope_palettes_do_not_take_a_matplotlib_name() {
    let expected = expected();
    let taken: Vec<String> = expected
        .all_names
        .iter()
        .map(|n| n.to_ascii_lowercase())
        .collect();
    for name in palette_names() {
        if matplotlib_table(name).is_none() {
            let lower = name.to_ascii_lowercase();
            assert!(!taken.contains(&lower), "{name} is a matplotlib name");
            assert!(!taken.contains(&format!("{lower}_r")), "{name}_r");
        } else {
            assert!(expected.all_names.iter().any(|n| n == name), "{name}");
        }
    }
}
