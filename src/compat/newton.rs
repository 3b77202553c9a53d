//! `[compatibility] method = "newton"`: minimises the dual Π(u)
//! ([`super::dual`]) by PETSc SNES: Newton, Π given as the objective
//! (`SNESSetObjective`, for `-compat_snes_linesearch_type bt`), a
//! critical-point line search by default (PETSc's cp, or with friction
//! [`critical_step`]: a safeguarded root of ∇Π·y), the Hessian ∇²Π assembled per
//! Newton step as a distributed sparse matrix (six rows per body, only B's non-zero
//! DOFs stored), CG with Jacobi by default, Eisenstat–Walker forcing.
//!
//! Floppy modes (DOFs only open contacts touch, e.g. a body whose contacts
//! all opened at the current iterate) make ∇²Π singular. The Newton matrix
//! gives the open contacts the weight ν k̃ and adds the Levenberg–Marquardt
//! term 10⁻³ ν diag(Bᵀ K̃ B), ν = min(1, ‖∇Π‖/‖F̃‖): far from the solution a
//! body that lost its contacts moves about as far as its load would press
//! them (a 10⁻³-weighted LM alone sends it 10³ times too far and the line
//! search then shortens every body's step); both terms vanish at the
//! solution (local Newton convergence) and only change the step, never
//! the objective, so the forces are not biased.
//!
//! Start: the previous solve's u when given (same contact set), else the
//! Hookean all-contacts-bilateral solve Bᵀ K̃ B u = −F̃ (one KSP solve), which
//! also keeps Hertz (weight δ^{1/2}, zero at δ = 0) away from u = 0 where
//! its Hessian vanishes.
//!
//! Newton also stops, not converged, once the smallest ‖∇Π‖ has not
//! halved in [`STALL_STEPS`] steps (frictional solves of formed packs creep).
//!
//! With friction in its coupled form (τ = μ f_n(u), [`super::tresca`]) the
//! residual is not a gradient: no objective, a backtracking line search
//! on ‖∇Π‖ and GMRES.
//!
//! Options prefix `compat_`: `-compat_snes_monitor`, `-compat_ksp_type`,
//! `-compat_pc_type gamg`, `-compat_snes_linesearch_type bt`, ... after `--`.
use super::dual::{Dual, DualResult, Weights};
use crate::body::Bodies;
use crate::petsc::{Ksp, Mat, NormType, PetscInt, Result, Snes, Vector};
use std::cell::Cell;

/// Options prefix of the compatibility solvers' PETSc objects.
pub const PREFIX: &str = "compat_";

/// Levenberg–Marquardt factor: μ = MU · min(1, relative gradient norm).
/// Weight (× k̃) of the open contacts in the Newton matrix, relative to
/// min(1, ‖∇Π‖/‖F̃‖); the Levenberg–Marquardt diagonal is `LM` times it.
const OPEN: f64 = 1.0;
const LM: f64 = 1e-3;

/// Newton steps over which the smallest ‖∇Π‖ so far must halve, or the
/// solve stops as stalled (not converged; see [`stagnant`]). Frictional
/// solves of formed random packs creep: on a settled 10⁴-sphere pack a
/// Tresca round fell from 29 to 2.5 in 12 steps and to 1.8 in the next 88,
/// the coupled solve after it by a factor 2 in 30 steps until its line
/// search failed at step 75; the step then reports CD's forces. Stopping
/// at 30 steps took that compatibility phase from 93 s to 36 s and the
/// first 100 steps of tests/compat_friction.rs's 500-grain pour from 38 s
/// to 29 s, with 64 steps short of the tolerance against 62 (converging
/// solves have plateaus too; 40 steps: 41 s, 35 s, 63 short).
const STALL_STEPS: usize = 30;

/// Whether a solve whose ‖∇Π‖ went through `norms` (one per Newton step,
/// the start first) has stalled: the smallest so far is above half the
/// smallest [`STALL_STEPS`] steps ago.
fn stagnant(norms: &[f64]) -> bool {
    let n = norms.len();
    let best = |k: usize| norms[..k].iter().copied().fold(f64::INFINITY, f64::min);
    n > STALL_STEPS && best(n) > 0.5 * best(n - STALL_STEPS)
}

/// Options prefix of the sparse direct solves that take over a Newton
/// solve whose Krylov solve failed (e.g. `-compat_direct_redundant_pc_factor_mat_ordering_type`).
pub const DIRECT_PREFIX: &str = "compat_direct_";

/// Most bodies (all ranks) for the sparse LU of [`solve`]: a compact 3D
/// pack's factors fill fast (the n = 20 pyramid's 2,870 bodies: 3.2 s a
/// factorisation, MUMPS's on 2 ranks 3.4 s; the 500-grain pour's:
/// milliseconds), and with MUMPS a settled 10⁴-sphere pack's coupled
/// solve ran for minutes.
pub const DIRECT_MAX_BODIES: u64 = 2_000;

/// Whether `dual` has at most [`DIRECT_MAX_BODIES`] bodies (all ranks): a
/// sparse LU of its whole body-DOF matrix on every rank fits. Collective.
pub(super) fn whole_lu_fits(dual: &Dual) -> bool {
    crate::parallel::sum_u64(dual.comm, dual.op.n_owned as u64) <= DIRECT_MAX_BODIES
}

/// Solves the dual by Newton from `u0` (scaled, or `None`: the bilateral
/// start) to ‖∇Π‖/‖F̃‖ ≤ `tol` in at most `max_it` steps. A solve whose
/// Krylov solve fails goes on from where it stopped (up to
/// [`DIRECT_MAX_BODIES`] bodies) with a sparse LU factorisation of each
/// Newton matrix, whole on every rank (`redundant`: the same from run to
/// run, which MUMPS's parallel LU was not on that pour, and faster at that
/// size): on the 500-grain pour of
/// tests/compat_friction.rs the coupled Coulomb solves' GMRES with block
/// ILU breaks down (its recursion's residual leaves the true one) on most
/// steps once the grains form a pack, where exact solves converge. Collective.
pub fn solve(dual: &Dual, bodies: &Bodies, u0: Option<Vector>, tol: f64, max_it: u32) -> Result<DualResult> {
    let (first, failed) = newton(dual, bodies, u0, tol, max_it, false)?;
    let left = max_it.saturating_sub(first.iterations as u32);
    if !failed || first.converged || left == 0 || !whole_lu_fits(dual) {
        return Ok(first);
    }
    log::debug!("compatibility: a Krylov solve failed at feasibility {:e}; sparse LU from there", first.feasibility);
    let (iterations, linear) = (first.iterations, first.linear);
    let (mut out, _) = newton(dual, bodies, Some(first.u), tol, left, true)?;
    out.iterations += iterations;
    out.linear += linear;
    Ok(out)
}

/// One Newton solve ([`solve`]); with `direct`, each linear solve by a
/// sparse LU (options prefix [`DIRECT_PREFIX`]). Also returns whether it
/// stopped on a failed linear solve.
fn newton(dual: &Dual, bodies: &Bodies, u0: Option<Vector>, tol: f64, max_it: u32, direct: bool) -> Result<(DualResult, bool)> {
    let comm = dual.comm;
    // For `-compat_pc_type gamg`: GAMG's default Chebyshev bounds (10
    // estimate iterations, ×1.1) are too tight for the regularised floppy
    // modes and CG stops on an indefinite preconditioner.
    // The cp line search stops at its initial point when |F·y| < atol ‖y‖
    // (default 1e-15) and SNES then reports convergence whatever ‖F‖ is:
    // near the solution of a scaled problem F·y is that small (a 10^4-sphere
    // pack on 2 ranks "converged" at 8e-10 for a tolerance of 1e-10).
    for (k, v) in [
        ("-compat_mg_levels_ksp_chebyshev_esteig", "0,0.05,0,1.2"),
        ("-compat_mg_levels_esteig_ksp_max_it", "50"),
        ("-compat_snes_linesearch_atol", "0"),
        // The coupled Coulomb Jacobian (GMRES): restarts every 30
        // iterations leave its Newton directions too rough for the line
        // search on the n = 20 pyramid at μ = 0.3. On a pour's formed pack
        // GMRES often stops at its second restart (divergence breakdown:
        // the true residual off the recursion's), which ends the Newton
        // solve; going on there (`-compat_ksp_gmres_breakdown_tolerance
        // 1e10`, or `-compat_snes_max_linear_solve_fail 1000`) converged 7
        // and 6 more of the 500-grain pour's first 100 steps (of 38), in
        // 16× and 7.5× the compatibility time: not the default. Exact LU
        // on the blocks (`-compat_sub_pc_type lu`) or a Levenberg–Marquardt
        // factor of 0.1 instead of `LM` still break down in 73 and 91
        // solves (81 as built): 56 and 57 of those 100 steps short (64 as
        // built) in 38 and 46 s of compatibility (29 s).
        ("-compat_ksp_gmres_restart", "200"),
    ] {
        crate::petsc::options::set_default(k, Some(v))?;
    }
    let mut h = dual.hessian_matrix(bodies, PREFIX)?;
    let mut linear = 0u64;
    let mut u = match u0 {
        Some(u) => u,
        None => {
            let (u, its) = bilateral(dual, &mut h)?;
            linear += its;
            u
        }
    };
    // ‖∇Π‖ of the last residual evaluation: the accepted iterate when the
    // Jacobian is asked for.
    let gnorm = Cell::new(f64::INFINITY);
    let (ft_norm, atol) = (dual.ft_norm, tol * dual.ft_norm);
    let (mut delta_r, mut f_r) = (dual.op.contact_vec()?, dual.op.contact_vec()?);
    let mut delta_o = dual.op.contact_vec()?;
    let mut delta_j = dual.op.contact_vec()?;
    let r = u.duplicate()?;
    // ‖∇Π‖ at each convergence test, and whether it has stalled.
    let (mut norms, stalled) = (Vec::new(), Cell::new(false));
    let mut snes = Snes::new(comm)?;
    snes.set_options_prefix(PREFIX)?;
    snes.set_function(Some(&r), |x: &Vector, g: &mut Vector| -> Result<()> {
        dual.gradient(x, &mut delta_r, &mut f_r, g)?;
        gnorm.set(g.norm(NormType::Two)?);
        Ok(())
    })?;
    // The coupled Coulomb problem has no potential: its line search
    // backtracks on ‖∇Π‖ and its Jacobian is not symmetric.
    let coupled = dual.friction.as_ref().is_some_and(|t| t.coupled);
    if !coupled {
        snes.set_objective(|x: &Vector| dual.objective(x, &mut delta_o))?;
    }
    // The closure fills its own owner of `h` (the matrix PETSc passes is
    // the same object, but only this one knows its COO pattern).
    let mut hj = h.share();
    let gnorm_j = &gnorm;
    snes.set_jacobian(&h, None, move |x: &Vector, _a: &mut Mat, _p: Option<&mut Mat>| -> Result<()> {
        dual.approach(x, &mut delta_j)?;
        let nu = OPEN * (gnorm_j.get() / ft_norm).min(1.0);
        dual.hessian(&delta_j, Weights::Tangent, nu, LM * nu, &mut hj)
    })?;
    snes.set_tolerances(Some(atol), Some(1e-30), Some(0.0), Some(max_it as PetscInt), Some(100_000))?;
    // The coupled Coulomb Newton needs accurate directions: with loose
    // (Eisenstat–Walker) solves its line search fails and SNES restarts
    // (n = 20 pyramid, μ = 0.3: 307 Newton steps and 30,540 GMRES
    // iterations with Jacobi, against 38 and 2,458 with block-Jacobi
    // ILU(0) to 1e-5; 36 s against 2.6 s). Loosened only in the linear
    // tail (rtol 0.1 × the last reduction of ‖∇Π‖, at most 1e-2, once
    // ‖∇Π‖ < 1e-6 ‖F̃‖) they still fail there: 51 Newton steps and 1,545
    // Krylov iterations against 18 and 805 with block-Jacobi (1e-4 ‖F̃‖:
    // not converged).
    snes.set_use_ew(!coupled)?;
    // Critical-point line search: a secant on ∇Π·y = 0 along the step,
    // from gradients only (the values of Π lose the decrease to round-off
    // near the solution).
    // The coupled solve's bt fails where Newton's model is poor, not where
    // its directions are rough: on the 500-grain pour, right
    // preconditioning (GMRES then tests the true residual) left 31 of the
    // first 100 steps short against 26, and the sparse LU taking over after
    // a failed line search as after a failed Krylov solve, 26 again; with
    // Hertz and Mindlin's tangent as the springs' secant (the law before
    // [`super::tresca::secant`]) it failed with exact directions too (n = 20
    // pyramid, μ = 0.3, MUMPS LU on 1 rank). Going on after up to 5 failed line searches
    // (`-compat_snes_max_fail 5`): 26 short, in nine times the
    // compatibility time. [`critical_step`] (the Tresca rounds' search
    // below) in the coupled solve: the Hooke n = 20 pyramid at μ = 0.3 no
    // longer converges (nine rounds, to 1.6e-4).
    snes.set_line_search_type(if coupled { "bt" } else { "cp" })?;
    // A Tresca round's Π has kinks wherever a spring reaches its bound or a
    // contact opens, and cp takes one secant step on ∇Π·y: on the
    // 500-grain pour of tests/compat_friction.rs its rounds zigzagged with
    // ‖∇Π‖ repeating every three steps (one step's round: 43 Newton steps,
    // stalled at 9e-3; with [`critical_step`] 15, to 7e-16). Over that
    // pour's first 100 steps 23 rounds stopped short against 66 (50 steps
    // short of the tolerance against 64). PETSc's cp with 10 secant steps
    // (unsafeguarded) stalled in 77.
    if !coupled && dual.friction.is_some() {
        let (mut delta_l, mut f_l) = (dual.op.contact_vec()?, dual.op.contact_vec()?);
        let gnorm_l = &gnorm;
        snes.set_line_search_shell(move |x: &mut Vector, g: &mut Vector, y: &Vector, w: &mut Vector| -> Result<Option<f64>> {
            let g0 = g.dot(y)?;
            let mut last = f64::NAN;
            let alpha = critical_step(g0, |a| {
                w.waxpy(-a, y, x)?;
                dual.gradient(w, &mut delta_l, &mut f_l, g)?;
                last = a;
                g.dot(y)
            })?;
            let Some(a) = alpha else { return Ok(None) };
            if a != last {
                w.waxpy(-a, y, x)?;
                dual.gradient(w, &mut delta_l, &mut f_l, g)?;
            }
            x.copy_from(w)?;
            gnorm_l.set(g.norm(NormType::Two)?);
            Ok(Some(a))
        })?;
    }
    {
        let mut ksp = snes.ksp()?;
        if direct {
            ksp.set_options_prefix(DIRECT_PREFIX)?;
            ksp.set_type("preonly")?;
            ksp.set_pc_type("redundant")?;
        } else if coupled {
            // Block ILU(1) on the 6 × 6 blocks (n = 20 pyramid, μ = 0.3:
            // 1,073 GMRES iterations against 1,568 with ILU(0)). Rebuilt
            // only every second Newton step (SNESSetLagPreconditioner 2):
            // 858 against 805 on that pyramid, in the same time; for every
            // compatibility solve (`-compat_snes_lag_preconditioner 2`)
            // 34 of the 500-grain pour's first 100 steps short against 26.
            // On blocks that overlap by one layer of bodies (restricted
            // additive Schwarz): the load paths of a pack cross the ranks'
            // cuts, and with block-Jacobi the iterations grow with the rank
            // count (that pyramid on 1 / 2 / 3 / 4 ranks: 570 / 805 / 961 /
            // 902 Krylov iterations in all, with ASM 570 / 597 / 678 / 660;
            // exact LU on block-Jacobi's blocks still 513 on 2 ranks).
            crate::petsc::options::set_default("-compat_sub_pc_factor_levels", Some("1"))?;
            ksp.set_type("gmres")?;
            ksp.set_pc_type("asm")?;
            ksp.set_tolerances(Some(1e-5), None, None, Some(COUPLED_KSP_MAX_IT))?;
        } else {
            ksp.set_type("cg")?;
            ksp.set_pc_type("jacobi")?;
        }
    }
    // A signal stops the iterations (the step is then abandoned); so does a
    // stall (‖F‖ is the same on every rank).
    snes.set_extra_convergence(|_it, fnorm: f64| -> Result<bool> {
        norms.push(fnorm);
        stalled.set(stagnant(&norms));
        Ok(stalled.get() || crate::parallel::signals::agreed(comm))
    })?;
    snes.set_from_options()?;
    let res = snes.solve(None, &mut u);
    let newton = snes.iteration_number().unwrap_or(0).max(0) as u64;
    linear += snes.linear_iterations().unwrap_or(0).max(0) as u64;
    let reason = snes.converged_reason().map(|r| r.name).unwrap_or_default();
    drop(snes);
    res?;
    let mut out = dual.finish(u, newton, linear, tol)?;
    out.stalled = stalled.get() && !out.converged;
    if !out.converged {
        let reason = if out.stalled { "stalled" } else { &reason };
        log::debug!("compatibility: SNES stopped ({reason}) at feasibility {:e}", out.feasibility);
    }
    let failed = !out.converged && !out.stalled && reason == "DIVERGED_LINEAR_SOLVE";
    Ok((out, failed))
}

/// GMRES iterations of a coupled Coulomb Newton step before its linear
/// solve counts as failed. Where these solves converge, 2,000 changes
/// nothing (the n = 20 pyramids, the 500-grain pour's first 100 steps, the
/// settled 10⁴-sphere pack's step: the same results as with 20,000); where
/// the Hertzian n = 18 and 20 pyramids at μ = 0.3 did not converge (with
/// Mindlin's tangent as the springs' secant, the law before
/// [`super::tresca::secant`]), a solve ran to 20,000, and those stopped
/// with the same forces five to six times sooner (5.0 s against 26 s,
/// 6.3 s against 38 s).
const COUPLED_KSP_MAX_IT: PetscInt = 2_000;

/// |g(α)| ≤ `LS_TOL` g(0) ends the line search.
const LS_TOL: f64 = 0.1;

/// The step α along x − α y of a convex Π: a root of g(α) = ∇Π(x − α y)·y,
/// non-increasing in α, from g(0) = `g0` > 0 (`None`: y does not descend).
/// α = 1 first, then ×4 while Π still falls (at most 4⁴), then Illinois
/// false position inside the bracket; `g` evaluates g at α. At most
/// `LS_EVALS` evaluations; returns an α where g was evaluated.
fn critical_step(g0: f64, mut g: impl FnMut(f64) -> Result<f64>) -> Result<Option<f64>> {
    const LS_EVALS: usize = 20;
    if g0.is_nan() || g0 <= 0.0 {
        return Ok(None);
    }
    let tol = LS_TOL * g0;
    let (mut lo, mut g_lo) = (0.0, g0);
    let (mut a, mut ga) = (1.0, g(1.0)?);
    let mut evals = 1;
    while ga > tol && a < 256.0 {
        (lo, g_lo) = (a, ga);
        a *= 4.0;
        ga = g(a)?;
        evals += 1;
    }
    if ga.abs() <= tol || ga > 0.0 {
        return Ok(Some(a));
    }
    // Π fell up to lo; past the root at a it may have risen again.
    crate::roots::illinois(lo, g_lo, a, ga, tol, 0.0, LS_EVALS - evals, g).map(Some)
}

/// The Hookean all-contacts-bilateral displacement: Bᵀ K̃ B u = −F̃ (every
/// contact carrying tension or compression), to 1e-6 relative. Returns u
/// and the Krylov iterations. Collective.
fn bilateral(dual: &Dual, h: &mut Mat) -> Result<(Vector, u64)> {
    let delta = dual.op.contact_vec()?;
    // A tiny regularisation keeps mechanisms of the bilateral truss solvable.
    dual.hessian(&delta, Weights::Bilateral, 0.0, 1e-8, h)?;
    let mut ksp = Ksp::new(dual.comm)?;
    ksp.set_options_prefix(PREFIX)?;
    ksp.set_operators(h, h)?;
    ksp.set_type("cg")?;
    ksp.set_pc_type("jacobi")?;
    ksp.set_tolerances(Some(1e-6), None, None, Some(10_000))?;
    ksp.set_from_options()?;
    let mut rhs = dual.ft.try_clone()?;
    rhs.scale(-1.0)?;
    let mut u = dual.ft.duplicate()?;
    u.zero()?;
    ksp.solve(&rhs, &mut u)?;
    let its = ksp.iteration_number()?.max(0) as u64;
    Ok((u, its))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Newton step at which [`stagnant`] stops a solve, if any.
    fn stop(norms: &[f64]) -> Option<usize> {
        (1..=norms.len()).find(|&n| stagnant(&norms[..n])).map(|n| n - 1)
    }

    /// ‖∇Π‖ of measured solves (2 ranks): a Tresca round on a settled
    /// 10⁴-sphere pack creeps after step 9 and stops at 39 (it ran to the
    /// 100-step limit); a solve of the 500-grain pour with plateaus goes on
    /// to converge at step 62.
    #[test]
    fn newton_stops_when_the_gradient_has_not_halved_in_30_steps() {
        let creeping = [
            28.6, 18.4, 14.0, 10.4, 8.28, 4.73, 9.59, 5.6, 4.22, 3.51, 2.9, 2.68, 2.47, 2.44, 2.3, 2.26, 2.3, 2.2, 2.2, 2.27, 2.24, 2.15, 2.15, 2.13, 2.2, 2.2, 2.11, 2.1, 2.16, 2.07,
            2.07, 2.16, 2.11, 2.05, 2.04, 2.04, 2.1, 2.12, 2.02, 2.02, 2.05, 2.01, 2.08, 2.11, 2.09,
        ];
        assert_eq!(stop(&creeping), Some(39));
        let converging = [
            1.7, 0.61, 0.41, 0.27, 0.2, 0.2, 0.17, 0.17, 0.11, 0.18, 0.15, 0.24, 0.14, 0.18, 0.069, 0.099, 0.056, 0.1, 0.069, 0.08, 0.048, 0.034, 0.069, 0.045, 0.14, 0.13, 0.048, 0.032,
            0.063, 0.06, 0.068, 0.039, 0.028, 0.02, 0.068, 0.12, 0.09, 0.044, 0.028, 0.017, 0.15, 0.13, 0.064, 0.029, 0.0077, 0.0077, 0.011, 0.0072, 0.0062, 0.014, 0.0047, 0.0032,
            0.0023, 0.0021, 0.0032, 0.0019, 0.00061, 0.00013, 2.9e-05, 4e-06, 3.8e-07, 1.3e-08, 8.5e-12,
        ];
        assert_eq!(stop(&converging), None);
    }

    /// Runs [`critical_step`] on g, returning α, g(α) and the evaluations;
    /// α must be the last point evaluated or one evaluated before.
    fn search(g: impl Fn(f64) -> f64) -> (Option<f64>, f64, Vec<f64>) {
        let mut seen = Vec::new();
        let a = critical_step(g(0.0), |a| {
            seen.push(a);
            Ok(g(a))
        })
        .unwrap();
        if let Some(a) = a {
            assert!(seen.contains(&a), "{a} not evaluated");
        }
        (a, a.map_or(f64::NAN, &g), seen)
    }

    /// g(α) = ∇Π(x − α y)·y of a convex Π is non-increasing and piecewise
    /// linear for Hooke's springs: the step lands within 10 % of g(0) of
    /// its root past a steep kink (14 evaluations; plain false position
    /// creeps up from the left and needs 37), far beyond α = 1, on a line
    /// (one false-position step), and not at all where y does not descend.
    #[test]
    fn the_line_search_finds_the_root_of_the_directional_derivative() {
        let kink = |a: f64| 1.0 - 100.0 * (a - 0.5).max(0.0);
        let (a, ga, seen) = search(kink);
        assert!(ga.abs() <= LS_TOL, "α = {a:?}: g = {ga}");
        assert!(seen.len() <= 16, "{} evaluations", seen.len());
        let far = |a: f64| 1.0 - a / 100.0;
        let (a, ga, seen) = search(far);
        assert!((a.unwrap() - 100.0).abs() < 1e-9 && ga.abs() < 1e-12);
        assert_eq!(seen, [1.0, 4.0, 16.0, 64.0, 256.0, a.unwrap()]);
        let steps = |a: f64| 2.0 - (a - 0.3).max(0.0) - 3.0 * (a - 0.9).max(0.0) - 5.0 * (a - 1.2).max(0.0);
        let (_, ga, _) = search(steps);
        assert!(ga.abs() <= 0.2);
        assert_eq!(search(|a| -1.0 - a).0, None);
    }
}
