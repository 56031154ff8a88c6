#!/usr/bin/env bash
# Session 5 CPU renderer device run: BEFORE (main 0d31aff) and AFTER alternated.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
B=bin/haloscope-before; A=bin/haloscope-after
O=${OUT:-/tmp/out}; mkdir -p $O
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|Flags' | cut -c1-200; } > $O/machine.txt 2>&1
run() { # label threads args...
  local label=$1 th=$2; shift 2
  echo "### $label threads=$th $*" | tee -a $O/human.log >&2
  RAYON_NUM_THREADS=$th "$@" --json 2>>$O/human.log | sed "s/^/$label th=$th /" >> $O/json.log
}
R10="bench render --backend cpu --particles 10000000 --sizes 2048 --radii 0.3,1,4,16 --repeat 3"
R2="bench render --backend cpu --particles 2000000 --sizes 2048 --radii 0.3,1,4,16 --repeat 3"
for round in 1 2; do
  run before 16 $B $R10; run after 16 $A $R10
done
run after-colour 16 $A $R10 --colour Density
run after-grey0 16 env HALOSCOPE_CPU_GREY=0 $A $R10
for th in 2 4 8; do run before $th $B $R2; run after $th $A $R2; done
run before 1 $B $R10; run after 1 $A $R10
run after-colour 1 $A bench render --backend cpu --particles 10000000 --sizes 2048 --radii 0.3,1 --repeat 3 --colour Density
echo done >> $O/human.log
