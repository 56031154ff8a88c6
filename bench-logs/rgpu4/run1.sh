#!/bin/bash
# Device run 1 of branch s4-rgpu (session 4): tests, memcheck, BEFORE/AFTER bench, sweep, ncu.
D=dev-bin-rgpu; B=$D/bin
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
T=$OUT/tests.log; L=$OUT/bench.txt
nvidia-smi -L > $T; nvidia-smi -L > $L
echo "== render_cuda_variants" >> $T
timeout 70 $B/render_cuda_variants --ignored --test-threads 1 >> $T 2>&1; echo "rc $?" >> $T
echo "== render_cuda" >> $T
timeout 50 $B/render_cuda --ignored --test-threads 1 >> $T 2>&1; echo "rc $?" >> $T
echo "== memcheck sanitizer_small_grey_scene" >> $T
timeout 40 compute-sanitizer --tool memcheck $B/render_cuda_variants --ignored --exact sanitizer_small_grey_scene 2>&1 | tail -15 >> $T
C="bench render --backend cuda --large gpu --particles 100000000 --sizes 2048"
echo "== BEFORE $B/haloscope-main-5efd4f6 $C --repeat 3 --json" >> $L
timeout 60 $B/haloscope-main-5efd4f6 $C --repeat 3 --json > $OUT/before.json 2>> $L
echo "== AFTER $B/haloscope $C --repeat 3 --json" >> $L
timeout 60 $B/haloscope $C --repeat 3 --json > $OUT/after.json 2>> $L
echo "== SWEEP $B/haloscope $C --repeat 2 --upload-order morton,file --borders atomics,buffers --shared-sums red,word --json" >> $L
timeout 90 $B/haloscope $C --repeat 2 --upload-order morton,file --borders atomics,buffers --shared-sums red,word --json > $OUT/sweep.json 2>> $L
echo "== NCU medium_tiles, 10^7, R0 4: red (launches 1-2), word (3-4)" > $OUT/ncu.txt
timeout 60 ncu --clock-control none -k medium_tiles -c 4 --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis $B/haloscope bench render --backend cuda --large gpu --particles 10000000 --sizes 2048 --radii 4 --repeat 1 --shared-sums red,word >> $OUT/ncu.txt 2>&1
echo done >> $L
