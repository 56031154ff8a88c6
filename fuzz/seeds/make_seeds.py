#!/usr/bin/env python3
"""Writes the fuzz seed files under fuzz/seeds/ from cut-down copies of ../shared/data.

Run from the project root: python3 fuzz/seeds/make_seeds.py. The seeds are small (a few KB)
and committed; the fuzzer's growing corpus (fuzz/corpus/) is not.
"""
import math
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("HALOSCOPE_SHARED", os.path.join(ROOT, "..", "shared")) + "/data"
SEEDS = os.path.join(ROOT, "fuzz", "seeds")

# Record sizes in float32 values: gas 12, dark 9, star 11 (see ../shared/data/README.md).
FLOATS = {"gas": 12, "dark": 9, "star": 11}


def tipsy_records(path, counts):
    """Header fields and the raw records (big-endian float tuples) of a 32-byte-header BE file,
    first `counts[family]` records of each family."""
    with open(path, "rb") as f:
        raw = f.read()
    time, nbodies, ndim, nsph, ndark, nstar, _pad = struct.unpack(">d6i", raw[:32])
    offset = 32
    records = {}
    for family, n_file in (("gas", nsph), ("dark", ndark), ("star", nstar)):
        size = 4 * FLOATS[family]
        take = min(counts.get(family, 0), n_file)
        records[family] = [
            struct.unpack(f">{FLOATS[family]}f", raw[offset + k * size : offset + (k + 1) * size])
            for k in range(take)
        ]
        offset += n_file * size
    return time, ndim, records


def write_tipsy(name, time, ndim, records, order=">", pad=True, double_positions=False):
    counts = [len(records["gas"]), len(records["dark"]), len(records["star"])]
    out = struct.pack(f"{order}d5i", time, sum(counts), ndim, *counts)
    if pad:
        out += struct.pack(f"{order}i", 0)
    for family in ("gas", "dark", "star"):
        for rec in records[family]:
            if double_positions:
                out += struct.pack(f"{order}f3d", rec[0], *rec[1:4])
                out += struct.pack(f"{order}{len(rec) - 4}f", *rec[4:])
            else:
                out += struct.pack(f"{order}{len(rec)}f", *rec)
    with open(os.path.join(SEEDS, "tipsy", name), "wb") as f:
        f.write(out)


def gas_records(n):
    """Synthetic gas records: mass, pos, vel, rho, temp, hsmooth, metals, phi (no shared file
    has gas in tipsy form)."""
    recs = []
    for k in range(n):
        a = 0.7 * k
        recs.append((1e-5, 0.1 * math.cos(a), 0.1 * math.sin(a), 0.01 * k, 0.2, -0.1, 0.05,
                     100.0 + k, 1.0e4 * (k + 1), 0.003, 0.02, -1.5))
    return recs


def tipsy_seeds():
    time, ndim, recs = tipsy_records(f"{DATA}/snapshots/run581.20000", {"dark": 4, "star": 3})
    write_tipsy("run581_be32.tbin", time, ndim, recs)
    write_tipsy("run581_le28.tbin", time, ndim, recs, order="<", pad=False)
    time, ndim, recs = tipsy_records(f"{DATA}/snapshots/lambs.00200_subsamp_30K", {"dark": 5})
    write_tipsy("lambs_be32_f64pos.tbin", time, ndim, recs, double_positions=True)
    recs = {"gas": gas_records(3), "dark": recs["dark"][:2], "star": []}
    write_tipsy("gas_dark_le32.tbin", time, ndim, recs, order="<")


def head_lines(path, n, newline):
    with open(path, "rb") as f:
        lines = f.read().split(newline)
    return lines[:n]


def event_seeds():
    lines = head_lines(f"{DATA}/events/IC40_exp.csv", 21, b"\n")
    with open(os.path.join(SEEDS, "events", "ic40_10yr.txt"), "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    # IC86-2011: tab-separated header, CRLF; include RA = 360.0 and Dec = -90.0 rows.
    up = head_lines(f"{DATA}/events/IC86-2011/upgoing_events.txt", 21, b"\r\n")
    down = head_lines(f"{DATA}/events/IC86-2011/downgoing_events.txt", 24060, b"\r\n")
    rows = up + [down[787], down[24059]]
    with open(os.path.join(SEEDS, "events", "ic86_2011_crlf.txt"), "wb") as f:
        f.write(b"\r\n".join(rows) + b"\r\n")
    # CSV: comma-separated copy of the IC40 rows without a leading '#'.
    names = lines[0].lstrip(b"#").split()
    csv = [b",".join(names)] + [b",".join(line.split()) for line in lines[1:]]
    with open(os.path.join(SEEDS, "events", "ic40_comma.csv"), "wb") as f:
        f.write(b"\n".join(csv) + b"\n")


tipsy_seeds()
event_seeds()
