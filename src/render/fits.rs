//! FITS output of a render (through the fitsio crate, i.e. cfitsio): a primary HDU with no data,
//! then τ as float32 in the image extension `TAU` and the tone-mapped image in the extension
//! `IMAGE` (8- or 16-bit), each one plane for a grey frame or three (R, G, B) for a coloured one.
//! The camera, the source file, time and redshift, the file's unit facts and the render
//! settings are in all three headers (ds9 and astropy read one HDU at a time). FITS stores the bottom row first (ds9 and
//! astropy's `origin='lower'` show it at the bottom), so rows are written bottom-up: FITS pixel
//! (x, y, plane) is τ row H − y of the `.npy`.

use super::camera::Projection;
use super::tau::TauBuffer;
use super::{Brightness, RenderError, RenderOutput, RenderSettings, RenderStats};
use crate::data::{Header, SourceInfo};
use crate::output::write_atomically;
use fitsio::FitsFile;
use fitsio::images::{ImageDescription, ImageType};
use std::io::Write;
use std::path::Path;

/// The value of one header card.
#[derive(Debug, Clone, PartialEq)]
pub enum CardValue {
    /// A string (FITS keeps at most 68 characters).
    Text(String),
    /// A real number.
    Float(f64),
    /// An integer (flags are written as 1 or 0).
    Int(i64),
}

/// One header card: key (at most 8 characters: A–Z, 0–9, `-`, `_`), value and comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    /// The keyword.
    pub key: String,
    /// The value.
    pub value: CardValue,
    /// What it means, with its unit where it has one.
    pub comment: String,
}

impl Card {
    fn new(key: impl Into<String>, value: CardValue, comment: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value,
            comment: comment.into(),
        }
    }
    fn text(key: impl Into<String>, value: impl Into<String>, comment: &str) -> Self {
        Self::new(key, CardValue::Text(value.into()), comment)
    }
    /// A real card; a value that is not finite (which FITS cannot hold as a number) as text.
    fn float(key: impl Into<String>, value: f64, comment: &str) -> Self {
        if value.is_finite() {
            Self::new(key, CardValue::Float(value), comment)
        } else {
            Self::new(key, CardValue::Text(value.to_string()), comment)
        }
    }
    fn int(key: impl Into<String>, value: i64, comment: &str) -> Self {
        Self::new(key, CardValue::Int(value), comment)
    }
}

/// What a finished render knows, for its FITS header.
#[derive(Debug, Clone, Copy)]
pub struct RenderFacts<'a> {
    /// The snapshot's header (time, redshift, unit facts).
    pub header: &'a Header,
    /// Where the snapshot came from.
    pub source: &'a SourceInfo,
    /// The settings of the render.
    pub settings: &'a RenderSettings,
    /// Its facts (brightness used).
    pub stats: &'a RenderStats,
    /// The back-end that made it (`cpu`, `cuda`).
    pub backend: &'a str,
}

/// Length unit comment for positions: the file's own where it states one.
fn length_unit(header: &Header) -> String {
    format!("[{}]", header.units.length_label(false))
}

/// The header cards of a render: source, time, units, camera, then the render settings.
pub fn header_cards(facts: &RenderFacts<'_>) -> Vec<Card> {
    let RenderFacts {
        header,
        source,
        settings,
        stats,
        backend,
    } = *facts;
    let mut cards = vec![Card::text(
        "ORIGIN",
        concat!("haloscope ", env!("CARGO_PKG_VERSION")),
        "software that wrote this file",
    )];
    if let Some(path) = source.paths.first() {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        cards.push(Card::text(
            "SRCFILE",
            name,
            "snapshot file (first, if several)",
        ));
    }
    cards.push(Card::text(
        "SRCFMT",
        source.format.name(),
        "snapshot format",
    ));
    cards.push(Card::float(
        "TIME",
        header.time,
        "snapshot time (expansion factor if comoving)",
    ));
    if let Some(z) = header.redshift {
        cards.push(Card::float("REDSHIFT", z, "snapshot redshift"));
    }
    if let Some(side) = header.box_size {
        cards.push(Card::float("BOXSIZE", side, &length_unit(header)));
    }
    let units = &header.units;
    cards.push(Card::text(
        "LENLABEL",
        units.length_label(false),
        "code length unit",
    ));
    cards.push(Card::text("MASLABEL", units.mass_label(), "code mass unit"));
    for (key, name, cgs) in [
        ("LENUNIT", "length", units.length_cm),
        ("MASSUNIT", "mass", units.mass_g),
        ("VELUNIT", "velocity", units.velocity_cm_per_s),
    ] {
        if let Some(value) = cgs {
            cards.push(Card::float(key, value, &format!("code {name} unit in cgs")));
        }
    }
    let camera = &settings.camera;
    let length = length_unit(header);
    for (prefix, vector, what) in [
        ("CAMPOS", camera.position, "camera position"),
        ("LOOKAT", camera.lookat, "look-at point"),
        ("CAMUP", camera.up, "up direction"),
    ] {
        for (axis, value) in ["X", "Y", "Z"].iter().zip(vector) {
            let comment = if prefix == "CAMUP" {
                what.to_owned()
            } else {
                format!("{what} {length}")
            };
            cards.push(Card::float(format!("{prefix}{axis}"), value, &comment));
        }
    }
    let projection = match camera.projection {
        Projection::Perspective => "perspective",
        Projection::Orthographic => "orthographic",
    };
    cards.push(Card::text("PROJECT", projection, "camera projection"));
    cards.push(Card::float(
        "FOV",
        camera.fov_deg,
        "horizontal field of view [deg]",
    ));
    if camera.projection == Projection::Orthographic {
        // The orthographic view keeps the perspective one's scale at the look-at plane.
        let distance = (0..3)
            .map(|i| (camera.position[i] - camera.lookat[i]).powi(2))
            .sum::<f64>()
            .sqrt();
        let width = 2.0 * distance * (camera.fov_deg.to_radians() / 2.0).tan();
        cards.push(Card::float(
            "ORTHOW",
            width,
            &format!("orthographic view width {length}"),
        ));
    }
    cards.push(Card::float(
        "NEAR",
        camera.near,
        &format!("near depth limit {length}"),
    ));
    if camera.far.is_finite() {
        cards.push(Card::float(
            "FAR",
            camera.far,
            &format!("far depth limit {length}"),
        ));
    }
    cards.extend(settings_cards(settings, stats, backend));
    cards
}

/// The render settings: back-end, exposure, tone, sizes, then per species (suffix 1, 2, ...).
fn settings_cards(settings: &RenderSettings, stats: &RenderStats, backend: &str) -> Vec<Card> {
    let exposure = match settings.brightness {
        Brightness::Auto { .. } => "auto",
        Brightness::Explicit(_) => "explicit",
    };
    let mut cards = vec![
        Card::text("BACKEND", backend, "renderer back-end"),
        Card::text("EXPOSURE", exposure, "brightness chosen (auto) or given"),
        Card::float(
            "BRIGHT",
            f64::from(stats.brightness),
            "global brightness used",
        ),
        Card::float(
            "TAUSCALE",
            f64::from(stats.tau_scale),
            "image = 1 - exp(-TAUSCALE tau)",
        ),
        Card::float("GAMMA", f64::from(settings.tone.gamma), "tone gamma"),
        Card::float(
            "CONTRAST",
            f64::from(settings.tone.contrast),
            "tone contrast",
        ),
        Card::float(
            "MINRAD",
            f64::from(settings.min_radius_px),
            "minimum radius [pixel]",
        ),
        Card::int("KNN", settings.knn as i64, "k of kNN smoothing lengths"),
        Card::int("NSPECIES", settings.species.len() as i64, "species drawn"),
    ];
    for (index, style) in settings.species.iter().enumerate() {
        let n = index + 1;
        let field = |f: &Option<String>| f.clone().unwrap_or_else(|| "none".to_owned());
        cards.push(Card::text(
            format!("SPECIE{n}"),
            style.kind.name(),
            "species",
        ));
        cards.push(Card::text(
            format!("INTENS{n}"),
            field(&style.intensity),
            "intensity field",
        ));
        cards.push(Card::int(
            format!("ILOG{n}"),
            i64::from(style.intensity_log),
            "1: log10",
        ));
        cards.push(Card::text(
            format!("COLOR{n}"),
            field(&style.colour),
            "colour field",
        ));
        cards.push(Card::int(
            format!("CLOG{n}"),
            i64::from(style.colour_log),
            "1: log10",
        ));
        let palette = if style.colour.is_some() {
            style.palette.clone()
        } else {
            "none".to_owned()
        };
        cards.push(Card::text(
            format!("PALETT{n}"),
            palette,
            "matplotlib-named palette",
        ));
        cards.push(Card::float(
            format!("SBRIGH{n}"),
            f64::from(style.brightness),
            "species brightness",
        ));
        cards.push(Card::float(
            format!("SIZEF{n}"),
            f64::from(style.size_factor),
            "radius multiplier",
        ));
    }
    cards
}

/// An image of a render in pixel order (row 0 at the top, channels interleaved).
#[derive(Debug, Clone, Copy)]
pub enum Pixels<'a> {
    /// 8 bits per channel.
    U8(&'a [u8]),
    /// 16 bits per channel.
    U16(&'a [u16]),
}

/// The planes of interleaved `data` (H × W × 3, row 0 at the top) in FITS order: plane by
/// plane, bottom row first; one plane (the first channel) when `planes` is 1.
fn fits_order<T: Copy>(data: &[T], width: usize, height: usize, planes: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(width * height * planes);
    for plane in 0..planes {
        for row in (0..height).rev() {
            let start = row * width * 3;
            out.extend(data[start..start + width * 3].iter().skip(plane).step_by(3));
        }
    }
    out
}

/// Writes `tau` (float32) and `image` (the tone-mapped pixels, same size) to `path` as FITS,
/// one plane each when `grey`, else three; `cards` go into every header. Atomic: the file is
/// made in a temporary folder, then written to `path` through the atomic writer.
pub fn write_fits(
    path: &Path,
    tau: &TauBuffer,
    image: Pixels<'_>,
    grey: bool,
    cards: &[Card],
) -> Result<(), RenderError> {
    let fits_error = |e: fitsio::errors::Error| RenderError::Encode {
        path: path.to_path_buf(),
        message: format!("FITS: {e}"),
    };
    let io = |error| RenderError::Io {
        path: path.to_path_buf(),
        error,
    };
    let (width, height) = (tau.width as usize, tau.height as usize);
    let planes = if grey { 1 } else { 3 };
    let image_len = match image {
        Pixels::U8(p) => p.len(),
        Pixels::U16(p) => p.len(),
    };
    if tau.data.len() != width * height * 3 || image_len != width * height * 3 {
        return Err(RenderError::Encode {
            path: path.to_path_buf(),
            message: format!("FITS: τ and image must both hold {width}×{height}×3 values"),
        });
    }
    let dimensions: Vec<usize> = if grey {
        vec![height, width]
    } else {
        vec![3, height, width]
    };
    let scratch = tempfile::tempdir().map_err(io)?;
    let scratch_path = scratch.path().join("render.fits");
    {
        let mut file = FitsFile::create(&scratch_path).open().map_err(fits_error)?;
        let primary = file.primary_hdu().map_err(fits_error)?;
        write_cards(&mut file, &primary, cards).map_err(fits_error)?;
        let tau_description = ImageDescription {
            data_type: ImageType::Float,
            dimensions: &dimensions,
        };
        let tau_hdu = file
            .create_image("TAU", &tau_description)
            .map_err(fits_error)?;
        tau_hdu
            .write_image(&mut file, &fits_order(&tau.data, width, height, planes))
            .map_err(fits_error)?;
        write_cards(&mut file, &tau_hdu, cards).map_err(fits_error)?;
        let data_type = match image {
            Pixels::U8(_) => ImageType::UnsignedByte,
            Pixels::U16(_) => ImageType::UnsignedShort,
        };
        let image_description = ImageDescription {
            data_type,
            dimensions: &dimensions,
        };
        let hdu = file
            .create_image("IMAGE", &image_description)
            .map_err(fits_error)?;
        match image {
            Pixels::U8(p) => hdu.write_image(&mut file, &fits_order(p, width, height, planes)),
            Pixels::U16(p) => hdu.write_image(&mut file, &fits_order(p, width, height, planes)),
        }
        .map_err(fits_error)?;
        write_cards(&mut file, &hdu, cards).map_err(fits_error)?;
    }
    let bytes = std::fs::read(&scratch_path).map_err(io)?;
    write_atomically(path, |writer| writer.write_all(&bytes).map_err(io))
}

/// Writes a finished render to `path` as FITS: its τ, its image tone-mapped with the render's
/// own tone settings, one plane each when no species has a colour field, and
/// [`header_cards`]`(facts)`.
pub fn write_render_fits(
    path: &Path,
    output: &RenderOutput,
    facts: &RenderFacts<'_>,
) -> Result<(), RenderError> {
    let grey = facts.settings.species.iter().all(|s| s.colour.is_none());
    let cards = header_cards(facts);
    match output.image(&facts.settings.tone) {
        image::DynamicImage::ImageRgb16(rgb) => {
            write_fits(path, &output.tau, Pixels::U16(rgb.as_raw()), grey, &cards)
        }
        other => {
            let rgb = other.to_rgb8();
            write_fits(path, &output.tau, Pixels::U8(rgb.as_raw()), grey, &cards)
        }
    }
}

/// Writes `cards` into `hdu`'s header.
fn write_cards(
    file: &mut FitsFile,
    hdu: &fitsio::hdu::FitsHdu,
    cards: &[Card],
) -> Result<(), fitsio::errors::Error> {
    for card in cards {
        let comment = card.comment.as_str();
        match &card.value {
            CardValue::Text(text) => hdu.write_key(file, &card.key, (text.clone(), comment))?,
            CardValue::Float(value) => hdu.write_key(file, &card.key, (*value, comment))?,
            CardValue::Int(value) => hdu.write_key(file, &card.key, (*value, comment))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_have_fits_keywords_and_numbers_fits_can_hold() {
        let snapshot = crate::data::demo::demo_snapshot(10, 1);
        let camera =
            crate::render::Camera::look_at([0.0, 0.0, 3.0], [0.0; 3], [0.0, 1.0, 0.0], 40.0);
        let styles = vec![crate::render::SpeciesStyle::new(
            crate::data::SpeciesKind::Dark,
        )];
        let settings = RenderSettings::new(8, 6, camera, styles);
        let stats = RenderStats {
            particles: 10,
            counts: Default::default(),
            brightness: f32::NAN,
            auto_exposure: true,
            tau_scale: 2.0,
            timings: Vec::new(),
            seconds: 0.0,
        };
        let facts = RenderFacts {
            header: &snapshot.header,
            source: &snapshot.source,
            settings: &settings,
            stats: &stats,
            backend: "cpu",
        };
        let cards = header_cards(&facts);
        for card in &cards {
            assert!(card.key.len() <= 8, "{}", card.key);
            let legal =
                |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-';
            assert!(card.key.chars().all(legal), "{}", card.key);
        }
        let value = |key: &str| cards.iter().find(|c| c.key == key).map(|c| c.value.clone());
        assert_eq!(value("BRIGHT"), Some(CardValue::Text("NaN".to_owned())));
        assert_eq!(value("TAUSCALE"), Some(CardValue::Float(2.0)));
        assert_eq!(value("CAMPOSZ"), Some(CardValue::Float(3.0)));
        assert_eq!(value("FOV"), Some(CardValue::Float(40.0)));
        assert_eq!(value("SPECIE1"), Some(CardValue::Text("dark".to_owned())));
        assert_eq!(value("PALETT1"), Some(CardValue::Text("none".to_owned())));
        assert_eq!(value("FAR"), None, "an infinite far limit is left out");
    }

    #[test]
    fn fits_order_puts_planes_first_and_the_bottom_row_first() {
        // 2 wide, 2 high; value = 100·row + 10·column + channel.
        let data: Vec<u16> = (0..2)
            .flat_map(|r| (0..2).flat_map(move |c| (0..3).map(move |ch| 100 * r + 10 * c + ch)))
            .collect();
        assert_eq!(
            fits_order(&data, 2, 2, 3),
            vec![100, 110, 0, 10, 101, 111, 1, 11, 102, 112, 2, 12]
        );
        assert_eq!(fits_order(&data, 2, 2, 1), vec![100, 110, 0, 10]);
    }
}
