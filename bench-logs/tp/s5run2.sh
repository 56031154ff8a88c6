#!/bin/bash
# Device round 2 (session 5, s5-tp): flats (run 1's best) against BEFORE (main 0d31aff) and AFTER
# b2fd side by side, and its successors: flats2 (run columns at an opaque 32-bit shared address),
# flatp (+ next step's candidates loaded one step ahead; 64 registers with 24 bytes spilled),
# flatp7 (the same at 7 blocks per SM, 72 registers, no spills). All ignored tests with each as the
# default; memcheck + racecheck on flats2 and flatp7; ncu per-kernel metrics; ncu source profiles
# of flatp7 and flats2 (128-trial launch: launch-skip 5 skips the five one-trial launches).
D=dev-bin-tp; B=$D/bin; T=$B/twopoint_cuda; L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
E=$D/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
nvidia-smi -L | tee $L/nvidia-smi.txt
BENCH="bench twopoint --backend cuda --threads 16 --json --launch-sizes 128,512 --gpu-trials 1024 $IC86"
run() { local name=$1; shift; local t0=$SECONDS; echo "== $name" >> $L/bench.jsonl; timeout 40 "$@" > $L/cur.json 2>> $L/bench.err; local rc=$?; cat $L/cur.json >> $L/bench.jsonl; echo "$name rc $rc $(grep -o '"count_kernel":"[A-Za-z0-9]*"' $L/cur.json) $(grep -o '"per_trial_ms":[0-9.e-]*' $L/cur.json | tr '\n' ' ') $(grep -o '"pairs_left_to_host":[0-9]*' $L/cur.json | tr '\n' ' ') $((SECONDS - t0))s"; }
V="flats flats2 flatp flatp7"
run before $B/haloscope-main-0d31aff $BENCH
run after $B/haloscope $BENCH
for k in $V; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k $B/haloscope $BENCH; done
run before-again $B/haloscope-main-0d31aff $BENCH
for k in $V b2fd; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k-again $B/haloscope $BENCH; done
for k in $V; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k-third $B/haloscope $BENCH; done
rm -f $L/cur.json
timeout 60 $T --ignored --nocapture > $L/tests.log 2>&1; echo "tests rc $?"; grep -E "test result|panicked" $L/tests.log
for k in $V; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 40 $T --ignored --nocapture > $L/tests-$k.log 2>&1; echo "tests $k rc $?"; grep -E "test result|panicked|kernel " $L/tests-$k.log | head -4
done
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio
for k in flats2 flatp flatp7; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 25 ncu --kernel-name regex:tp_count --launch-skip 5 --launch-count 1 --metrics $M $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $L/ncu-$k.log 2>&1; echo "ncu $k rc $?"; grep -E "^  tp_|duration|inst_executed.sum|warps_active|ratio" $L/ncu-$k.log | sed 's/  */ /g'
done
for k in flats2 flatp7; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 30 compute-sanitizer --tool memcheck $T --ignored ic40_observed > $L/memcheck-$k.log 2>&1; echo "memcheck $k rc $?"; tail -1 $L/memcheck-$k.log
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 30 compute-sanitizer --tool racecheck $T --ignored gpu_batches > $L/racecheck-$k.log 2>&1; echo "racecheck $k rc $?"; tail -1 $L/racecheck-$k.log
done
tar -czf $OUT/logs.tgz -C $OUT logs
for k in flatp7 flats2; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 40 ncu --clock-control none --kernel-name regex:tp_count --launch-skip 5 --launch-count 1 --set full --import-source yes -o /tmp/k-$k $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $L/ncu-full-$k.log 2>&1; echo "ncu full $k rc $?"
  ncu --import /tmp/k-$k.ncu-rep --page source --csv --print-source sass > $L/src-$k.csv 2>&1
  ncu --import /tmp/k-$k.ncu-rep --page details --csv > $L/details-$k.csv 2>&1
done
tar -czf $OUT/logs.tgz -C $OUT logs
rm -rf $L
