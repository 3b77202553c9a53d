#!/usr/bin/env python3
"""A dense random pack of equal spheres in a periodic cube, for the rigid
shear cells of the lab (docs: "Lab tests"), or with `--walls` in a closed
cube (the spheres keep half the gap to its faces), the start of a
compression that skips the slow dense gas.

Rigid grains cannot be squeezed into a dense state inside a fixed periodic
cell, so the pack is made here: centres drawn uniformly in a cube sized for
the solid fraction `--phi`, then the overlaps relaxed away by FIRE
(Bitzek et al., PRL 97, 170201, 2006) on a harmonic overlap energy, a fast
quench that keeps the pack amorphous. Below the jamming fraction of such a
quench (about 0.64 for equal spheres) the energy goes to zero and the
spheres keep a surface gap of at least `--gap` diameters; above it (walls
lower it: Φ (1 + gap)³ = 0.6185 does not pack in a closed cube of 4,000)
the energy stalls with overlaps left, and the script stops with one line
and exit status 2 once it falls by less than 0.1 % in 10,000 steps.
Writes a CSV for
`[[generate]] kind = "file"` (columns x, y, z, vx) whose vx is the mean
simple-shear flow v_x = rate · (z − L/2) of `--shear-rate`.

    .venv/bin/python scripts/py/dense_pack.py --count 4000 --radius 0.001 \\
        --phi 0.60 --seed 35 --shear-rate 1.0 --out pack.csv
"""
import argparse
import math
import sys

import numpy as np


def pairs(x, box, cut, periodic=True):
    """Index pairs (i < j) closer than `cut` (minimum image when
    `periodic`), brute force in chunks."""
    n = len(x)
    out_i, out_j = [], []
    for a in range(0, n, 512):
        d = x[a:a + 512, None, :] - x[None, :, :]
        if periodic:
            d -= box * np.round(d / box)
        r2 = np.einsum("ijk,ijk->ij", d, d)
        ii, jj = np.nonzero(r2 < cut * cut)
        ii += a
        keep = ii < jj
        out_i.append(ii[keep])
        out_j.append(jj[keep])
    return np.concatenate(out_i), np.concatenate(out_j)


def forces(x, box, sigma, pi, pj, periodic=True):
    """Harmonic overlap energy 1/2 (1 - r/sigma)^2 per overlapping pair (and
    per sphere overlapping a face of the cube when not `periodic`):
    energy, forces, largest overlap."""
    d = x[pi] - x[pj]
    if periodic:
        d -= box * np.round(d / box)
    r = np.sqrt(np.einsum("ij,ij->i", d, d))
    ov = np.maximum(0.0, 1.0 - r / sigma)
    e = 0.5 * np.sum(ov * ov)
    mag = np.where(ov > 0.0, ov / (sigma * np.maximum(r, 1e-300)), 0.0)
    fij = d * mag[:, None]
    f = np.zeros_like(x)
    np.add.at(f, pi, fij)
    np.add.at(f, pj, -fij)
    big = ov.max(initial=0.0)
    if not periodic:
        # Walls at 0 and box: overlap of the sphere (radius sigma/2) over sigma.
        lo = np.maximum(0.0, 0.5 * sigma - x) / sigma
        hi = np.maximum(0.0, x - (box - 0.5 * sigma)) / sigma
        e += 0.5 * np.sum(lo * lo + hi * hi)
        f += (lo - hi) / sigma
        big = max(big, lo.max(), hi.max())
    return e, f, big


def fail(message):
    """One line on stderr and exit status 2 (bad input)."""
    print(message, file=sys.stderr)
    sys.exit(2)


# FIRE steps over which the overlap energy must fall by STALL_DROP
# (relative), else the pack has jammed: above the reachable solid fraction
# FIRE settles in a minimum with overlaps left, and its energy stays put.
STALL_WINDOW = 10000
STALL_DROP = 1e-3


def relax(x, box, sigma, tol, max_steps, log, periodic=True):
    """FIRE to a largest overlap below `tol` (relative to sigma); returns the
    steps taken. Stops with exit status 2 once the energy stalls (jammed)."""
    skin = 0.3 * sigma
    dt_max, dt = 0.1 * sigma, 0.02 * sigma
    alpha0, alpha, n_pos = 0.1, 0.1, 0
    v = np.zeros_like(x)
    ref = x.copy()
    pi, pj = pairs(x, box, sigma + skin, periodic)
    e_mark = None
    for step in range(max_steps):
        shift = x - ref
        if periodic:
            shift -= box * np.round(shift / box)
        if np.max(np.einsum("ij,ij->i", shift, shift)) > (0.5 * skin) ** 2:
            ref = x.copy()
            pi, pj = pairs(x, box, sigma + skin, periodic)
        e, f, ov = forces(x, box, sigma, pi, pj, periodic)
        if ov < tol:
            return step
        if step % 500 == 0:
            log(f"  FIRE step {step}: energy {e:.3e}, largest overlap {ov:.3e} sigma")
        if step % STALL_WINDOW == 0:
            if e_mark is not None and e > (1.0 - STALL_DROP) * e_mark:
                fail(f"dense_pack: jammed after {step} FIRE steps (overlap energy {e:.3e}, down by less than {STALL_DROP:g} "
                     f"in {STALL_WINDOW} steps; largest overlap {ov:.3e} of a diameter): the solid fraction with the gap, "
                     "phi (1 + gap)^3, is above what this quench can reach; lower --phi or --gap")
            e_mark = e
        p = np.sum(f * v)
        if p > 0.0:
            fn, vn = np.linalg.norm(f), np.linalg.norm(v)
            v = (1.0 - alpha) * v + alpha * vn * f / max(fn, 1e-300)
            n_pos += 1
            if n_pos > 5:
                dt = min(1.1 * dt, dt_max)
                alpha *= 0.99
        else:
            v[:] = 0.0
            dt *= 0.5
            alpha, n_pos = alpha0, 0
        v += dt * f
        x += dt * v
        if periodic:
            x %= box
    fail(f"dense_pack: no overlap-free pack after {max_steps} FIRE steps (largest overlap {ov:.3e} of a diameter): "
         "the solid fraction is above what this quench can reach; lower --phi")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--radius", type=float, required=True, help="sphere radius (m)")
    ap.add_argument("--phi", type=float, required=True, help="solid fraction")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gap", type=float, default=1e-4, help="least surface gap, in diameters (default 1e-4)")
    ap.add_argument("--shear-rate", type=float, default=0.0, help="v_x = rate (z - L/2) (1/s)")
    ap.add_argument("--walls", action="store_true", help="a closed cube (walls at 0 and L on every axis) instead of a periodic one")
    ap.add_argument("--max-steps", type=int, default=200000)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not (0.0 < a.phi < 0.74) or a.count < 2 or a.radius <= 0.0:
        fail("dense_pack: need count >= 2, radius > 0 and 0 < phi < 0.74")
    d = 2.0 * a.radius
    box = (a.count * math.pi * d**3 / 6.0 / a.phi) ** (1.0 / 3.0)
    rng = np.random.default_rng(a.seed)
    # Work in units of the diameter; relax with the diameter enlarged by the gap.
    L = box / d
    periodic = not a.walls
    x = rng.uniform(0.0, L, size=(a.count, 3))
    log = lambda s: print(s, file=sys.stderr)
    log(f"dense_pack: {a.count} spheres, phi = {a.phi}, {'periodic' if periodic else 'walled'} cube L = {box:.6g} m ({L:.4f} diameters)")
    steps = relax(x, L, 1.0 + a.gap, 1e-9, a.max_steps, log, periodic)
    pi, pj = pairs(x, L, 1.5 * (1.0 + a.gap), periodic)
    dd = x[pi] - x[pj]
    if periodic:
        dd -= L * np.round(dd / L)
    rmin = np.sqrt(np.einsum("ij,ij->i", dd, dd)).min(initial=np.inf) if len(pi) else np.inf
    log(f"dense_pack: relaxed in {steps} FIRE steps; least centre distance {rmin:.8f} diameters")
    x *= d
    vx = a.shear_rate * (x[:, 2] - 0.5 * box)
    with open(a.out, "w") as fh:
        fh.write(f"# {a.count} spheres of radius {a.radius} m, phi = {a.phi}, {'periodic' if periodic else 'walled'} cube [0, {box!r}]^3, seed {a.seed}, "
                 f"v_x = {a.shear_rate} (z - L/2)\n")
        fh.write("x,y,z,vx\n")
        for p, u in zip(x, vx):
            fh.write(f"{float(p[0])!r},{float(p[1])!r},{float(p[2])!r},{float(u)!r}\n")
    print(f"{float(box)!r}")


if __name__ == "__main__":
    main()
