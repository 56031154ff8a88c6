#!/usr/bin/env bash
# Regenerates the renderer's README images from the shared data with haloscope itself.
# Usage: screenshots/make.sh   (HALOSCOPE_BIN=path/to/haloscope to use another build,
#                               HALOSCOPE_SHARED=path/to/shared for another data folder)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${HALOSCOPE_SHARED:-../shared}/data/snapshots"
BIN="${HALOSCOPE_BIN:-target/release/haloscope}"
if [ ! -x "$BIN" ]; then
    cargo build --release
fi
OUT=screenshots

# Gas of the z = 0 Gadget-4 box: log density as intensity and colour (the cosmic web).
"$BIN" render "$DATA/g2_lcdm_gas_snapshot_004.hdf5" --out "$OUT/render-gas-density.png" \
    --width 800 --height 800 --intensity Density --log-intensity --palette inferno

# Dark matter of the same box, smoothing lengths from the 32nd nearest neighbour (periodic box).
"$BIN" render "$DATA/g2_lcdm_gas_snapshot_004.hdf5" --out "$OUT/render-dark-knn.png" \
    --width 800 --height 800 --species dark --box 50000 --palette ice --color none

# Two species in one image: gas by log density (inferno) plus dimmed white dark matter (kNN
# smoothing lengths), both adding into one tau buffer.
"$BIN" render "$DATA/g2_lcdm_gas_snapshot_004.hdf5" --out "$OUT/render-gas-and-dark.png" \
    --width 800 --height 800 --species gas,dark --box 50000 \
    --intensity gas=Density --log-intensity=gas --palette gas=inferno \
    --color dark=none --species-brightness dark=0.3

# Zoom-in cluster (tipsy, kNN smoothing lengths), twilight palette on log mass.
"$BIN" render "$DATA/test4.tbin" --out "$OUT/render-cluster-test4.png" \
    --width 800 --height 800 --intensity mass --log-intensity --palette twilight

# The application window under Xvfb (demo data, a Gadget-4 box).
screenshots/make-app.sh
