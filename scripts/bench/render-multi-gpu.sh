#!/usr/bin/env bash
# On the 2-GPU machine (nvidia-h100-x2): one frame over both GPUs against one GPU. The ignored
# multi-device tests (render_multi_gpu: τ and image bit-identical to one device), the bench at
# 2x10^8 particles, 2048^2, colour, resident, on `--devices 0` then `0,1` (the same binary,
# the baseline in the same call), then the one-device CUDA tests (render_cuda, render_goldens).
# BUNDLE_DIR is made by scripts/device-bundle.sh with bin/ haloscope, render_multi_gpu,
# render_cuda, render_goldens and shared/data/snapshots test4.tbin, run581.20000,
# g2_lcdm_gas_snapshot_004.hdf5.
#
#   scripts/bench/render-multi-gpu.sh BUNDLE_DIR OUT_DIR [PARTICLES]
#
# OUT_DIR gets log (everything), bench-0.json, bench-01.json and summary (ms per frame).
set -u
bundle=$(cd "$1" && pwd); out=$2; particles=${3:-200000000}
B=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$B/haloscope
export HALOSCOPE_KERNEL_CACHE=/tmp/haloscope-kernels
mkdir -p "$out"
log=$out/log
{ nvidia-smi -L; nvidia-smi topo -m; lscpu | grep -E 'Model name|^CPU\(s\)'; } > "$log" 2>&1
echo "=== render_multi_gpu" >> "$log"
timeout 60 "$B/render_multi_gpu" --ignored --test-threads 1 >> "$log" 2>&1
echo "render_multi_gpu rc=$?" >> "$log"
for devices in 0 0,1; do
    echo "=== bench --devices $devices" >> "$log"
    timeout 65 "$B/haloscope" bench render --backend cuda --devices "$devices" \
        --particles "$particles" --sizes 2048 --colour Density --radii 0.3,1,4,16 --repeat 3 \
        --json > "$out/bench-${devices/,/}.json" 2>> "$log"
    echo "bench $devices rc=$?" >> "$log"
done
python3 - "$out" <<'PY' | tee "$out/summary" >> "$log"
import json, os, sys
out = sys.argv[1]
runs = {}
for d in ("0", "0,1"):
    try:
        runs[d] = json.load(open(os.path.join(out, f"bench-{d.replace(',', '')}.json")))
    except Exception as e:
        print(d, "no result:", e)
if len(runs) == 2:
    for a, b in zip(runs["0"]["cases"], runs["0,1"]["cases"]):
        ra, rb = a["result"], b["result"]
        print(json.dumps({"particles": a["particles"], "r0_px": a["r0_px"],
                          "one_ms": round(ra["seconds"] * 1e3, 2),
                          "two_ms": round(rb["seconds"] * 1e3, 2),
                          "speedup": round(ra["seconds"] / rb["seconds"], 3),
                          "first_s": [round(ra["first_frame_s"], 2), round(rb["first_frame_s"], 2)],
                          "counts_equal": ra["counts"] == rb["counts"],
                          "two_stages_ms": {k: round(v, 2) for k, v in rb["stages_ms"].items()}}))
PY
echo "=== render_cuda" >> "$log"
timeout 30 "$B/render_cuda" --ignored --test-threads 1 >> "$log" 2>&1
echo "render_cuda rc=$?" >> "$log"
echo "=== render_goldens" >> "$log"
timeout 15 "$B/render_goldens" --include-ignored --test-threads 1 >> "$log" 2>&1
echo "render_goldens rc=$?" >> "$log"
grep -E "^=== |^test |test result|rc=|panicked|speedup" "$log"
