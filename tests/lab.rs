//! The lab measurements and the servo walls (the guide's "Lab tests"):
//! the Love–Weber stress of the cannonball pyramid at rest against the sum
//! by hand over its compatible forces in frames.h5; the stress of five
//! spheres at rest in a box against the wall reactions (force balance);
//! a servo wall holding its stress at rest; each on 1 and 2 ranks.
mod common;
use serde_json::Value;
use std::path::Path;

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// summary.json's measures.stress as [row][column].
fn stress(s: &Value) -> [[f64; 3]; 3] {
    let m = &s["measures"]["stress"];
    [0, 1, 2].map(|i| [0, 1, 2].map(|j| m[i][j].as_f64().unwrap()))
}

fn measure(s: &Value, key: &str) -> f64 {
    s["measures"][key].as_f64().unwrap_or_else(|| panic!("no measures.{key} in {s}"))
}

fn largest(m: &[[f64; 3]; 3]) -> f64 {
    m.iter().flatten().fold(0.0, |a, x| a.max(x.abs()))
}

/// The last frame: (id → (fixed, position)), and per contact a, b, point, normal, normal force (`column`), tangential force.
type Contact = (u64, u64, [f64; 3], [f64; 3], f64, [f64; 3]);
fn last_frame(out: &Path, column: &str) -> (std::collections::HashMap<u64, (bool, [f64; 3])>, Vec<Contact>) {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let g = f.group("frames").unwrap();
    let last = g.member_names().unwrap().into_iter().max().unwrap();
    let fr = g.group(&last).unwrap();
    let b = fr.group("bodies").unwrap();
    let id = b.dataset("id").unwrap().read_raw::<u64>().unwrap();
    let fixed = b.dataset("fixed").unwrap().read_raw::<u8>().unwrap();
    let pos = b.dataset("position").unwrap().read_raw::<f64>().unwrap();
    let bodies = (0..id.len()).map(|i| (id[i], (fixed[i] != 0, [pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]]))).collect();
    let c = fr.group("contacts").unwrap();
    let r64 = |n: &str| c.dataset(n).unwrap().read_raw::<f64>().unwrap();
    let (a, bb) = (c.dataset("body_a").unwrap().read_raw::<u64>().unwrap(), c.dataset("body_b").unwrap().read_raw::<u64>().unwrap());
    let (p, n, fnn, ft) = (r64("point"), r64("normal"), r64(column), r64("force_tangent"));
    let v3 = |v: &[f64], k: usize| [v[3 * k], v[3 * k + 1], v[3 * k + 2]];
    let contacts = (0..a.len()).map(|k| (a[k], bb[k], v3(&p, k), v3(&n, k), fnn[k], v3(&ft, k))).collect();
    (bodies, contacts)
}

#[test]
fn pyramid_stress_is_the_love_weber_sum_of_its_compatible_forces() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/cannonball-cd-small.toml");
    let mut got = Vec::new();
    for np in [1, 2] {
        let out = tmp.path().join(format!("np{np}"));
        let dir = format!("output.dir={}", out.display());
        common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg, "--set", &dir, "--set", "simulation.solver=compatible-cd"]);
        let s = summary(&out);
        let (bodies, contacts) = last_frame(&out, "force_compatible");
        // By hand: V σ = Σ_c f ⊗ (x_c − x_a) over free a − f ⊗ (x_c − x_b)
        // over free b (f the force on b); the fixed base is the boundary.
        let mut vs = [[0.0; 3]; 3];
        for (a, b, p, n, f_n, f_t) in &contacts {
            let f = [0, 1, 2].map(|i| n[i] * f_n + f_t[i]);
            for (id, sign) in [(a, 1.0), (b, -1.0)] {
                if let Some((false, x)) = bodies.get(id) {
                    for i in 0..3 {
                        for j in 0..3 {
                            vs[i][j] += sign * f[i] * (p[j] - x[j]);
                        }
                    }
                }
            }
        }
        // The box: the free spheres' extent (no walls, no periodic axis).
        let r = 1.25e-3;
        let free: Vec<[f64; 3]> = bodies.values().filter(|(fixed, _)| !fixed).map(|(_, x)| *x).collect();
        let volume: f64 = (0..3)
            .map(|a| free.iter().map(|x| x[a] + r).fold(f64::MIN, f64::max) - free.iter().map(|x| x[a] - r).fold(f64::MAX, f64::min))
            .product();
        assert!((measure(&s, "volume") - volume).abs() <= 1e-12 * volume, "np {np}: volume {} vs {volume}", measure(&s, "volume"));
        let sigma = stress(&s);
        let scale = largest(&sigma);
        assert!(scale > 0.0);
        for i in 0..3 {
            for j in 0..3 {
                let hand = vs[i][j] / volume;
                assert!((sigma[i][j] - hand).abs() <= 1e-9 * scale, "np {np}: σ[{i}][{j}] = {} vs {hand} by hand", sigma[i][j]);
            }
        }
        // 30 free spheres in the box; each carries force on its 3 (top) to
        // 8 contacts, none is a rattler under the rule of 4.
        assert_eq!(s["measures"]["bodies"].as_u64(), Some(30));
        assert_eq!(measure(&s, "rattler_fraction"), 0.0);
        got.push(s);
    }
    let (a, b) = (stress(&got[0]), stress(&got[1]));
    for i in 0..3 {
        for j in 0..3 {
            assert!((a[i][j] - b[i][j]).abs() <= 1e-9 * largest(&a), "σ[{i}][{j}] on 1 rank {} vs 2 ranks {}", a[i][j], b[i][j]);
        }
    }
    for key in ["solid_fraction", "coordination", "coordination_backbone", "stress_ratio"] {
        let (x, y) = (measure(&got[0], key), measure(&got[1], key));
        assert!((x - y).abs() <= 1e-9 * x.abs().max(1e-300), "{key} on 1 rank {x} vs 2 ranks {y}");
    }
}

const R: f64 = 0.01;

/// Four spheres on the floor of a 4r × 4r box, each touching two side
/// walls, and a fifth on top of them in the middle, which pushes them onto
/// the walls; compatible-cd, at rest.
fn five_in_a_box() -> common::Spheres {
    let z_top = R + 2f64.sqrt() * R + 1e-7;
    let mut s = common::Spheres::new("compatible-cd", 0.03, 1e-3, [0.0, 0.0, -9.81], R);
    for (x, y) in [(R, R), (3.0 * R, R), (R, 3.0 * R), (3.0 * R, 3.0 * R)] {
        s = s.body([x, y, R]);
    }
    s.body([2.0 * R, 2.0 * R, z_top])
        .ground()
        .with("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [1.0, 0.0, 0.0]\n")
        .with("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n")
        .with(&format!("[[wall]]\npoint = [{w:?}, {w:?}, 0.0]\nnormal = [-1.0, 0.0, 0.0]\n", w = 4.0 * R))
        .with(&format!("[[wall]]\npoint = [{w:?}, {w:?}, 0.0]\nnormal = [0.0, -1.0, 0.0]\n", w = 4.0 * R))
        .with("[solver]\ntolerance = 1e-12\nmax_iterations = 100000\n")
}

#[test]
fn box_stress_balances_the_wall_reactions() {
    let tmp = tempfile::tempdir().unwrap();
    let mut got = Vec::new();
    for np in [1, 2] {
        let (out, log) = common::run_config(np, tmp.path(), "box", &five_in_a_box().toml());
        let s = summary(&out);
        let (bodies, _) = last_frame(&out, "force_compatible");
        let reaction = |k: u64| common::reactions(&out).into_iter().find(|r| r.0 == (1u64 << 63) + k).map_or([0.0; 3], |r| r.1);
        let (floor, x_hi, y_hi) = (reaction(0), reaction(3), reaction(4));
        let sigma = stress(&s);
        let v = measure(&s, "volume");
        // Σ_c f_c^z (z_c − z_i) over a body is its weight times its height
        // for a floor at z = 0 and frictionless side walls: V σ_zz = W z_G,
        // W the floor's reaction.
        let w = -floor[2];
        let zg = bodies.values().map(|(_, x)| x[2]).sum::<f64>() / bodies.len() as f64;
        assert!(w > 0.0 && x_hi[0] > 0.0, "np {np}: no load on the floor or the side wall\n{log}");
        assert!((sigma[2][2] * v - w * zg).abs() <= 1e-6 * w * zg, "np {np}: V σ_zz = {} vs W z_G = {}", sigma[2][2] * v, w * zg);
        // Horizontally only the walls at x = 4r and y = 4r have a lever:
        // V σ_xx = 4r R_x, V σ_yy = 4r R_y.
        assert!((sigma[0][0] * v - 4.0 * R * x_hi[0]).abs() <= 1e-6 * 4.0 * R * x_hi[0], "np {np}: V σ_xx = {} vs 4r R_x = {}", sigma[0][0] * v, 4.0 * R * x_hi[0]);
        assert!((sigma[1][1] * v - 4.0 * R * y_hi[1]).abs() <= 1e-6 * 4.0 * R * y_hi[1], "np {np}: V σ_yy = {} vs 4r R_y = {}", sigma[1][1] * v, 4.0 * R * y_hi[1]);
        // Each lower sphere presses the floor, two walls and the top sphere;
        // the top sphere rests on four: 20 ends over 5 spheres, no rattler.
        assert!((measure(&s, "coordination") - 4.0).abs() < 1e-12, "np {np}: coordination {}", measure(&s, "coordination"));
        assert!((measure(&s, "coordination_backbone") - 4.0).abs() < 1e-12);
        got.push(s);
    }
    let (a, b) = (stress(&got[0]), stress(&got[1]));
    for i in 0..3 {
        for j in 0..3 {
            assert!((a[i][j] - b[i][j]).abs() <= 1e-9 * largest(&a), "σ[{i}][{j}] on 1 rank {} vs 2 ranks {}", a[i][j], b[i][j]);
        }
    }
    // Under the rule of 5 contacts every sphere is a rattler, removed in turn.
    let text = five_in_a_box().with("[measure]\nrattler_contacts = 5\n").toml();
    let (out, _) = common::run_config(2, tmp.path(), "box-rattlers", &text);
    let s = summary(&out);
    assert_eq!(measure(&s, "rattler_fraction"), 1.0);
    assert_eq!(measure(&s, "coordination_backbone"), 0.0);
    assert!((measure(&s, "coordination") - 4.0).abs() < 1e-12);
}

/// Eight spheres (r = 0.1 m, 2 × 2 × 2, 2 mm apart) over the floor of an
/// open 0.406 m box, under `solver`.
fn eight_in_a_box(solver: &str, t_end: f64) -> common::Spheres {
    common::Spheres::new(solver, t_end, 1e-3, [0.0, 0.0, -9.81], 0.1)
        .lattice([0.102, 0.102, 0.102], [2, 2, 2], 0.002, [0.0; 3])
        .ground()
        .with("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [1.0, 0.0, 0.0]\n")
        .with("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n")
        .with("[[wall]]\npoint = [0.406, 0.406, 0.0]\nnormal = [-1.0, 0.0, 0.0]\n")
        .with("[[wall]]\npoint = [0.406, 0.406, 0.0]\nnormal = [0.0, -1.0, 0.0]\n")
}

/// The eight spheres under a lid that holds 10 kPa by stress control
/// (dem): the lid comes down, overshoots and settles.
fn servo_box(t_end: f64) -> String {
    eight_in_a_box("dem", t_end)
        .with("[[wall]]\npoint = [0.0, 0.0, 0.41]\nnormal = [0.0, 0.0, -1.0]\nservo_stress = 1e4\nservo_max_speed = 0.05\nservo_gain = 5.0\n")
        .with("[contact]\ndistance = 0.01\n\n[dem]\ngbar = 0.005\nf = 0.5\neps1 = 1.0e6\nn1 = 1.5\nn2 = -2.0\ndamping = 0.5\n")
        .output("every = 100\nthermo_every = 100")
        .toml()
}

#[test]
fn a_servo_wall_holds_its_stress_at_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let area = 0.406 * 0.406;
    let mut lids = Vec::new();
    for np in [1, 2] {
        let (out, log) = common::run_config(np, tmp.path(), "servo", &servo_box(0.7));
        let s = summary(&out);
        let lid = common::reactions(&out).into_iter().find(|r| r.0 == (1u64 << 63) + 5).expect("a reaction on the lid").1;
        // The bodies push the lid up (+z): its stress is the target.
        let held = lid[2] / area;
        assert!((held - 1e4).abs() <= 1e-6 * 1e4, "np {np}: the lid holds {held} Pa, not 10 kPa\n{log}");
        assert!(s["kinetic_energy"].as_f64().unwrap() < 1e-12, "np {np}: not at rest: {}", s["kinetic_energy"]);
        // The floor carries the lid's force and the weight of the spheres.
        let weight = 8.0 * 1000.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.1f64.powi(3) * 9.81;
        let floor = common::reactions(&out).into_iter().find(|r| r.0 == 1u64 << 63).unwrap().1;
        assert!((-floor[2] - (lid[2] + weight)).abs() <= 1e-6 * lid[2], "np {np}: floor {} vs lid {} + weight {weight}", -floor[2], lid[2]);
        lids.push(s["walls"][5]["point"][2].as_f64().unwrap());
    }
    assert!((lids[0] - lids[1]).abs() <= 1e-9, "the lid rests at {} on 1 rank, {} on 2", lids[0], lids[1]);
}

/// Stress control under cd and compatible-cd: a plate body free only along
/// z (`dofs`) and loaded with F = σ A (σ = 10 kPa on its 0.4 m × 0.4 m
/// face) presses the eight spheres of the servo box; at rest it lies on
/// them (its bottom at the spheres' tops, 0.4 m), and the floor carries F,
/// the plate's weight and the spheres' (cd on 1 and 2 ranks, compatible-cd
/// on 2, whose reactions are its compatible forces).
#[test]
fn under_cd_and_compatible_cd_a_loaded_plate_body_holds_its_stress_at_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let (sigma, area) = (1e4, 0.4 * 0.4);
    let force = sigma * area;
    let text = eight_in_a_box("cd", 0.3)
        .with("[[shape]]\nname = \"plate\"\nkind = \"box\"\nsize = [0.4, 0.4, 0.02]\n")
        .with("[[body]]\nshape = \"plate\"\nposition = [0.203, 0.203, 0.416]\ndofs = [\"z\"]\n")
        .with(&format!("[[load]]\nbody = 0\nforce = [0.0, 0.0, {:?}]\n", -force))
        .with("[contact]\ndistance = 0.01\n\n[solver]\ntolerance = 1e-10\n")
        .output("every = 50\nthermo_every = 100")
        .toml();
    let g = 9.81;
    let spheres = 8.0 * 1000.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.1f64.powi(3) * g;
    let plate = 1000.0 * area * 0.02 * g;
    for (solver, np) in [("cd", 1), ("cd", 2), ("compatible-cd", 2)] {
        let text = text.replace("solver = \"cd\"", &format!("solver = \"{solver}\""));
        let (out, log) = common::run_config(np, tmp.path(), &format!("plate-{solver}"), &text);
        let fr = common::frames::frames(&out);
        let last = fr.last().unwrap();
        // Body 0 is the plate (explicit bodies first).
        let (z, v) = (last.pos[0][2], last.vel[0]);
        assert!((z - 0.41).abs() <= 1e-9, "np {np}: the plate rests at z = {z}, not on the spheres' tops\n{log}");
        assert!(v.iter().all(|x| x.abs() <= 1e-9) && last.pos[0][0] == 0.203 && last.pos[0][1] == 0.203, "np {np}: the plate moves: v = {v:?}, at {:?}", last.pos[0]);
        let floor = common::reactions(&out).into_iter().find(|r| r.0 == 1u64 << 63).unwrap().1;
        let want = force + plate + spheres;
        assert!((-floor[2] - want).abs() <= 1e-6 * want, "np {np}: the floor carries {} N, not F + weights = {want} N", -floor[2]);
    }
}

/// A run stopped at a checkpoint and restarted ends where the run without
/// the stop ends: the servo's motion is in the checkpoint.
#[test]
fn a_restart_continues_the_servo_bit_for_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let (whole, _) = common::run_config(2, tmp.path(), "whole", &servo_box(0.25));
    let (first, _) = common::run_config(2, tmp.path(), "first", &servo_box(0.15));
    let checkpoint = first.join("checkpoint-000150.h5");
    assert!(checkpoint.exists(), "no checkpoint at the first run's end");
    common::mpirun_ok(2, &common::stiffgrain(), &["restart", checkpoint.to_str().unwrap(), "--set", "simulation.t_end=0.25"]);
    let point = |out: &Path| summary(out)["walls"][5]["point"][2].as_f64().unwrap().to_bits();
    assert_eq!(point(&first), point(&whole), "the restarted lid is not where the whole run's is");
}

/// Under rigid contacts (cd) a pushed jammed pack has no finite reaction:
/// the servo lid comes down onto the spheres and stops there, never into them.
#[test]
fn under_cd_a_servo_lid_stops_on_the_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let text = servo_box(0.4).replace("solver = \"dem\"", "solver = \"cd\"").replace("[dem]", "[solver]\ntolerance = 1e-10\n\n[dem]");
    let text = text.split("[dem]").next().unwrap().to_string() + "[output]\ndir = \"OUTDIR\"\nevery = 10\nthermo_every = 100\n";
    let (out, log) = common::run_config(2, tmp.path(), "servo-cd", &text);
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let z: Vec<f64> = f.dataset("series/wall_position").unwrap().read_raw::<f64>().unwrap().chunks(3).skip(5).step_by(6).map(|p| p[2]).collect();
    // The top spheres' tops rest at 0.4 m: the lid reaches them, no lower.
    let lowest = z.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(lowest >= 0.4 - 1e-8, "the lid went into the pack, down to {lowest}\n{log}");
    assert!((z.last().unwrap() - 0.4).abs() < 1e-6, "the lid stopped at {} above the pack", z.last().unwrap());
}

/// Two spheres meeting across the sheared face of a Lees–Edwards cell
/// (flow x, gradient z, γ̇ = 5/s in a unit cube): A rises at 1 m/s; B sinks
/// at 1 m/s and moves along x at −γ̇ L_z, so its image one period up, which
/// moves at +γ̇ L_z more, stays at A's x and meets A head on at t = 0.1 s —
/// after B has crossed the x face and onto another rank. With e = 1 they
/// swap their z velocities and keep their x velocities, as two spheres
/// colliding head on in an unsheared image would. With friction μ = 0.5
/// this holds only if B v counts the image's speed beyond its owner (B's
/// columns are the owner's): without it the contact sees B's image slide
/// at γ̇ L_z and friction turns both x velocities by 0.69 m/s.
#[test]
fn lees_edwards_images_collide_as_unsheared_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let text = common::Spheres::new("cd", 0.3, 1e-3, [0.0; 3], 0.05)
        .with("[[body]]\nshape = \"s\"\nposition = [0.2, 0.5, 0.85]\nvelocity = [0.0, 0.0, 1.0]\n")
        .with("[[body]]\nshape = \"s\"\nposition = [0.2, 0.5, 0.15]\nvelocity = [-5.0, 0.0, -1.0]\n")
        .with("[parallel]\nperiodic = [true, true, true]\nbox_min = [0.0, 0.0, 0.0]\nbox_max = [1.0, 1.0, 1.0]\nlees_edwards = \"xz\"\nshear_rate = 5.0\n")
        .with("[solver]\ntolerance = 1e-12\n")
        .every(20)
        .toml()
        .replace("density = 1000.0", "density = 1000.0\nrestitution = 1.0\nfriction = 0.5");
    for np in [1, 3] {
        let (out, log) = common::run_config(np, tmp.path(), "lees-edwards", &text);
        let f = hdf5::File::open(out.join("frames.h5")).unwrap();
        let g = f.group("frames").unwrap();
        let last = g.member_names().unwrap().into_iter().max().unwrap();
        let v: Vec<f64> = g.dataset(&format!("{last}/bodies/velocity")).unwrap().read_raw().unwrap();
        let p: Vec<f64> = g.dataset(&format!("{last}/bodies/position")).unwrap().read_raw().unwrap();
        let want = [0.0, 0.0, -1.0, -5.0, 0.0, 1.0];
        for k in 0..6 {
            assert!((v[k] - want[k]).abs() < 1e-9, "np {np}: velocities {v:?}, not {want:?}\n{log}");
        }
        // They met at t = 0.1 s (to the step of Δt = 1 ms in which the gap
        // closes): A is back near 0.75 m, B near 0.25 m.
        assert!((p[2] - 0.75).abs() < 3e-3, "np {np}: A at z = {}", p[2]);
        assert!((p[5] - 0.25).abs() < 3e-3, "np {np}: B at z = {}", p[5]);
        // The steady state over the second half of the strain: the cell's
        // solid fraction stays that of two spheres in a unit cube.
        let steady = &summary(&out)["steady"]["solid_fraction"];
        let phi = 2.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.05f64.powi(3);
        assert!((steady["mean"].as_f64().unwrap() - phi).abs() < 1e-12 && steady["std"].as_f64().unwrap() < 1e-12, "np {np}: steady {steady}");
        // Apart again by then (no contact), and the strain is γ̇ t_end.
        let steady = &summary(&out)["steady"];
        assert_eq!(steady["coordination"]["mean"].as_f64(), Some(0.0), "np {np}: steady {steady}");
        assert!((steady["strain"].as_f64().unwrap() - 5.0 * 0.3).abs() < 1e-12, "np {np}: steady {steady}");
    }
}

/// Two spheres meeting across the z face of a unit periodic cell: A at
/// (0.2, 0.5, 0.85) rising at 1 m/s, B at (`b_x`, 0.5, 0.15) sinking at
/// 1 m/s with `b_x_speed` along x, then `extra` (the shear, solver keys).
fn crossing(solver: &str, material: &str, b_x: f64, b_x_speed: f64, extra: &str) -> String {
    common::Spheres::new(solver, 0.3, 1e-3, [0.0; 3], 0.05)
        .material(material)
        .moving_body([0.2, 0.5, 0.85], [0.0, 0.0, 1.0])
        .moving_body([b_x, 0.5, 0.15], [b_x_speed, 0.0, -1.0])
        .with(&format!("[parallel]\nperiodic = [true, true, true]\nbox_min = [0.0, 0.0, 0.0]\nbox_max = [1.0, 1.0, 1.0]\n{extra}"))
        .every(20)
        .toml()
}

/// Column `what` of the bodies in the last frame of run `out`.
fn last_bodies(out: &Path, what: &str) -> Vec<f64> {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let g = f.group("frames").unwrap();
    let last = g.member_names().unwrap().into_iter().max().unwrap();
    g.dataset(&format!("{last}/bodies/{what}")).unwrap().read_raw().unwrap()
}

/// Runs `cell(b_x_speed, shear)` in an unsheared cell (B at rest along x,
/// 1 rank), asserts `collided(velocities, spins)` there, then in the cell
/// sheared at γ̇ = 5 /s (B at −γ̇ L_z along x, so that its image moves as
/// in the unsheared cell) at 1 and 3 ranks: the velocities, spins and
/// positions across the flow equal the unsheared run's to 1e-9.
fn sheared_meeting_is_unsheared(name: &str, cell: impl Fn(f64, &str) -> String, collided: impl Fn(&[f64], &[f64]) -> bool) {
    let tmp = tempfile::tempdir().unwrap();
    let (plain, log) = common::run_config(1, tmp.path(), &format!("{name}-unsheared"), &cell(0.0, ""));
    let (v0, p0, w0) = (last_bodies(&plain, "velocity"), last_bodies(&plain, "position"), last_bodies(&plain, "angular_velocity"));
    assert!(collided(&v0, &w0), "{name}: not the collision meant in the unsheared cell: {v0:?} {w0:?}\n{log}");
    for np in [1, 3] {
        let (out, log) = common::run_config(np, tmp.path(), &format!("{name}-{np}"), &cell(-5.0, "lees_edwards = \"xz\"\nshear_rate = 5.0\n"));
        let (v, p, w) = (last_bodies(&out, "velocity"), last_bodies(&out, "position"), last_bodies(&out, "angular_velocity"));
        for k in 0..6 {
            // B keeps its −γ̇ L_z along x in the sheared cell.
            let want = if k == 3 { v0[k] - 5.0 } else { v0[k] };
            assert!((v[k] - want).abs() < 1e-9, "{name}, np {np}: velocities {v:?}, unsheared {v0:?}\n{log}");
            assert!((w[k] - w0[k]).abs() < 1e-9, "{name}, np {np}: spins {w:?}, unsheared {w0:?}\n{log}");
        }
        for k in [1, 2, 4, 5] {
            assert!((p[k] - p0[k]).abs() < 1e-9, "{name}, np {np}: positions {p:?}, unsheared {p0:?}\n{log}");
        }
    }
}

/// An oblique frictional meeting across the sheared face under cd: B's
/// image arrives 0.04 m along x from A, so the contact normal has a part
/// along the flow and both the normal and the tangential rows of B see the
/// image's speed beyond its owner. Without that speed in B v the normal
/// row misses n_x γ̇ L_z and the tangents see a slide of γ̇ L_z.
#[test]
fn under_cd_an_oblique_frictional_meeting_across_the_sheared_face_is_an_unsheared_one() {
    let cell = |b_x_speed: f64, shear: &str| crossing("cd", "friction = 0.5\nrestitution = 0.5", 0.24, b_x_speed, &format!("{shear}[solver]\ntolerance = 1e-12\n"));
    // Obliquely and with friction: x velocities and spins.
    sheared_meeting_is_unsheared("oblique-cd", cell, |v, w| v[2] < -0.1 && v[5] > 0.1 && v[0].abs() > 0.05 && w[1].abs() > 0.1);
}

/// The same meeting under the DEM, head on, with friction μ = 0.5: the
/// image's increments over each step carry its drift along the flow, so
/// the two spheres meet with no relative sliding and friction does
/// nothing, as in the unsheared cell. Without the drift the contact would
/// see B's image slide by γ̇ L_z Δt a step, and friction would change both
/// x velocities.
#[test]
fn under_dem_lees_edwards_images_collide_as_unsheared_ones() {
    let cell = |b_x_speed: f64, shear: &str| crossing("dem", "friction = 0.5", 0.2, b_x_speed, shear);
    // The z velocities turned.
    sheared_meeting_is_unsheared("head-on-dem", cell, |v, _| v[2] < -0.9 && v[5] > 0.9);
}

/// A stress-controlled Lees–Edwards cell (γ̇ = 0 here) whose pack carries
/// no stress shrinks its gradient period at `servo_max_speed` (1 m/s, from
/// the first step's control on): L(t) = 1 − (t − Δt). Its images move with
/// the period, and the CD step sees their speed: A at rest at z = 0.85 is
/// met by the image of B (at rest at z = 0.06) one period up, which comes
/// down at 1 m/s and reaches A at t = 0.111 s (1.06 − (t − Δt) = 0.95). With
/// e = 1 A leaves at the image's −1 m/s and the image stops, so that B, its
/// owner, rises at +1 m/s; neither crosses a face before t_end. The target
/// (1e12 Pa) stays far above the collision's stress, so the rate never drops.
#[test]
fn a_stress_controlled_cell_moves_its_images_with_its_period() {
    let tmp = tempfile::tempdir().unwrap();
    let text = common::Spheres::new("cd", 0.3, 1e-3, [0.0; 3], 0.05)
        .material("restitution = 1.0")
        .body([0.2, 0.5, 0.85])
        .body([0.2, 0.5, 0.06])
        .with("[parallel]\nperiodic = [true, true, true]\nbox_min = [0.0, 0.0, 0.0]\nbox_max = [1.0, 1.0, 1.0]\nlees_edwards = \"xz\"\nshear_rate = 0.0\n")
        .with("servo_stress = 1e12\nservo_max_speed = 1.0\n[solver]\ntolerance = 1e-12\n")
        .every(20)
        .toml();
    for np in [1, 3] {
        let (out, log) = common::run_config(np, tmp.path(), "cell", &text);
        let (v, p) = (last_bodies(&out, "velocity"), last_bodies(&out, "position"));
        let want = [0.0, 0.0, -1.0, 0.0, 0.0, 1.0];
        for k in 0..6 {
            assert!((v[k] - want[k]).abs() < 1e-9, "np {np}: velocities {v:?}, not {want:?}\n{log}");
        }
        // Apart since t = 0.111 s, to the step in which the gap closes.
        assert!((p[2] - (0.85 - (0.3 - 0.111))).abs() < 3e-3, "np {np}: A at z = {}", p[2]);
        assert!((p[5] - (0.06 + (0.3 - 0.111))).abs() < 3e-3, "np {np}: B at z = {}", p[5]);
        let m = &summary(&out)["measures"];
        let height = m["box_hi"][2].as_f64().unwrap() - m["box_lo"][2].as_f64().unwrap();
        assert!((height - (1.0 - (0.3 - 1e-3))).abs() < 1e-12, "np {np}: the cell's period is {height}");
    }
}

/// The stress-controlled cell at rest holds its target: the column's
/// Love–Weber σ_zz is 10 kPa to 1e-6, on 1 and 2 ranks, with the same period.
#[test]
fn under_dem_a_stress_controlled_cell_holds_its_stress_at_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let mut heights = Vec::new();
    for np in [1, 2] {
        let (out, log) = common::run_config(np, tmp.path(), "column", &common::stress_controlled_column(1.5, 100));
        let s = summary(&out);
        let held = stress(&s)[2][2];
        assert!((held - 1e4).abs() <= 1e-6 * 1e4, "np {np}: the cell holds {held} Pa, not 10 kPa\n{log}");
        assert!(s["kinetic_energy"].as_f64().unwrap() < 1e-12, "np {np}: not at rest: {}", s["kinetic_energy"]);
        heights.push(s["measures"]["box_hi"][2].as_f64().unwrap());
    }
    assert!((heights[0] - heights[1]).abs() <= 1e-9, "the cell's period is {} on 1 rank, {} on 2", heights[0], heights[1]);
}

/// A run stopped at a checkpoint while the cell closes and shears (γ̇ =
/// 0.5 /s: the column's ends meet across the sheared face, off their axis),
/// and restarted, ends where the run without the stop ends: the cell's
/// period, rate and servo state, and how far its images moved since the
/// ghost lists were built, are in the checkpoint; the restart keeps the
/// bodies where the run had them (unwrapped) and on the ranks that owned
/// them, and places its images by the expression the run refreshes them with.
#[test]
fn a_restart_continues_the_stress_controlled_sheared_cell_bit_for_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let sheared = |t_end: f64| common::stress_controlled_column(t_end, 100).replace("shear_rate = 0.0", "shear_rate = 0.5");
    let (whole, _) = common::run_config(2, tmp.path(), "whole", &sheared(0.6));
    let (first, _) = common::run_config(2, tmp.path(), "first", &sheared(0.3));
    let checkpoint = first.join("checkpoint-000300.h5");
    assert!(checkpoint.exists(), "no checkpoint at the first run's end");
    common::mpirun_ok(2, &common::stiffgrain(), &["restart", checkpoint.to_str().unwrap(), "--set", "simulation.t_end=0.6"]);
    assert_eq!(common::last_frame_bits(&first), common::last_frame_bits(&whole), "the restarted run ends elsewhere");
    let height = |out: &Path| summary(out)["measures"]["box_hi"][2].as_f64().unwrap().to_bits();
    assert_eq!(height(&first), height(&whole), "the restarted cell's period differs");
}

/// Bad lab settings: one line naming the file and the key, exit status 2.
#[test]
fn bad_lab_settings_are_one_line_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let lid = "[[wall]]\npoint = [0.0, 0.0, 1.0]\nnormal = [0.0, 0.0, -1.0]\n";
    let periodic = "[parallel]\nperiodic = [true, true, true]\nbox_min = [-1.0, -1.0, -1.0]\nbox_max = [1.0, 1.0, 2.0]\n";
    let plate = |dofs: &str| format!("[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, 2.0]\ndofs = {dofs}\n");
    let cases: [(&str, String, &str); 12] = [
        ("cd", format!("{lid}servo_stress = 1e3\n"), "wall[1].servo_max_speed"),
        ("cd", "[[wall]]\npoint = [0.0, 0.0, 1.0]\nnormal = [0.0, 1.0, -1.0]\nservo_stress = 1e3\nservo_max_speed = 0.1\n".into(), "wall[1].normal"),
        ("cd", format!("{lid}servo_force = 1.0\nservo_stress = 1e3\nservo_max_speed = 0.1\n"), "wall[1].servo_force"),
        ("cd", format!("{lid}servo_gain = 2.0\n"), "wall[1].servo_gain"),
        ("cd", "[measure]\nstress_ratio = \"xx\"\n".into(), "measure.stress_ratio"),
        ("cd", format!("{periodic}lees_edwards = \"xw\"\nshear_rate = 1.0\n"), "parallel.lees_edwards"),
        ("cd", plate("[\"z\", \"w\"]"), "body[1].dofs"),
        ("cd", plate("[]"), "body[1].dofs"),
        ("cd", plate("[\"z\"]") + "velocity = [1.0, 0.0, 0.0]\n", "body[1].velocity"),
        ("cd", format!("{periodic}servo_stress = 1e3\nservo_max_speed = 0.1\n"), "parallel.servo_stress"),
        ("cd", format!("{periodic}lees_edwards = \"xz\"\nshear_rate = 1.0\nservo_stress = 1e3\n"), "parallel.servo_max_speed"),
        ("cd", format!("{periodic}lees_edwards = \"xz\"\nshear_rate = 1.0\nservo_gain = 2.0\n"), "parallel.servo_gain"),
    ];
    for (k, (solver, extra, key)) in cases.iter().enumerate() {
        let text = common::Spheres::new(solver, 0.1, 1e-3, [0.0; 3], 0.1).body([0.0, 0.0, 0.5]).ground().with(extra).toml();
        let path = tmp.path().join(format!("bad-{k}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(common::stiffgrain()).arg("check").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(out.status.code(), Some(2), "{key}: exit status; stderr: {stderr}");
        assert_eq!(lines.len(), 1, "{key}: one line expected, got: {stderr}");
        assert!(lines[0].contains(key) && lines[0].contains(&format!("bad-{k}.toml")), "the line should name {key} and the file: {}", lines[0]);
    }
}
