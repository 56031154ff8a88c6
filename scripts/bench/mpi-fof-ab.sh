#!/usr/bin/env bash
# On nvidia-h200-x2: `mpirun -n 2 haloscope fof` of two builds with --features mpi (bundle
# bin/haloscope-before-mpi, bin/haloscope and the test binary bin/fof_domains_cuda, from
# scripts/device-bundle.sh, as .dev/b-mpifof.tar.xz; the Open MPI debs of scripts/bench/mpi-gpu.sh
# as .dev/mpifof2-debs.tar): first fof_domains_cuda --ignored (which also fills the kernel cache),
# then one process on --devices 0,1 and both builds under MPI, alternated, at N1 (2x10^8) and N2
# (4x10^8) clustered dark particles, the new build also with RAYON_NUM_THREADS=32; labels cmp'd,
# catalogues compared by columns against the first one-process run; every rank's stages
# (--json's rank_stages) printed as RANK lines. Flags as scripts/bench/mpi-render-fof.sh's fof
# part. Everything into $OUT/log; LIMIT (420 s) bounds the whole; BK=cpu TMPD=DIR runs it
# anywhere with small N1/N2 as a dry run.
set -u
t0=$(date +%s); limit=${LIMIT:-420}
log=$OUT/log
tar xJf .dev/b-mpifof.tar.xz -C ${TMPD:-/tmp} && tar xf .dev/mpifof2-debs.tar -C ${TMPD:-/tmp} || exit 1
b=${TMPD:-/tmp}/b-mpifof
export LD_LIBRARY_PATH=$b/lib HALOSCOPE_SHARED=$b/shared HALOSCOPE_KERNEL_CACHE=/tmp/hk
source scripts/bench/mpi-env.sh ${TMPD:-/tmp}/mpi-debs ${TMPD:-/tmp}/mpiroot
data=${TMPD:-/tmp}/mpi-data; mkdir -p $data
{ nvidia-smi -L; nproc; free -g | head -2; mpirun --version | head -1
  for f in $b/bin/*; do echo "$f: $(ldd $f | grep -c libmpi) libmpi"; done; } >> $log 2>&1
left() { echo $((t0 + limit - $(date +%s))); }
# run NAME KIND(mpi|dev) BIN [env assignments for mpirun -x]
run() {
    local name=$1 kind=$2 bin=$3 x=(); shift 3
    local l; l=$(left); [ "$l" -lt 25 ] && { echo "SKIP $name ($l s left)" | tee -a $log; return; }
    [ "$l" -gt 150 ] && l=150
    local cmd=("$bin")
    if [ "$kind" = mpi ]; then
        for a in "$@"; do x+=(-x "$a"); done
        cmd=(env "$@" mpirun --allow-run-as-root --bind-to none -n 2 -x LD_LIBRARY_PATH
             -x HALOSCOPE_KERNEL_CACHE -x HALOSCOPE_SHARED "${x[@]}" "$bin")
    fi
    local extra=(); [ "$kind" = dev ] && [ "${BK:-cuda}" = cuda ] && extra=(--devices 0,1)
    local s; s=$(date +%s.%N)
    timeout "$l" "${cmd[@]}" fof $data/dark.tipsy --box 1 --backend ${BK:-cuda} --json \
        --labels $data/L-$name.npy --out $data/C-$name.csv "${extra[@]}" > $data/$name.json 2> $data/$name.err
    local rc=$?
    local wall; wall=$(python3 -c "import time; print(round(time.time() - $s, 2))")
    echo "=== $name rc=$rc wall=$wall: ${cmd[*]} ${extra[*]}" >> $log
    tail -c 600 $data/$name.err >> $log
    python3 - $name $rc $wall $data/$name.json <<'PY' | tee -a $log
import json, sys
name, rc, wall, path = sys.argv[1:]
try:
    d = json.load(open(path))
    st = d.get("stages", {})
    st = st.items() if isinstance(st, dict) else st
    print(f"RUN {name} rc={rc} wall={wall} seconds={d.get('seconds'):.2f} groups={d.get('n_groups')} stages: "
          + " ".join(f"{k}={v:.2f}" for k, v in st if v >= 0.05))
    for r, rs in enumerate(d.get("rank_stages", [])):
        print(f"RANK {name} r{r}: " + " ".join(f"{k}={v:.2f}" for k, v in rs.items() if v >= 0.05))
except Exception as e:
    print(f"RUN {name} rc={rc} wall={wall} no json: {e}")
PY
}
compare() {  # against the first one-process run of this size
    local ref=$1; shift
    for n in "$@"; do
        [ -f $data/L-$n.npy ] || continue
        cmp -s $data/L-$ref.npy $data/L-$n.npy && echo "labels $n == $ref" || echo "labels $n DIFFER from $ref"
        python3 - $data/C-$ref.csv $data/C-$n.csv <<'PY'
import csv, sys
def rows(p):
    with open(p) as f:
        return [r for r in csv.reader(f) if r and not r[0].startswith("#")]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
same = open(sys.argv[1], "rb").read() == open(sys.argv[2], "rb").read()
worst, ints = 0.0, len(a) == len(b)
for x, y in zip(a[1:], b[1:]):
    for u, v in zip(x, y):
        try:
            fu, fv = float(u), float(v)
        except ValueError:
            continue
        if fu.is_integer() and fv.is_integer() and "." not in u + v and "e" not in (u + v).lower():
            ints &= fu == fv
        elif fu != fv:
            worst = max(worst, abs(fu - fv) / max(abs(fu), abs(fv), 1e-30))
print(f"catalogue {sys.argv[2].split('/')[-1]}: bytes equal {same}, rows {len(b)} vs {len(a)}, ints equal {ints}, largest rel diff {worst:.3g}")
PY
        [ $n != $ref ] && rm -f $data/L-$n.npy
    done 2>&1 | tee -a $log
}
B=$b/bin/haloscope-before-mpi A=$b/bin/haloscope
# First: the GPU tests of the domain merge (they also fill the kernel cache for every run).
[ "${BK:-cuda}" = cuda ] && HALOSCOPE_BIN=$A timeout 90 $b/bin/fof_domains_cuda --ignored --test-threads 1 >> $log 2>&1; echo "fof_domains_cuda rc=$?" | tee -a $log
s=$(date +%s); python3 scripts/bench/tipsy_synthetic.py dark $data/dark.tipsy ${N1:-200000000}
echo "made 2e8 in $(( $(date +%s) - s )) s" | tee -a $log
run dev1 dev $A; run before1 mpi $B; run after1 mpi $A
run dev2 dev $A; run after2 mpi $A; run before2 mpi $B; run after1r32 mpi $A RAYON_NUM_THREADS=32
compare dev1 before1 after1 dev2 after2 before2 after1r32
rm -f $data/*.npy $data/dark.tipsy
s=$(date +%s); python3 scripts/bench/tipsy_synthetic.py dark $data/dark.tipsy ${N2:-400000000}
echo "made 4e8 in $(( $(date +%s) - s )) s" | tee -a $log
run dev4 dev $A; run after4 mpi $A; run before4 mpi $B; run after4r32 mpi $A RAYON_NUM_THREADS=32
compare dev4 after4 before4 after4r32
rm -f $data/*.npy $data/dark.tipsy
grep -E "^RUN|^RANK|^labels|^catalogue|^made|SKIP|test result|^fof_domains" $log
