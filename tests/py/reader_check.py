"""What scripts/py/stiffgrain_reader.py reads from a run of the
18-sphere compression scene of tests/py_reader.rs, as one JSON object
(checked there against the physics and summary.json)."""
import json
import sys
from pathlib import Path

import h5py

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts/py"))
from stiffgrain_reader import Run  # noqa: E402

run = Run(sys.argv[1])
mid, near, last = run.frame(step=15), run.frame(time=0.0151), run.frame(-1)
s, csv, log = run.series(), run.series_csv(), run.log()
nw = len(s["wall_id"])
x, r = last.bodies["position"], last.bodies["radius"]
lo = [0.0, 0.0, float((x[:, 2] - r).min())]
hi = [0.0602, 0.0602, float((x[:, 2] + r).max())]
z0 = float(x[0, 2])  # body 0: the bottom layer
_, _, forces = last.force_distribution()
try:
    run.frame(step=7.5)
    missing = "found"
except KeyError:
    missing = "KeyError"
no_units = []
with h5py.File(run.h5_path, "r") as f:
    f.visititems(lambda n, o: no_units.append(n) if isinstance(o, h5py.Dataset) and "units" not in o.attrs else None)
print(json.dumps({
    "without_units": no_units,
    "steps": run.steps.tolist(),
    "mid": [mid.step, mid.time],
    "near": near.step,
    "missing": missing,
    "series_steps": s["step"].tolist(),
    "wall_id": s["wall_id"].tolist(),
    "wall_force_end": s["wall_force"][-1].tolist(),
    "csv_steps": csv["step"].tolist(),
    "csv_wall_force_end": [[float(csv[f"wall{k}_f{c}"][-1]) for c in "xyz"] for k in range(nw)],
    "log_steps": log["step"].astype(int).tolist(),
    "coordination": last.coordination_number(),
    "coordination_walls": last.coordination_number(walls=True),
    "packing_box": [lo, hi, last.packing_fraction(lo, hi)],
    "packing_half": [z0, last.packing_fraction([0.0, 0.0, z0 - 0.01], [0.0602, 0.0602, z0])],
    "force_over_mean": sorted((forces / forces.mean()).tolist()),
    "units": [last.units["bodies/position"], last.units["contacts/force_normal"], last.units["bodies/velocity"]],
}))
