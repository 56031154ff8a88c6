#!/bin/bash
# Device round 1 (session 5, s5-tp): flattened-window counters against BEFORE (main 0d31aff) and
# AFTER b2fd side by side: wpre (precomputed windows, nested loops), flat (precomputed windows, one
# loop), flatc (+ one-step cell table), flats (windows into shared run columns in the counter, cell
# table), flatsl (flats with b2fd's lookup); all ignored tests (every_count_kernel_equals_the_cpu runs
# every variant) with each new kernel as the default too; ncu per-kernel metrics; memcheck +
# racecheck on flatc and flats; ncu source profile of flats and b2fd (128-trial launches).
D=dev-bin-tp; B=$D/bin; T=$B/twopoint_cuda; L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
E=$D/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
nvidia-smi -L | tee $L/nvidia-smi.txt
BENCH="bench twopoint --backend cuda --threads 16 --json --launch-sizes 128,512 --gpu-trials 1024 $IC86"
run() { local name=$1; shift; local t0=$SECONDS; echo "== $name" >> $L/bench.jsonl; timeout 40 "$@" > $L/cur.json 2>> $L/bench.err; local rc=$?; cat $L/cur.json >> $L/bench.jsonl; echo "$name rc $rc $(grep -o '"count_kernel":"[A-Za-z0-9]*"' $L/cur.json) $(grep -o '"per_trial_ms":[0-9.e-]*' $L/cur.json | tr '\n' ' ') $(grep -o '"pairs_left_to_host":[0-9]*' $L/cur.json | tr '\n' ' ') $((SECONDS - t0))s"; }
V="wpre flat flatc flats flatsl"
run before $B/haloscope-main-0d31aff $BENCH
run after $B/haloscope $BENCH
for k in $V; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k $B/haloscope $BENCH; done
run before-again $B/haloscope-main-0d31aff $BENCH
for k in $V b2fd; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k-again $B/haloscope $BENCH; done
rm -f $L/cur.json
timeout 60 $T --ignored --nocapture > $L/tests.log 2>&1; echo "tests rc $?"; grep -E "test result|panicked" $L/tests.log
for k in flatc flats flatsl; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 40 $T --ignored --nocapture > $L/tests-$k.log 2>&1; echo "tests $k rc $?"; grep -E "test result|panicked|kernel " $L/tests-$k.log | head -4
done
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio
for k in b2fd flat flatc flats flatsl; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 25 ncu --kernel-name regex:tp_ --launch-skip 20 --launch-count 4 --metrics $M $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $L/ncu-$k.log 2>&1; echo "ncu $k rc $?"; grep -E "^  tp_|duration|inst_executed.sum|warps_active|ratio" $L/ncu-$k.log | sed 's/  */ /g'
done
for k in flatc flats; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 30 compute-sanitizer --tool memcheck $T --ignored ic40_observed > $L/memcheck-$k.log 2>&1; echo "memcheck $k rc $?"; tail -1 $L/memcheck-$k.log
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 30 compute-sanitizer --tool racecheck $T --ignored gpu_batches > $L/racecheck-$k.log 2>&1; echo "racecheck $k rc $?"; tail -1 $L/racecheck-$k.log
done
tar -czf $OUT/logs.tgz -C $OUT logs
for k in flats b2fd; do
  HALOSCOPE_TWOPOINT_KERNEL=$k HALOSCOPE_KERNEL_CACHE=/tmp/kc timeout 40 ncu --clock-control none --kernel-name regex:tp_count --launch-skip 5 --launch-count 1 --set full --import-source yes -o /tmp/k-$k $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $L/ncu-full-$k.log 2>&1; echo "ncu full $k rc $?"
  ncu --import /tmp/k-$k.ncu-rep --page source --csv --print-source sass > $L/src-$k.csv 2>&1
  ncu --import /tmp/k-$k.ncu-rep --page details --csv > $L/details-$k.csv 2>&1
done
tar -czf $OUT/logs.tgz -C $OUT logs
rm -rf $L
