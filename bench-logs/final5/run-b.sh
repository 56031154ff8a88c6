#!/usr/bin/env bash
# Session 5, final main after the CPU second and third passes and the two-point helper refactor:
# the GPU tests that depend on the CPU renderer or the changed kernel source, sanitizers, and the
# CPU and CUDA render benchmarks of this binary.
set -u
tar -xJf dev-bin-final5bx/b.tar.xz -C /tmp
R=/tmp/dev-bin-final5b; B=$R/bin
export LD_LIBRARY_PATH=$R/lib HALOSCOPE_SHARED=$R/shared HALOSCOPE_BIN=$B/haloscope
nvidia-smi -L > $OUT/tests.log; lscpu | grep -E 'Model name|^CPU\(s\)' >> $OUT/tests.log
for t in render_cuda render_cuda_variants twopoint_cuda app_cuda; do
  echo "=== $t" >> $OUT/tests.log
  $B/$t --ignored --test-threads 1 >> $OUT/tests.log 2>&1; echo "$t rc=$?" >> $OUT/tests.log
done
grep -E "^=== |test result|rc=|FAILED|panicked" $OUT/tests.log
timeout 60 compute-sanitizer --tool memcheck $B/twopoint_cuda --ignored --test-threads 1 ic40_observed > $OUT/sanitizer.log 2>&1; echo "memcheck tp rc=$?"; tail -1 $OUT/sanitizer.log
timeout 60 compute-sanitizer --tool memcheck $B/render_cuda_variants --ignored --test-threads 1 sanitizer_small_grey_scene >> $OUT/sanitizer.log 2>&1; echo "memcheck render rc=$?"; tail -1 $OUT/sanitizer.log
$B/haloscope bench render --backend cuda --large gpu --particles 100000000 --sizes 2048 --repeat 3 --json > $OUT/render-cuda.json 2> $OUT/render-cuda.log; echo "cuda render rc=$?"; grep -E '^ +1000' $OUT/render-cuda.log | cut -c1-110
for th in 1 16; do
  RAYON_NUM_THREADS=$th $B/haloscope bench render --backend cpu --particles 10000000 --sizes 2048 --radii 0.3,1,4,16 --repeat 3 --json >> $OUT/render-cpu.json 2> /tmp/cpu-$th.log; echo "cpu $th rc=$?"; cat /tmp/cpu-$th.log >> $OUT/render-cpu.log; grep -E '^ +1000' /tmp/cpu-$th.log | cut -c1-120
done
$B/haloscope bench twopoint --backend cuda --threads 16 --json --launch-sizes 512 --gpu-trials 1024 $R/shared/data/events/IC86-2011/upgoing_events.txt $R/shared/data/events/IC86-2011/downgoing_events.txt > $OUT/tp.json 2> $OUT/tp.log; echo "tp rc=$?"; tail -2 $OUT/tp.log | cut -c1-200
