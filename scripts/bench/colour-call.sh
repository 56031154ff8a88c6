#!/usr/bin/env bash
# On the GPU machine, in one call: the CUDA render tests (goldens exact, CPU references, chunked
# and reordered bits), compute-sanitizer memcheck on the small grey and colour scenes, then colour
# and grey resident frames before and after: 10^8 synthetic particles at 2048^2 (R0 = 0.3, 1, 4,
# 16) and `bench render FILE` on the Splotch kit's 10^7 tipsy scene (F = 0.04, 1), and the
# kit scene's colour tau written by both binaries, compared byte for byte.
#
#   scripts/bench/colour-call.sh BUNDLE_DIR OUT_DIR BEFORE_BIN
#
# BUNDLE_DIR from scripts/device-bundle.sh: bin/haloscope (after), the test binaries, lib/,
# shared/ (snapshots, reference, anchors/splotch/make_scene.py). Run it from the checkout (the
# tests read tests/goldens there). OUT_DIR gets colour-call.log, tests.log and sanitizer.log.
set -u
bundle=$1; out=$2; before=$3
B=$bundle/bin
after=$B/haloscope
export LD_LIBRARY_PATH=$bundle/lib HALOSCOPE_SHARED=$bundle/shared HALOSCOPE_BIN=$after
mkdir -p "$out"
t0=$(date +%s)
stamp() { echo "--- $1 at $(($(date +%s) - t0)) s"; }
scene=/tmp/scene_10000000.tbin
view=(--camera 0.5,0.5,-1.2 --lookat 0.5,0.5,0.5 --up 0,1,0 --fov 45)
style=(--width 2048 --height 2048 --species gas --intensity rho --log-intensity --color temp
    --log-color --palette splotch-classic --min-radius 1)
{
    nvidia-smi -L
    python3 "$HALOSCOPE_SHARED/anchors/splotch/make_scene.py" 10000000 "$scene" > /dev/null &
    scene_pid=$!
    stamp tests
    : > "$out/tests.log"
    for t in render_goldens render_cuda_variants render_cuda render_cuda_tone; do
        echo "=== $t" >> "$out/tests.log"
        timeout 60 "$B/$t" --include-ignored --test-threads 8 >> "$out/tests.log" 2>&1
        echo "$t rc=$?"
    done
    grep -E "test result|FAILED|panicked" "$out/tests.log"
    stamp "10^8 synthetic"
    for tag in before after; do
        bin=$after; [ "$tag" = before ] && bin=$before
        echo "### $tag: 10^8 resident, grey and colour"
        timeout 60 "$bin" bench render --backend cuda --large gpu --particles 100000000 \
            --sizes 2048 --colour none,Density --repeat 2 2>&1 | grep -vE '^\s*$'
    done
    wait "$scene_pid"
    stamp "kit scene"
    for f in 0.04 1; do
        b=$(python3 -c "print(0.03 / $f)")
        for tag in before after; do
            bin=$after; [ "$tag" = before ] && bin=$before
            echo "### $tag: bench render FILE, F = $f"
            timeout 30 "$bin" bench render "$scene" --backend cuda "${style[@]}" --size-factor "$f" \
                --brightness "$b" "${view[@]}" --grey off,on --repeat 3 2>&1 | grep -vE '^\s*$'
            timeout 30 "$bin" render "$scene" "${style[@]}" --size-factor "$f" --brightness "$b" \
                "${view[@]}" --backend cuda --out "/tmp/$tag-$f.png" --tau-out "/tmp/$tag-$f.npy" \
                > /dev/null 2>&1
        done
        cmp "/tmp/before-$f.npy" "/tmp/after-$f.npy" && echo "F = $f: colour tau identical"
    done
    stamp sanitizer
    : > "$out/sanitizer.log"
    for name in sanitizer_small_colour_scene sanitizer_small_grey_scene; do
        timeout 45 compute-sanitizer --tool memcheck "$B/render_cuda_variants" --ignored \
            --test-threads 1 "$name" >> "$out/sanitizer.log" 2>&1
        echo "memcheck $name rc=$?"
        tail -1 "$out/sanitizer.log"
    done
    stamp done
} 2>&1 | tee "$out/colour-call.log"
