"""The reactions on the fixed bodies of a compatible-cd frame (its
compatible forces, normal and tangential) against those LAMMPS runs of
scripts/lammps/reload.in end with at two normal stiffnesses, and against
their extrapolation to the rigid limit (errors falling as k_n^-1 for
Hooke, k_n^-2/3 for Hertz): the relative 2-norm of the difference over
all fixed bodies.

    .venv/bin/python scripts/py/reload_forces.py OUT/frames.h5 final-4e6.dump final-1.6e7.dump --ratio 4 --law hertz
"""
import argparse

import h5py
import numpy as np


def compatible_reactions(path, frame):
    with h5py.File(path, "r") as f:
        names = sorted(f["frames"].keys())
        g = f["frames"][{"last": names[-1], "first": names[0]}.get(frame, f"{int(frame):09d}" if frame.isdigit() else frame)]
        b, c = g["bodies"], g["contacts"]
        ids = b["id"][:].tolist()
        fixed = {i for i, x in zip(ids, b["fixed"][:].tolist()) if x}
        f_n, n = c["force_compatible"][:], c["normal"][:]
        f_t = c["force_compatible_tangent"][:] if "force_compatible_tangent" in c else np.zeros_like(n)
        a, bb = c["body_a"][:].tolist(), c["body_b"][:].tolist()
    base = sorted(fixed)
    r = {i: np.zeros(3) for i in base}
    for k in range(len(f_n)):
        on_b = f_n[k] * n[k] + f_t[k]
        if a[k] in r and bb[k] not in r:
            r[a[k]] -= on_b
        if bb[k] in r and a[k] not in r:
            r[bb[k]] += on_b
    return base, np.array([r[i] for i in base])


def dump_forces(path, base):
    with open(path) as f:
        lines = f.read().split("\n")
    head = next(i for i, l in enumerate(lines) if l.startswith("ITEM: ATOMS"))
    cols = lines[head].split()[2:]
    if "fx" not in cols:
        raise SystemExit(f"{path}: no forces (fx fy fz) in the dump")
    a = np.array([[float(x) for x in l.split()] for l in lines[head + 1:] if l.strip()])
    k = cols.index("fx")
    by_id = {int(row[cols.index("id")]) - 1: row[k:k + 3] for row in a}
    return np.array([by_id[i] for i in base])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("frames")
    ap.add_argument("soft")
    ap.add_argument("stiff")
    ap.add_argument("--ratio", type=float, required=True, help="k_n of the stiff run over the soft one's")
    ap.add_argument("--law", choices=["hooke", "hertz"], default="hooke")
    ap.add_argument("--frame", default="last", help="last (default), first, or a step number")
    a = ap.parse_args()
    base, comp = compatible_reactions(a.frames, a.frame)
    soft, stiff = dump_forces(a.soft, base), dump_forces(a.stiff, base)
    q = a.ratio ** (1.0 if a.law == "hooke" else 2.0 / 3.0)
    limit = (q * stiff - soft) / (q - 1.0)
    rel = lambda x: np.linalg.norm(x - comp) / np.linalg.norm(comp)
    print(f"fixed bodies {len(base)}, total compatible reaction {comp.sum(0)}")
    print(f"soft {rel(soft):.3e}  stiff {rel(stiff):.3e}  extrapolated {rel(limit):.3e}")


if __name__ == "__main__":
    main()
