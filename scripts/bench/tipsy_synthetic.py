#!/usr/bin/env python3
"""Large synthetic tipsy files for the GPU machine, written in parallel blocks (numpy).

    tipsy_synthetic.py gas  PATH N   # clustered gas with rho and hsmooth (render: no kNN)
    tipsy_synthetic.py dark PATH N   # clustered dark matter in the box [0, 1) (fof --box 1)

Little-endian, 32-byte header, f32 positions. The gas follows the shape of
render::synthetic::clustered_snapshot (a quarter uniform in [0, 1)^3, the rest in Gaussian halos
whose scale is 0.004-0.04 and whose weight goes as the scale cubed; h from the local density
with 32 neighbours); the dark matter that of halo::synthetic::clustered_points (half uniform,
half in clusters of about 1000 members, each a cuspy ball r = 8 s u^3 with s 0.3-3 mean
separations). Every block of 2^22 particles has its own seed, so the file depends on N only.
A gas record is 48 bytes (2x10^8: 9.6 GB), a dark one 36 bytes (4x10^8: 14.4 GB).
"""
import os
import struct
import sys
from multiprocessing import Pool

import numpy as np

BLOCK = 1 << 22


def header(n_gas, n_dark):
    # time (f64), nbodies, ndim, nsph, ndark, nstar, pad
    return struct.pack("<diiiiii", 1.0, n_gas + n_dark, 3, n_gas, n_dark, 0, 0)


def gas_halos(n):
    rng = np.random.default_rng(12345)
    n_halos = min(max(n // 2000, 1), 20000)
    scale = np.minimum(0.004 / np.sqrt(np.maximum(rng.random(n_halos), 0.01)), 0.04)
    centre = 0.1 + 0.8 * rng.random((n_halos, 3))
    weight = scale**3
    return centre, scale, weight / weight.sum()


def gas_block(args):
    path, n, start, count = args
    rng = np.random.default_rng(1000 + start // BLOCK)
    centre, scale, prob = gas_halos(n)
    rec = np.zeros((count, 12), dtype="<f4")
    n_bg = n // 4
    idx = np.arange(start, start + count)
    bg = idx < n_bg
    nb = int(bg.sum())
    pos = np.empty((count, 3))
    rho = np.empty(count)
    pos[:nb] = rng.random((nb, 3))
    rho[:nb] = max(n_bg, 1)
    nh = count - nb
    if nh:
        h = rng.choice(len(scale), size=nh, p=prob)
        s = scale[h]
        d = rng.standard_normal((nh, 3)) * s[:, None]
        pos[nb:] = centre[h] + d
        r2 = (d * d).sum(axis=1) / (s * s)
        members = prob[h] * (n - n_bg)
        rho[nb:] = members / ((2 * np.pi) ** 1.5 * s**3) * np.exp(-0.5 * r2) + max(n_bg, 1)
    rec[:, 0] = 1.0 / n  # mass
    rec[:, 1:4] = pos
    rec[:, 7] = rho  # rho
    rec[:, 8] = 1e4  # temp
    rec[:, 9] = np.cbrt(32.0 / (4.0 / 3.0 * np.pi * rho))  # hsmooth
    write_at(path, 32 + start * 48, rec)


def dark_block(args):
    path, n, start, count = args
    rng = np.random.default_rng(2000 + start // BLOCK)
    crng = np.random.default_rng(54321)
    sep = 1.0 / np.cbrt(n)
    n_cl = n // 2
    n_clusters = max(n_cl // 1000, 1)
    centres = crng.random((n_clusters, 3))
    scales = sep * (0.3 + 2.7 * crng.random(n_clusters))
    idx = np.arange(start, start + count)
    nc = int((idx < n_cl).sum())
    pos = np.empty((count, 3))
    if nc:
        c = rng.integers(0, n_clusters, nc)
        r = scales[c] * 8.0 * rng.random(nc) ** 3
        z = 2.0 * rng.random(nc) - 1.0
        phi = 2 * np.pi * rng.random(nc)
        s = np.sqrt(1.0 - z * z)
        d = np.stack([s * np.cos(phi), s * np.sin(phi), z], axis=1) * r[:, None]
        pos[:nc] = centres[c] + d
    pos[nc:] = rng.random((count - nc, 3))
    pos = np.mod(pos, 1.0).astype("<f4")
    pos[pos >= 1.0] = 0.0
    rec = np.zeros((count, 9), dtype="<f4")
    rec[:, 0] = 1.0 / n
    rec[:, 1:4] = pos
    rec[:, 7] = sep / 30.0  # eps
    write_at(path, 32 + start * 36, rec)


def write_at(path, offset, rec):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, rec.tobytes(), offset)
    finally:
        os.close(fd)


def main():
    kind, path, n = sys.argv[1], sys.argv[2], int(float(sys.argv[3]))
    record = {"gas": 48, "dark": 36}[kind]
    with open(path, "wb") as f:
        f.write(header(n, 0) if kind == "gas" else header(0, n))
        f.truncate(32 + n * record)
    blocks = [(path, n, s, min(BLOCK, n - s)) for s in range(0, n, BLOCK)]
    work = gas_block if kind == "gas" else dark_block
    with Pool(min(os.cpu_count() or 1, 16)) as pool:
        pool.map(work, blocks, chunksize=1)


if __name__ == "__main__":
    main()
