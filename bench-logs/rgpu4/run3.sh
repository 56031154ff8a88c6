#!/bin/bash
# Device run 3 of branch s4-rgpu (session 4, second pass): f32 fixed point, one-part atomics,
# launch bounds (256, 6) on the RGB medium pass. BEFORE (main 5efd4f6), FIRST (first pass
# b322406) and AFTER side by side; tests, memcheck, one ncu of the medium kernel.
D=dev-bin-rgpu; B=$D/bin
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
T=$OUT/tests.log; L=$OUT/bench.txt
nvidia-smi -L > $T; nvidia-smi -L > $L
echo "== render_cuda_variants" >> $T
timeout 70 $B/render_cuda_variants --ignored --test-threads 1 >> $T 2>&1; echo "rc $?" >> $T
echo "== render_cuda" >> $T
timeout 50 $B/render_cuda --ignored --test-threads 1 >> $T 2>&1; echo "rc $?" >> $T
C="bench render --backend cuda --large gpu --particles 100000000 --sizes 2048"
for v in haloscope-main-5efd4f6:before haloscope-firstpass:first haloscope:after; do
  bin=${v%%:*}; tag=${v##*:}
  echo "== $tag $B/$bin $C --repeat 3 --json" >> $L
  timeout 45 $B/$bin $C --repeat 3 --json > $OUT/$tag.json 2>> $L
done
echo "== memcheck sanitizer_small_grey_scene" >> $T
timeout 30 compute-sanitizer --tool memcheck $B/render_cuda_variants --ignored --exact sanitizer_small_grey_scene 2>&1 | tail -6 >> $T
echo "== ncu medium_tiles AFTER, 10^7 R0 4" >> $L
timeout 40 ncu --clock-control none -k medium_tiles -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats $B/haloscope bench render --backend cuda --large gpu --particles 10000000 --sizes 2048 --radii 4 --repeat 1 > $OUT/ncu.txt 2>&1
grep -E "medium_tiles|Duration|Registers Per|Theoretical Occ|Achieved Occ|Issue Slots|Active Threads|Compute \(SM\)" $OUT/ncu.txt >> $L
echo done >> $L
