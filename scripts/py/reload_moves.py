"""How far the spheres of a stiffgrain frame moved in LAMMPS runs of
scripts/lammps/reload.in at several normal stiffnesses: percentiles of
the displacement, and the spheres that moved more than `--far` (m). Where
the pack can stand as springs and sliders, every displacement shrinks as
1/k_n (the columns `x kn` stay put); a sphere that moves `--far` at every
stiffness rearranged.

    .venv/bin/python scripts/py/reload_moves.py OUT/frames.h5 final-100.dump final-400.dump final-1600.dump --kn 100 400 1600 --far 2.5e-4
"""
import argparse

import h5py
import numpy as np


def dump_positions(path):
    with open(path) as f:
        lines = f.read().split("\n")
    head = next(i for i, l in enumerate(lines) if l.startswith("ITEM: ATOMS"))
    cols = lines[head].split()[2:]
    a = np.array([[float(x) for x in l.split()] for l in lines[head + 1:] if l.strip()])
    ids = a[:, cols.index("id")].astype(np.int64) - 1
    x = a[:, [cols.index(c) for c in ("x", "y", "z")]]
    return dict(zip(ids.tolist(), x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("frames")
    ap.add_argument("dumps", nargs="+")
    ap.add_argument("--kn", type=float, nargs="+", required=True)
    ap.add_argument("--frame", default="last", help="last (default), first, or a step number")
    ap.add_argument("--far", type=float, default=2.5e-4)
    a = ap.parse_args()
    if len(a.kn) != len(a.dumps):
        raise SystemExit("one --kn per dump")
    with h5py.File(a.frames, "r") as f:
        names = sorted(f["frames"].keys())
        name = {"last": names[-1], "first": names[0]}.get(a.frame, f"{int(a.frame):09d}" if a.frame.isdigit() else a.frame)
        b = f["frames"][name]["bodies"]
        start = dict(zip(b["id"][:].tolist(), b["position"][:]))
    far_sets = []
    print(f"{'k_n':>8} {'median':>9} {'99 %':>9} {'99.9 %':>9} {'max':>9} {'x kn: median':>13} {'99 %':>9} {'far':>5}")
    for kn, path in zip(a.kn, a.dumps):
        end = dump_positions(path)
        ids = sorted(start)
        d = np.array([np.linalg.norm(end[i] - start[i]) for i in ids])
        q = np.percentile(d, [50, 99, 99.9, 100])
        far = {i for i, di in zip(ids, d) if di > a.far}
        far_sets.append(far)
        print(f"{kn:8.0f} {q[0]:9.2e} {q[1]:9.2e} {q[2]:9.2e} {q[3]:9.2e} {q[0] * kn:13.2e} {q[1] * kn:9.2e} {len(far):5d}")
    common = set.intersection(*far_sets) if far_sets else set()
    print(f"spheres farther than {a.far:g} m at every stiffness: {len(common)}")


if __name__ == "__main__":
    main()
