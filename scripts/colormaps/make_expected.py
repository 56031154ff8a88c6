#!/usr/bin/env python3
"""Writes tests/data/matplotlib_colormaps.json: what matplotlib's cmap(x) returns for every colour
map Haloscope offers under a matplotlib name, its alias and its `_r` reverse.

Independent of the tables in src/render/colormaps (scripts/colormaps/make_tables.py): these values
come from calling the registered colour maps, so they test the tables, the lookup rule
(index = clip(int(x * N), 0, N - 1)) and the reversal together. Per map: cmap at the N points of
np.linspace(0, 1, N) (its whole table), then at the float32 points of "x" below (bin edges, the
ends, values outside [0, 1] and points between bins). RGB values are stored times 10^4, rounded.
Run from the repository root: python3 scripts/colormaps/make_expected.py
"""

import json
import pathlib

import matplotlib
import numpy as np

OUT = pathlib.Path("tests/data/matplotlib_colormaps.json")
SCALE = 10_000
NAMES_FROM = pathlib.Path("src/render/colormaps/mod.rs")


def offered_names():
    """The names the Rust index lists (maps and aliases), read from its text."""
    names = []
    for line in NAMES_FROM.read_text().splitlines():
        line = line.strip()
        if line.startswith('("'):
            names.append(line.split('"')[1])
    return names


def main():
    points = np.array([-0.5, 0.0, 1 / 256, 0.5, 255 / 256, 1.0, 1.5]
                      + [(k + 0.3) / 101 for k in range(101)], dtype=np.float32)
    maps = {}
    for base in offered_names():
        for name in (base, base + "_r"):
            cmap = matplotlib.colormaps[name]
            grid = cmap(np.linspace(0, 1, cmap.N))[:, :3]
            off = cmap(points)[:, :3]
            maps[name] = {
                "n": int(cmap.N),
                "grid": np.rint(grid * SCALE).astype(int).ravel().tolist(),
                "points": np.rint(off * SCALE).astype(int).ravel().tolist(),
            }
    doc = {
        "matplotlib": matplotlib.__version__,
        "scale": SCALE,
        "x": [float(x) for x in points],
        # Every name matplotlib registers, so that a test can see that no other palette takes one.
        "all_names": sorted(matplotlib.colormaps),
        "maps": maps,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
