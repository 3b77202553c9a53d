//! Moving walls (`[[wall]] velocity` / `path`): a floor pushing a pack up
//! obeys the momentum balance of the pack, step by step, with the same
//! reactions on 1 and 3 ranks; a wall given a path follows it exactly and
//! carries a sphere along (cd, compatible-cd and dem).
mod common;
use std::path::Path;

const R: f64 = 0.01;
const RHO: f64 = 1000.0;

/// The pack of `common::rising_floor_box`.
fn compression() -> String {
    common::rising_floor_box().toml()
}

struct Frame {
    step: u64,
    dt: f64,
    velocity: Vec<[f64; 3]>,
    /// Total contact force of the walls on the pack.
    wall_force: [f64; 3],
}

fn frames(out: &Path) -> Vec<Frame> {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let g = f.group("frames").unwrap();
    let mut v = Vec::new();
    for name in g.member_names().unwrap() {
        let fr = g.group(&name).unwrap();
        let vel: Vec<f64> = fr.dataset("bodies/velocity").unwrap().read_raw().unwrap();
        let b: Vec<u64> = fr.dataset("contacts/body_b").unwrap().read_raw().unwrap();
        let n: Vec<f64> = fr.dataset("contacts/normal").unwrap().read_raw().unwrap();
        let fnorm: Vec<f64> = fr.dataset("contacts/force_normal").unwrap().read_raw().unwrap();
        let mut wall_force = [0.0; 3];
        for k in (0..b.len()).filter(|&k| b[k] >= 1 << 63) {
            for d in 0..3 {
                // the force on body b (the wall) is f_n n; on the sphere its opposite
                wall_force[d] -= fnorm[k] * n[3 * k + d];
            }
        }
        v.push(Frame {
            step: fr.attr("step").unwrap().read_scalar().unwrap(),
            dt: fr.attr("dt").unwrap().read_scalar().unwrap(),
            velocity: vel.chunks(3).map(|c| [c[0], c[1], c[2]]).collect(),
            wall_force,
        });
    }
    v.sort_by_key(|f| f.step);
    v
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn a_moving_floor_obeys_the_momentum_balance_of_the_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let m = RHO * 4.0 / 3.0 * std::f64::consts::PI * R.powi(3);
    let weight = 18.0 * m * 9.81;
    let mut lids = Vec::new();
    for np in [1, 3] {
        let (out, log) = common::run_config(np, tmp.path(), "floor", &compression());
        assert!(!log.contains("walls:"), "wall lines in the thermo output:\n{log}");
        let fr = frames(&out);
        assert_eq!(fr.len(), 31);
        // /series: a row per frame, the walls' reactions the opposite of
        // their forces on the pack in the frame's contacts.
        let f = hdf5::File::open(out.join("frames.h5")).unwrap();
        let steps: Vec<u64> = f.dataset("series/step").unwrap().read_raw().unwrap();
        assert_eq!(steps, fr.iter().map(|f| f.step).collect::<Vec<_>>());
        let series: Vec<f64> = f.dataset("series/wall_force").unwrap().read_raw().unwrap();
        for (k, frame) in fr.iter().enumerate() {
            for d in 0..3 {
                let on_walls: f64 = (0..5).map(|w| series[15 * k + 3 * w + d]).sum();
                let off = on_walls + frame.wall_force[d];
                assert!(off.abs() <= 1e-12 * weight.max(frame.wall_force[d].abs()), "np {np}, step {}: series {on_walls} N", frame.step);
            }
        }
        let floor_z: Vec<f64> = f.dataset("series/wall_position").unwrap().read_raw::<f64>().unwrap().chunks(15).map(|r| r[2]).collect();
        assert!((floor_z[30] - (-5e-4 + 0.05 * 0.03)).abs() < 1e-15, "floor at {} m", floor_z[30]);
        let largest = fr.iter().map(|f| f.wall_force[2].abs()).fold(weight, f64::max);
        for w in fr.windows(2) {
            // Σ m (v⁺ − v)/Δt = M g + (walls on the pack); body–body forces cancel.
            for d in 0..3 {
                let dp: f64 = w[1].velocity.iter().zip(&w[0].velocity).map(|(a, b)| m * (a[d] - b[d])).sum::<f64>() / w[1].dt;
                let g = if d == 2 { -weight } else { 0.0 };
                let residual = dp - g - w[1].wall_force[d];
                assert!(residual.abs() <= 1e-9 * largest, "np {np}, step {}: momentum balance off by {residual:e} N (axis {d})", w[1].step);
            }
        }
        // The floor met the pack after 10 ms (an impact), then carries it up
        // at constant speed: its reaction is the pack's weight.
        assert!(largest > 2.0 * weight, "np {np}: no impact ({largest} N)");
        let s = summary(&out);
        let floor = s["reactions"].as_array().unwrap().iter().find(|r| r["body"].as_u64() == Some(1u64 << 63)).expect("no reaction on the floor");
        let fz = floor["force"][2].as_f64().unwrap();
        assert!((fz + weight).abs() <= 1e-6 * weight, "np {np}: the floor carries {fz} N, the pack weighs {weight} N");
        let z = s["walls"][0]["point"][2].as_f64().unwrap();
        assert!((z - (-5e-4 + 0.05 * 0.03)).abs() < 1e-15, "np {np}: floor at {z}");
        lids.push(fz);
    }
    assert!((lids[0] - lids[1]).abs() <= 1e-6 * weight, "floor reaction on 1 rank {} vs 3 ranks {}", lids[0], lids[1]);
}

/// A sphere resting on a floor that rises 2 mm in 50 ms along a path, then
/// stays; `solver` cd, compatible-cd or dem.
fn riding(solver: &str) -> String {
    let dem = match solver {
        "dem" => "[dem]\ngbar = 1e-4\ndamping = 1.0\n",
        "compatible-cd" => "[compatibility]\nevery = 1000\n",
        _ => "",
    };
    let z = if solver == "dem" { R + 5e-5 } else { R };
    format!(
        r#"
[simulation]
solver = "{solver}"
t_end = 0.2
dt = 1e-3
gravity = [0.0, 0.0, -9.81]

[[material]]
name = "m"
density = {RHO}
young = 1e9

[[shape]]
name = "s"
kind = "sphere"
radius = {R}

[[body]]
shape = "s"
position = [0.0, 0.0, {z}]

[[wall]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]
path = [[0.05, 0.0, 0.0, 0.002], [0.2, 0.0, 0.0, 0.002]]

[contact]
distance = 1e-3

{dem}
[output]
dir = "OUTDIR"
every = 0
"#
    )
}

#[test]
fn a_wall_follows_its_path_and_carries_a_sphere() {
    let tmp = tempfile::tempdir().unwrap();
    for solver in ["cd", "compatible-cd", "dem"] {
        let (out, log) = common::run_config(2, tmp.path(), solver, &riding(solver));
        let s = summary(&out);
        let p: Vec<f64> = s["walls"][0]["point"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(p, vec![0.0, 0.0, 0.002], "{solver}: the wall left its path\n{log}");
        let f = hdf5::File::open(out.join("frames.h5")).unwrap();
        let g = f.group("frames").unwrap();
        let last = g.member_names().unwrap().into_iter().max().unwrap();
        let pos: Vec<f64> = g.dataset(&format!("{last}/bodies/position")).unwrap().read_raw().unwrap();
        // CD keeps the sphere on the floor; the DEM barrier holds it within ḡ.
        let gap = pos[2] - R - 0.002;
        let tol = if solver == "dem" { 1e-4 } else { 1e-9 };
        assert!(gap > -1e-12 && gap < tol, "{solver}: sphere {gap:e} above the raised floor\n{log}");
        // At rest on it again, the floor carries the sphere's weight.
        let w = RHO * 4.0 / 3.0 * std::f64::consts::PI * R.powi(3) * 9.81;
        let fz: f64 = common::reactions(&out).iter().map(|r| r.1[2]).sum();
        assert!((fz + w).abs() < 1e-3 * w, "{solver}: floor reaction {fz} vs weight {w}");
    }
}
