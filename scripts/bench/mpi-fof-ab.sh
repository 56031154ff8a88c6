#!/usr/bin/env bash
# On nvidia-h200-x2: `fof` of two builds with --features mpi, one process on --devices 0,1
# (DEVICES; on one GPU DEVICES=0, and both ranks share it) and `mpirun -n 2`, alternated
# (bundle bin/haloscope-before-mpi, bin/haloscope and the test binary
# bin/mpi_fof_cuda, from scripts/device-bundle.sh with --data snapshots/test4.tbin and --data
# snapshots/g2_lcdm_gas_snapshot_003.hdf5, as .dev/b-mpifof.tar.xz; the Open MPI debs of
# scripts/bench/mpi-gpu.sh as .dev/mpifof2-debs.tar). First the guest's memory is touched once
# (a tmpfs filled and emptied): the host is a VM whose first touch of a guest page costs a host
# fault, which otherwise lands on whichever run first gets that memory. Then mpi_fof_cuda
# --ignored (which also fills the kernel cache), then 4x10^8 (N2) clustered dark particles:
# labels cmp'd and catalogues compared by columns against the first one-process run; every
# rank's stages (--json's rank_stages) as RANK lines, the read and write times as IO lines.
# Flags as scripts/bench/mpi-render-fof.sh's fof part. Everything into $OUT/log; LIMIT (420 s)
# bounds the whole; BK=cpu TMPD=DIR runs it anywhere with a small N2 as a dry run (the memory
# step needs root).
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
    local cmd=(env "$@" "$bin")
    if [ "$kind" = mpi ]; then
        for a in "$@"; do x+=(-x "$a"); done
        cmd=(env "$@" mpirun --allow-run-as-root --bind-to none -n 2 -x LD_LIBRARY_PATH
             -x HALOSCOPE_KERNEL_CACHE -x HALOSCOPE_SHARED "${x[@]}" "$bin")
    fi
    local extra=(); [ "$kind" = dev ] && [ "${BK:-cuda}" = cuda ] && extra=(--devices ${DEVICES:-0,1})
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
A=$b/bin/haloscope B=$b/bin/haloscope-before-mpi
# Guest memory touched once, so that no run pays the VM host's first faults of its pages.
if [ -z "${TMPD:-}" ]; then  # not in a dry run: it takes WARM_GIB (190) GiB of memory
    s=$(date +%s.%N); gib=${WARM_GIB:-190}
    mkdir -p /tmp/warm && mount -t tmpfs -o size=$((gib + 10))G tmpfs /tmp/warm &&
        fallocate -l ${gib}G /tmp/warm/x; rm -f /tmp/warm/x; umount /tmp/warm
    echo "WARM rc=$? in $(python3 -c "import time; print(round(time.time() - $s, 1))") s; $(free -g | sed -n 2p)" | tee -a $log
fi
( cd $b && HALOSCOPE_BIN=$A timeout 100 $b/bin/mpi_fof_cuda --ignored --test-threads 1 ) >> $log 2>&1; echo "mpi_fof_cuda rc=$?" | tee -a $log
s=$(date +%s); python3 scripts/bench/tipsy_synthetic.py dark $data/dark.tipsy ${N2:-400000000}
echo "made ${N2:-400000000} in $(( $(date +%s) - s )) s" | tee -a $log
run devB dev $B; run devA dev $A; run mB mpi $B; run mA mpi $A; run devA2 dev $A; run devB2 dev $B
run mA2 mpi $A; run mB2 mpi $B; run mB3 mpi $B; run mA3 mpi $A
compare devB devA mB mA devA2 devB2 mA2 mB2 mB3 mA3
for f in $data/*.json; do python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('IO', sys.argv[1].split('/')[-1], 'read', d.get('read_seconds'), 'write', d.get('write_seconds'))" $f; done 2>/dev/null | tee -a $log
rm -f $data/*.npy $data/dark.tipsy
grep -E "^WARM|^IO|^RUN|^RANK|^labels|^catalogue|^made|SKIP|test result|rc=" $log
