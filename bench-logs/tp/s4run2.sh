#!/bin/bash
# Device round 2 (session 4, s4-tp): occupancy variants of batch2 (tp_count_b2o10, b2o12,
# b1o12, b1o16) against BEFORE (main 5efd4f6) and the AFTER default (batch2) side by side;
# all ignored tests with each variant as the default; memcheck + racecheck on each; ncu.
D=dev-bin-tp; B=$D/bin; T=$B/twopoint_cuda
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
E=$D/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
nvidia-smi -L | tee $OUT/nvidia-smi.txt
BENCH="bench twopoint --backend cuda --threads 16 --json --launch-sizes 128,512 --gpu-trials 1024 $IC86"
run() { local name=$1; shift; local t0=$SECONDS; echo "== $name" >> $OUT/bench.jsonl; timeout 40 "$@" > $OUT/cur.json 2>> $OUT/bench.err; local rc=$?; cat $OUT/cur.json >> $OUT/bench.jsonl; echo "$name rc $rc $(grep -o '"count_kernel":"[A-Za-z0-9]*"' $OUT/cur.json) $(grep -o '"per_trial_ms":[0-9.e-]*' $OUT/cur.json | tr '\n' ' ') $((SECONDS - t0))s"; }
V="b2o10 b2o12 b1o12 b1o16"
run before $B/haloscope-main-5efd4f6 $BENCH
run after $B/haloscope $BENCH
for k in $V; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k $B/haloscope $BENCH; done
run before-again $B/haloscope-main-5efd4f6 $BENCH
for k in $V batch2; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k-again $B/haloscope $BENCH; done
HALOSCOPE_TWOPOINT_KERNEL=groups16 run after-groups16 $B/haloscope $BENCH
rm -f $OUT/cur.json
timeout 60 $T --ignored --nocapture > $OUT/tests.log 2>&1; echo "tests rc $?"; grep -E "test result|panicked" $OUT/tests.log
for k in $V; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 60 $T --ignored --nocapture > $OUT/tests-$k.log 2>&1; echo "tests $k rc $?"; grep -E "test result|panicked|kernel " $OUT/tests-$k.log | head -4
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 30 compute-sanitizer --tool memcheck $T --ignored ic40_observed > $OUT/memcheck-$k.log 2>&1; echo "memcheck $k rc $?"; tail -1 $OUT/memcheck-$k.log
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 40 compute-sanitizer --tool racecheck $T --ignored gpu_batches > $OUT/racecheck-$k.log 2>&1; echo "racecheck $k rc $?"; tail -1 $OUT/racecheck-$k.log
done
for k in batch2 $V; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 40 ncu --kernel-name regex:tp_count --launch-skip 5 --launch-count 1 --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $OUT/ncu-$k.log 2>&1; echo "ncu $k rc $?"; grep -E "^  tp_|duration|warps_active|ratio" $OUT/ncu-$k.log | head -6
done
