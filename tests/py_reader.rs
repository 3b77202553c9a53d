//! scripts/py/stiffgrain_reader.py on a real run (1 and 2 ranks, and a
//! restart): frames by step and time, the time series equal to
//! summary.json's reactions at the end, series.csv and log.txt with one
//! header and no repeated rows after a restart, and the derived measures on
//! a pack whose numbers the statics dictates; then scripts/py/tutorial.py.
//! And scripts/plot drawing force_compatible when a frame has it; and
//! scripts/py/lab_validate.py --check agreeing with a run's measurements;
//! scripts/py/dense_pack.py's packs and lab_validate.py's rheology fits.
//!
//! Needs the project venv (`scripts/setup`). Without it the test reports
//! itself skipped (`common::skip`) and returns, unless `CI` or
//! `STIFFGRAIN_REQUIRE_PYTHON` is set, where it fails.
mod common;

use serde_json::Value;
use std::f64::consts::PI;
use std::path::{Path, PathBuf};
use std::process::Command;

const R: f64 = 0.01;
const RHO: f64 = 1000.0;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv interpreter with `modules`, or None (after saying why).
fn venv_python(modules: &str) -> Option<PathBuf> {
    let py = root().join(".venv/bin/python");
    let ok = py.exists() && Command::new(&py).args(["-c", &format!("import {modules}")]).output().is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    let msg = format!("{} with {modules} is not available: run scripts/setup", py.display());
    if std::env::var_os("CI").is_some() || std::env::var_os("STIFFGRAIN_REQUIRE_PYTHON").is_some() {
        panic!("{msg}");
    }
    common::skip(&msg);
    None
}

/// The pack of `common::rising_floor_box`, with more `[output]` keys.
fn scene(extra: &str) -> String {
    common::rising_floor_box().output(extra).toml()
}

fn read(py: &Path, out: &Path) -> Value {
    let o = Command::new(py).arg(root().join("tests/py/reader_check.py")).arg(out).output().unwrap();
    assert!(o.status.success(), "reader_check.py {}:\n{}", out.display(), String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().flat_map(|x| x.as_array().cloned().unwrap_or_else(|| vec![x.clone()])).map(|x| x.as_f64().unwrap()).collect()
}

fn ints(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

/// The reactions of summary.json as one row per wall (zero for a wall
/// without contacts).
fn summary_walls(out: &Path, walls: &[u64]) -> Vec<f64> {
    let r = common::reactions(out);
    walls.iter().flat_map(|w| r.iter().find(|(id, _)| id == w).map_or([0.0; 3], |(_, f)| *f)).collect()
}

fn check_run(v: &Value, out: &Path, np: usize) {
    let m = RHO * 4.0 / 3.0 * PI * R.powi(3);
    let weight = 18.0 * m * 9.81;
    let all: Vec<u64> = (0..=30).collect();
    assert_eq!(ints(&v["steps"]), all, "np {np}: frames");
    assert_eq!(ints(&v["series_steps"]), all, "np {np}: a series row per frame");
    assert_eq!(floats(&v["mid"]), [15.0, 0.015], "np {np}: frame by step");
    assert_eq!(v["near"], 15, "np {np}: frame by time");
    assert_eq!(v["missing"], "KeyError", "np {np}: a step without a frame");
    assert_eq!(ints(&v["csv_steps"]), [10, 20, 30], "np {np}: series.csv");
    assert_eq!(ints(&v["log_steps"]), [10, 20, 30], "np {np}: log.txt");
    let walls = ints(&v["wall_id"]);
    assert_eq!(walls, (0..5).map(|k| (1u64 << 63) + k).collect::<Vec<_>>());
    // The series at the end is summary.json's reactions, to the bit; the
    // floor carries the pack's weight.
    let end = floats(&v["wall_force_end"]);
    assert_eq!(end, summary_walls(out, &walls), "np {np}: series vs summary.json");
    assert_eq!(floats(&v["csv_wall_force_end"]), end, "np {np}: series.csv vs /series");
    assert!((end[2] + weight).abs() <= 1e-6 * weight, "np {np}: floor {} N, weight {weight} N", end[2]);
    // At the end the top layer rests on the bottom one, which rests on the
    // floor: 9 sphere–sphere contacts of m g and 9 floor contacts of 2 m g
    // carry force (side walls and lateral neighbours none).
    assert_eq!(v["coordination"].as_f64().unwrap(), 1.0, "np {np}");
    assert_eq!(v["coordination_walls"].as_f64().unwrap(), 1.5, "np {np}");
    let f = floats(&v["force_over_mean"]);
    assert_eq!(f.len(), 18, "np {np}: force-carrying contacts {f:?}");
    for (k, x) in f.iter().enumerate() {
        let want = if k < 9 { 2.0 / 3.0 } else { 4.0 / 3.0 };
        assert!((x - want).abs() <= 1e-6, "np {np}: f/<f> = {x}, want {want}");
    }
    // Packing fraction: the box around the pack holds all 18 spheres; a
    // box cut at the bottom layer's centres holds half of each of 9.
    let b = &v["packing_box"];
    let (lo, hi, phi) = (floats(&b[0]), floats(&b[1]), b[2].as_f64().unwrap());
    let volume: f64 = (0..3).map(|d| hi[d] - lo[d]).product();
    let want = 18.0 * 4.0 / 3.0 * PI * R.powi(3) / volume;
    assert!((phi - want).abs() <= 1e-12 * want, "np {np}: packing fraction {phi}, want {want}");
    let half = floats(&v["packing_half"]);
    let want = 9.0 * 2.0 / 3.0 * PI * R.powi(3) / (0.0602 * 0.0602 * R);
    assert!((half[1] - want).abs() <= 1e-9 * want, "np {np}: half-layer packing fraction {}, want {want}", half[1]);
    assert_eq!(v["units"], serde_json::json!(["m", "N", "m/s"]));
    assert_eq!(v["without_units"], serde_json::json!([]), "np {np}: datasets of frames.h5 without a units attribute");
}

#[test]
fn the_python_reader_reads_a_run_and_its_restart() {
    let Some(py) = venv_python("h5py, numpy") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut ends = Vec::new();
    for np in [1, 2] {
        let (out, log) = common::run_config(np, tmp.path(), "reader", &scene("checkpoint_every = 10"));
        assert!(!log.contains("walls:"), "np {np}: wall lines in the thermo output");
        let v = read(&py, &out);
        check_run(&v, &out, np);
        ends.push(floats(&v["wall_force_end"]));
        if np == 2 {
            // Restart from step 20 on 1 rank: steps 21..30 again, the files
            // keep one header and the rows up to step 20.
            let ck = out.join("checkpoint-000020.h5");
            common::mpirun_ok(1, &common::stiffgrain(), &["restart", ck.to_str().unwrap()]);
            let v = read(&py, &out);
            check_run(&v, &out, np);
            for name in ["log.txt", "series.csv"] {
                let text = std::fs::read_to_string(out.join(name)).unwrap();
                let headers = text.lines().filter(|l| !l.starts_with(|c: char| c.is_ascii_digit() || c == ' ')).count();
                assert_eq!(headers, 1, "{name} after a restart:\n{text}");
            }
        }
        let o = Command::new(&py).arg(root().join("scripts/py/tutorial.py")).arg(&out).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "tutorial.py failed:\n{}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains("coordination number 1.000"), "tutorial.py:\n{text}");
    }
    let scale = ends[0].iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (a, b) in ends[0].iter().zip(&ends[1]) {
        assert!((a - b).abs() <= 1e-9 * scale, "1 vs 2 ranks: {a} vs {b}");
    }
}

fn python_ok(py: &Path, args: &[&str]) -> String {
    let o = Command::new(py).args(args).output().unwrap();
    assert!(o.status.success(), "python {args:?}:\n{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn same_pixels(py: &Path, a: &Path, b: &Path) -> bool {
    let code = "import sys, numpy as np, matplotlib.image as mi\n\
                a, b = mi.imread(sys.argv[1]), mi.imread(sys.argv[2])\n\
                print(int(a.shape == b.shape and np.all(a == b)))\n";
    python_ok(py, &["-c", code, a.to_str().unwrap(), b.to_str().unwrap()]).trim() == "1"
}

/// scripts/plot on a synthetic frame whose force_compatible (another
/// frame's forces) differs from its force_normal: by default it draws
/// force_compatible, the same pictures as `--field force_compatible`, and
/// `--field force_normal` draws another network; an unknown field is one
/// line and exit status 2.
#[test]
fn plot_draws_force_compatible_when_present() {
    let Some(py) = venv_python("h5py, numpy, matplotlib") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let synth = root().join("tests/py/synth_frames.py");
    python_ok(&py, &[synth.to_str().unwrap(), a.to_str().unwrap(), "1", "1.0"]);
    python_ok(&py, &[synth.to_str().unwrap(), b.to_str().unwrap(), "2", "5.0"]);
    let add = "import sys, h5py\n\
               with h5py.File(sys.argv[1] + '/frames.h5', 'a') as fa, h5py.File(sys.argv[2] + '/frames.h5') as fb:\n\
               \x20   for k in fa['frames']:\n\
               \x20       fa['frames'][k]['contacts']['force_compatible'] = fb['frames'][k]['contacts']['force_normal'][()]\n";
    python_ok(&py, &["-c", add, a.to_str().unwrap(), b.to_str().unwrap()]);
    let plot = |dest: &str, extra: &[&str]| {
        let o = Command::new(root().join("scripts/plot")).arg(&a).arg("--out").arg(tmp.path().join(dest)).args(extra).output().unwrap();
        assert!(o.status.success(), "scripts/plot {extra:?}:\n{}", String::from_utf8_lossy(&o.stderr));
    };
    plot("default", &[]);
    plot("compat", &["--field", "force_compatible"]);
    plot("normal", &["--field", "force_normal"]);
    for png in ["force-network.png", "force-histogram.png", "floor-pressure.png"] {
        let p = |d: &str| tmp.path().join(d).join(png);
        assert!(same_pixels(&py, &p("default"), &p("compat")), "{png}: the default is not force_compatible");
        assert!(!same_pixels(&py, &p("default"), &p("normal")), "{png}: force_normal drawn the same as force_compatible");
    }
    let o = Command::new(root().join("scripts/plot")).arg(&a).args(["--field", "force_nope"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no contact column 'force_nope'") && err.lines().count() == 1, "{err}");
}

/// scripts/py/lab_validate.py --check on the cannonball pyramid at rest
/// (cd, 2 ranks): its independent sum over a frame's contacts gives the
/// run's own stress, coordination and solid fraction (the arms differ only
/// by the bodies' motion within the step: none at rest).
#[test]
fn lab_validate_check_agrees_with_the_runs_measurements() {
    let Some(py) = venv_python("h5py, numpy") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("pyr");
    let cfg = root().join("configs/cannonball-cd-small.toml");
    let dir = format!("output.dir={}", out.display());
    common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--set", &dir]);
    let got: Value = serde_json::from_str(&python_ok(&py, &[root().join("scripts/py/lab_validate.py").to_str().unwrap(), "--check", out.to_str().unwrap()])).unwrap();
    let pair = |k: &str| (got[k][0].as_f64().unwrap(), got[k][1].as_f64().unwrap());
    let (z, z_run) = pair("coordination");
    assert!(z > 1.0 && z == z_run, "coordination {z} vs the run's {z_run}");
    let (phi, phi_run) = pair("solid_fraction");
    assert!(phi > 0.1 && (phi - phi_run).abs() <= 1e-12 * phi, "solid fraction {phi} vs the run's {phi_run}");
    let rel = got["stress_rel"].as_f64().unwrap();
    assert!(rel < 1e-9, "stress differs by {rel} of its largest component");
    // No stress-controlled cell, Lees–Edwards cell or servo wall: the other
    // modes refuse the run in one line naming the key.
    for (mode, key) in [("--shear", "parallel.servo_stress"), ("--le", "parallel.lees_edwards"), ("--iso0", "wall[].servo_stress")] {
        let o = Command::new(&py).arg(root().join("scripts/py/lab_validate.py")).args([mode, out.to_str().unwrap(), "--print"]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{mode}: {err}");
        assert!(err.contains(key) && err.lines().count() == 1, "{mode}: {err}");
    }
}

/// lab_validate.py --shear on a stress-controlled Lees–Edwards cell at rest
/// (three spheres stacked across the z period, dem, σ_zz = 10 kPa, 2 ranks):
/// its subsection reports the target and the stress the cell held over the
/// second half of the run, 10 kPa to 1e-6, and the run's period; without
/// --iso runs the rest of the section is "not run here".
#[test]
fn lab_validate_shear_reports_the_stress_the_cell_held() {
    let Some(py) = venv_python("h5py, numpy") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let text = common::stress_controlled_column(1.5, 50);
    let (out, _) = common::run_config(2, tmp.path(), "column", &text);
    let table = python_ok(&py, &[root().join("scripts/py/lab_validate.py").to_str().unwrap(), "--shear", out.to_str().unwrap(), "--print"]);
    let row: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).last().unwrap().split('|').map(str::trim).collect();
    assert_eq!(row[1], "10000", "target: {table}");
    let held: Vec<f64> = row[2].split(" (").next().unwrap().split(" ± ").map(|x| x.parse().unwrap()).collect();
    assert!((held[0] - 1e4).abs() <= 1e-2 && held[1] <= 1e-2, "held {held:?}: {table}");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let height = s["measures"]["box_hi"][2].as_f64().unwrap();
    assert!(row[3].starts_with(&format!("{height:.6}")), "period {} vs the run's {height}", row[3]);
    let code = "import sys; sys.path.insert(0, sys.argv[1]); import lab_validate as L\nprint('\\n'.join(L.section(None, None, [])))";
    let section = python_ok(&py, &["-c", code, root().join("scripts/py").to_str().unwrap()]);
    assert!(section.starts_with("## Lab tests") && section.matches("not run here").count() == 4, "{section}");
}

/// lab_validate.py's local bond order q6 (Steinhardt, over the neighbours
/// closer than 1.2 d) of the beads inside a perfect FCC lattice is the
/// crystal's value, sqrt(4π/13 Σ_m |Y6m|²) over its 12 bonds = 0.57452.
#[test]
fn lab_validate_q6_of_an_fcc_lattice_is_the_crystals() {
    let Some(py) = venv_python("h5py, numpy") else { return };
    let code = "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import lab_validate as L\n\
                b = np.array([[0, 0, 0], [0, .5, .5], [.5, 0, .5], [.5, .5, 0]])\n\
                p = np.array([b + [i, j, k] for i in range(5) for j in range(5) for k in range(5)]).reshape(-1, 3) * np.sqrt(2)\n\
                print(L.q6_mean(p, 1.0, np.all((p > 1.5) & (p < 5.0), axis=1)))";
    let got: f64 = python_ok(&py, &["-c", code, root().join("scripts/py").to_str().unwrap()]).trim().parse().unwrap();
    assert!((got - 0.57452).abs() < 1e-5, "q6 of FCC: {got}");
}

/// lab_validate.py's volume of spheres inside a box: a whole sphere, one
/// centred on a face (half), one centred on an edge (a quarter) and one on
/// a corner (an eighth), to the sampling error of its 20,000 points.
#[test]
fn lab_validate_volume_inside_a_box_cuts_spheres_at_its_faces() {
    let Some(py) = venv_python("h5py, numpy") else { return };
    let code = "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import lab_validate as L\n\
                v = 4 / 3 * np.pi\n\
                for p in ([5, 5, 5], [0, 5, 5], [0, 0, 5], [0, 0, 0]):\n\
                \x20   print(L.volume_inside(np.array([p], float), np.array([1.0]), np.zeros(3), np.full(3, 10.0)) / v)";
    let got: Vec<f64> = python_ok(&py, &["-c", code, root().join("scripts/py").to_str().unwrap()]).split_whitespace().map(|s| s.parse().unwrap()).collect();
    for (g, want) in got.iter().zip([1.0, 0.5, 0.25, 0.125]) {
        assert!((g - want).abs() < 0.01, "share inside {g}, not {want}: {got:?}");
    }
}

/// scripts/py/dense_pack.py: 300 equal spheres in a periodic cube at Φ =
/// 0.55 keep their least surface gap (periodic images included) and fill
/// the cube the solid fraction asks for, and in a closed cube keep half of
/// it to the faces, and above random close packing stops with one line
/// and exit status 2; and lab_validate.py's power-law
/// fit recovers y = y0 + c I^e from exact points.
#[test]
fn dense_pack_is_overlap_free_and_the_rheology_fit_recovers_its_law() {
    let Some(py) = venv_python("h5py, numpy") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("pack.csv");
    let side: f64 = python_ok(&py, &[root().join("scripts/py/dense_pack.py").to_str().unwrap(), "--count", "300", "--radius", "0.001", "--phi", "0.55", "--seed", "3", "--gap", "1e-3", "--out", csv.to_str().unwrap()]).trim().parse().unwrap();
    let want = (300.0 * PI * 0.002f64.powi(3) / 6.0 / 0.55).cbrt();
    assert!((side - want).abs() < 1e-15 * want, "cell side {side}, not {want}");
    let code = "import sys, numpy as np\n\
                x = np.loadtxt(sys.argv[1], delimiter=',', skiprows=2)[:, :3]; L = float(sys.argv[2])\n\
                d = x[:, None, :] - x[None, :, :]; d -= L * np.round(d / L)\n\
                r = np.sqrt((d ** 2).sum(-1)); np.fill_diagonal(r, np.inf)\n\
                print(len(x), float(r.min()), float(x.min()), float(x.max()))";
    let out = python_ok(&py, &["-c", code, csv.to_str().unwrap(), &format!("{side:?}")]);
    let v: Vec<f64> = out.split_whitespace().map(|s| s.parse().unwrap()).collect();
    assert_eq!(v[0], 300.0);
    assert!(v[1] >= 0.002 * (1.0 + 1e-3) * (1.0 - 1e-9), "least centre distance {} m", v[1]);
    assert!(v[2] >= 0.0 && v[3] < side, "centres outside the cell: {out}");
    // With --walls: a closed cube, every sphere half the gap inside its faces.
    let side: f64 = python_ok(&py, &[root().join("scripts/py/dense_pack.py").to_str().unwrap(), "--count", "300", "--radius", "0.001", "--phi", "0.45", "--seed", "3", "--gap", "1e-3", "--walls", "--out", csv.to_str().unwrap()]).trim().parse().unwrap();
    let code = "import sys, numpy as np\n\
                x = np.loadtxt(sys.argv[1], delimiter=',', skiprows=2)[:, :3]; L = float(sys.argv[2])\n\
                d = x[:, None, :] - x[None, :, :]; r = np.sqrt((d ** 2).sum(-1)); np.fill_diagonal(r, np.inf)\n\
                print(float(r.min()), float(x.min()), float(L - x.max()))";
    let v: Vec<f64> = python_ok(&py, &["-c", code, csv.to_str().unwrap(), &format!("{side:?}")]).split_whitespace().map(|s| s.parse().unwrap()).collect();
    assert!(v[0] >= 0.002 * (1.0 + 1e-3) * (1.0 - 1e-9), "least centre distance {} m", v[0]);
    let face = 0.001 * (1.0 + 1e-3) * (1.0 - 1e-9);
    assert!(v[1] >= face && v[2] >= face, "a sphere closer to a face than radius + gap/2: {v:?}");
    // Above random close packing (Φ = 0.66 > 0.64) a quench jams with
    // overlaps left: one line, exit status 2, no file written.
    let jammed = tmp.path().join("jammed.csv");
    let o = Command::new(&py).args([root().join("scripts/py/dense_pack.py").to_str().unwrap(), "--count", "100", "--radius", "0.001", "--phi", "0.66", "--seed", "3", "--walls", "--out", jammed.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.lines().last().unwrap_or("");
    assert_eq!(o.status.code(), Some(2), "dense_pack at Φ = 0.66: {err}");
    assert!(last.starts_with("dense_pack: jammed after") && last.contains("lower --phi"), "not one clear line: {last}");
    assert!(!jammed.exists(), "a jammed pack was written");
    let code = "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import lab_validate as L\n\
                I = np.array([0.005, 0.01, 0.03, 0.08, 0.16]); y = 0.1 + 0.4 * I ** 0.4\n\
                y0, c, e, r, er = L.power_fit(I, y, np.ones_like(I) / 1e-3, 1.0, True)\n\
                print(y0, c, e, r[0], r[1])";
    let got: Vec<f64> = python_ok(&py, &["-c", code, root().join("scripts/py").to_str().unwrap()]).split_whitespace().map(|s| s.parse().unwrap()).collect();
    assert!((got[0] - 0.1).abs() < 1e-9 && (got[1] - 0.4).abs() < 1e-9 && (got[2] - 0.4).abs() < 1e-9, "fit {got:?}");
    assert!(got[3] <= 0.1 && got[4] >= 0.1, "range {got:?}");
}

/// lab_validate.py --le with friction: the cd runs of one friction
/// coefficient are fitted, and a DEM run on the same cell is set beside the
/// fitted laws taken at its own inertial number. Runs that follow exact
/// laws (μ = 0.3 + 0.4 I^0.4, Φ = 0.58 − 0.1 I^0.5) must give those laws'
/// values at the DEM's I.
#[test]
fn lab_validate_sets_a_dem_run_beside_the_fitted_frictional_laws() {
    let Some(py) = venv_python("h5py, numpy") else { return };
    let code = "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import lab_validate as L\n\
                def run(I, solver, phi):\n\
                \x20   return {'bodies': 4000, 'wall': 1.0, 'steps': 1000, 'ranks': 2, 'mu_sem': 1e-3, 'dt': 1e-3, 'strain': 1.0,\n\
                \x20           'frames': 50, 'iterations': 1, 'mu': (0.3 + 0.4 * I ** 0.4, 0.01), 'I': (I, 0.01),\n\
                \x20           'phi': (phi, 0.0), 'z': (3.0, 0.1), 'p': (1.0, 0.1), 'solver': solver, 'friction': 0.5,\n\
                \x20           'not_converged': 0}\n\
                runs = [run(I, 'cd', 0.58 - 0.1 * I ** 0.5) for I in (0.01, 0.03, 0.06, 0.12, 0.24)]\n\
                dem = run(0.1, 'dem', 0.56); dem.update(gap=0.005, phi_eff=0.56 * 1.005 ** 3, dt_mean=1e-4, damping=1.0, damping_t=0.0)\n\
                lines = L.le_section(runs + [dem])\n\
                print(lines[0])\n\
                row = [l for l in lines if l.startswith(\"| cd's laws at this I\")][0].split('|')\n\
                print(row[6].strip(), row[8].strip())";
    let out = python_ok(&py, &["-c", code, root().join("scripts/py").to_str().unwrap()]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("frictional beads (μ = 0.5)"), "title {}", lines[0]);
    let v: Vec<f64> = lines[1].split_whitespace().map(|s| s.parse().unwrap()).collect();
    let want = (0.58 - 0.1 * 0.1f64.sqrt(), 0.3 + 0.4 * 0.1f64.powf(0.4));
    assert!((v[0] - want.0).abs() < 1e-4 && (v[1] - want.1).abs() < 1e-4, "cd's laws at I = 0.1: {v:?}, not {want:?}");
}
