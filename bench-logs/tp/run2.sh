#!/bin/bash
# Device round 2 (s3-tp): BEFORE/AFTER side by side with the batched-load kernels, tests,
# compute-sanitizer memcheck + racecheck on the new default, ncu of one launch.
D=dev-bin-tp; B=$D/bin; T=$B/twopoint_cuda
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
E=$D/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
nvidia-smi -L | tee $OUT/nvidia-smi.txt
BENCH="bench twopoint --backend cuda --threads 16 --json --launch-sizes 128,512 --gpu-trials 1024 $IC86"
run() { local name=$1; shift; local t0=$SECONDS; echo "== $name" >> $OUT/bench.jsonl; timeout 40 "$@" > $OUT/cur.json 2>> $OUT/bench.err; local rc=$?; cat $OUT/cur.json >> $OUT/bench.jsonl; echo "$name rc $rc $(grep -o '"count_kernel":"[A-Za-z0-9]*"' $OUT/cur.json) $(grep -o '"per_trial_ms":[0-9.e-]*' $OUT/cur.json | tr '\n' ' ') $((SECONDS - t0))s"; }
run before $B/haloscope-main-bde20d6 $BENCH
run after $B/haloscope $BENCH
for k in batch2 thread lanes16; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k $B/haloscope $BENCH; done
run before-again $B/haloscope-main-bde20d6 $BENCH
run after-again $B/haloscope $BENCH
HALOSCOPE_TWOPOINT_KERNEL=batch2 run after-batch2-again $B/haloscope $BENCH
rm -f $OUT/cur.json
timeout 100 $T --ignored --nocapture > $OUT/tests.log 2>&1; echo "tests rc $?"; grep -E "^test |test result|panicked|kernel " $OUT/tests.log
timeout 30 compute-sanitizer --tool memcheck $T --ignored ic40_observed > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -3 $OUT/memcheck.log
timeout 40 compute-sanitizer --tool racecheck $T --ignored gpu_batches > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -3 $OUT/racecheck.log
timeout 40 ncu --kernel-name regex:tp_ --launch-skip 20 --launch-count 4 --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $OUT/ncu.log 2>&1; echo "ncu rc $?"; grep -E "^  tp_|duration|warps_active|ratio" $OUT/ncu.log | head -20
