#!/usr/bin/env bash
# Upstream Splotch (CPU and CUDA) and Haloscope (CPU and CUDA) on the same clustered gas tipsy
# file, side by side in one run: per-frame times, ratios and the image difference.
#
#   scripts/bench/splotch-side-by-side.sh HALOSCOPE WORKDIR [N...]
#
#   HALOSCOPE  a haloscope binary (release build)
#   WORKDIR    scratch folder: the Splotch build, the scenes and every image (kept for a re-run:
#              existing builds and scenes are reused)
#   N          particle counts (default: 10000000 100000000)
#
# The kit in $HALOSCOPE_SHARED/anchors/splotch (default ../shared beside the project) builds
# Splotch from its source and runs it (its README gives the conventions matched here). Each
# case renders 2048^2, log rho as intensity, log temp as colour through Splotch's OldSplotch
# palette (Haloscope: splotch-classic), camera 0.5,0.5,-1.2 looking at the box centre, up +y,
# horizontal fov 45, radius factors F = 0.04, 0.25, 1 (mean radius about 1, 6, 25 px), minimum
# radius 1 px. Splotch's brightness0 B multiplies I/h' with h' = F h; Haloscope's amplitude
# uses h, so its brightness is B/F for the same picture.
#
# Splotch: frames 1.. of one process (the file is read once), `seconds` = the render call
# (CUDA: particle upload + kernels + image download), `kernel_seconds` (CUDA kernels only).
# Haloscope: two calls of `haloscope render --json`; the second call's render_seconds (upload,
# kernels, tone map; the file read is `load_seconds`, excluded as Splotch's is) is the frame.
# Output: one JSON line per case on stdout, a table on stderr.
set -euo pipefail

if [ "$#" -lt 2 ]; then
    sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
haloscope=$(realpath "$1")
work=$2
shift 2
counts=("$@")
[ "${#counts[@]}" -gt 0 ] || counts=(10000000 100000000)
root=$(cd "$(dirname "$0")/../.." && pwd)
kit=${HALOSCOPE_SHARED:-$root/../shared}/anchors/splotch
[ -d "$kit" ] || { echo "no Splotch kit at $kit" >&2; exit 1; }
mkdir -p "$work"
work=$(realpath "$work")
size=2048
brightness=0.03
view=(--camera 0.5,0.5,-1.2 --lookat 0.5,0.5,0.5 --up 0,1,0 --fov 45)

if [ ! -x "$work/splotch/splotch-cpu" ] || [ ! -x "$work/splotch/splotch-cuda" ]; then
    "$kit/build.sh" both "$work/splotch" >"$work/splotch-build.log" 2>&1 ||
        { tail -20 "$work/splotch-build.log" >&2; exit 1; }
fi

# The mean of `key` over frames 1.. of a run.sh JSON stream (frame 0 reads the file).
steady() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
vals = [r[sys.argv[2]] for r in rows if r["frame"] > 0 and r.get(sys.argv[2]) is not None]
print(sum(vals) / len(vals) if vals else "null")
EOF
}

# haloscope BACKEND SCENE F OUTPREFIX: two calls, the second one's JSON kept.
haloscope_render() {
    local backend=$1 scene=$2 factor=$3 prefix=$4
    local hs_brightness
    hs_brightness=$(python3 -c "print($brightness / $factor)")
    local args=("$scene" --width "$size" --height "$size" --species gas
        --intensity rho --log-intensity --color temp --log-color --palette splotch-classic
        --size-factor "$factor" --min-radius 1 --brightness "$hs_brightness"
        "${view[@]}" --backend "$backend" --out "$prefix.png" --json)
    "$haloscope" render "${args[@]}" >"$prefix.first.json"
    "$haloscope" render "${args[@]}" >"$prefix.json"
}

json_field() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); v=d
for k in sys.argv[2].split('.'):
    v = v.get(k) if isinstance(v, dict) else None
print('null' if v is None else v)" "$1" "$2"
}

printf '%-10s %-5s %12s %12s %12s %12s %12s %9s %9s %10s\n' N F splotch_cpu splotch_cuda \
    cuda_kernels haloscope_cpu haloscope_cuda cpu_x cuda_x max_diff >&2
for n in "${counts[@]}"; do
    scene=$work/scene_$n.tbin
    [ -f "$scene" ] || python3 "$kit/make_scene.py" "$n" "$scene" >&2
    for factor in 0.04 0.25 1; do
        case_dir=$work/n${n}_f$factor
        mkdir -p "$case_dir"
        for flavour in cpu cuda; do
            "$kit/run.sh" "$work/splotch/splotch-$flavour" "$scene" "$case_dir/splotch-$flavour" \
                --width $size --height $size "${view[@]}" --radius-factor "$factor" \
                --frames 3 --colour --brightness $brightness \
                >"$case_dir/splotch-$flavour.jsonl" 2>"$case_dir/splotch-$flavour.err"
            python3 "$kit/tools/tga2png.py" "$case_dir/splotch-${flavour}_0002.tga" \
                "$case_dir/splotch-$flavour.png" --flip >/dev/null
        done
        haloscope_render cpu "$scene" "$factor" "$case_dir/haloscope-cpu"
        haloscope_render cuda "$scene" "$factor" "$case_dir/haloscope-cuda"
        s_cpu=$(steady "$case_dir/splotch-cpu.jsonl" seconds)
        s_cuda=$(steady "$case_dir/splotch-cuda.jsonl" seconds)
        s_kernel=$(steady "$case_dir/splotch-cuda.jsonl" kernel_seconds)
        h_cpu=$(json_field "$case_dir/haloscope-cpu.json" render_seconds)
        h_cuda=$(json_field "$case_dir/haloscope-cuda.json" render_seconds)
        diff_json=$(python3 "$kit/tools/compare_images.py" "$case_dir/splotch-cpu.png" \
            "$case_dir/haloscope-cuda.png" 2>/dev/null || echo '{}')
        python3 - "$n" "$factor" "$s_cpu" "$s_cuda" "$s_kernel" "$h_cpu" "$h_cuda" \
            "$diff_json" "$case_dir" <<'EOF'
import json, sys
n, f, s_cpu, s_cuda, s_kernel, h_cpu, h_cuda, diff, case_dir = sys.argv[1:]
num = lambda v: None if v in ("null", "None", "") else float(v)
s_cpu, s_cuda, s_kernel, h_cpu, h_cuda = map(num, (s_cpu, s_cuda, s_kernel, h_cpu, h_cuda))
ratio = lambda a, b: a / b if a and b else None
row = {
    "particles": int(n), "radius_factor": float(f), "size": 2048,
    "splotch_cpu_s": s_cpu, "splotch_cuda_s": s_cuda, "splotch_cuda_kernels_s": s_kernel,
    "haloscope_cpu_s": h_cpu, "haloscope_cuda_s": h_cuda,
    "cpu_speedup": ratio(s_cpu, h_cpu), "cuda_speedup": ratio(s_cuda, h_cuda),
    "image_difference_splotch_cpu_vs_haloscope_cuda": json.loads(diff) if diff else None,
    "haloscope_cuda_stages": json.load(open(f"{case_dir}/haloscope-cuda.json")).get("stages"),
}
print(json.dumps(row))
fmt = lambda v: "-" if v is None else f"{v:.4f}"
d = row["image_difference_splotch_cpu_vs_haloscope_cuda"] or {}
print(f"{n:<10} {f:<5} {fmt(s_cpu):>12} {fmt(s_cuda):>12} {fmt(s_kernel):>12} {fmt(h_cpu):>12} "
      f"{fmt(h_cuda):>12} {fmt(row['cpu_speedup']):>9} {fmt(row['cuda_speedup']):>9} "
      f"{d.get('max_abs_diff', '-')!s:>10}", file=sys.stderr)
EOF
    done
done
