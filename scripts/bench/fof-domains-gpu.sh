#!/usr/bin/env bash
# On the 2-GPU machine: the CUDA tests of friends-of-friends (domains first), then
# `bench fof --spread` (one device against both, same call): 4x10^8 clustered particles with
# this build and, when BUNDLE_DIR/bin/haloscope-before exists, with that baseline build; then
# 10^9 (sub-boxes on one device, domains on two, one slab of about 10^8 checked on the CPU).
#
#   scripts/bench/fof-domains-gpu.sh BUNDLE_DIR OUT_DIR
#
# BUNDLE_DIR (scripts/device-bundle.sh, given haloscope itself so that its libraries come too)
# holds bin/haloscope, the test binaries fof_domains_cuda, fof_cuda and fof_cuda_catalogue,
# lib/ and shared/.
set -u
bundle=$1; out=$2
B=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$B/haloscope
mkdir -p "$out"
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'; free -g | head -2; } | tee "$out/machine.log"
tests() {
    for t in "$@"; do
        echo "=== $t"
        timeout 60 "$B/$t" --ignored 2>&1 | grep -E -A3 "^test |test result|panicked|device:"
        echo "$t rc=${PIPESTATUS[0]}"
    done 2>&1 | tee -a "$out/tests.log"
}
bench() { # BINARY N REPEATS CHECK_UP_TO
    echo "=== $(basename "$1") bench fof --spread --n $2"
    timeout 100 "$1" bench fof --backend cuda --spread --n "$2" --repeats "$3" --check-up-to "$4"
    echo "rc=$?"
}
tests fof_domains_cuda
{
    bench "$B/haloscope" 400000000 2 100000000
    # The check also for the baseline: builds before f08b6ec abort with --check-up-to 0.
    [ -x "$B/haloscope-before" ] && bench "$B/haloscope-before" 400000000 2 100000000
} 2>&1 | tee "$out/bench.log"
tests fof_cuda_catalogue
bench "$B/haloscope" 1000000000 1 100000000 2>&1 | tee -a "$out/bench.log"
tests fof_cuda
