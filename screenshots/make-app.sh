#!/usr/bin/env bash
# Regenerates the application window screenshots: the release binary opens a real window under
# Xvfb, waits until loading is over and a full-resolution render is shown, saves the window
# (HALOSCOPE_CAPTURE_WINDOW) and quits. Needs xvfb and a Vulkan driver (mesa-vulkan-drivers).
# Usage: screenshots/make-app.sh   (HALOSCOPE_BIN=path/to/haloscope to use another build,
#                                   HALOSCOPE_SHARED=path/to/shared for another data folder)
# screenshots/make.sh (renderer images) calls this script at its end.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${HALOSCOPE_SHARED:-../shared}/data"
BIN="${HALOSCOPE_BIN:-target/release/haloscope}"
if [ ! -x "$BIN" ]; then
    cargo build --release
fi
OUT=screenshots
# A fresh settings folder: no saved session changes what the window shows.
SETTINGS="$(mktemp -d)"
trap 'rm -rf "$SETTINGS"' EXIT

capture() {
    local out="$1"
    shift
    XDG_DATA_HOME="$SETTINGS" XDG_CONFIG_HOME="$SETTINGS" HALOSCOPE_CAPTURE_WINDOW="$out" \
        timeout 600 xvfb-run -a -s "-screen 0 1280x800x24" "$BIN" "$@"
    test -s "$out"
}

# First start: the built-in demo snapshot and event list.
capture "$OUT/app.png"
# A Gadget-4 box at z = 0 (gas by log density, dark matter dimmed, kNN smoothing lengths).
capture "$OUT/app-gadget.png" "$DATA/snapshots/g2_lcdm_gas_snapshot_004.hdf5"
