"""Writes the first frame of a stiffgrain run (spheres) as a LAMMPS data
file for atom_style sphere, ids + 1, for scripts/lammps/pour.in and
drop.in: atom type 1, type 2 for fixed bodies.

    .venv/bin/python scripts/py/lammps_data.py OUT/frames.h5 pack.data --box 0.025 0.025 0.06 --density 2000
    .venv/bin/python scripts/py/lammps_data.py OUT/frames.h5 p20.data --lo -0.025 -0.025 0 --box 0.025 0.025 0.04 --density 2000
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
    a = ap.parse_args()
    with h5py.File(a.frames, "r") as f:
        first = sorted(f["frames"].keys())[0]
        b = f["frames"][first]["bodies"]
        x, r, ids, fixed = b["position"][:], b["radius"][:], b["id"][:], b["fixed"][:]
    with open(a.out, "w") as o:
        o.write(f"stiffgrain {a.frames} frame {first}\n\n{len(x)} atoms\n2 atom types\n\n")
        for k, lo in enumerate("xyz"):
            o.write(f"{a.lo[k]} {a.box[k]} {lo}lo {lo}hi\n")
        o.write("\nAtoms # sphere\n\n")
        for i, (p, rr) in enumerate(zip(x, r)):
            o.write(f"{ids[i] + 1} {2 if fixed[i] else 1} {2 * rr:.17g} {a.density} {p[0]:.17g} {p[1]:.17g} {p[2]:.17g}\n")


if __name__ == "__main__":
    main()
