#!/usr/bin/env bash
# Session 5 lead profiling run: where the time goes in the two-point counter and the medium pass.
set -u
R=$PWD/dev-bin-prof5; B=$R/bin/haloscope
export LD_LIBRARY_PATH=$R/lib HALOSCOPE_SHARED=$R/shared HALOSCOPE_KERNEL_CACHE=/tmp/kc
E=$R/shared/data/events; IC86="$E/IC86-2011/upgoing_events.txt $E/IC86-2011/downgoing_events.txt"
{ nvidia-smi -L; which ncu nsys cuobjdump nvdisasm perf; ncu --version | tail -1; lscpu | grep -E 'Model name|MHz|^CPU\(s\)|Thread'; } > $OUT/env.txt 2>&1
cat $OUT/env.txt
# 1. two-point counter, full set + source counters, one launch of 128 trials
timeout 200 ncu --clock-control none --kernel-name tp_count_b2fd --launch-skip 3 --launch-count 1 --set full --import-source yes -o /tmp/tp \
  $B bench twopoint --backend cuda --threads 16 --launch-sizes 128 --gpu-trials 128 --json $IC86 > /tmp/tp-bench.json 2>/tmp/tp-bench.log; echo "tp ncu rc=$?"
ncu --import /tmp/tp.ncu-rep --page details --csv > $OUT/tp-details.csv 2>&1; echo "details rc=$?"
ncu --import /tmp/tp.ncu-rep --page source --csv --print-source sass > $OUT/tp-source-sass.csv 2>&1; echo "source rc=$? $(wc -c < $OUT/tp-source-sass.csv)"
head -c 600 $OUT/tp-source-sass.csv; echo
# 2. renderer at R0 = 4: per-kernel times of 10^8 frames (nsys), then the medium kernel in full
timeout 150 nsys profile -o /tmp/r4 --force-overwrite true $B bench render --backend cuda --large gpu --particles 100000000 --sizes 2048 --radii 4 --repeat 3 --json > /tmp/r4.json 2>/tmp/r4.log; echo "nsys rc=$?"
nsys stats --report cuda_gpu_kern_sum --format csv /tmp/r4.nsys-rep > $OUT/r4-kernels.csv 2>&1; echo "nsys stats rc=$?"
grep -v '^$' /tmp/r4.log | tail -3 | cut -c1-200
timeout 150 ncu --clock-control none --kernel-name medium_tiles --launch-count 1 --set full --import-source yes -o /tmp/med \
  $B bench render --backend cuda --large gpu --particles 10000000 --sizes 2048 --radii 4 --repeat 1 > /dev/null 2>&1; echo "med ncu rc=$?"
ncu --import /tmp/med.ncu-rep --page details --csv > $OUT/med-details.csv 2>&1
ncu --import /tmp/med.ncu-rep --page source --csv --print-source sass > $OUT/med-source-sass.csv 2>&1; echo "med source rc=$? $(wc -c < $OUT/med-source-sass.csv)"
# 3. SASS of every cached kernel module
for f in /tmp/kc/*; do echo "=== $f"; cuobjdump -sass "$f" 2>&1 | head -c 3000000; done > /tmp/sass.txt 2>&1; xz -T4 -6 < /tmp/sass.txt > $OUT/sass.txt.xz; ls -la /tmp/kc | head
# 4. CPU renderer under perf (1 and 16 threads, 2e6)
if command -v perf >/dev/null; then
  for th in 1 16; do RAYON_NUM_THREADS=$th timeout 60 perf stat -e cycles,instructions,cache-misses,task-clock $B bench render --backend cpu --particles 2000000 --sizes 2048 --radii 0.3,16 --repeat 2 2>&1 | tail -22; done > $OUT/cpu-perf.txt 2>&1
  cat $OUT/cpu-perf.txt | grep -vE '^\s*$' | cut -c1-160
fi
ls -la $OUT
