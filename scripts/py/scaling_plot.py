#!/usr/bin/env python3
"""Plots of scaling CSVs (rows: ranks,bodies,contacts,steps,wall_per_step,
<phase>...,<phase>_max...; see scripts/py/summary_row.py).

usage: scaling_plot.py --out DIR [--strong strong.csv] [--weak weak.csv]

Strong: speedup T1/Tp and efficiency T1/(p Tp) against ranks (T: wall time
per step, the best of repeated rows per rank count), stacked mean time per
step per phase. Weak: efficiency T1/Tp and stacked phases. The reference is
the smallest rank count in the file (Tp0 * p0 instead of T1). Prints the PNG
paths.
"""
import argparse
import csv
import os
import sys

import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print(f"scaling_plot: {path}: no rows", file=sys.stderr)
        sys.exit(2)
    best = {}
    for r in rows:
        p = int(r["ranks"])
        if p not in best or float(r["wall_per_step"]) < float(best[p]["wall_per_step"]):
            best[p] = r
    ranks = sorted(best)
    phases = [k for k in rows[0] if k not in ("ranks", "bodies", "contacts", "steps", "wall_per_step") and not k.endswith("_max")]
    wall = np.array([float(best[p]["wall_per_step"]) for p in ranks])
    ph = {k: np.array([float(best[p].get(k) or 0.0) for p in ranks]) for k in phases}
    bodies = [int(best[p]["bodies"]) for p in ranks]
    return np.array(ranks), wall, ph, bodies


def stacked(ax, ranks, ph, wall, title):
    x = np.arange(len(ranks))
    bottom = np.zeros(len(ranks))
    for k, v in ph.items():
        if np.any(v > 0):
            ax.bar(x, v, bottom=bottom, label=k)
            bottom += v
    ax.plot(x, wall, "k_", ms=30, mew=2, label="wall / step")
    ax.set_xticks(x, [str(r) for r in ranks])
    ax.set_xlabel("ranks")
    ax.set_ylabel("seconds per step (mean over ranks)")
    ax.set_title(title)
    ax.legend(fontsize=8)


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--strong")
    p.add_argument("--weak")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    written = []

    def save(fig, name):
        path = os.path.join(a.out, name)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    if a.strong:
        ranks, wall, ph, bodies = load(a.strong)
        ref = wall[0] * ranks[0]
        speedup = ref / wall
        eff = speedup / ranks
        fig, ax = plt.subplots(figsize=(6, 4.5))
        ax.plot(ranks, speedup, "o-", label="measured")
        ax.plot(ranks, ranks / ranks[0] * speedup[0], "k--", label="ideal")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("ranks")
        ax.set_ylabel(f"speedup (T{ranks[0]}·{ranks[0]} / Tp)")
        ax.set_title(f"strong scaling, {bodies[0]} bodies")
        ax.legend()
        save(fig, "strong-speedup.png")
        fig, ax = plt.subplots(figsize=(6, 4.5))
        ax.plot(ranks, eff, "o-")
        ax.axhline(1.0, color="k", ls="--")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, max(1.1, float(eff.max()) * 1.1))
        ax.set_xlabel("ranks")
        ax.set_ylabel("parallel efficiency")
        ax.set_title(f"strong scaling, {bodies[0]} bodies")
        save(fig, "strong-efficiency.png")
        fig, ax = plt.subplots(figsize=(7, 5))
        stacked(ax, ranks, ph, wall, f"strong scaling: time per step by phase, {bodies[0]} bodies")
        save(fig, "strong-phases.png")
    if a.weak:
        ranks, wall, ph, bodies = load(a.weak)
        eff = wall[0] / wall
        fig, ax = plt.subplots(figsize=(6, 4.5))
        ax.plot(ranks, eff, "o-")
        ax.axhline(1.0, color="k", ls="--")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, max(1.1, float(eff.max()) * 1.1))
        ax.set_xlabel("ranks")
        ax.set_ylabel(f"weak efficiency (T{ranks[0]} / Tp)")
        ax.set_title(f"weak scaling, {bodies[0] // ranks[0]} bodies per rank")
        save(fig, "weak-efficiency.png")
        fig, ax = plt.subplots(figsize=(7, 5))
        stacked(ax, ranks, ph, wall, f"weak scaling: time per step by phase, {bodies[0] // ranks[0]} bodies per rank")
        save(fig, "weak-phases.png")
    if not written:
        print("scaling_plot: give --strong and/or --weak", file=sys.stderr)
        return 2
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
