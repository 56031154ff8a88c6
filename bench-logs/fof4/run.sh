#!/usr/bin/env bash
# Device round for branch s4-fof: untar the bundle, tests, memcheck, benchmarks before/after.
cd "$(dirname "$0")/.." || exit 1
tar -xJf dev-bin-fofx/b.tar.xz
B=$PWD/dev-bin-fof
export LD_LIBRARY_PATH=$B/lib HALOSCOPE_SHARED=$B/shared
nvidia-smi -L > $OUT/nvidia-smi.txt 2>&1; nproc >> $OUT/nvidia-smi.txt
T=$(ls $B/bin/ | grep '^fof_cuda' | head -1)
s=$SECONDS
timeout 40 $B/bin/$T --ignored --nocapture > $OUT/tests.log 2>&1; echo "rc=$? ${SECONDS}s" >> $OUT/tests.log
timeout 40 compute-sanitizer --tool memcheck $B/bin/$T --ignored --exact device_catalogue_on_a_small_clustered_set > /tmp/mc.log 2>&1; echo "rc=$?" >> /tmp/mc.log; tail -25 /tmp/mc.log > $OUT/memcheck.log
echo "after memcheck ${SECONDS}s"
timeout 60 $B/bin/haloscope-main-5efd4f6 bench fof --backend cuda --n 10000000 100000000 --repeats 5 --cpu-repeats 1 --json > $OUT/before.json 2> $OUT/before.log; echo "rc=$? ${SECONDS}s" >> $OUT/before.log
timeout 85 $B/bin/haloscope bench fof --backend cuda --n 10000000 100000000 --repeats 5 --cpu-repeats 1 --json > $OUT/after.json 2> $OUT/after.log; echo "rc=$? ${SECONDS}s" >> $OUT/after.log
HALOSCOPE_FOF_DENSE_BLOCKS_PER_PARTICLE=0 timeout 25 $B/bin/haloscope bench fof --backend cuda --n 100000000 --b 0.2 --orders morton --repeats 5 --cpu-repeats 0 > $OUT/hash.log 2>&1; echo "rc=$? ${SECONDS}s" >> $OUT/hash.log
