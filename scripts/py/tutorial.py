#!/usr/bin/env python3
"""A tour of a stiffgrain run with scripts/py/stiffgrain_reader.py.

usage: .venv/bin/python scripts/py/tutorial.py OUT [--plots DIR]

Run any scene first (e.g. `scripts/run configs/default.toml`), then point
this at its output directory. It prints what a run holds and the measures
the reader computes, and with --plots draws the walls' reactions and the
kinetic energy against time, and the contact force distribution.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stiffgrain_reader import Run, WALL_ID_BASE  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the run's output directory (output.dir)")
    ap.add_argument("--plots", metavar="DIR", help="write tutorial-*.png into DIR")
    a = ap.parse_args()

    # 1. Open the run: the frames' steps and times come from frames.h5.
    run = Run(a.out)
    print(run)
    print(f"frames at steps {run.steps.tolist()[:5]}{' ...' if len(run) > 5 else ''}, "
          f"t = {run.times[0]:g} .. {run.times[-1]:g} s")

    # 2. A frame by step (exact), by time (nearest) or by position.
    last = run.frame(-1)
    first = run.frame(step=int(run.steps[0]))
    middle = run.frame(time=0.5 * run.times[-1])
    print(f"first {first}\nmiddle {middle}\nlast {last}")

    # 3. Bodies: one row per body, sorted by id (rows of two frames line up).
    b = last.bodies
    moving = ~b["fixed"].astype(bool)
    print(f"{moving.sum()} moving bodies; their centre of mass is at "
          f"{np.mean(b['position'][moving], axis=0)} m")

    # 4. Contacts: the normal force the solver reports (force_compatible for
    #    compatible-cd), the force vector on body b, contacts with walls.
    if last.n_contacts:
        f = last.force()
        print(f"{last.n_contacts} contacts ({last.is_wall().sum()} with walls); "
              f"{last.force_field()} from {f.min():.4g} to {f.max():.4g} N")

    # 5. Derived measures.
    print(f"coordination number {last.coordination_number():.3f} "
          f"(counting walls and fixed bodies: {last.coordination_number(walls=True):.3f})")
    x, r = b["position"], b["radius"]
    lo, hi = (x - r[:, None]).min(0), (x + r[:, None]).max(0)
    print(f"packing fraction in the bodies' bounding box: {last.packing_fraction(lo, hi):.4f}")
    centres, density, forces = last.force_distribution(bins=10)
    if len(forces):
        print(f"force distribution over {len(forces)} force-carrying contacts, <f> = {forces.mean():.4g} N; "
              f"largest f/<f> = {forces.max() / forces.mean():.3f}")

    # 6. The time series: a row per frame in frames.h5, a row per thermo
    #    line in series.csv; a wall's reaction is the force the bodies exert on it.
    s = run.series()
    print(f"series: {len(s['step'])} rows, kinetic energy at the end {s['kinetic_energy'][-1]:.4g} J")
    for k in range(len(s.get("wall_id", []))):
        print(f"  wall {k} (id 2**63 + {int(s['wall_id'][k]) - WALL_ID_BASE}, normal {s['wall_normal'][k]}): "
              f"reaction at the end {s['wall_force'][-1, k]} N")

    if a.plots:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        os.makedirs(a.plots, exist_ok=True)
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(6, 6), sharex=True)
        for k in range(len(s.get("wall_id", []))):
            ax1.plot(s["time"], s["wall_force"][:, k, 2], label=f"wall {k}")
        ax1.set_ylabel("reaction, z [N]")
        if len(s.get("wall_id", [])):
            ax1.legend()
        ax2.plot(s["time"], s["kinetic_energy"])
        ax2.set_xlabel("time [s]")
        ax2.set_ylabel("kinetic energy [J]")
        fig.tight_layout()
        fig.savefig(os.path.join(a.plots, "tutorial-series.png"), dpi=100)
        if len(forces):
            fig, ax = plt.subplots(figsize=(5, 4))
            ax.semilogy(centres, np.where(density > 0, density, np.nan), "o-")
            ax.set_xlabel("f / <f>")
            ax.set_ylabel("probability density")
            fig.tight_layout()
            fig.savefig(os.path.join(a.plots, "tutorial-forces.png"), dpi=100)
        print(f"plots in {a.plots}")


if __name__ == "__main__":
    main()
