#!/usr/bin/env bash
# One call on the 2-GPU machine (nvidia-h100-x2) for the two-point trial run: the kernel's rate
# (`bench twopoint`, 128 trials a launch), `haloscope twopoint` on IC86-2011 with 10^5 trials on
# one and two GPUs with a "before" binary and this one, `mpirun -n 2` beside `--devices 0,1`
# (scripts/bench/mpi-gpu.sh), then the ignored GPU tests.
#
#   scripts/bench/trials-gpu.sh BUNDLE_DIR DEB_DIR OUT_DIR
#
# BUNDLE_DIR (scripts/device-bundle.sh): bin/haloscope, bin/haloscope-before, bin/haloscope-mpi
# (built with --features mpi; bin/haloscope when absent), bin/twopoint_cuda,
# bin/twopoint_multi_gpu, shared/data/events.
# OUT_DIR gets log, bench.jsonl and mpi.jsonl; each run's JSON stays in a temporary folder.
set -u
bundle=$(cd "$1" && pwd); debs=$2; out=$3
here=$(cd "$(dirname "$0")" && pwd)
B=$bundle/bin
E=$bundle/shared/data/events/IC86-2011
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$B/haloscope
export HALOSCOPE_KERNEL_CACHE=/tmp/haloscope-kernels
mkdir -p "$out"
runs=$(mktemp -d)
log=$out/log
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$log" 2>&1
summary='import json,sys; d=json.load(sys.stdin); print(json.dumps({"run": sys.argv[1], **{k: d.get(k) for k in ("trials","seconds","seconds_per_trial","stage_seconds")}}))'
# The kernel's per-trial rate at the CLI's launch size (also compiles the kernels once).
timeout 40 "$B/haloscope" bench twopoint --backend cuda --devices 0 --threads 16 \
    --launch-sizes 128 --gpu-trials 4096 --end-to-end-trials 0 --json \
    "$E/upgoing_events.txt" "$E/downgoing_events.txt" 2>> "$log" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"run": "kernel", "device": d["device"], "per_trial_ms": d["gpu"][0]["per_trial_ms"]}))' |
    tee -a "$out/bench.jsonl"
# The CLI end to end, 10^5 trials: before and after, one device and two.
for run in before:0 after:0 before:0,1 after:0,1; do
    bin=$B/haloscope; [ "${run%%:*}" = before ] && bin=$B/haloscope-before
    timeout 40 "$bin" twopoint --backend cuda --devices "${run#*:}" --trials 100000 --json \
        "$E/upgoing_events.txt" "$E/downgoing_events.txt" 2>> "$log" > "$runs/${run//[:,]/-}.json"
    python3 -c "$summary" "$run" < "$runs/${run//[:,]/-}.json" | tee -a "$out/bench.jsonl"
done
python3 - "$runs" <<'PY' | tee -a "$log"
import json, sys, os
d = sys.argv[1]
def load(n):
    j = json.load(open(os.path.join(d, n)))
    for k in ("seconds", "stage_seconds", "seconds_per_trial"):
        j.pop(k, None)
    return j
print("after equals before, one GPU:", load("after-0.json") == load("before-0.json"))
print("after equals before, two GPUs:", load("after-0-1.json") == load("before-0-1.json"))
PY
mpi_bin=$B/haloscope-mpi; [ -x "$mpi_bin" ] || mpi_bin=$B/haloscope
HALOSCOPE_MPI_BIN=$mpi_bin RUNS="devices mpi" bash "$here/mpi-gpu.sh" "$bundle" "$debs" "$runs" 100000
cat "$runs/mpi.log" >> "$log" 2>/dev/null
cp "$runs/mpi.jsonl" "$out/" 2>/dev/null
echo "=== twopoint_multi_gpu" >> "$log"
timeout 40 "$B/twopoint_multi_gpu" --ignored --test-threads 1 >> "$log" 2>&1
echo "twopoint_multi_gpu rc=$?" >> "$log"
echo "=== twopoint_cuda" >> "$log"
timeout 60 "$B/twopoint_cuda" --ignored --test-threads 1 >> "$log" 2>&1
echo "twopoint_cuda rc=$?" >> "$log"
grep -E "^=== |^test |test result|rc=|equals|panicked" "$log"
