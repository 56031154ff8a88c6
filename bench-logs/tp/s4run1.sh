#!/bin/bash
# Device round 1 (session 4, s4-tp): group kernels (tp_count_groups{4,8,16}) against BEFORE
# (main 5efd4f6) side by side; all ignored tests (default kernel, then with groups8 as the
# default); memcheck + racecheck on groups8; ncu of one launch of groups8.
D=dev-bin-tp; B=$D/bin; T=$B/twopoint_cuda
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
E=$D/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
nvidia-smi -L | tee $OUT/nvidia-smi.txt
BENCH="bench twopoint --backend cuda --threads 16 --json --launch-sizes 128,512 --gpu-trials 1024 $IC86"
run() { local name=$1; shift; local t0=$SECONDS; echo "== $name" >> $OUT/bench.jsonl; timeout 40 "$@" > $OUT/cur.json 2>> $OUT/bench.err; local rc=$?; cat $OUT/cur.json >> $OUT/bench.jsonl; echo "$name rc $rc $(grep -o '"count_kernel":"[A-Za-z0-9]*"' $OUT/cur.json) $(grep -o '"per_trial_ms":[0-9.e-]*' $OUT/cur.json | tr '\n' ' ') $((SECONDS - t0))s"; }
run before $B/haloscope-main-5efd4f6 $BENCH
run after $B/haloscope $BENCH
for k in groups8 groups16 groups4; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k $B/haloscope $BENCH; done
run before-again $B/haloscope-main-5efd4f6 $BENCH
for k in groups8 groups16 groups4 batch2; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k-again $B/haloscope $BENCH; done
rm -f $OUT/cur.json
timeout 60 $T --ignored --nocapture > $OUT/tests.log 2>&1; echo "tests rc $?"; grep -E "^test |test result|panicked|kernel " $OUT/tests.log
HALOSCOPE_TWOPOINT_KERNEL=groups8 timeout 60 $T --ignored --nocapture > $OUT/tests-groups8.log 2>&1; echo "tests groups8 rc $?"; grep -E "^test |test result|panicked|kernel " $OUT/tests-groups8.log
export HALOSCOPE_TWOPOINT_KERNEL=groups8
timeout 30 compute-sanitizer --tool memcheck $T --ignored ic40_observed > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -3 $OUT/memcheck.log
timeout 40 compute-sanitizer --tool racecheck $T --ignored gpu_batches > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -3 $OUT/racecheck.log
timeout 40 ncu --kernel-name regex:tp_ --launch-skip 20 --launch-count 4 --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $OUT/ncu.log 2>&1; echo "ncu rc $?"; grep -E "^  tp_|duration|warps_active|ratio" $OUT/ncu.log | head -20
