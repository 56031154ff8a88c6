#!/usr/bin/env bash
# Session 4 device run (CPU renderer scaling): BEFORE = main 5efd4f6, AFTER = s4-cpu, same call.
# Run from the repository root of the device copy: bash dev-bin-cpu/run.sh  (writes to $OUT)
D=${D:-dev-bin-cpu}
export LD_LIBRARY_PATH=$PWD/$D/lib HALOSCOPE_SHARED=$PWD/$D/shared
B=$D/bin/haloscope-main-5efd4f6
A=$D/bin/haloscope
nvidia-smi -L; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|MHz|L2|L3|Flags" | cut -c1-200
args="bench render --backend cpu --particles 2000000 --sizes 2048 --radii 0.3,1,4,16 --repeat 2 --json"
for th in 1 2 4 8 16; do
  for b in before after; do
    bin=$B; [ $b = after ] && bin=$A
    RAYON_NUM_THREADS=$th $bin $args > $OUT/$b-$th.json 2> $OUT/$b-$th.txt
    echo "== $b $th threads"; cat $OUT/$b-$th.txt
  done
  # AFTER with the hot-tile split off: separates the split from the other draw changes.
  RAYON_NUM_THREADS=$th HALOSCOPE_CPU_BANDS=1 $A $args > $OUT/after-nosplit-$th.json 2> $OUT/after-nosplit-$th.txt
  echo "== after, bands 1, $th threads"; cat $OUT/after-nosplit-$th.txt
done
# Exactness: tau bits identical between BEFORE and AFTER and between 1 and 16 threads.
g=$D/shared/data/snapshots/g2_lcdm_gas_snapshot_004.hdf5
for b in before after; do for th in 1 16; do
  bin=$B; [ $b = after ] && bin=$A
  RAYON_NUM_THREADS=$th $bin render $g --species gas --intensity Density --log-intensity --width 1000 --height 700 --out $OUT/g2-$b-$th.png --tau-out $OUT/g2-$b-$th.npy --json > /dev/null 2>> $OUT/render.err
done; done
md5sum $OUT/g2-*.npy | tee $OUT/tau-md5.txt; rm -f $OUT/g2-*.png
cmp $OUT/g2-before-1.npy $OUT/g2-after-16.npy && cmp $OUT/g2-after-1.npy $OUT/g2-after-16.npy && echo "TAU BITS IDENTICAL" || echo "TAU BITS DIFFER"
rm -f $OUT/g2-*.npy
# 10^7 particles at 16 threads.
for b in before after; do
  bin=$B; [ $b = after ] && bin=$A
  RAYON_NUM_THREADS=16 timeout 60 $bin bench render --backend cpu --particles 10000000 --sizes 2048 --radii 0.3,1,4,16 --repeat 2 --json > $OUT/$b-16-1e7.json 2> $OUT/$b-16-1e7.txt
  echo "== $b 16 threads 1e7"; cat $OUT/$b-16-1e7.txt
done
