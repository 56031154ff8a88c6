#!/usr/bin/env python3
# Reproduces the Corrfunc side of the CPU two-point comparison in BENCHMARKS.md.
"""Corrfunc DDtheta_mocks on the same events as `haloscope bench twopoint`, same threads.

Times one autocorrelation pair count (20 bins of 0.25 deg up to 5 deg) and prints the best of
`--repeats` runs, plus the cumulative unordered-pair counts for comparison with haloscope.
Setup (benchmark only, not a project dependency):
    apt-get install -y libgsl-dev && python3 -m venv /tmp/tp-venv &&
    /tmp/tp-venv/bin/pip install numpy Corrfunc
"""
import argparse
import json
import time

import numpy as np
from Corrfunc.mocks.DDtheta_mocks import DDtheta_mocks

DEFAULT = ["../shared/data/events/IC86-2011/upgoing_events.txt",
           "../shared/data/events/IC86-2011/downgoing_events.txt"]


def read(path):
    """RA and Dec columns (degrees) of an IceCube release file, found by header name."""
    with open(path) as f:
        header = f.readline().lstrip("#").split()
        names = [h.split("[")[0].lower() for h in header]
        data = np.loadtxt(f, ndmin=2)
    return data[:, names.index("ra")], data[:, names.index("dec")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", default=DEFAULT)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ras, decs = zip(*(read(p) for p in args.files))
    ra = np.concatenate(ras) % 360.0
    dec = np.concatenate(decs)
    edges = np.arange(0, 21) * 0.25
    edges[0] = 0.0
    best = float("inf")
    cpu_start = time.process_time()
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = DDtheta_mocks(1, args.threads, edges, ra, dec)
        best = min(best, time.perf_counter() - start)
    cpu_mean = (time.process_time() - cpu_start) / args.repeats
    # Autocorrelation counts ordered pairs: halve for unordered pairs. Corrfunc's bins are
    # (lo, hi] on the pair angle; coincident pairs (theta = 0) fall outside the first bin.
    cumulative = np.cumsum(result["npairs"]) // 2
    print(json.dumps({"n_events": int(len(ra)), "threads": args.threads,
                      "repeats": args.repeats, "seconds": best, "cpu_seconds": cpu_mean,
                      "cumulative_unordered": [int(c) for c in cumulative]}))


if __name__ == "__main__":
    main()
