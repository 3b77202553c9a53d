//! Rolling and twisting resistance in `cd`: a sphere rolling on the floor
//! stops at (5/7) μ_r g, one on an incline holds below tan θ = μ_r and rolls
//! at (5/7) g (sin θ − μ_r cos θ) above, a sphere spinning on a fixed sphere
//! stops at (5/2) μ_tw g R / r² with R the pair's rolling radius (and the
//! frames hold the moment, μ_r R m g on the floor); the
//! default nonsmooth Gauss–Seidel and APGD alike, on 1 and 2 ranks; and a
//! thrown pour with rolling resistance whose contacts and velocities do not
//! depend on the rank count.
mod common;
use common::frames::{frames, Frame};
use std::path::{Path, PathBuf};

/// |g|; gravity is g (sin θ, 0, −cos θ) on the inclines.
const G: f64 = 10.0;
/// The rolling spheres' radius.
const R: f64 = 0.05;

fn run_text(np: usize, dir: &Path, name: &str, text: &str) -> PathBuf {
    common::run_config(np, dir, name, text).0
}

/// A sphere of radius [`R`] on the floor under gravity g (sin θ, 0, −cos θ)
/// (`tan` = tan θ), starting at `v` along x and rolling (ω_y = v / R), with
/// μ = 0.5 and the material keys `mat`; a frame every 10 steps of 1 ms to
/// `t_end`; `extra` lines in `[solver]`.
#[allow(clippy::too_many_arguments)]
fn rolling_sphere(np: usize, dir: &Path, name: &str, tan: f64, v: f64, mat: &str, t_end: f64, extra: &str) -> Vec<Frame> {
    let cos = 1.0 / (1.0 + tan * tan).sqrt();
    let text = common::Spheres::new("cd", t_end, 1e-3, [G * tan * cos, 0.0, -G * cos], R)
        .material(&format!("friction = 0.5\n{mat}"))
        .with(&format!("[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, {R:?}]\nvelocity = [{v:?}, 0.0, 0.0]\nangular_velocity = [0.0, {:?}, 0.0]\n", v / R))
        .ground()
        .with(&format!("[solver]\ntolerance = 1e-10\n{extra}\n"))
        .every(10)
        .toml();
    frames(&run_text(np, dir, name, &text))
}

/// dv_x/dt between frames `a` and `b`.
fn accel(a: &Frame, b: &Frame) -> f64 {
    (b.vel[0][0] - a.vel[0][0]) / (b.t - a.t)
}

/// |v − ω × r| at the floor contact of sphere 0 (x: v_x − ω_y R).
fn slip(f: &Frame) -> f64 {
    (f.vel[0][0] - R * f.omega[0][1]).abs()
}

#[test]
fn a_sphere_rolling_on_the_floor_stops_at_five_sevenths_mu_r_g_and_stays_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let mu_r = 0.1;
    let exact = -5.0 / 7.0 * mu_r * G;
    // From 0.2 m/s it stops at t = 0.28 s.
    // Both laws: the cone relaxation's rows take the same rolling bound.
    for (np, method, law) in [(1, "auto", "coulomb"), (2, "auto", "coulomb"), (1, "apgd", "coulomb"), (2, "apgd", "coulomb"), (2, "auto", "cone"), (2, "apgd", "cone")] {
        let extra = format!("method = \"{method}\"\nfriction_law = \"{law}\"");
        let fr = rolling_sphere(np, dir.path(), &format!("floor-{np}-{method}-{law}"), 0.0, 0.2, &format!("rolling_friction = {mu_r:?}"), 0.4, &extra);
        let method = format!("{method} ({law})");
        let at = |t: f64| fr.iter().find(|f| (f.t - t).abs() < 1e-9).unwrap();
        let a = accel(at(0.01), at(0.25));
        let s = fr.iter().filter(|f| f.t <= 0.25).map(slip).fold(0.0, f64::max);
        let rest = fr.iter().filter(|f| f.t >= 0.3).map(|f| f.vel[0][0].abs() + R * f.omega[0][1].abs()).fold(0.0, f64::max);
        // The frames' moment on the floor (body b): μ_r R m g about +y, the
        // sphere receiving the opposite against its rolling.
        let m = 1000.0 * 4.0 / 3.0 * std::f64::consts::PI * R.powi(3);
        let want = [0.0, mu_r * R * m * G, 0.0];
        let got = at(0.1).contacts[0].moment_rolling;
        assert!((0..3).all(|k| (got[k] - want[k]).abs() <= 1e-9 * want[1]), "{method}, {np} rank(s): moment_rolling {got:?}, want {want:?}");
        eprintln!("{method}, {np} rank(s): a = {a} (exact {exact}), slip ≤ {s:.2e} m/s, at rest ≤ {rest:.2e} m/s");
        assert!((a - exact).abs() <= 1e-6 * exact.abs(), "{method}, {np} rank(s): a = {a}, exact {exact}");
        assert!(s <= 1e-9, "{method}, {np} rank(s): it slips at {s} m/s");
        assert!(rest <= 1e-9, "{method}, {np} rank(s): it still moves at {rest} m/s after stopping");
    }
    // Without rolling resistance it rolls on at its speed.
    let fr = rolling_sphere(1, dir.path(), "free", 0.0, 0.2, "", 0.1, "");
    let a = accel(&fr[1], fr.last().unwrap());
    assert!(a.abs() <= 1e-9, "a free rolling sphere decelerates at {a} m/s²");
}

#[test]
fn on_an_incline_rolling_resistance_holds_a_sphere_below_mu_r_and_slows_its_rolling_above() {
    let dir = tempfile::tempdir().unwrap();
    let mu_r = 0.1;
    let mat = format!("rolling_friction = {mu_r:?}");
    for np in [1, 2] {
        // tan θ = 0.05 < μ_r: the sphere, released at rest, stays.
        let fr = rolling_sphere(np, dir.path(), &format!("hold-{np}"), 0.05, 0.0, &mat, 0.2, "");
        let v = fr.iter().map(|f| f.vel[0][0].abs() + R * f.omega[0][1].abs()).fold(0.0, f64::max);
        assert!(v <= 1e-9, "{np} rank(s): tan θ below μ_r, the sphere moves at {v} m/s");
        // tan θ = 0.75 > μ_r: it rolls, without slipping (μ = 0.5 holds it),
        // at (5/7) g (sin θ − μ_r cos θ).
        let fr = rolling_sphere(np, dir.path(), &format!("roll-{np}"), 0.75, 0.0, &mat, 0.2, "");
        let (a, exact) = (accel(&fr[1], fr.last().unwrap()), 5.0 / 7.0 * G * (0.6 - mu_r * 0.8));
        let s = fr.iter().map(slip).fold(0.0, f64::max);
        eprintln!("{np} rank(s): held at ≤ {v:.2e} m/s; rolling a = {a} (exact {exact}), slip ≤ {s:.2e} m/s");
        assert!((a - exact).abs() <= 1e-6 * exact, "{np} rank(s): a = {a}, exact {exact}");
        assert!(s <= 1e-9, "{np} rank(s): it slips at {s} m/s");
    }
}

#[test]
fn a_sphere_spinning_on_a_fixed_sphere_stops_at_five_halves_mu_tw_g_rolling_radius_over_r_squared() {
    let dir = tempfile::tempdir().unwrap();
    let (big, mu_tw, omega) = (0.1, 0.1, 20.0);
    // The rolling radius of the pair: R_a R_b / (R_a + R_b).
    let radius = big * R / (big + R);
    let exact = -2.5 * mu_tw * G * radius / (R * R);
    for (np, method) in [(1, "auto"), (2, "auto"), (2, "apgd")] {
        let text = common::Spheres::new("cd", 0.3, 1e-3, [0.0, 0.0, -G], R)
            .material(&format!("friction = 0.5\ntwisting_friction = {mu_tw:?}"))
            .with(&format!("[[shape]]\nname = \"big\"\nkind = \"sphere\"\nradius = {big:?}\n"))
            .with("[[body]]\nshape = \"big\"\nposition = [0.0, 0.0, 0.0]\nfixed = true\n")
            .with(&format!("[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, {:?}]\nangular_velocity = [0.0, 0.0, {omega:?}]\n", big + R))
            .with(&format!("[solver]\ntolerance = 1e-10\nmethod = \"{method}\"\n"))
            .every(10)
            .toml();
        let fr = frames(&run_text(np, dir.path(), &format!("twist-{np}-{method}"), &text));
        let (a, b) = (&fr[1], fr.last().unwrap());
        let alpha = (b.omega[1][2] - a.omega[1][2]) / (b.t - a.t);
        let drift = fr.iter().map(|f| f.vel[1].iter().map(|x| x.abs()).sum::<f64>() + f.omega[1][0].abs() + f.omega[1][1].abs()).fold(0.0, f64::max);
        eprintln!("{method}, {np} rank(s): dω/dt = {alpha} (exact {exact}), other motion ≤ {drift:.2e}");
        assert!((alpha - exact).abs() <= 1e-6 * exact.abs(), "{method}, {np} rank(s): dω/dt = {alpha}, exact {exact}");
        assert!(drift <= 1e-9, "{method}, {np} rank(s): the spinning sphere moves otherwise ({drift})");
    }
}

/// 4 × 3 × 3 touching spheres (r = 1 cm, μ = 0.5, μ_r = μ_tw = 0.1) on the
/// floor of a box, thrown down and sideways: the same contacts on 1, 2 and
/// 3 ranks at each of its first 10 steps and velocities within 1e-9 m/s,
/// and the same with APGD on 2 ranks; without the resistance the spheres
/// turn otherwise.
#[test]
fn a_pour_with_rolling_resistance_has_the_same_contacts_and_velocities_on_1_2_and_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let text = |method: &str| {
        common::Spheres::new("cd", 0.01, 1e-3, [0.0, 0.0, -9.81], 0.01)
            .material("friction = 0.5\nrolling_friction = 0.1\ntwisting_friction = 0.1")
            .lattice([-0.03, -0.02, 0.01], [4, 3, 3], 0.0, [0.3, 0.1, -0.2])
            .ground()
            .with("[[wall]]\npoint = [-0.04, 0.0, 0.0]\nnormal = [1.0, 0.0, 0.0]\n\n[[wall]]\npoint = [0.05, 0.0, 0.0]\nnormal = [-1.0, 0.0, 0.0]\n")
            .with(&format!("[solver]\ntolerance = 1e-11\nmax_iterations = 100000\nmethod = \"{method}\"\n"))
            .every(1)
            .toml()
    };
    let pairs = |f: &Frame| {
        let mut c: Vec<(u64, u64)> = f.contacts.iter().map(|c| (c.body_a, c.body_b)).collect();
        c.sort();
        c
    };
    let reference = frames(&run_text(1, dir.path(), "pour-1", &text("auto")));
    // The resistance acts: without it the spheres turn otherwise.
    let free = frames(&run_text(1, dir.path(), "pour-free", &text("auto").replace("rolling_friction = 0.1\ntwisting_friction = 0.1", "")));
    let (wa, wb) = (&reference.last().unwrap().omega, &free.last().unwrap().omega);
    let dw = wa.iter().zip(wb).map(|(a, b)| (0..3).map(|d| (a[d] - b[d]).abs()).fold(0.0, f64::max)).fold(0.0, f64::max);
    assert!(dw > 1e-3, "the pour turns the same without rolling resistance (|Δω| ≤ {dw} rad/s)");
    for (np, method) in [(2, "auto"), (3, "auto"), (2, "apgd")] {
        let run = frames(&run_text(np, dir.path(), &format!("pour-{np}-{method}"), &text(method)));
        assert_eq!(run.len(), reference.len());
        let mut dv = 0.0f64;
        for (a, b) in reference.iter().zip(&run) {
            assert_eq!(pairs(a), pairs(b), "t = {}: contacts differ ({method}, {np} ranks)", a.t);
            for k in 0..a.vel.len() {
                for d in 0..3 {
                    dv = dv.max((a.vel[k][d] - b.vel[k][d]).abs()).max(0.01 * (a.omega[k][d] - b.omega[k][d]).abs());
                }
            }
        }
        eprintln!("{method}, {np} ranks: velocities within {dv:.2e} m/s of 1 rank");
        assert!(dv <= 1e-9, "{method}, {np} ranks: velocities differ by {dv} m/s");
    }
}
