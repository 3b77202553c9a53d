//! Bad input: exit status 2, one line naming the file and the key, and an
//! earlier run's output left untouched.
mod common;
use std::path::Path;
use std::process::Command;

const GOOD: &str = r#"
[simulation]
solver = "cd"
t_end = 0.01
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
position = [0.0, 0.0, 1.0]

[[body]]
shape = "ball"
position = [2.0, 0.0, 1.0]

[output]
dir = "OUTDIR"
"#;

/// Writes the config (OUTDIR replaced by an existing run's directory that
/// holds a marker) and returns (status, stderr).
fn run_bad(dir: &Path, text: &str, extra: &[&str], np: Option<usize>) -> (Option<i32>, String) {
    let out = dir.join("previous-run");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("frames.h5"), b"earlier results").unwrap();
    let text = text.replace("OUTDIR", &out.display().to_string());
    let cfg = dir.join("scene.toml");
    std::fs::write(&cfg, text).unwrap();
    let cfg_s = cfg.display().to_string();
    let mut args = vec!["run", cfg_s.as_str()];
    args.extend_from_slice(extra);
    let o = match np {
        None => Command::new(common::stiffgrain())
            .args(&args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap(),
        Some(n) => common::mpirun(n, &common::stiffgrain(), &args),
    };
    assert_eq!(std::fs::read(out.join("frames.h5")).unwrap(), b"earlier results", "earlier output was touched");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1, "files were added to the earlier output dir");
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// `stiffgrain check` on `text` (OUTDIR a fresh directory's `out`) written
/// as `name` in a temporary directory.
fn check_scene(name: &str, text: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join(name);
    std::fs::write(&cfg, text.replace("OUTDIR", &dir.path().join("out").display().to_string())).unwrap();
    Command::new(common::stiffgrain())
        .args(["check", cfg.to_str().unwrap()])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap()
}

fn expect_error(text: &str, extra: &[&str], key: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_bad(dir.path(), text, extra, None);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(code, Some(2), "exit status for key {key}; stderr: {stderr}");
    assert_eq!(lines.len(), 1, "one line expected, got: {stderr}");
    assert!(lines[0].contains(key), "line should name `{key}`: {}", lines[0]);
    if key != "--set" {
        assert!(lines[0].contains("scene.toml"), "line should name the file: {}", lines[0]);
    }
}

#[test]
fn unknown_key() {
    expect_error(&GOOD.replace("dt = 0.001", "dt = 0.001\nfoo = 3"), &[], "simulation.foo:");
}

#[test]
fn wrong_type() {
    expect_error(&GOOD.replace("dt = 0.001", "dt = \"fast\""), &[], "simulation.dt");
}

#[test]
fn negative_dt() {
    expect_error(&GOOD.replace("dt = 0.001", "dt = -0.001"), &[], "simulation.dt");
}

#[test]
fn zero_radius() {
    expect_error(&GOOD.replace("radius = 0.5", "radius = 0.0"), &[], "shape[0].radius");
}

#[test]
fn missing_mesh_file() {
    let text = format!("{GOOD}\n[[shape]]\nname = \"rock\"\nkind = \"mesh\"\nfile = \"no-such-rock.stl\"\n");
    expect_error(&text, &[], "shape[1].file");
}

/// `check` opens the body files that the start-up would read: a missing
/// one is one line naming the config, the key and the file, exit status 2.
#[test]
fn check_reports_a_missing_body_file() {
    let text = format!("{GOOD}\n[[generate]]\nkind = \"file\"\nfile = \"no-such-pack.csv\"\nshape = \"ball\"\n");
    let o = check_scene("scene.toml", &text);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("scene.toml: generate[0].file:") && lines[0].contains("no-such-pack.csv"), "{}", lines[0]);
}

#[test]
fn empty_scene() {
    let text = GOOD.split("[[body]]").next().unwrap().to_string() + "\n[output]\ndir = \"OUTDIR\"\n";
    expect_error(&text, &[], "body");
}

#[test]
fn unknown_solver() {
    expect_error(&GOOD.replace("solver = \"cd\"", "solver = \"magic\""), &[], "simulation.solver");
}

#[test]
fn until_static_and_thermo_seconds_must_be_positive() {
    expect_error(&GOOD.replace("dt = 0.001", "dt = 0.001\nuntil_static = -1e-4"), &[], "simulation.until_static");
    expect_error(&GOOD.replace("dir = \"OUTDIR\"", "dir = \"OUTDIR\"\nthermo_seconds = 0.0"), &[], "output.thermo_seconds");
}

#[test]
fn wall_motion_errors() {
    let wall = "\n[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n";
    expect_error(&format!("{GOOD}{wall}velocity = [0.0, 0.0, 1.0]\npath = [[1.0, 0.0, 0.0, 1.0]]\n"), &[], "wall[0].path");
    expect_error(&format!("{GOOD}{wall}path = [[1.0, 0.0, 0.0, 1.0], [0.5, 0.0, 0.0, 2.0]]\n"), &[], "wall[0].path[1]");
    expect_error(&format!("{GOOD}{wall}path = [[0.0, 0.0, 0.0, 1.0]]\n"), &[], "wall[0].path[0]");
    expect_error(&format!("{GOOD}{wall}velocity = [0.0, 0.0, nan]\n"), &[], "wall[0].velocity");
}

#[test]
fn unknown_dem_tangent() {
    let text = GOOD.replace("solver = \"cd\"", "solver = \"dem\"") + "\n[dem]\ntangent = \"newton\"\n";
    expect_error(&text, &[], "dem.tangent");
}

/// Newmark's parameters: the line names the key that is out of range.
#[test]
fn newmark_parameters_beyond_one_name_their_key() {
    let dem = GOOD.replace("solver = \"cd\"", "solver = \"dem\"");
    for (keys, bad) in [
        ("beta = 1.5\ngamma = 0.5", "dem.beta"),
        ("beta = 0.5\ngamma = 1.5", "dem.gamma"),
    ] {
        expect_error(&format!("{dem}\n[dem]\n{keys}\n"), &[], bad);
    }
}

/// `newton = "fixed"` grows Δt after every step: `easy_iterations` has
/// no meaning there and is refused; an unknown mode names its key.
#[test]
fn fixed_newton_refuses_easy_iterations_and_unknown_modes() {
    let dem = GOOD.replace("solver = \"cd\"", "solver = \"dem\"");
    expect_error(&format!("{dem}\n[dem]\nnewton = \"fixed\"\neasy_iterations = 2\n"), &[], "dem.easy_iterations");
    expect_error(&format!("{dem}\n[dem]\nnewton = \"once\"\n"), &[], "dem.newton");
}

#[test]
fn start_overlap_must_be_a_fraction_of_a_radius() {
    for bad in ["1.5", "-1e-6"] {
        expect_error(&GOOD.replace("dt = 0.001", &format!("dt = 0.001\nstart_overlap = {bad}")), &[], "simulation.start_overlap");
    }
}

#[test]
fn overlapping_explicit_bodies() {
    expect_error(&GOOD.replace("[2.0, 0.0, 1.0]", "[0.6, 0.0, 1.0]"), &[], "body[1]");
}

#[test]
fn missing_output_parent() {
    let text = GOOD.replace("dir = \"OUTDIR\"", "dir = \"/no/such/parent/out\"");
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_bad(dir.path(), &text, &[], None);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.trim().lines().count() == 1 && stderr.contains("output.dir"), "{stderr}");
}

#[test]
fn malformed_toml() {
    expect_error(&GOOD.replace("t_end = 0.01", "t_end = = 0.01"), &[], "line 4");
}

#[test]
fn unknown_shape_reference() {
    expect_error(&GOOD.replacen("shape = \"ball\"", "shape = \"cube\"", 1), &[], "body[0].shape");
}

#[test]
fn bad_dimension() {
    expect_error(&GOOD.replace("solver = \"cd\"", "solver = \"cd\"\ndim = 4"), &[], "simulation.dim");
}

#[test]
fn bad_override() {
    expect_error(GOOD, &["--set", "generate[3].n=2"], "--set");
    expect_error(GOOD, &["--set", "simulation.dt=-1"], "simulation.dt");
}

#[test]
fn missing_config_file() {
    let o = Command::new(common::stiffgrain())
        .args(["check", "/no/such/scene.toml"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.trim().lines().count() == 1 && e.contains("/no/such/scene.toml"), "{e}");
}

#[test]
fn existing_run_is_not_overwritten() {
    // A valid config pointing at a directory with an earlier run is refused.
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_bad(dir.path(), GOOD, &[], None);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("output.dir") && stderr.contains("--overwrite"), "{stderr}");
}

#[test]
fn errors_agree_across_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_bad(dir.path(), &GOOD.replace("radius = 0.5", "radius = -1.0"), &[], Some(3));
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("shape[0].radius")).collect();
    assert_eq!(lines.len(), 1, "printed once, not once per rank: {stderr}");
}

#[test]
fn a_usage_error_under_mpirun_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_bad(dir.path(), GOOD, &["--no-such-flag"], Some(2));
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("--no-such-flag")).collect();
    assert_eq!(lines.len(), 2, "clap's error and its tip, once, not once per rank: {stderr}");
}

#[test]
fn check_prints_summary() {
    let o = check_scene("ok.toml", GOOD);
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{s}{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.contains("bodies       2"), "{s}");
    // Two steel balls of radius 0.5: m = 2 · 7800 · 4/3 π 0.125.
    let mass = 2.0 * 7800.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.125;
    assert!(s.contains(&format!("{mass:.6e}")), "total mass {mass:.6e} not in: {s}");
}

/// GOOD with the DEM solver and `load` appended as a `[[load]]` entry.
fn with_load(load: &str) -> String {
    format!("{}\n[[load]]\n{load}\n", GOOD.replace("solver = \"cd\"", "solver = \"dem\""))
}

#[test]
fn load_errors() {
    // unknown body, no load at all, unknown key, bad values, reversed ramp
    expect_error(&with_load("body = 2\nforce = [1.0, 0.0, 0.0]"), &[], "load[0].body");
    expect_error(&with_load("body = 0"), &[], "load[0]");
    expect_error(&with_load("body = 0\nforce = [1.0, 0.0, 0.0]\nat = [0.0, 0.0, 0.0]"), &[], "load[0].at");
    expect_error(&with_load("body = 0\nforce = [nan, 0.0, 0.0]"), &[], "load[0].force");
    expect_error(&with_load("body = 0\nmoment = [0.0, 0.0, inf]"), &[], "load[0].moment");
    expect_error(&with_load("body = 0\nmoment = [0.0, 0.0, 1.0]\npoint = [0.1, 0.0, 0.0]"), &[], "load[0].point");
    expect_error(&with_load("body = 0\nforce = [1.0, 0.0, 0.0]\nt_start = 0.5\nt_ramp_end = 0.2"), &[], "load[0].t_ramp_end");
    expect_error(&with_load("body = 0\nforce = [1.0, 0.0, 0.0]\nt_start = -1.0"), &[], "load[0].t_start");
    // one load per body
    let twice = format!("{}\n[[load]]\nbody = 0\nmoment = [0.0, 0.0, 1.0]\n", with_load("body = 0\nforce = [1.0, 0.0, 0.0]"));
    expect_error(&twice, &[], "load[1].body");
    // a fixed body
    let fixed = with_load("body = 1\nforce = [1.0, 0.0, 0.0]").replace("position = [2.0, 0.0, 1.0]", "position = [2.0, 0.0, 1.0]\nfixed = true");
    expect_error(&fixed, &[], "load[0].body");
}

#[test]
fn check_summarises_loads() {
    let o = check_scene("ok.toml", &with_load("body = 1\nforce = [2.0, 0.0, 0.0]\npoint = [0.0, 0.0, 0.5]\nt_ramp_end = 0.8"));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{s}{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.contains("loads        1"), "{s}");
    assert!(s.contains("body 1") && s.contains("force [2e0, 0e0, 0e0] at [0e0, 0e0, 5e-1]") && s.contains("ramp 0e0 .. 8e-1"), "{s}");
}

#[test]
fn wall_until_must_be_a_time() {
    let wall = |until: &str| format!("{GOOD}\n[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\nuntil = {until}\n");
    expect_error(&wall("-1.0"), &[], "wall[0].until");
    expect_error(&wall("nan"), &[], "wall[0].until");
    expect_error(&wall("inf"), &[], "wall[0].until");
}

#[test]
fn unknown_compatibility_method_and_zero_iterations() {
    let compat = GOOD.replace("solver = \"cd\"", "solver = \"compatible-cd\"");
    expect_error(&(compat.clone() + "\n[compatibility]\nmethod = \"lancelot\"\n"), &[], "compatibility.method");
    expect_error(&(compat + "\n[compatibility]\nmethod = \"apgd\"\nmax_iterations = 0\n"), &[], "compatibility.max_iterations");
}

#[test]
fn step_control_names_its_key() {
    let control = |keys: &str| format!("{GOOD}\n[solver]\ndt_control = \"iterations\"\n{keys}\n");
    expect_error(&control("dt_min = 0.002"), &[], "solver.dt_min");
    expect_error(&control("dt_min = -1e-4"), &[], "solver.dt_min");
    expect_error(&control("target_iterations = 0"), &[], "solver.target_iterations");
    expect_error(&format!("{GOOD}\n[solver]\ndt_control = \"adaptive\"\n"), &[], "dt_control");
    let compat = GOOD.replace("solver = \"cd\"", "solver = \"compatible-cd\"");
    expect_error(&format!("{compat}\n[solver]\ndt_control = \"iterations\"\n"), &[], "solver.dt_control");
}

#[test]
fn anderson_depth_is_bounded() {
    expect_error(&format!("{GOOD}\n[solver]\nanderson = 51\n"), &[], "solver.anderson");
    expect_error(&format!("{GOOD}\n[solver]\nanderson = -1\n"), &[], "solver.anderson");
}

#[test]
fn lattice_spacing_errors() {
    let lattice = |shape: &str, extra: &str| {
        format!("{GOOD}\n[[shape]]\nname = \"cube\"\nkind = \"box\"\nsize = [1.0, 1.0, 1.0]\n\n[[generate]]\nkind = \"lattice\"\nshape = \"{shape}\"\norigin = [10.0, 10.0, 10.0]\ncount = [2, 2, 2]\ngap = 0.01\n{extra}\n")
    };
    // Spheres closer than 2 R + gap overlap whatever their orientation.
    expect_error(&lattice("ball", "spacing = 0.9"), &[], "generate[0].spacing");
    // Meshes: at least R + gap/2 (R = 0.866 for the unit cube).
    expect_error(&lattice("cube", "spacing = 0.8\nrandom_orientation = true"), &[], "generate[0].spacing");
    expect_error(&lattice("cube", "spacing = -1.0"), &[], "generate[0].spacing");
    // Not for other kinds.
    let random = format!("{GOOD}\n[[generate]]\nkind = \"random\"\nshape = \"ball\"\ncount = 2\nbox_min = [10.0, 10.0, 10.0]\nbox_max = [20.0, 20.0, 20.0]\nspacing = 1.0\n");
    expect_error(&random, &[], "generate[0].spacing");
    // Unit cubes 0.9 apart, all the same way round: the first neighbour is
    // blocked at start-up (one line on 2 ranks too).
    expect_error(&lattice("cube", "spacing = 0.9"), &[], "generate[0].spacing");
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run_bad(dir.path(), &lattice("cube", "spacing = 0.9"), &[], Some(2));
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("generate[0].spacing")).collect();
    assert_eq!(lines.len(), 1, "printed once: {stderr}");
    assert!(lines[0].contains("no orientation") && lines[0].contains("random_orientation"), "{}", lines[0]);
}

#[test]
fn a_count_that_is_neither_a_number_nor_three_says_what_a_count_is() {
    let random = |count: &str| {
        format!("{GOOD}\n[[generate]]\nkind = \"random\"\nshape = \"ball\"\ncount = {count}\nbox_min = [10.0, 10.0, 10.0]\nbox_max = [20.0, 20.0, 20.0]\n")
    };
    for count in ["1.5", "[2, 3]", "-3", "\"ten\""] {
        let dir = tempfile::tempdir().unwrap();
        let (code, stderr) = run_bad(dir.path(), &random(count), &[], None);
        assert_eq!(code, Some(2), "count = {count}: {stderr}");
        let line = stderr.trim();
        assert!(
            line.lines().count() == 1 && line.contains("generate[0].count") && line.contains("[nx, ny, nz]") && !line.contains("CountCfg") && !line.contains("enum"),
            "count = {count}: {line}"
        );
    }
}

#[test]
fn a_petsc_error_in_a_collective_solve_is_printed_once() {
    // Two spheres on a floor, one per rank; a PETSc option naming no
    // preconditioner fails the first contact solve on both ranks alike.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let text = GOOD
        .replace("[simulation]\n", "[simulation]\ngravity = [0.0, 0.0, -9.81]\n")
        .replace("[0.0, 0.0, 1.0]", "[-1.0, 0.0, 0.5]")
        .replace("[2.0, 0.0, 1.0]", "[1.0, 0.0, 0.5]")
        .replace("OUTDIR", &out.display().to_string())
        + "\n[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n\n[solver]\nmethod = \"newton\"\n";
    let cfg = dir.path().join("scene.toml");
    std::fs::write(&cfg, text).unwrap();
    let o = common::mpirun(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--", "-cd_pc_type", "nonexistent"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    // (Counted in the whole text: lines of two ranks can interleave.)
    assert_eq!(stderr.matches("nonexistent").count(), 1, "printed once, not once per rank: {stderr}");
    let line = stderr.lines().find(|l| l.contains("nonexistent")).unwrap();
    assert!(line.contains("the state before the step is in") && line.contains("checkpoint-"), "{line}");
    assert!(std::fs::read_dir(&out).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().starts_with("checkpoint-")), "no checkpoint in {}", out.display());
}
