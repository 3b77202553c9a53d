//! One run per output.dir: a second run or restart into a directory in use
//! is refused naming the holder; a restart refuses a checkpoint of another
//! run than the frames already there; pruning removes only the run's own
//! checkpoints.
mod common;

use common::Spheres;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A pile of `n` layers on a floor, checkpoints every 10 steps.
fn scene(layers: u32, t_end: f64) -> Spheres {
    Spheres::new("cd", t_end, 0.001, [0.0, 0.0, -9.81], 0.05)
        .lattice([0.0, 0.0, 0.06], [4, 4, layers], 0.01, [0.0; 3])
        .ground()
        .output("every = 10\ncheckpoint_every = 10\ncheckpoint_keep = 2")
}

fn write(dir: &Path, name: &str, s: &Spheres, out: &Path) -> PathBuf {
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, s.toml_into(out)).unwrap();
    cfg
}

fn checkpoints(out: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("checkpoint-") && n.ends_with(".h5"))
        .collect();
    v.sort();
    v
}

/// Exit status and both streams.
fn run(np: usize, args: &[&str]) -> (i32, String) {
    let o = common::mpirun(np, &common::stiffgrain(), args);
    (o.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

fn assert_refused(code: i32, text: &str, words: &[&str]) {
    assert_eq!(code, 2, "refused with status 2:\n{text}");
    assert!(!text.contains("panicked"), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| words.iter().all(|w| l.contains(w))).collect();
    assert_eq!(lines.len(), 1, "one line with {words:?}:\n{text}");
}

#[test]
fn a_second_run_or_restart_into_a_directory_in_use_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // A first run, long enough to be running while the others try.
    // It keeps every checkpoint: with pruning, checkpoint 10 can come and go
    // between two polls on a loaded machine.
    let long = write(tmp.path(), "long", &scene(3, 100.0), &out);
    let text = std::fs::read_to_string(&long).unwrap().replace("checkpoint_keep = 2", "checkpoint_keep = 1000000");
    std::fs::write(&long, text).unwrap();
    let mut first = common::mpirun_cmd(2, &common::stiffgrain(), &["run", long.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = (0..3000).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        out.join("checkpoint-000010.h5").exists()
    });
    assert!(started, "the first run did not get going");
    let frames_before = std::fs::read(out.join("frames.h5")).map(|b| b.len()).unwrap_or(0);
    for np in [1, 2] {
        let (code, text) = run(np, &["run", long.to_str().unwrap(), "--overwrite"]);
        assert_refused(code, &text, &[&out.display().to_string(), "in use by another run (pid", "run"]);
        let ck = out.join("checkpoint-000010.h5");
        if ck.exists() {
            let (code, text) = run(np, &["restart", ck.to_str().unwrap()]);
            assert_refused(code, &text, &["in use by another run"]);
        }
    }
    assert!(first.try_wait().unwrap().is_none(), "the first run is still running");
    // The first run's files were not touched by the refused ones.
    assert!(std::fs::read(out.join("frames.h5")).map(|b| b.len()).unwrap_or(0) >= frames_before);
    // kill -9 of the ranks themselves: the kernel drops their lock.
    let pattern = format!("^{} run {}", common::stiffgrain().display(), long.display());
    assert!(std::process::Command::new("pkill").args(["-KILL", "-f", &pattern]).status().unwrap().success());
    first.wait().unwrap();
    // Once it has ended (even killed), the directory is free again.
    let short = write(tmp.path(), "short", &scene(1, 0.01), &out);
    common::mpirun_ok(2, &common::stiffgrain(), &["run", short.to_str().unwrap(), "--overwrite"]);
}

#[test]
fn a_checkpoint_of_another_run_is_refused_and_never_pruned() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let cfg_a = write(tmp.path(), "a", &scene(2, 0.03), &a);
    let cfg_b = write(tmp.path(), "b", &scene(1, 0.03), &b);
    common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg_a.to_str().unwrap()]);
    common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg_b.to_str().unwrap()]);
    let (cks_a, frames_a) = (checkpoints(&a), std::fs::read(a.join("frames.h5")).unwrap());
    assert_eq!(cks_a, ["checkpoint-000020.h5", "checkpoint-000030.h5"]);
    // B's checkpoint restarted into A's directory.
    let foreign = b.join("checkpoint-000020.h5");
    for np in [1, 2] {
        let (code, text) = run(np, &["restart", foreign.to_str().unwrap(), "--set", &format!("output.dir={}", a.display())]);
        assert_refused(code, &text, &[&a.join("frames.h5").display().to_string(), "belongs to another run"]);
        assert_eq!(checkpoints(&a), cks_a, "np {np}: A's checkpoints are kept");
        assert!(std::fs::read(a.join("frames.h5")).unwrap() == frames_a, "np {np}: A's frames are untouched");
    }
    // A's own checkpoint restarts there.
    common::mpirun_ok(2, &common::stiffgrain(), &["restart", a.join("checkpoint-000020.h5").to_str().unwrap()]);
    // A new run with --overwrite into A's directory, checkpointing and
    // pruning: A's checkpoints are not its own and stay.
    // (Every 7 steps: --overwrite replaces files of the same name.)
    let cfg_c = write(tmp.path(), "c", &scene(1, 0.05), &a);
    let text = std::fs::read_to_string(&cfg_c).unwrap().replace("checkpoint_keep = 2", "checkpoint_keep = 1").replace("checkpoint_every = 10", "checkpoint_every = 7\ncheckpoint_at_end = true");
    std::fs::write(&cfg_c, text).unwrap();
    common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg_c.to_str().unwrap(), "--overwrite"]);
    let after = checkpoints(&a);
    for k in &cks_a {
        assert!(after.contains(k), "{k} of the earlier run was pruned: {after:?}");
    }
    assert_eq!(after.len(), cks_a.len() + 1, "the new run keeps one of its own: {after:?}");
    assert!(after.contains(&"checkpoint-000050.h5".to_string()), "the new run's last, at its end: {after:?}");
}
