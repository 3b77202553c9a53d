//! solver = "compatible-cd": the beam on three supports (uniform and stiff
//! middle, whatever CD method ran first; paper §8.1), the off-centre beam
//! with Hookean and Hertzian contacts against the rigid-platform solution,
//! compatibility itself (one displacement field explains the forces) on
//! small pyramids, and the same forces on 1, 2 and 3 ranks — each with the
//! dual methods `newton` and `apgd`; then the two methods and
//! the paper's augmented Lagrangian against each other on the n = 8
//! pyramid, rank independence of the Newton iterations, and the singular
//! cases (a load no contact can take, Hertz from zero approach).
mod common;
use nalgebra::{DMatrix, DVector};
use std::path::{Path, PathBuf};

fn cfg_text(name: &str) -> String {
    std::fs::read_to_string(format!("{}/configs/{name}.toml", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Writes `text` with its output dir redirected into `dir`; runs it on `np` ranks.
fn run(dir: &Path, name: &str, text: &str, np: usize) -> PathBuf {
    let out = dir.join(name);
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for l in lines.iter_mut() {
        if l.starts_with("dir = ") {
            *l = format!("dir = \"{}\"", out.display());
        }
    }
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, lines.join("\n")).unwrap();
    common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    out
}

struct Contact {
    a: u64,
    b: u64,
    point: [f64; 3],
    normal: [f64; 3],
    f_cd: f64,
    f_compat: f64,
}

struct Frame {
    /// (id, fixed, position) sorted by id.
    bodies: Vec<(u64, bool, [f64; 3])>,
    contacts: Vec<Contact>,
}

fn last_frame(out: &Path) -> Frame {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let g = f.group("frames").unwrap();
    let mut names = g.member_names().unwrap();
    names.sort_by_key(|n| n.parse::<u64>().unwrap_or(0));
    let fr = g.group(names.last().unwrap()).unwrap();
    let bg = fr.group("bodies").unwrap();
    let id = bg.dataset("id").unwrap().read_raw::<u64>().unwrap();
    let fixed = bg.dataset("fixed").unwrap().read_raw::<u8>().unwrap();
    let pos = bg.dataset("position").unwrap().read_raw::<f64>().unwrap();
    let bodies = (0..id.len()).map(|i| (id[i], fixed[i] != 0, [pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]])).collect();
    let c = fr.group("contacts").unwrap();
    let a = c.dataset("body_a").unwrap().read_raw::<u64>().unwrap();
    let b = c.dataset("body_b").unwrap().read_raw::<u64>().unwrap();
    let p = c.dataset("point").unwrap().read_raw::<f64>().unwrap();
    let n = c.dataset("normal").unwrap().read_raw::<f64>().unwrap();
    let fcd = c.dataset("force_normal").unwrap().read_raw::<f64>().unwrap();
    let fc = c.dataset("force_compatible").unwrap().read_raw::<f64>().unwrap();
    let contacts = (0..a.len())
        .map(|i| Contact {
            a: a[i],
            b: b[i],
            point: [p[3 * i], p[3 * i + 1], p[3 * i + 2]],
            normal: [n[3 * i], n[3 * i + 1], n[3 * i + 2]],
            f_cd: fcd[i],
            f_compat: fc[i],
        })
        .collect();
    Frame { bodies, contacts }
}

/// Loads carried by the supports (ids 1, 2, 3) from summary.json.
fn supports(out: &Path) -> Vec<f64> {
    let r = common::reactions(out);
    assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 3], "{r:?}");
    r.iter().map(|x| -x.1[1]).collect()
}

fn with_method(text: &str, method: &str, order: &str) -> String {
    text.replace("method = \"apgd\"", &format!("method = \"{method}\"\npgs_order = \"{order}\""))
}

/// The compatibility methods every scene test runs with.
const COMPAT_METHODS: [&str; 2] = ["newton", "apgd"];

/// `text` with `[compatibility] method = compat`.
fn with_compat(text: &str, compat: &str) -> String {
    assert!(text.contains("[compatibility]\n"));
    text.replace("[compatibility]\n", &format!("[compatibility]\nmethod = \"{compat}\"\n"))
}

#[test]
fn beam_uniform_gives_thirds_whatever_the_cd_method() {
    let dir = tempfile::tempdir().unwrap();
    let mut cd_forces = Vec::new();
    for compat in COMPAT_METHODS {
    let text = cfg_text("beam-uniform-compat");
    for (name, method, order) in [("apgd", "apgd", "forward"), ("fwd", "pgs", "forward"), ("rev", "pgs", "reverse")] {
        let name = &format!("{compat}-{name}");
        let out = run(dir.path(), name, &with_compat(&with_method(&text, method, order), compat), 1);
        let f = supports(&out);
        for &x in &f {
            assert!((x - 10.0 / 3.0).abs() < 1e-6, "{name}: compatible reactions {f:?}");
        }
        let fr = last_frame(&out);
        assert_eq!(fr.contacts.len(), 3);
        for c in &fr.contacts {
            assert!((c.f_compat - 10.0 / 3.0).abs() < 1e-6, "{name}: force_compatible {}", c.f_compat);
        }
        let mut cd: Vec<f64> = fr.contacts.iter().map(|c| c.f_cd).collect();
        cd.sort_by(f64::total_cmp);
        cd_forces.push(cd);
    }
    }
    // The CD forces themselves differ between PGS orders (the test is not trivial).
    let differ = cd_forces[1].iter().zip(&cd_forces[2]).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(differ > 0.5, "PGS orders gave the same CD forces: {cd_forces:?}");
}

#[test]
fn beam_stiff_middle_gives_2_6_2() {
    let dir = tempfile::tempdir().unwrap();
    for compat in COMPAT_METHODS {
    let text = cfg_text("beam-stiff-middle");
    for (name, method, order) in [("apgd", "apgd", "forward"), ("rev", "pgs", "reverse")] {
        let name = &format!("{compat}-{name}");
        let out = run(dir.path(), name, &with_compat(&with_method(&text, method, order), compat), 1);
        // Supports 1, 2, 3 at x = 0, L, L/2.
        let f = supports(&out);
        for (x, want) in f.iter().zip([2.0, 2.0, 6.0]) {
            assert!((x - want).abs() < 1e-6, "{name}: {f:?} vs [2, 2, 6]");
        }
    }
    }
}

/// The uniform beam with its middle support lowered by 0.1 R, within the
/// contact distance: that contact is detected but never closes, so the
/// beam rests on the end supports, 5 and 5 (statics), and the open contact
/// carries nothing. As a zero-gap truss bar it would take a third.
#[test]
fn a_contact_cd_leaves_open_carries_no_compatible_force() {
    let dir = tempfile::tempdir().unwrap();
    let text = cfg_text("beam-uniform-compat").replace("position = [0.5, 0.0, 0.0]", "position = [0.5, -0.005, 0.0]") + "\n[contact]\ndistance = 0.02\n";
    assert!(text.contains("-0.005"));
    for compat in ["newton", "apgd", "augmented-lagrangian"] {
        let out = run(dir.path(), compat, &with_compat(&text, compat), 1);
        let f = supports(&out);
        for (x, want) in f.iter().zip([5.0, 5.0, 0.0]) {
            assert!((x - want).abs() < 1e-6, "{compat}: {f:?} vs [5, 5, 0]");
        }
        // The middle contact is in the list (the test is not trivial).
        let fr = last_frame(&out);
        assert_eq!(fr.contacts.len(), 3, "{compat}: the lowered support's contact is not detected");
    }
}

/// The beam with its centre of mass at x = 0.6 (platform 1.3 long, weight
/// 10) on supports at x = 0, 0.5, 1, uniform k̃. The platform is rigid: the
/// approach at support i is δ_i = A + B x_i, f_i = δ_i^{p−1} (k̃ = 1 and
/// the scale in A, B), with Σ f_i = 10 and Σ f_i x_i = 10 · 0.6.
fn off_centre(p: f64) -> [f64; 3] {
    let xs = [0.0, 0.5, 1.0];
    let e = p - 1.0;
    let (mut a, mut b) = (1.0f64, 0.5f64);
    for _ in 0..100 {
        let (mut r0, mut r1, mut j00, mut j01, mut j11) = (-10.0, -6.0, 0.0, 0.0, 0.0);
        for &x in &xs {
            let d: f64 = a + b * x;
            let f = d.powf(e);
            let df = e * d.powf(e - 1.0);
            r0 += f;
            r1 += f * x;
            j00 += df;
            j01 += df * x;
            j11 += df * x * x;
        }
        let det = j00 * j11 - j01 * j01;
        a -= (j11 * r0 - j01 * r1) / det;
        b -= (-j01 * r0 + j00 * r1) / det;
    }
    xs.map(|x| (a + b * x).powf(e))
}

fn off_centre_config(law: &str) -> String {
    cfg_text("beam-uniform-compat")
        .replace("size = [1.1, 0.05, 0.1]", "size = [1.3, 0.05, 0.1]")
        .replace("density = 181.818181818181818", "density = 153.846153846153846")
        .replace("position = [0.5, 0.0755, 0.0]", "position = [0.6, 0.0755, 0.0]")
        .replace("law = \"hooke\"", &format!("law = \"{law}\""))
}

#[test]
fn off_centre_beam_hooke_and_hertz_match_the_rigid_platform_solution() {
    let dir = tempfile::tempdir().unwrap();
    let hooke = off_centre(2.0);
    // Linear: 7/3, 10/3, 13/3.
    for (x, want) in hooke.iter().zip([7.0 / 3.0, 10.0 / 3.0, 13.0 / 3.0]) {
        assert!((x - want).abs() < 1e-12);
    }
    let hertz = off_centre(2.5);
    assert!((hertz[0] - hooke[0]).abs() > 1e-3, "Hertz should differ from Hooke: {hertz:?}");
    for (law, want) in [("hooke", hooke), ("hertz", hertz)] {
        for compat in COMPAT_METHODS {
        for (name, method, order) in [("apgd", "apgd", "forward"), ("rev", "pgs", "reverse")] {
            let name = &format!("{compat}-{name}");
            let out = run(dir.path(), &format!("{law}-{name}"), &with_compat(&with_method(&off_centre_config(law), method, order), compat), 1);
            let f = supports(&out);
            // Supports 1, 2, 3 at x = 0, 1, 0.5.
            for (x, w) in f.iter().zip([want[0], want[2], want[1]]) {
                assert!((x - w).abs() < 1e-6, "{law}/{name}: {f:?} vs {want:?} (x = 0, 1, 0.5)");
            }
        }
        }
    }
}

/// Fits one displacement field u (translations of the free bodies; spheres
/// have r × n = 0 so rotations do not enter) to f_i = k̃_i (−B_i u) over
/// the contacts carrying force, −B_i u = n_i·(u_a − u_b). Returns
/// (relative residual of the fit, largest overlap −B_i u / max over the
/// unloaded contacts relative to the largest loaded one).
fn fit_displacements(fr: &Frame, k: &dyn Fn(u64, u64) -> f64, force: &dyn Fn(&Contact) -> f64) -> (f64, f64) {
    let free: Vec<u64> = fr.bodies.iter().filter(|b| !b.1).map(|b| b.0).collect();
    let col = |id: u64| free.iter().position(|&x| x == id);
    let fmax = fr.contacts.iter().map(force).fold(0.0, f64::max);
    assert!(fmax > 0.0);
    let row = |c: &Contact| -> Vec<(usize, f64)> {
        let mut r = Vec::new();
        for (id, sign) in [(c.a, 1.0), (c.b, -1.0)] {
            if let Some(j) = col(id) {
                for d in 0..3 {
                    r.push((3 * j + d, sign * c.normal[d]));
                }
            }
        }
        r
    };
    let loaded: Vec<&Contact> = fr.contacts.iter().filter(|c| force(c) > 1e-9 * fmax).collect();
    let mut a = DMatrix::<f64>::zeros(loaded.len(), 3 * free.len());
    let mut rhs = DVector::<f64>::zeros(loaded.len());
    for (i, c) in loaded.iter().enumerate() {
        for (j, v) in row(c) {
            a[(i, j)] = v;
        }
        rhs[i] = force(c) / k(c.a, c.b);
    }
    assert!(loaded.len() > 3 * free.len(), "not indeterminate: {} loaded contacts, {} unknowns", loaded.len(), 3 * free.len());
    let u = a.clone().svd(true, true).solve(&rhs, 1e-12).unwrap();
    let res = (&a * &u - &rhs).norm() / rhs.norm();
    let scale = rhs.amax();
    let overlap = fr
        .contacts
        .iter()
        .filter(|c| force(c) <= 1e-9 * fmax)
        .map(|c| row(c).iter().map(|&(j, v)| v * u[j]).sum::<f64>() / scale)
        .fold(f64::NEG_INFINITY, f64::max);
    let _ = &fr.contacts[0].point;
    (res, overlap)
}

fn small_pyramid(name: &str) -> String {
    cfg_text(name).replace("n = 20", "n = 5").replace("t_end = 0.1", "t_end = 0.05")
}

#[test]
fn compatible_forces_come_from_one_displacement_field() {
    let dir = tempfile::tempdir().unwrap();
    let uniform = |_: u64, _: u64| 1.0;
    // Two species by id parity: k̃ = 1/5, 1/3, 1 (even–even, even–odd, odd–odd).
    let species = |a: u64, b: u64| match (a % 2, b % 2) {
        (0, 0) => 0.2,
        (1, 1) => 1.0,
        _ => 1.0 / 3.0,
    };
    for compat in COMPAT_METHODS {
    for (name, k) in [("cannonball-hooke", &uniform as &dyn Fn(u64, u64) -> f64), ("cannonball-two-species", &species)] {
        let out = run(dir.path(), &format!("{name}-{compat}"), &with_compat(&small_pyramid(name), compat), 1);
        let fr = last_frame(&out);
        let (res, overlap) = fit_displacements(&fr, k, &|c| c.f_compat);
        assert!(res < 1e-6, "{name}: compatible forces fit a displacement field only to {res:e}");
        assert!(overlap < 1e-6, "{name}: an unloaded contact overlaps by {overlap:e} of the largest");
        // The CD (APGD) forces of the same step are not compatible.
        let (res_cd, _) = fit_displacements(&fr, k, &|c| c.f_cd);
        assert!(res_cd > 1e-3, "{name}: the CD forces fit too ({res_cd:e}): the check cannot tell");
    }
    }
}

#[test]
fn same_compatible_forces_on_1_2_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for compat in COMPAT_METHODS {
    for name in ["cannonball-hooke", "cannonball-hertz"] {
        let mut runs = Vec::new();
        for np in [1, 2, 3] {
            let out = run(dir.path(), &format!("{name}-{compat}-np{np}"), &with_compat(&small_pyramid(name), compat), np);
            let mut c: Vec<(u64, u64, f64)> = last_frame(&out).contacts.iter().map(|c| (c.a, c.b, c.f_compat)).collect();
            c.sort_by_key(|x| (x.0, x.1));
            runs.push(c);
        }
        let fmax = runs[0].iter().map(|c| c.2).fold(0.0, f64::max);
        assert!(fmax > 0.0);
        for (np, r) in runs.iter().enumerate().skip(1) {
            assert_eq!(r.len(), runs[0].len(), "{name}: contact count on {} ranks", np + 1);
            for (x, y) in runs[0].iter().zip(r) {
                assert_eq!((x.0, x.1), (y.0, y.1));
                assert!((x.2 - y.2).abs() <= 1e-6 * fmax, "{name}, {} ranks, contact {}-{}: {} vs {}", np + 1, x.0, x.1, y.2, x.2);
            }
        }
    }
    }
}

/// key=value pairs of the `compat_dual` line of `method`.
fn dual_line(out: &str, method: &str) -> std::collections::HashMap<String, String> {
    let line = out.lines().find(|l| l.starts_with(&format!("method={method} "))).unwrap_or_else(|| panic!("no {method} line in:\n{out}"));
    line.split_whitespace().filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn num(m: &std::collections::HashMap<String, String>, k: &str) -> f64 {
    m[k].parse().unwrap_or_else(|_| panic!("{k}={}", m[k]))
}

/// Runs examples/compat_dual on the touching n-sphere-base pyramid of `law`.
fn dual(np: usize, law: &str, n: u32, extra: &[&str]) -> String {
    let cfg = format!("{}/configs/cannonball-{law}.toml", env!("CARGO_MANIFEST_DIR"));
    let gen = format!("generate[0].n={n}");
    let mut args = vec![cfg.as_str(), "--set", &gen, "--set", "generate[0].layer_gap=0"];
    args.extend_from_slice(extra);
    common::mpirun_ok(np, &common::example("compat_dual"), &args)
}

#[test]
fn newton_apgd_and_augmented_lagrangian_agree_on_the_n8_pyramid() {
    for law in ["hooke", "hertz", "two-species"] {
        let mut extra = vec!["--method", "newton", "--method", "apgd"];
        if law == "hooke" {
            extra.extend_from_slice(&["--method", "augmented-lagrangian"]);
        }
        let out = dual(1, law, 8, &extra);
        let newton = dual_line(&out, "Newton");
        let apgd = dual_line(&out, "Apgd");
        assert_eq!(newton["converged"], "true", "{law}: {out}");
        assert_eq!(apgd["converged"], "true", "{law}: {out}");
        assert!(num(&newton, "feasibility") <= 1e-10 && num(&apgd, "feasibility") <= 1e-10, "{law}: {out}");
        // Forces relative to the largest: the same solution of eq 36.
        assert!(num(&apgd, "diff") <= 1e-8, "{law}: Newton and APGD differ: {out}");
        assert!(num(&newton, "iterations") <= 30.0, "{law}: {out}");
        if law == "hooke" {
            let al = dual_line(&out, "AugmentedLagrangian");
            assert!(num(&al, "diff") <= 1e-8, "{law}: Newton and the augmented Lagrangian differ: {out}");
        }
        // Total force = total weight carried (Bᵀf = F̃): the same for every method.
        let (a, b) = (num(&newton, "f_sum"), num(&apgd, "f_sum"));
        assert!((a - b).abs() <= 1e-8 * a, "{law}: {a} vs {b}");
    }
}

/// With friction under Hertz, the springs' k_t = κ f_n/δ follows the normal
/// forces: Newton's coupled Coulomb solves repeat until k_t at their
/// forces changes no tangential force, the fixed point APGD's Tresca rounds
/// reach (stopping after the first coupled solve, Newton's forces were
/// 9e-4 (μ = 0.3) and 6e-3 (μ = 10) of the largest from APGD's).
#[test]
fn newton_and_apgd_give_the_same_hertzian_frictional_forces_on_the_n8_pyramid() {
    for mu in ["0.3", "10"] {
        let friction = format!("material[0].friction={mu}");
        let out = dual(2, "hertz", 8, &["--set", &friction, "--method", "newton", "--method", "apgd"]);
        let (newton, apgd) = (dual_line(&out, "Newton"), dual_line(&out, "Apgd"));
        assert_eq!(newton["converged"], "true", "μ = {mu}: {out}");
        assert_eq!(apgd["converged"], "true", "μ = {mu}: {out}");
        assert!(num(&apgd, "diff") <= 1e-8, "μ = {mu}: Newton and APGD differ: {out}");
    }
}

#[test]
fn newton_with_gamg_gives_the_forces_of_jacobi_cg_on_1_and_2_ranks() {
    // `-compat_pc_type gamg` (the rigid-body near-null space is set) must
    // converge to the same forces as the default CG + Jacobi; APGD needs no
    // KSP and is the reference here.
    // n = 20 on 1 rank: PETSc's default Chebyshev bounds stop CG there on an
    // indefinite preconditioner (the code sets safer ones).
    for (np, n) in [(1, 20), (2, 8)] {
        let out = dual(np, "hooke", n, &["--method", "newton", "--method", "apgd", "--", "-compat_pc_type", "gamg"]);
        let (newton, apgd) = (dual_line(&out, "Newton"), dual_line(&out, "Apgd"));
        assert_eq!(newton["converged"], "true", "{np} ranks: {out}");
        assert!(num(&newton, "feasibility") <= 1e-10, "{np} ranks: {out}");
        assert!(num(&apgd, "diff") <= 1e-8, "{np} ranks: GAMG Newton and APGD differ: {out}");
    }
}

#[test]
fn newton_iterations_and_forces_do_not_depend_on_the_rank_count() {
    for law in ["hooke", "hertz"] {
        let runs: Vec<_> = [1, 2, 3].iter().map(|&np| dual_line(&dual(np, law, 8, &["--method", "newton"]), "Newton")).collect();
        for (i, r) in runs.iter().enumerate() {
            assert_eq!(r["converged"], "true", "{law}, {} ranks: {r:?}", i + 1);
            assert_eq!(r["iterations"], runs[0]["iterations"], "{law}: Newton steps at {} ranks vs 1: {runs:?}", i + 1);
            let (l, l0) = (num(r, "linear"), num(&runs[0], "linear"));
            assert!((l - l0).abs() <= 0.05 * l0, "{law}: CG iterations at {} ranks {l} vs {l0}", i + 1);
            for k in ["f_max", "f_sum"] {
                let (x, x0) = (num(r, k), num(&runs[0], k));
                assert!((x - x0).abs() <= 1e-9 * x0, "{law}: {k} at {} ranks {x} vs {x0}", i + 1);
            }
        }
    }
}

#[test]
fn hertz_newton_from_zero_approach_does_not_stall() {
    // At u = 0 every Hertz weight (p − 1) δ^{p−2} is zero: the Newton matrix
    // is only the regularisation there. It must still converge, to the
    // forces of the bilateral start.
    let from_zero = dual_line(&dual(1, "hertz", 5, &["--method", "newton", "--start", "zero"]), "Newton");
    let bilateral = dual_line(&dual(1, "hertz", 5, &["--method", "newton"]), "Newton");
    assert_eq!(from_zero["converged"], "true", "{from_zero:?}");
    assert!(num(&from_zero, "iterations") < 100.0);
    for k in ["f_max", "f_sum"] {
        let (x, x0) = (num(&from_zero, k), num(&bilateral, k));
        assert!((x - x0).abs() <= 1e-9 * x0, "{k}: {x} from u = 0 vs {x0}");
    }
}

#[test]
fn a_load_no_contact_can_take_is_reported_by_body_and_the_rest_is_solved() {
    // A sphere far from the pyramid (id 0: explicit bodies come first) gets
    // a vertical load; no contact can carry it (eq 36 is infeasible there).
    let dir = tempfile::tempdir().unwrap();
    let text = cfg_text("cannonball-hooke").replace("n = 20", "n = 4")
        + "\n[[body]]\nshape = \"ball\"\nposition = [1.0, 1.0, 1.0]\n";
    let cfg = dir.path().join("lonely.toml");
    std::fs::write(&cfg, text).unwrap();
    for np in [1, 2] {
        for method in ["newton", "apgd"] {
            let args = [cfg.to_str().unwrap(), "--set", "generate[0].layer_gap=0", "--method", method, "--free-load", "0"];
            let out = common::mpirun(np, &common::example("compat_dual"), &args);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{method} on {np}: {stdout}\n{stderr}");
            assert!(stdout.contains("unsupported_bodies=1"), "{stdout}");
            assert!(stderr.contains("body 0 carries a load that no contact can take"), "{stderr}");
            let m = dual_line(&stdout, if method == "newton" { "Newton" } else { "Apgd" });
            assert_eq!(m["converged"], "true");
            assert!(num(&m, "f_max") > 0.0);
        }
    }
}

#[test]
fn newton_forces_are_the_augmented_lagrangian_ones_where_contacts_open() {
    // The small pyramid mid-drop: many contacts open, so Newton iterates have
    // bodies held by nothing (floppy modes, regularised). The regularisation
    // must vanish: the forces are those of the paper's method.
    let dir = tempfile::tempdir().unwrap();
    for name in ["cannonball-hooke", "cannonball-hertz"] {
        let mut runs = Vec::new();
        for compat in ["newton", "augmented-lagrangian"] {
            // One solve, at step 10 (the output step).
            let text = with_compat(&small_pyramid(name), compat).replace("t_end = 0.05", "t_end = 0.01");
            let out = run(dir.path(), &format!("{name}-{compat}-open"), &text, 1);
            let mut c: Vec<(u64, u64, f64)> = last_frame(&out).contacts.iter().map(|c| (c.a, c.b, c.f_compat)).collect();
            c.sort_by_key(|x| (x.0, x.1));
            runs.push(c);
        }
        let fmax = runs[0].iter().map(|c| c.2).fold(0.0, f64::max);
        let open = runs[0].iter().filter(|c| c.2 == 0.0).count();
        assert!(fmax > 0.0 && open > 0, "{name}: no open contact ({open}) or no force");
        for (x, y) in runs[0].iter().zip(&runs[1]) {
            assert!((x.2 - y.2).abs() <= 1e-7 * fmax, "{name}, contact {}-{}: newton {} vs AL {}", x.0, x.1, x.2, y.2);
        }
    }
}
