#!/usr/bin/env python3
"""Lab-test validation: the isotropic compressions and the frictionless
shear of the lab configs against the published values (Agnolin & Roux
2007; Peyneau & Roux 2008), as the "Lab tests" section of VALIDATION.md.

usage: lab_validate.py [--iso0 OUT] [--iso03 OUT] [--shear OUT [OUT ...]]
                       [--margin D] [--notes FILE] [--report VALIDATION.md] [--print]
       lab_validate.py --le OUT [OUT ...] [--report VALIDATION.md] [--print]
       lab_validate.py --check OUT

--iso0 and --iso03 take finished runs of
configs/lab-compression-frictionless.toml and lab-compression-mu03.toml.
Besides the run's own measurements (its last
frame, summary.json `measures`), the pack is measured again from the last
frame of frames.h5 in a core box, the walls' cell shrunk by `--margin`
diameters on each side: walls order the first layers of beads and lower
the solid fraction next to them, while the papers' packs are periodic.
The core's solid fraction is the volume of the spheres inside it (cut
spheres by their share inside), not of the spheres whose centres are.
The backbone is found over the whole pack (rattlers: fewer force-carrying
contacts than the config's `measure.rattler_contacts`, removed until none
is left) and its coordination averaged over the backbone beads of the
core. Error bars of the core values: the standard error over its eight
octants.

--shear takes finished runs of configs/lab-shear-frictionless.toml (rigid
simple shear at a controlled normal stress under cd, one target stress per
run): their steady states (second half of the strain, mean ± standard
deviation of the frames) and the normal stress each cell held, as its own
subsection.

--le takes finished runs of configs/lab-shear-le-frictionless.toml or
lab-shear-le-mu05.toml (rigid simple shear at constant volume under cd,
one solid fraction per run): their steady states (second half of the
strain) give the rheology μ(I), Φ(I), fitted by μ = μ* + a I^α and
Φ = Φ_c − b I^β (each exponent scanned, the other two parameters by least
squares) and extrapolated to the quasi-static limit I → 0. Runs are
grouped by their friction (from the configuration in frames.h5), one
subsection of "## Lab tests" per coefficient, which it writes (or
replaces); runs of lab-shear-le-mu05-dem.toml (the implicit DEM) are set
beside cd's laws at their own inertial number.

Writes (or replaces) the section "## Lab tests" of the report, keeping the
rest (and its shear subsections); with --print only prints it. --check OUT compares a run's own
measurements (stress, coordination, solid fraction of /series) with an
independent sum over the bodies and contacts of one of its frames.
"""
import argparse
import json
import os
import re
import sys

import h5py
from validate import machine
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WALL_ID_BASE = 1 << 63
FORCE_CARRYING = 1e-9  # src/lab.rs FORCE_CARRYING
RCP = 0.639  # random close packing of equal spheres, [AR]


def fail(message):
    """One line on stderr and exit status 2 (bad input)."""
    print(message, file=sys.stderr)
    sys.exit(2)


AGNOLIN = ("I. Agnolin and J.-N. Roux, Internal states of model isotropic granular packings. "
           "I. Assembling process, geometry, and contact networks, Phys. Rev. E 76, 061302 (2007)")
PEYNEAU = ("P.-E. Peyneau and J.-N. Roux, Frictionless bead packs have macroscopic friction, "
           "but no dilatancy, Phys. Rev. E 78, 011307 (2008)")


def summary(out):
    path = os.path.join(out, "summary.json")
    if not os.path.isfile(path):
        fail(f"{path}: not found (the run did not finish, or {out} is not a run's output directory)")
    with open(path) as fh:
        return json.load(fh)


def last_frame(out):
    with h5py.File(os.path.join(out, "frames.h5"), "r") as f:
        key = sorted(f["frames"])[-1]
        g = f["frames"][key]
        b, c = g["bodies"], g["contacts"]
        return {
            "time": float(g.attrs["time"]),
            "id": b["id"][()], "position": b["position"][()], "radius": b["radius"][()], "fixed": b["fixed"][()],
            "a": c["body_a"][()], "b": c["body_b"][()], "f_n": c["force_normal"][()], "gap": c["gap"][()],
        }


def series(out):
    with h5py.File(os.path.join(out, "frames.h5"), "r") as f:
        return {k: v[()] for k, v in f["series"].items()}


def backbone(frame, k):
    """Backbone ends per free body: force-carrying contacts, rattlers (< k
    ends to bodies still there or to a wall) removed until none is left."""
    free = {int(i) for i, fx in zip(frame["id"], frame["fixed"]) if not fx}
    f_n = frame["f_n"]
    carrying = f_n > FORCE_CARRYING * (np.abs(f_n).max() if len(f_n) else 0.0)
    partners = {i: [] for i in free}
    for a, b in zip(frame["a"][carrying], frame["b"][carrying]):
        a, b = int(a), int(b)
        a_free, b_free = a in free, b in free
        if a_free:
            partners[a].append(b if b_free else -1)
        if b_free:
            partners[b].append(a if a_free else -1)
    alive = dict(partners)
    while True:
        gone = [i for i, p in alive.items() if len(p) < k]
        if not gone:
            break
        for i in gone:
            for p in alive.pop(i):
                if p in alive:
                    alive[p].remove(i)
    return {i: len(p) for i, p in alive.items()}


def q6_mean(pos, d, inside):
    """Mean local bond order q6 (Steinhardt) of the beads `inside`, over
    their neighbours closer than 1.2 d: about 0.575 for a perfect FCC crystal,
    0.485 for HCP, lower for amorphous packs. By the addition theorem,
    q6² = Σ_jk P6(n_j · n_k) / N² over a bead's N bond directions n_j."""
    p6 = np.polynomial.legendre.Legendre.basis(6)
    q6 = []
    for i in np.where(inside)[0]:
        v = pos - pos[i]
        r = np.linalg.norm(v, axis=1)
        n = v[(r > 0.0) & (r < 1.2 * d)] / r[(r > 0.0) & (r < 1.2 * d), None]
        if len(n) >= 4:
            q6.append(np.sqrt(max(p6(np.clip(n @ n.T, -1.0, 1.0)).sum(), 0.0)) / len(n))
    return float(np.mean(q6)) if q6 else float("nan")


# Points filling the unit ball evenly (a fixed draw): the share of a
# sphere inside a box.
_BALL = np.random.default_rng(12345).normal(size=(20000, 3))
_BALL *= (np.random.default_rng(54321).uniform(0.0, 1.0, len(_BALL)) ** (1.0 / 3.0) / np.linalg.norm(_BALL, axis=1))[:, None]


def volume_inside(pos, rad, lo, hi):
    """The volume of the spheres inside the box [lo, hi): whole spheres
    exactly, those cut by a face by the share of 20,000 fixed points of the
    ball inside it. Counting the spheres whose centres lie inside instead
    is biased near walls, whose layers of beads put density peaks just
    inside a core box's faces (2 diameters from the walls: +0.024 on the
    pack of configs/lab-compression-dense-frictionless.toml)."""
    total = 0.0
    for p, r in zip(pos, rad):
        if np.any(p - r >= hi) or np.any(p + r < lo):
            continue
        v = 4.0 / 3.0 * np.pi * r ** 3
        if np.all(p - r >= lo) and np.all(p + r < hi):
            total += v
        else:
            q = p + r * _BALL
            total += v * np.mean(np.all((q >= lo) & (q < hi), axis=1))
    return total


def iso_measures(out, k, margin):
    """The run's measures, and Φ, z* recomputed over the core."""
    if not any("servo_stress" in w for w in run_config(out).get("wall", [])):
        fail(f"{out}: wall[].servo_stress: no servo wall in the run's configuration (--iso0/--iso03 take runs of "
             "the lab-compression configs)")
    s = summary(out)
    m = s["measures"]
    fr = last_frame(out)
    lo, hi = np.array(m["box_lo"]), np.array(m["box_hi"])
    free = fr["fixed"] == 0
    pos, rad = fr["position"][free], fr["radius"][free]
    ids = fr["id"][free]
    d = 2.0 * rad.mean()
    clo, chi = lo + margin * d, hi - margin * d
    ends = backbone(fr, k)
    # Whole pack, as src/lab.rs (a cross-check of the run's own numbers).
    z_all = sum(ends.values()) / len(ends) if ends else 0.0
    mid = 0.5 * (clo + chi)
    octs = []
    for o in range(8):
        olo = np.where([(o >> a) & 1 for a in range(3)], mid, clo)
        ohi = np.where([(o >> a) & 1 for a in range(3)], chi, mid)
        inside = np.all((pos >= olo) & (pos < ohi), axis=1)
        phi = volume_inside(pos, rad, olo, ohi) / np.prod(ohi - olo)
        bb = [ends[int(i)] for i in ids[inside] if int(i) in ends]
        octs.append((phi, sum(bb), len(bb), inside.sum()))
    octs = np.array(octs, dtype=float)
    phi_core = (octs[:, 0] * 1.0).mean()
    z_oct = octs[:, 1] / np.maximum(octs[:, 2], 1)
    # The barrier keeps gaps positive: a contact carries force below the
    # activation gap, the more the smaller its gap.
    f_n = fr["f_n"]
    gaps = fr["gap"][f_n > FORCE_CARRYING * (np.abs(f_n).max() if len(f_n) else 0.0)]
    return {
        "bodies": int(free.sum()), "time": fr["time"], "steps": s["steps"], "wall": s["wall_time"],
        "static": s["reached_static"], "ranks": s["ranks"],
        "phi": m["solid_fraction"], "z": m["coordination"], "z_bb": m["coordination_backbone"],
        "x0": m["rattler_fraction"], "p": m["pressure"], "q_p": m["stress_ratio"], "I": m["inertial_number"],
        "z_bb_check": z_all,
        "phi_core": phi_core, "phi_core_err": octs[:, 0].std(ddof=1) / np.sqrt(8),
        "z_core": octs[:, 1].sum() / max(octs[:, 2].sum(), 1), "z_core_err": z_oct.std(ddof=1) / np.sqrt(8),
        "core_bodies": int(octs[:, 3].sum()), "margin": margin,
        "q6_core": q6_mean(pos, d, np.all((pos >= clo) & (pos < chi), axis=1)),
        "gap_mean": gaps.mean() / d if len(gaps) else 0.0,
        "gap_min": gaps.min() / d if len(gaps) else 0.0,
    }


def shear_measures(out):
    """The stress-controlled Lees–Edwards shear's steady state (second half
    of its strain): as a constant-volume run's (le_measures), and the normal
    stress the cell held against its target."""
    cfg = run_config(out)
    par = cfg.get("parallel", {})
    if "lees_edwards" not in par or "servo_stress" not in par:
        fail(f"{out}: parallel.servo_stress: not set in the run's configuration (--shear takes stress-controlled "
             "Lees–Edwards runs; a constant-volume cell goes to --le)")
    r = le_measures(out)
    se = series(out)
    half = se["time"] >= 0.5 * se["time"][-1]
    g = "xyz".index(cfg["parallel"]["lees_edwards"][1])
    sigma = se["stress"].reshape(-1, 3, 3)[:, g, g][half]
    length = (se["box_hi"] - se["box_lo"])[:, g]
    blocks = np.array_split(sigma, BLOCKS)
    r.update(target=float(cfg["parallel"]["servo_stress"]), sigma_n=(float(sigma.mean()), float(sigma.std())),
             sigma_sem=float(np.std([b.mean() for b in blocks], ddof=1) / np.sqrt(BLOCKS)),
             period=(float(length[half].mean()), float(length[half].std())), period0=float(length[0]))
    return r


SHEAR_TITLE = "### Simple shear of rigid frictionless beads at a controlled normal stress (Lees–Edwards, cd)"


def shear_section(runs):
    """The --shear subsection: each run's steady state at its inertial
    number (a row per run, by target stress)."""
    r = runs[0]
    L = [SHEAR_TITLE, "",
         f"Runs measured here: {machine()}. Each row one run of `configs/lab-shear-frictionless.toml` ({r['bodies']:,} equal "
         "beads, a fully periodic cell sheared by Lees–Edwards boundaries at γ̇ = 1 /s whose gradient period "
         "follows the normal stress σ_zz, no gravity, restitution 0), from the pack of "
         "`configs/lab-shear-le-frictionless.toml`; steady state over the second half of the strain, mean ± "
         "standard deviation of the frames, and the standard error of τ/σ_n's mean from "
         f"{BLOCKS} blocks of frames (also of σ_zz's). {r['ranks']} ranks, Δt = {r['dt']:.0e} s. "
         "Command: the guide's Lab tests, \"Stress-controlled cells\".", "",
         "| σ_n target [Pa] | σ_zz held [Pa] (± standard error) | period L_z [m] (start) | strain | I | τ/σ_n (± standard error) | Φ | z | steps not converged | solver iterations | wall [s] |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: r["target"]):
        pm = lambda k, f: f"{r[k][0]:{f}} ± {r[k][1]:{f}}"
        L += [f"| {r['target']:g} | {pm('sigma_n', '.1f')} (± {r['sigma_sem']:.1f}) | {pm('period', '.6f')} ({r['period0']:.6f}) | {r['strain']:.2f} | "
         f"{pm('I', '.4f')} | {pm('mu', '.4f')} (± {r['mu_sem']:.4f}) | {pm('phi', '.4f')} | {pm('z', '.3f')} | "
         f"{r['not_converged']} | {r['iterations']:,} | {r['wall']:.0f} |"]
    return L + [""]


def cross_check(out):
    """The run's own measurements of its last frame but one against an
    independent sum over that frame's bodies and contacts (the arms here
    from the frame's positions, the run's from the contact detection at the
    start of the step: equal to round-off at rest)."""
    with h5py.File(os.path.join(out, "frames.h5"), "r") as f:
        keys = sorted(f["frames"])
        g = f["frames"][keys[-2] if len(keys) > 1 else keys[-1]]
        b, c, se = g["bodies"], g["contacts"], f["series"]
        row = int(np.nonzero(se["step"][()] == g.attrs["step"])[0][0])
        free = b["fixed"][()] == 0
        pos = dict(zip(b["id"][()][free].tolist(), b["position"][()][free]))
        rad = b["radius"][()][free]
        ids_a, ids_b = c["body_a"][()], c["body_b"][()]
        f_n, f_t, n, pt = c["force_normal"][()], c["force_tangent"][()], c["normal"][()], c["point"][()]
        lo, hi = se["box_lo"][row], se["box_hi"][row]
        run = {k: se[k][row] for k in ("stress", "coordination", "solid_fraction")}
        step = int(g.attrs["step"])
    volume = np.prod(hi - lo)
    stress = np.zeros((3, 3))
    ends = 0
    largest = np.abs(f_n).max() if len(f_n) else 0.0
    for k in range(len(f_n)):
        force = n[k] * f_n[k] + f_t[k]
        a, b_ = int(ids_a[k]), int(ids_b[k])
        if a in pos:
            stress += np.outer(force, pt[k] - pos[a])
        if b_ in pos:
            stress -= np.outer(force, pt[k] - pos[b_])
        if f_n[k] > FORCE_CARRYING * largest:
            ends += (a in pos) + (b_ in pos)
    stress /= volume
    scale = np.abs(stress).max() or 1.0
    return {
        "step": step,
        "stress_rel": float(np.abs(stress - np.asarray(run["stress"]).reshape(3, 3)).max() / scale),
        "coordination": (ends / len(pos), float(run["coordination"])),
        "solid_fraction": (float((4.0 / 3.0 * np.pi * rad ** 3).sum() / volume), float(run["solid_fraction"])),
    }


BLOCKS = 5
LE_TITLE = "### Simple shear of rigid frictionless beads at constant volume (Lees–Edwards, cd)"
LE_TITLE_FRICTION = "### Simple shear of rigid frictional beads (μ = {mu:g}) at constant volume (Lees–Edwards, cd and dem)"
# A run with more of its steps than this share missing their tolerance is
# not fitted (a step that missed can fling beads: the energy jumps).
MISSED_SHARE = 0.01


def le_title(mu):
    return LE_TITLE if mu == 0.0 else LE_TITLE_FRICTION.format(mu=mu)


def run_config(out):
    """The run's effective configuration (frames.h5 /meta, attribute config)."""
    import tomllib
    path = os.path.join(out, "frames.h5")
    if not os.path.isfile(path):
        fail(f"{path}: not found (no frames written: is {out} a run's output directory?)")
    with h5py.File(path, "r") as f:
        return tomllib.loads(f["meta"].attrs["config"])


def steady_gap(out, half_from):
    """Mean gap of the force-carrying contacts over the frames from time
    `half_from` on, and the mean diameter (a DEM's grains act as rigid
    spheres of the diameter plus the gap their barrier holds)."""
    gaps, d = [], None
    with h5py.File(os.path.join(out, "frames.h5"), "r") as f:
        for key in sorted(f["frames"]):
            g = f["frames"][key]
            if float(g.attrs["time"]) < half_from:
                continue
            f_n, gap = g["contacts"]["force_normal"][()], g["contacts"]["gap"][()]
            gaps.append(gap[f_n > FORCE_CARRYING * (np.abs(f_n).max() if len(f_n) else 0.0)])
            d = 2.0 * float(np.mean(g["bodies"]["radius"][()]))
    gaps = np.concatenate(gaps) if gaps else np.zeros(0)
    return (float(gaps.mean()) if len(gaps) else 0.0), d


def le_measures(out):
    """A constant-volume Lees–Edwards run's steady state, the second half of
    its strain (as summary.json `steady`): mean and standard deviation of
    |τ/σ_n|, I, Φ and z over those frames; its friction and solver, and
    for the DEM the solid fraction of the rigid spheres its grains act as."""
    cfg = run_config(out)
    if "lees_edwards" not in cfg.get("parallel", {}):
        fail(f"{out}: parallel.lees_edwards: not set in the run's configuration (--le takes Lees–Edwards runs of "
             "the lab-shear-le configs)")
    s = summary(out)
    se = series(out)
    t = se["time"]
    half = t >= 0.5 * t[-1]
    solver = cfg["simulation"]["solver"]
    friction = max(float(m.get("friction", 0.0)) for m in cfg["material"])
    ms = lambda v: (float(np.mean(v[half])), float(np.std(v[half])))
    # Standard error of the mean from BLOCKS consecutive blocks of frames
    # (successive frames are correlated).
    blocks = np.array_split(np.abs(se["stress_ratio"][half]), BLOCKS)
    mu_sem = float(np.std([b.mean() for b in blocks], ddof=1) / np.sqrt(BLOCKS))
    r = {
        "bodies": s["bodies"], "wall": s["wall_time"], "steps": s["steps"], "ranks": s["ranks"], "mu_sem": mu_sem,
        "dt": float(se["dt"][-1]), "strain": s["steady"]["strain"], "frames": int(half.sum()),
        "iterations": s["solver_iterations_total"],
        "mu": ms(np.abs(se["stress_ratio"])), "I": ms(se["inertial_number"]), "phi": ms(se["solid_fraction"]),
        "z": ms(se["coordination"]), "p": ms(se["pressure"]), "solver": solver, "friction": friction,
        "not_converged": s.get("cd_steps_not_converged", 0) if solver != "dem" else 0,
    }
    if solver == "dem":
        gap, d = steady_gap(out, 0.5 * t[-1])
        dem = cfg.get("dem", {})
        r.update(gap=gap / d, phi_eff=r["phi"][0] * (1.0 + gap / d) ** 3, dt_mean=s["time"] / s["steps"],
                 damping=float(dem.get("damping", 0.0)), damping_t=float(dem.get("damping_t", 0.0)))
    return r


def power_fit(I, y, w, sign, w_known, exponents=(0.1, 1.5)):
    """y = y0 + sign · c · I^e with c ≥ 0: e scanned over `exponents`, (y0, c)
    by least squares with weights `w` (1/standard error, or ones). Returns
    y0 and c at the best e, e, and the range of y0 (± its standard error)
    over the exponents within Δχ² ≤ max(1, χ²_min/dof) of the best (the
    extrapolation's uncertainty, dominated by the exponent). Needs four
    points or more."""
    fits = []
    for e in np.arange(exponents[0], exponents[1] + 1e-4, 0.005):
        A = np.stack([np.ones_like(I), sign * I ** e], axis=1)
        Aw, yw = A * w[:, None], y * w
        coef, *_ = np.linalg.lstsq(Aw, yw, rcond=None)
        if coef[1] < 0:
            continue
        r = yw - Aw @ coef
        fits.append((float(r @ r), float(coef[0]), float(coef[1]), float(e), np.linalg.inv(Aw.T @ Aw)))
    if not fits:
        fail("lab_validate: no power law with the expected sign fits the --le runs")
    dof = max(len(y) - 3, 1)
    best = min(fits)
    var = max(1.0, best[0] / dof) if w_known else best[0] / dof
    near = [f for f in fits if f[0] <= best[0] + var]
    se = lambda f: float(np.sqrt(f[4][0, 0] * (1.0 if w_known else var)))
    lo = min(f[1] - se(f) for f in near)
    hi = max(f[1] + se(f) for f in near)
    return best[1], best[2], best[3], (lo, hi), (min(f[3] for f in near), max(f[3] for f in near))


# Below this inertial number a run constrains the exponents of the laws;
# when no run reaches it, they are bounded to BOUNDED_EXPONENTS: from the
# square root found near jamming (the frictionless fit here: 0.56) to the
# linear laws of da Cruz et al. (PRE 72, 021309, 2005).
LOW_I = 0.05
BOUNDED_EXPONENTS = (0.5, 1.0)


def le_fits(runs):
    """μ(I) and Φ(I) fitted to the valid cd runs: (μ*, a, α, range, α range)
    and (Φ_c, b, β, range, β range), and whether the exponents were
    bounded; None with fewer than four runs."""
    if len(runs) < 4:
        return None
    I = np.array([r["I"][0] for r in runs])
    mu = np.array([r["mu"][0] for r in runs])
    phi = np.array([r["phi"][0] for r in runs])
    mu_w = 1.0 / np.maximum(np.array([r["mu_sem"] for r in runs]), 1e-12)
    bounded = I.min() > LOW_I
    e = BOUNDED_EXPONENTS if bounded else (0.1, 1.5)
    return power_fit(I, mu, mu_w, 1.0, True, e), power_fit(I, phi, np.ones_like(phi), -1.0, False, e), bounded


def valid(r):
    return r["not_converged"] <= MISSED_SHARE * r["steps"]


def le_section(runs):
    """The --le subsection of one friction coefficient: each cd run's steady
    state, the fitted laws and their limits at I → 0 next to the published
    statements, and the implicit DEM's runs on the same cell side by side."""
    mu_p = runs[0]["friction"]
    dem = sorted((r for r in runs if r["solver"] == "dem"), key=lambda r: r["phi"][0])
    runs = sorted((r for r in runs if r["solver"] != "dem"), key=lambda r: (r["phi"][0], -r["dt"]))
    fitted = [r for r in runs if valid(r)]
    config = "configs/lab-shear-le-frictionless.toml" if mu_p == 0.0 else "configs/lab-shear-le-mu05.toml"
    phis = [round(r["phi"][0], 6) for r in runs]
    second_dt = " A second Δt at one solid fraction checks the time step." if len(set(phis)) < len(phis) else ""
    pairs = [(round(r["phi"][0], 6), r["dt"]) for r in runs]
    if len(set(pairs)) < len(pairs):
        second_dt += (" A solid fraction listed twice at one Δt is a second run of the same pack along another"
                      " solver path (the guide's Lab tests say which).")
    L = [le_title(mu_p), ""]
    L += [f"Runs measured here: {machine()}. Each row one run of `{config}` "
          f"({runs[0]['bodies']:,} equal beads, a fully periodic cell sheared by Lees–Edwards boundaries at γ̇ = 1 /s, "
          f"no gravity, restitution 0{'' if mu_p == 0.0 else f', friction μ = {mu_p:g}'}) at the solid fraction of its pack "
          "(`scripts/py/dense_pack.py`, seed 35); steady state over the second half of the strain, mean ± standard "
          f"deviation of the frames, and the standard error of τ/σ_n's mean from {BLOCKS} blocks of frames (the fit's "
          f"weights).{second_dt} A run with more than "
          f"{MISSED_SHARE:.0%} of its steps missing their tolerance is listed as not valid and not fitted. "
          "Commands: the guide's Lab tests, \"Rigid shear at constant volume\".", ""]
    L += ["| Φ | Δt [s] | strain | I | τ/σ_n (± standard error) | z | steps not converged | solver iterations | wall [s] |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        if not valid(r):
            L.append(f"| {r['phi'][0]:.4f} | {r['dt']:.0e} | {r['strain']:.2f} | not valid | not valid | — | "
                     f"{r['not_converged']} | {r['iterations']:,} | {r['wall']:.0f} |")
            continue
        L.append(f"| {r['phi'][0]:.4f} | {r['dt']:.0e} | {r['strain']:.2f} | {r['I'][0]:.3g} ± {r['I'][1]:.2g} | "
                 f"{r['mu'][0]:.4f} ± {r['mu'][1]:.4f} (± {r['mu_sem']:.4f}) | {r['z'][0]:.3f} ± {r['z'][1]:.3f} | {r['not_converged']} | "
                 f"{r['iterations']:,} | {r['wall']:.0f} |")
    L += [""]
    fits = le_fits(fitted)
    if fits:
        (mu0, a, alpha, mu_range, alpha_range), (phic, b, beta, phi_range, beta_range), bounded = fits
        if mu_p == 0.0:
            pub_mu = "[PR]: finite, independent of the pressure; μ grows as a power of I"
            pub_phi = "[PR]: the random close packing value (no dilatancy), Φ_RCP ≃ 0.639 [AR]; Φ falls as a power of I"
        else:
            pub_mu = ("no value quoted (none could be reached here); friction can only raise it above the frictionless "
                      "beads' (the subsection above)")
            pub_phi = ("[S]: the jamming fraction of frictional spheres falls with μ from random close packing (0.639 [AR]) "
                       "towards random loose packing (0.555 [OL]): dilatancy Φ_RCP − Φ_c > 0")
        L += ["| quasi-static limit I → 0 | published | fitted here: best (range over the exponents that fit) |", "|---|---|---|",
              f"| macroscopic friction μ* = lim τ/σ_n | {pub_mu} | "
              f"{mu0:.3f} ({mu_range[0]:.3f}–{mu_range[1]:.3f}; μ = μ* + {a:.3g} I^α, α = {alpha:.2f} ({alpha_range[0]:.2f}–{alpha_range[1]:.2f})) |",
              f"| critical solid fraction Φ_c = lim Φ | {pub_phi} | {phic:.4f} ({phi_range[0]:.4f}–{phi_range[1]:.4f}; "
              f"Φ = Φ_c − {b:.3g} I^β, β = {beta:.2f} ({beta_range[0]:.2f}–{beta_range[1]:.2f}))"
              + ("" if mu_p == 0.0 else f"; Φ_RCP − Φ_c = {RCP - phic:.3f} ({RCP - phi_range[1]:.3f}–{RCP - phi_range[0]:.3f})") + " |", ""]
        if bounded:
            L += [f"No valid run reaches I < {LOW_I:g} (closer to jamming the steps miss their tolerance), so the runs "
                  "do not fix the exponents: they are bounded to "
                  f"{BOUNDED_EXPONENTS[0]:g}–{BOUNDED_EXPONENTS[1]:g}, from the square root found near jamming (the "
                  "frictionless fit above) to the linear laws of da Cruz et al. (Phys. Rev. E 72, 021309, 2005), and the "
                  "limits' ranges span that choice: an extrapolation, not a measurement.", ""]
        if mu_p != 0.0:
            L += ["References: [S] L. E. Silbert, Jamming of frictional spheres and random loose packing, Soft Matter 6, "
                   "2918 (2010); [OL] G. Y. Onoda and E. G. Liniger, Random loose packings of uniform spheres and the "
                   "dilatancy onset, Phys. Rev. Lett. 64, 2727 (1990).", ""]
    if dem:
        L += ["**The implicit DEM on the same cell.** The same beads, friction and shear under `solver = \"dem\"` "
              "(`configs/lab-shear-le-mu05-dem.toml`). Its barrier holds the force-carrying contacts at a gap g, so its "
              "grains act as rigid spheres of diameter d + g: their solid fraction is Φ (1 + g/d)³. The rheology is "
              "compared at the DEM's own inertial number, with cd's fitted laws there.", "",
              "| solver | damping ζ, ζ_t | strain | Φ | gap g of the force-carrying contacts [d] | Φ (1 + g/d)³ | I | τ/σ_n | z | mean Δt [s] | Newton iterations | wall [s] |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in dem:
            L.append(f"| dem | {r['damping']:g}, {r['damping_t']:g} | {r['strain']:.2f} | {r['phi'][0]:.4f} | {r['gap']:.2e} | {r['phi_eff']:.4f} | "
                     f"{r['I'][0]:.3g} ± {r['I'][1]:.2g} | {r['mu'][0]:.4f} ± {r['mu'][1]:.4f} (± {r['mu_sem']:.4f}) | "
                     f"{r['z'][0]:.3f} ± {r['z'][1]:.3f} | {r['dt_mean']:.2e} | {r['iterations']:,} | {r['wall']:.0f} |")
            if fits:
                I = r["I"][0]
                L.append(f"| cd's laws at this I | — | — | — | 0 (rigid) | {phic - b * I ** beta:.4f} | {I:.3g} | "
                         f"{mu0 + a * I ** alpha:.4f} | — | — | — | — |")
        L += [""]
        if fits:
            L += ["At its own inertial number: " + "; ".join(
                f"the DEM with ζ, ζ_t = {r['damping']:g}, {r['damping_t']:g} has τ/σ_n "
                f"{100 * (r['mu'][0] / (mu0 + a * r['I'][0] ** alpha) - 1):+.1f} % from cd's law "
                f"({(r['mu'][0] - (mu0 + a * r['I'][0] ** alpha)) / r['mu_sem']:+.1f} of its standard errors) and a solid fraction "
                f"{r['phi_eff'] - (phic - b * r['I'][0] ** beta):+.4f} from it" for r in dem) + ".", ""]
    return L


def section(iso0, iso03, notes):
    """The report's section: the notes (what was run), the published values
    next to the measured ones (or "not run here"), the runs' details; the
    shear subsections already in the report follow it."""
    margin = (iso0 or iso03 or {}).get("margin", 2.0)
    L = ["## Lab tests (isotropic compression, quasi-static shear)", ""]
    L += ["References: [AR] " + AGNOLIN + "; [PR] " + PEYNEAU + ". "
          "The published values are quoted from the papers' abstracts. "
          "Measured by `scripts/py/lab_validate.py` from a finished run's `summary.json` (its own measurements "
          "over the walls' cell) and the last frame of `frames.h5` (a core box: the cell less a layer of "
          f"{margin:g} diameters at every wall, where the walls order the beads and lower the solid fraction; "
          "the papers' packs are periodic, without walls).", ""]
    if iso0 or iso03:
        L += [f"Runs measured here: {machine()}.", ""]
    L += notes
    core = lambda r, k: f"{r[k]:.4f} ± {r[k + '_err']:.4f} (cell {r[{'phi_core': 'phi', 'z_core': 'z_bb'}[k]]:.4f})" if r else "not run here"
    L += ["### Isotropic compression: published and measured", "",
          "| preparation | quantity | published [AR] | measured (core; whole cell) |", "|---|---|---|---|",
          f"| μ = 0 (or lubricated), compressed from a granular gas: random close packing, low-pressure limit | Φ | ≃ 0.639 | {core(iso0, 'phi_core')} |",
          f"| | z* (backbone) | ≃ 6 | {core(iso0, 'z_core')} |",
          f"| μ = 0.3 throughout, compressed from a granular gas | Φ | ≃ 0.593 | {core(iso03, 'phi_core')} |",
          f"| | z* (backbone) | ≃ 4.5 | {core(iso03, 'z_core')} |", ""]
    if iso0 or iso03:
        L += ["| run | x₀ rattlers | z all | p [Pa] | I at the end | gap of the force-carrying contacts, mean / min [d] | local order q6 (core) | at rest | wall [s] |",
              "|---|---|---|---|---|---|---|---|---|"]
        for label, r in (("μ = 0", iso0), ("μ = 0.3", iso03)):
            if r:
                L.append(f"| {label} | {r['x0']:.3f} | {r['z']:.3f} | {r['p']:.4g} | {r['I']:.2g} | "
                         f"{r['gap_mean']:.1e} / {r['gap_min']:.1e} | {r['q6_core']:.3f} | {'yes' if r['static'] else 'no'} | {r['wall']:.0f} |")
        L += [""]
    return L


def replace_section(report, lines):
    text = open(report).read() if os.path.exists(report) else "# Validation report\n"
    new = "\n".join(lines).rstrip() + "\n"
    m = re.search(r"^## Lab tests.*?(?=^## |\Z)", text, flags=re.S | re.M)
    if m:
        text = text[:m.start()] + new + ("\n" if m.end() < len(text) else "") + text[m.end():]
    else:
        text = text.rstrip() + "\n\n" + new
    with open(report, "w") as fh:
        fh.write(text)


LE_ANY = r"^### Simple shear of rigid .*?(?=^##|\Z)"


def le_subsection(report):
    """The shear subsections already in the report (--le and --shear: kept
    when the rest of the section is rewritten)."""
    text = open(report).read() if os.path.exists(report) else ""
    return [line for m in re.finditer(LE_ANY, text, flags=re.S | re.M) for line in m.group(0).rstrip().split("\n") + [""]]


def replace_subsection(report, title, lines):
    """Writes the shear subsection `title` at the end of "## Lab tests"
    (replacing it)."""
    text = open(report).read()
    new = "\n".join(lines).rstrip() + "\n"
    m = re.search(r"^" + re.escape(title) + r".*?(?=^##|\Z)", text, flags=re.S | re.M)
    if not m:
        lab = re.search(r"^## Lab tests.*?(?=^## |\Z)", text, flags=re.S | re.M)
        if not lab:
            fail(f"lab_validate: {report} has no section \"## Lab tests\"")
        text = text[:lab.end()].rstrip() + "\n\n" + new + ("\n" if lab.end() < len(text) else "") + text[lab.end():]
    else:
        text = text[:m.start()] + new + ("\n" if m.end() < len(text) else "") + text[m.end():]
    with open(report, "w") as fh:
        fh.write(text)

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iso0")
    ap.add_argument("--iso03")
    ap.add_argument("--shear", nargs="+", metavar="OUT", help="stress-controlled Lees–Edwards shear runs (one per target stress)")
    ap.add_argument("--margin", type=float, default=2.0, help="core box: the cell less this many diameters at each wall")
    ap.add_argument("--notes", help="a Markdown file inserted after the references: what was run, how, what was changed")
    ap.add_argument("--report", default=os.path.join(ROOT, "VALIDATION.md"))
    ap.add_argument("--print", action="store_true")
    ap.add_argument("--check", metavar="OUT", help="only compare OUT's own measurements with a sum over its frame's contacts")
    ap.add_argument("--le", nargs="+", metavar="OUT", help="constant-volume Lees–Edwards shear runs (one per solid fraction)")
    a = ap.parse_args(argv)
    if a.check:
        print(json.dumps(cross_check(a.check)))
        return
    if a.le:
        runs = [le_measures(out) for out in a.le]
        for out, r in zip(a.le, runs):
            print(out, json.dumps(r, default=float), file=sys.stderr)
        for mu in sorted({r["friction"] for r in runs}):
            group = [r for r in runs if r["friction"] == mu]
            if not any(r["solver"] != "dem" for r in group):
                fail(f"lab_validate: the --le runs with friction {mu:g} are all dem; give the cd runs too")
            lines = le_section(group)
            if a.print:
                print("\n".join(lines))
            else:
                replace_subsection(a.report, le_title(mu), lines)
                print("wrote", a.report, "subsection", le_title(mu))
        return
    if a.shear:
        runs = [shear_measures(out) for out in a.shear]
        for out, r in zip(a.shear, runs):
            print(out, json.dumps(r, default=float), file=sys.stderr)
        lines = shear_section(runs)
        if a.print:
            print("\n".join(lines))
        else:
            replace_subsection(a.report, SHEAR_TITLE, lines)
            print("wrote", a.report, "subsection", SHEAR_TITLE)
        if not (a.iso0 or a.iso03):
            return
    iso0 = iso_measures(a.iso0, 4, a.margin) if a.iso0 else None
    iso03 = iso_measures(a.iso03, 2, a.margin) if a.iso03 else None
    for name, r in (("iso0", iso0), ("iso03", iso03)):
        if r:
            print(name, json.dumps(r, default=float), file=sys.stderr)
    notes = open(a.notes).read().rstrip().split("\n") + [""] if a.notes else []
    lines = section(iso0, iso03, notes) + le_subsection(a.report)
    if a.print:
        print("\n".join(lines))
    else:
        replace_section(a.report, lines)
        print("wrote", a.report)


if __name__ == "__main__":
    main(sys.argv[1:])
