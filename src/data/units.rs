//! The unit system of a snapshot's code quantities, typed: CGS sizes of the code units, whether
//! lengths are comoving and whether lengths and masses carry h⁻¹, and the labels the faces show
//! (scale bar, colour bar, halo tables, catalogue headers).

use std::collections::BTreeMap;

/// Centimetres in one kiloparsec (IAU 2015: 1 pc = 3.085 677 581 × 10¹⁸ cm).
pub const CM_PER_KPC: f64 = 3.085_677_581e21;
/// Grams in one solar mass (IAU 2015 nominal GM☉ / G).
pub const G_PER_MSUN: f64 = 1.988_41e33;

/// Where a snapshot's unit system came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitSource {
    /// Not known: lengths are in the file's box units.
    #[default]
    BoxUnits,
    /// Tipsy without a `.param` file beside it: box units.
    TipsyNoParam,
    /// The tipsy run's `.param` file (`dKpcUnit`, `dMsolUnit`).
    TipsyParam,
    /// The HDF5 file's own unit attributes.
    File,
    /// Gadget/AREPO defaults, the file giving none: kpc/h, 10¹⁰ M☉/h, km/s.
    GadgetDefaults,
}

impl UnitSource {
    /// Name used in `info --json`.
    pub fn name(self) -> &'static str {
        match self {
            Self::BoxUnits => "box units",
            Self::TipsyNoParam => "box units (no .param)",
            Self::TipsyParam => ".param file",
            Self::File => "file",
            Self::GadgetDefaults => "Gadget defaults (assumed)",
        }
    }
}

/// The unit system of a snapshot's code quantities.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Units {
    /// One code length in cm (`None`: box units, no physical size known).
    pub length_cm: Option<f64>,
    /// One code mass in g.
    pub mass_g: Option<f64>,
    /// One code velocity in cm/s.
    pub velocity_cm_per_s: Option<f64>,
    /// Code lengths are comoving (multiply by the expansion factor a for physical lengths).
    pub comoving: bool,
    /// Code lengths and masses are in h⁻¹ units (Gadget/AREPO convention: divide by h).
    pub per_h: bool,
    /// Where these facts came from.
    pub source: UnitSource,
}

/// Named lengths the labels use, in cm.
const NAMED_LENGTHS: [(&str, f64); 6] = [
    ("cm", 1.0),
    ("km", 1e5),
    ("pc", CM_PER_KPC * 1e-3),
    ("kpc", CM_PER_KPC),
    ("Mpc", CM_PER_KPC * 1e3),
    ("Gpc", CM_PER_KPC * 1e6),
];

/// `name` when `value` is one of `named` (ascending) within 0.1 %, else a multiple of the
/// largest named unit below it (`100 Mpc`), else `<value> <base>`.
fn named(value: f64, named: &[(&str, f64)], base: &str) -> String {
    if let Some((name, _)) = named
        .iter()
        .find(|(_, size)| (value / size - 1.0).abs() < 1e-3)
    {
        return (*name).to_owned();
    }
    match named.iter().rev().find(|(_, size)| value > *size) {
        Some((name, size)) => format!("{} {name}", short_number(value / size)),
        None => format!("{} {base}", short_number(value)),
    }
}

/// A number as astronomers write unit sizes: `1e10`, `3.0857e21`, `100`.
pub fn short_number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    let exponent = value.abs().log10().floor();
    let mantissa = value / 10f64.powf(exponent);
    if (mantissa - mantissa.round()).abs() < 1e-6 && mantissa.round() == 1.0 {
        if (0.0..4.0).contains(&exponent) {
            format!("{}", value.round())
        } else {
            format!("1e{exponent}")
        }
    } else if (0.0..4.0).contains(&exponent) && (value - value.round()).abs() < 1e-9 {
        format!("{}", value.round())
    } else {
        let m = format!("{mantissa:.4}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        format!("{m}e{exponent}")
    }
}

impl Units {
    /// Gadget-2/3/4 and AREPO defaults (kpc/h comoving, 10¹⁰ M☉/h, km/s), marked as assumed.
    pub fn gadget_defaults(comoving: bool) -> Self {
        Self {
            length_cm: Some(CM_PER_KPC),
            mass_g: Some(1e10 * G_PER_MSUN),
            velocity_cm_per_s: Some(1e5),
            comoving,
            per_h: comoving,
            source: UnitSource::GadgetDefaults,
        }
    }

    /// Label of the code length: "ckpc/h", "kpc", "Mpc", or a box-units phrase. With `physical`,
    /// the label of lengths converted by [`Units::length_to_display`] (no "c", no "/h").
    pub fn length_label(&self, physical: bool) -> String {
        let Some(cm) = self.length_cm else {
            return self.source.name().to_owned();
        };
        let base = named(cm, &NAMED_LENGTHS, "cm");
        if physical {
            return base;
        }
        let prefix = if self.comoving { "c" } else { "" };
        let suffix = if self.per_h { "/h" } else { "" };
        if base.contains(' ') && (self.comoving || self.per_h) {
            format!("{prefix}({base}){suffix}")
        } else {
            format!("{prefix}{base}{suffix}")
        }
    }

    /// Factor from code lengths to the lengths [`Units::length_label`] names: 1 for code units,
    /// a/h (a/1 without h units) for physical lengths, given the expansion factor and h.
    pub fn length_to_display(&self, physical: bool, scale_factor: f64, hubble: f64) -> f64 {
        if !physical {
            return 1.0;
        }
        let a = if self.comoving { scale_factor } else { 1.0 };
        let h = if self.per_h { hubble } else { 1.0 };
        a / h
    }

    /// Label of the code mass: "1e10 Msun/h", "Msun", "2.5e12 Msun" or "code mass".
    pub fn mass_label(&self) -> String {
        let Some(g) = self.mass_g else {
            return "code mass".to_owned();
        };
        let msun = g / G_PER_MSUN;
        let base = if (msun - 1.0).abs() < 1e-3 {
            "Msun".to_owned()
        } else if (msun / 10f64.powf(msun.log10().round()) - 1.0).abs() < 1e-3 {
            format!("1e{} Msun", msun.log10().round())
        } else {
            format!("{} Msun", short_number(msun))
        };
        if self.per_h {
            format!("{base}/h")
        } else {
            base
        }
    }

    /// Label of the code velocity: "km/s" or "<n> cm/s".
    pub fn velocity_label(&self) -> String {
        match self.velocity_cm_per_s {
            Some(v) => named(v, &[("cm/s", 1.0), ("km/s", 1e5)], "cm/s"),
            None => "code velocity".to_owned(),
        }
    }

    /// Label of a code density: "1e10 Msun/h / (ckpc/h)^3".
    pub fn density_label(&self) -> String {
        format!("{} / ({})^3", self.mass_label(), self.length_label(false))
    }

    /// Label of the unit of the per-particle quantity `name` (matched case-insensitively, the
    /// Gadget, SWIFT and tipsy names), or `None` when not known.
    pub fn field_unit(&self, name: &str) -> Option<String> {
        let n = name.to_ascii_lowercase();
        Some(match n.as_str() {
            "mass" | "masses" => self.mass_label(),
            "smoothinglength" | "smoothinglengths" | "hsml" | "hsmooth" | "eps" => {
                self.length_label(false)
            }
            "density" | "densities" | "rho" => self.density_label(),
            "internalenergy" | "internalenergies" => {
                format!("({})^2", self.velocity_label())
            }
            "temperature" | "temperatures" | "temp" => "K".to_owned(),
            "velocity" | "velocities" => self.velocity_label(),
            _ => return None,
        })
    }
}

/// A dataset's own unit attributes, typed (Gadget-4: `to_cgs`, `a_scaling`, `h_scaling`,
/// `length_scaling`, `mass_scaling`, `velocity_scaling`; SWIFT: "Conversion factor to CGS (not
/// including cosmological corrections)", "a-scale exponent", "h-scale exponent", "U_L exponent",
/// "U_M exponent", "U_t exponent", "U_T exponent").
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FieldUnits {
    /// Factor from code value to CGS, without a and h factors.
    pub to_cgs: Option<f64>,
    /// Exponent of the expansion factor a in the physical value.
    pub a_exponent: Option<f64>,
    /// Exponent of h in the physical value.
    pub h_exponent: Option<f64>,
    /// Exponent of the length unit.
    pub length_exponent: Option<f64>,
    /// Exponent of the mass unit.
    pub mass_exponent: Option<f64>,
    /// Exponent of the velocity unit (Gadget-4) .
    pub velocity_exponent: Option<f64>,
    /// Exponent of the time unit (SWIFT).
    pub time_exponent: Option<f64>,
    /// Exponent of the temperature unit (SWIFT).
    pub temperature_exponent: Option<f64>,
}

impl FieldUnits {
    /// Parses a dataset's attributes as the readers keep them (name → text).
    pub fn from_attributes(attributes: &BTreeMap<String, String>) -> Self {
        let get = |names: &[&str]| {
            names.iter().find_map(|n| {
                attributes
                    .get(*n)
                    .and_then(|t| t.trim().trim_matches(['[', ']']).parse::<f64>().ok())
            })
        };
        Self {
            to_cgs: get(&[
                "to_cgs",
                "Conversion factor to CGS (not including cosmological corrections)",
                "CGSConversionFactor",
            ]),
            a_exponent: get(&["a_scaling", "a-scale exponent", "aexp-scale-exponent"]),
            h_exponent: get(&["h_scaling", "h-scale exponent", "h-scale-exponent"]),
            length_exponent: get(&["length_scaling", "U_L exponent"]),
            mass_exponent: get(&["mass_scaling", "U_M exponent"]),
            velocity_exponent: get(&["velocity_scaling"]),
            time_exponent: get(&["U_t exponent"]),
            temperature_exponent: get(&["U_T exponent"]),
        }
    }

    /// Factor from a code value to physical CGS: to_cgs · a^a_exp · h^h_exp (missing
    /// exponents count as 0), or `None` without `to_cgs`.
    pub fn physical_cgs_factor(&self, scale_factor: f64, hubble: f64) -> Option<f64> {
        let to_cgs = self.to_cgs?;
        let a = scale_factor.powf(self.a_exponent.unwrap_or(0.0));
        let h = hubble.powf(self.h_exponent.unwrap_or(0.0));
        Some(to_cgs * a * h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gadget_defaults_read_as_astronomers_write_them() {
        let u = Units::gadget_defaults(true);
        assert_eq!(u.length_label(false), "ckpc/h");
        assert_eq!(u.length_label(true), "kpc");
        assert_eq!(u.mass_label(), "1e10 Msun/h");
        assert_eq!(u.velocity_label(), "km/s");
        assert_eq!(u.density_label(), "1e10 Msun/h / (ckpc/h)^3");
        assert_eq!(u.length_to_display(true, 0.5, 0.7), 0.5 / 0.7);
        assert_eq!(u.length_to_display(false, 0.5, 0.7), 1.0);
        let physical = Units {
            comoving: false,
            per_h: false,
            length_cm: Some(CM_PER_KPC * 1e3),
            mass_g: Some(G_PER_MSUN),
            ..u
        };
        assert_eq!(physical.length_label(false), "Mpc");
        assert_eq!(physical.mass_label(), "Msun");
        assert_eq!(physical.field_unit("Temperature").as_deref(), Some("K"));
        assert_eq!(physical.field_unit("Metals"), None);
        let odd = Units {
            length_cm: Some(7.0),
            ..physical
        };
        assert_eq!(odd.length_label(false), "7 cm");
        let none = Units {
            source: UnitSource::TipsyNoParam,
            ..Units::default()
        };
        assert_eq!(none.length_label(false), "box units (no .param)");
        assert_eq!(short_number(2.5e12), "2.5e12");
        assert_eq!(short_number(100.0), "100");
    }

    #[test]
    fn field_units_parse_gadget_and_swift_attributes() {
        let gadget: BTreeMap<String, String> = [
            ("to_cgs", "1e10"),
            ("a_scaling", "0"),
            ("h_scaling", "-1"),
            ("velocity_scaling", "2"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        let g = FieldUnits::from_attributes(&gadget);
        assert_eq!(g.to_cgs, Some(1e10));
        assert_eq!(g.velocity_exponent, Some(2.0));
        assert_eq!(g.physical_cgs_factor(0.5, 0.5), Some(2e10));
        let swift: BTreeMap<String, String> = [
            (
                "Conversion factor to CGS (not including cosmological corrections)",
                "[1e10]",
            ),
            ("a-scale exponent", "[-2]"),
            ("U_L exponent", "[2]"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        let s = FieldUnits::from_attributes(&swift);
        assert_eq!(s.to_cgs, Some(1e10));
        assert_eq!(s.a_exponent, Some(-2.0));
        assert_eq!(s.length_exponent, Some(2.0));
        assert_eq!(s.physical_cgs_factor(0.5, 0.7), Some(4e10));
    }
}
