#!/usr/bin/env bash
D=dev-bin-leadcpu; export LD_LIBRARY_PATH=$PWD/$D/lib
A=$D/bin/haloscope-main-5efd4f6; B=$D/bin/haloscope-s4cpu
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket" > $OUT/lscpu.txt; cat $OUT/lscpu.txt
args="bench render --backend cpu --particles 10000000 --sizes 2048 --radii 0.3,1,4,16 --repeat 3 --json"
for rep in 1 2; do for v in before after; do
  bin=$A; [ $v = after ] && bin=$B
  RAYON_NUM_THREADS=16 $bin $args > $OUT/$v-$rep.json 2> $OUT/$v-$rep.txt
  echo "== $v rep $rep"; grep -v "^\s*$" $OUT/$v-$rep.txt | tail -6 | cut -c1-160
done; done
