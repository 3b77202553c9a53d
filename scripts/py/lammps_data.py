"""Writes a frame of a stiffgrain run (spheres) as a LAMMPS data file for
atom_style sphere, ids + 1, for scripts/lammps/pour.in, drop.in and
reload.in: atom type 1, type 2 for fixed bodies. The first frame by
default; `--frame last` or a step for another. `--shrink S` takes S off
every radius at the same centres and mass (density scaled), so that
spheres the frame has touching or overlapping by less than 2 S start
apart (reload.in: a pack at rest loaded anew from unstressed contacts).

    .venv/bin/python scripts/py/lammps_data.py OUT/frames.h5 pack.data --box 0.025 0.025 0.06 --density 2000
    .venv/bin/python scripts/py/lammps_data.py OUT/frames.h5 p20.data --lo -0.025 -0.025 0 --box 0.025 0.025 0.04 --density 2000
    .venv/bin/python scripts/py/lammps_data.py OUT/frames.h5 rest.data --frame last --shrink 3e-8 --box 0.1 0.1 0.06 --density 2000
"""
import argparse

import h5py


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("frames")
    ap.add_argument("out")
    ap.add_argument("--box", type=float, nargs=3, required=True, metavar=("XHI", "YHI", "ZHI"))
    ap.add_argument("--lo", type=float, nargs=3, default=[0.0, 0.0, 0.0], metavar=("XLO", "YLO", "ZLO"))
    ap.add_argument("--density", type=float, required=True)
    ap.add_argument("--frame", default="first", help="first (default), last, or a step number")
    ap.add_argument("--shrink", type=float, default=0.0, help="taken off every radius, mass kept (m)")
    a = ap.parse_args()
    with h5py.File(a.frames, "r") as f:
        names = sorted(f["frames"].keys())
        if a.frame in ("first", "last"):
            name = names[0] if a.frame == "first" else names[-1]
        else:
            name = f"{int(a.frame):09d}"
            if name not in names:
                raise SystemExit(f"{a.frames}: no frame at step {a.frame} (frames {names[0]} .. {names[-1]})")
        b = f["frames"][name]["bodies"]
        x, r, ids, fixed = b["position"][:], b["radius"][:], b["id"][:], b["fixed"][:]
    if a.shrink < 0 or a.shrink >= r.min():
        raise SystemExit(f"--shrink {a.shrink}: must be at least 0 and below the smallest radius {r.min()}")
    with open(a.out, "w") as o:
        o.write(f"stiffgrain {a.frames} frame {name}\n\n{len(x)} atoms\n2 atom types\n\n")
        for k, lo in enumerate("xyz"):
            o.write(f"{a.lo[k]} {a.box[k]} {lo}lo {lo}hi\n")
        o.write("\nAtoms # sphere\n\n")
        for i, (p, rr) in enumerate(zip(x, r)):
            rs = rr - a.shrink
            rho = a.density * (rr / rs) ** 3
            o.write(f"{ids[i] + 1} {2 if fixed[i] else 1} {2 * rs:.17g} {rho:.17g} {p[0]:.17g} {p[1]:.17g} {p[2]:.17g}\n")


if __name__ == "__main__":
    main()
