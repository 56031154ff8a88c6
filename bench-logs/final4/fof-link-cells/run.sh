#!/usr/bin/env bash
D=$PWD/dev-bin-fofchk; export LD_LIBRARY_PATH=$D/lib HALOSCOPE_SHARED=$D/shared
nvidia-smi -L
$D/bin/fof_cuda --ignored --test-threads 1 2>&1 | tee $OUT/tests.log | grep -E "^test |test result"
timeout 90 compute-sanitizer --tool memcheck $D/bin/fof_cuda --ignored --test-threads 1 --exact device_catalogue_on_a_small_clustered_set > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -1 $OUT/memcheck.log
$D/bin/haloscope bench fof --backend cuda --n 10000000 100000000 --repeats 3 --cpu-repeats 1 --json > $OUT/fof.json 2> $OUT/fof.log; echo "bench rc=$?"
python3 -c "
import json;d=json.load(open('$OUT/fof.json'))
for r in d['cases']: print(r['n_particles'], r['b'], r['order'], 'e2e', round(r['end_to_end_seconds_best'],4), round(r['end_to_end_seconds_median'],4), 'link', round(r['cuda_link_seconds_best'],4), 'identical', r['identical_to_cpu'])
"
