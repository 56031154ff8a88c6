#!/usr/bin/env bash
# On the 2-GPU machine (nvidia-h200-x2), which has no MPI: `mpirun -n 2 haloscope render` and
# `mpirun -n 2 haloscope fof` (`--backend cuda`, one GPU and one share of the file per rank)
# beside one process on both GPUs (`--devices 0,1`), end to end, alternately (RUNS, default
# "mpi devices devices mpi"; the first run of the binary fills the kernel cache
# HALOSCOPE_KERNEL_CACHE, so later runs are warm). The files are made there first by
# scripts/bench/tipsy_synthetic.py (numpy): a clustered gas tipsy of RENDER_N particles with rho
# and hsmooth (48 bytes each: 2x10^8 is 9.6 GB) and clustered dark matter of FOF_N in the box
# [0, 1) (36 bytes each: 4x10^8 is 14.4 GB); 0 skips that part.
#
# Render: `render gas.tipsy --backend cuda --color rho --log-color` at 2048^2 with `--json`
# (`seconds` end to end from the start of the load, `render_seconds` the frame on the devices,
# `stages`); every run's PNG must equal the first's. FoF: `fof dark.tipsy --box 1 --backend
# cuda --json --labels L.npy --out C.csv` (`seconds` after the load); every run's labels must
# equal the first's byte for byte; the catalogues are compared (the MPI one is the CPU's
# catalogue of the merged partition, one process's comes from the devices within the
# catalogue's stated tolerance, so they are compared by integer columns and largest relative
# difference when their bytes differ). `wall` is the command's wall time, mpirun included.
#
# BUNDLE_DIR comes from scripts/device-bundle.sh with a haloscope built with --features mpi
# (this script, mpi-env.sh and tipsy_synthetic.py copied into BUNDLE_DIR/scripts); DEB_DIR
# holds the Open MPI .deb files listed in scripts/bench/mpi-gpu.sh. As run on 2026-11-29:
#
#   PARTS="fof render" BUDGET=214 RUN_LIMIT=80 HALOSCOPE_KERNEL_CACHE=/tmp/hk \
#       bash b/scripts/mpi-render-fof.sh b b/debs $OUT 200000000 400000000
#
#   [RUNS=…] [DATA_DIR=/tmp/mpi-data] scripts/bench/mpi-render-fof.sh BUNDLE_DIR DEB_DIR OUT_DIR \
#       [RENDER_N] [FOF_N]
#
# PARTS (default "render fof") picks the parts and their order.
# OUT_DIR gets log (everything), runs.jsonl (one line per run) and compare. The script keeps
# within BUDGET seconds (default 220): a run gets what is left as its timeout, and none starts
# with less than 10 s left; none runs longer than RUN_LIMIT seconds (default 120). BACKEND (default cuda) = cpu runs it anywhere, as a dry run.
set -u
started=$(date +%s)
bundle=$(cd "$1" && pwd); debs=$(cd "$2" && pwd); out=$3
render_n=${4:-200000000}; fof_n=${5:-400000000}
here=$(cd "$(dirname "$0")" && pwd)
data=${DATA_DIR:-/tmp/mpi-data}
mkdir -p "$out" "$data"
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared
export HALOSCOPE_KERNEL_CACHE=${HALOSCOPE_KERNEL_CACHE:-/tmp/haloscope-kernels}
# shellcheck source=mpi-env.sh
source "$here/mpi-env.sh" "$debs" "$PWD/mpiroot"
B=${HALOSCOPE_MPI_BIN:-$bundle/bin/haloscope}
log=$out/log
{ nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'; free -g | head -2; df -h "$data" | tail -1
  mpirun --version 2>&1 | head -1; } >> "$log" 2>&1
now() { date +%s.%N; }
since() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$1" "$(now)"; }

# One run: KIND (mpi or devices), TASK, then the haloscope arguments; stdout to OUT/TASK-I-KIND.json.
i=0
run() {
    local kind=$1 task=$2; shift 2
    local cmd=("$B")
    [ "$kind" = mpi ] && cmd=(mpirun --allow-run-as-root --bind-to none -n 2 -x LD_LIBRARY_PATH
        -x HALOSCOPE_KERNEL_CACHE -x HALOSCOPE_SHARED "$B")
    local extra=(); [ "$kind" = devices ] && extra=(--devices 0,1)
    local name=$task-$i-$kind t0; t0=$(now)
    local left=$((started + ${BUDGET:-220} - $(date +%s)))
    [ "$left" -gt "${RUN_LIMIT:-120}" ] && left=${RUN_LIMIT:-120}
    if [ "$left" -lt 10 ]; then
        echo "{\"run\": \"$name\", \"skipped\": \"${left} s left\"}" | tee -a "$out/runs.jsonl" >> "$log"
        return
    fi
    echo "=== $name: ${cmd[*]} $* ${extra[*]}" >> "$log"
    timeout "$left" "${cmd[@]}" "$@" "${extra[@]}" > "$out/$name.json" 2> "$data/$name.err"
    local rc=$? wall; wall=$(since "$t0")
    tail -c 2000 "$data/$name.err" >> "$log"
    python3 - "$name" "$rc" "$wall" "$out/$name.json" <<'PY' | tee -a "$out/runs.jsonl" >> "$log"
import json, sys
name, rc, wall, path = sys.argv[1:]
row = {"run": name, "rc": int(rc), "wall": float(wall)}
try:
    d = json.load(open(path))
    for k in ("seconds", "render_seconds", "stages", "n_particles", "particles", "n_groups",
              "n_particles_in_groups", "backend", "ranks"):
        if k in d:
            row[k] = d[k]
except Exception as e:
    row["error"] = str(e)
print(json.dumps(row))
PY
}

render_part() {
    t0=$(now)
    python3 "$here/tipsy_synthetic.py" gas "$data/gas.tipsy" "$render_n"
    echo "made gas.tipsy ($render_n) in $(since "$t0") s" >> "$log"
    for kind in ${RUNS:-mpi devices devices mpi}; do
        i=$((i + 1))
        run "$kind" render render "$data/gas.tipsy" --backend "${BACKEND:-cuda}" --color rho --log-color \
            --width 2048 --height 2048 --json --out "$data/render-$i-$kind.png"
    done
    first=$(ls "$data"/render-*.png 2> /dev/null | head -1)
    for f in "$data"/render-*.png; do
        [ "$f" = "$first" ] && continue
        cmp -s "$first" "$f" && echo "png $(basename "$f") equals $(basename "$first")" \
            || echo "png $(basename "$f") DIFFERS from $(basename "$first")"
    done | tee -a "$out/compare" >> "$log"
    rm -f "$data/gas.tipsy"
}

fof_part() {
    t0=$(now)
    python3 "$here/tipsy_synthetic.py" dark "$data/dark.tipsy" "$fof_n"
    echo "made dark.tipsy ($fof_n) in $(since "$t0") s" >> "$log"
    for kind in ${RUNS:-mpi devices devices mpi}; do
        i=$((i + 1))
        run "$kind" fof fof "$data/dark.tipsy" --box 1 --backend "${BACKEND:-cuda}" --json \
            --labels "$data/labels-$i-$kind.npy" --out "$data/cat-$i-$kind.csv"
        # The labels of 4x10^8 take 1.6 GB: keep the first, compare the others and drop them.
        first=$(ls "$data"/labels-*.npy 2> /dev/null | head -1)
        [ -n "$first" ] || continue
        for f in "$data"/labels-*.npy; do
            [ "$f" = "$first" ] && continue
            cmp -s "$first" "$f" && echo "labels $(basename "$f") equal $(basename "$first")" \
                || echo "labels $(basename "$f") DIFFER from $(basename "$first")"
            rm -f "$f"
        done | tee -a "$out/compare" >> "$log"
    done
    python3 - "$data" <<'PY' | tee -a "$out/compare" >> "$log"
import csv, glob, os, sys
paths = sorted(glob.glob(os.path.join(sys.argv[1], "cat-*.csv")),
               key=lambda p: int(os.path.basename(p).split("-")[1]))
if not paths:
    sys.exit(0)
def rows(p):
    with open(p) as f:
        return [r for r in csv.reader(f) if r and not r[0].startswith("#")]
first = rows(paths[0])
for p in paths[1:]:
    other = rows(p)
    same = open(paths[0], "rb").read() == open(p, "rb").read()
    worst, ints = 0.0, len(first) == len(other)
    for a, b in zip(first[1:], other[1:]):
        for x, y in zip(a, b):
            try:
                fx, fy = float(x), float(y)
            except ValueError:
                continue
            if fx.is_integer() and fy.is_integer() and "." not in x + y and "e" not in (x + y).lower():
                ints &= fx == fy
            elif fx != fy:
                worst = max(worst, abs(fx - fy) / max(abs(fx), abs(fy), 1e-30))
    print(f"catalogue {os.path.basename(p)} vs {os.path.basename(paths[0])}: bytes equal {same}, "
          f"rows {len(other)} vs {len(first)}, integer columns equal {ints}, "
          f"largest relative difference {worst:.3g}")
PY
    rm -f "$data/dark.tipsy" "$data"/labels-*.npy
}

# PARTS: which parts, in order (default "render fof").
for part in ${PARTS:-render fof}; do
    case $part in
        render) [ "$render_n" != 0 ] && render_part ;;
        fof) [ "$fof_n" != 0 ] && fof_part ;;
    esac
done
grep -E "^\{|equal|DIFF|made" "$log"
