//! frames.xdmf read back through ParaView's own XDMF reader (pvpython,
//! scripts/pv/dump.py): grids, time steps, arrays and what the physics says
//! they hold (a static pile carries its weight), a wall gone at `until`,
//! the same arrays on 1 and 3 ranks, a restarted run continuing the time
//! series; and scripts/render making an image that is not blank.
//!
//! Needs pvpython (`scripts/test` installs ParaView). Without it the tests
//! report themselves skipped (`common::skip`: a `skipped:` line, counted by
//! scripts/test) and return, unless STIFFGRAIN_REQUIRE_PARAVIEW is set (as
//! scripts/test does where it can install ParaView), where they fail.
mod common;

use serde_json::Value;
use std::f64::consts::PI;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// pvpython, or None after saying why (a failure when it is required).
fn pvpython() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).map(|d| d.join("pvpython")).find(|p| p.is_file()));
    if found.is_none() {
        let msg = "pvpython (ParaView) is not installed: scripts/test installs it (apt-get install paraview python3-paraview xvfb)";
        if std::env::var_os("STIFFGRAIN_REQUIRE_PARAVIEW").is_some() {
            panic!("{msg}, and STIFFGRAIN_REQUIRE_PARAVIEW is set");
        }
        common::skip(msg);
    }
    found
}

/// Every grid at every time step as ParaView reads `out/frames.xdmf`.
fn dump(pv: &Path, out: &Path) -> Value {
    let o = Command::new(pv).arg(root().join("scripts/pv/dump.py")).arg(out.join("frames.xdmf")).output().unwrap();
    assert!(o.status.success(), "dump.py failed:\n{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("dump.py output: {e}\n{}", String::from_utf8_lossy(&o.stderr)))
}

fn values(grid: &Value, kind: &str, name: &str) -> Vec<f64> {
    let a = &grid[kind][name]["values"];
    a.as_array().unwrap_or_else(|| panic!("no {kind} array {name} in {}", keys(grid))).iter().map(|v| v.as_f64().unwrap()).collect()
}

fn components(grid: &Value, kind: &str, name: &str) -> u64 {
    grid[kind][name]["components"].as_u64().unwrap_or_else(|| panic!("no {kind} array {name}"))
}

fn keys(grid: &Value) -> String {
    let k = |kind: &str| grid[kind].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>().join(",")).unwrap_or_default();
    format!("points [{}], cells [{}]", k("point_data"), k("cell_data"))
}

fn count(grid: &Value, what: &str) -> u64 {
    grid[what].as_u64().unwrap()
}

/// The frames of grid `name`, one per time step.
fn frames<'a>(d: &'a Value, name: &str) -> &'a Vec<Value> {
    d["grids"][name].as_array().unwrap_or_else(|| panic!("no grid {name} in {:?}", d["grids"].as_object().map(|o| o.keys().collect::<Vec<_>>())))
}

fn times(d: &Value) -> Vec<f64> {
    d["times"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect()
}

const G: f64 = 10.0;
const RHO: f64 = 1000.0;
const R: f64 = 0.1;
/// body_b of a wall contact: 2^63 + index, read by ParaView as a 64-bit number.
const WALL: f64 = 9.0e18;

/// Two layers of six spheres resting on a floor (gap 0, at rest: static
/// from the first step), and a wall beside them removed at t = 2.5 ms.
fn spheres(solver: &str) -> String {
    let extra = if solver == "compatible-cd" { "\n[compatibility]\nlaw = \"hooke\"\n" } else { "" };
    format!(
        r#"
[simulation]
solver = "{solver}"
t_end = 0.005
dt = 1e-3
gravity = [0.0, 0.0, -{G}]

[[material]]
name = "m"
density = {RHO}
young = 1.0e7

[[shape]]
name = "s"
kind = "sphere"
radius = {R}

[[generate]]
kind = "lattice"
shape = "s"
origin = [0.0, 0.0, 0.1]
count = [6, 1, 2]

[[wall]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]

[[wall]]
point = [2.0, 0.0, 0.0]
normal = [-1.0, 0.0, 0.0]
until = 0.0025
{extra}
[output]
dir = "OUTDIR"
every = 1
checkpoint_every = 2
"#
    )
}

fn weight() -> f64 {
    RHO * 4.0 / 3.0 * PI * R.powi(3) * G
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// What ParaView must read from the static two-layer pile (any solver):
/// grids, counts, the walls, and the weight carried by the floor, with
/// `normal` the normal-force array whose floor sum is the weight.
fn check_static_pile(d: &Value, normal: &str) {
    let t = times(d);
    assert_eq!(t.len(), 6, "time steps {t:?}");
    let w = weight();
    for (k, b) in frames(d, "bodies").iter().enumerate() {
        assert_eq!(count(b, "points"), 12, "frame {k}");
        assert_eq!(components(b, "point_data", "orientation"), 4);
        assert_eq!(components(b, "point_data", "contact_force"), 3);
        assert!(values(b, "point_data", "radius").iter().all(|&r| r == R));
        for q in values(b, "point_data", "orientation").chunks(4) {
            assert!(close(q.iter().map(|x| x * x).sum::<f64>(), 1.0, 1e-12), "orientation {q:?}");
        }
        if k > 0 {
            // At rest every body's contact forces balance its weight.
            for f in values(b, "point_data", "contact_force").chunks(3) {
                assert!(f[0].abs() < 1e-6 * w && f[1].abs() < 1e-6 * w && close(f[2], w, 1e-6), "{f:?}");
            }
        }
    }
    for (k, c) in frames(d, "contacts").iter().enumerate() {
        // 6 on the floor, 6 between the layers, 2 × 5 side by side.
        assert_eq!((count(c, "cells"), count(c, "points")), (22, 44), "frame {k}");
        assert_eq!(components(c, "cell_data", "normal"), 3);
        assert_eq!(components(c, "cell_data", "force_tangent"), 3);
        assert!(values(c, "cell_data", "gap").iter().all(|g| g.abs() < 1e-9));
        let (fnorm, b) = (values(c, "cell_data", normal), values(c, "cell_data", "body_b"));
        let floor: f64 = fnorm.iter().zip(&b).filter(|(_, &b)| b >= WALL).map(|(f, _)| f).sum();
        let x = values(c, "cell_data", "body_b");
        assert_eq!(x.iter().filter(|&&b| b >= WALL).count(), 6);
        // Each line: centre to centre (2R), or centre to the floor point (R).
        let p = c["coordinates"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>();
        for (i, &bb) in b.iter().enumerate() {
            let l = ((p[6 * i] - p[6 * i + 3]).powi(2) + (p[6 * i + 1] - p[6 * i + 4]).powi(2) + (p[6 * i + 2] - p[6 * i + 5]).powi(2)).sqrt();
            assert!(close(l, if bb >= WALL { R } else { 2.0 * R }, 1e-9), "contact {i}: line of length {l}");
        }
        if k > 0 {
            assert!(close(floor, 12.0 * w, 1e-6), "frame {k}: floor carries {floor}, weight {}", 12.0 * w);
        }
    }
    // The side wall is drawn while t < until = 2.5 ms, then only the floor.
    for (k, wg) in frames(d, "walls").iter().enumerate() {
        let n = if t[k] < 0.0025 { 2 } else { 1 };
        assert_eq!((count(wg, "cells"), count(wg, "points")), (n, 4 * n), "t = {}", t[k]);
        let floor = &wg["bounds"];
        if n == 1 {
            assert_eq!(values(wg, "cell_data", "index"), vec![0.0]);
            // The floor quad spans the pile's box: x in [-R, 11 R], z = 0.
            let bb: Vec<f64> = floor.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            assert!(close(bb[0], -R, 1e-9) && close(bb[1], 11.0 * R, 1e-9) && bb[4].abs() < 1e-12 && bb[5].abs() < 1e-12, "{bb:?}");
        }
    }
}

/// Every array of every grid and frame of `a` equals that of `b` (files
/// sort bodies by id and contacts by key, so no further sorting is needed),
/// to 1e-6 of the array's largest value: the iterative solvers stop at
/// their tolerance, reached by other paths on other rank counts (and 1e-9
/// absolute for arrays that are round-off around zero, e.g. the velocities
/// of bodies at rest, 1e-8 of g·dt here).
fn same_arrays(a: &Value, b: &Value, what: &str) {
    assert_eq!(times(a), times(b), "{what}: time steps");
    for (name, fa) in a["grids"].as_object().unwrap() {
        for (k, (x, y)) in fa.as_array().unwrap().iter().zip(frames(b, name)).enumerate() {
            assert_eq!((count(x, "points"), count(x, "cells")), (count(y, "points"), count(y, "cells")), "{what}: {name} frame {k}");
            for kind in ["point_data", "cell_data"] {
                for arr in x[kind].as_object().unwrap().keys() {
                    let (u, v) = (values(x, kind, arr), values(y, kind, arr));
                    assert_eq!(u.len(), v.len(), "{what}: {name} frame {k} {arr}");
                    let scale = u.iter().fold(1e-300_f64, |m, z| m.max(z.abs()));
                    for (p, q) in u.iter().zip(&v) {
                        assert!((p - q).abs() <= 1e-6 * scale + 1e-9, "{what}: {name} frame {k} {arr}: {p} vs {q}");
                    }
                }
            }
        }
    }
}

#[test]
fn sphere_pile_through_paraview_on_1_and_3_ranks_and_after_a_restart() {
    let Some(pv) = pvpython() else { return };
    let dir = tempfile::tempdir().unwrap();
    let text = spheres("cd");
    let (one, _) = common::run_config(1, dir.path(), "pile", &text);
    let (three, _) = common::run_config(3, dir.path(), "pile", &text);
    let (d1, d3) = (dump(&pv, &one), dump(&pv, &three));
    check_static_pile(&d1, "force_normal");
    assert!(frames(&d1, "bodies")[0]["point_data"]["id"]["values"].as_array().unwrap().len() == 12);
    same_arrays(&d1, &d3, "1 vs 3 ranks");
    // Stopped at step 2 (checkpoint), then restarted on 2 ranks: the same
    // six time steps and arrays in the continued frames.xdmf.
    let (part, _) = common::run_config(2, dir.path(), "part", &text.replace("t_end = 0.005", "t_end = 0.002"));
    let cp = part.join("checkpoint-000002.h5");
    common::mpirun_ok(2, &common::stiffgrain(), &["restart", cp.to_str().unwrap(), "--set", "simulation.t_end=0.005"]);
    same_arrays(&d1, &dump(&pv, &part), "uninterrupted vs restarted");
}

#[test]
fn compatible_cd_pile_carries_its_weight_in_force_compatible() {
    let Some(pv) = pvpython() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = common::run_config(2, dir.path(), "compat", &spheres("compatible-cd"));
    let d = dump(&pv, &out);
    check_static_pile(&d, "force_compatible");
    let last = frames(&d, "contacts").last().unwrap();
    assert!(values(last, "cell_data", "force_normal").iter().any(|&f| f > 0.0));
}

/// Two unit cubes (DEM) resting, one on the floor and one on it, plus one
/// in free fall beside them.
const BLOCKS: &str = r#"
[simulation]
solver = "dem"
t_end = 0.004
dt = 1e-3
gravity = [0.0, 0.0, -9.81]

[[material]]
name = "block"
density = 2000.0
friction = 0.5
young = 1.0e8
poisson = 0.3

[[shape]]
name = "cube"
kind = "box"
size = [1.0, 1.0, 1.0]

[[wall]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]

[contact]
distance = 0.01
skin = 0.02

[[body]]
shape = "cube"
material = "block"
position = [0.0, 0.0, 0.505]

[[body]]
shape = "cube"
material = "block"
position = [0.1, 0.0, 1.51]

[[body]]
shape = "cube"
material = "block"
position = [3.0, 0.0, 3.0]
velocity = [0.0, 0.0, -1.0]

[output]
dir = "OUTDIR"
every = 2
"#;

#[test]
fn polyhedra_surfaces_carry_velocity_and_contact_force() {
    let Some(pv) = pvpython() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (one, _) = common::run_config(1, dir.path(), "blocks", BLOCKS);
    let (three, _) = common::run_config(3, dir.path(), "blocks", BLOCKS);
    let (d, d3) = (dump(&pv, &one), dump(&pv, &three));
    assert_eq!(times(&d).len(), 3, "{:?}", times(&d));
    same_arrays(&d, &d3, "blocks, 1 vs 3 ranks");
    for (k, (m, b)) in frames(&d, "meshes").iter().zip(frames(&d, "bodies")).enumerate() {
        // A box mesh: 8 vertices, 12 triangles per cube.
        assert_eq!((count(m, "points"), count(m, "cells")), (24, 36), "frame {k}");
        let (body, vel, force) = (values(m, "point_data", "body"), values(m, "point_data", "velocity"), values(m, "point_data", "contact_force"));
        let (bv, bf) = (values(b, "point_data", "velocity"), values(b, "point_data", "contact_force"));
        for (i, &id) in body.iter().enumerate() {
            let j = id as usize;
            assert_eq!(&vel[3 * i..3 * i + 3], &bv[3 * j..3 * j + 3], "vertex {i} of body {id}: velocity");
            assert_eq!(&force[3 * i..3 * i + 3], &bf[3 * j..3 * j + 3], "vertex {i} of body {id}: contact force");
        }
        // The falling cube touches nothing; the others are pressed together.
        assert_eq!(&bf[6..9], &[0.0, 0.0, 0.0]);
        let c = &frames(&d, "contacts")[k];
        let ids = values(c, "cell_data", "body_a");
        assert!(ids.iter().all(|&a| a < 2.0), "{ids:?}");
        // Newton's third law through the frame: the forces between the two
        // resting cubes cancel, so the per-body sums add up to the floor's.
        let (fz, b_ids) = (bf[2] + bf[5], values(c, "cell_data", "body_b"));
        let nz = values(c, "cell_data", "normal");
        let fnorm = values(c, "cell_data", "force_normal");
        let ft = values(c, "cell_data", "force_tangent");
        let floor: f64 = (0..b_ids.len()).filter(|&i| b_ids[i] >= WALL).map(|i| fnorm[i] * nz[3 * i + 2] + ft[3 * i + 2]).sum();
        assert!(close(fz, -floor, 1e-9), "frame {k}: bodies {fz} vs floor {floor}");
    }
}

#[test]
fn render_makes_an_image_that_is_not_blank() {
    let Some(pv) = pvpython() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = common::run_config(1, dir.path(), "render", &spheres("cd"));
    let png = dir.path().join("pile.png");
    let o = Command::new(root().join("scripts/render"))
        .arg(&out)
        .args(["--frame", "last", "--size", "400x300", "--output"])
        .arg(&png)
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    assert!(o.status.success(), "scripts/render failed:\n{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::metadata(&png).map(|m| m.len() > 0).unwrap_or(false), "no image at {}", png.display());
    let o = Command::new(&pv).arg(root().join("scripts/pv/nonblank.py")).arg(&png).output().unwrap();
    let s = String::from_utf8_lossy(&o.stdout);
    let n: Vec<u64> = s.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    assert_eq!(n.len(), 2, "nonblank.py: {s}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(n[1], 400 * 300);
    // The pile fills a good part of the frame.
    assert!(n[0] > n[1] / 20, "only {} of {} pixels differ from the background", n[0], n[1]);
    // --frame takes a step, as scripts/plot does: the frames are at steps 0..5.
    let at3 = dir.path().join("step3.png");
    let o = Command::new(root().join("scripts/render")).arg(&out).args(["--frame", "3", "--size", "200x150", "--output"]).arg(&at3).env_remove("DISPLAY").output().unwrap();
    assert!(o.status.success() && at3.exists(), "--frame 3:\n{}", String::from_utf8_lossy(&o.stderr));
    let o = Command::new(root().join("scripts/render")).arg(&out).args(["--frame", "7", "--output"]).arg(dir.path().join("none.png")).env_remove("DISPLAY").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "--frame 7 (no such step):\n{err}");
    assert!(err.contains("no frame at step 7 (frames: 0, 1, 2, 3, 4, 5)"), "{err}");
    // --frame all: one numbered image per time step.
    let series = dir.path().join("series");
    let o = Command::new(root().join("scripts/render"))
        .arg(&out)
        .args(["--frame", "all", "--size", "200x150", "--color", "velocity", "--output"])
        .arg(&series)
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let n = std::fs::read_dir(&series).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "png")).count();
    assert_eq!(n, 6);
}

/// The cannonball pyramid of configs/cannonball-hooke.toml with 4 spheres
/// along the base (compatible-cd, Hookean contacts), until it is at rest:
/// its compatible forces differ from CD's.
const PYRAMID: &str = r#"
[simulation]
solver = "compatible-cd"
t_end = 0.1
until_static = 1e-4
dt = 1e-3
gravity = [0.0, 0.0, -9.81]

[[material]]
name = "grain"
density = 2000.0

[[shape]]
name = "ball"
kind = "sphere"
radius = 1.25e-3

[[generate]]
kind = "pyramid"
shape = "ball"
origin = [0.0, 0.0, 0.0]
n = 4
layer_gap = 6.25e-5
fix_base = true

[solver]
method = "apgd"
tolerance = 1e-8
max_iterations = 20000

[compatibility]
law = "hooke"
every = 5

[output]
dir = "OUTDIR"
every = 5
"#;

/// (smallest, largest) positive value of contact column `name` in frame
/// `k` of `out/frames.h5` (`k` < 0 from the end); None without any.
fn positive_range(out: &Path, k: isize, name: &str) -> Option<(f64, f64)> {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let g = f.group("frames").unwrap();
    let mut names = g.member_names().unwrap();
    names.sort();
    let name_k = &names[k.rem_euclid(names.len() as isize) as usize];
    let v: Vec<f64> = g.dataset(&format!("{name_k}/contacts/{name}")).unwrap().read_raw().unwrap();
    let pos: Vec<f64> = v.into_iter().filter(|&x| x > 0.0).collect();
    (!pos.is_empty()).then(|| (pos.iter().copied().fold(f64::INFINITY, f64::min), pos.iter().copied().fold(0.0, f64::max)))
}

/// scripts/render with `args` and a report; the report's one entry.
fn render_report(out: &Path, dir: &Path, name: &str, args: &[&str]) -> Value {
    let report = dir.join(format!("{name}.json"));
    let o = Command::new(root().join("scripts/render"))
        .arg(out)
        .args(args)
        .args(["--size", "400x300", "--output"])
        .arg(dir.join(format!("{name}.png")))
        .arg("--report")
        .arg(&report)
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "scripts/render {args:?} failed:\n{}\n{err}", String::from_utf8_lossy(&o.stdout));
    assert!(!err.contains("WARN") && !err.contains("Warning"), "ParaView's warnings on the terminal:\n{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v.as_array().map(|a| a.len()), Some(1), "{v}");
    v[0].clone()
}

fn range_of(v: &Value) -> (f64, f64) {
    (v["range"][0].as_f64().unwrap(), v["range"][1].as_f64().unwrap())
}

/// The picture of a compatible-cd run shows its compatible forces: the
/// network's colours span the frame's force_compatible range (not CD's
/// force_normal, which differs here) unless --field says otherwise; the
/// time is written; a frame whose contacts carry no force has no colour
/// bar, for the contacts or the bodies.
#[test]
fn render_colours_a_compatible_cd_network_by_force_compatible() {
    let Some(_pv) = pvpython() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = common::run_config(2, dir.path(), "pyramid", PYRAMID);
    let compat = positive_range(&out, -1, "force_compatible").expect("no compatible forces");
    let cd = positive_range(&out, -1, "force_normal").expect("no CD forces");
    assert!((compat.1 - cd.1).abs() > 0.05 * compat.1, "the two fields agree here ({compat:?}, {cd:?}): the test would not tell them apart");

    let last = render_report(&out, dir.path(), "last", &["--frame", "last"]);
    assert_eq!(last["field"], "force_compatible");
    let (lo, hi) = range_of(&last);
    assert!(close(lo, compat.0, 1e-12) && close(hi, compat.1, 1e-12), "colours over [{lo:e}, {hi:e}], force_compatible over {compat:?}");
    assert_eq!(last["bar"], true);
    assert_eq!(last["body_bar"], "body contact force, magnitude [N]");
    let s: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let (t, step) = (s["time"].as_f64().unwrap(), s["steps"].as_u64().unwrap());
    let label = last["label"].as_str().unwrap();
    let suffix = format!(" s (step {step})");
    let shown: f64 = label.strip_prefix("t = ").and_then(|l| l.strip_suffix(suffix.as_str())).and_then(|l| l.parse().ok()).unwrap_or(f64::NAN);
    assert!(close(shown, t, 1e-5), "time label {label:?}, the frame is at t = {t}, step {step}");

    // The same frame by its step, another field.
    let chosen = render_report(&out, dir.path(), "cd", &["--step", &step.to_string(), "--field", "force_normal"]);
    assert_eq!(chosen["label"], last["label"]);
    assert_eq!(chosen["field"], "force_normal");
    let (lo, hi) = range_of(&chosen);
    assert!(close(lo, cd.0, 1e-12) && close(hi, cd.1, 1e-12), "colours over [{lo:e}, {hi:e}], force_normal over {cd:?}");

    // Frame 0: contacts found, no force solved yet.
    assert_eq!(positive_range(&out, 0, "force_compatible"), None);
    let first = render_report(&out, dir.path(), "first", &["--frame", "0"]);
    assert_eq!(first["bar"], false, "{first}");
    // Nor for the bodies, whose contact force is zero everywhere.
    assert_eq!(first["body_bar"], Value::Null, "{first}");
    assert_eq!(first["label"], "t = 0 s (step 0)");
}
