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
