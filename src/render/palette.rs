//! Colour palettes: matplotlib's colour maps under matplotlib's names (the tables of
//! [`super::colormaps`], made from matplotlib's own data), Haloscope's own ramps shipped as data
//! in `assets/palettes` (see its README), and the reverse `NAME_r` of every one of them.
//!
//! Every palette is a lookup table of N RGB entries in [0, 1] and is sampled as matplotlib's
//! `Colormap.__call__` samples a float: index = clip(⌊x·N⌋, 0, N − 1) (x = 1 is the last entry;
//! values below 0 take the first, above 1 the last; NaN, which matplotlib paints with its "bad"
//! colour, takes the first here). The data palettes become 256-entry tables the way matplotlib's
//! `LinearSegmentedColormap.from_list` builds one from evenly spaced colours.

use super::RenderError;
use super::colormaps;

/// Entries of a table built from a data palette (matplotlib's default `image.lut`).
const DATA_TABLE_LEN: usize = 256;

/// The suffix that names a palette's reverse (matplotlib's convention).
const REVERSED_SUFFIX: &str = "_r";

/// Haloscope's own palettes, shipped as data: (name, file text). Their names are not
/// matplotlib's, so a name always means matplotlib's map where matplotlib has one.
const DATA_PALETTES: [(&str, &str); 4] = [
    (
        "splotch-classic",
        include_str!("../../assets/palettes/splotch-classic.txt"),
    ),
    ("tipsy", include_str!("../../assets/palettes/tipsy.txt")),
    ("hot-gas", include_str!("../../assets/palettes/hot-gas.txt")),
    ("ice", include_str!("../../assets/palettes/ice.txt")),
];

/// The palette used when none is named.
pub const DEFAULT_PALETTE: &str = "inferno";

/// Every palette name without its `_r` reverse: matplotlib's maps (in matplotlib's order), then
/// Haloscope's data palettes. Aliases (`grey`, `Grays`, ...) and `NAME_r` are accepted too.
pub fn palette_names() -> Vec<&'static str> {
    colormaps::MAPS
        .iter()
        .map(|(name, _)| *name)
        .chain(DATA_PALETTES.iter().map(|(name, _)| *name))
        .collect()
}

/// matplotlib's table for `name` (exact spelling, aliases resolved), if matplotlib has one.
pub fn matplotlib_table(name: &str) -> Option<&'static [[f32; 3]]> {
    let name = colormaps::ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, original)| *original);
    colormaps::MAPS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, table)| *table)
}

/// The entry of `table` that matplotlib's `cmap(x)` returns for a float x:
/// clip(⌊x·N⌋, 0, N − 1) computed in f32 (NaN → entry 0). An empty table gives white.
#[inline]
pub fn lookup(table: &[[f32; 3]], x: f32) -> [f32; 3] {
    let n = table.len();
    // `as usize` saturates: negative and NaN products give 0, too large ones usize::MAX.
    let index = ((x * n as f32) as usize).min(n.saturating_sub(1));
    table.get(index).copied().unwrap_or([1.0; 3])
}

/// A colour table: N RGB entries in [0, 1], looked up as matplotlib does (see [`lookup`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Palette {
    /// The palette's name as asked for, in its canonical spelling (`NAME_r` when reversed).
    pub name: String,
    /// The N entries; x ∈ [i/N, (i + 1)/N) takes entry i.
    pub stops: Vec<[f32; 3]>,
}

impl Palette {
    /// The palette `name` (case-insensitive; `NAME_r` is NAME reversed); see [`palette_names`].
    pub fn by_name(name: &str) -> Result<Self, RenderError> {
        let wanted = name.trim();
        if let Some(palette) = Self::forward(wanted)? {
            return Ok(palette);
        }
        let reversed = wanted
            .len()
            .checked_sub(REVERSED_SUFFIX.len())
            .filter(|&cut| wanted.is_char_boundary(cut))
            .filter(|&cut| wanted[cut..].eq_ignore_ascii_case(REVERSED_SUFFIX))
            .map(|cut| Self::forward(&wanted[..cut]))
            .transpose()?
            .flatten();
        let Some(mut palette) = reversed else {
            return Err(RenderError::UnknownPalette {
                name: name.to_owned(),
                known: format!(
                    "{} (and NAME_r for each reversed)",
                    palette_names().join(", ")
                ),
            });
        };
        palette.stops.reverse();
        palette.name.push_str(REVERSED_SUFFIX);
        Ok(palette)
    }

    /// The palette named exactly `wanted` up to case, not reversed; `None` when unknown.
    fn forward(wanted: &str) -> Result<Option<Self>, RenderError> {
        if let Some((name, text)) = DATA_PALETTES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(wanted))
        {
            return Self::parse(name, text).map(Some);
        }
        // An exact match first: matplotlib's names differ only in more than case.
        let canonical = colormaps::MAPS
            .iter()
            .map(|(n, _)| *n)
            .chain(colormaps::ALIASES.iter().map(|(alias, _)| *alias))
            .find(|n| n.eq_ignore_ascii_case(wanted));
        Ok(canonical.and_then(|name| {
            matplotlib_table(name).map(|table| Self {
                name: name.to_owned(),
                stops: table.to_vec(),
            })
        }))
    }

    /// White at every value (`--color none`).
    pub fn white() -> Self {
        Self {
            name: "white".to_owned(),
            stops: vec![[1.0; 3]],
        }
    }

    /// Parses the data format (`#` comments, then one `r g b` line per stop, values in [0, 1],
    /// stops evenly spaced over [0, 1]) into a 256-entry table, interpolating linearly between
    /// the stops as matplotlib's `LinearSegmentedColormap.from_list` does.
    pub fn parse(name: &str, text: &str) -> Result<Self, RenderError> {
        let bad = |line: usize, what: &str| RenderError::Setting {
            message: format!("palette {name}, line {line}: {what}"),
        };
        let mut stops: Vec<[f64; 3]> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let values: Vec<f64> = line
                .split_whitespace()
                .map(str::parse::<f64>)
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
        let last = DATA_TABLE_LEN - 1;
        let table = (0..DATA_TABLE_LEN)
            .map(|i| {
                let t = i as f64 / last as f64 * (stops.len() - 1) as f64;
                let j = (t as usize).min(stops.len() - 2);
                let f = t - j as f64;
                let (a, b) = (stops[j], stops[j + 1]);
                [0, 1, 2].map(|c| (a[c] + f * (b[c] - a[c])) as f32)
            })
            .collect();
        Ok(Self {
            name: name.to_owned(),
            stops: table,
        })
    }

    /// The colour at x, as matplotlib's `cmap(x)` (see [`lookup`]).
    #[inline]
    pub fn sample(&self, x: f32) -> [f32; 3] {
        lookup(&self.stops, x)
    }

    /// The colour at x in 8 bits per channel (each channel rounded to the nearest of 255ths).
    pub fn sample_rgb8(&self, x: f32) -> [u8; 3] {
        self.sample(x)
            .map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_palette_and_its_reverse_loads() {
        for name in palette_names() {
            let palette = Palette::by_name(name).expect(name);
            assert_eq!(palette.name, name);
            assert!(palette.stops.len() >= 256, "{name}");
            let reversed = Palette::by_name(&format!("{name}_r")).expect(name);
            assert_eq!(reversed.name, format!("{name}_r"));
            let mut back = reversed.stops.clone();
            back.reverse();
            assert_eq!(back, palette.stops, "{name}");
        }
        let twilight = Palette::by_name("Twilight").expect("twilight");
        assert_eq!(twilight.name, "twilight");
        assert_eq!(twilight.stops.len(), 510);
        // matplotlib's first entry, 0.88575015840754434 0.85000924943067835 0.88797364126369815, in f32.
        assert_eq!(twilight.stops[0], [0.8857502, 0.85000926, 0.88797367]);
        assert_eq!(Palette::by_name("GREY_R").expect("alias").name, "grey_r");
    }

    #[test]
    fn no_two_names_differ_only_in_case() {
        let mut names: Vec<String> = palette_names()
            .into_iter()
            .chain(colormaps::ALIASES.iter().map(|(alias, _)| *alias))
            .map(str::to_ascii_lowercase)
            .collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn unknown_palette_is_an_error_naming_it() {
        for name in ["nope", "nope_r", "_r", "d3-rainbow"] {
            let err = Palette::by_name(name).expect_err(name);
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn lookup_is_matplotlibs_index_rule() {
        let table = [[0.0; 3], [0.25; 3], [0.5; 3], [1.0; 3]];
        assert_eq!(lookup(&table, 0.0), [0.0; 3]);
        assert_eq!(lookup(&table, 0.2499), [0.0; 3]);
        assert_eq!(lookup(&table, 0.25), [0.25; 3]);
        assert_eq!(lookup(&table, 0.99), [1.0; 3]);
        assert_eq!(lookup(&table, 1.0), [1.0; 3]);
        assert_eq!(lookup(&table, 7.0), [1.0; 3]);
        assert_eq!(lookup(&table, -0.1), [0.0; 3]);
        assert_eq!(lookup(&table, f32::NAN), [0.0; 3]);
        assert_eq!(lookup(&table, f32::INFINITY), [1.0; 3]);
        assert_eq!(lookup(&[], 0.5), [1.0; 3]);
    }

    #[test]
    fn data_palettes_interpolate_their_stops_into_256_entries() {
        let palette = Palette::parse("three", "# comment\n0 0 1\n0.5 1 0.5\n1 0 0\n").expect("ok");
        assert_eq!(palette.stops.len(), 256);
        assert_eq!(palette.stops[0], [0.0, 0.0, 1.0]);
        assert_eq!(palette.stops[255], [1.0, 0.0, 0.0]);
        // Entry 51 sits at x = 51/255 = 0.2, 40 % of the way to the middle stop.
        let mid = palette.stops[51];
        assert!(
            (mid[0] - 0.2).abs() < 1e-6 && (mid[1] - 0.4).abs() < 1e-6,
            "{mid:?}"
        );
        assert_eq!(palette.sample(1.0), [1.0, 0.0, 0.0]);
        assert_eq!(palette.sample(f32::NAN), [0.0, 0.0, 1.0]);
        let err = Palette::parse("bad", "0 0 1\n0 2 0\n").expect_err("range");
        assert_eq!(
            err.to_string(),
            "palette bad, line 2: values must lie in [0, 1]"
        );
    }

    #[test]
    fn viridis_is_matplotlibs() {
        let viridis = Palette::by_name("viridis").expect("viridis");
        assert_eq!(viridis.sample_rgb8(0.0), [0x44, 0x01, 0x54]);
        assert_eq!(viridis.sample_rgb8(1.0), [0xfd, 0xe7, 0x25]);
        assert_eq!(matplotlib_table("grey"), matplotlib_table("gray"));
        assert_eq!(matplotlib_table("Grey"), None);
    }
}
