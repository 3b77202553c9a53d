//! `[solver] method = "newton"` for `cd`: PETSc's active-set VI Newton on
//! the LCP with N assembled. A sphere on the floor and columns of spheres
//! carry their weight exactly; the same forces as APGD on a determinate
//! lattice and on 1, 2 and 3 ranks; the same velocities as APGD on a dense
//! pack whose forces are not unique, also by PETSc TAO (`-cd_tao_type`);
//! friction refused in one line.
mod common;
use common::frames::{frames, Frame};
use std::path::{Path, PathBuf};

const G: f64 = 9.81;
const WALL: u64 = 1 << 63;

fn run_text(np: usize, dir: &Path, name: &str, text: &str) -> PathBuf {
    common::run_config(np, dir, name, text).0
}

fn norm(v: &[f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Mass of a sphere of radius `r` of the helper's density 1000.
fn mass(r: f64) -> f64 {
    1000.0 * 4.0 / 3.0 * std::f64::consts::PI * r.powi(3)
}

/// A 4 × 3 lattice of columns of three spheres (radius 0.01, touching their
/// neighbours) standing on the floor, at rest, for 10 steps: every contact
/// is a chain link, so the forces are unique — the vertical contact under
/// the k-th sphere from the top carries k m g, the sideways ones nothing.
fn columns(method: &str) -> String {
    common::Spheres::new("cd", 0.01, 1e-3, [0.0, 0.0, -G], 0.01)
        .lattice([0.0, 0.0, 0.01], [4, 3, 3], 0.0, [0.0; 3])
        .ground()
        .with(&format!("[solver]\nmethod = \"{method}\"\ntolerance = 1e-12\nmax_iterations = 100000\n"))
        .every(1)
        .toml()
}

/// Newton solved every step of the run in `out` itself (APGD finished none).
fn newton_alone(out: &Path) {
    let s = common::frames::summary(out);
    assert_eq!(s["cd_newton_fallbacks"], 0, "{s}");
    assert!(s["linear_iterations_total"].as_u64().unwrap() > 0, "{s}");
}

/// (body a, body b, normal force) of each contact of a frame, sorted.
fn forces(f: &Frame) -> Vec<(u64, u64, f64)> {
    let mut c: Vec<(u64, u64, f64)> = f.contacts.iter().map(|c| (c.body_a, c.body_b, c.force_normal)).collect();
    c.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    c
}

#[test]
fn a_sphere_on_the_floor_carries_m_g() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::Spheres::new("cd", 0.01, 1e-3, [0.0, 0.0, -G], 0.05)
        .body([0.0, 0.0, 0.05])
        .ground()
        .with("[solver]\nmethod = \"newton\"\ntolerance = 1e-12\n")
        .every(1)
        .toml();
    let out = run_text(1, dir.path(), "sphere", &text);
    newton_alone(&out);
    let fr = frames(&out);
    let mg = mass(0.05) * G;
    for f in &fr[1..] {
        assert_eq!(f.contacts.len(), 1, "t = {}", f.t);
        let c = &f.contacts[0];
        assert_eq!(c.body_b, WALL);
        assert!((c.force_normal - mg).abs() <= 1e-10 * mg, "t = {}: f = {} N, m g = {mg} N", f.t, c.force_normal);
        assert!(norm(&f.vel[0]) <= 1e-12, "t = {}: the sphere moves at {:?}", f.t, f.vel[0]);
    }
}

#[test]
fn columns_carry_their_weight_alike_under_apgd_and_newton_on_1_2_and_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let mg = mass(0.01) * G;
    let newton: Vec<Vec<Frame>> = [1, 2, 3]
        .iter()
        .map(|&np| {
            let out = run_text(np, dir.path(), &format!("newton-{np}"), &columns("newton"));
            newton_alone(&out);
            frames(&out)
        })
        .collect();
    let apgd = frames(&run_text(1, dir.path(), "apgd", &columns("apgd")));
    let first = &newton[0];
    // Analytic: the k-th sphere from the top rests on k m g.
    let last = forces(first.last().unwrap());
    let z = |id: u64| first.last().unwrap().pos[id as usize][2];
    let (mut vertical, mut sideways) = (0, 0);
    for &(a, b, f) in &last {
        let (low, high) = if b == WALL { (None, a) } else if z(a) < z(b) - 0.01 { (Some(a), b) } else if z(b) < z(a) - 0.01 { (Some(b), a) } else { (None, u64::MAX) };
        if high == u64::MAX {
            sideways += 1;
            assert!(f.abs() <= 1e-10 * mg, "sideways contact {a}–{b} carries {f} N");
            continue;
        }
        vertical += 1;
        // Spheres above the contact: 3 on the floor, 2 above the bottom layer, 1 above the middle.
        let above = match low {
            None => 3.0,
            Some(l) => (3.0 - ((z(l) - 0.01) / 0.02).round()) - 1.0,
        };
        assert!((f - above * mg).abs() <= 1e-9 * mg, "contact {a}–{b}: {f} N, expected {} N", above * mg);
    }
    assert_eq!(vertical, 36, "one vertical contact under each sphere");
    assert!(sideways > 0, "the lattice has sideways contacts");
    // APGD and the other rank counts: the same forces at every step.
    for (name, run) in [("apgd", &apgd), ("2 ranks", &newton[1]), ("3 ranks", &newton[2])] {
        assert_eq!(run.len(), first.len());
        let mut df = 0.0f64;
        for (a, b) in first.iter().zip(run.iter()) {
            let (fa, fb) = (forces(a), forces(b));
            assert_eq!(fa.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), fb.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), "t = {}: contacts differ ({name})", a.t);
            for (x, y) in fa.iter().zip(&fb) {
                df = df.max((x.2 - y.2).abs());
            }
        }
        eprintln!("columns, newton on 1 rank against {name}: forces within {df:.2e} N (m g = {mg:.3e} N)");
        assert!(df <= 1e-9 * mg, "{name}: forces differ by {df} N");
    }
}

/// The 18 spheres of `rising_floor_box` pressed between walls by a rising
/// floor (forces not unique): Newton's velocities are APGD's, and so are
/// the resultant forces on the walls, to what the tolerance 1e-12 × max|p|
/// leaves.
#[test]
fn on_a_dense_pack_newton_gives_apgd_velocities_and_wall_forces() {
    let dir = tempfile::tempdir().unwrap();
    let run = |method: &str| {
        let text = common::rising_floor_box().toml().replace("[solver]\n", &format!("[solver]\nmethod = \"{method}\"\n"));
        run_text(2, dir.path(), method, &text)
    };
    let (a_out, n_out) = (run("apgd"), run("newton"));
    newton_alone(&n_out);
    same_motion_and_wall_forces(&a_out, &n_out, "newton");
}

/// The same pack by PETSc TAO's bounded Newton line search (`bnls`, through
/// `-cd_tao_type` under `method = "newton"`): APGD's velocities and wall
/// forces, solved by TAO alone.
#[test]
fn on_a_dense_pack_tao_gives_apgd_velocities_and_wall_forces() {
    let dir = tempfile::tempdir().unwrap();
    let text = |method: &str| common::rising_floor_box().toml().replace("[solver]\n", &format!("[solver]\nmethod = \"{method}\"\n"));
    let a_out = run_text(2, dir.path(), "apgd", &text("apgd"));
    let t_out = dir.path().join("out-tao");
    let cfg = dir.path().join("tao.toml");
    std::fs::write(&cfg, text("newton").replace("OUTDIR", &t_out.display().to_string())).unwrap();
    common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--", "-cd_tao_type", "bnls"]);
    newton_alone(&t_out);
    same_motion_and_wall_forces(&a_out, &t_out, "tao bnls");
}

/// Velocities within 1e-9 m/s and wall reactions within 1e-6 of the largest
/// between the runs in `a_out` (APGD) and `n_out`.
fn same_motion_and_wall_forces(a_out: &Path, n_out: &Path, name: &str) {
    let (a, n) = (frames(a_out), frames(n_out));
    assert_eq!(a.len(), n.len());
    let (mut dv, mut vmax) = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(&n) {
        for (u, v) in x.vel.iter().zip(&y.vel) {
            dv = dv.max(norm(&[u[0] - v[0], u[1] - v[1], u[2] - v[2]]));
            vmax = vmax.max(norm(u));
        }
    }
    // The wall reactions (summary.json): the sum of each wall's contact forces.
    let (ra, rn) = (common::reactions(a_out), common::reactions(n_out));
    assert_eq!(ra.len(), rn.len());
    let fmax = ra.iter().map(|r| norm(&r.1)).fold(0.0, f64::max);
    let df = ra.iter().zip(&rn).map(|(x, y)| norm(&[x.1[0] - y.1[0], x.1[1] - y.1[1], x.1[2] - y.1[2]])).fold(0.0, f64::max);
    eprintln!("dense pack, {name} against apgd: velocities within {dv:.2e} m/s (largest {vmax:.2e}), wall reactions within {df:.2e} N (largest {fmax:.2e})");
    assert!(vmax > 0.01, "the pack rides up with the floor");
    assert!(dv <= 1e-9, "velocities differ by {dv} m/s");
    assert!(fmax > 0.0 && df <= 1e-6 * fmax, "wall reactions differ by {df} N (largest {fmax} N)");
}

#[test]
fn newton_with_friction_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::Spheres::new("cd", 0.01, 1e-3, [0.0, 0.0, -G], 0.05)
        .material("friction = 0.3")
        .body([0.0, 0.0, 0.05])
        .ground()
        .with("[solver]\nmethod = \"newton\"\n")
        .toml()
        .replace("OUTDIR", &dir.path().join("out").display().to_string());
    let cfg = dir.path().join("scene.toml");
    std::fs::write(&cfg, text).unwrap();
    let o = common::mpirun(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let hits: Vec<&str> = stderr.lines().filter(|l| l.contains("solver.method: \"newton\" is frictionless and material[0] has friction")).collect();
    assert_eq!(hits.len(), 1, "one line on two ranks: {stderr}");
    assert!(hits[0].contains("scene.toml"), "the line names the file: {}", hits[0]);
}
