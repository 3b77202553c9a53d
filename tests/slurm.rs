//! Runs that outlive one start, and the slurm/*.sbatch scripts under a real
//! SLURM.
//!
//! `summary_covers_the_whole_run_after_an_extension` runs everywhere. The
//! others start a single-node SLURM cluster with `scripts/slurm-local`
//! (munged, slurmctld, slurmd as root, state in a temporary directory,
//! stopped by PID at the end) and submit the real scripts:
//! - run.sbatch with `--time=1 --signal=B:USR1@50`: SLURM's USR1 arrives
//!   mid-run, the run checkpoints, the job requeues itself and resumes until
//!   the run ends (the test raises the limit after the first requeue); the
//!   last frame equals an uninterrupted run's on the same 2 ranks bit for
//!   bit, and summary.json's tallies equal its tallies;
//! - one `scancel` ends the job for good (no requeue);
//! - strong- and weak-scaling.sbatch write their tables, and
//!   scripts/py/scaling_plot.py draws them.
//!
//! They need root and the SLURM daemons (`scripts/slurm-local install`, which
//! scripts/test runs as root with apt-get); without them they report
//! themselves skipped (`common::skip`), unless `STIFFGRAIN_REQUIRE_SLURM` is
//! set, where they fail.
//!
//! SLURM signals and enforces time limits on a 30 s tick, and holds a
//! requeued job for `cred_expire` seconds before it may start again (120 by
//! default, 10 in scripts/slurm-local's cluster).
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn summary(out: &Path) -> serde_json::Value {
    let p = out.join("summary.json");
    serde_json::from_str(&fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}


fn assert_same_last_frame(a: &Path, b: &Path) {
    let (x, y) = (common::last_frame_bits(a), common::last_frame_bits(b));
    assert_eq!(x.iter().map(|d| &d.0).collect::<Vec<_>>(), y.iter().map(|d| &d.0).collect::<Vec<_>>(), "other frames or datasets");
    let differ: Vec<&str> = x.iter().zip(&y).filter(|(p, q)| p.1 != q.1).map(|(p, _)| p.0.as_str()).collect();
    assert!(differ.is_empty(), "{differ:?} differ between {} and {}", a.display(), b.display());
}

/// The tallies summary.json adds up over a run's starts.
fn assert_same_tallies(whole: &serde_json::Value, pieces: &serde_json::Value) {
    for k in ["steps", "time", "solver_iterations_total", "solver_iterations_per_step", "dt_taken", "linear_iterations_total"] {
        assert_eq!(whole[k], pieces[k], "summary.json {k}");
    }
    // A sum over the bodies in each rank's order, which a restart changes.
    let (a, b) = (whole["kinetic_energy"].as_f64().unwrap(), pieces["kinetic_energy"].as_f64().unwrap());
    assert!((a - b).abs() <= 1e-12 * a.abs(), "kinetic energy {a} vs {b}");
    assert_eq!(pieces["tallies_from_step"], 1);
    assert_eq!(pieces["interrupted"], false);
    assert!(pieces.get("resume_from").is_none(), "resume_from after the end: {pieces}");
}

/// A run to t_end, then its end checkpoint (written by default) restarted
/// with a later t_end: the frames and summary.json equal one run to the later
/// t_end (steps, per-step iterations, Δt), and the wall time and phases
/// add both starts'.
#[test]
fn summary_covers_the_whole_run_after_an_extension() {
    let tmp = tempfile::tempdir().unwrap();
    let (whole, part) = (tmp.path().join("whole"), tmp.path().join("part"));
    for (out, steps) in [(&whole, 400), (&part, 200)] {
        let cfg = tmp.path().join(format!("{steps}.toml"));
        fs::write(&cfg, pile(steps)).unwrap();
        let dir = format!("output.dir={}", out.display());
        common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--set", &dir]);
    }
    let first = summary(&part);
    assert_eq!(first["steps"], 200);
    assert_eq!(first["interrupted"], false);
    let cp = part.join("checkpoint-000200.h5");
    assert!(cp.exists(), "no checkpoint at the end of the run (output.checkpoint_at_end defaults to true)");
    common::mpirun_ok(2, &common::stiffgrain(), &["restart", cp.to_str().unwrap(), "--set", "simulation.t_end=0.4"]);
    let (w, p) = (summary(&whole), summary(&part));
    assert_same_tallies(&w, &p);
    assert!(w["solver_iterations_total"].as_u64().unwrap() > 400, "the solver did no work: {w}");
    assert!(p["wall_time"].as_f64().unwrap() > first["wall_time"].as_f64().unwrap());
    for (name, v) in p["phases"].as_object().unwrap() {
        let (before, after) = (first["phases"][name][1].as_f64().unwrap(), v[1].as_f64().unwrap());
        assert!(after >= before, "phase {name}: {after} s over the whole run < {before} s in its first start");
    }
    // One restart more: its own first neighbour build adds to the rebuilds.
    assert!(p["rebuilds"].as_u64().unwrap() >= w["rebuilds"].as_u64().unwrap());
    assert_same_last_frame(&whole, &part);
}

/// A single-node SLURM cluster from scripts/slurm-local, stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Cluster {
    /// Starts one, or says why it cannot (skipped; a failure under
    /// `STIFFGRAIN_REQUIRE_SLURM`).
    fn start() -> Option<Self> {
        let missing = |what: &str| {
            let msg = format!("no SLURM cluster: {what}; as root, scripts/slurm-local install (scripts/test does)");
            if std::env::var_os("STIFFGRAIN_REQUIRE_SLURM").is_some() {
                panic!("{msg}");
            }
            common::skip(&msg);
            None
        };
        let uid = Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if uid.as_deref().ok() != Some("0") {
            return missing("the daemons run as root and this is not root");
        }
        for tool in ["munged", "slurmctld", "slurmd", "sbatch", "scontrol"] {
            let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().map(|o| o.status.success()).unwrap_or(false);
            if !found {
                return missing(&format!("{tool} is not installed"));
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("slurm");
        let o = Command::new(root().join("scripts/slurm-local")).arg("start").arg(&state).output().unwrap();
        assert!(o.status.success(), "scripts/slurm-local start: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        Some(Self { conf: state.join("slurm.conf"), dir })
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf)
            .current_dir(root())
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            .env("STIFFGRAIN", common::stiffgrain());
        c
    }

    /// `sbatch --parsable ARGS SCRIPT` with `env` exported; the job id.
    fn sbatch(&self, script: &str, args: &[&str], env: &[(&str, String)]) -> String {
        let mut c = self.cmd("sbatch");
        c.arg("--parsable").args(args).arg(root().join(script));
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "sbatch {script}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().split(';').next().unwrap().to_string()
    }

    /// JobState, Reason and Restarts of a job.
    fn job(&self, id: &str) -> (String, String, u64) {
        let o = self.cmd("scontrol").args(["show", "job", "-o", id]).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let field = |k: &str| text.split_whitespace().find_map(|w| w.strip_prefix(&format!("{k}="))).unwrap_or("").to_string();
        (field("JobState"), field("Reason"), field("Restarts").parse().unwrap_or(0))
    }

    /// Waits until the job leaves the queue for good. Its final state and restarts.
    fn wait(&self, id: &str, output: &Path, limit: Duration) -> (String, u64) {
        let t0 = Instant::now();
        loop {
            let (state, reason, restarts) = self.job(id);
            if ended(&state) {
                return (state, restarts);
            }
            if t0.elapsed() > limit {
                let _ = self.cmd("scancel").arg(id).output();
                panic!("job {id} still {state} ({reason}) after {limit:?}\n{}\n{}", self.read(output), self.logs());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn read(&self, output: &Path) -> String {
        fs::read_to_string(output).unwrap_or_else(|e| format!("{}: {e}", output.display()))
    }

    fn logs(&self) -> String {
        let log = self.dir.path().join("slurm/log");
        ["slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| {
                let t = fs::read_to_string(log.join(f)).unwrap_or_default();
                let tail: Vec<&str> = t.lines().rev().take(15).collect();
                format!("--- {f}\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Whether a job in `state` has left the queue for good.
fn ended(state: &str) -> bool {
    matches!(state, "COMPLETED" | "CANCELLED" | "FAILED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY")
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(root().join("scripts/slurm-local")).arg("stop").arg(self.dir.path().join("slurm")).output();
    }
}

/// The scaling scene with `count` spheres for `t_end` seconds as SETS.
fn sets(count: u32, t_end: f64) -> String {
    format!("generate[0].count={count} simulation.t_end={t_end:?} output.every=0")
}

/// Spheres thrown onto a floor and at each other (tests/restart_exact.rs's
/// pile), `steps` steps of 1 ms, a frame at the end only.
fn pile(steps: u64) -> String {
    common::Spheres::new("cd", steps as f64 * 1e-3, 1e-3, [0.0, 0.0, -9.81], 0.05)
        .lattice([-0.3, 0.0, 0.06], [6, 3, 2], 0.004, [1.5, 0.0, -0.5])
        .moving_body([0.5, 0.1, 0.06], [-6.0, 0.0, 0.0])
        .ground()
        .with("[parallel]\nimbalance = 1.0\n")
        .output("every = 0\nthermo_every = 100000")
        .toml()
}

#[test]
fn run_sbatch_survives_its_time_limit_bit_for_bit() {
    let Some(cluster) = Cluster::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    // A run of at least 45 s on 2 ranks here: SLURM's USR1 (50 s before
    // the 1-minute limit) comes on its 30 s tick, so 10 to 40 s into a
    // start (after the ranks are up). Sized from a 10,000-step run (the
    // pile's first 2,000 steps cost half as much again as later ones, so a
    // shorter one sized the run short), then from the whole run itself (at
    // most four tries: the machine's speed may vary). The reference does not
    // run beside the job: 4 ranks on 2 cores made the job's steps several
    // times slower and its starts many.
    let run = |cfg: &Path, out: &Path| {
        let dir = format!("output.dir={}", out.display());
        common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--set", &dir, "--overwrite"]);
        summary(out)["wall_time"].as_f64().unwrap()
    };
    let cfg = tmp.path().join("pile.toml");
    let whole = tmp.path().join("whole");
    let mut steps = 10_000u64;
    fs::write(&cfg, pile(steps)).unwrap();
    let mut wall = run(&cfg, &whole);
    for _ in 0..4 {
        if wall >= 45.0 {
            break;
        }
        steps = ((steps as f64 * 55.0 / wall) as u64).clamp(10_000, 2_000_000);
        fs::write(&cfg, pile(steps)).unwrap();
        wall = run(&cfg, &whole);
        eprintln!("{steps} steps: {wall:.1} s");
    }

    let out = tmp.path().join("job");
    let output = tmp.path().join("job.out");
    let id = cluster.sbatch(
        "slurm/run.sbatch",
        &["--time=1", "--signal=B:USR1@50", "--ntasks=2", &format!("--output={}", output.display())],
        &[("CONFIG", cfg.display().to_string()), ("OUTDIR", out.display().to_string())],
    );
    // Once the first start has been signalled and has requeued the job, its
    // limit is raised (as an admin would): the later starts run to the end
    // instead of each being signalled again 10 to 40 s in (3 to 6 starts
    // before, each with its requeue wait).
    let t0 = Instant::now();
    while !cluster.read(&output).contains("requeueing job") && t0.elapsed() < Duration::from_secs(300) {
        if ended(&cluster.job(&id).0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    if cluster.read(&output).contains("requeueing job") {
        let o = cluster.cmd("scontrol").args(["update", &format!("JobId={id}"), "TimeLimit=10"]).output().unwrap();
        assert!(o.status.success(), "scontrol update TimeLimit: {}", String::from_utf8_lossy(&o.stderr));
    }
    let (state, restarts) = cluster.wait(&id, &output, Duration::from_secs(420));
    let text = cluster.read(&output);
    assert_eq!(state, "COMPLETED", "job {id}:\n{text}\n{}", cluster.logs());
    assert!(restarts >= 1, "job {id} was never requeued:\n{text}");
    assert!(text.contains("USR1 (time limit near)") && text.contains("requeueing job"), "{text}");
    assert!(text.contains("resuming from"), "{text}");
    assert!(!text.contains("nothing to do"), "{text}");
    // One start line per start in the job's output: nothing lost, nothing repeated.
    let starts = text.lines().filter(|l| l.starts_with("run.sbatch: starting") || l.starts_with("run.sbatch: resuming")).count();
    assert_eq!(starts as u64, restarts + 1, "{text}");
    assert_eq!(text.matches(" bodies on 2 ranks (").count(), starts, "each start's first line once:\n{text}");
    assert_eq!(text.matches("done: steps").count(), starts, "{text}");
    // Shown when an assertion below fails.
    eprintln!("job {id} ({steps} steps, {wall:.1} s uninterrupted):\n{text}");
    assert_same_tallies(&summary(&whole), &summary(&out));
    assert_same_last_frame(&whole, &out);
}

#[test]
fn scancel_stays_cancelled() {
    let Some(cluster) = Cluster::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("job");
    let output = tmp.path().join("job.out");
    let id = cluster.sbatch(
        "slurm/run.sbatch",
        &["--time=10", "--ntasks=2", &format!("--output={}", output.display())],
        &[("CONFIG", "configs/scaling.toml".into()), ("SETS", sets(2000, 5.0)), ("OUTDIR", out.display().to_string())],
    );
    // Running, and in its steps.
    let t0 = Instant::now();
    while !fs::read_to_string(&output).is_ok_and(|t| t.contains(" bodies on 2 ranks (")) {
        if t0.elapsed() > Duration::from_secs(120) {
            // A hang guard: the job is cancelled, not left queued.
            let _ = cluster.cmd("scancel").arg(&id).output();
            panic!("job {id} did not start in 120 s:\n{}\n{}", cluster.read(&output), cluster.logs());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let o = cluster.cmd("scancel").arg(&id).output().unwrap();
    assert!(o.status.success(), "scancel: {}", String::from_utf8_lossy(&o.stderr));
    let (state, restarts) = cluster.wait(&id, &output, Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(3));
    let (later, _, _) = cluster.job(&id);
    let text = cluster.read(&output);
    assert_eq!((state.as_str(), later.as_str(), restarts), ("CANCELLED", "CANCELLED", 0), "{text}");
    assert!(!text.contains("requeueing"), "{text}");
    // The run still checkpointed on the TERM: it can be resumed by hand.
    let s = summary(&out);
    assert_eq!(s["interrupted"], true, "{s}");
    assert!(Path::new(s["resume_from"].as_str().unwrap()).exists(), "{s}");
}

#[test]
fn scaling_sbatch_scripts_write_their_tables_and_plots() {
    let Some(cluster) = Cluster::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let tiny = "generate[0].count=300 generate[0].box_max=[0.1,0.1,0.1] simulation.t_end=0.005";
    for (kind, extra) in [("strong", vec![("SETS", tiny.to_string())]), ("weak", vec![("SETS", "simulation.t_end=0.004".to_string()), ("N_PER_RANK", "150".into()), ("BOX", "0.07 0.07 0.07".into())])] {
        let output = tmp.path().join(format!("{kind}.out"));
        let mut env = vec![
            ("CONFIG", "configs/scaling.toml".to_string()),
            ("CSV", tmp.path().join(format!("{kind}.csv")).display().to_string()),
            ("OUTROOT", tmp.path().join(kind).display().to_string()),
        ];
        env.extend(extra);
        let id = cluster.sbatch(&format!("slurm/{kind}-scaling.sbatch"), &["--ntasks=2", &format!("--output={}", output.display())], &env);
        let (state, _) = cluster.wait(&id, &output, Duration::from_secs(180));
        assert_eq!(state, "COMPLETED", "{kind}: {}", cluster.read(&output));
    }
    // ranks,bodies,contacts,steps,...: one row per rank count, 1 and 2.
    for (kind, bodies, steps) in [("strong", ["300", "300"], "5"), ("weak", ["150", "300"], "4")] {
        let text = fs::read_to_string(tmp.path().join(format!("{kind}.csv"))).unwrap();
        let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 2, "{kind}: {text}");
        for (k, r) in rows.iter().enumerate() {
            assert_eq!((r[0], r[1], r[3]), (["1", "2"][k], bodies[k], steps), "{kind}: {text}");
        }
    }
    let py = root().join(".venv/bin/python");
    if !py.exists() {
        if std::env::var_os("STIFFGRAIN_REQUIRE_PYTHON").is_some() {
            panic!("{} missing: run scripts/setup", py.display());
        }
        common::skip("the plots need the project venv (scripts/setup); the tables were checked");
        return;
    }
    let plots = tmp.path().join("plots");
    let o = Command::new(&py)
        .arg(root().join("scripts/py/scaling_plot.py"))
        .arg("--out")
        .arg(&plots)
        .arg("--strong")
        .arg(tmp.path().join("strong.csv"))
        .arg("--weak")
        .arg(tmp.path().join("weak.csv"))
        .output()
        .unwrap();
    assert!(o.status.success(), "scaling_plot.py: {}", String::from_utf8_lossy(&o.stderr));
    for n in ["strong-speedup.png", "strong-efficiency.png", "strong-phases.png", "weak-efficiency.png", "weak-phases.png"] {
        let b = fs::read(plots.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert!(b.len() > 5000 && b.starts_with(b"\x89PNG"), "{n}");
    }
}
