#!/bin/bash
# Device round 1 (s3-tp): benchmarks BEFORE/AFTER side by side, kernel variants, tests,
# compute-sanitizer memcheck + racecheck, ncu of the counting kernels.
D=dev-bin-tp; B=$D/bin; T=$B/twopoint_cuda
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
E=$D/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
nvidia-smi -L | tee $OUT/nvidia-smi.txt
BENCH="bench twopoint --backend cuda --threads 16 --json --launch-sizes 128,512 --gpu-trials 1024 $IC86"
run() { local name=$1; shift; local t0=$SECONDS; timeout 40 "$@" > $OUT/$name.json 2> $OUT/$name.err; echo "$name rc $? $(grep -o '"count_kernel":"[A-Za-z0-9]*"' $OUT/$name.json) $(grep -o '"per_trial_ms":[0-9.e-]*' $OUT/$name.json | tr '\n' ' ') $((SECONDS - t0))s"; }
run before $B/haloscope-main-bde20d6 $BENCH
run after $B/haloscope $BENCH
for k in thread lanes16; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k $B/haloscope $BENCH; done
for e in 2 4 16 32; do HALOSCOPE_TWOPOINT_EVENTS_PER_THREAD=$e run after-lanes-e$e $B/haloscope $BENCH; done
for e in 4 16; do HALOSCOPE_TWOPOINT_KERNEL=lanes16 HALOSCOPE_TWOPOINT_EVENTS_PER_THREAD=$e run after-lanes16-e$e $B/haloscope $BENCH; done
run before-again $B/haloscope-main-bde20d6 $BENCH
run after-again $B/haloscope $BENCH
timeout 100 $T --ignored --nocapture > $OUT/tests.log 2>&1; echo "tests rc $?"; grep -E "^test |test result|panicked" $OUT/tests.log
timeout 30 compute-sanitizer --tool memcheck $T --ignored ic40_observed > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; tail -3 $OUT/memcheck.log
timeout 40 compute-sanitizer --tool racecheck $T --ignored gpu_batches > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; tail -3 $OUT/racecheck.log
timeout 40 ncu --kernel-name regex:tp_ --launch-skip 20 --launch-count 8 --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $OUT/ncu.log 2>&1; echo "ncu rc $?"; grep -E "tp_|duration|warps_active|ratio" $OUT/ncu.log | head -40
