#!/usr/bin/env bash
# `haloscope fof` end to end on the first device against every device, for two binaries
# alternated, on a clustered dark-matter tipsy file made here (GPU host; numpy).
#
#   scripts/bench/fof-devices.sh BEFORE AFTER [N] [ROUNDS]
#
# Prints one JSON line per run (`seconds` after the load and the device stages) and whether
# each run's labels equal the first run's.
set -euo pipefail
before=$1; after=$2; n=${3:-400000000}; rounds=${4:-2}
work=${WORK:-/tmp/fof-devices}
mkdir -p "$work"
python3 "$(dirname "$0")/tipsy_synthetic.py" dark "$work/dark.tipsy" "$n"
sum='import json,sys; d=json.load(sys.stdin); st=d.get("stages") or {}
print(json.dumps({"run": sys.argv[1], "seconds": d.get("seconds"), **{k: st.get(k) for k in
("find", "route on devices", "devices", "assemble", "upload + cell keys", "download labels")}}))'
first=""
for round in $(seq "$rounds"); do
    for bin in before after; do
        for devices in 0 0,1; do
            exe=$before; [ $bin = after ] && exe=$after
            tag=$bin-$devices-$round
            "$exe" fof "$work/dark.tipsy" --box 1 --backend cuda --devices "$devices" --json \
                --labels "$work/$tag.npy" --out "$work/$tag.csv" | python3 -c "$sum" "$tag"
            first=${first:-$work/$tag.npy}
            cmp -s "$first" "$work/$tag.npy" && echo "$tag labels equal" || echo "$tag labels DIFFER"
        done
    done
done
