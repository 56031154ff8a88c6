#!/usr/bin/env bash
# Session 6 CPU renderer, device run 1: BEFORE (main 8b2d1eb) and AFTER (s6-cpu: vector small
# records in the tile pass, transposed grey record staging) alternated twice, 1 and 16 threads,
# 10^7 particles, 2048^2, grey.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
B=bin/haloscope-before; A=bin/haloscope-after
O=${OUT:-/tmp/out}; mkdir -p $O
T0=$(date +%s)
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|MHz|L2|L3' | cut -c1-200; } > $O/machine.txt 2>&1
run() { # label threads args...
  local label=$1 th=$2; shift 2
  echo "### $label threads=$th t=$(( $(date +%s) - T0 ))s $*" | tee -a $O/human.log >&2
  RAYON_NUM_THREADS=$th "$@" --json 2>>$O/human.log | sed "s/^/$label th=$th /" >> $O/json.log
}
R10="bench render --backend cpu --particles 10000000 --sizes 2048 --radii 0.3,1,4,16 --repeat 3"
for round in 1 2; do
  run before 1 $B $R10; run after 1 $A $R10
  run before 16 $B $R10; run after 16 $A $R10
done
echo "done t=$(( $(date +%s) - T0 ))s" >> $O/human.log
