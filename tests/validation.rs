//! CI-sized subset of scripts/validate (VALIDATION.md): the
//! olsen-kamrin beam (§8.1) under cd and compatible-cd, and a 4-layer
//! cannonball pyramid (30 spheres, §8.2) whose compatible-CD floor
//! reactions must match a stiff DEM reference at rest while APGD's and
//! PGS's do not (Table 1's point).
//!
//! Pyramid geometry, shared by all solvers (as in scripts/py/validate.py):
//! DEM spheres of radius r start at surface gap ḡ (zero force); CD spheres
//! have radius r + ḡ/2 at the same centres (density scaled to keep the
//! mass), so CD's rigid contact geometry is the DEM's zero-force geometry.
//! What remains between compatible CD and the DEM is the DEM's finite
//! approach δ (contact normals turn by O(δ/r)), so the error must fall in
//! proportion to 1/ε₁.
mod common;
use std::path::{Path, PathBuf};

fn cfg_text(name: &str) -> String {
    std::fs::read_to_string(format!("{}/configs/{name}.toml", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn run(dir: &Path, name: &str, text: &str) -> PathBuf {
    run_np(1, dir, name, text)
}

fn run_np(np: usize, dir: &Path, name: &str, text: &str) -> PathBuf {
    let out = dir.join(name);
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, text).unwrap();
    let set = format!("output.dir={}", out.display());
    common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--set", &set]);
    out
}

/// Loads on the supports at x = 0, L/2, L (ids 1, 3, 2).
fn supports(out: &Path) -> [f64; 3] {
    let r = common::reactions(out);
    let get = |id: u64| -r.iter().find(|x| x.0 == id).map_or(0.0, |x| x.1[1]);
    [get(1), get(3), get(2)]
}

fn with_method(text: &str, method: &str, order: &str) -> String {
    text.replace("method = \"apgd\"", &format!("method = \"{method}\"\npgs_order = \"{order}\""))
}

fn close(a: [f64; 3], b: [f64; 3], tol: f64) -> bool {
    a.iter().zip(&b).all(|(x, y)| (x - y).abs() < tol)
}

#[test]
fn beam_forces_per_support_as_in_the_paper() {
    let dir = tempfile::tempdir().unwrap();
    let t = 10.0 / 3.0;
    // cd: PGS splits the load by visiting order; the two orders disagree.
    let uni = cfg_text("beam-uniform");
    let fwd = supports(&run(dir.path(), "pgs-fwd", &with_method(&uni, "pgs", "forward")));
    let rev = supports(&run(dir.path(), "pgs-rev", &with_method(&uni, "pgs", "reverse")));
    for f in [fwd, rev] {
        assert!((f.iter().sum::<f64>() - 10.0).abs() < 1e-6, "PGS loads {f:?} do not carry the weight");
    }
    assert!(!close(fwd, rev, 0.5), "PGS orders agree: {fwd:?} vs {rev:?}");
    assert!(!close(fwd, [t; 3], 0.5) && !close(rev, [t; 3], 0.5), "PGS gave thirds: {fwd:?} {rev:?}");
    // compatible-cd: 10/3 each whatever CD ran first; stiff middle 2, 6, 2.
    let comp = cfg_text("beam-uniform-compat");
    let stiff = cfg_text("beam-stiff-middle");
    for (name, text, want) in [
        ("compat-apgd", comp.clone(), [t; 3]),
        ("compat-pgs", with_method(&comp, "pgs", "reverse"), [t; 3]),
        ("stiff-apgd", stiff.clone(), [2.0, 6.0, 2.0]),
        ("stiff-pgs", with_method(&stiff, "pgs", "forward"), [2.0, 6.0, 2.0]),
    ] {
        let f = supports(&run(dir.path(), name, &text));
        assert!(close(f, want, 1e-6), "{name}: {f:?} vs {want:?}");
    }
}

const R: f64 = 1.25e-3;
const RHO: f64 = 2000.0;
const GBAR: f64 = 1.25e-5;
const N: usize = 4;

/// The 4-layer pyramid for `solver` (see the module comment).
fn pyramid(solver: &str, method: &str, eps1: f64) -> String {
    pyramid_n(N, solver, method, eps1, 0.0)
}

/// The `n`-layer pyramid for `solver`, layers `layer_gap` apart beyond
/// their resting height (a drop when positive).
fn pyramid_n(n: usize, solver: &str, method: &str, eps1: f64, layer_gap: f64) -> String {
    let cd = solver != "dem";
    let r = if cd { R + GBAR / 2.0 } else { R };
    let rho = RHO * (R / r).powi(3);
    let gap = if cd { 0.0 } else { GBAR };
    let (t_end, dt) = if cd { (0.005, 1e-3) } else { (0.1, 2e-4) };
    let mut t = format!(
        "[simulation]\nsolver = \"{solver}\"\ndim = 3\nt_end = {t_end}\ndt = {dt}\ngravity = [0.0, 0.0, -9.81]\n\n\
         [[material]]\nname = \"grain\"\ndensity = {rho:e}\n\n[[shape]]\nname = \"ball\"\nkind = \"sphere\"\nradius = {r:e}\n\n\
         [[generate]]\nkind = \"pyramid\"\nshape = \"ball\"\norigin = [0.0, 0.0, 0.0]\nn = {n}\ngap = {gap:e}\nlayer_gap = {layer_gap:e}\nfix_base = true\n\n\
         [solver]\nmethod = \"{method}\"\ntolerance = 1e-10\nmax_iterations = 50000\n\n[contact]\ndistance = 2.5e-4\n\n\
         [output]\ndir = \"unused\"\nevery = 1000000\n"
    );
    if solver == "compatible-cd" {
        t += "\n[compatibility]\nlaw = \"hooke\"\nevery = 1\n";
    }
    if solver == "dem" {
        t += &format!("\n[dem]\ngbar = {GBAR:e}\nf = 0.5\nn1 = 1.0\neps1 = {eps1:e}\ndamping = 1.0\n");
    }
    t
}

/// Reactions on the N² fixed base spheres (ids 0..N²), flattened.
fn floor(out: &Path) -> Vec<f64> {
    floor_n(out, N)
}

fn floor_n(out: &Path, n: usize) -> Vec<f64> {
    let r = common::reactions(out);
    (0..(n * n) as u64).flat_map(|id| r.iter().find(|x| x.0 == id).map_or([0.0; 3], |x| x.1)).collect()
}

fn rel_err(f: &[f64], reference: &[f64]) -> f64 {
    let d: f64 = f.iter().zip(reference).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
    d / reference.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// ε₁ for a largest DEM approach of about `rel` × r (largest contact force
/// ≈ 1.4e-4 N here; see scripts/py/validate.py: eps1_for).
fn eps1(rel: f64) -> f64 {
    eps1_n(N, rel)
}

fn eps1_n(n: usize, rel: f64) -> f64 {
    let m = RHO * 4.0 / 3.0 * std::f64::consts::PI * R.powi(3);
    let above: f64 = (1..n).map(|k| (k * k) as f64).sum();
    let fmax = m * 9.81 * above / (4.0 * ((n - 1) * (n - 1)) as f64) * 2f64.sqrt() * 2.0;
    fmax / (rel * R)
}

#[test]
fn pyramid_floor_reactions_compatible_cd_matches_stiff_dem_apgd_and_pgs_do_not() {
    let dir = tempfile::tempdir().unwrap();
    // References: the DEM at rest (ζ = 1, dissipative Newmark) at two
    // stiffnesses, approach δ ≈ 1e-4 r and 1e-5 r.
    let dem = |name: &str, rel: f64| {
        let text = pyramid("dem", "apgd", eps1(rel)).replace("damping = 1.0\n", "damping = 1.0\nbeta = 0.36\ngamma = 0.7\n");
        floor(&run(dir.path(), name, &text))
    };
    let soft = dem("dem-soft", 1e-4);
    let stiff = dem("dem-stiff", 1e-5);
    // The base carries the weight of the 14 free spheres.
    let m = RHO * 4.0 / 3.0 * std::f64::consts::PI * R.powi(3);
    let fz: f64 = stiff.iter().skip(2).step_by(3).sum();
    assert!((fz + 14.0 * m * 9.81).abs() < 1e-6 * 14.0 * m * 9.81, "floor carries {fz}, weight {}", 14.0 * m * 9.81);
    let compat = floor(&run(dir.path(), "compat", &pyramid("compatible-cd", "apgd", 0.0)));
    let (e_soft, e_stiff) = (rel_err(&compat, &soft), rel_err(&compat, &stiff));
    // The paper's 2e-5 (Table 1, n = 20) holds already at δ ≈ 1e-5 r
    // (measured 4.6e-6); and the error is the DEM's O(δ/r): ten times
    // stiffer, ten times smaller (measured 4.57e-5 → 4.56e-6).
    assert!(e_stiff <= 2e-5, "compatible CD vs stiff DEM: {e_stiff:e}");
    let ratio = e_soft / e_stiff;
    assert!((5.0..20.0).contains(&ratio), "error does not scale with 1/ε₁: {e_soft:e} → {e_stiff:e}");
    // Classic CD is far off (paper: 0.17 APGD, 0.19 PGS at n = 20).
    for method in ["apgd", "pgs"] {
        let e = rel_err(&floor(&run(dir.path(), method, &pyramid("cd", method, 0.0))), &stiff);
        assert!(e >= 1e-2, "{method} floor reactions within {e:e} of the DEM: the test cannot tell");
    }
}

/// Two species (Table 1, third row): even ids soft (E₀), odd ids stiff
/// (5 E₀); compatible-cd's k̃ from the series moduli, the DEM with
/// `[dem] pair_stiffness` scaling ε₁ by the same k̃ (5× ε₁: the soft–soft
/// contacts have k̃ = 1/5).
#[test]
fn two_species_pyramid_compatible_cd_matches_dem_with_pair_stiffness() {
    let dir = tempfile::tempdir().unwrap();
    let species = |t: String| {
        t.replace(
            "[[material]]\nname = \"grain\"\n",
            "[[material]]\nname = \"soft\"\nyoung = 10e9\n",
        )
        .replace("[[shape]]", "[[material]]\nname = \"stiff\"\nyoung = 50e9\n__DENSITY__\n\n[[shape]]")
        .replace("fix_base = true\n", "fix_base = true\nmaterial_by_parity = [\"soft\", \"stiff\"]\n")
    };
    // The stiff material's density line is the soft one's.
    let with_density = |t: String| {
        let d = t.lines().find(|l| l.starts_with("density = ")).unwrap().to_string();
        t.replace("__DENSITY__", &d)
    };
    let dem = with_density(species(pyramid("dem", "apgd", 5.0 * eps1(1e-5))))
        .replace("damping = 1.0\n", "damping = 1.0\nbeta = 0.36\ngamma = 0.7\npair_stiffness = true\n");
    let reference = floor(&run(dir.path(), "dem", &dem));
    let compat = with_density(species(pyramid("compatible-cd", "apgd", 0.0))).replace("every = 1\n", "every = 1000\n");
    let e = rel_err(&floor(&run(dir.path(), "compat", &compat)), &reference);
    assert!(e <= 2e-5, "two species: compatible CD vs DEM {e:e} (paper 2.3e-5)");
    let apgd = with_density(species(pyramid("cd", "apgd", 0.0)));
    let e_apgd = rel_err(&floor(&run(dir.path(), "apgd", &apgd)), &reference);
    assert!(e_apgd >= 1e-2, "two species: APGD within {e_apgd:e} of the DEM");
}

/// The validation report's DEM reference (scripts/py/validate.py, DROP_DEM):
/// the `n`-layer pyramid dropped, layers 5 % of a radius apart
/// (olsen-kamrin's protocol), run until every speed is below `rest` m/s with
/// Δt ≤ 2e-4 s, ζ = 1 capped at the elastic force, Newmark γ = 1, β = (γ + 1/2)²/4,
/// and the energy line search (`extra`: more `[dem]` keys).
fn dropped(n: usize, rel: f64, rest: f64, extra: &str) -> String {
    let dem = pyramid_n(n, "dem", "apgd", eps1_n(n, rel), 0.05 * R)
        .replace("t_end = 0.1\n", &format!("t_end = 1.0\nuntil_static = {rest:e}\n"))
        .replace("damping = 1.0\n", &format!("damping = 1.0\ndamping_cap = 1.0\nbeta = 0.5625\ngamma = 1.0\n{extra}"));
    assert!(dem.contains("until_static") && dem.contains("layer_gap = 6.25e-5"), "{dem}");
    dem
}

/// The stiff 8-layer pyramid (204 spheres) dropped comes to rest
/// dynamically under the validation report's DEM with the floor reactions
/// of compatible CD to ≤ 1e-5, on 1 and 2 ranks. ε₁ is set for an
/// approach of 5e-6 r, so the DEM's own O(δ/r) error is about 2.3e-6 (the
/// static n = 4 case above: 4.6e-6 at 1e-5 r). The rest state is unique;
/// the way there is not, so the step and Newton counts are not compared:
/// the landings amplify round-off (on 1 rank, gravity changed by one ulp
/// changes the Newton count of a step near step 100 with exact LU solves,
/// at step 28 with GMRES to 1e-4; a perturbation grows about 1.1× per step
/// at a fixed Δt of 4e-5 s), so the counts differ between rank counts as
/// they do between two such runs on one rank, whatever the linear solver.
#[test]
fn dropped_pyramid_comes_to_rest_under_dem_with_compatible_cd_floor_reactions() {
    drop_to_compatible_rest("line_search = \"energy\"\n", &[1, 2], None);
}

/// `[dem] newton = "fixed"`: one Newton iteration a step, its residual
/// left as it is (a linearly implicit step). The way down is that of the
/// linearisation, but a state at rest is one where the residual vanishes,
/// so the dropped 8-layer pyramid comes to rest at the converged scheme's
/// rest state: compatible CD's floor reactions to ≤ 1e-5, the same on 1, 2
/// and 3 ranks, every step one Newton iteration at most.
#[test]
fn one_newton_iteration_a_step_brings_the_dropped_pyramid_to_compatible_cd_rest() {
    drop_to_compatible_rest("line_search = \"energy\"\nnewton = \"fixed\"\n", &[1, 2, 3], Some(1));
}

/// The 8-layer pyramid dropped under the DEM (`extra` `[dem]` keys) on each
/// of `ranks`: at rest before t_end, the floor carrying the free spheres'
/// weight, its reactions within 1e-5 of compatible CD and of 1 rank's;
/// with `max_newton`, no step took more Newton iterations.
fn drop_to_compatible_rest(extra: &str, ranks: &[usize], max_newton: Option<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let n = 8;
    let dem = dropped(n, 5e-6, 1e-8, extra);
    let compat = floor_n(&run(dir.path(), "compat", &pyramid_n(n, "compatible-cd", "apgd", 0.0, 0.0)), n);
    let m = RHO * 4.0 / 3.0 * std::f64::consts::PI * R.powi(3);
    let free = (1..n).map(|k| k * k).sum::<usize>() as f64; // all but the n² base
    let mut at = Vec::new();
    for &np in ranks {
        let out = run_np(np, dir.path(), &format!("dem-{np}"), &dem);
        // At rest before t_end: the run stopped by until_static.
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["reached_static"].as_bool(), Some(true), "{np} rank(s): not at rest by t_end");
        if let Some(most) = max_newton {
            let per_step = s["solver_iterations_per_step"].as_array().unwrap();
            assert!(per_step.iter().all(|k| k.as_u64().unwrap() <= most), "{np} rank(s): a step took more than {most} Newton iteration(s)");
        }
        let f = floor_n(&out, n);
        let fz: f64 = f.iter().skip(2).step_by(3).sum();
        assert!((fz + free * m * 9.81).abs() < 1e-6 * free * m * 9.81, "{np} rank(s): floor carries {fz}, weight {}", free * m * 9.81);
        let e = rel_err(&compat, &f);
        assert!(e <= 1e-5, "{np} rank(s): compatible CD vs dropped DEM at rest: {e:e}");
        at.push(f);
    }
    // The same rest state whatever the rank count.
    for (k, f) in at.iter().enumerate().skip(1) {
        assert!(rel_err(f, &at[0]) <= 1e-5, "1 vs {} ranks: {:e}", ranks[k], rel_err(f, &at[0]));
    }
}

/// `[dem] line_search = "energy"` (descent in the step's incremental energy
/// instead of PETSc's backtracking on ‖F‖): the dropped stiff 4-layer
/// pyramid comes to rest at the same floor reactions as with PETSc's line
/// search, and at compatible CD's, on 1 and 2 ranks. The rest state is
/// unique (a Hookean truss on a fixed base), so the path to it must not
/// matter, up to the motion left when the run stops (every speed below
/// 1e-9 m/s: the two differ by 1.9e-7; at 1e-8 m/s by 1.9e-6). The
/// Jacobian here is the 3×3-block one (frictionless spheres).
#[test]
fn energy_line_search_reaches_the_rest_state_of_petscs() {
    let dir = tempfile::tempdir().unwrap();
    let n = 4;
    let compat = floor_n(&run(dir.path(), "compat", &pyramid_n(n, "compatible-cd", "apgd", 0.0, 0.0)), n);
    let petsc = floor_n(&run(dir.path(), "petsc", &dropped(n, 5e-6, 1e-9, "line_search = \"petsc\"\n")), n);
    assert!(rel_err(&compat, &petsc) <= 1e-5, "PETSc line search: {:e} from compatible CD", rel_err(&compat, &petsc));
    for np in [1, 2] {
        let out = run_np(np, dir.path(), &format!("energy-{np}"), &dropped(n, 5e-6, 1e-9, "line_search = \"energy\"\n"));
        let log = std::fs::read_to_string(out.join("log.txt")).unwrap();
        let t_last: f64 = log.lines().rev().find_map(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap();
        assert!(t_last < 0.9, "{np} rank(s): not at rest by t = {t_last}");
        let f = floor_n(&out, n);
        assert!(rel_err(&petsc, &f) <= 1e-6, "{np} rank(s): energy vs PETSc line search at rest: {:e}", rel_err(&petsc, &f));
        assert!(rel_err(&compat, &f) <= 1e-5, "{np} rank(s): energy line search vs compatible CD: {:e}", rel_err(&compat, &f));
    }
}
