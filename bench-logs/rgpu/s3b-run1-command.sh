tar -xJf dev-bin-rgpu2/b.tar.xz -C /tmp && B=/tmp/dev-bin-rgpu2/bin && export LD_LIBRARY_PATH=/tmp/dev-bin-rgpu2/lib HALOSCOPE_SHARED=/tmp/dev-bin-rgpu2/shared; nvidia-smi -L | tee $OUT/smi.log; S=$SECONDS
timeout 60 $B/render_cuda_variants --ignored --nocapture --test-threads 1 > $OUT/tests.log 2>&1; echo "variants rc $? t=$((SECONDS-S))" >> $OUT/tests.log
timeout 35 $B/render_cuda --ignored --test-threads 1 >> $OUT/tests.log 2>&1; echo "render_cuda rc $? t=$((SECONDS-S))" >> $OUT/tests.log
C="bench render --backend cuda --large gpu --sizes 2048 --particles 100000000"
timeout 35 $B/haloscope-s3-rgpu-c47870d $C --repeat 3 --json > $OUT/before.json 2> $OUT/before.log; echo "before t=$((SECONDS-S))" >> $OUT/tests.log
timeout 35 $B/haloscope $C --repeat 3 --json > $OUT/after.json 2> $OUT/after.log; echo "after t=$((SECONDS-S))" >> $OUT/tests.log
timeout 20 compute-sanitizer --tool memcheck $B/render_cuda_variants --ignored sanitizer_small_grey_scene 2>&1 | tail -6 > $OUT/memcheck.log
timeout 55 $B/haloscope $C --repeat 2 --upload-order morton,file --separable off,on --json > $OUT/sweep.json 2> $OUT/sweep.log; echo "sweep t=$((SECONDS-S))" >> $OUT/tests.log
tail -3 $OUT/tests.log; tail -4 $OUT/memcheck.log; grep -h "frame_ms\|^ *100000000" $OUT/*.log | cut -c1-120
