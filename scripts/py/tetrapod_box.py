"""The paper's box of 1005 tetrapods (Gay Neto & Wriggers §3.6) as one
chain of runs, from configs/box-1005-tetrapods-paper.toml:

    .venv/bin/python scripts/py/tetrapod_box.py [--np 2] [--config CONFIG] [--out DIR]
        [--exe STIFFGRAIN] [--friction-off SECONDS] [--nice 10] [--resume] [--overwrite]
        [-- PETSC OPTIONS]

Stages (times from the config: the lateral walls' `path` and `until`,
simulation.t_end; friction μ from material[0].friction):

    (a)-(b) fill          `stiffgrain run CONFIG`: placement, drop and first
                          pack, to the walls' first path time
    (c)     push          the lateral walls move inwards, to their last path
                          time, with friction --push-friction (default 0: with
                          μ = 0.6 the paper's pack jammed between the walls,
                          see BENCHMARKS.md, so the push runs frictionless too)
    (d)     friction-off  friction 0 for --friction-off more seconds (1.5)
    (e)     friction-on   friction μ again, to the walls' `until`
    (f)     collapse      to simulation.t_end (the walls are gone)

Each stage restarts from the checkpoint the previous one wrote at its end
(`output.checkpoint_at_end`), which is kept as OUT/stage-NAME.h5 beside
OUT/summary-NAME.json; every stage runs under `nice`, and OUT/stages.jsonl gets one line per run segment (wall and CPU seconds,
steps, Δt, Newton/KSP iterations, ...; the CPU seconds of mpirun and its
ranks, as `/usr/bin/time -f %U` gives them). A SIGTERM (or SIGINT) to this
script is passed to mpirun as SIGUSR1: the ranks checkpoint and stop; `--resume`
continues from the latest checkpoint in OUT, in the stage its time falls
in. At the end the histories are drawn by scripts/py/box_report.py into
benchmarks/boxes/NAME.{png,csv} and NAME-collapse.png (NAME: the
config's file name).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import h5py

ROOT = Path(__file__).resolve().parents[2]
TOL = 1e-9


def stages(cfg, friction_off, push_friction):
    """[(name, paper step, end time, friction)] from the config."""
    mu = cfg["material"][0].get("friction", 0.0)
    lateral = [w for w in cfg["wall"] if "until" in w]
    if not lateral or any("path" not in w for w in lateral):
        sys.exit("tetrapod_box: the config needs lateral walls with `path` (moving in) and `until` (removal)")
    pushed = {w["path"][-1][0] for w in lateral}
    first = {w["path"][0][0] for w in lateral}
    until = {w["until"] for w in lateral}
    if len(pushed) != 1 or len(until) != 1:
        sys.exit(f"tetrapod_box: the lateral walls must end their paths ({sorted(pushed)}) and go ({sorted(until)}) at one time each")
    if len(first) != 1:
        sys.exit(f"tetrapod_box: the lateral walls must start to move at one time ({sorted(first)})")
    t_start, t_push, t_until, t_end = first.pop(), pushed.pop(), until.pop(), cfg["simulation"]["t_end"]
    t_on = t_push + friction_off
    if not 0 < t_start < t_push < t_on < t_until < t_end:
        sys.exit(f"tetrapod_box: need 0 < walls start ({t_start}) < walls in ({t_push}) < friction on ({t_on}) < walls removed ({t_until}) < t_end ({t_end})")
    mu_push = mu if push_friction is None else push_friction
    return [
        ("fill", "(a)-(b)", t_start, mu),
        ("push", "(c)", t_push, mu_push),
        ("friction-off", "(d)", t_on, 0.0),
        ("friction-on", "(e)", t_until, mu),
        ("collapse", "(f)", t_end, mu),
    ]


def latest_checkpoint(out):
    """(path, time, step) of the checkpoint with the highest step in `out`, or None."""
    cps = sorted(out.glob("checkpoint-*.h5"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
    for cp in reversed(cps):
        try:
            with h5py.File(cp, "r") as f:
                if f.attrs.get("complete", 0):
                    return cp, float(f.attrs["time"]), int(f.attrs["step"])
        except OSError:
            continue
    return None


def mpi_env(np_):
    env = dict(os.environ)
    if os.getuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    extra = ["--oversubscribe"] if np_ > (os.cpu_count() or 1) else []
    return env, extra


CHILD = None
STOPPED = False


def forward(signum, _frame):
    global STOPPED
    STOPPED = True
    # SIGUSR1: mpirun passes it on to the ranks and waits for them (a
    # SIGTERM makes mpirun end the job itself); stiffgrain checkpoints on it.
    if CHILD is not None and CHILD.returncode is None:
        CHILD.send_signal(signal.SIGUSR1)


def run_segment(a, out, args, stage, log, first_step):
    """Runs one mpirun segment under nice; returns its record."""
    global CHILD
    env, extra = mpi_env(a.np)
    # nice execs mpirun: the child is mpirun itself; its resource usage (os.wait4, what /usr/bin/time
    # reports) includes the ranks it waited for.
    cmd = ["nice", "-n", str(a.nice), "mpirun", "-np", str(a.np), *extra, str(a.exe), *args]
    if a.petsc:
        cmd += ["--", *a.petsc]
    print("tetrapod_box:", " ".join(cmd), flush=True)
    load = os.getloadavg()
    t0 = time.time()
    with open(out.parent / f".{out.name}-console.txt", "a") as console:
        CHILD = subprocess.Popen(cmd, env=env, stdout=console, stderr=subprocess.STDOUT)
        while True:
            try:
                _, status, usage = os.wait4(CHILD.pid, 0)
                break
            except InterruptedError:
                continue
        CHILD.returncode = code = os.waitstatus_to_exitcode(status)
        CHILD = None
    wall, user, system = time.time() - t0, usage.ru_utime, usage.ru_stime
    # mpirun stopped by a signal exits 1 even when the ranks checkpointed
    # and ended cleanly (they wrote summary.json).
    fresh = (out / "summary.json").exists() and (out / "summary.json").stat().st_mtime >= t0
    if code != 0 and not (STOPPED and fresh):
        sys.exit(f"tetrapod_box: stage {stage[0]} failed (exit {code}); see {out.parent / f'.{out.name}-console.txt'}, resume with --resume")
    s = json.loads((out / "summary.json").read_text())
    rec = {
        "stage": stage[0], "paper_step": stage[1], "friction": stage[3], "ranks": a.np,
        "command": " ".join(cmd), "load_before": load, "load_after": os.getloadavg(),
        "end_time": s["time"], "steps": s["steps"] - first_step, "last_step": s["steps"], "wall_s": wall, "cpu_user_s": user, "cpu_sys_s": system,
        "run_wall_s": s["wall_time"], "newton_its": s["solver_iterations_total"],
        "ksp_its": s["linear_iterations_total"], "rejected": s["rejected_steps"], "dt_taken": s["dt_taken"],
        "kinetic_energy": s["kinetic_energy"], "contacts": s["contacts"],
        "night_owls": s.get("night_owls"), "night_owl_redos": s.get("night_owl_redos"),
        "closed_pairs_dropped": s.get("closed_pairs_dropped"),
        "phases_max": {k: v[2] for k, v in s["phases"].items()},
    }
    with open(log, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(f"tetrapod_box: {stage[0]} {stage[1]} to t = {s['time']}: {s['steps'] - first_step} steps, {wall:.0f} s wall, "
          f"{user:.0f} s CPU, Newton {s['solver_iterations_total']} / KSP {s['linear_iterations_total']}, "
          f"kinetic energy {s['kinetic_energy']:.3e} J", flush=True)
    return s


def main():
    argv = sys.argv[1:]
    petsc = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--config", type=Path, default=ROOT / "configs/box-1005-tetrapods-paper.toml")
    p.add_argument("--out", type=Path, help="output dir (default: the config's output.dir)")
    p.add_argument("--exe", type=Path, default=ROOT / "target/release/stiffgrain")
    p.add_argument("--friction-off", type=float, default=1.5, help="seconds of step (d) after the push")
    p.add_argument("--push-friction", type=float, default=0.0, help="friction while the walls move in (default 0; the paper: the config's μ)")
    p.add_argument("--nice", type=int, default=10)
    p.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in OUT")
    p.add_argument("--overwrite", action="store_true", help="start afresh over an earlier run in OUT")
    p.add_argument("--no-report", action="store_true", help="do not draw the histories at the end")
    a = p.parse_args(argv)
    a.petsc = petsc
    cfg = tomllib.loads(a.config.read_text())
    plan = stages(cfg, a.friction_off, a.push_friction)
    # The config's output.dir is relative to the config, as stiffgrain reads it.
    out = (a.out or (a.config.parent / cfg["output"]["dir"] if "dir" in cfg.get("output", {}) else Path("OUT"))).resolve()
    log = out / "stages.jsonl"
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    start = latest_checkpoint(out) if a.resume else None
    if not a.resume and (out / "frames.h5").exists() and not a.overwrite:
        sys.exit(f"tetrapod_box: {out} holds a run: --resume continues it, --overwrite starts afresh")
    if a.overwrite and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    t = start[1] if start else None
    for k, stage in enumerate(plan):
        name, step, t_stage, mu = stage
        if t is not None and t >= t_stage - TOL:
            continue
        sets = ["--set", f"material[0].friction={mu}", "--set", f"simulation.t_end={t_stage}"]
        if t is None:
            args = ["run", str(a.config.resolve()), "--set", f"output.dir=\"{out}\"", "--overwrite", *sets]
            first = 0
        else:
            cp = latest_checkpoint(out)
            args = ["restart", str(cp[0]), *sets]
            first = cp[2]
        s = run_segment(a, out, args, stage, log, first)
        t = s["time"]
        if t < t_stage - TOL or STOPPED:
            sys.exit(f"tetrapod_box: stopped at t = {t} in stage {name} {step}; continue with --resume")
        cp = latest_checkpoint(out)
        shutil.copy(cp[0], out / f"stage-{name}.h5")
        shutil.copy(out / "summary.json", out / f"summary-{name}.json")
    if not a.no_report:
        gbar = cfg.get("dem", {}).get("gbar", cfg.get("contact", {}).get("distance", 0.0) / 2)
        marks = ",".join(f"{st[2]:g}" for st in plan[:4])
        subprocess.run([sys.executable, str(ROOT / "scripts/py/box_report.py"), str(out), str(gbar), a.config.stem, marks, "--collapse"], cwd=ROOT, check=True)


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"tetrapod_box: done in {time.time() - t0:.0f} s")
