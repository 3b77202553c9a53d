#!/usr/bin/env python3
"""Writes a small synthetic OUT/frames.h5 (+ summary.json, log.txt) in the
layout of src/io/frames.rs, with known, varying contact forces: a 2-layer
stack of spheres on a wall (id 2^63) and on fixed base spheres.

usage: synth_frames.py OUT SEED SCALE [permute]

With `permute` the same forces go to other contacts (same count, maximum and
histogram), so only a picture that draws each contact's force can tell.
"""
import json
import os
import sys

import h5py
import numpy as np

WALL = (1 << 63)


def main(out, seed, scale, permute=False):
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    r = 0.005
    # base layer (fixed) 6x6 on z = r, upper layer 5x5 in the hollows
    base = [(i * 2 * r, j * 2 * r, r) for i in range(6) for j in range(6)]
    top = [((i + 0.5) * 2 * r, (j + 0.5) * 2 * r, r + r * np.sqrt(2)) for i in range(5) for j in range(5)]
    pos = np.array(base + top)
    n = len(pos)
    ids = np.arange(n, dtype=np.uint64)
    fixed = np.array([1] * len(base) + [0] * len(top), dtype=np.uint8)
    # contacts: each top sphere on its 4 base neighbours; each base sphere on the wall
    a, b, pts, nrm = [], [], [], []
    for k, p in enumerate(top):
        t = len(base) + k
        i, j = k // 5, k % 5
        for di in (0, 1):
            for dj in (0, 1):
                q = (i + di) * 6 + (j + dj)
                d = pos[t] - pos[q]
                d /= np.linalg.norm(d)
                a.append(q)
                b.append(t)
                pts.append(pos[q] + r * d)
                nrm.append(d)
    for q in range(len(base)):
        a.append(q)
        b.append(WALL)
        pts.append(pos[q] - [0, 0, r])
        nrm.append([0.0, 0.0, -1.0])
    nc = len(a)
    config = '[simulation]\nsolver = "cd"\ndt = 0.001\n[[material]]\nname = "glass"\ndensity = 2500.0\n'
    with h5py.File(os.path.join(out, "frames.h5"), "w") as f:
        m = f.create_group("meta")
        m.attrs["version"] = "synthetic"
        m.attrs["solver"] = "cd"
        m.attrs["dim"] = 3
        m.attrs["n_ranks"] = 1
        m.attrs["config"] = config
        s = f.create_group("shapes/0")
        s.attrs["kind"] = "sphere"
        s.attrs["name"] = "bead"
        s.attrs["radius"] = r
        for step in (0, 10, 20, 30):
            g = f.create_group(f"frames/{step:09d}")
            dt = 1e-3 * (1.0 + 0.5 * (step // 10))
            g.attrs["time"] = step * 1e-3
            g.attrs["step"] = np.uint64(step)
            g.attrs["dt"] = dt
            bd = g.create_group("bodies")
            bd["id"] = ids
            bd["shape"] = np.zeros(n, dtype=np.uint32)
            bd["fixed"] = fixed
            bd["position"] = pos
            q = np.zeros((n, 4)); q[:, 0] = 1
            bd["orientation"] = q
            v = rng.normal(0, 0.1 * scale / (1 + step), (n, 3)) * (1 - fixed[:, None])
            bd["velocity"] = v
            bd["angular_velocity"] = rng.normal(0, 1.0, (n, 3)) * (1 - fixed[:, None])
            bd["radius"] = np.full(n, r)
            c = g.create_group("contacts")
            c["body_a"] = np.array(a, dtype=np.uint64)
            c["body_b"] = np.array(b, dtype=np.uint64)
            c["point"] = np.array(pts)
            c["normal"] = np.array(nrm)
            c["gap"] = np.zeros(nc)
            fn = scale * rng.exponential(1.0, nc) * (1 + step / 30)
            if permute:
                fn = np.random.default_rng(99).permutation(fn)
            c["force_normal"] = fn
            c["force_tangent"] = np.zeros((nc, 3))
    summary = {"steps": 30, "bodies": n, "contacts": nc, "wall_time": 1.0, "ranks": 1,
               "phases": {"solve": [0.5, 0.5, 0.5]},
               "reactions": [{"body": WALL, "force": [0.0, 0.0, float(scale * 10)]}]}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), len(sys.argv) > 4 and sys.argv[4] == "permute")
