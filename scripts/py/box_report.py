"""Time histories of a box benchmark (configs/box-*.toml, gay-neto-wriggers
§3.5-3.6): active contacts (body-body, body-wall; the paper's Figs. 26 and
29), Δt (Fig. 31), kinetic energy (Fig. 30) and wall time against simulated
time, from a run's log.txt (thermo lines) and frames.h5.

    .venv/bin/python scripts/py/box_report.py OUT_DIR[,OUT_DIR...] GBAR NAME [UNTIL[,...]] [--collapse]

(several output directories: the segments of a run restarted from its
checkpoints, in order; wall time is summed over them) writes benchmarks/boxes/NAME.csv (one row per frame) and NAME.png; UNTIL
(the wall removal time) is marked on the plots; several comma-separated
times mark the stages of a run (dotted), the last one the wall removal.
--collapse also draws NAME-collapse.png: the histories from the last
UNTIL on, against the time since it (as the paper's Figs. 29-31), with
the wall time of the collapse alone.
"""
import sys
from pathlib import Path

import h5py
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WALL = 1 << 63


def thermo(log):
    """(step, time, dt, contacts, kinetic energy, wall) of every thermo line.
    Each restart starts its wall time from zero (logs of earlier versions
    also repeat the header): the wall time is summed over the segments, and
    the lines a restart repeats (from its checkpoint on) replace the
    earlier ones."""
    rows, offset, last = [], 0.0, 0.0
    for line in Path(log).read_text().splitlines():
        f = line.split()
        if len(f) == 9 and f[0].isdigit():
            try:
                r = (int(f[0]), float(f[1]), float(f[2]), int(f[4]), float(f[5]), float(f[7]))
            except ValueError:
                continue
            if r[5] < last:  # a new segment: its wall clock restarted
                offset, last = offset + last, 0.0
            last = r[5]
            r = r[:5] + (r[5] + offset,)
            while rows and rows[-1][1] >= r[1]:
                rows.pop()
            rows.append(r)
    return rows


def frames(path, gbar):
    """(step, time, listed, active body-body, active body-wall, the shape of
    the pack: highest and mean centre z, largest and 90th-percentile
    horizontal distance of a centre from the z axis) per frame."""
    out = []
    with h5py.File(path, "r") as f:
        for name, g in f["frames"].items():
            c = g["contacts"]
            gap, b = c["gap"][()], c["body_b"][()]
            act = (gap < gbar) & (gap > 0)
            p = g["bodies"]["position"][()].reshape(-1, 3)
            r = np.hypot(p[:, 0], p[:, 1])
            out.append((int(g.attrs["step"]), float(g.attrs["time"]), len(gap),
                        int((act & (b < WALL)).sum()), int((act & (b >= WALL)).sum()),
                        float(p[:, 2].max()), float(p[:, 2].mean()), float(r.max()), float(np.percentile(r, 90))))
    return sorted(out, key=lambda r: r[1])


def draw_collapse(dest, name, gbar, until, fr, th):
    """NAME-collapse.png: the histories after `until`, against t - until."""
    before = [r[5] for r in th if r[1] <= until + 1e-9]
    fr = [r for r in fr if r[1] >= until - 1e-9]
    th = [r for r in th if r[1] > until + 1e-9]
    if not fr or not th:
        return
    # wall time from the last thermo line at or before the removal
    wall0 = before[-1] if before else th[0][5]
    fig, ax = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    t = [r[1] - until for r in fr]
    ax[0, 0].plot(t, [r[3] for r in fr], label="body-body")
    ax[0, 0].plot(t, [r[4] for r in fr], label="body-ground")
    ax[0, 0].set_ylabel(f"active contacts (gap < {gbar:g} m)")
    ax[0, 0].legend()
    tt = [r[1] - until for r in th]
    ax[0, 1].semilogy(tt, [r[2] for r in th], ".", ms=2)
    ax[0, 1].set_ylabel("Δt [s] (thermo lines)")
    ax[1, 0].semilogy(tt, [max(r[4], 1e-12) for r in th])
    ax[1, 0].set_ylabel("kinetic energy [J]")
    ax[1, 1].plot(tt, [(r[5] - wall0) / 60 for r in th])
    ax[1, 1].set_ylabel("wall time of the collapse [min]")
    for a in ax.flat:
        a.grid(alpha=0.3)
    for a in ax[1]:
        a.set_xlabel(f"time since the side walls were removed (t - {until:g} s) [s]")
    fig.suptitle(f"{name}: collapse")
    fig.tight_layout()
    fig.savefig(dest / f"{name}-collapse.png", dpi=110)


def main():
    args = [a for a in sys.argv[1:] if a != "--collapse"]
    collapse = len(args) < len(sys.argv) - 1
    if len(args) not in (3, 4):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    outs, gbar, name = [Path(p) for p in args[0].split(",")], float(args[1]), args[2]
    marks = [float(x) for x in args[3].split(",")] if len(args) == 4 else []
    until = marks[-1] if marks else None
    th, fr, wall0 = [], [], 0.0
    for out in outs:
        seg = thermo(out / "log.txt")
        th += [r[:5] + (r[5] + wall0,) for r in seg]
        wall0 = th[-1][5] if th else 0.0
        fr += frames(out / "frames.h5", gbar)
    fr.sort(key=lambda r: r[1])
    dest = Path("benchmarks/boxes")
    dest.mkdir(parents=True, exist_ok=True)
    with open(dest / f"{name}.csv", "w") as f:
        f.write("step,time,listed,active_body_body,active_body_wall,z_top,z_mean,r_max,r_90\n")
        for r in fr:
            f.write(",".join(str(v) for v in r) + "\n")
    fig, ax = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    t = [r[1] for r in fr]
    ax[0, 0].plot(t, [r[3] for r in fr], label="body-body")
    ax[0, 0].plot(t, [r[4] for r in fr], label="body-wall")
    ax[0, 0].set_ylabel(f"active contacts (gap < {gbar:g} m)")
    ax[0, 0].legend()
    tt = [r[1] for r in th]
    ax[0, 1].semilogy(tt, [r[2] for r in th], ".", ms=2)
    ax[0, 1].set_ylabel("Δt [s] (thermo lines)")
    ax[1, 0].semilogy(tt, [max(r[4], 1e-12) for r in th])
    ax[1, 0].set_ylabel("kinetic energy [J]")
    ax[1, 1].plot(tt, [r[5] / 60 for r in th])
    ax[1, 1].set_ylabel("wall time [min]")
    for a in ax.flat:
        for m in marks[:-1]:
            a.axvline(m, color="k", lw=0.6, ls=":")
        if until is not None:
            a.axvline(until, color="k", lw=0.8, ls="--")
        a.grid(alpha=0.3)
    for a in ax[1]:
        a.set_xlabel("simulated time [s]")
    fig.suptitle(f"{name}" + (f" (side walls removed at {until:g} s)" if until is not None else ""))
    fig.tight_layout()
    fig.savefig(dest / f"{name}.png", dpi=110)
    if collapse and until is not None:
        draw_collapse(dest, name, gbar, until, fr, th)
    last = th[-1] if th else None
    print(f"{name}: {len(fr)} frames, {len(th)} thermo lines; last: step {last[0]}, t = {last[1]}, wall {last[5]:.0f} s" if last else name)


if __name__ == "__main__":
    main()
