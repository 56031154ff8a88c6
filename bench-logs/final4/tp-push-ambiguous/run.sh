#!/usr/bin/env bash
D=$PWD/dev-bin-tpref; export LD_LIBRARY_PATH=$D/lib HALOSCOPE_SHARED=$D/shared
nvidia-smi -L
$D/bin/twopoint_cuda --ignored --test-threads 1 2>&1 | tee $OUT/tests.log | grep -E "^test |test result"
timeout 60 compute-sanitizer --tool memcheck $D/bin/twopoint_cuda --ignored --test-threads 1 ic40_observed > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -1 $OUT/memcheck.log
for k in thread warp; do HALOSCOPE_TWOPOINT_KERNEL=$k $D/bin/twopoint_cuda --ignored --test-threads 1 ic86_16 edge_pairs 2>&1 | grep "test result" | sed "s/^/$k: /"; done
