#!/usr/bin/env bash
# Final main of session 5 on the GPU machine: every ignored GPU test, then the three benchmarks.
set -u
tar -xJf dev-bin-final5x/b.tar.xz -C /tmp
R=/tmp/dev-bin-final5; B=$R/bin
export LD_LIBRARY_PATH=$R/lib HALOSCOPE_SHARED=$R/shared HALOSCOPE_BIN=$B/haloscope
nvidia-smi -L > $OUT/tests.log
for t in render_cuda render_cuda_variants fof_cuda twopoint_cuda app_cuda; do
  echo "=== $t" >> $OUT/tests.log
  $B/$t --ignored --test-threads 1 >> $OUT/tests.log 2>&1; echo "$t rc=$?" >> $OUT/tests.log
done
grep -E "^=== |test result|rc=|FAILED|panicked" $OUT/tests.log
E=$R/shared/data/events
$B/haloscope bench render --backend cuda --large gpu --particles 100000000 --sizes 2048 --repeat 3 --json > $OUT/render.json 2> $OUT/render.log; echo "render rc=$?"; grep -vE "^\s*$" $OUT/render.log | tail -6 | cut -c1-150
$B/haloscope bench fof --backend cuda --n 10000000 100000000 --repeats 3 --cpu-repeats 1 --json > $OUT/fof.json 2> $OUT/fof.log; echo "fof rc=$?"; tail -8 $OUT/fof.log | cut -c1-200
$B/haloscope bench twopoint --backend cuda --threads 16 --json --launch-sizes 512 --gpu-trials 1024 $E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt > $OUT/tp.json 2> $OUT/tp.log; echo "tp rc=$?"; tail -5 $OUT/tp.log | cut -c1-200
# The committed two-point default (b2fd) under the sanitizers (its final form had not been run there).
timeout 60 compute-sanitizer --tool memcheck $B/twopoint_cuda --ignored --test-threads 1 ic40_observed > $OUT/sanitizer.log 2>&1; echo "memcheck tp rc=$?"; tail -1 $OUT/sanitizer.log
timeout 60 compute-sanitizer --tool racecheck $B/twopoint_cuda --ignored --test-threads 1 gpu_batches >> $OUT/sanitizer.log 2>&1; echo "racecheck tp rc=$?"; tail -1 $OUT/sanitizer.log
timeout 60 compute-sanitizer --tool memcheck $B/render_cuda_variants --ignored --test-threads 1 sanitizer_small_grey_scene >> $OUT/sanitizer.log 2>&1; echo "memcheck render rc=$?"; tail -1 $OUT/sanitizer.log
