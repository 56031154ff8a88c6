//! Which code wrote a snapshot and what its smoothing lengths h mean: the SPH kernel's support
//! radius in units of h. Haloscope draws in the tipsy/Splotch convention (support 2h, DESIGN.md
//! §4: r = 2·h·s·size_factor), so a file's h is scaled by support/2 before drawing.

/// The code that wrote a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SimCode {
    /// Not known (demo or synthetic data).
    #[default]
    Unknown,
    /// Tipsy (PKDGRAV, ChaNGa, Gasoline).
    Tipsy,
    /// Gadget-2/3 HDF5 (only a `Header` group).
    Gadget2,
    /// Gadget-4 (`Config` and `Parameters` groups).
    Gadget4,
    /// AREPO (`Config`/`Parameters` with AREPO's names).
    Arepo,
    /// SWIFT (`Code` group naming SWIFT).
    Swift,
}

impl SimCode {
    /// Name used by `info` and in catalogue headers.
    pub fn name(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Tipsy => "tipsy",
            Self::Gadget2 => "Gadget-2/3",
            Self::Gadget4 => "Gadget-4",
            Self::Arepo => "AREPO",
            Self::Swift => "SWIFT",
        }
    }
}

/// Support radius over h of SWIFT's kernels (Dehnen & Aly 2012, MNRAS 425, 1068, table 1; the
/// values of SWIFT's kernel_hydro.h), matched by a lower-case word of the kernel's name.
const SWIFT_KERNELS: [(&str, f32); 6] = [
    ("cubic", 1.825_742),
    ("quartic", 2.018_932),
    ("quintic", 2.195_775),
    ("wendland c2", 1.936_492),
    ("wendland c4", 2.207_94),
    ("wendland c6", 2.449_49),
];

/// How a file's smoothing lengths relate to the kernel support.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelConvention {
    /// The kernel's name (from the file, or the assumed one).
    pub kernel: String,
    /// Support radius over h: 2 (tipsy), 1 (Gadget, AREPO), γ (SWIFT).
    pub support_over_h: f32,
    /// Whether the kernel was assumed rather than read from the file.
    pub assumed: bool,
}

impl KernelConvention {
    /// The convention of `code`'s smoothing lengths; for SWIFT the kernel named by the file
    /// (`HydroScheme` "Kernel function") or, without one, the cubic spline (assumed).
    pub fn of(code: SimCode, kernel_name: Option<&str>) -> Self {
        match code {
            SimCode::Gadget2 | SimCode::Gadget4 | SimCode::Arepo => Self {
                kernel: "cubic spline, h = support radius".to_owned(),
                support_over_h: 1.0,
                assumed: false,
            },
            SimCode::Swift => {
                let found = kernel_name.and_then(|name| {
                    let lower = name.to_ascii_lowercase();
                    SWIFT_KERNELS
                        .iter()
                        .find(|(word, _)| lower.contains(word))
                        .map(|(_, gamma)| (name.to_owned(), *gamma))
                });
                match found {
                    Some((kernel, gamma)) => Self {
                        kernel,
                        support_over_h: gamma,
                        assumed: false,
                    },
                    None => Self {
                        kernel: "cubic spline (assumed: the file names no known kernel)".to_owned(),
                        support_over_h: SWIFT_KERNELS[0].1,
                        assumed: true,
                    },
                }
            }
            SimCode::Tipsy | SimCode::Unknown => Self::splotch(),
        }
    }

    /// The tipsy/Splotch convention: support 2h.
    pub fn splotch() -> Self {
        Self {
            kernel: "support 2h (tipsy/Splotch)".to_owned(),
            support_over_h: 2.0,
            assumed: false,
        }
    }
}

impl Default for KernelConvention {
    fn default() -> Self {
        Self::splotch()
    }
}

/// A `--kernel-support` value: `h` (support = h), `2h` (support = 2h) or a positive factor.
pub fn parse_kernel_support(text: &str) -> Result<f32, String> {
    let t = text.trim();
    let value = match t {
        "h" => 1.0,
        "2h" => 2.0,
        _ => t
            .strip_suffix('h')
            .unwrap_or(t)
            .trim()
            .parse::<f32>()
            .map_err(|_| {
                format!("kernel support `{text}`: expected h, 2h or a factor such as 1.825742")
            })?,
    };
    if !(value > 0.0 && value.is_finite()) {
        return Err(format!(
            "kernel support `{text}`: the factor must be a finite number > 0"
        ));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_has_its_support() {
        assert_eq!(
            KernelConvention::of(SimCode::Tipsy, None).support_over_h,
            2.0
        );
        assert_eq!(
            KernelConvention::of(SimCode::Gadget4, None).support_over_h,
            1.0
        );
        let swift = KernelConvention::of(SimCode::Swift, Some("Quartic spline (M5)"));
        assert_eq!((swift.support_over_h, swift.assumed), (2.018_932, false));
        let wendland = KernelConvention::of(SimCode::Swift, Some("Wendland C2"));
        assert_eq!(wendland.support_over_h, 1.936_492);
        let unknown = KernelConvention::of(SimCode::Swift, None);
        assert_eq!((unknown.support_over_h, unknown.assumed), (1.825_742, true));
    }

    #[test]
    fn kernel_support_option_parses_h_2h_and_factors() {
        assert_eq!(parse_kernel_support("h"), Ok(1.0));
        assert_eq!(parse_kernel_support("2h"), Ok(2.0));
        assert_eq!(parse_kernel_support("1.5"), Ok(1.5));
        assert_eq!(parse_kernel_support("1.825742h"), Ok(1.825_742));
        for bad in ["0", "-1", "nan", "inf", "wide"] {
            let e = parse_kernel_support(bad).expect_err(bad);
            assert!(e.contains(bad), "{e}");
        }
    }
}
