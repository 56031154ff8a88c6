#!/usr/bin/env bash
# On the 2-GPU machine: the CUDA tests of friends-of-friends on spatial domains, then
# `bench fof --spread` (one device against both, same call): 4x10^8 clustered particles, and
# 10^9 (sub-boxes on one device, domains on two, one slab of about 10^8 checked on the CPU).
#
#   scripts/bench/fof-domains-gpu.sh BUNDLE_DIR OUT_DIR
#
# BUNDLE_DIR (scripts/device-bundle.sh) holds bin/haloscope, bin/fof_domains_cuda, lib/, shared/.
set -u
bundle=$1; out=$2
B=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$B/haloscope
mkdir -p "$out"
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'; free -g | head -2; } | tee "$out/machine.log"
for t in fof_domains_cuda fof_domains; do
    echo "=== $t"
    timeout 120 "$B/$t" --include-ignored --test-threads 1 2>&1 | grep -E "^test |test result|panicked|device:"
    echo "$t rc=${PIPESTATUS[0]}"
done 2>&1 | tee "$out/tests.log"
for n in 400000000 1000000000; do
    echo "=== bench fof --spread --n $n"
    repeats=$([ "$n" -lt 500000000 ] && echo 2 || echo 1)
    timeout 200 "$B/haloscope" bench fof --backend cuda --spread --n "$n" --repeats "$repeats" \
        --check-up-to 100000000
    echo "rc=$?"
done 2>&1 | tee "$out/bench.log"
