#!/usr/bin/env python3
# Reproduces the exact-decimal edge analysis of the two-point section of BENCHMARKS.md.
"""Exact-decimal check of the two-point edge rule.

`haloscope bench twopoint --brute-force --dump-edges pairs.txt FILES...` writes every pair whose
f64 squared chord c^2 lies within 1e-6 (relative) of a bin edge as `i j bin f64_gap`. This script
recomputes each of those pairs from the decimal strings in FILES with 60-digit arithmetic
(mpmath) and checks that haloscope's rule (inside when f64_gap <= EDGE_TOLERANCE = 1e-10) gives
exactly the decision Psi <= theta_k on the exact decimal inputs. Pairs farther than 1e-6 from
an edge cannot change side: the f64 error of c^2 is ~1e-12 relative.
"""
import argparse
import json

import mpmath

mpmath.mp.dps = 60
TOLERANCE = 1e-10


def read_decimal(paths):
    """(RA, Dec) decimal strings in input order, columns found by header name."""
    rows = []
    for path in paths:
        with open(path) as f:
            names = None
            for line in f:
                text = line.strip()
                if not text:
                    continue
                if names is None:
                    fields = text.lstrip("#").replace(",", " ").split()
                    names = [h.split("[")[0].lower() for h in fields]
                    ra, dec = names.index("ra"), names.index("dec")
                    continue
                if text.startswith("#"):
                    continue
                fields = text.replace(",", " ").split()
                rows.append((fields[ra], fields[dec]))
    return rows


def chord2(a, b):
    ra1, dec1 = (mpmath.radians(mpmath.mpf(v)) for v in a)
    ra2, dec2 = (mpmath.radians(mpmath.mpf(v)) for v in b)
    dot = (mpmath.sin(dec1) * mpmath.sin(dec2)
           + mpmath.cos(dec1) * mpmath.cos(dec2) * mpmath.cos(ra1 - ra2))
    return 2 - 2 * dot


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pairs")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--step", type=float, default=0.25)
    args = parser.parse_args()
    rows = read_decimal(args.files)
    ties = disagreements = 0
    largest_tie_gap = 0.0
    smallest_non_tie_exact = smallest_non_tie_f64 = float("inf")
    n = 0
    with open(args.pairs) as f:
        for line in f:
            i, j, b, gap = line.split()
            i, j, b, gap = int(i), int(j), int(b), float(gap)
            theta = mpmath.radians(mpmath.mpf(args.step) * (b + 1))
            edge = 4 * mpmath.sin(theta / 2) ** 2
            exact = chord2(rows[i], rows[j]) / edge - 1
            n += 1
            if abs(exact) < mpmath.mpf(10) ** -40:
                ties += 1
                largest_tie_gap = max(largest_tie_gap, abs(gap))
                inside_exact = True
            else:
                smallest_non_tie_exact = min(smallest_non_tie_exact, float(abs(exact)))
                smallest_non_tie_f64 = min(smallest_non_tie_f64, abs(gap))
                inside_exact = exact < 0
            if (gap <= TOLERANCE) != inside_exact:
                disagreements += 1
    print(json.dumps({"pairs_checked": n, "exact_ties": ties,
                      "largest_f64_gap_of_a_tie": largest_tie_gap,
                      "smallest_exact_gap_of_a_non_tie": smallest_non_tie_exact,
                      "smallest_f64_gap_of_a_non_tie": smallest_non_tie_f64,
                      "tolerance": TOLERANCE, "disagreements": disagreements}))


if __name__ == "__main__":
    main()
