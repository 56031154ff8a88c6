#!/usr/bin/env bash
# On the GPU machine: every ignored GPU test, the sanitizers on the small CUDA scenes, and the
# headline benchmarks of BENCHMARKS.md, for one bundle made by scripts/device-bundle.sh (and,
# for a before/after table, a second "before" binary run alternately in the same call).
#
#   scripts/bench/gpu-check.sh tests|bench BUNDLE_DIR OUT_DIR [BEFORE_BINARY]
#
# `tests` runs the GPU tests and the sanitizers, `bench` the benchmarks (each fits one device call).
# BUNDLE_DIR holds bin/ (haloscope and the test binaries), lib/ and shared/; OUT_DIR gets
# tests.log, sanitizer.log and bench.log. The test binaries read the shared data from
# $HALOSCOPE_SHARED and the project root from the working directory (run it from the checkout).
set -u
mode=$1; bundle=$2; out=$3; before=${4:-}
B=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$B/haloscope
mkdir -p "$out"
if [ "$mode" = tests ]; then
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$out/tests.log"
# The wgpu tests need a Vulkan loader: scripts/device-bundle.sh's callers unpack the loader
# packages first (the device README's .gl folder), then the NVIDIA ICD is found by its file.
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] &&
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for t in render_goldens render_cuda render_cuda_tone render_cuda_variants render_cuda_upload \
         render_multi_gpu knn_cuda fof_cuda fof_cuda_catalogue fof_zoom fof_domains_cuda \
         twopoint_cuda twopoint_multi_gpu app_cuda movie_cuda gpu_device render_wgpu app_wgpu; do
    [ -x "$B/$t" ] || { echo "=== $t missing" >> "$out/tests.log"; continue; }
    echo "=== $t" >> "$out/tests.log"
    "$B/$t" --include-ignored --test-threads 1 >> "$out/tests.log" 2>&1
    echo "$t rc=$?" >> "$out/tests.log"
done
grep -E "^=== |test result|rc=|FAILED|panicked" "$out/tests.log"
# The CUDA goldens of this binary, to compare with (or replace) tests/goldens/cuda.
bash scripts/make-goldens.sh "$B/haloscope" cuda "$out/goldens-cuda" > "$out/goldens.log" 2>&1
echo "goldens rc=$?"

: > "$out/sanitizer.log"
for run in "memcheck twopoint_cuda ic40_observed" "racecheck twopoint_cuda gpu_batches" \
           "memcheck render_cuda_variants sanitizer_small_grey_scene" \
           "memcheck render_cuda_variants sanitizer_small_colour_scene" \
           "memcheck fof_cuda_catalogue device_catalogue_on_a_small_clustered_set"; do
    set -- $run
    timeout 120 compute-sanitizer --tool "$1" "$B/$2" --ignored --test-threads 1 "$3" >> "$out/sanitizer.log" 2>&1
    echo "$run rc=$?"; tail -1 "$out/sanitizer.log"
done
exit 0
fi

E=$bundle/shared/data/events/IC86-2011
benches() {
    local bin=$1 tag=$2
    echo "### $tag render cuda"
    "$bin" bench render --backend cuda --large gpu --particles 100000000 --sizes 2048 --colour none,Density --repeat 3 2>&1 | grep -vE '^\s*$'
    echo "### $tag twopoint cuda kernel"
    "$bin" bench twopoint --backend cuda --threads 16 --launch-sizes 128,512 --gpu-trials 2048 "$E/upgoing_events.txt" "$E/downgoing_events.txt" 2>&1 | grep -vE '^\s*$'
    echo "### $tag twopoint cuda CLI, 20000 trials"
    "$bin" twopoint --backend cuda --trials 20000 --json "$E/upgoing_events.txt" "$E/downgoing_events.txt" 2>/dev/null |
        python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d.get(k) for k in ('trials','seconds','seconds_per_trial','stage_seconds')}))"
    echo "### $tag movie cuda 10^7 1080p, 240 frames"
    "$bin" bench movie --backend cuda --frames 240 --json 2>&1 | tail -1
    echo "### $tag gui cuda 10^7 1080p"
    "$bin" bench gui --backend cuda --particles 10000000 --viewport 1920 1080 --frames 30 --json 2>&1 | tail -1
    echo "### $tag fof cuda"
    "$bin" bench fof --backend cuda --n 100000000 --repeats 3 --cpu-repeats 0 2>&1 | grep -vE '^\s*$'
}
: > "$out/bench.log"
[ -n "$before" ] && benches "$before" before >> "$out/bench.log" 2>&1
benches "$B/haloscope" after >> "$out/bench.log" 2>&1
grep -E "^###|^\[colour|per trial|trials/s|speed|s/|^\{" "$out/bench.log" | cut -c1-400
