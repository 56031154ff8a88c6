#!/usr/bin/env bash
# Upstream Splotch CPU against Haloscope CPU on the same host and the same clustered gas tipsy
# file, at the same thread count, runs alternating: wall and CPU time per colour frame, ratios.
#
#   scripts/bench/cpu-vs-splotch.sh HALOSCOPE WORKDIR [N]
#
#   HALOSCOPE  a haloscope binary (release build)
#   WORKDIR    scratch folder: the Splotch CPU build, the scene and the images (reused when
#              there: an existing build and scene are not made again)
#   N          particles in the scene (default 10000000)
#
# Environment: THREADS (default: every core, `nproc`) for both OpenMP and rayon; ROUNDS
# (default 2) alternating rounds per radius factor (each time the least of them); FACTORS (default
# "0.04 0.25 1"); HALOSCOPE_SHARED (default ../shared beside the project) for the Splotch kit.
#
# Frame: 2048^2, log rho intensity, log temp colour (Splotch's OldSplotch palette, Haloscope's
# splotch-classic), camera 0.5,0.5,-1.2 at the box centre, up +y, fov 45, radius factor F,
# minimum radius 1 px (Splotch's brightness B for I/h' with h' = F h is Haloscope's B/F).
# Wall, three comparisons (each time the least over the rounds):
#   first frame:  Splotch's steady frames (mean `seconds` of frames 1.. of one process: the
#                 render call, logs included) against Haloscope's `render_seconds` of the second
#                 of two one-shot `render --json` calls (normalise, project, splat, tone map; the
#                 file read excluded, as Splotch's is): a first frame, whose fresh buffers pay
#                 their first-touch page faults.
#   one call:     Splotch's frame of a process that renders one frame (its `seconds`, with
#                 its own first-touch faults) against the same `render_seconds`: one call of
#                 each, as a user runs them.
#   steady frame: Splotch's least `seconds` of frames 1.. against Haloscope's steady frame,
#                 `frame_s` of `bench render FILE --backend cpu --grey off --repeat K --json`
#                 (the same style and camera options and the same renderer call as `render
#                 FILE`, its buffers reused; the least of K frames, the camera moved by 1e-4
#                 each; normalise, project, splat; no tone map, as Splotch's `seconds` has
#                 none): like for like with Splotch's steady frame.
# CPU time per frame (user + sys of every thread; what counts on a loaded machine): the
# difference between a process that renders 1 + K frames and one that renders 1, over K
# (Splotch: `--frames`; Haloscope: `bench render FILE --repeat`, whose CPU frame is τ without
# the tone map that render_seconds includes), so the file read and the start-up cancel out.
# Output: one JSON line per factor on stdout, a table on stderr.
set -euo pipefail

if [ "$#" -lt 2 ]; then
    sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
haloscope=$(realpath "$1")
work=$2
n=${3:-10000000}
threads=${THREADS:-$(nproc)}
rounds=${ROUNDS:-2}
factors=${FACTORS:-0.04 0.25 1}
extra=3
root=$(cd "$(dirname "$0")/../.." && pwd)
kit=${HALOSCOPE_SHARED:-$root/../shared}/anchors/splotch
[ -d "$kit" ] || { echo "no Splotch kit at $kit" >&2; exit 1; }
[ -x "$haloscope" ] || { echo "no haloscope binary at $1" >&2; exit 1; }
mkdir -p "$work"
work=$(realpath "$work")
size=2048
brightness=0.03
view=(--camera 0.5,0.5,-1.2 --lookat 0.5,0.5,0.5 --up 0,1,0 --fov 45)
export OMP_NUM_THREADS=$threads RAYON_NUM_THREADS=$threads

if [ ! -x "$work/splotch/splotch-cpu" ]; then
    "$kit/build.sh" cpu "$work/splotch" >"$work/splotch-build.log" 2>&1 ||
        { tail -20 "$work/splotch-build.log" >&2; exit 1; }
fi
scene=$work/scene_$n.tbin
[ -f "$scene" ] || python3 "$kit/make_scene.py" "$n" "$scene" >&2

# cpu_of OUTFILE CMD...: runs CMD with stdout to OUTFILE, prints the user + sys seconds of it
# and its children (python's rusage: no /usr/bin/time needed).
cpu_of() {
    python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    rc = subprocess.run(sys.argv[2:], stdout=out).returncode
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(u.ru_utime + u.ru_stime)
sys.exit(rc)' "$@"
}

# splotch OUTFILE FACTOR FRAMES PREFIX: prints the user + sys seconds of the run.
splotch() {
    cpu_of "$1" "$kit/run.sh" "$work/splotch/splotch-cpu" "$scene" "$4" --width $size \
        --height $size "${view[@]}" --radius-factor "$2" --frames "$3" --colour \
        --brightness $brightness
}

style() { # FACTOR
    local b
    b=$(python3 -c "print($brightness / $1)")
    echo --width $size --height $size --species gas --intensity rho --log-intensity \
        --color temp --log-color --palette splotch-classic --size-factor "$1" --min-radius 1 \
        --brightness "$b" "${view[@]}"
}

one_call() { # JSONL of a one-frame run: `seconds` of frame 0
    python3 - "$1" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
vals = [r["seconds"] for r in rows if r["frame"] == 0 and r.get("seconds") is not None]
print(vals[0] if vals else "null")
EOF
}

steady() { # JSONL: "MEAN LEAST" of `seconds` of frames 1..
    python3 - "$1" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
vals = [r["seconds"] for r in rows if r["frame"] > 0 and r.get("seconds") is not None]
print(f"{sum(vals) / len(vals)} {min(vals)}" if vals else "null null")
EOF
}

echo "$threads threads, $n particles; ms per frame; x = Splotch / Haloscope" >&2
printf '%-6s | %-6s %7s %7s %5s | %-8s %7s %5s | %-6s %7s %7s %5s | %-3s %7s %7s %5s\n' F \
    first splotch hs x "one call" splotch x steady splotch hs x cpu splotch hs x >&2
for factor in $factors; do
    case_dir=$work/f$factor
    mkdir -p "$case_dir"
    rm -f "$case_dir/rounds.jsonl"
    read -r -a hs_style <<<"$(style "$factor")"
    for round in $(seq 1 "$rounds"); do
        s_cpu1=$(splotch "$case_dir/s1.jsonl" "$factor" 1 "$case_dir/s1" 2>/dev/null)
        s_cpuk=$(splotch "$case_dir/sk.jsonl" "$factor" $((1 + extra)) "$case_dir/sk" 2>/dev/null)
        read -r s_wall s_least <<<"$(steady "$case_dir/sk.jsonl")"
        s_one=$(one_call "$case_dir/s1.jsonl")
        "$haloscope" render "$scene" "${hs_style[@]}" --backend cpu --out "$case_dir/h.png" \
            --json >"$case_dir/h.first.json"
        "$haloscope" render "$scene" "${hs_style[@]}" --backend cpu --out "$case_dir/h.png" \
            --json >"$case_dir/h.json"
        h_wall=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['render_seconds'])" \
            "$case_dir/h.json")
        bench=("$haloscope" bench render "$scene" "${hs_style[@]}" --backend cpu --grey off --json)
        h_cpu1=$(cpu_of "$case_dir/b1.json" "${bench[@]}" --repeat 1 2>/dev/null)
        h_cpuk=$(cpu_of "$case_dir/bk.json" "${bench[@]}" --repeat $((1 + extra)) 2>/dev/null)
        h_steady=$(python3 -c \
            "import json,sys; print(json.load(open(sys.argv[1]))['cases'][0]['result']['frame_s'])" \
            "$case_dir/bk.json")
        row=$(python3 - "$factor" "$s_wall" "$s_cpu1" "$s_cpuk" "$h_wall" "$h_cpu1" "$h_cpuk" \
            "$extra" "$threads" "$n" "$round" "$s_least" "$h_steady" "$s_one" <<'EOF'
import json, sys
f, s_wall, s1, sk, h_wall, h1, hk, extra, threads, n, rnd, s_least, h_steady, s_one = sys.argv[1:]
num = lambda v: None if v in ("null", "None", "") else float(v)
s_wall, h_wall, s_least, h_steady = num(s_wall), num(h_wall), num(s_least), num(h_steady)
s_one = num(s_one)
s_cpu = (float(sk) - float(s1)) / int(extra)
h_cpu = (float(hk) - float(h1)) / int(extra)
ratio = lambda a, b: a / b if a and b and b > 0 else None
print(json.dumps({
    "particles": int(n), "radius_factor": float(f), "size": 2048, "threads": int(threads),
    "round": int(rnd), "splotch_s": s_wall, "haloscope_s": h_wall,
    "wall_speedup": ratio(s_wall, h_wall), "splotch_one_call_s": s_one,
    "one_call_speedup": ratio(s_one, h_wall), "splotch_steady_s": s_least,
    "haloscope_steady_s": h_steady, "steady_speedup": ratio(s_least, h_steady),
    "splotch_cpu_s": s_cpu, "haloscope_cpu_s": h_cpu,
    "cpu_speedup": ratio(s_cpu, h_cpu),
}))
EOF
        )
        echo "$row" >>"$case_dir/rounds.jsonl"
    done
    # Each time is the least over the rounds (a loaded machine only ever slows a run down).
    python3 - "$rounds" "$case_dir/rounds.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2])][-int(sys.argv[1]):]
best = lambda k: min((r[k] for r in rows if r[k] is not None), default=None)
r = dict(rows[-1])
r.pop("round")
for k in ("splotch_s", "haloscope_s", "splotch_one_call_s", "splotch_steady_s",
          "haloscope_steady_s", "splotch_cpu_s", "haloscope_cpu_s"):
    r[k] = best(k)
ratio = lambda a, b: a / b if a and b and b > 0 else None
r["wall_speedup"] = ratio(r["splotch_s"], r["haloscope_s"])
r["one_call_speedup"] = ratio(r["splotch_one_call_s"], r["haloscope_s"])
r["steady_speedup"] = ratio(r["splotch_steady_s"], r["haloscope_steady_s"])
r["cpu_speedup"] = ratio(r["splotch_cpu_s"], r["haloscope_cpu_s"])
r["rounds"] = len(rows)
print(json.dumps(r))
ms = lambda v: "-" if v is None else f"{v * 1e3:.1f}"
x = lambda v: "-" if v is None else f"{v:.2f}"
print(f"{r['radius_factor']:<6} | first  {ms(r['splotch_s']):>7} {ms(r['haloscope_s']):>7} "
      f"{x(r['wall_speedup']):>5} | one call {ms(r['splotch_one_call_s']):>7} "
      f"{x(r['one_call_speedup']):>5} | steady {ms(r['splotch_steady_s']):>7} "
      f"{ms(r['haloscope_steady_s']):>7} {x(r['steady_speedup']):>5} | cpu "
      f"{ms(r['splotch_cpu_s']):>7} {ms(r['haloscope_cpu_s']):>7} {x(r['cpu_speedup']):>5}",
      file=sys.stderr)
EOF
done
