//! matplotlib 3.11.2's colour maps as tables of RGB in [0, 1], written by
//! scripts/colormaps/make_tables.py (do not edit by hand).

mod mpl_listed_1;
mod mpl_listed_2;
mod mpl_segmented_1;
mod mpl_segmented_2;
mod mpl_segmented_3;
mod mpl_segmented_4;
mod mpl_segmented_5;
mod mpl_segmented_6;
mod mpl_segmented_7;
mod mpl_segmented_8;

/// The matplotlib version the tables come from.
pub const MATPLOTLIB_VERSION: &str = "3.11.2";

/// Every map: (matplotlib's name, its table).
pub const MAPS: &[(&str, &[[f32; 3]])] = &[
    ("magma", &mpl_listed_1::MAGMA),
    ("inferno", &mpl_listed_1::INFERNO),
    ("plasma", &mpl_listed_1::PLASMA),
    ("viridis", &mpl_listed_1::VIRIDIS),
    ("cividis", &mpl_listed_1::CIVIDIS),
    ("twilight", &mpl_listed_1::TWILIGHT),
    ("twilight_shifted", &mpl_listed_2::TWILIGHT_SHIFTED),
    ("turbo", &mpl_listed_2::TURBO),
    ("berlin", &mpl_listed_2::BERLIN),
    ("managua", &mpl_listed_2::MANAGUA),
    ("vanimo", &mpl_listed_2::VANIMO),
    ("Blues", &mpl_segmented_1::BLUES),
    ("BrBG", &mpl_segmented_1::BRBG),
    ("BuGn", &mpl_segmented_1::BUGN),
    ("BuPu", &mpl_segmented_1::BUPU),
    ("CMRmap", &mpl_segmented_1::CMRMAP),
    ("GnBu", &mpl_segmented_1::GNBU),
    ("Greens", &mpl_segmented_1::GREENS),
    ("Greys", &mpl_segmented_1::GREYS),
    ("OrRd", &mpl_segmented_2::ORRD),
    ("Oranges", &mpl_segmented_2::ORANGES),
    ("PRGn", &mpl_segmented_2::PRGN),
    ("PiYG", &mpl_segmented_2::PIYG),
    ("PuBu", &mpl_segmented_2::PUBU),
    ("PuBuGn", &mpl_segmented_2::PUBUGN),
    ("PuOr", &mpl_segmented_2::PUOR),
    ("PuRd", &mpl_segmented_2::PURD),
    ("Purples", &mpl_segmented_3::PURPLES),
    ("RdBu", &mpl_segmented_3::RDBU),
    ("RdGy", &mpl_segmented_3::RDGY),
    ("RdPu", &mpl_segmented_3::RDPU),
    ("RdYlBu", &mpl_segmented_3::RDYLBU),
    ("RdYlGn", &mpl_segmented_3::RDYLGN),
    ("Reds", &mpl_segmented_3::REDS),
    ("Spectral", &mpl_segmented_3::SPECTRAL),
    ("Wistia", &mpl_segmented_4::WISTIA),
    ("YlGn", &mpl_segmented_4::YLGN),
    ("YlGnBu", &mpl_segmented_4::YLGNBU),
    ("YlOrBr", &mpl_segmented_4::YLORBR),
    ("YlOrRd", &mpl_segmented_4::YLORRD),
    ("afmhot", &mpl_segmented_4::AFMHOT),
    ("autumn", &mpl_segmented_4::AUTUMN),
    ("binary", &mpl_segmented_4::BINARY),
    ("bone", &mpl_segmented_5::BONE),
    ("brg", &mpl_segmented_5::BRG),
    ("bwr", &mpl_segmented_5::BWR),
    ("cool", &mpl_segmented_5::COOL),
    ("coolwarm", &mpl_segmented_5::COOLWARM),
    ("copper", &mpl_segmented_5::COPPER),
    ("cubehelix", &mpl_segmented_5::CUBEHELIX),
    ("gist_earth", &mpl_segmented_5::GIST_EARTH),
    ("gist_gray", &mpl_segmented_6::GIST_GRAY),
    ("gist_heat", &mpl_segmented_6::GIST_HEAT),
    ("gist_ncar", &mpl_segmented_6::GIST_NCAR),
    ("gist_rainbow", &mpl_segmented_6::GIST_RAINBOW),
    ("gist_stern", &mpl_segmented_6::GIST_STERN),
    ("gist_yarg", &mpl_segmented_6::GIST_YARG),
    ("gnuplot", &mpl_segmented_6::GNUPLOT),
    ("gnuplot2", &mpl_segmented_6::GNUPLOT2),
    ("gray", &mpl_segmented_7::GRAY),
    ("hot", &mpl_segmented_7::HOT),
    ("hsv", &mpl_segmented_7::HSV),
    ("jet", &mpl_segmented_7::JET),
    ("nipy_spectral", &mpl_segmented_7::NIPY_SPECTRAL),
    ("ocean", &mpl_segmented_7::OCEAN),
    ("pink", &mpl_segmented_7::PINK),
    ("rainbow", &mpl_segmented_7::RAINBOW),
    ("seismic", &mpl_segmented_8::SEISMIC),
    ("spring", &mpl_segmented_8::SPRING),
    ("summer", &mpl_segmented_8::SUMMER),
    ("terrain", &mpl_segmented_8::TERRAIN),
    ("winter", &mpl_segmented_8::WINTER),
];

/// matplotlib's aliases: (alias, name).
pub const ALIASES: &[(&str, &str)] = &[
    ("grey", "gray"),
    ("gist_grey", "gist_gray"),
    ("gist_yerg", "gist_yarg"),
    ("Grays", "Greys"),
];
