#!/usr/bin/env python3
# Reproduces the pyfof and kdcount side of the CPU friends-of-friends comparison in BENCHMARKS.md.
"""Times pyfof and kdcount friends-of-friends on the same positions as `haloscope bench fof`.

Usage: python3 scripts/bench/fof_python.py [--repeats 3] [--threads 2] FILE [FILE ...]
FILE is a tipsy snapshot (big-endian, 32-byte header; dark and star records) or a .npy of
float32 positions (N, 3), e.g. written by `haloscope bench fof --save-synthetic points.npy`.
The linking length is b (V/N)^(1/3) with V = 1 (periodic box 1, the shared tipsy files) for
tipsy input and V = L^3 with L = --box for .npy input. Prints one line per (file, b, tool).
pyfof has no periodic mode: it runs with open boundaries (kdcount runs both).
"""
import argparse
import os
import time

import numpy as np


def read_tipsy_positions(path):
    """Positions of the dark and star records of a big-endian tipsy file with a 32-byte header."""
    header = np.fromfile(path, dtype=">f8,>i4,>i4,>i4,>i4,>i4,>i4", count=1)[0]
    _time, nbodies, _ndim, nsph, ndark, nstar, _pad = header
    assert nsph == 0, "gas records not handled here"
    offset = 32
    dark = np.fromfile(path, dtype=">f4", count=ndark * 9, offset=offset).reshape(ndark, 9)
    offset += ndark * 36
    star = np.fromfile(path, dtype=">f4", count=nstar * 11, offset=offset).reshape(nstar, 11)
    return np.concatenate([dark[:, 1:4], star[:, 1:4]]).astype(np.float32)


def best_of(repeats, fn):
    times = []
    result = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--b", type=float, nargs="+", default=[0.2, 0.28])
    parser.add_argument("--box", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--min-members", type=int, default=20)
    args = parser.parse_args()

    import kdcount
    import kdcount.cluster
    import pyfof

    for path in args.files:
        if path.endswith(".npy"):
            pos = np.load(path).astype(np.float32)
        else:
            pos = read_tipsy_positions(path)
        n = len(pos)
        frame_lower = -0.5 * args.box if (pos < 0).any() else 0.0
        pos64 = pos.astype(np.float64)
        wrapped = (pos64 - frame_lower) % args.box  # kdcount wants [0, L)
        name = os.path.basename(path)
        for b in args.b:
            ll = b * (args.box**3 / n) ** (1.0 / 3.0)

            def sizes(counts):
                kept = np.sort(counts[counts >= args.min_members])[::-1]
                return len(kept), kept[:5].tolist()

            for periodic in (True, False):
                data = kdcount.models.dataset(
                    wrapped if periodic else pos64, boxsize=args.box if periodic else None
                )
                t, fof = best_of(
                    args.repeats,
                    lambda: kdcount.cluster.fof(data, linking_length=ll, np=args.threads),
                )
                ng, top = sizes(np.bincount(fof.labels))
                mode = "periodic" if periodic else "open"
                print(f"{name} n={n} b={b} ll={ll:.9g} kdcount {mode} np={args.threads}: "
                      f"{t:.4f} s groups>={args.min_members}: {ng} top {top}", flush=True)
            t, groups = best_of(args.repeats, lambda: pyfof.friends_of_friends(pos64, ll))
            ng, top = sizes(np.array([len(g) for g in groups]))
            print(f"{name} n={n} b={b} ll={ll:.9g} pyfof open (1 thread): {t:.4f} s "
                  f"groups>={args.min_members}: {ng} top {top}", flush=True)


if __name__ == "__main__":
    main()
