#!/bin/bash
# Device run 1 of branch s5-rgpu (session 5): warp-uniform medium kernel. Tests and memcheck
# (three processes at once: correctness only), then one after the other: BEFORE (main 0d31aff)
# and AFTER, a lanes x launch-bounds sweep at R0 = 4, per-kernel GPU times (10^7, R0 = 4) and an
# ncu source profile of the new medium kernel (10^7, R0 = 4, as the lead's prof5).
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
echo "== sweep $B/haloscope $C --radii 4 --repeat 3 --lanes 4,8 --grey-min-blocks 0,6 --json" >> $L
timeout 35 $B/haloscope $C --radii 4 --repeat 3 --lanes 4,8 --grey-min-blocks 0,6 --json > $OUT/sweep.json 2>> $L
echo "== per-kernel times (ncu gpu__time_duration), 10^7, R0 4, first frame + 1 resident" >> $L
timeout 25 ncu --clock-control none --metrics gpu__time_duration.sum --csv $B/haloscope bench render --backend cuda --large gpu --particles 10000000 --sizes 2048 --radii 4 --repeat 1 > /tmp/kern.csv 2>/dev/null
grep -E '"(classify|tile_scan|scatter|small_splat|medium_tiles|compose|tone8|order_[a-z]+)"' /tmp/kern.csv | awk -F'","' '{print $5, $NF}' | tr -d '"' | tail -40 >> $L
echo "== ncu source profile medium_tiles AFTER 10^7 R0 4" >> $L
timeout 35 ncu --clock-control none --kernel-name medium_tiles --launch-count 1 --set full --import-source yes -o /tmp/med \
  $B/haloscope bench render --backend cuda --large gpu --particles 10000000 --sizes 2048 --radii 4 --repeat 1 > /dev/null 2>&1; echo "med ncu rc=$?" >> $L
ncu --import /tmp/med.ncu-rep --page details --csv > $OUT/med-details.csv 2>&1
ncu --import /tmp/med.ncu-rep --page source --csv --print-source sass 2>&1 | xz -T4 -6 > $OUT/med-source-sass.csv.xz
grep -E '"(Duration|Registers Per Thread|Theoretical Occupancy|Achieved Occupancy|Issue Slots Busy|Avg. Active Threads Per Warp|Executed Instructions|Compute \(SM\) Throughput)"' $OUT/med-details.csv | cut -c1-220 >> $L
echo done >> $L
