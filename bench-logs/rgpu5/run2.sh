#!/bin/bash
# Device run 2 of branch s5-rgpu (session 5): the final binary (warps take the segment's splats
# strided by warp: run 1's wide pass at R0 = 16 had 8 of its 32 warps busy). Tests with the
# shared snapshots and memcheck (three processes at once: correctness only), then one after the
# other: BEFORE (main 0d31aff) and AFTER, an ncu summary of the final medium kernel (10^7,
# R0 = 4) and the CPU back-end on the same 16 cores.
set -u
D=$PWD/dev-bin-rgpu5; B=$D/bin
export LD_LIBRARY_PATH=$D/lib HALOSCOPE_SHARED=$D/shared HALOSCOPE_KERNEL_CACHE=/tmp/kc
L=$OUT/bench.txt
nvidia-smi -L | tee $OUT/tests-variants.log $OUT/tests-render.log > $L
(timeout 75 $B/render_cuda_variants --ignored --test-threads 1 >> $OUT/tests-variants.log 2>&1; echo "rc $?" >> $OUT/tests-variants.log) &
(timeout 75 $B/render_cuda --ignored --test-threads 1 >> $OUT/tests-render.log 2>&1; echo "rc $?" >> $OUT/tests-render.log) &
(timeout 75 compute-sanitizer --tool memcheck $B/render_cuda_variants --ignored --exact sanitizer_small_grey_scene 2>&1 | tail -6 > /tmp/memcheck.log) &
wait
cat /tmp/memcheck.log >> $OUT/tests-render.log
C="bench render --backend cuda --large gpu --particles 100000000 --sizes 2048"
for v in haloscope-main-0d31aff:before haloscope:after; do
  bin=${v%%:*}; tag=${v##*:}
  echo "== $tag $B/$bin $C --repeat 3 --json" >> $L
  timeout 40 $B/$bin $C --repeat 3 --json > $OUT/$tag.json 2>> $L
done
echo "== ncu medium_tiles AFTER 10^7 R0 4" >> $L
timeout 30 ncu --clock-control none -k medium_tiles -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section InstructionStats \
  $B/haloscope bench render --backend cuda --large gpu --particles 10000000 --sizes 2048 --radii 4 --repeat 1 > /tmp/ncu.txt 2>&1
grep -E "medium_tiles|Duration|Registers Per|Theoretical Occ|Achieved Occ|Issue Slots|Active Threads|Executed Instructions |Compute \(SM\)" /tmp/ncu.txt >> $L
echo "== cpu $B/haloscope bench render --particles 100000000 --sizes 2048 --repeat 1 --json" >> $L
timeout 40 $B/haloscope bench render --particles 100000000 --sizes 2048 --repeat 1 --json > $OUT/cpu.json 2>> $L
echo done >> $L
