#!/usr/bin/env bash
# Installs the system packages Haloscope needs when they are missing (Debian/Ubuntu).
# Build: libhdf5-dev, libcfitsio-dev (FITS output), pkg-config, nasm (OpenH264's SIMD assembly:
# without it the MP4 encoder builds in plain C, several times slower). Run/test: a software Vulkan
# driver and EGL (mesa) so wgpu works without a GPU, Xvfb for the real-window test, and astropy
# (the FITS test reads the files with it). The `mpi` feature: Open MPI and its headers, and
# libclang for rsmpi's bindings (mpirun runs the MPI tests in CI).
set -euo pipefail

packages=(pkg-config libhdf5-dev libcfitsio-dev nasm python3-astropy mesa-vulkan-drivers libvulkan1
          libegl1 libegl-mesa0 libgl1-mesa-dri libxkbcommon-x11-0 xvfb xauth
          openmpi-bin libopenmpi-dev libclang-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The FITS test runs `python3`: where that is not the system one (pyenv, a venv), give it astropy.
if ! python3 -c 'import astropy.io.fits' 2>/dev/null; then
    echo "setup: installing astropy for $(command -v python3)" >&2
    python3 -m pip install --quiet astropy
fi
if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found; install Rust 1.95 or newer (https://rustup.rs) and run again" >&2
    exit 1
fi
