#!/usr/bin/env bash
# kNN smoothing lengths on the GPU machine, in one call: the CUDA twin against the CPU (every
# ignored knn_cuda test, bit for bit), the CPU tests of render_smoothing, then the 10^8
# clustered timing of the code under test and of a baseline build, in the same call.
#
# Here:   cargo test --no-run --test knn_cuda --test render_smoothing   (and the baseline's
#         knn_cuda built from the base commit, copied as knn_cuda_base), then
#         scripts/device-bundle.sh DIR --data snapshots/... knn_cuda knn_cuda_base render_smoothing
# There:  scripts/bench/knn-gpu.sh DIR   (OUT collects the logs when set)
set -uo pipefail
dir=$1
out=${OUT:-/tmp}
export LD_LIBRARY_PATH=$dir/lib HALOSCOPE_SHARED=$dir/shared
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
nproc
run() { # NAME TIMEOUT BINARY ARGS...
    local name=$1 limit=$2; shift 2
    echo "=== $name"
    timeout "$limit" "$@" 2>&1 | tee "$out/$name.log" | grep -E "CUDA|stages|test result|panicked|FAILED|error"
}
run new-tests 70 "$dir/bin/knn_cuda" --ignored --nocapture --test-threads=1 equals
run new-bench 70 "$dir/bin/knn_cuda" --ignored --nocapture times
run base-bench 70 "$dir/bin/knn_cuda_base" --ignored --nocapture times
run smoothing 15 "$dir/bin/render_smoothing"
