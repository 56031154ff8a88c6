#!/usr/bin/env bash
# On the GPU machine: what one `haloscope render FILE --backend cuda` call costs, before and after,
# in one run: the clustered gas tipsy scene of the Splotch kit (10^7 particles), 2048^2, log rho
# intensity, log temp colour, camera and brightness as scripts/bench/splotch-side-by-side.sh; the
# second of two calls at each radius factor F (render_seconds and its stages), then
# `bench render FILE` (first and resident frames, colour and grey) and the colour frames of 10^8
# synthetic particles at R0 = 16, and optionally upstream Splotch CUDA's frame on the same file.
# The PNGs before and after are compared at every F.
#
#   [SKIP_SYNTH=1] [SPLOTCH_F="0.04 0.25 1"] scripts/bench/render-call.sh AFTER_BIN OUT_DIR \
#       [BEFORE_BIN] [SPLOTCH_WORK]
#
# The kit is $HALOSCOPE_SHARED/anchors/splotch. SPLOTCH_WORK: build Splotch CUDA there (~40 s)
# and time it at each F of SPLOTCH_F (default all three, the rows of BENCHMARKS.md's table).
# SKIP_SYNTH=1 leaves out `bench render FILE` and the 10^8 synthetic frames (about a minute of
# a device call that only the one-shot call needs). Results: OUT_DIR/render-call.log.
set -u
after=$1; out=$2; before=${3:-}; splotch_work=${4:-}
kit=$HALOSCOPE_SHARED/anchors/splotch
mkdir -p "$out"
log=$out/render-call.log
scene=${SCENE_DIR:-/tmp}/scene_10000000.tbin
[ -f "$scene" ] || python3 "$kit/make_scene.py" 10000000 "$scene" >&2
view=(--camera 0.5,0.5,-1.2 --lookat 0.5,0.5,0.5 --up 0,1,0 --fov 45)
style=(--width 2048 --height 2048 --species gas --intensity rho --log-intensity --color temp
    --log-color --palette splotch-classic --min-radius 1)
# The second of two render calls: the process's wall time (start to exit: the file's load, the
# renderer's creation and the PNG's write included), its seconds, render_seconds and stages in ms.
call() {
    local bin=$1 tag=$2 f=$3
    local b
    b=$(python3 -c "print(0.03 / $f)")
    local args=("$scene" "${style[@]}" --size-factor "$f" --brightness "$b" "${view[@]}"
        --backend cuda --out "$out/$tag-$f.png" --json)
    "$bin" render "${args[@]}" > /dev/null
    local t0 t1 json
    t0=$(date +%s%N)
    json=$("$bin" render "${args[@]}")
    t1=$(date +%s%N)
    echo "$json" | python3 -c "
import json, sys
d = json.load(sys.stdin)
st = {k: round(v * 1e3, 2) for k, v in d['stages'].items()}
print(json.dumps({'tag': '$tag', 'F': $f, 'wall_ms': round(($t1 - $t0) / 1e6, 1),
                  'seconds_ms': round(d['seconds'] * 1e3, 2),
                  'render_ms': round(d['render_seconds'] * 1e3, 2), 'stages_ms': st}))"
}
{
    nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)'
    for f in 0.04 0.25 1; do
        [ -n "$before" ] && call "$before" before "$f"
        call "$after" after "$f"
    done
    if [ -n "$before" ]; then
        for f in 0.04 0.25 1; do
            cmp "$out/before-$f.png" "$out/after-$f.png" && echo "F=$f images identical"
        done
    fi
    if [ -z "${SKIP_SYNTH:-}" ]; then
        echo "### bench render FILE (after), F = 0.04"
        "$after" bench render "$scene" --backend cuda "${style[@]}" --size-factor 0.04 \
            --brightness 0.75 "${view[@]}" --grey off,on --repeat 3 2>&1
    fi
    for tag in before after; do
        [ -n "${SKIP_SYNTH:-}" ] && continue
        bin=$after; [ "$tag" = before ] && bin=$before
        [ -n "$bin" ] || continue
        echo "### $tag colour and grey, 10^8 resident, R0 = 16"
        "$bin" bench render --backend cuda --large gpu --particles 100000000 --sizes 2048 \
            --radii 16 --colour none,Density --repeat 2 2>&1 | grep -vE '^\s*$'
    done
    if [ -n "$splotch_work" ]; then
        "$kit/build.sh" cuda "$splotch_work" > "$out/splotch-build.log" 2>&1 || tail -5 "$out/splotch-build.log"
        for f in ${SPLOTCH_F:-0.04 0.25 1}; do
            echo "### Splotch CUDA F = $f (frames 1..)"
            "$kit/run.sh" "$splotch_work/splotch-cuda" "$scene" "$splotch_work/f$f" --width 2048 \
                --height 2048 "${view[@]}" --radius-factor "$f" --frames 3 --colour \
                --brightness 0.03 2> /dev/null | tail -2
        done
    fi
} 2>&1 | tee "$log"
