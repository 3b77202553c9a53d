#!/usr/bin/env python3
"""Pictures of one stiffgrain run from OUT/frames.h5 (and OUT/summary.json,
OUT/log.txt when present).

usage: plot.py OUT [--frame STEP] [--out DIR] [--plane xz|yz|xy] [--field NAME]

FIELD is the contact column taken as the normal force: by default
force_compatible when the run has it (compatible-cd), else force_normal.
Writes into DIR (default OUT/plots):
  force-network.png   contacts as segments between the two bodies' centres
                      (a wall contact ends at the contact point), width and
                      colour proportional to FIELD, projected on PLANE
  force-histogram.png distribution of FIELD / mean over contacts with f > 0
  floor-pressure.png  contact points under fixed bodies and walls on x-y,
                      coloured by the vertical force they carry
  energy-dt.png       kinetic energy and dt against time over all frames
Prints the written paths, one per line.
"""
import argparse
import json
import math
import os
import sys

import h5py
import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

WALL = 1 << 63
AXES = {"x": 0, "y": 1, "z": 2}


def read_frame(f, name, field=None):
    """A frame's attributes, bodies and contacts; fr["field"] names the
    normal-force column used (`field`, else force_compatible when present,
    else force_normal)."""
    g = f["frames"][name]
    b, c = g["bodies"], g["contacts"]
    fr = {k: v for k, v in g.attrs.items()}
    fr["bodies"] = {k: b[k][()] for k in b.keys() if k in ("id", "shape", "fixed", "position", "velocity", "angular_velocity", "radius")}
    fr["contacts"] = {k: c[k][()] for k in c.keys() if not k.startswith("line_")}
    if field is None:
        field = "force_compatible" if "force_compatible" in c else "force_normal"
    elif field not in c:
        raise KeyError(f"no contact column {field!r} in frame {name} (columns: {', '.join(sorted(fr['contacts']))})")
    fr["field"] = field
    return fr


def normal_force(fr):
    return np.asarray(fr["contacts"][fr["field"]], dtype=float).reshape(-1)


def contact_force_vectors(c, field="force_normal"):
    """Force on body b from body a: the normal force along the a->b normal plus the tangential force."""
    fn = np.asarray(c[field], dtype=float).reshape(-1)
    n = np.asarray(c["normal"], dtype=float).reshape(-1, 3)
    tangent = "force_compatible_tangent" if field == "force_compatible" and "force_compatible_tangent" in c else "force_tangent"
    ft = np.asarray(c.get(tangent, np.zeros((len(fn), 3))), dtype=float).reshape(-1, 3)
    return fn[:, None] * n + ft


def centres(fr, ids):
    """Centres of bodies `ids`; NaN rows for walls or unknown ids."""
    b = fr["bodies"]
    bid = np.asarray(b["id"], dtype=np.uint64)
    pos = np.asarray(b["position"], dtype=float).reshape(-1, 3)
    order = np.argsort(bid)
    sid = bid[order]
    ids = np.asarray(ids, dtype=np.uint64)
    k = np.clip(np.searchsorted(sid, ids), 0, max(len(sid) - 1, 0))
    out = np.full((len(ids), 3), np.nan)
    if len(sid):
        ok = sid[k] == ids
        out[ok] = pos[order[k[ok]]]
    return out


def fixed_mask(fr, ids):
    b = fr["bodies"]
    bid = np.asarray(b["id"], dtype=np.uint64)
    fixed = set(bid[np.asarray(b["fixed"]).astype(bool)].tolist())
    ids = np.asarray(ids, dtype=np.uint64)
    return np.array([(int(i) >= WALL) or (int(i) in fixed) for i in ids], dtype=bool)


def force_network(fr, plane, path, step):
    i, j = AXES[plane[0]], AXES[plane[1]]
    c = fr["contacts"]
    fn = normal_force(fr)
    point = np.asarray(c["point"], dtype=float).reshape(-1, 3)
    pa, pb = centres(fr, c["body_a"]), centres(fr, c["body_b"])
    pa = np.where(np.isnan(pa), point, pa)  # wall (or unknown body): end at the contact point
    pb = np.where(np.isnan(pb), point, pb)
    fig, ax = plt.subplots(figsize=(8, 6), dpi=100)
    pos = np.asarray(fr["bodies"]["position"], dtype=float).reshape(-1, 3)
    rad = np.asarray(fr["bodies"].get("radius", np.zeros(len(pos))), dtype=float)
    fixed = np.asarray(fr["bodies"]["fixed"]).astype(bool)
    for sel, colour, label in ((~fixed, "0.75", "moving body (centre)"), (fixed, "0.3", "fixed body (centre)")):
        if sel.any():
            ax.scatter(pos[sel, i], pos[sel, j], s=4, c=colour, linewidths=0, zorder=1, label=label)
    fmax = float(np.max(np.abs(fn))) if len(fn) else 0.0
    if len(fn) and fmax > 0:
        segs = np.stack([pa[:, [i, j]], pb[:, [i, j]]], axis=1)
        w = 0.2 + 4.0 * np.abs(fn) / fmax
        lc = LineCollection(segs, linewidths=w, cmap="viridis", zorder=2)
        lc.set_array(fn)
        ax.add_collection(lc)
        fig.colorbar(lc, ax=ax, label=f"{fr['field']} [N]")
        note = f"{len(fn)} contacts, max {fmax:.3g} N"
    else:
        note = f"{len(fn)} contacts, no contact force"
    if len(pos):
        pad = float(np.max(rad)) if len(rad) else 0.0
        lo = np.nanmin(np.vstack([pos, point]) if len(point) else pos, axis=0) - pad
        hi = np.nanmax(np.vstack([pos, point]) if len(point) else pos, axis=0) + pad
        ax.set_xlim(lo[i], hi[i] if hi[i] > lo[i] else lo[i] + 1)
        ax.set_ylim(lo[j], hi[j] if hi[j] > lo[j] else lo[j] + 1)
    ax.set_aspect("equal", adjustable="box")
    if len(pos):
        ax.legend(loc="upper right", fontsize=8, markerscale=3)
    ax.set_xlabel(f"{plane[0]} [m]")
    ax.set_ylabel(f"{plane[1]} [m]")
    ax.set_title(f"force network, step {step} (t = {fr.get('time', 0):.4g} s): {note}")
    fig.savefig(path)
    plt.close(fig)


def force_histogram(fr, path, step):
    fn = normal_force(fr)
    pos = fn[fn > 0]
    fig, ax = plt.subplots(figsize=(7, 5), dpi=100)
    if len(pos):
        r = pos / pos.mean()
        ax.hist(r, bins=max(10, min(60, int(math.sqrt(len(r))) + 1)), density=True, color="tab:blue", alpha=0.8)
        if len(r) > 1 and r.max() > r.min():
            ax.set_yscale("log")
        ax.set_title(f"contact forces, step {step} (t = {fr.get('time', 0):.4g} s): {len(pos)} contacts with f > 0, mean {pos.mean():.3g} N")
    else:
        ax.text(0.5, 0.5, f"no contact with {fr['field']} > 0 ({len(fn)} contacts)", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(f"contact forces, step {step} (t = {fr.get('time', 0):.4g} s)")
    ax.set_xlabel(f"{fr['field']} / mean")
    ax.set_ylabel("probability density")
    fig.savefig(path)
    plt.close(fig)


def floor_pressure(fr, summary, up, path, step):
    c = fr["contacts"]
    a, b = np.asarray(c["body_a"], dtype=np.uint64), np.asarray(c["body_b"], dtype=np.uint64)
    fa, fb = fixed_mask(fr, a), fixed_mask(fr, b)
    sel = fa ^ fb  # one side fixed (a fixed body or a wall), the other free
    point = np.asarray(c["point"], dtype=float).reshape(-1, 3)[sel]
    fvec = contact_force_vectors(c, fr["field"])[sel]
    fz = np.abs(fvec[:, AXES[up]])
    h = [k for k in range(3) if k != AXES[up]]
    fig, ax = plt.subplots(figsize=(7, 6), dpi=100)
    if len(point):
        sc = ax.scatter(point[:, h[0]], point[:, h[1]], c=fz, s=30, cmap="inferno_r", edgecolors="k", linewidths=0.2)
        fig.colorbar(sc, ax=ax, label=f"|vertical force| ({up}) [N]")
        ax.set_aspect("equal", adjustable="datalim")
        note = f"{len(point)} support contacts, sum {fz.sum():.4g} N"
    else:
        ax.text(0.5, 0.5, "no contact between a fixed body or wall and a free body", ha="center", va="center", transform=ax.transAxes)
        note = "no support contacts"
    if summary and summary.get("reactions"):
        total = np.sum([r["force"] for r in summary["reactions"]], axis=0)
        note += f"; summary.json reactions sum {up} = {total[AXES[up]]:.4g} N (final step)"
    ax.set_xlabel("xyz"[h[0]])
    ax.set_ylabel("xyz"[h[1]])
    ax.set_title(f"floor pressure, step {step} (t = {fr.get('time', 0):.4g} s)\n{note}", fontsize=9)
    fig.savefig(path)
    plt.close(fig)


def densities(f):
    """Default material density from the config in /meta (spheres of that density)."""
    try:
        import tomllib
        cfg = f["meta"].attrs["config"]
        cfg = cfg.decode() if isinstance(cfg, bytes) else str(cfg)
        mats = tomllib.loads(cfg).get("material", [])
        return float(mats[0]["density"]) if mats else 1.0
    except Exception:
        return 1.0


def read_log(out):
    path = os.path.join(out, "log.txt")
    rows = []
    if os.path.exists(path):
        for line in open(path):
            t = line.split()
            if len(t) >= 6 and t[0].isdigit():
                try:
                    rows.append((float(t[1]), float(t[2]), float(t[5])))
                except ValueError:
                    pass
    return np.array(rows).reshape(-1, 3)


def energy_dt(f, out, path):
    rho = densities(f)
    names = sorted(f["frames"].keys())
    t, dt, ke = [], [], []
    for name in names:
        g = f["frames"][name]
        b = g["bodies"]
        v = b["velocity"][()].reshape(-1, 3)
        w = b["angular_velocity"][()].reshape(-1, 3)
        fixed = b["fixed"][()].astype(bool)
        r = b["radius"][()] if "radius" in b else np.ones(len(v))
        m = rho * 4.0 / 3.0 * math.pi * r**3
        e = 0.5 * m * (v**2).sum(1) + 0.5 * 0.4 * m * r**2 * (w**2).sum(1)
        t.append(float(g.attrs["time"]))
        dt.append(float(g.attrs["dt"]))
        ke.append(float(e[~fixed].sum()))
    log = read_log(out)
    fig, (a1, a2) = plt.subplots(2, 1, sharex=True, figsize=(7, 6), dpi=100)
    if "series" in f and len(f["series/time"]):
        # The run's own kinetic energy at every frame (any shape, any material).
        ke = f["series/kinetic_energy"][()]
        a1.plot(f["series/time"][()], ke, "o-", ms=3, label="frames.h5 /series")
    else:
        a1.plot(t, ke, "o-", ms=3, label="frames.h5 (spheres of the first material's density)")
    if len(log):
        a1.plot(log[:, 0], log[:, 2], "x", ms=4, label="log.txt (solver)")
    if np.all(np.asarray(ke) > 0) and (len(log) == 0 or np.all(log[:, 2] > 0)):
        a1.set_yscale("log")
    a1.set_ylabel("kinetic energy [J]")
    a1.legend(fontsize=8)
    a2.step(t, dt, where="post", marker=".")
    if len(log):
        a2.plot(log[:, 0], log[:, 1], "x", ms=4)
    a2.set_ylabel("dt [s]")
    a2.set_xlabel("time [s]")
    a1.set_title(f"kinetic energy and time step over {len(names)} frames")
    fig.savefig(path)
    plt.close(fig)


def main(argv):
    p = argparse.ArgumentParser(prog="scripts/plot", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="a run's output directory (holds frames.h5) or a frames.h5 file")
    p.add_argument("--frame", type=int, help="step of the frame to draw (default: the last frame)")
    p.add_argument("--out", dest="dest", help="directory for the PNGs (default OUT/plots)")
    p.add_argument("--plane", default="xz", choices=["xz", "yz", "xy", "zx", "zy", "yx"], help="projection of the force network")
    p.add_argument("--up", default="z", choices=["x", "y", "z"], help="vertical axis for the floor map")
    p.add_argument("--field", help="contact column taken as the normal force (default: force_compatible when present, else force_normal)")
    a = p.parse_args(argv)
    out = a.out
    h5 = out if out.endswith(".h5") else os.path.join(out, "frames.h5")
    out = os.path.dirname(h5) or "."
    if not os.path.exists(h5):
        print(f"plot: {h5}: no such file", file=sys.stderr)
        return 2
    dest = a.dest or os.path.join(out, "plots")
    os.makedirs(dest, exist_ok=True)
    summary = None
    if os.path.exists(os.path.join(out, "summary.json")):
        with open(os.path.join(out, "summary.json")) as fh:
            summary = json.load(fh)
    with h5py.File(h5, "r") as f:
        if "frames" not in f or len(f["frames"]) == 0:
            print(f"plot: {h5}: no frames", file=sys.stderr)
            return 2
        names = sorted(f["frames"].keys())
        if a.frame is None:
            name = names[-1]
        else:
            name = f"{a.frame:09d}"
            if name not in f["frames"]:
                print(f"plot: {h5}: no frame at step {a.frame} (frames: {', '.join(str(int(n)) for n in names[:20])}{' ...' if len(names) > 20 else ''})", file=sys.stderr)
                return 2
        try:
            fr = read_frame(f, name, a.field)
        except KeyError as e:
            print(f"plot: {h5}: {e.args[0]}", file=sys.stderr)
            return 2
        step = int(name)
        paths = [os.path.join(dest, n) for n in ("force-network.png", "force-histogram.png", "floor-pressure.png", "energy-dt.png")]
        force_network(fr, a.plane, paths[0], step)
        force_histogram(fr, paths[1], step)
        floor_pressure(fr, summary, a.up, paths[2], step)
        energy_dt(f, out, paths[3])
    for q in paths:
        print(q)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
