#!/usr/bin/env bash
# On the 2-GPU machine (nvidia-h100-x2), which has no MPI: `mpirun -n 2 haloscope twopoint
# --backend cuda` (one GPU per rank) beside one process on both GPUs (`--devices 0,1`),
# IC86-2011, 10^5 trials, alternately. Open MPI comes as .deb files made here:
#
#   mkdir DEB_DIR && cd DEB_DIR && apt-get download openmpi-bin openmpi-common libopenmpi3 \
#     libpmix2 libevent-core-2.1-7 libevent-pthreads-2.1-7 libhwloc15 libfabric1 libibverbs1 \
#     ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200 libucx0 libpsm2-2 \
#     libpsm-infinipath1 libnuma1 libmunge2 libatomic1
#
# (the closure of `apt-cache depends --recurse --no-recommends --no-suggests openmpi-bin
# libopenmpi3` less what every Linux image has), unpacked on the device under $PWD/mpiroot by
# scripts/bench/mpi-env.sh. BUNDLE_DIR is made by scripts/device-bundle.sh with a haloscope
# built with `--features mpi` and shared/data/events/IC86-2011.
#
#   [RUNS="mpi devices"] scripts/bench/mpi-gpu.sh BUNDLE_DIR DEB_DIR OUT_DIR [TRIALS]
#
# OUT_DIR gets mpi.log and mpi.jsonl (one line per timed run).
set -u
bundle=$(cd "$1" && pwd); debs=$(cd "$2" && pwd); out=$3; trials=${4:-100000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared
export HALOSCOPE_KERNEL_CACHE=${HALOSCOPE_KERNEL_CACHE:-/tmp/haloscope-kernels}
# shellcheck source=mpi-env.sh
source "$here/mpi-env.sh" "$debs" "$PWD/mpiroot"
# The binary built with --features mpi (both runs use it, so they compare like with like).
B=${HALOSCOPE_MPI_BIN:-$bundle/bin/haloscope}
E=$bundle/shared/data/events/IC86-2011
log=$out/mpi.log
summary='import json,sys; d=json.load(sys.stdin); print(json.dumps({"run": sys.argv[1], **{k: d.get(k) for k in ("trials","seconds","seconds_per_trial","stage_seconds","backend")}}))'
mpirun --version 2>&1 | head -1 | tee -a "$log"
for run in ${RUNS:-mpi devices devices mpi}; do
    case $run in
        # --bind-to none: Open MPI binds each of 2 ranks to one core by default, which leaves
        # the statistics and the counters' host work of a rank one core (measured: statistics
        # 6.8 s instead of 0.28 s on rank 0).
        mpi) cmd=(mpirun --allow-run-as-root --bind-to none -n 2 -x LD_LIBRARY_PATH -x HALOSCOPE_KERNEL_CACHE "$B") ;;
        devices) cmd=("$B") ;;
    esac
    extra=(); [ "$run" = devices ] && extra=(--devices 0,1)
    timeout 60 "${cmd[@]}" twopoint --backend cuda "${extra[@]}" --trials "$trials" --json \
        "$E/upgoing_events.txt" "$E/downgoing_events.txt" 2>> "$log" > "$out/$run.json"
    echo "$run rc=$?" >> "$log"
    python3 -c "$summary" "$run" < "$out/$run.json" | tee -a "$out/mpi.jsonl"
done
# The counts and statistics of both runs, wall times aside, must be equal.
python3 - "$out/mpi.json" "$out/devices.json" <<'PY' | tee -a "$log"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    for k in ("seconds", "stage_seconds", "seconds_per_trial"):
        d.pop(k, None)
print("mpi equals devices 0,1:", a == b)
PY
