#!/usr/bin/env bash
# Packs binaries for the GPU machine: stripped copies, the shared libraries they need beyond
# libc (libhdf5 and its dependencies are not installed there), and chosen shared data files.
#
#   scripts/device-bundle.sh OUT_DIR [--data RELATIVE_PATH]... BINARY...
#
# On the device:  export LD_LIBRARY_PATH=$PWD/OUT_DIR/lib HALOSCOPE_SHARED=$PWD/OUT_DIR/shared
set -euo pipefail
out=$1; shift
shared=$(cd "$(dirname "$0")/../../shared" && pwd)
mkdir -p "$out/bin" "$out/lib" "$out/shared/data"
bins=()
while (($#)); do
    case $1 in
        --data) mkdir -p "$out/shared/data/$(dirname "$2")"; cp "$shared/data/$2" "$out/shared/data/$2"; shift 2 ;;
        *) bins+=("$1"); shift ;;
    esac
done
cp -r "$shared/reference" "$out/shared/"
for b in "${bins[@]}"; do
    name=$(basename "$b" | sed 's/-[0-9a-f]\{16\}$//')
    strip -o "$out/bin/$name" "$b"
    # `|| true`: a binary may need no library beyond libc, and grep then matches nothing.
    { ldd "$b" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' || true; } |
        while read -r lib; do cp -nL "$lib" "$out/lib/" 2>/dev/null || true; done
done
du -sh "$out"
