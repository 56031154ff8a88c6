//! Colour palettes: perceptual maps by their matplotlib names (from the colorgrad crate's
//! presets, sampled at 256 stops), plus twilight and a few Splotch-like ramps shipped as data in
//! `assets/palettes` (see its README for provenance).
//!
//! Every palette is a table of evenly spaced RGB stops in [0, 1]; a value x ∈ [0, 1] is mapped
//! by linear interpolation between the two nearest stops, values outside are clamped to the end
//! colours (as upstream Splotch's `linearMap::getVal_const`, notes §8).

use super::RenderError;
use colorgrad::Gradient;

/// Stops sampled from a colorgrad preset.
const PRESET_STOPS: usize = 256;

/// Palettes shipped as data: (name, file text).
const DATA_PALETTES: [(&str, &str); 5] = [
    (
        "twilight",
        include_str!("../../assets/palettes/twilight.txt"),
    ),
    (
        "splotch-classic",
        include_str!("../../assets/palettes/splotch-classic.txt"),
    ),
    ("tipsy", include_str!("../../assets/palettes/tipsy.txt")),
    ("hot-gas", include_str!("../../assets/palettes/hot-gas.txt")),
    ("ice", include_str!("../../assets/palettes/ice.txt")),
];

/// Names of the colorgrad presets offered, with matplotlib's spelling.
const PRESET_NAMES: [&str; 24] = [
    "viridis",
    "inferno",
    "magma",
    "plasma",
    "cividis",
    "turbo",
    "cubehelix",
    "rainbow",
    "sinebow",
    "warm",
    "cool",
    "Spectral",
    "RdBu",
    "RdYlBu",
    "YlOrRd",
    "YlGnBu",
    "BuPu",
    "Blues",
    "Greens",
    "Greys",
    "Oranges",
    "Purples",
    "Reds",
    "PuOr",
];

/// The palette used when none is named.
pub const DEFAULT_PALETTE: &str = "inferno";

/// Every palette name, presets first, then the data palettes.
pub fn palette_names() -> Vec<&'static str> {
    PRESET_NAMES
        .iter()
        .copied()
        .chain(DATA_PALETTES.iter().map(|(name, _)| *name))
        .collect()
}

/// A colour table: evenly spaced RGB stops in [0, 1] (at least two).
#[derive(Debug, Clone, PartialEq)]
pub struct Palette {
    /// The palette's name.
    pub name: String,
    /// RGB stops; stop i sits at x = i/(len − 1).
    pub stops: Vec<[f32; 3]>,
}

impl Palette {
    /// The palette `name` (case-insensitive); see [`palette_names`].
    pub fn by_name(name: &str) -> Result<Self, RenderError> {
        let wanted = name.trim();
        if let Some((canonical, text)) = DATA_PALETTES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(wanted))
        {
            return Self::parse(canonical, text);
        }
        let Some(canonical) = PRESET_NAMES.iter().find(|n| n.eq_ignore_ascii_case(wanted)) else {
            return Err(RenderError::UnknownPalette {
                name: name.to_owned(),
                known: palette_names().join(", "),
            });
        };
        let gradient = preset(canonical);
        let stops = (0..PRESET_STOPS)
            .map(|i| {
                let c = gradient.at(i as f32 / (PRESET_STOPS - 1) as f32);
                [c.r, c.g, c.b].map(|v| v.clamp(0.0, 1.0))
            })
            .collect();
        Ok(Self {
            name: (*canonical).to_owned(),
            stops,
        })
    }

    /// White at every value (`--color none`).
    pub fn white() -> Self {
        Self {
            name: "white".to_owned(),
            stops: vec![[1.0; 3], [1.0; 3]],
        }
    }

    /// Parses the data format: `#` comments, then one `r g b` line (values in [0, 1]) per stop.
    pub fn parse(name: &str, text: &str) -> Result<Self, RenderError> {
        let bad = |line: usize, what: &str| RenderError::Setting {
            message: format!("palette {name}, line {line}: {what}"),
        };
        let mut stops = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let values: Vec<f32> = line
                .split_whitespace()
                .map(str::parse::<f32>)
                .collect::<Result<_, _>>()
                .map_err(|_| bad(index + 1, "expected three numbers"))?;
            let [r, g, b] = values[..] else {
                return Err(bad(index + 1, "expected three numbers"));
            };
            if ![r, g, b].iter().all(|v| (0.0..=1.0).contains(v)) {
                return Err(bad(index + 1, "values must lie in [0, 1]"));
            }
            stops.push([r, g, b]);
        }
        if stops.len() < 2 {
            return Err(bad(0, "needs at least two stops"));
        }
        Ok(Self {
            name: name.to_owned(),
            stops,
        })
    }

    /// The colour at x (clamped to [0, 1]; NaN → the first stop). f32, in the order written:
    /// t = x·(n − 1), i = min(⌊t⌋, n − 2), f = t − i, c = s_i + f·(s_{i+1} − s_i).
    #[inline]
    pub fn sample(&self, x: f32) -> [f32; 3] {
        let n = self.stops.len();
        if n < 2 {
            return self.stops.first().copied().unwrap_or([1.0; 3]);
        }
        let x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
        let t = x * (n - 1) as f32;
        let i = (t as usize).min(n - 2);
        let f = t - i as f32;
        let (a, b) = (self.stops[i], self.stops[i + 1]);
        [
            a[0] + f * (b[0] - a[0]),
            a[1] + f * (b[1] - a[1]),
            a[2] + f * (b[2] - a[2]),
        ]
    }
}

/// The colorgrad preset for a canonical name from [`PRESET_NAMES`].
fn preset(name: &str) -> Box<dyn Gradient> {
    use colorgrad::preset as p;
    match name {
        "viridis" => Box::new(p::viridis()),
        "inferno" => Box::new(p::inferno()),
        "magma" => Box::new(p::magma()),
        "plasma" => Box::new(p::plasma()),
        "cividis" => Box::new(p::cividis()),
        "turbo" => Box::new(p::turbo()),
        "cubehelix" => Box::new(p::cubehelix_default()),
        "rainbow" => Box::new(p::rainbow()),
        "sinebow" => Box::new(p::sinebow()),
        "warm" => Box::new(p::warm()),
        "cool" => Box::new(p::cool()),
        "Spectral" => Box::new(p::spectral()),
        "RdBu" => Box::new(p::rd_bu()),
        "RdYlBu" => Box::new(p::rd_yl_bu()),
        "YlOrRd" => Box::new(p::yl_or_rd()),
        "YlGnBu" => Box::new(p::yl_gn_bu()),
        "BuPu" => Box::new(p::bu_pu()),
        "Blues" => Box::new(p::blues()),
        "Greens" => Box::new(p::greens()),
        "Greys" => Box::new(p::greys()),
        "Oranges" => Box::new(p::oranges()),
        "Purples" => Box::new(p::purples()),
        "Reds" => Box::new(p::reds()),
        _ => Box::new(p::pu_or()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_palette_loads() {
        for name in palette_names() {
            let palette = Palette::by_name(name).expect(name);
            assert!(palette.stops.len() >= 2, "{name}");
            assert_eq!(palette.name, name);
        }
        let twilight = Palette::by_name("Twilight").expect("twilight");
        assert_eq!(twilight.stops.len(), 510);
        // A cyclic map starts and ends at the same colour.
        assert_eq!(twilight.stops[0], [0.886, 0.850, 0.888]);
        assert_eq!(twilight.stops[509], [0.886, 0.850, 0.886]);
    }

    #[test]
    fn unknown_palette_is_an_error_naming_it() {
        let err = Palette::by_name("nope").expect_err("unknown");
        assert!(err.to_string().contains("nope"));
    }

    #[test]
    fn sampling_interpolates_and_clamps() {
        let palette = Palette::by_name("splotch-classic").expect("classic");
        assert_eq!(palette.sample(0.0), [0.0, 0.0, 1.0]);
        assert_eq!(palette.sample(0.5), [0.5, 1.0, 0.5]);
        assert_eq!(palette.sample(0.25), [0.25, 0.5, 0.75]);
        assert_eq!(palette.sample(1.0), [1.0, 0.0, 0.0]);
        assert_eq!(palette.sample(7.0), [1.0, 0.0, 0.0]);
        assert_eq!(palette.sample(-1.0), [0.0, 0.0, 1.0]);
        assert_eq!(palette.sample(f32::NAN), [0.0, 0.0, 1.0]);
    }

    #[test]
    fn viridis_runs_from_purple_to_yellow() {
        let viridis = Palette::by_name("viridis").expect("viridis");
        let first = viridis.sample(0.0);
        let last = viridis.sample(1.0);
        // matplotlib viridis: #440154 → #fde725 (colorgrad ends at #fee825).
        assert!((first[0] - 0x44 as f32 / 255.0).abs() < 0.01);
        assert!((first[2] - 0x54 as f32 / 255.0).abs() < 0.01);
        assert!((last[0] - 0xfe as f32 / 255.0).abs() < 0.01);
        assert!((last[1] - 0xe8 as f32 / 255.0).abs() < 0.01);
    }
}
