"""Bodies of one frame of a frames.h5 as a CSV body file for
`[[generate]] kind = "file"` (x, y, z, qw, qx, qy, qz; rows in id order,
velocities left out: the bodies start at rest):

    .venv/bin/python scripts/py/frame_csv.py FRAMES_H5 TIME OUT.csv [COMMENT]

TIME picks the frame nearest to it. Positions are written to 1e-7 m and the
quaternions to 1e-10 (about 100 kB for 1005 bodies); a pack at rest under
the barrier law keeps gaps of ~1e-3 m, far above that rounding.
"""
import sys

import h5py
import numpy as np


def main():
    if len(sys.argv) not in (4, 5):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    path, t, dest = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    with h5py.File(path, "r") as f:
        groups = list(f["frames"].values())
        g = min(groups, key=lambda g: abs(float(g.attrs["time"]) - t))
        b = g["bodies"]
        ids, pos, q = b["id"][()], b["position"][()].reshape(-1, 3), b["orientation"][()].reshape(-1, 4)
        vel = b["velocity"][()].reshape(-1, 3)
        time, step = float(g.attrs["time"]), int(g.attrs["step"])
    order = np.argsort(ids)
    with open(dest, "w") as out:
        out.write(f"# {len(ids)} bodies of {path} at step {step}, t = {time!r} s; largest speed {np.abs(vel).max():.3e} m/s\n")
        if len(sys.argv) == 5:
            out.write(f"# {sys.argv[4]}\n")
        out.write("x,y,z,qw,qx,qy,qz\n")
        for i in order:
            out.write(",".join([f"{v:.7f}" for v in pos[i]] + [f"{v:.10f}" for v in q[i]]) + "\n")
    print(f"{dest}: {len(ids)} bodies at t = {time} (step {step})")


if __name__ == "__main__":
    main()
