"""Writes the first frame of a stiffgrain run (spheres) as a LAMMPS data
file for atom_style sphere, ids + 1, for scripts/lammps/pour.in:

    .venv/bin/python scripts/py/lammps_data.py OUT/frames.h5 pack.data --box 0.025 0.025 0.06 --density 2000
"""
import argparse

import h5py


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("frames")
    ap.add_argument("out")
    ap.add_argument("--box", type=float, nargs=3, required=True, metavar=("LX", "LY", "LZ"))
    ap.add_argument("--density", type=float, required=True)
    a = ap.parse_args()
    with h5py.File(a.frames, "r") as f:
        first = sorted(f["frames"].keys())[0]
        b = f["frames"][first]["bodies"]
        x, r, ids = b["position"][:], b["radius"][:], b["id"][:]
    with open(a.out, "w") as o:
        o.write(f"stiffgrain {a.frames} frame {first}\n\n{len(x)} atoms\n1 atom types\n\n")
        for k, lo in enumerate("xyz"):
            o.write(f"0.0 {a.box[k]} {lo}lo {lo}hi\n")
        o.write("\nAtoms # sphere\n\n")
        for i, (p, rr) in enumerate(zip(x, r)):
            o.write(f"{ids[i] + 1} 1 {2 * rr:.17g} {a.density} {p[0]:.17g} {p[1]:.17g} {p[2]:.17g}\n")


if __name__ == "__main__":
    main()
