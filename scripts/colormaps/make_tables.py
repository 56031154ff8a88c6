#!/usr/bin/env python3
"""Writes src/render/colormaps/ (mod.rs and mpl_*.rs): matplotlib's colour maps from matplotlib's own source data.

Listed maps (viridis, twilight, turbo, ...) are the RGB lists of matplotlib/_cm_listed.py as written
there. Segmented maps (jet, hot, Blues, cubehelix, ...) are matplotlib/_cm.py's segment data (or
colour lists, which LinearSegmentedColormap.from_list turns into segment data) evaluated by
matplotlib.colors._create_lookup_table at N = 256, gamma 1, exactly as LinearSegmentedColormap._init
does. The expected values the tests compare with come from scripts/colormaps/make_expected.py,
which calls cmap(x) instead. Run from the repository root: python3 scripts/colormaps/make_tables.py
"""

import pathlib

import matplotlib
import numpy as np
from matplotlib import _cm, _cm_listed, colors

OUT = pathlib.Path("src/render/colormaps")
LUT_SIZE = 256
# Continuous maps only: the qualitative ones (tab10, Set1, ...) are categorical, and flag and prism
# repeat their colours many times over [0, 1], which says nothing about a density.
SKIPPED = {"flag", "prism"}
ALIASES = {"grey": "gray", "gist_grey": "gist_gray", "gist_yerg": "gist_yarg", "Grays": "Greys"}
# Entries per generated file (4 per line), so that no file passes ~600 lines.
ROWS_PER_FILE = 2048


def listed_maps():
    """(name, rows) for every ListedColormap of _cm_listed, from its source list."""
    out = []
    for name in _cm_listed.cmaps:
        data = getattr(_cm_listed, f"_{name}_data")
        out.append((name, [[float(v) for v in row[:3]] for row in data]))
    return out


def segment_data(spec):
    """The segment data of a _cm.datad entry (a colour list becomes from_list's segments)."""
    if "red" in spec:
        return spec
    try:
        rgba = colors.to_rgba_array(spec)
        vals = np.linspace(0, 1, len(rgba))
    except (TypeError, ValueError):
        # (value, colour) pairs, as from_list accepts them.
        vals = np.asarray([v for v, _ in spec], dtype=float)
        rgba = colors.to_rgba_array([c for _, c in spec])
    return {key: np.column_stack([vals, rgba[:, i], rgba[:, i]])
            for i, key in enumerate(("red", "green", "blue"))}


def segmented_maps():
    """(name, rows) for every continuous LinearSegmentedColormap of _cm.datad."""
    out = []
    for name, spec in _cm.datad.items():
        if "listed" in spec or name in SKIPPED:
            continue
        seg = segment_data(spec)
        channels = [colors._create_lookup_table(LUT_SIZE, seg[key], 1.0)
                    for key in ("red", "green", "blue")]
        out.append((name, np.column_stack(channels).tolist()))
    return out


def f32(value):
    text = str(np.float32(value))
    return text if ("." in text or "e" in text) else text + ".0"


def const_name(name):
    return name.upper()


def write_file(path, maps, source):
    lines = [
        f"//! matplotlib {matplotlib.__version__}'s {source}, written by",
        "//! scripts/colormaps/make_tables.py (do not edit by hand).",
        "",
        "// Measured colours, some of which happen to lie near 1/π or log10(e).",
        "#![allow(clippy::approx_constant)]",
        "",
    ]
    for name, rows in maps:
        lines.append(f"/// matplotlib's `{name}` ({len(rows)} entries).")
        lines.append("#[rustfmt::skip]")
        lines.append(f"pub const {const_name(name)}: [[f32; 3]; {len(rows)}] = [")
        for start in range(0, len(rows), 4):
            chunk = rows[start:start + 4]
            lines.append("    " + " ".join(f"[{f32(r)}, {f32(g)}, {f32(b)}]," for r, g, b in chunk))
        lines.append("];")
        lines.append("")
    path.write_text("\n".join(lines))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.rs"):
        old.unlink()
    groups = []
    for kind, maps, source in (("listed", listed_maps(), "listed colour maps (_cm_listed.py)"),
                               ("segmented", segmented_maps(),
                                "segmented colour maps (_cm.py, evaluated at N = 256)")):
        chunks = [[]]
        for name, rows in maps:
            if chunks[-1] and sum(len(r) for _, r in chunks[-1]) + len(rows) > ROWS_PER_FILE:
                chunks.append([])
            chunks[-1].append((name, rows))
        for number, chunk in enumerate(chunks, start=1):
            module = f"mpl_{kind}_{number}"
            write_file(OUT / f"{module}.rs", chunk, source)
            groups.append((module, chunk))
    lines = [
        f"//! matplotlib {matplotlib.__version__}'s colour maps as tables of RGB in [0, 1], written by",
        "//! scripts/colormaps/make_tables.py (do not edit by hand).",
        "",
    ]
    for module, _ in groups:
        lines.append(f"mod {module};")
    lines += ["", f'/// The matplotlib version the tables come from.',
              f'pub const MATPLOTLIB_VERSION: &str = "{matplotlib.__version__}";', "",
              "/// Every map: (matplotlib's name, its table).",
              "pub const MAPS: &[(&str, &[[f32; 3]])] = &["]
    for module, chunk in groups:
        for name, _ in chunk:
            lines.append(f'    ("{name}", &{module}::{const_name(name)}),')
    lines += ["];", "", "/// matplotlib's aliases: (alias, name).",
              "pub const ALIASES: &[(&str, &str)] = &["]
    for alias, name in ALIASES.items():
        lines.append(f'    ("{alias}", "{name}"),')
    lines += ["];", ""]
    (OUT / "mod.rs").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
