#!/usr/bin/env bash
# On a machine with two GPUs (nvidia-h100-x2): the ignored multi-device two-point tests, the
# one-device two-point tests, and the two-point benchmarks on 1 and 2 devices alternately, for
# one bundle made by scripts/device-bundle.sh (bin/ haloscope, twopoint_multi_gpu, twopoint_cuda;
# shared/data/events IC40 and IC86-2011).
#
#   scripts/bench/multigpu-check.sh BUNDLE_DIR OUT_DIR
#
# OUT_DIR gets log (everything) and bench.jsonl (one line per timed run).
set -u
bundle=$1; out=$2
B=$bundle/bin
E=$bundle/shared/data/events/IC86-2011
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$B/haloscope
export HALOSCOPE_KERNEL_CACHE=/tmp/haloscope-kernels
mkdir -p "$out"
log=$out/log
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$log" 2>&1
echo "=== twopoint_multi_gpu" >> "$log"
timeout 90 "$B/twopoint_multi_gpu" --ignored --test-threads 1 >> "$log" 2>&1
echo "twopoint_multi_gpu rc=$?" >> "$log"
# The CLI end to end, 10^5 trials: one device and two, alternately, twice.
for devices in 0 0,1 0 0,1; do
    timeout 60 "$B/haloscope" twopoint --backend cuda --devices "$devices" --trials 100000 --json \
        "$E/upgoing_events.txt" "$E/downgoing_events.txt" 2>> "$log" |
        python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'cli_devices': '$devices', **{k: d.get(k) for k in ('trials','seconds','seconds_per_trial','stage_seconds')}}))" |
        tee -a "$out/bench.jsonl"
done
# The bench's in-process end-to-end path, 10^5 trials, on 1 then 2 devices.
for devices in 0 0,1; do
    timeout 60 "$B/haloscope" bench twopoint --backend cuda --devices "$devices" --threads 16 \
        --launch-sizes 128 --gpu-trials 1024 --end-to-end-trials 100000 --json \
        "$E/upgoing_events.txt" "$E/downgoing_events.txt" 2>> "$log" |
        python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'bench_devices': '$devices', 'kernel_per_trial_ms': d['gpu'][0]['per_trial_ms'], 'end_to_end': d['end_to_end']}))" |
        tee -a "$out/bench.jsonl"
done
echo "=== twopoint_cuda" >> "$log"
timeout 60 "$B/twopoint_cuda" --ignored --test-threads 1 >> "$log" 2>&1
echo "twopoint_cuda rc=$?" >> "$log"
grep -E "^=== |^test |test result|rc=|panicked" "$log"
