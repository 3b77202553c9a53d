//! SIGTERM or SIGUSR1 mid-run: a checkpoint at the next step boundary on
//! every rank, exit status 0, and a resume that ends where an uninterrupted
//! run ends.
mod common;
use std::path::Path;
use std::time::Duration;

/// 500 spheres in a lattice, long enough to be interrupted.
fn scene() -> common::Spheres {
    common::Spheres::new("dem", 2.0, 0.001, [0.0, 0.0, -9.81], 0.05)
        .lattice([0.0; 3], [10, 10, 5], 0.05, [1.0, 0.5, 3.0])
        .output("every = 500\nthermo_every = 1\ncheckpoint_keep = 3")
}

fn config(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let out = dir.join(format!("out-{name}"));
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, scene().toml_into(&out)).unwrap();
    (cfg, out)
}

fn last_positions(out: &Path) -> (String, Vec<f64>) {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let mut names = f.group("frames").unwrap().member_names().unwrap();
    names.sort();
    let last = names.last().unwrap().clone();
    let p = f.dataset(&format!("frames/{last}/bodies/position")).unwrap().read_raw::<f64>().unwrap();
    (last, p)
}

/// Starts a run, waits until it has taken some steps, sends `signal` (to the
/// rank processes, as SLURM does, or to mpirun, which forwards SIGUSR1), and
/// returns rank 0's stdout.
fn interrupted(np: usize, cfg: &Path, out: &Path, signal: &str, to_ranks: bool) -> String {
    let child = common::mpirun_cmd(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Poll the log (at most 6000 × 20 ms) until the run has taken 300 steps.
    let started = (0..6000).any(|_| {
        let lines = std::fs::read_to_string(out.join("log.txt")).map(|s| s.lines().count()).unwrap_or(0);
        std::thread::sleep(Duration::from_millis(20));
        lines > 300
    });
    assert!(started, "the run did not get going");
    let status = if to_ranks {
        std::process::Command::new("pkill").args([&format!("-{signal}"), "-f", &format!("^{} run {}", common::stiffgrain().display(), cfg.display())]).status()
    } else {
        std::process::Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status()
    };
    assert!(status.unwrap().success(), "could not signal the run");
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "a signalled run exits 0: {}\n{stdout}\n{}", o.status, String::from_utf8_lossy(&o.stderr));
    stdout
}

#[test]
fn a_signalled_run_resumes_to_the_same_final_state() {
    let dir = tempfile::tempdir().unwrap();
    let (cfg, out) = config(dir.path(), "whole");
    common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    let (last, whole) = last_positions(&out);

    for (name, signal, to_ranks, np_restart) in [("term", "TERM", true, 3), ("usr1", "USR1", false, 1)] {
        let (cfg, out) = config(dir.path(), name);
        let stdout = interrupted(2, &cfg, &out, signal, to_ranks);
        let line = stdout.lines().find(|l| l.contains("resume with: stiffgrain restart ")).unwrap_or_else(|| panic!("no resume line: {stdout}"));
        let cp = line.rsplit(' ').next().unwrap();
        assert!(Path::new(cp).exists(), "{cp}");
        let (stopped_at, _) = last_positions(&out);
        assert!(stopped_at < last, "the run was interrupted before its end ({stopped_at})");
        common::mpirun_ok(np_restart, &common::stiffgrain(), &["restart", cp]);
        let (end, resumed) = last_positions(&out);
        assert_eq!(end, last);
        for (a, b) in whole.iter().zip(&resumed) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + a.abs()), "{name}: {a} vs {b}");
        }
    }
}

/// A sphere pile touching its floor, every solver's contacts active from
/// the first step.
fn touching(solver: &str) -> common::Spheres {
    let gap = if solver == "dem" { 1e-4 } else { 0.0 };
    common::Spheres::new(solver, 0.004, 0.001, [0.0, 0.0, -9.81], 0.05)
        .lattice([0.0, 0.0, 0.05 + gap], [3, 3, 2], gap, [0.0; 3])
        .ground()
        .every(1)
}

/// SIGTERM to mpirun while the first step is inside a solve that would take
/// hours: mpirun forwards TERM and kills the ranks a second later, so the
/// ranks must notice between iterations. The step is abandoned, the state
/// before it checkpointed, and a restart from it (with the usual settings)
/// ends bit for bit where an uninterrupted run ends.
#[test]
fn a_term_to_mpirun_inside_a_long_step_ends_in_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    // (solver, settings that never converge, PETSc options that never converge, the usual settings on restart)
    let cases: [(&str, &str, &[&str], &[&str]); 3] = [
        ("cd", "[solver]\ntolerance = 1e-300\nmax_iterations = 2000000000\n", &[], &["--set", "solver.tolerance=1e-8", "--set", "solver.max_iterations=20000"]),
        (
            "compatible-cd",
            "[compatibility]\nmethod = \"apgd\"\nfeasibility_tolerance = 1e-300\nmax_iterations = 2000000000\n",
            &[],
            &["--set", "compatibility.feasibility_tolerance=1e-10", "--set", "compatibility.max_iterations=200000"],
        ),
        // Newton steps damped to a millionth: a solve that never ends.
        ("dem", "", &["--", "-snes_max_it", "1000000000", "-snes_linesearch_type", "basic", "-snes_linesearch_damping", "1e-6"], &[]),
    ];
    // CD on 1 rank too; each solver on 2.
    let runs = std::iter::once((1, &cases[0])).chain(cases.iter().map(|c| (2, c)));
    for (np, (solver, slow, petsc, usual)) in runs {
        let (solver, slow, petsc, usual) = (*solver, *slow, *petsc, *usual);
        let reference = dir.path().join(format!("ref-{solver}-{np}"));
        let cfg = dir.path().join(format!("ref-{solver}-{np}.toml"));
        std::fs::write(&cfg, touching(solver).toml_into(&reference)).unwrap();
        common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);

        let out = dir.path().join(format!("long-{solver}-{np}"));
        let cfg = dir.path().join(format!("long-{solver}-{np}.toml"));
        std::fs::write(&cfg, touching(solver).with(slow).toml_into(&out)).unwrap();
        let mut args = vec!["run", cfg.to_str().unwrap()];
        args.extend_from_slice(petsc);
        // mpirun (OpenMPI 4) sends the ranks SIGCONT, TERM
        // odls_base_sigkill_timeout (default 1 s) later, and KILL as long
        // after that, sleeping out both: 4 s gives a loaded test machine
        // time to write the checkpoint, and a case ends about 7 s after its
        // TERM (with 10 s it was 20 s, most of this test's time).
        let mut child = common::mpirun_cmd(np, &common::stiffgrain(), &args)
            .env("OMPI_MCA_odls_base_sigkill_timeout", "4")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The log's header is written just before the first step.
        let started = (0..3000).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            std::fs::read_to_string(out.join("log.txt")).is_ok_and(|s| !s.is_empty())
        });
        assert!(started, "{solver} on {np}: the run did not get going");
        std::thread::sleep(Duration::from_secs(2));
        assert!(child.try_wait().unwrap().is_none(), "{solver} on {np}: the slow step ended by itself");
        let sent = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(sent.success());
        // Watchdog: the ranks stop within seconds, not at the step's end.
        let ended = (0..1500).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            child.try_wait().unwrap().is_some()
        });
        if !ended {
            child.kill().ok();
        }
        let o = child.wait_with_output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(ended, "{solver} on {np}: still running 30 s after TERM\n{stdout}\n{stderr}");
        let cp = out.join("checkpoint-000000.h5");
        assert!(cp.exists(), "{solver} on {np}: no checkpoint of the state before step 1 ({})\n{stdout}\n{stderr}", o.status);
        let mut args = vec!["restart", cp.to_str().unwrap()];
        args.extend_from_slice(usual);
        common::mpirun_ok(np, &common::stiffgrain(), &args);
        let (a, b) = (last_positions(&reference), last_positions(&out));
        assert_eq!(a.0, b.0, "{solver} on {np}: the resumed run ends at the same step");
        assert!(a.1.iter().zip(&b.1).all(|(x, y)| x.to_bits() == y.to_bits()), "{solver} on {np}: positions differ\n{:?}\n{:?}", a.1, b.1);
    }
}
