#!/bin/sh
# Runs one fuzz target from its committed seeds: fuzz/run.sh tipsy|events|path_file|cli|gadget_hdf5 [SECONDS] [LIBFUZZER_ARGS...]
# From the project root; needs `cargo install cargo-fuzz` and a nightly toolchain.
# The seeds (fuzz/seeds/TARGET) are copied into the working corpus (fuzz/corpus/TARGET, not
# committed), which grows as the fuzzer finds new paths; crashes land in fuzz/artifacts/TARGET.
set -eu
target=${1:?usage: fuzz/run.sh tipsy|events|path_file|cli|gadget_hdf5 [SECONDS] [LIBFUZZER_ARGS...]}
seconds=${2:-300}
shift
[ $# -gt 0 ] && shift
mkdir -p "fuzz/corpus/$target"
cp fuzz/seeds/"$target"/* "fuzz/corpus/$target/"
# One in-process fuzzer at low priority (the build machine is shared); -timeout flags any
# input that takes over 10 s, and libFuzzer's default -rss_limit_mb=2048 (which also caps a
# single malloc) flags huge allocations.
exec nice -n 10 cargo +nightly fuzz run "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "$@"
