//! The HPC scripts: slurm/*.sbatch (syntax, and their srun lines through a
//! stand-in srun that forwards to mpirun), the requeue pattern of
//! run.sbatch, scripts/scaling and scripts/plot (PNGs that depend on the data).
//!
//! The Python parts need the project venv (`scripts/setup` creates it; so does
//! `scripts/test`). Without it those tests report themselves skipped
//! (`common::skip`: a `skipped:` line, counted by scripts/test) and return,
//! unless `CI` or `STIFFGRAIN_REQUIRE_PYTHON` is set, where they fail.
mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv interpreter with h5py, numpy, matplotlib, or None (after saying why).
fn venv_python() -> Option<PathBuf> {
    let py = root().join(".venv/bin/python");
    let ok = py.exists()
        && Command::new(&py)
            .args(["-c", "import h5py, numpy, matplotlib"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
    if ok {
        return Some(py);
    }
    let msg = format!("{} with h5py, numpy, matplotlib is not available: run scripts/setup", py.display());
    if std::env::var_os("CI").is_some() || std::env::var_os("STIFFGRAIN_REQUIRE_PYTHON").is_some() {
        panic!("{msg}");
    }
    common::skip(&msg);
    None
}

fn write_exe(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A temp dir with a stand-in `srun` (first on PATH) that forwards to
/// `mpirun --oversubscribe -np N`, N from -n/--ntasks or SLURM_NTASKS.
fn fake_slurm(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    write_exe(
        &bin.join("srun"),
        r#"#!/usr/bin/env bash
n=${SLURM_NTASKS:-2}
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--ntasks) n=$2; shift 2 ;;
    --ntasks=*) n=${1#*=}; shift ;;
    -N|--nodes|--ntasks-per-node) shift 2 ;;
    --*) shift ;;
    *) break ;;
  esac
done
echo "srun-standin: -np $n $*" >> "$(dirname "$0")/srun.log"
exec mpirun --oversubscribe --bind-to none -np "$n" "$@"
"#,
    );
    write_exe(
        &bin.join("scontrol"),
        "#!/usr/bin/env bash\necho \"$@\" >> \"$(dirname \"$0\")/scontrol.log\"\n",
    );
    bin
}

/// `bash SCRIPT` from the repository root with SLURM_* set and the stand-ins first on PATH.
fn sbatch(script: &str, bin: &Path, env: &[(&str, String)]) -> Command {
    let mut c = Command::new("bash");
    c.arg(root().join(script))
        .current_dir(root())
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .env("SLURM_JOB_ID", "4242")
        .env("SLURM_JOB_NAME", "sgtest")
        .env("SLURM_NTASKS", "2")
        .env("SLURM_NNODES", "1")
        .env("SLURM_SUBMIT_DIR", root())
        .env("STIFFGRAIN", common::stiffgrain())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn ok(out: Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Tiny scene: a few hundred spheres, a few steps.
const TINY: &str = "generate[0].count=300 generate[0].box_max=[0.1,0.1,0.1] simulation.t_end=0.005";

fn check_rows(csv: &Path, ranks: &[f64], bodies: &[f64], steps: f64) {
    let (header, rows) = common::read_csv(csv);
    assert_eq!(&header[..5], ["ranks", "bodies", "contacts", "steps", "wall_per_step"], "{}", csv.display());
    for p in ["migration", "narrow_phase", "solve", "output"] {
        assert!(header.iter().any(|h| h == p), "no {p} column in {header:?}");
        assert!(header.iter().any(|h| *h == format!("{p}_max")), "no {p}_max column in {header:?}");
    }
    assert_eq!(rows.len(), ranks.len(), "rows of {}", csv.display());
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row["ranks"], ranks[k], "ranks column: {row:?}");
        assert_eq!(row["bodies"], bodies[k], "bodies column: {row:?}");
        assert_eq!(row["steps"], steps, "steps column: {row:?}");
        assert!(row["contacts"] >= 0.0);
        let w = row["wall_per_step"];
        assert!(w > 0.0 && w < 60.0, "wall_per_step {w}");
        for (name, v) in row {
            assert!(v.is_finite() && *v >= 0.0, "{name} = {v}");
        }
        assert!(row["solve"] > 0.0, "solve time per step is 0: {row:?}");
        assert!(row["solve_max"] >= row["solve"] * (1.0 - 1e-6), "max < mean: {row:?}");
    }
}

#[test]
fn sbatch_scripts_pass_bash_n() {
    let mut n = 0;
    for e in fs::read_dir(root().join("slurm")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) == Some("sbatch") {
            let out = Command::new("bash").arg("-n").arg(&p).output().unwrap();
            assert!(out.status.success(), "bash -n {}: {}", p.display(), String::from_utf8_lossy(&out.stderr));
            let text = fs::read_to_string(&p).unwrap();
            assert!(text.contains("#SBATCH --ntasks") || text.contains("#SBATCH --nodes"), "{}: no #SBATCH lines", p.display());
            assert!(text.contains("srun "), "{}: no srun line", p.display());
            n += 1;
        }
    }
    for name in ["run.sbatch", "strong-scaling.sbatch", "weak-scaling.sbatch"] {
        assert!(root().join("slurm").join(name).exists(), "slurm/{name} missing");
    }
    assert!(n >= 3);
    let run = fs::read_to_string(root().join("slurm/run.sbatch")).unwrap();
    assert!(run.contains("#SBATCH --signal=B:USR1@120"));
    assert!(run.contains("scontrol requeue"));
    for name in ["run.sbatch", "strong-scaling.sbatch", "weak-scaling.sbatch"] {
        let text = fs::read_to_string(root().join("slurm").join(name)).unwrap();
        // Placeholders only: a partition or account that is set fails on every other cluster.
        assert!(text.contains("##SBATCH --partition=") && text.contains("##SBATCH --account="), "{name}: no site placeholders");
        assert!(!text.contains("\n#SBATCH --partition") && !text.contains("\n#SBATCH --account"), "{name}: a site setting");
        assert!(text.contains("#SBATCH --ntasks=2\n"), "{name}: the default task count should fit a small node");
        assert!(text.contains("SRUN_MPI"), "{name}: the MPI plugin cannot be chosen");
    }
    for s in ["scripts/scaling", "scripts/plot", "scripts/srun-local", "scripts/slurm-local", "scripts/py/venv.sh"] {
        let out = Command::new("bash").arg("-n").arg(root().join(s)).output().unwrap();
        assert!(out.status.success(), "bash -n {s}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn strong_scaling_sbatch_through_stand_in_srun() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = fake_slurm(tmp.path());
    let csv = tmp.path().join("strong.csv");
    let out = sbatch(
        "slurm/strong-scaling.sbatch",
        &bin,
        &[
            ("CONFIG", "configs/scaling.toml".into()),
            ("SETS", TINY.into()),
            ("RANKS", "1 2".into()),
            ("CSV", csv.display().to_string()),
            ("OUTROOT", tmp.path().join("runs").display().to_string()),
        ],
    )
    .output()
    .unwrap();
    ok(out, "strong-scaling.sbatch");
    check_rows(&csv, &[1.0, 2.0], &[300.0, 300.0], 5.0);
    let log = fs::read_to_string(bin.join("srun.log")).unwrap();
    assert!(log.contains("-np 1 ") && log.contains("-np 2 "), "srun calls: {log}");
    // Appending: a second study into the same CSV adds rows under one header.
    let out = sbatch(
        "slurm/strong-scaling.sbatch",
        &bin,
        &[
            ("CONFIG", "configs/scaling.toml".into()),
            ("SETS", TINY.into()),
            ("RANKS", "2".into()),
            ("CSV", csv.display().to_string()),
            ("OUTROOT", tmp.path().join("runs").display().to_string()),
        ],
    )
    .output()
    .unwrap();
    ok(out, "strong-scaling.sbatch (append)");
    check_rows(&csv, &[1.0, 2.0, 2.0], &[300.0; 3], 5.0);
}

#[test]
fn weak_scaling_sbatch_grows_the_scene() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = fake_slurm(tmp.path());
    let csv = tmp.path().join("weak.csv");
    let out = sbatch(
        "slurm/weak-scaling.sbatch",
        &bin,
        &[
            ("CONFIG", "configs/scaling.toml".into()),
            ("SETS", "simulation.t_end=0.004".into()),
            ("N_PER_RANK", "150".into()),
            ("BOX", "0.07 0.07 0.07".into()),
            ("RANKS", "1 2".into()),
            ("CSV", csv.display().to_string()),
            ("OUTROOT", tmp.path().join("runs").display().to_string()),
        ],
    )
    .output()
    .unwrap();
    ok(out, "weak-scaling.sbatch");
    check_rows(&csv, &[1.0, 2.0], &[150.0, 300.0], 4.0);
    // The box grew along x with the rank count: bodies of the 2-rank run reach past x = 0.07.
    let frames = tmp.path().join("runs/np2/frames.h5");
    assert!(frames.exists(), "{} missing", frames.display());
}

#[test]
fn run_sbatch_runs_and_refuses_to_redo_a_finished_run() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = fake_slurm(tmp.path());
    let outdir = tmp.path().join("run");
    let env = [
        ("CONFIG", "configs/scaling.toml".to_string()),
        ("SETS", TINY.to_string()),
        ("OUTDIR", outdir.display().to_string()),
    ];
    let stdout = ok(sbatch("slurm/run.sbatch", &bin, &env).output().unwrap(), "run.sbatch");
    assert!(stdout.contains("starting"), "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(&fs::read_to_string(outdir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["ranks"], 2);
    assert_eq!(summary["bodies"], 300);
    let log = fs::read_to_string(bin.join("srun.log")).unwrap();
    assert!(log.contains("-np 2 ") && log.contains(" run "), "srun calls: {log}");
    let stdout = ok(sbatch("slurm/run.sbatch", &bin, &env).output().unwrap(), "run.sbatch again");
    assert!(stdout.contains("nothing to do"), "{stdout}");
    assert!(!bin.join("scontrol.log").exists(), "requeued a finished run");
}

/// The requeue pattern with a stand-in program (the checkpoint-on-signal side
/// is the program's, tested in tests/signals.rs and tests/slurm.rs): USR1 to
/// the batch shell reaches the step, the step writes summary.json with
/// "interrupted": true and its checkpoint, the job requeues itself; the next
/// start restarts from the checkpoint summary.json names. TERM (scancel)
/// reaches the step too but does not requeue.
#[test]
fn run_sbatch_forwards_usr1_requeues_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = fake_slurm(tmp.path());
    let outdir = tmp.path().join("run");
    let fake = tmp.path().join("fake-stiffgrain");
    write_exe(
        &fake,
        &format!(
            r#"#!/usr/bin/env bash
echo "fake-stiffgrain $*" >> {calls}
out={out}
mkdir -p "$out"
stop() {{
  touch "$out/checkpoint-000007.h5"
  printf '{{\n  "steps": 7,\n  "interrupted": true,\n  "resume_from": "%s"\n}}\n' "$out/checkpoint-000007.h5" > "$out/summary.json"
  echo "stopped at step 7; resume with: stiffgrain restart $out/checkpoint-000007.h5"
  exit 0
}}
trap stop USR1 TERM
for i in $(seq 300); do sleep 0.1; done
echo "ran to the end"; printf '{{\n  "steps": 9,\n  "interrupted": false\n}}\n' > "$out/summary.json"; touch "$out/frames.h5"
"#,
            calls = tmp.path().join("calls.log").display(),
            out = outdir.display()
        ),
    );
    let env = [
        ("STIFFGRAIN", fake.display().to_string()),
        ("OUTDIR", outdir.display().to_string()),
        ("SLURM_NTASKS", "1".to_string()),
    ];
    let calls = tmp.path().join("calls.log");
    // Starts run.sbatch, waits until the step runs (`n` calls so far), then
    // signals the batch shell only (as --signal=B: does); its stdout.
    let start_and_signal = |signal: &str, n: usize| {
        let child = sbatch("slurm/run.sbatch", &bin, &env)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            fs::read_to_string(&calls).map(|s| s.lines().count()).unwrap_or(0) == n
        });
        assert!(started, "the step never started");
        std::thread::sleep(std::time::Duration::from_millis(1000));
        let st = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
        assert!(st.success());
        let out = child.wait_with_output().unwrap();
        // The stand-in srun is mpirun, which ends with status 1 on TERM (srun passes it on).
        if signal == "TERM" {
            String::from_utf8_lossy(&out.stdout).into_owned()
        } else {
            ok(out, &format!("run.sbatch with {signal}"))
        }
    };
    let stdout = start_and_signal("USR1", 1);
    assert!(stdout.contains("resume with: stiffgrain restart"), "{stdout}");
    let req = fs::read_to_string(bin.join("scontrol.log")).expect("scontrol was not called");
    assert_eq!(req.trim(), "requeue 4242");
    // The requeued start resumes from the checkpoint summary.json names, not
    // from a newer-looking file; TERM stops it without a requeue.
    fs::write(outdir.join("checkpoint-000003.h5"), "").unwrap();
    fs::write(outdir.join("checkpoint-000009.h5.tmp"), "").unwrap();
    let stdout = start_and_signal("TERM", 2);
    assert!(stdout.contains("resuming from"), "{stdout}");
    assert!(stdout.contains("TERM (cancelled)"), "{stdout}");
    let text = fs::read_to_string(&calls).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.contains(&format!("restart {}", outdir.join("checkpoint-000007.h5").display())),
        "the second start should restart from summary.json's resume_from: {text}"
    );
    let req = fs::read_to_string(bin.join("scontrol.log")).unwrap();
    assert_eq!(req.lines().count(), 1, "TERM (scancel) requeued the job: {req}");
    // A start after a run that ended does nothing.
    fs::write(outdir.join("summary.json"), "{\n  \"interrupted\": false\n}\n").unwrap();
    let stdout = ok(sbatch("slurm/run.sbatch", &bin, &env).output().unwrap(), "run.sbatch after the end");
    assert!(stdout.contains("nothing to do"), "{stdout}");
    assert_eq!(fs::read_to_string(&calls).unwrap().lines().count(), 2);
}

/// Decodes PNGs with the venv's matplotlib: per file "name colours std".
fn png_stats(py: &Path, files: &[PathBuf]) -> Vec<(usize, f64)> {
    let out = Command::new(py)
        .arg("-c")
        .arg(
            "import sys, numpy as np, matplotlib.image as mi\n\
             for p in sys.argv[1:]:\n\
             \x20   a = mi.imread(p)[..., :3].reshape(-1, 3)\n\
             \x20   print(len(np.unique(a, axis=0)), float(a.std()))\n",
        )
        .args(files)
        .output()
        .unwrap();
    let s = ok(out, "decoding PNGs");
    s.lines()
        .map(|l| {
            let mut it = l.split_whitespace();
            (it.next().unwrap().parse().unwrap(), it.next().unwrap().parse().unwrap())
        })
        .collect()
}

fn pixels_differ(py: &Path, a: &Path, b: &Path) -> bool {
    let out = Command::new(py)
        .arg("-c")
        .arg(
            "import sys, numpy as np, matplotlib.image as mi\n\
             a, b = mi.imread(sys.argv[1]), mi.imread(sys.argv[2])\n\
             print(1 if a.shape != b.shape or np.any(a != b) else 0)\n",
        )
        .args([a, b])
        .output()
        .unwrap();
    ok(out, "comparing PNGs").trim() == "1"
}

const PNGS: [&str; 4] = ["force-network.png", "force-histogram.png", "floor-pressure.png", "energy-dt.png"];

fn plot(out: &Path, dest: &Path, extra: &[&str]) -> String {
    let o = Command::new(root().join("scripts/plot")).arg(out).arg("--out").arg(dest).args(extra).output().unwrap();
    ok(o, "scripts/plot")
}

fn check_pngs(py: &Path, dir: &Path) {
    let files: Vec<PathBuf> = PNGS.iter().map(|n| dir.join(n)).collect();
    for f in &files {
        let bytes = fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(bytes.len() > 5000 && bytes.starts_with(b"\x89PNG"), "{}: not a PNG with content", f.display());
    }
    for (f, (colours, std)) in files.iter().zip(png_stats(py, &files)) {
        assert!(colours > 10 && std > 0.01, "{}: nearly a single colour ({colours} colours, std {std})", f.display());
    }
}

#[test]
fn plot_pictures_depend_on_the_forces() {
    let Some(py) = venv_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let synth = root().join("tests/py/synth_frames.py");
    for (name, seed, scale) in [("a", "1", "1.0"), ("b", "2", "5.0")] {
        let o = Command::new(&py).arg(&synth).arg(tmp.path().join(name)).args([seed, scale]).output().unwrap();
        ok(o, "synth_frames.py");
    }
    let printed = plot(&tmp.path().join("a"), &tmp.path().join("pa"), &[]);
    assert_eq!(printed.lines().count(), 4, "{printed}");
    plot(&tmp.path().join("b"), &tmp.path().join("pb"), &[]);
    check_pngs(&py, &tmp.path().join("pa"));
    check_pngs(&py, &tmp.path().join("pb"));
    for n in PNGS {
        assert!(
            pixels_differ(&py, &tmp.path().join("pa").join(n), &tmp.path().join("pb").join(n)),
            "{n} is the same for different forces"
        );
    }
    // The same forces on other contacts (same count, maximum, histogram and
    // titles): the network must still change, and the histogram must not.
    let o = Command::new(&py).arg(&synth).arg(tmp.path().join("a-perm")).args(["1", "1.0", "permute"]).output().unwrap();
    ok(o, "synth_frames.py permute");
    plot(&tmp.path().join("a-perm"), &tmp.path().join("pa-perm"), &[]);
    assert!(
        pixels_differ(&py, &tmp.path().join("pa/force-network.png"), &tmp.path().join("pa-perm/force-network.png")),
        "force-network.png does not show which contact carries which force"
    );
    assert!(
        !pixels_differ(&py, &tmp.path().join("pa/force-histogram.png"), &tmp.path().join("pa-perm/force-histogram.png")),
        "force-histogram.png changed under a permutation of the forces"
    );
    // Another frame of the same file gives another picture; a missing frame is an error.
    plot(&tmp.path().join("a"), &tmp.path().join("pa10"), &["--frame", "10"]);
    assert!(pixels_differ(&py, &tmp.path().join("pa/force-network.png"), &tmp.path().join("pa10/force-network.png")));
    let o = Command::new(root().join("scripts/plot")).arg(tmp.path().join("a")).args(["--frame", "11"]).output().unwrap();
    assert!(!o.status.success(), "a missing frame should fail");
    assert!(String::from_utf8_lossy(&o.stderr).contains("no frame at step 11"));
}

#[test]
fn plot_on_a_real_run() {
    let Some(py) = venv_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = vec!["run", "configs/scaling.toml", "--set"];
    let dir = format!("output.dir={}", out.display());
    args.push(&dir);
    for kv in TINY.split(' ') {
        args.extend(["--set", kv]);
    }
    args.extend(["--set", "output.every=1", "--set", "simulation.gravity=[0.0,0.0,-50.0]"]);
    let mut c = common::mpirun_cmd(2, &common::stiffgrain(), &args);
    ok(c.current_dir(root()).output().unwrap(), "stiffgrain run");
    plot(&out, &tmp.path().join("p"), &["--plane", "xz"]);
    check_pngs(&py, &tmp.path().join("p"));
}

#[test]
fn scaling_script_writes_csvs_and_plots() {
    let Some(_py) = venv_python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("scaling");
    let o = Command::new(root().join("scripts/scaling"))
        .args(["--out", dest.to_str().unwrap(), "--count", "300", "--n-per-rank", "150", "--box", "0.07 0.07 0.07"])
        .args(["--set", "simulation.t_end=0.004", "--set", "generate[0].box_max=[0.1,0.1,0.1]"])
        .args(["1", "2"])
        .env("STIFFGRAIN", common::stiffgrain())
        .output()
        .unwrap();
    ok(o, "scripts/scaling");
    check_rows(&dest.join("strong.csv"), &[1.0, 2.0], &[300.0, 300.0], 4.0);
    check_rows(&dest.join("weak.csv"), &[1.0, 2.0], &[150.0, 300.0], 4.0);
    for n in ["strong-speedup.png", "strong-efficiency.png", "strong-phases.png", "weak-efficiency.png", "weak-phases.png"] {
        let b = fs::read(dest.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert!(b.len() > 5000 && b.starts_with(b"\x89PNG"), "{n}");
    }
}
