#!/bin/bash
# Device round 4 (session 4, second pass, s4-tp): FMA variants of batch2 restructured (the atomic
# inside the pair function again): b2f FMA c²; b2fd + direct shared lookup cells; b2fx + direct cells of
# an 8x finer table read through L1; against BEFORE (main 5efd4f6) and AFTER batch2 side by side;
# all ignored tests with each variant as the default; memcheck + racecheck on b2fx; ncu.
D=dev-bin-tp; B=$D/bin; T=$B/twopoint_cuda
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
E=$D/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
nvidia-smi -L | tee $OUT/nvidia-smi.txt
BENCH="bench twopoint --backend cuda --threads 16 --json --launch-sizes 128,512 --gpu-trials 1024 $IC86"
run() { local name=$1; shift; local t0=$SECONDS; echo "== $name" >> $OUT/bench.jsonl; timeout 40 "$@" > $OUT/cur.json 2>> $OUT/bench.err; local rc=$?; cat $OUT/cur.json >> $OUT/bench.jsonl; echo "$name rc $rc $(grep -o '"count_kernel":"[A-Za-z0-9]*"' $OUT/cur.json) $(grep -o '"per_trial_ms":[0-9.e-]*' $OUT/cur.json | tr '\n' ' ') $((SECONDS - t0))s"; }
V="b2f b2fd b2fx"
run before $B/haloscope-main-5efd4f6 $BENCH
run after $B/haloscope $BENCH
for k in $V; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k $B/haloscope $BENCH; done
run before-again $B/haloscope-main-5efd4f6 $BENCH
for k in $V batch2; do HALOSCOPE_TWOPOINT_KERNEL=$k run after-$k-again $B/haloscope $BENCH; done
rm -f $OUT/cur.json
timeout 40 $T --ignored --nocapture > $OUT/tests.log 2>&1; echo "tests rc $?"; grep -E "test result|panicked" $OUT/tests.log
for k in $V; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 40 $T --ignored --nocapture > $OUT/tests-$k.log 2>&1; echo "tests $k rc $?"; grep -E "test result|panicked|kernel " $OUT/tests-$k.log | head -4
done
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__thread_inst_executed_per_inst_executed.ratio
for k in batch2 $V; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 25 ncu --kernel-name regex:tp_count --launch-skip 5 --launch-count 1 --metrics $M $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $OUT/ncu-$k.log 2>&1; echo "ncu $k rc $?"; grep -E "^  tp_|duration|inst_executed|warps_active|ratio" $OUT/ncu-$k.log | head -6
done
for k in b2fx; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 25 ncu --kernel-name regex:tp_count --launch-skip 5 --launch-count 1 --metrics smsp__sass_inst_executed_op_shared_atom.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum $B/haloscope bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > $OUT/ncu-atom-$k.log 2>&1; echo "ncu atom $k rc $?"; grep -E "atom|ERR|rror" $OUT/ncu-atom-$k.log | head -4
done
for k in b2fx; do
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 25 compute-sanitizer --tool memcheck $T --ignored ic40_observed > $OUT/memcheck-$k.log 2>&1; echo "memcheck $k rc $?"; tail -1 $OUT/memcheck-$k.log
  HALOSCOPE_TWOPOINT_KERNEL=$k timeout 30 compute-sanitizer --tool racecheck $T --ignored gpu_batches > $OUT/racecheck-$k.log 2>&1; echo "racecheck $k rc $?"; tail -1 $OUT/racecheck-$k.log
done
