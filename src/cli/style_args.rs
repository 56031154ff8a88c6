//! The style options shared by `haloscope render` and `haloscope movie` (species, fields, ranges,
//! palettes, brightness, size factors, radii, tone, smoothing lengths), and the one function that
//! turns them into [`RenderSettings`].

use crate::data::kernel::parse_kernel_support;
use crate::data::{Snapshot, SpeciesKind};
use crate::render::{Bounds, Brightness, Camera, RenderSettings, SpeciesStyle};
use anyhow::{Context, bail};
use clap::Args;
use std::collections::BTreeMap;

/// `after_help` of the commands that flatten [`StyleArgs`]: the defaults of the style options.
pub const STYLE_DEFAULTS_HELP: &str = "Defaults: --species is gas when the file's gas has \
smoothing lengths, else dark (missing smoothing lengths come from the k-th nearest neighbour, \
--knn). With no --intensity every particle has n = 1. With no --color the colour follows the \
intensity field (same log flag) when there is one, else white. The palette defaults to inferno.";

/// How particles are drawn. Per-species options take `VALUE` (every drawn species) or
/// `SPECIES=VALUE` (one species) and may be repeated, e.g.
/// `--species gas,dark --intensity gas=Density --palette dark=ice`.
#[derive(Debug, Clone, Args)]
pub struct StyleArgs {
    /// Species to draw, comma separated (gas, dark, star, other).
    #[arg(long, value_delimiter = ',')]
    pub species: Vec<String>,
    /// Intensity field, `[SPECIES=]FIELD` (repeatable); none: n = 1.
    #[arg(long, value_name = "[SPECIES=]FIELD")]
    pub intensity: Vec<String>,
    /// log10 of the intensity; `--log-intensity=gas,dark` for some species only.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "SPECIES,...")]
    pub log_intensity: Option<String>,
    /// Fixed intensity limits `[SPECIES=]LO:HI` (log10 units under --log-intensity).
    #[arg(long, value_name = "[SPECIES=]LO:HI", allow_hyphen_values = true)]
    pub intensity_range: Vec<String>,
    /// Colour field, `[SPECIES=]FIELD` or `[SPECIES=]none` (white).
    #[arg(long, value_name = "[SPECIES=]FIELD|none")]
    pub color: Vec<String>,
    /// log10 of the colour value; `--log-color=gas` for some species only.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "SPECIES,...")]
    pub log_color: Option<String>,
    /// Fixed colour limits `[SPECIES=]LO:HI` (log10 units under --log-color).
    #[arg(long, value_name = "[SPECIES=]LO:HI", allow_hyphen_values = true)]
    pub color_range: Vec<String>,
    /// Palette `[SPECIES=]NAME` (see `render --list-palettes`; `NAME_r` is NAME reversed).
    #[arg(long, value_name = "[SPECIES=]NAME")]
    pub palette: Vec<String>,
    /// Per-species emission multiplier `[SPECIES=]B` (default 1).
    #[arg(long, value_name = "[SPECIES=]B")]
    pub species_brightness: Vec<String>,
    /// Per-species radius multiplier `[SPECIES=]F` (default 1).
    #[arg(long, value_name = "[SPECIES=]F")]
    pub size_factor: Vec<String>,
    /// Kernel support radius in units of the file's smoothing length h: `h`, `2h` or a factor
    /// (default: the file's convention: tipsy 2h, Gadget/AREPO h, SWIFT γ·h, γ ≈ 1.83 for the
    /// cubic spline). Estimated (kNN) lengths ignore it.
    #[arg(long, value_name = "h|2h|FACTOR", value_parser = parse_kernel_support)]
    pub kernel_support: Option<f32>,
    /// Global brightness B (turns auto exposure off); multiplies every emission.
    #[arg(long)]
    pub brightness: Option<f32>,
    /// Minimum splat radius in pixels (0 = none).
    #[arg(long, default_value_t = 1.0)]
    pub min_radius: f32,
    /// Tile border in pixels for the large class.
    #[arg(long, default_value_t = 8.0)]
    pub border: f32,
    /// Gamma applied to 1 − exp(−τ).
    #[arg(long, default_value_t = 1.0)]
    pub gamma: f32,
    /// Contrast multiplier after the gamma.
    #[arg(long, default_value_t = 1.0)]
    pub contrast: f32,
    /// k of the k-th nearest neighbour for species without smoothing lengths.
    #[arg(long, default_value_t = 32)]
    pub knn: usize,
    /// Periodic box side for the kNN smoothing lengths (the file's periodic box otherwise).
    #[arg(long = "box", value_name = "L")]
    pub box_size: Option<f64>,
}

impl StyleArgs {
    /// Makes the snapshot periodic with side `--box` when it is given.
    pub fn apply_box(&self, snapshot: &mut Snapshot) {
        if let Some(side) = self.box_size {
            snapshot.header.box_size = Some(side);
            snapshot.header.periodic = true;
        }
    }

    /// The species drawn: `--species` in order without repeats, else the default species.
    pub fn species_kinds(&self, snapshot: &Snapshot) -> anyhow::Result<Vec<SpeciesKind>> {
        if self.species.is_empty() {
            return match default_species(snapshot) {
                Some(kind) => Ok(vec![kind]),
                None => bail!("the snapshot has no particles"),
            };
        }
        let mut kinds = Vec::new();
        for name in &self.species {
            let Some(kind) = SpeciesKind::from_name(name) else {
                bail!("unknown species '{name}' (gas, dark, star, other)");
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        Ok(kinds)
    }

    /// The render settings of a `width`×`height` image seen by `camera`, or, with `None`, by a
    /// camera framing every drawn particle from +z (45 degree field of view). Tone is 8-bit.
    pub fn render_settings(
        &self,
        snapshot: &Snapshot,
        width: u32,
        height: u32,
        camera: Option<Camera>,
    ) -> anyhow::Result<RenderSettings> {
        let kinds = self.species_kinds(snapshot)?;
        let styles = self.species_styles(&kinds)?;
        let camera = camera.unwrap_or_else(|| match Bounds::of_snapshot(snapshot, &kinds) {
            Some(bounds) => Camera::frame_all(&bounds, width, height),
            None => Camera::look_at([0.0, 0.0, 1.0], [0.0; 3], [0.0, 1.0, 0.0], 45.0),
        });
        let mut settings = RenderSettings::new(width, height, camera, styles);
        settings.min_radius_px = self.min_radius;
        settings.border_px = self.border;
        settings.knn = self.knn;
        if let Some(b) = self.brightness {
            settings.brightness = Brightness::Explicit(b);
        }
        if !(self.gamma > 0.0 && self.gamma.is_finite() && self.contrast.is_finite()) {
            bail!("--gamma must be > 0 and --contrast finite");
        }
        settings.tone.gamma = self.gamma;
        settings.tone.contrast = self.contrast;
        Ok(settings)
    }

    /// One [`SpeciesStyle`] per drawn species from the per-species options.
    fn species_styles(&self, kinds: &[SpeciesKind]) -> anyhow::Result<Vec<SpeciesStyle>> {
        let field = |text: &str| Ok(text.trim().to_owned());
        let intensity = per_species("intensity", &self.intensity, kinds, field)?;
        let colour = per_species("color", &self.color, kinds, field)?;
        let intensity_range =
            per_species("intensity-range", &self.intensity_range, kinds, parse_range)?;
        let colour_range = per_species("color-range", &self.color_range, kinds, parse_range)?;
        let palette = per_species("palette", &self.palette, kinds, field)?;
        let brightness = per_species(
            "species-brightness",
            &self.species_brightness,
            kinds,
            parse_f32,
        )?;
        let size_factor = per_species("size-factor", &self.size_factor, kinds, parse_f32)?;
        let log_intensity = flagged("log-intensity", &self.log_intensity, kinds)?;
        let log_colour = flagged("log-color", &self.log_color, kinds)?;

        Ok(kinds
            .iter()
            .map(|&kind| {
                let mut style = SpeciesStyle::new(kind);
                style.intensity = intensity.get(&kind).cloned();
                style.intensity_log = log_intensity.contains(&kind);
                style.intensity_range = intensity_range.get(&kind).copied();
                match colour.get(&kind) {
                    Some(name) if name.eq_ignore_ascii_case("none") => style.colour = None,
                    Some(name) => {
                        style.colour = Some(name.clone());
                        style.colour_log = log_colour.contains(&kind);
                    }
                    // Default: colour follows the intensity field and its log flag.
                    None => {
                        style.colour = style.intensity.clone();
                        style.colour_log = if self.log_color.is_some() {
                            log_colour.contains(&kind)
                        } else {
                            style.intensity_log
                        };
                        if style.colour.is_some() && !colour_range.contains_key(&kind) {
                            style.colour_range = style.intensity_range;
                        }
                    }
                }
                if let Some(range) = colour_range.get(&kind) {
                    style.colour_range = Some(*range);
                }
                if let Some(name) = palette.get(&kind) {
                    style.palette = name.clone();
                }
                style.brightness = brightness.get(&kind).copied().unwrap_or(1.0);
                style.size_factor = size_factor.get(&kind).copied().unwrap_or(1.0);
                style.kernel_support = self.kernel_support;
                style
            })
            .collect())
    }
}

/// The default species: gas when it has smoothing lengths, else dark, else the first present.
pub fn default_species(snapshot: &Snapshot) -> Option<SpeciesKind> {
    let present = |kind| snapshot.species(kind).is_some_and(|s| !s.is_empty());
    if snapshot
        .species(SpeciesKind::Gas)
        .is_some_and(|s| !s.is_empty() && s.smoothing_lengths.is_some())
    {
        return Some(SpeciesKind::Gas);
    }
    if present(SpeciesKind::Dark) {
        return Some(SpeciesKind::Dark);
    }
    snapshot
        .species
        .iter()
        .find(|s| !s.is_empty())
        .map(|s| s.kind)
}

/// Splits `SPECIES=VALUE` (when the prefix names a species) from a plain `VALUE`.
fn split_species(value: &str) -> anyhow::Result<(Option<SpeciesKind>, &str)> {
    if let Some((head, tail)) = value.split_once('=') {
        return match SpeciesKind::from_name(head) {
            Some(kind) => Ok((Some(kind), tail)),
            None => bail!("'{head}' in '{value}' is not a species (gas, dark, star, other)"),
        };
    }
    Ok((None, value))
}

/// Per-species values of one repeatable option: plain values apply to every drawn species,
/// `SPECIES=VALUE` to one (later values win).
fn per_species<T: Clone>(
    option: &str,
    values: &[String],
    kinds: &[SpeciesKind],
    parse: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<BTreeMap<SpeciesKind, T>> {
    let mut map = BTreeMap::new();
    for value in values {
        let (kind, text) = split_species(value)?;
        let parsed = parse(text).with_context(|| format!("--{option} {value}"))?;
        match kind {
            Some(kind) if !kinds.contains(&kind) => {
                bail!("--{option} {value}: species {kind} is not drawn (see --species)")
            }
            Some(kind) => {
                map.insert(kind, parsed);
            }
            None => kinds.iter().for_each(|k| {
                map.insert(*k, parsed.clone());
            }),
        }
    }
    Ok(map)
}

/// Species named by a `--log-...[=SPECIES,...]` flag (all drawn species when empty).
fn flagged(
    option: &str,
    value: &Option<String>,
    kinds: &[SpeciesKind],
) -> anyhow::Result<Vec<SpeciesKind>> {
    let Some(list) = value else {
        return Ok(Vec::new());
    };
    if list.trim().is_empty() {
        return Ok(kinds.to_vec());
    }
    list.split(',')
        .map(|name| match SpeciesKind::from_name(name) {
            Some(kind) if kinds.contains(&kind) => Ok(kind),
            _ => bail!("--{option}={list}: '{name}' is not a drawn species"),
        })
        .collect()
}

fn parse_f32(text: &str) -> anyhow::Result<f32> {
    text.trim()
        .parse::<f32>()
        .with_context(|| format!("'{text}' is not a number"))
}

fn parse_range(text: &str) -> anyhow::Result<(f32, f32)> {
    let Some((lo, hi)) = text.split_once(':') else {
        bail!("expected LO:HI, got '{text}'");
    };
    Ok((parse_f32(lo)?, parse_f32(hi)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        style: StyleArgs,
    }

    fn parse(args: &[&str]) -> StyleArgs {
        let mut argv = vec!["test"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).expect("parses").style
    }

    #[test]
    fn kernel_support_reaches_every_style_and_bad_values_are_refused() {
        let kinds = [SpeciesKind::Gas, SpeciesKind::Dark];
        let styles = parse(&["--kernel-support", "2h"])
            .species_styles(&kinds)
            .expect("styles");
        assert!(styles.iter().all(|s| s.kernel_support == Some(2.0)));
        let default = parse(&[]).species_styles(&kinds).expect("styles");
        assert!(default.iter().all(|s| s.kernel_support.is_none()));
        let argv = ["test", "--kernel-support", "0"];
        let e = Cli::try_parse_from(argv).expect_err("negative").to_string();
        assert!(e.contains("kernel support `0`"), "{e}");
    }

    #[test]
    fn per_species_options_reach_the_settings() {
        let snapshot = crate::data::demo::demo_snapshot(3_000, 1);
        let style = parse(&[
            "--species",
            "gas,dark",
            "--intensity",
            "gas=Density",
            "--log-intensity=gas",
            "--palette",
            "viridis",
            "--palette",
            "dark=ice",
            "--size-factor",
            "dark=2.5",
            "--species-brightness",
            "0.5",
            "--brightness",
            "3",
            "--min-radius",
            "0.5",
            "--gamma",
            "0.8",
        ]);
        let settings = style
            .render_settings(&snapshot, 64, 32, None)
            .expect("settings");
        let [gas, dark] = &settings.species[..] else {
            panic!("two species expected: {:?}", settings.species);
        };
        assert_eq!(gas.kind, SpeciesKind::Gas);
        assert_eq!(gas.intensity.as_deref(), Some("Density"));
        assert!(gas.intensity_log && gas.colour_log);
        assert_eq!(gas.colour.as_deref(), Some("Density"));
        assert_eq!(gas.palette, "viridis");
        assert_eq!((gas.size_factor, gas.brightness), (1.0, 0.5));
        assert_eq!(dark.kind, SpeciesKind::Dark);
        assert_eq!(
            (dark.intensity.as_deref(), dark.colour.as_deref()),
            (None, None)
        );
        assert_eq!(dark.palette, "ice");
        assert_eq!((dark.size_factor, dark.brightness), (2.5, 0.5));
        assert_eq!(settings.brightness, Brightness::Explicit(3.0));
        assert_eq!((settings.min_radius_px, settings.tone.gamma), (0.5, 0.8));
        assert_eq!((settings.width, settings.height), (64, 32));
    }

    #[test]
    fn a_given_camera_is_kept_and_bad_options_name_themselves() {
        let snapshot = crate::data::demo::demo_snapshot(3_000, 1);
        let camera = Camera::look_at([1.0, 2.0, 3.0], [0.0; 3], [0.0, 1.0, 0.0], 30.0);
        let settings = parse(&[])
            .render_settings(&snapshot, 8, 8, Some(camera))
            .expect("settings");
        assert_eq!(settings.camera, camera);
        assert_eq!(settings.species.len(), 1);
        assert_eq!(settings.species[0].kind, SpeciesKind::Gas);
        let err = parse(&["--size-factor", "star=2"])
            .render_settings(&snapshot, 8, 8, None)
            .expect_err("star is not drawn");
        assert_eq!(
            err.to_string(),
            "--size-factor star=2: species star is not drawn (see --species)"
        );
        let err = parse(&["--gamma", "0"])
            .render_settings(&snapshot, 8, 8, None)
            .expect_err("gamma 0");
        assert_eq!(err.to_string(), "--gamma must be > 0 and --contrast finite");
    }
}
