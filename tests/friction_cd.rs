//! Coulomb friction in `cd`: the analytic inclines (gravity tilted over a
//! horizontal floor) for a cube and a sphere, stick and slip, on 1 and 2
//! ranks; the exact law against the cone relaxation; the sliding block of
//! Gay Neto & Wriggers §3.3; a frictional pile that stays at rest; and a
//! frictional pour whose contacts and forces do not depend on the rank count;
//! the default nonsmooth Gauss–Seidel against APGD on the same problems.
mod common;
use common::frames::{frames, Frame};
use std::path::{Path, PathBuf};

const CONFIGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/configs");
const WALL: u64 = 1 << 63;
/// |g| of the inclines; gravity is g (sin θ, 0, −cos θ).
const G: f64 = 10.0;

fn norm(v: &[f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Writes `text` (its output dir `OUTDIR`) under `dir` and runs it on `np` ranks.
fn run_text(np: usize, dir: &Path, name: &str, text: &str) -> PathBuf {
    common::run_config(np, dir, name, text).0
}

/// The TOML of a 0.1 m cube (density 1500) face down on the floor z = 0
/// under gravity g (sin θ, 0, −cos θ), `tan` = tan θ, with μ_s, μ_d; a
/// frame every `every` steps; `extra` lines in `[solver]`.
fn cube_text_with(tan: f64, mu_s: f64, mu_d: f64, extra: &str, every: u32) -> String {
    let cos = 1.0 / (1.0 + tan * tan).sqrt();
    let g = [G * tan * cos, 0.0, -G * cos];
    format!(
        "[simulation]\nsolver = \"cd\"\nt_end = 0.2\ndt = 1e-3\ngravity = {g:?}\n\n\
         [[material]]\nname = \"block\"\ndensity = 1500.0\nfriction = {mu_s:?}\nfriction_dynamic = {mu_d:?}\n\n\
         [[shape]]\nname = \"cube\"\nkind = \"box\"\nsize = [0.1, 0.1, 0.1]\n\n\
         [[body]]\nshape = \"cube\"\nposition = [0.0, 0.0, 0.05]\n\n\
         [[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n\n\
         [contact]\ndistance = 0.001\nskin = 0.002\n\n\
         [solver]\ntolerance = 1e-10\n{extra}\n\n\
         [output]\ndir = \"OUTDIR\"\nevery = {every}\n"
    )
}

fn cube_text(tan: f64, mu_s: f64, mu_d: f64) -> String {
    cube_text_with(tan, mu_s, mu_d, "", 10)
}

/// Runs the cube of [`cube_text_with`] on `np` ranks (a frame every step
/// under the cone law, whose first step is looked at).
fn cube_incline(np: usize, dir: &Path, name: &str, tan: f64, mu_s: f64, mu_d: f64, extra: &str) -> Vec<Frame> {
    let every = if extra.contains("cone") { 1 } else { 10 };
    frames(&run_text(np, dir, name, &cube_text_with(tan, mu_s, mu_d, extra, every)))
}

/// A sphere of radius 0.05 on the floor under the same tilted gravity;
/// `extra` lines in `[solver]`.
fn sphere_incline(np: usize, dir: &Path, name: &str, tan: f64, mu: f64, extra: &str) -> Vec<Frame> {
    let cos = 1.0 / (1.0 + tan * tan).sqrt();
    let text = common::Spheres::new("cd", 0.2, 1e-3, [G * tan * cos, 0.0, -G * cos], 0.05)
        .material(&format!("friction = {mu:?}"))
        .body([0.0, 0.0, 0.05])
        .ground()
        .with(&format!("[solver]\ntolerance = 1e-10\n{extra}\n"))
        .every(10)
        .toml();
    frames(&run_text(np, dir, name, &text))
}

/// The mean acceleration (x) between the second and the last frame.
fn accel(fr: &[Frame]) -> f64 {
    let (a, b) = (&fr[1], fr.last().unwrap());
    (b.vel[0][0] - a.vel[0][0]) / (b.t - a.t)
}

#[test]
fn a_cube_on_an_incline_sticks_below_mu_s_and_slides_at_g_sin_minus_mu_d_cos_above() {
    let dir = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        // tan θ = 0.3 < μ_s = 0.5: it sticks.
        let fr = cube_incline(np, dir.path(), &format!("stick-{np}"), 0.3, 0.5, 0.4, "");
        let v = fr.iter().map(|f| norm(&f.vel[0]) + 0.05 * norm(&f.omega[0])).fold(0.0, f64::max);
        eprintln!("{np} rank(s): sticking cube, speed ≤ {v:.3e} m/s");
        assert!(v <= 1e-9, "{np} rank(s): the sticking cube moves at {v} m/s");
        // tan θ = 0.75 > μ_s: it slides at a = g (sin θ − μ_d cos θ) from rest.
        let fr = cube_incline(np, dir.path(), &format!("slide-{np}"), 0.75, 0.5, 0.4, "");
        let exact = G * (0.6 - 0.4 * 0.8);
        let a = accel(&fr);
        let last = fr.last().unwrap();
        eprintln!("{np} rank(s): sliding cube a = {a} (exact {exact}), z − z0 = {:.2e}, ω = {:?}", last.pos[0][2] - 0.05, last.omega[0]);
        assert!((a - exact).abs() <= 1e-6 * exact, "{np} rank(s): a = {a}, exact {exact}");
        assert!((last.vel[0][0] - exact * last.t).abs() <= 1e-6 * exact * last.t, "{np} rank(s): v = {}, exact {}", last.vel[0][0], exact * last.t);
        assert!((last.pos[0][2] - 0.05).abs() <= 1e-9, "{np} rank(s): the sliding cube leaves the floor: z = {}", last.pos[0][2]);
        // The four corners carry the weight's normal part, and friction
        // μ_d of it against the sliding.
        let (fn_, ft): (f64, f64) = last.contacts.iter().filter(|c| c.body_b >= WALL).fold((0.0, 0.0), |(n, t), c| (n + c.force_normal, t + c.force_tangent[0]));
        let w = 1.5 * G * 0.8;
        assert!((fn_ - w).abs() <= 1e-6 * w && (ft - 0.4 * w).abs() <= 1e-6 * w, "{np} rank(s): ground N = {fn_}, friction on the ground {ft}, m g cos θ = {w}");
    }
}

#[test]
fn a_sphere_on_an_incline_rolls_at_five_sevenths_g_sin_or_slips_below_two_sevenths_tan() {
    let dir = tempfile::tempdir().unwrap();
    let (sin, cos) = (0.6, 0.8);
    for np in [1, 2] {
        // μ = 0.3 ≥ (2/7) tan θ = 0.214: rolls without slip.
        let fr = sphere_incline(np, dir.path(), &format!("roll-{np}"), 0.75, 0.3, "");
        let exact = 5.0 / 7.0 * G * sin;
        let a = accel(&fr);
        let last = fr.last().unwrap();
        let slip = (last.vel[0][0] - 0.05 * last.omega[0][1]).abs();
        eprintln!("{np} rank(s): rolling sphere a = {a} (exact {exact}), |v − ω r| = {slip:.2e}");
        assert!((a - exact).abs() <= 1e-6 * exact, "{np} rank(s): rolling a = {a}, exact {exact}");
        assert!(slip <= 1e-6 * last.vel[0][0], "{np} rank(s): v = {}, ω r = {}", last.vel[0][0], 0.05 * last.omega[0][1]);
        // μ = 0.1 < 0.214: slips, a = g (sin θ − μ cos θ), ω̇ = 5 μ g cos θ / (2 r).
        let fr = sphere_incline(np, dir.path(), &format!("slip-{np}"), 0.75, 0.1, "");
        let exact = G * (sin - 0.1 * cos);
        let a = accel(&fr);
        let (f1, last) = (&fr[1], fr.last().unwrap());
        let alpha = (last.omega[0][1] - f1.omega[0][1]) / (last.t - f1.t);
        let alpha_exact = 5.0 * 0.1 * G * cos / (2.0 * 0.05);
        eprintln!("{np} rank(s): slipping sphere a = {a} (exact {exact}), ω̇ = {alpha} (exact {alpha_exact})");
        assert!((a - exact).abs() <= 1e-6 * exact, "{np} rank(s): slipping a = {a}, exact {exact}");
        assert!((alpha - alpha_exact).abs() <= 1e-6 * alpha_exact, "{np} rank(s): ω̇ = {alpha}, exact {alpha_exact}");
    }
}

/// The cone relaxation opens a sliding contact at u_n = μ|u_t|: the cube
/// that the exact law keeps on the floor lifts off under it.
#[test]
fn under_the_cone_relaxation_a_sliding_cube_lifts_off_and_under_coulomb_it_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let exact = cube_incline(1, dir.path(), "coulomb", 0.75, 0.4, 0.4, "friction_law = \"coulomb\"");
    let cone = cube_incline(1, dir.path(), "cone", 0.75, 0.4, 0.4, "friction_law = \"cone\"");
    let rise = |fr: &[Frame]| fr.iter().map(|f| f.pos[0][2] - 0.05).fold(0.0, f64::max);
    let (r_exact, r_cone) = (rise(&exact), rise(&cone));
    // In its first step the cone's cube slides and its corners open at
    // u_n = μ|u_t|; then it hops along, gravity bringing it back.
    eprintln!("highest rise: coulomb {r_exact:.3e} m, cone {r_cone:.3e} m; cone at t = {}: v = {:?}", cone[1].t, cone[1].vel[0]);
    assert!(r_exact <= 1e-9, "the exact law lifts the sliding cube by {r_exact} m");
    assert!(r_cone >= 1e-4, "the cone relaxation does not lift the sliding cube: {r_cone} m");
    let ratio = cone[1].vel[0][2] / cone[1].vel[0][0];
    assert!((ratio - 0.4).abs() <= 1e-6, "after its first step the cone's cube rises at {ratio} × its sliding speed, not μ = 0.4");
}

/// configs/sliding-block.toml under cd (Gay Neto & Wriggers §3.3: a 1.5 kg
/// cube pushed at its bottom face by F = 16 N · min(t/0.8 s, 1), μ_s = 0.8,
/// μ_d = 0.6): the ground friction equals the push while the block sticks,
/// then μ_d m g while it slides, as under the DEM (tests/polyhedra.rs).
#[test]
fn the_sliding_block_under_cd_sticks_to_mu_s_m_g_then_slides_at_mu_d_m_g() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let cfg = format!("{CONFIGS}/sliding-block.toml");
    let dir = format!("output.dir=\"{}\"", out.display());
    common::mpirun_ok(
        1,
        &common::stiffgrain(),
        &["run", &cfg, "--set", &dir, "--set", "simulation.solver=\"cd\"", "--set", "output.every=5", "--set", "solver.tolerance=1e-10"],
    );
    let (m, g, mu_s, mu_d) = (1.5, 9.81, 0.8, 0.6);
    let w = m * g;
    let push = |t: f64| 16.0 * (t / 0.8).min(1.0);
    let ts = mu_s * w / 20.0;
    let fr = frames(&out);
    let (mut stick, mut slide, mut peak) = (0.0f64, 0.0f64, 0.0f64);
    for f in fr.iter().filter(|f| f.t > 0.01) {
        let ft: f64 = f.contacts.iter().filter(|c| c.body_b >= WALL).map(|c| c.force_tangent[0]).sum();
        peak = peak.max(ft);
        if f.t < ts - 0.01 {
            stick = stick.max((ft - push(f.t)).abs());
            assert!(norm(&f.vel[0]) < 1e-9, "t = {}: the sticking block moves at {:?}", f.t, f.vel[0]);
        }
        if f.t > ts + 0.01 {
            slide = slide.max((ft - mu_d * w).abs());
        }
    }
    let last = fr.last().unwrap();
    let impulse = |t: f64| if t <= 0.8 { 10.0 * t * t } else { 6.4 + 16.0 * (t - 0.8) };
    // Slip starts in the first step with F > μ_s m g (Δt = 1 ms).
    let v = (impulse(last.t) - impulse(ts)) / m - mu_d * g * (last.t - ts);
    eprintln!("sliding block under cd: |Rx − F| ≤ {stick:.2e} N in stick, peak {peak} (μ_s m g = {}), |Rx − μ_d m g| ≤ {slide:.2e} N; v({}) = {} vs {v}", mu_s * w, last.t, last.vel[0][0]);
    assert!(stick <= 1e-6 * w, "sticking: friction off the push by {stick} N");
    assert!((peak - mu_s * w).abs() <= 0.03 * w, "the static plateau is {peak} N, μ_s m g = {} N", mu_s * w);
    assert!(slide <= 1e-6 * w, "sliding: friction off μ_d m g by {slide} N");
    assert!((last.vel[0][0] - v).abs() <= 0.005 * v, "final velocity {} vs {v}", last.vel[0][0]);
}

/// configs/pile-of-blocks.toml under cd with gravity tilted by tan θ = 0.04
/// (μ = 0.5; the 10 m tower's centre of mass moves 0.2 m sideways, inside
/// its 1 m base): the ten blocks land, come to rest, and stay there: no
/// block creeps over the last 100 steps, on 1 and 2 ranks.
#[test]
fn a_frictional_pile_of_blocks_on_a_slope_comes_to_rest_and_does_not_creep() {
    let tan = 0.04;
    let cos = 1.0 / (1.0f64 + tan * tan).sqrt();
    let gravity = format!("simulation.gravity=[{:?}, 0.0, {:?}]", 9.81 * tan * cos, -9.81 * cos);
    for np in [1, 2] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let cfg = format!("{CONFIGS}/pile-of-blocks.toml");
        let dir = format!("output.dir=\"{}\"", out.display());
        let sets = ["simulation.solver=\"cd\"", "simulation.t_end=1.5", "simulation.dt=5e-3", "output.every=50", "solver.tolerance=1e-10", &gravity, &dir];
        let mut args = vec!["run", cfg.as_str()];
        for s in &sets {
            args.extend(["--set", s]);
        }
        common::mpirun_ok(np, &common::stiffgrain(), &args);
        let fr = frames(&out);
        let (a, b) = (&fr[fr.len() - 3], fr.last().unwrap());
        let moved = a.pos.iter().zip(&b.pos).map(|(p, q)| norm(&[p[0] - q[0], p[1] - q[1], p[2] - q[2]])).fold(0.0, f64::max);
        let v = b.vel.iter().map(norm).fold(0.0, f64::max);
        eprintln!("{np} rank(s): pile on a slope, the blocks moved ≤ {moved:.2e} m from t = {} to {}, |v| ≤ {v:.2e}", a.t, b.t);
        assert!(b.t - a.t >= 0.5 - 1e-9, "the last 100 steps are not in the frames");
        assert!(moved <= 1e-9, "{np} rank(s): the pile creeps by {moved} m over 100 steps");
        // The ground carries the whole weight, normal and tangential parts.
        let ground: f64 = b.contacts.iter().filter(|c| c.body_b >= WALL).map(|c| c.force_normal).sum();
        let friction: f64 = b.contacts.iter().filter(|c| c.body_b >= WALL).map(|c| c.force_tangent[0]).sum();
        let w = 10.0 * 2000.0 * 9.81 * cos;
        assert!((ground - w).abs() <= 1e-6 * w, "ground reaction {ground} N, weight's normal part {w} N");
        assert!((friction - tan * w).abs() <= 1e-6 * w, "ground friction {friction} N, weight's slope part {} N", tan * w);
    }
}

/// 4 × 3 × `layers` touching spheres (r = 1 cm, μ_s = μ_d = 0.5) on the
/// floor, thrown down and sideways at (0.3, 0.1, −0.2) m/s: 10 steps of cd.
fn thrown_lattice(layers: u32) -> common::Spheres {
    common::Spheres::new("cd", 0.01, 1e-3, [0.0, 0.0, -9.81], 0.01)
        .material("friction = 0.5")
        .lattice([-0.03, -0.02, 0.01], [4, 3, layers], 0.0, [0.3, 0.1, -0.2])
        .ground()
}

/// A frictional pour (μ_s = μ_d = 0.5, 48 spheres in touch thrown down and
/// sideways onto the floor of a box, so that they land and slide in the
/// first step): the same contacts on 1, 2 and 3 ranks at each of its first
/// 10 steps, velocities within 1e-9 m/s and forces within 1e-6 of the
/// largest (its forces are indeterminate: one of many, picked by the
/// solver's path, which the rank count changes in the last bits of its
/// sums). With μ_d < μ_s a contact at the margin of slip may switch to μ_d
/// on one rank count and not on another: measured 4e-9 m/s here.
#[test]
fn a_frictional_pour_has_the_same_contacts_and_forces_on_1_2_and_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let text = thrown_lattice(4)
        .with("[[wall]]\npoint = [-0.04, 0.0, 0.0]\nnormal = [1.0, 0.0, 0.0]\n\n[[wall]]\npoint = [0.05, 0.0, 0.0]\nnormal = [-1.0, 0.0, 0.0]\n\n[solver]\ntolerance = 1e-11\n")
        .every(1)
        .toml();
    let key = |f: &Frame| {
        let mut c: Vec<(u64, u64, [f64; 3], f64, [f64; 3])> = f.contacts.iter().map(|c| (c.body_a, c.body_b, c.point, c.force_normal, c.force_tangent)).collect();
        c.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(a.2.partial_cmp(&b.2).unwrap()));
        c
    };
    let runs: Vec<Vec<Frame>> = [1, 2, 3].iter().map(|&np| frames(&run_text(np, dir.path(), &format!("pour-{np}"), &text))).collect();
    let fmax = runs[0].iter().flat_map(|f| f.contacts.iter().map(|c| c.force_normal)).fold(0.0, f64::max);
    assert!(fmax > 0.0, "no contact force in the pour");
    for (np, run) in [2, 3].iter().zip(&runs[1..]) {
        assert_eq!(run.len(), runs[0].len());
        let (mut df, mut dv) = (0.0f64, 0.0f64);
        for (a, b) in runs[0].iter().zip(run) {
            let dvf = a.vel.iter().zip(&b.vel).map(|(u, v)| norm(&[u[0] - v[0], u[1] - v[1], u[2] - v[2]])).fold(0.0, f64::max);
            if std::env::var("POUR_TRACE").is_ok() {
                eprintln!("t = {:.3}: {} contacts, |Δv| ≤ {dvf:.2e}", a.t, a.contacts.len());
            }
            dv = dv.max(dvf);
            let (ka, kb) = (key(a), key(b));
            assert_eq!(ka.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), kb.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), "t = {}: contacts differ on {np} ranks", a.t);
            for (x, y) in ka.iter().zip(&kb) {
                df = df.max((x.3 - y.3).abs()).max(norm(&[x.4[0] - y.4[0], x.4[1] - y.4[1], x.4[2] - y.4[2]]));
            }
        }
        eprintln!("pour on {np} ranks: velocities within {dv:.2e} m/s, forces within {df:.2e} N of 1 rank (largest {fmax:.3e} N)");
        assert!(dv <= 1e-9, "{np} ranks: velocities differ by {dv} m/s");
        assert!(df <= 1e-6 * fmax, "{np} ranks: forces differ by {df} N (largest {fmax} N)");
    }
}

/// APGD (`method = "apgd"`) solves the same exact law as the default
/// nonsmooth Gauss–Seidel: the cube sticks below μ_s and slides at
/// g (sin θ − μ_d cos θ) above, the sphere rolls at 5/7 g sin θ, on 1 and 2
/// ranks; and the thrown pour's contacts and velocities (unique, unlike its
/// forces) are the default's to 1e-9 m/s on 1 and 2 ranks, as are those of
/// the sweeps without Anderson acceleration (`anderson = 0`).
#[test]
fn apgd_gives_the_analytic_inclines_and_apgd_and_plain_sweeps_the_defaults_pour() {
    let dir = tempfile::tempdir().unwrap();
    let apgd = "method = \"apgd\"";
    for np in [1, 2] {
        let fr = cube_incline(np, dir.path(), &format!("apgd-stick-{np}"), 0.3, 0.5, 0.4, apgd);
        let v = fr.iter().map(|f| norm(&f.vel[0]) + 0.05 * norm(&f.omega[0])).fold(0.0, f64::max);
        assert!(v <= 1e-9, "apgd, {np} rank(s): the sticking cube moves at {v} m/s");
        let fr = cube_incline(np, dir.path(), &format!("apgd-slide-{np}"), 0.75, 0.5, 0.4, apgd);
        let (a, exact) = (accel(&fr), G * (0.6 - 0.4 * 0.8));
        eprintln!("apgd, {np} rank(s): sticking cube speed ≤ {v:.2e} m/s, sliding cube a = {a} (exact {exact})");
        assert!((a - exact).abs() <= 1e-6 * exact, "apgd, {np} rank(s): sliding a = {a}, exact {exact}");
        let fr = sphere_incline(np, dir.path(), &format!("apgd-roll-{np}"), 0.75, 0.3, apgd);
        let (a, exact) = (accel(&fr), 5.0 / 7.0 * G * 0.6);
        let last = fr.last().unwrap();
        let slip = (last.vel[0][0] - 0.05 * last.omega[0][1]).abs();
        eprintln!("apgd, {np} rank(s): rolling sphere a = {a} (exact {exact}), |v − ω r| = {slip:.2e}");
        assert!((a - exact).abs() <= 1e-6 * exact && slip <= 1e-6 * last.vel[0][0], "apgd, {np} rank(s): rolling a = {a} (exact {exact}), slip {slip}");
    }
    let text = |extra: &str| thrown_lattice(4).with(&format!("[solver]\ntolerance = 1e-11\nmax_iterations = 100000\n{extra}\n")).every(1).toml();
    let default = frames(&run_text(1, dir.path(), "pour-default", &text("")));
    // APGD, and the default's sweeps without Anderson acceleration.
    for (name, np, extra) in [("apgd", 1, apgd), ("apgd", 2, apgd), ("plain sweeps", 1, "anderson = 0"), ("plain sweeps", 2, "anderson = 0")] {
        let run = frames(&run_text(np, dir.path(), &format!("pour-{}-{np}", name.replace(' ', "-")), &text(extra)));
        assert_eq!(run.len(), default.len());
        let mut dv = 0.0f64;
        for (a, b) in default.iter().zip(&run) {
            let pairs = |f: &Frame| {
                let mut p: Vec<(u64, u64)> = f.contacts.iter().map(|c| (c.body_a, c.body_b)).collect();
                p.sort();
                p
            };
            assert_eq!(pairs(a), pairs(b), "t = {}: {name} on {np} rank(s) has other contacts than the default", a.t);
            dv = a.vel.iter().zip(&b.vel).map(|(u, v)| norm(&[u[0] - v[0], u[1] - v[1], u[2] - v[2]])).fold(dv, f64::max);
        }
        eprintln!("pour, {name} on {np} rank(s): velocities within {dv:.2e} m/s of the default");
        assert!(dv <= 1e-9, "{name} on {np} rank(s): velocities differ from the default's by {dv} m/s");
    }
}

/// The tangential rows under the other settings: a sphere in a 2D scene
/// (x–y plane, floor y = 0) rolls at a = 5/7 g sin θ with ω_z r = −v; a
/// cube on a floor moving at V = 0.3 m/s in its own plane (a conveyor) is
/// dragged at a = μ_d g until it moves with the floor, then sticks.
#[test]
fn a_sphere_rolls_in_2d_and_a_conveyor_floor_drags_a_cube_up_to_its_speed() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::Spheres::new("cd", 0.2, 1e-3, [6.0, -8.0, 0.0], 0.05)
        .material("friction = 0.3")
        .body([0.0, 0.05, 0.0])
        .with("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n\n[solver]\ntolerance = 1e-10\n")
        .every(10)
        .toml()
        .replacen("[simulation]\n", "[simulation]\ndim = 2\n", 1);
    let fr = frames(&run_text(2, dir.path(), "roll-2d", &text));
    let (a, last) = (accel(&fr), fr.last().unwrap());
    let exact = 5.0 / 7.0 * 6.0;
    eprintln!("2D rolling sphere: a = {a} (exact {exact}), v + ω_z r = {:.2e}", last.vel[0][0] + 0.05 * last.omega[0][2]);
    assert!((a - exact).abs() <= 1e-6 * exact, "2D rolling a = {a}, exact {exact}");
    assert!((last.vel[0][0] + 0.05 * last.omega[0][2]).abs() <= 1e-6 * last.vel[0][0], "2D: v = {}, ω_z = {}", last.vel[0][0], last.omega[0][2]);
    assert!(last.vel[0][2].abs() == 0.0 && last.pos[0][2] == 0.0, "2D: the sphere left its plane");

    let mut text = String::new();
    for line in cube_text(0.0, 0.5, 0.4).lines() {
        text += line;
        text += "\n";
        if line.starts_with("normal = [0.0, 0.0, 1.0]") {
            text += "velocity = [0.3, 0.0, 0.0]\n";
        }
    }
    let fr = frames(&run_text(1, dir.path(), "conveyor", &text));
    let (g, mu_d, v_floor) = (10.0, 0.4, 0.3);
    let t_catch = v_floor / (mu_d * g);
    let mut worst = 0.0f64;
    for f in &fr {
        let v = (mu_d * g * f.t).min(v_floor);
        worst = worst.max((f.vel[0][0] - v).abs());
    }
    eprintln!("conveyor: |v − min(μ_d g t, V)| ≤ {worst:.2e} m/s (caught up at t = {t_catch} s)");
    assert!(worst <= 1e-6 * v_floor, "the cube on the conveyor is off μ_d g t / V by {worst} m/s");
}

/// Every step's residual is in summary.json, within the threshold when the
/// solve converged; a step that stops at `max_iterations` says so in one
/// warning line with its residual, and the run goes on.
#[test]
fn each_step_reports_its_residual_and_a_step_short_of_its_tolerance_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let text = thrown_lattice(2)
        .with("[solver]\ntolerance = 1e-9\n")
        .toml();
    let (out, _) = common::run_config(1, dir.path(), "ok", &text);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let res: Vec<f64> = s["solver_residual_per_step"].as_array().unwrap().iter().map(|r| r.as_f64().unwrap()).collect();
    assert_eq!(res.len(), 10, "a residual per step: {res:?}");
    assert_eq!(s["cd_steps_not_converged"], 0, "{s}");
    let short = text.replace("tolerance = 1e-9", "tolerance = 1e-9\nmax_iterations = 2");
    let out = dir.path().join("out-short");
    let cfg = dir.path().join("short.toml");
    std::fs::write(&cfg, short.replace("OUTDIR", &out.display().to_string())).unwrap();
    // 100 steps, more than 10 of them short: the first 10 are warned, then
    // every 100th.
    let o = common::mpirun(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--set", "simulation.t_end=0.1"]);
    assert!(o.status.success(), "a step short of its tolerance stops the run");
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    let warned: Vec<&str> = log.lines().filter(|l| l.contains("cd (coulomb friction, pgs) stopped after 2 iterations at residual")).collect();
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let missed = s["cd_steps_not_converged"].as_u64().unwrap();
    let expected = (1..=missed).filter(|n| *n <= 10 || n % 100 == 0).count();
    assert!(missed > 10 && warned.len() == expected, "{missed} steps short of the tolerance, {} warning lines:\n{log}", warned.len());
    assert!(warned[9].contains("warned every 100th"), "the 10th warning says what follows: {}", warned[9]);
    assert!(
        warned[0].contains("solver.tolerance = 1e-4") && warned[0].contains("simulation.dt") && !warned[1].contains("solver.tolerance"),
        "the first warning, only, points at the tolerance and the step: {}",
        warned[0]
    );
    let first: f64 = warned[0].split("at residual ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let step: usize = warned[0].split("step ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
    let res = s["solver_residual_per_step"][step - 1].as_f64().unwrap();
    assert_eq!(first, res, "the warning's residual is the step's residual in summary.json");
}

/// `dt_control = "iterations"` (a low target, so that Δt changes from step
/// to step): the analytic inclines hold over steps of varying length, v =
/// a t at the frames' own times, and the run ends at t_end exactly, on 1
/// and 2 ranks.
#[test]
fn under_iteration_step_control_the_inclines_keep_their_analytic_motion() {
    let dir = tempfile::tempdir().unwrap();
    let control = "dt_control = \"iterations\"\ntarget_iterations = 1\ndt_min = 1.25e-4";
    let summary = |out: &Path| -> serde_json::Value { serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap() };
    for np in [1, 2] {
        let out = run_text(np, dir.path(), &format!("ctl-slide-{np}"), &cube_text_with(0.75, 0.5, 0.4, control, 10));
        let s = summary(&out);
        let dt: Vec<f64> = s["dt_taken"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        eprintln!("{np} rank(s), step control: {} steps, dt min / mean / max {dt:?}, t = {}", s["steps"], s["time"]);
        // More than t_end / dt steps: some were shorter than dt.
        assert!(s["steps"].as_u64().unwrap() > 200 && dt[0] >= 1.25e-4 && dt[2] <= 1e-3, "{np} rank(s): {} steps, Δt taken {dt:?}, not varied within [dt_min, dt]", s["steps"]);
        assert_eq!(s["time"].as_f64().unwrap(), 0.2, "{np} rank(s): the run ends at t_end");
        let fr = frames(&out);
        let exact = G * (0.6 - 0.4 * 0.8);
        let last = fr.last().unwrap();
        let (a, v) = (accel(&fr), last.vel[0][0]);
        assert!((a - exact).abs() <= 1e-6 * exact && (v - exact * last.t).abs() <= 1e-6 * exact * last.t, "{np} rank(s): sliding a = {a}, v = {v} at t = {}, exact a = {exact}", last.t);
        let fr = sphere_incline(np, dir.path(), &format!("ctl-roll-{np}"), 0.75, 0.3, control);
        let (a, exact) = (accel(&fr), 5.0 / 7.0 * G * 0.6);
        let last = fr.last().unwrap();
        let slip = (last.vel[0][0] - 0.05 * last.omega[0][1]).abs();
        eprintln!("{np} rank(s), step control: rolling sphere a = {a} (exact {exact}), |v − ω r| = {slip:.2e}");
        assert!((a - exact).abs() <= 1e-6 * exact && slip <= 1e-6 * last.vel[0][0], "{np} rank(s): rolling a = {a} (exact {exact}), slip {slip}");
    }
}
