#!/usr/bin/env bash
# Device round for s3-cpu: CPU scaling table before/after on the GPU host, plus the CUDA-vs-CPU
# tests of this branch's CPU renderer (checks the CUDA kernels still match within 1e-4).
D=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$D/lib HALOSCOPE_SHARED=$D/shared
L=$OUT/scaling.log
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|^CPU\(s\)|Thread\(s\)|Core\(s\)|Socket|NUMA node\(s\)|MHz"; grep -o -w -E "avx2|avx512f|fma" /proc/cpuinfo | sort | uniq -c; } > $L 2>&1
for th in 1 2 4 8 16; do
  for b in before after; do
    echo "== $b threads=$th R0=1,16" >> $L
    RAYON_NUM_THREADS=$th timeout 100 $D/bin/haloscope-$b bench render --backend cpu --particles 2000000 --sizes 2048 --radii 1,16 --repeat 2 --json >> $L 2>/dev/null
  done
done
for b in before after; do
  echo "== $b threads=16 R0=0.3,4" >> $L
  RAYON_NUM_THREADS=16 timeout 60 $D/bin/haloscope-$b bench render --backend cpu --particles 2000000 --sizes 2048 --radii 0.3,4 --repeat 2 --json >> $L 2>/dev/null
done
echo "== render_cuda --ignored (this branch's CPU as the reference)" >> $L
timeout 90 $D/bin/render_cuda --ignored --test-threads 1 2>&1 | grep -E "test |counts|relative|result|panicked" >> $L
cat $L
