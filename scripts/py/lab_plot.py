#!/usr/bin/env python3
"""The lab measurements of a stiffgrain run against strain, from /series of
OUT/frames.h5 (a row per frame; see the guide's "Lab tests").

usage: lab_plot.py OUT [--axis x|y|z] [--from-start] [--out DIR]

The strain is the logarithmic strain ln(L0 / L) of the measured box along
AXIS (default: the axis compressed most over the run), counted from the
first frame with a force-carrying backbone (the pack jammed), or from the
first frame with --from-start; in a Lees–Edwards cell it is the shear
strain γ̇ t from the start. Writes DIR/lab.png (default OUT/plots):
stress ratio, solid fraction and the coordination numbers (all bodies and
the backbone) against strain, and prints its path and, over the second half
of the strain, the mean and standard deviation of the stress ratio and the
solid fraction.
"""
import argparse
import os
import sys

import h5py
import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

AXES = {"x": 0, "y": 1, "z": 2}


def shear_rate(out):
    """γ̇ of a Lees–Edwards cell (None otherwise), from the run's configuration."""
    import tomllib
    with h5py.File(os.path.join(out, "frames.h5"), "r") as f:
        if "meta" not in f or "config" not in f["meta"].attrs:
            return None
        cfg = tomllib.loads(f["meta"].attrs["config"])
    p = cfg.get("parallel", {})
    return float(p["shear_rate"]) if p.get("lees_edwards") else None


def read_series(out):
    path = os.path.join(out, "frames.h5")
    with h5py.File(path, "r") as f:
        if "series" not in f or "box_lo" not in f["series"]:
            sys.exit(f"{path}: no lab measurements in /series (written by an earlier version)")
        return {k: v[()] for k, v in f["series"].items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--axis", choices=AXES)
    ap.add_argument("--from-start", action="store_true")
    ap.add_argument("--out", dest="dir")
    a = ap.parse_args()
    s = read_series(a.out)
    length = s["box_hi"] - s["box_lo"]
    if len(length) < 2:
        sys.exit(f"{a.out}: fewer than two frames")
    axis = AXES[a.axis] if a.axis else int(np.argmax(np.log(length[0] / length[-1])))
    start = 0
    rate = shear_rate(a.out)
    if rate is not None:
        strain = np.abs(rate) * s["time"]
        label = "shear strain γ̇ t"
    else:
        if not a.from_start:
            jammed = np.nonzero(s["coordination_backbone"] > 0)[0]
            start = int(jammed[0]) if len(jammed) else 0
        strain = np.log(length[start, axis] / length[:, axis])
        label = f"strain ln(L0/L) along {'xyz'[axis]}" + ("" if a.from_start else " from jamming")
    keep = slice(start, None)
    fig, ax = plt.subplots(3, 1, sharex=True, figsize=(6, 8))
    ax[0].plot(strain[keep], s["stress_ratio"][keep])
    ax[0].set_ylabel("stress ratio")
    ax[1].plot(strain[keep], s["solid_fraction"][keep])
    ax[1].set_ylabel("solid fraction")
    ax[2].plot(strain[keep], s["coordination"][keep], label="all bodies")
    ax[2].plot(strain[keep], s["coordination_backbone"][keep], label="backbone")
    ax[2].set_ylabel("coordination")
    ax[2].legend()
    ax[2].set_xlabel(label)
    for x in ax:
        x.grid(alpha=0.3)
    fig.tight_layout()
    out_dir = a.dir or os.path.join(a.out, "plots")
    os.makedirs(out_dir, exist_ok=True)
    png = os.path.join(out_dir, "lab.png")
    fig.savefig(png, dpi=120)
    print(png)
    # The steady state: the second half of the strain.
    e = strain[keep]
    half = e >= 0.5 * e[-1] if e[-1] > 0 else np.ones_like(e, dtype=bool)
    for name in ("stress_ratio", "solid_fraction"):
        v = s[name][keep][half]
        print(f"{name}: mean {v.mean():.6g} std {v.std():.3g} over strain {e[half][0]:.3g}..{e[-1]:.3g}")


if __name__ == "__main__":
    main()
