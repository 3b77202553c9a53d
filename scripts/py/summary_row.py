#!/usr/bin/env python3
"""Append one scaling row from a run's summary.json to a CSV.

usage: summary_row.py SUMMARY_JSON CSV [RANKS]

Columns: ranks,bodies,contacts,steps,wall_per_step, then for every phase the
mean over ranks of its seconds per step (<phase>), then the max over ranks
(<phase>_max: load imbalance shows as max > mean). The header is written when
the CSV is new; an existing CSV keeps its column order (missing phases -> 0).
Only the standard library: runs with any python3 (a cluster's or the venv's).
"""
import csv
import json
import os
import sys

# The phase order of src/timers.rs; phases a newer binary adds go after them.
KNOWN = ["migration", "ghost_exchange", "broad_phase", "narrow_phase", "assembly", "solve", "compatibility", "output"]


def row_for(summary, ranks=None):
    steps = int(summary["steps"])
    per = max(steps, 1)
    phases = summary.get("phases", {})
    row = {
        "ranks": int(ranks) if ranks is not None else int(summary.get("ranks", 0)),
        "bodies": int(summary["bodies"]),
        "contacts": int(summary["contacts"]),
        "steps": steps,
        "wall_per_step": float(summary["wall_time"]) / per,
    }
    for name, (_mn, mean, mx) in phases.items():
        row[name] = mean / per
        row[name + "_max"] = mx / per
    return row, list(phases)


def header_for(phase_names):
    names = KNOWN + sorted(set(phase_names) - set(KNOWN))
    return ["ranks", "bodies", "contacts", "steps", "wall_per_step"] + names + [n + "_max" for n in names]


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        summary = json.load(f)
    row, phase_names = row_for(summary, argv[3] if len(argv) == 4 else None)
    path = argv[2]
    if os.path.exists(path) and os.path.getsize(path) > 0:
        with open(path, newline="") as f:
            header = next(csv.reader(f))
        new = False
    else:
        header = header_for(phase_names)
        new = True
    unknown = [k for k in row if k not in header]
    if unknown:
        print(f"summary_row: {path}: no column for {', '.join(unknown)} (kept the existing header)", file=sys.stderr)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(header)
        w.writerow([fmt(row.get(k, 0.0)) for k in header])
    return 0


def fmt(v):
    return str(v) if isinstance(v, int) else f"{v:.6e}"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
