"""Read a stiffgrain run into numpy arrays: frames by step or time, bodies,
contacts, walls, the time series, and the measures granular-mechanics users
ask for (coordination number, packing fraction in a box, the contact force
distribution). Needs h5py and numpy (the venv of scripts/py/venv.sh).

    import sys; sys.path.insert(0, "scripts/py")
    from stiffgrain_reader import Run

    run = Run("OUT")                     # a run directory (or its frames.h5)
    run.steps, run.times                 # every frame's step and time (s)
    fr = run.frame(step=100)             # or run.frame(time=0.1), run.frame(-1)
    fr.bodies["position"]                # N×3, m, sorted by id
    fr.contacts["force_normal"]          # N, one row per contact
    fr.force()                           # force_compatible when present, else force_normal
    fr.coordination_number()
    fr.packing_fraction(lo, hi)
    s = run.series()                     # /series: a row per frame
    s["wall_force"][-1]                  # walls×3, N: the reactions at the end

Units are SI (each dataset's `units` attribute says which). Conventions
(docs/src/output.md): a wall is always body_b, with id 2**63 + its index
in the config's [[wall]] list; the normal points from a to b; the force on
b is force_normal * normal + force_tangent, on a its opposite; a wall's
reaction is the force the bodies exert on it.
"""
import csv
import json
import math
import os

import h5py
import numpy as np

WALL_ID_BASE = 1 << 63

__all__ = ["Run", "Frame", "WALL_ID_BASE"]


def _decode(v):
    return v.decode() if isinstance(v, bytes) else v


class Run:
    """A run directory: frames.h5, and log.txt, series.csv, summary.json
    beside it when present."""

    def __init__(self, path):
        path = os.fspath(path)
        if os.path.isdir(path):
            self.dir, self.h5_path = path, os.path.join(path, "frames.h5")
        else:
            self.dir, self.h5_path = os.path.dirname(path) or ".", path
        if not os.path.exists(self.h5_path):
            raise FileNotFoundError(f"{self.h5_path}: no frames.h5 (is {path} a stiffgrain output directory?)")
        with h5py.File(self.h5_path, "r") as f:
            self.meta = {k: _decode(v) for k, v in f["meta"].attrs.items()}
            self._names = sorted(f["frames"], key=int)
            self.steps = np.array([int(n) for n in self._names], dtype=np.int64)
            self.times = np.array([float(f["frames"][n].attrs["time"]) for n in self._names])
            self.shapes = []
            for k in sorted(f["shapes"], key=int):
                g = f["shapes"][k]
                s = {a: _decode(v) for a, v in g.attrs.items()}
                for d in g:
                    s[d] = g[d][()]
                self.shapes.append(s)

    def __len__(self):
        return len(self._names)

    def __repr__(self):
        return f"Run({self.dir!r}: {len(self)} frames, steps {self.steps[:1]}..{self.steps[-1:]}, solver {self.meta.get('solver')})"

    @property
    def solver(self):
        return self.meta.get("solver")

    def frame(self, index=None, *, step=None, time=None):
        """One frame: by position in the run (`run.frame(-1)`: the last),
        by `step` (exactly that step; KeyError otherwise) or by `time` (the
        frame nearest that time, in s)."""
        if sum(x is not None for x in (index, step, time)) != 1:
            raise ValueError("give exactly one of index, step=, time=")
        if step is not None:
            k = np.searchsorted(self.steps, step)
            if k == len(self.steps) or self.steps[k] != step:
                raise KeyError(f"no frame at step {step} (frames at steps {self.steps.min()}..{self.steps.max()})")
        elif time is not None:
            k = int(np.argmin(np.abs(self.times - time)))
        else:
            k = range(len(self))[index]
        with h5py.File(self.h5_path, "r") as f:
            return Frame(f["frames"][self._names[k]], self.shapes)

    def frames(self):
        """Every frame, in time order."""
        for k in range(len(self)):
            yield self.frame(k)

    def series(self):
        """/series of frames.h5 (a row per frame) as a dict of arrays:
        step, time (s), dt (s), kinetic_energy (J), contacts, and, with
        walls, wall_force and wall_position (rows × walls × 3: N, m),
        wall_id and wall_normal (walls × 3); the lab measurements box_lo,
        box_hi (rows × 3, m), volume, solid_fraction, coordination,
        coordination_backbone, rattler_fraction, pressure (Pa),
        stress_ratio, inertial_number, stress and fabric (rows × 3 × 3)."""
        with h5py.File(self.h5_path, "r") as f:
            if "series" not in f:
                raise KeyError(f"{self.h5_path}: no /series (written by an earlier version)")
            return {k: v[()] for k, v in f["series"].items()}

    def series_csv(self):
        """series.csv (a row per thermo line) as a dict of column arrays."""
        return _read_csv(os.path.join(self.dir, "series.csv"))

    def log(self):
        """log.txt's thermo lines as a dict of column arrays (step, time,
        dt, bodies, contacts, kinetic_energy, iters, wall, left)."""
        path = os.path.join(self.dir, "log.txt")
        a = np.loadtxt(path, ndmin=2)
        names = ["step", "time", "dt", "bodies", "contacts", "kinetic_energy", "iters", "wall", "left"]
        return {n: a[:, k] for k, n in enumerate(names)}

    def summary(self):
        """summary.json (written at the end of a run)."""
        with open(os.path.join(self.dir, "summary.json")) as fh:
            return json.load(fh)


def _read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    out = {}
    for k, name in enumerate(header):
        col = [r[k] for r in body]
        out[name] = np.array(col, dtype=np.int64 if name in ("step", "contacts") else float)
    return out


class Frame:
    """One frame: attributes step, time (s), dt (s); dicts of arrays
    `bodies`, `contacts`, `walls` (every dataset of the frame's groups)."""

    def __init__(self, g, shapes):
        self.step = int(g.attrs["step"])
        self.time = float(g.attrs["time"])
        self.dt = float(g.attrs["dt"])
        self.shapes = shapes
        self.bodies = {k: v[()] for k, v in g["bodies"].items()}
        self.contacts = {k: v[()] for k, v in g["contacts"].items()} if "contacts" in g else {}
        self.walls = {k: v[()] for k, v in g["walls"].items()} if "walls" in g else {}
        self.units = {f"{grp}/{k}": _decode(v.attrs.get("units", "")) for grp in ("bodies", "contacts", "walls") if grp in g for k, v in g[grp].items()}

    def __repr__(self):
        return f"Frame(step {self.step}, t = {self.time:g} s: {self.n_bodies} bodies, {self.n_contacts} contacts)"

    @property
    def n_bodies(self):
        return len(self.bodies["id"])

    @property
    def n_contacts(self):
        return len(self.contacts.get("body_a", ()))

    def body_index(self, ids):
        """Rows in `bodies` of body ids `ids` (-1 for walls and unknown ids)."""
        bid = self.bodies["id"]
        ids = np.asarray(ids, dtype=np.uint64)
        k = np.clip(np.searchsorted(bid, ids), 0, max(len(bid) - 1, 0))
        ok = (bid[k] == ids) if len(bid) else np.zeros(len(ids), bool)
        return np.where(ok, k, -1)

    def force_field(self, field=None):
        """Name of the normal-force column pictures and measures use:
        `field` when given, else force_compatible when the frame has it
        (compatible-cd), else force_normal."""
        if field is not None:
            if field not in self.contacts:
                raise KeyError(f"no contact column {field!r} (columns: {', '.join(sorted(self.contacts))})")
            return field
        return "force_compatible" if "force_compatible" in self.contacts else "force_normal"

    def force(self, field=None):
        """The normal force of every contact (N), from `force_field(field)`."""
        return np.asarray(self.contacts[self.force_field(field)], dtype=float).reshape(-1)

    def force_vectors(self, field=None):
        """Force on body b of every contact (N, Nc×3): normal force along
        the a→b normal plus the tangential force (force_compatible_tangent
        with the compatible normal force); body a feels the opposite."""
        n = np.asarray(self.contacts["normal"], dtype=float).reshape(-1, 3)
        tangent = "force_compatible_tangent" if self.force_field(field) == "force_compatible" and "force_compatible_tangent" in self.contacts else "force_tangent"
        ft = np.asarray(self.contacts.get(tangent, np.zeros_like(n)), dtype=float).reshape(-1, 3)
        return self.force(field)[:, None] * n + ft

    def is_wall(self):
        """Per contact: body b is a wall."""
        return np.asarray(self.contacts["body_b"], dtype=np.uint64) >= WALL_ID_BASE

    def _carrying(self, field, min_force):
        f = self.force(field)
        if min_force is None:
            # The solvers' tolerance leaves tiny forces on idle contacts.
            min_force = 1e-9 * (np.abs(f).max() if len(f) else 0.0)
        return f > min_force

    def coordination_number(self, walls=False, min_force=None, field=None, exclude_fixed=True):
        """Mean number of force-carrying contacts per moving body: each
        body–body contact counts for both of its bodies; with `walls`, a
        contact with a wall or a fixed body counts for the moving body.
        A contact carries force when its normal force exceeds `min_force`
        (default: 1e-9 of the frame's largest). Fixed bodies are left out
        of the average unless `exclude_fixed` is False."""
        a = self.body_index(self.contacts["body_a"])
        b = self.body_index(self.contacts["body_b"])
        fixed = self.bodies["fixed"].astype(bool)
        on = self._carrying(field, min_force)
        count = np.zeros(self.n_bodies)
        anchor = lambda j: (j < 0) | fixed[np.maximum(j, 0)]  # noqa: E731  a wall or a fixed body
        for i, j in ((a, b), (b, a)):
            use = on & (i >= 0) & (walls | ~anchor(j))
            np.add.at(count, i[use], 1)
        members = ~fixed if exclude_fixed else np.ones(self.n_bodies, bool)
        return float(count[members].mean()) if members.any() else float("nan")

    def volumes(self):
        """Volume of every body (m³): spheres 4/3 π r³, meshes from their
        closed surface (the shape's vertices and triangles)."""
        vol = np.empty(self.n_bodies)
        per_shape = [_shape_volume(s) for s in self.shapes]
        for k, v in enumerate(per_shape):
            vol[self.bodies["shape"] == k] = v
        return vol

    def packing_fraction(self, lo, hi, resolution=24):
        """Solid volume fraction in the axis-aligned box [lo, hi] (m).
        A sphere is clipped to the box (its part inside estimated on a
        grid of `resolution` points across its diameter, exact when it
        lies wholly in or out); a mesh body counts wholly when its centre
        is in the box."""
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        box = float(np.prod(hi - lo))
        if box <= 0:
            raise ValueError(f"empty box {lo} .. {hi}")
        x = np.asarray(self.bodies["position"], float).reshape(-1, 3)
        r = np.asarray(self.bodies["radius"], float)
        vol = self.volumes()
        sphere = np.array([self.shapes[s].get("kind") == "sphere" for s in self.bodies["shape"]], bool)
        inside = np.all((x - r[:, None] >= lo) & (x + r[:, None] <= hi), axis=1)
        outside = np.any((x + r[:, None] <= lo) | (x - r[:, None] >= hi), axis=1)
        solid = vol[sphere & inside].sum()
        centre_in = np.all((x >= lo) & (x < hi), axis=1)
        solid += vol[~sphere & centre_in].sum()
        cut = np.flatnonzero(sphere & ~inside & ~outside)
        if len(cut):
            u = (np.arange(resolution) + 0.5) / resolution * 2 - 1
            g = np.stack(np.meshgrid(u, u, u, indexing="ij"), -1).reshape(-1, 3)
            g = g[(g**2).sum(1) <= 1]
            for i in cut:
                p = x[i] + r[i] * g
                solid += vol[i] * np.all((p >= lo) & (p <= hi), axis=1).mean()
        return float(solid / box)

    def force_distribution(self, bins=20, field=None, min_force=None, walls=True):
        """The contact force distribution: (f/<f>, P) with P the
        probability density of the normal force over its mean, over the
        force-carrying contacts (`min_force` as in coordination_number;
        without walls, contacts with a wall left out). Returns also the
        forces: (centres, density, forces)."""
        on = self._carrying(field, min_force)
        if not walls:
            on &= ~self.is_wall()
        f = self.force(field)[on]
        if len(f) == 0:
            return np.array([]), np.array([]), f
        x = f / f.mean()
        density, edges = np.histogram(x, bins=bins, density=True)
        return 0.5 * (edges[1:] + edges[:-1]), density, f


def _shape_volume(s):
    if s.get("kind") == "sphere":
        return 4.0 / 3.0 * math.pi * float(s["radius"]) ** 3
    v = np.asarray(s["vertices"], float).reshape(-1, 3)
    t = np.asarray(s["triangles"], np.int64).reshape(-1, 3)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    return float(abs(np.einsum("ij,ij->i", a, np.cross(b, c)).sum()) / 6.0)
