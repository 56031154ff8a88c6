#!/usr/bin/env bash
# Renders the golden τ buffers (tests/goldens/README.md): one .npy per case into OUTDIR.
# Usage: scripts/make-goldens.sh BINARY BACKEND OUTDIR [CASE...]
#   BINARY   a haloscope binary (e.g. target/release/haloscope)
#   BACKEND  cpu or cuda (passed to --backend; never auto, so a result names its back-end)
#   OUTDIR   where CASE.npy files go (created if missing)
#   CASE     gas_colour, gas_grey, dark_knn (default: all)
# The snapshots are read from $HALOSCOPE_SHARED/data/snapshots (default ../shared beside the
# project). tests/render_goldens.rs runs this script, so the goldens and the test cannot drift.
set -euo pipefail

if [ "$#" -lt 3 ]; then
    echo "usage: $0 BINARY BACKEND OUTDIR [CASE...]" >&2
    exit 2
fi
binary=$1
backend=$2
outdir=$3
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
snapshots=${HALOSCOPE_SHARED:-$root/../shared}/data/snapshots
cases=("$@")
if [ "${#cases[@]}" -eq 0 ]; then
    cases=(gas_colour gas_grey dark_knn)
fi

mkdir -p "$outdir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Sets `args` to the arguments of case $1 after the common ones (--backend, --out, --tau-out).
case_args() {
    local gas=$snapshots/g2_lcdm_gas_snapshot_004.hdf5
    case "$1" in
        # Gas, log density, coloured by the same field (three τ planes): medium and large splats.
        gas_colour) args=("$gas" --width 128 --height 96 --species gas --intensity Density
            --log-intensity --palette inferno) ;;
        # The same with no colour field (one grey plane).
        gas_grey) args=("$gas" --width 128 --height 96 --species gas --intensity Density
            --log-intensity --color none) ;;
        # Dark matter with kNN smoothing lengths (k = 32, periodic box 1): small, medium and
        # large splats.
        dark_knn) args=("$snapshots/test4.tbin" --width 96 --height 96 --species dark --knn 32) ;;
        *)
            echo "unknown case '$1' (gas_colour, gas_grey, dark_knn)" >&2
            exit 2
            ;;
    esac
}

for name in "${cases[@]}"; do
    case_args "$name"
    "$binary" render "${args[@]}" --backend "$backend" --json \
        --out "$scratch/$name.png" --tau-out "$outdir/$name.npy"
done
