//! A frame's settings checked and resolved against the data, shared by the CPU and CUDA twins:
//! the view, the species, their fields (as [`Values`]), limits, normalisers, palettes and
//! smoothing lengths. Bad settings are reported here, before any particle pass.

use super::normalise::Normaliser;
use super::palette::Palette;
use super::project::{LANES, ViewParams};
use super::{Brightness, RenderError, RenderSettings, SpeciesStyle};
use crate::data::{Masses, Snapshot, Species};
use std::borrow::Cow;

/// A per-particle value source without copying: a slice, or one value for all.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    /// One value per particle.
    Slice(&'a [f32]),
    /// The same value for every particle.
    Constant(f32),
}

impl Values<'_> {
    /// Value of particle `i`.
    #[inline]
    pub fn get(&self, i: usize) -> f32 {
        match self {
            Self::Slice(values) => values[i],
            Self::Constant(value) => *value,
        }
    }

    /// Values of particles `first..first + LANES`.
    #[inline(always)]
    pub(crate) fn lanes(&self, first: usize) -> [f32; LANES] {
        match self {
            Self::Slice(values) => std::array::from_fn(|l| values[first + l]),
            Self::Constant(value) => [*value; LANES],
        }
    }
}

/// The per-particle values of `name` in `species`: `mass`, `SmoothingLength` (also `hsml`,
/// `hsmooth` when not a field) or a named field, matched case-insensitively.
pub fn field_values<'a>(species: &'a Species, name: &str) -> Result<Values<'a>, RenderError> {
    if let Some(field) = species.field(name) {
        return Ok(Values::Slice(&field.values));
    }
    if name.eq_ignore_ascii_case("mass") {
        return Ok(match &species.masses {
            Masses::Uniform(m) => Values::Constant(*m),
            Masses::PerParticle(values) => Values::Slice(values),
        });
    }
    let is_h = ["smoothinglength", "smoothinglengths", "hsml", "hsmooth"]
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name));
    if is_h && let Some(h) = &species.smoothing_lengths {
        return Ok(Values::Slice(h));
    }
    if let Some((_, why)) = species
        .left_out
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        return Err(RenderError::FieldLeftOut {
            species: species.kind.to_string(),
            why: why.clone(),
        });
    }
    Err(RenderError::UnknownField {
        species: species.kind.to_string(),
        field: name.to_owned(),
        available: species.field_names().join(", "),
    })
}

/// A style resolved against the data (shared with the CUDA back-end).
pub(crate) struct Resolved<'a> {
    pub(crate) species: &'a Species,
    pub(crate) intensity: Option<(Normaliser, Values<'a>)>,
    pub(crate) colour: Option<(Normaliser, Values<'a>, Palette)>,
    pub(crate) smoothing: Cow<'a, [f32]>,
    pub(crate) style: &'a SpeciesStyle,
}

fn checked_range(
    what: &str,
    kind: &str,
    range: Option<(f32, f32)>,
) -> Result<Option<(f32, f32)>, RenderError> {
    match range {
        Some((lo, hi)) if !(lo.is_finite() && hi.is_finite() && lo <= hi) => {
            Err(RenderError::setting(format!(
                "{what} range {lo}..{hi} of species {kind} must be finite with lo <= hi"
            )))
        }
        other => Ok(other),
    }
}

fn normaliser(values: Values<'_>, n: usize, log: bool, range: Option<(f32, f32)>) -> Normaliser {
    match (range, values) {
        (Some((lo, hi)), _) => Normaliser::fixed(log, lo, hi),
        (None, Values::Slice(v)) => Normaliser::from_values(v, log),
        (None, Values::Constant(c)) => Normaliser::from_values(&[c][..n.min(1)], log),
    }
}

/// Checks everything about a frame that needs no particle pass, so that bad settings are
/// reported before any GPU is opened or any smoothing length computed.
pub fn validate_settings(
    snapshot: &Snapshot,
    settings: &RenderSettings,
) -> Result<(), RenderError> {
    checked_frame(settings)?;
    for style in &settings.species {
        let checked = checked_style(snapshot, style)?;
        super::smoothing::check_knn(checked.species, settings.knn)?;
    }
    Ok(())
}

/// The view and the global brightness (1 under auto exposure) of a frame, checked.
pub(crate) fn checked_frame(settings: &RenderSettings) -> Result<(ViewParams, f32), RenderError> {
    let view = ViewParams::new(
        &settings.camera,
        settings.width,
        settings.height,
        settings.min_radius_px,
        settings.border_px,
    )?;
    let global_brightness = match settings.brightness {
        Brightness::Explicit(b) if !(b >= 0.0 && b.is_finite()) => {
            return Err(RenderError::setting(format!(
                "brightness {b} must be a finite number >= 0"
            )));
        }
        Brightness::Explicit(b) => b,
        Brightness::Auto { .. } => 1.0,
    };
    if settings.species.is_empty() {
        return Err(RenderError::setting("no species to render"));
    }
    Ok((view, global_brightness))
}

/// A field chosen by a style with its optional fixed range.
pub(crate) type FieldChoice<'a> = Option<(Values<'a>, Option<(f32, f32)>)>;

/// The parts of a style that are looked up rather than computed.
struct CheckedStyle<'a> {
    species: &'a Species,
    intensity: FieldChoice<'a>,
    colour: FieldChoice<'a>,
    palette: Palette,
}

/// Looks up the species, fields, limits and palette of one style.
fn checked_style<'a>(
    snapshot: &'a Snapshot,
    style: &'a SpeciesStyle,
) -> Result<CheckedStyle<'a>, RenderError> {
    let kind = style.kind.name();
    let Some(species) = snapshot.species(style.kind) else {
        let present: Vec<&str> = snapshot.species.iter().map(|s| s.kind.name()).collect();
        return Err(RenderError::UnknownSpecies {
            name: kind.to_owned(),
            present: if present.is_empty() {
                "none".to_owned()
            } else {
                present.join(", ")
            },
        });
    };
    if !(style.size_factor > 0.0 && style.size_factor.is_finite()) {
        return Err(RenderError::setting(format!(
            "size factor {} of species {kind} must be a finite number > 0",
            style.size_factor
        )));
    }
    if let Some(k) = style.kernel_support
        && !(k > 0.0 && k.is_finite())
    {
        return Err(RenderError::setting(format!(
            "kernel support {k} of species {kind} must be a finite number > 0"
        )));
    }
    if !(style.brightness >= 0.0 && style.brightness.is_finite()) {
        return Err(RenderError::setting(format!(
            "brightness {} of species {kind} must be a finite number >= 0",
            style.brightness
        )));
    }
    let intensity = match &style.intensity {
        Some(name) => Some((
            field_values(species, name)?,
            checked_range("intensity", kind, style.intensity_range)?,
        )),
        None => None,
    };
    // Checked even when unused, so that a misspelt name is reported.
    let palette = Palette::by_name(&style.palette)?;
    let colour = match &style.colour {
        Some(name) => Some((
            field_values(species, name)?,
            checked_range("colour", kind, style.colour_range)?,
        )),
        None => None,
    };
    let n = species.len();
    for (what, choice) in [("intensity", &intensity), ("colour", &colour)] {
        if let Some((Values::Slice(v), _)) = choice
            && v.len() != n
        {
            return Err(RenderError::setting(format!(
                "{what} field of species {kind} has {} values for {n} particles",
                v.len()
            )));
        }
    }
    Ok(CheckedStyle {
        species,
        intensity,
        colour,
        palette,
    })
}

/// The smoothing lengths drawn: the file's h scaled to the drawing convention (support 2h,
/// DESIGN.md §4), h·support/2 with the style's override or else the file's support; borrowed
/// when the factor is 1 (tipsy, and every estimated length), so those stay bit-identical.
fn drawn_smoothing<'a>(
    h: &'a [f32],
    file_support: Option<f32>,
    style: &SpeciesStyle,
) -> Cow<'a, [f32]> {
    let factor = smoothing_factor(file_support, style);
    if factor == 1.0 {
        Cow::Borrowed(h)
    } else {
        Cow::Owned(h.iter().map(|&x| x * factor).collect())
    }
}

/// The factor that turns the file's smoothing lengths into drawn ones (h·support/2; 1 when the
/// reader gave no convention).
fn smoothing_factor(file_support: Option<f32>, style: &SpeciesStyle) -> f32 {
    match file_support {
        Some(file_support) => style.kernel_support.unwrap_or(file_support) / 2.0,
        None => 1.0,
    }
}

/// A style resolved against the data without any pass over the particles: the fields with
/// their fixed ranges and the file's smoothing lengths with the factor that makes them the
/// drawn ones (the CUDA twin transforms them while it uploads).
pub(crate) struct Fields<'a> {
    pub(crate) species: &'a Species,
    pub(crate) intensity: FieldChoice<'a>,
    pub(crate) colour: FieldChoice<'a>,
    /// The file's smoothing lengths (empty when it has none).
    pub(crate) smoothing: &'a [f32],
    /// Drawn length = file length · factor, in f32.
    pub(crate) smoothing_factor: f32,
}

/// Looks up the species, fields, limits and palette of one style, checking the smoothing
/// lengths' count, without touching the particles.
pub(crate) fn resolve_fields<'a>(
    snapshot: &'a Snapshot,
    style: &'a SpeciesStyle,
) -> Result<Fields<'a>, RenderError> {
    let CheckedStyle {
        species,
        intensity,
        colour,
        palette: _,
    } = checked_style(snapshot, style)?;
    let n = species.len();
    let smoothing = match &species.smoothing_lengths {
        Some(h) if h.len() == n => h.as_slice(),
        Some(h) => {
            return Err(RenderError::setting(format!(
                "species {} has {} smoothing lengths for {n} particles",
                style.kind.name(),
                h.len()
            )));
        }
        None => &[][..],
    };
    Ok(Fields {
        species,
        intensity,
        colour,
        smoothing,
        smoothing_factor: smoothing_factor(species.kernel_support, style),
    })
}

/// Looks up the species, fields, limits and palette of one style and builds its normalisers.
pub(crate) fn resolve<'a>(
    snapshot: &'a Snapshot,
    style: &'a SpeciesStyle,
) -> Result<Resolved<'a>, RenderError> {
    let CheckedStyle {
        species,
        intensity,
        colour,
        palette,
    } = checked_style(snapshot, style)?;
    let kind = style.kind.name();
    let n = species.len();
    let intensity = intensity
        .map(|(values, range)| (normaliser(values, n, style.intensity_log, range), values));
    let colour = colour.map(|(values, range)| {
        (
            normaliser(values, n, style.colour_log, range),
            values,
            palette,
        )
    });
    let smoothing = match &species.smoothing_lengths {
        Some(h) if h.len() == n => drawn_smoothing(h, species.kernel_support, style),
        Some(h) => {
            return Err(RenderError::setting(format!(
                "species {kind} has {} smoothing lengths for {n} particles",
                h.len()
            )));
        }
        None => Cow::Borrowed(&[][..]),
    };
    Ok(Resolved {
        species,
        intensity,
        colour,
        smoothing,
        style,
    })
}
