"""Side and top views of a tetrapod pack at a few times (the paper's
Figs. 27-28 for the box of tetrapods, §3.6), each tetrapod drawn as its
four arms (lines from the centre to the tips), without ParaView:

    .venv/bin/python scripts/py/tetrapod_views.py FRAMES_H5 ARM_LENGTH OUT.png T1 [T2 ...]

One column per time (the frame nearest to it): a lateral view (x-z, above)
and a top view (x-y, below), with the extent of the pack written under
each. Arm directions: the built-in tetrapod's (src/body/mesh.rs).
"""
import sys

import h5py
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

ARMS = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3.0)


def rotate(q, v):
    """Rotates the rows of v by the unit quaternions q (w, x, y, z), row by row."""
    w, u = q[:, :1], q[:, 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def frame_near(f, t):
    g = min(f["frames"].values(), key=lambda g: abs(float(g.attrs["time"]) - t))
    b = g["bodies"]
    return float(g.attrs["time"]), b["position"][()].reshape(-1, 3), b["orientation"][()].reshape(-1, 4)


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    path, arm, dest, times = sys.argv[1], float(sys.argv[2]), sys.argv[3], [float(x) for x in sys.argv[4:]]
    with h5py.File(path, "r") as f:
        snaps = [frame_near(f, t) for t in times]
    allp = np.vstack([p for _, p, _ in snaps])
    span = np.abs(allp[:, :2]).max() + arm
    ztop = allp[:, 2].max() + arm
    fig, ax = plt.subplots(2, len(snaps), figsize=(4.2 * len(snaps), 8.4), squeeze=False,
                           gridspec_kw={"height_ratios": [max(ztop, 1.0), 2 * span]})
    for k, (t, p, q) in enumerate(snaps):
        segs = []
        for d in ARMS:
            tip = p + arm * rotate(q, np.repeat(d[None, :], len(p), axis=0))
            segs.append(np.stack([p, tip], axis=1))
        segs = np.concatenate(segs)
        for row, (i, j) in enumerate([(0, 2), (0, 1)]):
            a = ax[row, k]
            a.add_collection(LineCollection(segs[:, :, [i, j]], linewidths=0.6, colors="0.25"))
            a.set_xlim(-span, span)
            a.set_ylim((0, ztop) if row == 0 else (-span, span))
            a.set_aspect("equal")
            a.grid(alpha=0.3)
            a.set_xlabel("x [m]")
            a.set_ylabel("z [m]" if row == 0 else "y [m]")
        r = np.hypot(p[:, 0], p[:, 1])
        ax[0, k].set_title(f"t = {t:.2f} s")
        ax[1, k].set_title(f"centres: z ≤ {p[:, 2].max():.2f} m, |x|,|y| ≤ {np.abs(p[:, :2]).max():.2f} m,\n"
                           f"r ≤ {r.max():.2f} m (90 %: {np.percentile(r, 90):.2f} m)", fontsize=8)
    fig.tight_layout()
    fig.savefig(dest, dpi=110)
    print(f"{dest}: {len(snaps)} frames at t = {[round(s[0], 3) for s in snaps]}")


if __name__ == "__main__":
    main()
