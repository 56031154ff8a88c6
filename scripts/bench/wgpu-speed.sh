#!/usr/bin/env bash
# On the GPU machine, one device call: the wgpu tests and the wgpu speed goals, before and
# after, with CUDA in the same call. Run from the checkout root, with the Vulkan loader .debs
# of .gl carried (see the device README).
#
#   scripts/bench/wgpu-speed.sh BUNDLE_DIR OUT_DIR [BEFORE_BINARY]
#
# BUNDLE_DIR holds bin/ (haloscope, render_wgpu, app_wgpu), lib/ and shared/. OUT_DIR gets
# wgpu-speed.log, written step by step (each step under a time limit, so a slow one leaves the
# others' results). Steps, most wanted first: tests; 10^8 at 2048^2 (colour, resident, R0 =
# 0.3/1/4/16) on wgpu after, CUDA, wgpu before; 10^7 at 1920x1080 movie frames after and
# before; the passes' times (HALOSCOPE_WGPU_TUNING=profile=1); path variants at 10^7.
set -u
bundle=$1; out=$2; before=${3:-}
B=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$B/haloscope
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] &&
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p "$out"
log=$out/wgpu-speed.log
: > "$log"
step() {
    local limit=$1; shift
    echo "### $* ($(date +%T))" >> "$log"
    timeout -k 5 "$limit" "$@" 2>&1 | grep -vE '^\s*$|XDG_RUNTIME_DIR' >> "$log"
    echo "rc=${PIPESTATUS[0]}" >> "$log"
}
render=(bench render --particles 100000000 --sizes 2048 --colour Density --radii 0.3,1,4,16 --repeat 2)
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'; } >> "$log" 2>&1
step 45 "$B/render_wgpu" --include-ignored --test-threads 4 --nocapture
step 25 "$B/app_wgpu" --include-ignored --test-threads 1
step 40 "$B/haloscope" "${render[@]}" --backend wgpu
step 35 "$B/haloscope" "${render[@]}" --backend cuda --large gpu
[ -n "$before" ] && step 40 "$before" "${render[@]}" --backend wgpu
step 15 "$B/haloscope" bench movie --frames 60 --backend wgpu
[ -n "$before" ] && step 15 "$before" bench movie --frames 60 --backend wgpu
HALOSCOPE_WGPU_TUNING=profile=1 step 35 "$B/haloscope" "${render[@]:0:10}" --repeat 1 --backend wgpu
small=(bench render --particles 10000000 --sizes 2048 --colour Density --radii 0.3,1,4,16 --repeat 2)
for t in int64=0 medium=0 medium=16 small=1 small=5 parts=0 blocks=0; do
    HALOSCOPE_WGPU_TUNING=$t step 12 "$B/haloscope" "${small[@]}" --backend wgpu
done
step 12 "$B/haloscope" "${small[@]}" --backend wgpu
grep -E '^###|^\[colour|stages|rc=|test result|FAILED|panicked|64-bit|adapter:|frames/s|fps' "$log" | cut -c1-300
