#!/bin/bash
# Device run 2 of branch s4-rgpu (session 4): the committed defaults verified and measured.
D=dev-bin-rgpu; B=$D/bin
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
T=$OUT/tests.log; L=$OUT/bench.txt
nvidia-smi -L > $T; nvidia-smi -L > $L
echo "== render_cuda_variants" >> $T
timeout 70 $B/render_cuda_variants --ignored --test-threads 1 >> $T 2>&1; echo "rc $?" >> $T
echo "== render_cuda" >> $T
timeout 50 $B/render_cuda --ignored --test-threads 1 >> $T 2>&1; echo "rc $?" >> $T
echo "== memcheck sanitizer_small_grey_scene" >> $T
timeout 40 compute-sanitizer --tool memcheck $B/render_cuda_variants --ignored --exact sanitizer_small_grey_scene 2>&1 | tail -8 >> $T
echo "== racecheck sanitizer_small_grey_scene" >> $T
timeout 60 compute-sanitizer --tool racecheck $B/render_cuda_variants --ignored --exact sanitizer_small_grey_scene 2>&1 | tail -8 >> $T
C="bench render --backend cuda --large gpu --particles 100000000 --sizes 2048"
echo "== BEFORE $B/haloscope-main-5efd4f6 $C --repeat 3 --json" >> $L
timeout 60 $B/haloscope-main-5efd4f6 $C --repeat 3 --json > $OUT/before.json 2>> $L
echo "== AFTER $B/haloscope $C --repeat 3 --json" >> $L
timeout 60 $B/haloscope $C --repeat 3 --json > $OUT/after.json 2>> $L
echo "== SWEEP $B/haloscope $C --repeat 2 --upload-order morton,file,morton,file --lanes 8,16 --radii 0.3,4 --json" >> $L
timeout 60 $B/haloscope $C --repeat 2 --upload-order morton,file,morton,file --lanes 8,16 --radii 0.3,4 --json > $OUT/sweep.json 2>> $L
echo "== CPU $B/haloscope bench render --particles 100000000 --sizes 2048 --repeat 1 --json" >> $L
timeout 70 $B/haloscope bench render --particles 100000000 --sizes 2048 --repeat 1 --json > $OUT/cpu.json 2>> $L
echo done >> $L
