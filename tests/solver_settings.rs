//! Each solver resolves only its own settings: another solver's table does
//! not stop a run, and is named once (rank 0) as ignored.
mod common;
use std::path::Path;

/// Two balls resting on each other on a floor, under `solver`; `extra` is
/// appended to the config.
fn scene(solver: &str, extra: &str) -> String {
    format!(
        r#"
[simulation]
solver = "{solver}"
t_end = 0.005
dt = 0.001

[[material]]
name = "steel"
density = 7800.0

[[shape]]
name = "ball"
kind = "sphere"
radius = 0.5

[[body]]
shape = "ball"
position = [0.0, 0.0, 0.6]

[[body]]
shape = "ball"
position = [0.0, 0.0, 1.7]

[[wall]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]

[output]
dir = "OUTDIR"
{extra}
"#
    )
}

/// Runs `text` on `np` ranks in `dir`; returns (exit status, stderr).
fn run(dir: &Path, np: usize, text: &str) -> (Option<i32>, String) {
    let out = dir.join("out");
    let cfg = dir.join("scene.toml");
    std::fs::write(&cfg, text.replace("OUTDIR", &out.display().to_string())).unwrap();
    let o = common::mpirun(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// As [`run`], with PETSc options after `--`.
fn run_with(dir: &Path, np: usize, text: &str, petsc: &[&str]) -> (Option<i32>, String) {
    let out = dir.join("out");
    let cfg = dir.join("scene.toml");
    std::fs::write(&cfg, text.replace("OUTDIR", &out.display().to_string())).unwrap();
    let args = [&["run", cfg.to_str().unwrap(), "--overwrite", "--"][..], petsc].concat();
    let o = common::mpirun(np, &common::stiffgrain(), &args);
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The stderr lines that contain `text`.
fn lines_with<'a>(stderr: &'a str, text: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.contains(text)).collect()
}

#[test]
fn cd_with_zero_contact_distance_runs_to_its_end() {
    // The DEM's activation gap defaults to half of contact.distance; CD has
    // none, so a cd scene may detect only touching contacts.
    let dir = tempfile::tempdir().unwrap();
    let text = scene("cd", "[contact]\ndistance = 0.0\n").replace("0.6]", "0.5]").replace("1.7]", "1.5]");
    let (code, stderr) = run(dir.path(), 1, &text);
    assert_eq!(code, Some(0), "{stderr}");
    let summary = std::fs::read_to_string(dir.path().join("out/summary.json")).expect("summary.json of a finished run");
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["steps"], 5, "{summary}");
    assert!((summary["time"].as_f64().unwrap() - 0.005).abs() < 1e-12, "{summary}");
}

#[test]
fn dem_table_under_cd_warns_once_on_two_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run(dir.path(), 2, &scene("cd", "[dem]\ndamping = 0.5\ngbar = -1.0\n"));
    assert_eq!(code, Some(0), "an ignored table is no error: {stderr}");
    let hits = lines_with(&stderr, "[dem] is ignored by solver \"cd\"");
    assert_eq!(hits.len(), 1, "one line on two ranks: {stderr}");
    assert!(hits[0].contains("scene.toml"), "the line names the file: {}", hits[0]);
}

#[test]
fn friction_is_read_by_cd_and_compatible_cd_and_refused_by_the_augmented_lagrangian_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let with_friction = |solver: &str, extra: &str| scene(solver, extra).replace("density = 7800.0", "density = 7800.0\nfriction = 0.5");
    for solver in ["cd", "compatible-cd"] {
        let sub = dir.path().join(solver);
        std::fs::create_dir(&sub).unwrap();
        let (code, stderr) = run(&sub, 2, &with_friction(solver, ""));
        assert_eq!(code, Some(0), "{solver}: {stderr}");
        assert!(lines_with(&stderr, "ignored").is_empty(), "friction under {solver} is no ignored setting: {stderr}");
    }
    let sub = dir.path().join("al");
    std::fs::create_dir(&sub).unwrap();
    let (code, stderr) = run(&sub, 2, &with_friction("compatible-cd", "[compatibility]\nmethod = \"augmented-lagrangian\"\n"));
    assert_eq!(code, Some(2), "{stderr}");
    let hits = lines_with(&stderr, "compatibility.method: \"augmented-lagrangian\" is frictionless and material[0] has friction");
    assert_eq!(hits.len(), 1, "one line on two ranks: {stderr}");
    assert!(hits[0].contains("scene.toml"), "the line names the file: {}", hits[0]);
}

/// The Δt controller's keys without `dt_control = "iterations"` are
/// named in one warning; with it, none.
#[test]
fn step_control_keys_without_the_control_are_named_as_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run(dir.path(), 2, &scene("cd", "[solver]\ndt_min = 1e-5\ntarget_iterations = 10\n"));
    assert_eq!(code, Some(0), "{stderr}");
    let hits = lines_with(&stderr, "solver.dt_min, solver.target_iterations are ignored");
    assert_eq!(hits.len(), 1, "one line on two ranks: {stderr}");
    let sub = dir.path().join("on");
    std::fs::create_dir(&sub).unwrap();
    let (code, stderr) = run(&sub, 2, &scene("cd", "[solver]\ndt_control = \"iterations\"\ndt_min = 1e-5\ntarget_iterations = 10\n"));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(lines_with(&stderr, "ignored").is_empty(), "{stderr}");
}

#[test]
fn dem_table_under_dem_does_not_warn() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run(dir.path(), 2, &scene("dem", "[dem]\ndamping = 0.5\n"));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(lines_with(&stderr, "ignored").is_empty(), "{stderr}");
}

#[test]
fn a_bad_value_is_the_only_line_even_beside_an_ignored_table() {
    // Warnings come with a valid scene only: bad input stays one line, status 2.
    let dir = tempfile::tempdir().unwrap();
    let text = scene("cd", "[dem]\ndamping = 0.5\n").replace("radius = 0.5", "radius = -0.5");
    let (code, stderr) = run(dir.path(), 2, &text);
    assert_eq!(code, Some(2), "{stderr}");
    // (mpirun adds its own lines about the status.)
    assert_eq!(lines_with(&stderr, "scene.toml").len(), 1, "{stderr}");
    assert_eq!(lines_with(&stderr, "scene.toml: shape[0].radius: must be a positive number").len(), 1, "{stderr}");
    assert!(lines_with(&stderr, "ignored").is_empty(), "{stderr}");
}

/// PETSc options after `--` that no solver of the run read (a typo, or
/// another solver's) are named once, on two ranks, each once even when
/// given twice; the run goes on. The
/// same options where a solver reads them raise nothing.
#[test]
fn petsc_options_no_solver_read_are_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let unused = "PETSc options not used by this run";
    let (code, stderr) = run_with(dir.path(), 2, &scene("cd", ""), &["-cd_tao_typ", "bnls", "-ksp_rtol", "1e-3", "-cd_tao_typ", "gpcg"]);
    assert_eq!(code, Some(0), "{stderr}");
    let hits = lines_with(&stderr, unused);
    assert_eq!(hits.len(), 1, "one line on two ranks: {stderr}");
    assert!(hits[0].contains("-cd_tao_typ ") && hits[0].contains("-ksp_rtol"), "the line names both options: {}", hits[0]);
    assert_eq!(hits[0].matches("-cd_tao_typ").count(), 1, "an option given twice, apart, is named once: {}", hits[0]);
    let (code, stderr) = run_with(dir.path(), 2, &scene("dem", ""), &["-ksp_rtol", "1e-8", "-snes_max_it", "40"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(lines_with(&stderr, unused).is_empty(), "the DEM reads both: {stderr}");
}

/// Options from the environment's PETSC_OPTIONS are checked too, and
/// named as coming from there; one also given after `--` is named once.
#[test]
fn petsc_options_from_the_environment_no_solver_read_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let unused = "PETSc options not used by this run";
    let run_env = |solver: &str, env: &str, after: &[&str]| {
        let out = dir.path().join("out");
        let cfg = dir.path().join("scene.toml");
        std::fs::write(&cfg, scene(solver, "").replace("OUTDIR", &out.display().to_string())).unwrap();
        let args = [&["run", cfg.to_str().unwrap(), "--overwrite", "--"][..], after].concat();
        let o = common::mpirun_cmd(2, &common::stiffgrain(), &args).env("PETSC_OPTIONS", env).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (code, stderr) = run_env("cd", "-snes_max_it 40 -cd_snes_typo vinewtonssls", &["-ksp_rtol", "1e-3"]);
    assert_eq!(code, Some(0), "{stderr}");
    let hits = lines_with(&stderr, unused);
    assert_eq!(hits.len(), 1, "one line on two ranks: {stderr}");
    assert!(hits[0].contains("-ksp_rtol, -snes_max_it -cd_snes_typo (from PETSC_OPTIONS)"), "{}", hits[0]);
    let (code, stderr) = run_env("cd", "-ksp_rtol 1e-3", &["-ksp_rtol", "1e-3"]);
    assert_eq!(code, Some(0), "{stderr}");
    let hits = lines_with(&stderr, unused);
    assert!(hits.len() == 1 && hits[0].matches("-ksp_rtol").count() == 1 && !hits[0].contains("PETSC_OPTIONS"), "{stderr}");
    let (code, stderr) = run_env("dem", "-snes_max_it 40 -ksp_rtol 1e-8", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(lines_with(&stderr, unused).is_empty(), "the DEM reads both: {stderr}");
}
