//! CD, step 3b (alternative, `method = "newton"`): the frictionless LCP
//! (21), 0 ≤ f ⊥ N f + p ≥ 0, by PETSc's variational-inequality Newton
//! methods: `vinewtonrsls` (reduced-space active set, the default) or
//! `vinewtonssls` (semismooth, Fischer–Burmeister), with F(f) = N f + p,
//! the constant Jacobian N and the bounds f ≥ 0.
//!
//! N = Δt B M⁻¹ Bᵀ is assembled explicitly, as the Galerkin product
//! Pᵀ (Δt M⁻¹) P with P = Bᵀ (`MatPtAP`): the rows of N follow B's contact
//! layout, and a body owned by another rank couples its contacts there
//! exactly as B's columns do (no ghost bookkeeping of our own). Each Newton
//! step solves a reduced (rsls) or full (ssls) linear system by KSP: CG
//! preconditioned by block Jacobi with ICC(0) in each rank's block by
//! default (GMRES for ssls, whose matrix is not symmetric).
//!
//! N is only positive semidefinite on a hyperstatic pack (more contacts than
//! the bodies' DOFs): the reduced system N_II d = −F_I is then singular, and
//! consistent only when the gaps are; CG still converges on a consistent
//! singular system, and the Newton step's inexact solve (relative 10⁻¹ by
//! default, the fewest Krylov iterations on the packs measured) does not
//! need more. A solve that stops short of the tolerance (its line search
//! failed, or [`MAX_NEWTON`] steps) is finished by APGD from where it
//! stopped (in [`super`]).
//!
//! Forces are scaled inside, x = f/s with s = ‖p‖∞ / max N_ii (x = O(1))
//! or smaller: the VI methods take x ≤ 10⁻⁸ for the bound, and s is kept
//! small enough (below 10⁵ tol ‖p‖∞ / max N_ii and 10⁵ tol ‖p‖∞) that
//! such a force cannot hold the residual above the threshold. The stopping rule
//! is APGD's ([`super::apgd`]): max |min(f, N f + p)| ≤ tol · ‖p‖∞ over the
//! active contacts, evaluated at every residual evaluation. A contact whose
//! row of B is zero keeps f = 0 (an identity row with F = f).
//!
//! Options prefix `cd_`: `-cd_snes_type vinewtonssls`, `-cd_ksp_type`,
//! `-cd_pc_type gamg`, `-cd_snes_monitor`, ... after `--`.
use super::apgd::{threshold, QpResult};
use super::friction::{Constraint, Set};
use super::operator::ContactOperator;
use crate::parallel::Comm;
use crate::petsc::snes::INFINITY;
use crate::petsc::{InsertMode, Mat, NormType, PetscInt, Result, Snes, Vector};
use std::cell::Cell;

/// Options prefix of the Newton solver's PETSc objects.
pub const PREFIX: &str = "cd_";

/// Relative tolerance of each Newton step's linear solve.
const KSP_RTOL: f64 = 1e-1;

/// Largest 10⁻⁸ · s (the VI methods' absolute tolerance of a bound in the
/// scaled unknowns) as a fraction of the stopping threshold tol · ‖p‖∞,
/// for f and for its effect on N f: a force the active-set test takes for
/// zero then cannot hold the residual above the threshold.
const SMALL: f64 = 1e8 / 1e3;

/// Newton steps after which a solve is taken to stagnate (APGD finishes it).
pub const MAX_NEWTON: u32 = 100;

/// s · N as a distributed AIJ matrix in B's contact layout, plus an
/// identity row for each contact whose row of B is zero. Collective.
pub fn assemble(comm: &Comm, op: &ContactOperator, s: f64) -> Result<Mat> {
    let n_owned = op.n_owned;
    let first = op.body_vec()?.ownership_range()?.start;
    // s Δt M⁻¹ of the owned bodies: the diagonal of the translational
    // block and the rotational 3×3 block (exact zeros left out).
    let (mut ii, mut jj, mut vv) = (Vec::with_capacity(12 * n_owned), Vec::with_capacity(12 * n_owned), Vec::with_capacity(12 * n_owned));
    for (b, m) in op.minv.iter().take(n_owned).enumerate() {
        let base = first + 6 * b as PetscInt;
        let mut push = |r: usize, c: usize, v: f64| {
            if v != 0.0 {
                ii.push(base + r as PetscInt);
                jj.push(base + c as PetscInt);
                vv.push(s * op.dt * v);
            }
        };
        for k in 0..3 {
            push(k, k, m.lin[k]);
        }
        for r in 0..3 {
            for c in 0..3 {
                push(3 + r, 3 + c, m.rot[(r, c)]);
            }
        }
    }
    let local = 6 * n_owned as PetscInt;
    let mut minv = Mat::create(comm, "aij", 1, local, local)?;
    minv.set_preallocation_coo(&ii, &jj)?;
    minv.set_values_coo(&vv, InsertMode::Insert)?;
    let bt = op.b.transpose()?;
    let mut n = minv.ptap(&bt)?;
    let inactive: Vec<PetscInt> = (0..op.n_local()).filter(|&i| !op.active[i]).map(|i| op.row_offset + i as PetscInt).collect();
    if crate::parallel::sum_u64(comm, inactive.len() as u64) > 0 {
        let rows = op.n_local() as PetscInt;
        let mut d = Mat::create(comm, "aij", 1, rows, rows)?;
        d.set_preallocation_coo(&inactive, &inactive)?;
        d.set_values_coo(&vec![1.0; inactive.len()], InsertMode::Insert)?;
        n.axpy(1.0, &d)?;
    }
    Ok(n)
}

/// Solves (21) in place: `f` holds the warm start on entry and the
/// solution on exit. `iterations` counts Newton steps, `linear` their
/// Krylov iterations. Collective.
pub fn newton(comm: &Comm, op: &mut ContactOperator, p: &Vector, f: &mut Vector, tol: f64, max_it: u32) -> Result<QpResult> {
    let thr = threshold(p, tol)?;
    let c = op.constraint(Set::Normal);
    // Force scale: ‖p‖∞ / max N_ii.
    let diag_max = (0..op.n_local()).filter(|&i| op.active[i]).map(|i| op.diagonal(i)).fold(0.0, f64::max);
    let diag_max = crate::parallel::max_f64(comm, diag_max);
    let pmax = p.norm(NormType::Infinity)?;
    let s = if diag_max > 0.0 && pmax > 0.0 { (pmax / diag_max).min(SMALL * tol * pmax / diag_max).min(SMALL * tol * pmax) } else { 1.0 };
    let a = assemble(comm, op, s)?;
    // p with zero on the inactive rows (there F = f).
    let mut ph = p.try_clone()?;
    for (v, act) in ph.view_mut()?.iter_mut().zip(&c.act) {
        *v *= act;
    }
    let mut x = f.try_clone()?;
    {
        let mut xv = x.view_mut()?;
        for (v, act) in xv.iter_mut().zip(&c.act) {
            *v = (*v / s).max(0.0) * act;
        }
    }
    let x0 = x.try_clone()?;
    // The natural-map residual (in force units) of the last residual
    // evaluation: the current iterate when SNES tests convergence.
    let last_r = Cell::new(f64::INFINITY);
    let (lower, mut upper, r) = (op.contact_vec()?, op.contact_vec()?, op.contact_vec()?);
    upper.set(INFINITY)?;
    let act = &c.act;
    // out = A x + p̂ (F of the VI, the QP's gradient) and the natural-map
    // residual there, in force units, over every rank.
    let natural = |x: &Vector, out: &mut Vector| -> Result<f64> {
        a.mult(x, out)?;
        out.axpy(1.0, &ph)?;
        let r = {
            let (xv, fv) = (x.view()?, out.view()?);
            xv.iter().zip(fv.iter()).zip(act).map(|((x, f), a)| (s * x).min(*f).abs() * a).fold(0.0, f64::max)
        };
        Ok(crate::parallel::max_f64(comm, r))
    };
    if let Some(kind) = crate::petsc::options::get(&format!("-{PREFIX}tao_type"))? {
        // TAO's bound-constrained minimisation of ½ xᵀ A x + phᵀ x, x ≥ 0.
        let mut ax = op.contact_vec()?;
        let mut tao = crate::petsc::tao::Tao::new(comm, &kind)?;
        tao.set_options_prefix(PREFIX)?;
        tao.set_objective_and_gradient(|x: &Vector, g: &mut Vector| -> Result<f64> {
            a.mult(x, g)?;
            let quad = 0.5 * x.dot(g)?;
            g.axpy(1.0, &ph)?;
            Ok(quad + x.dot(&ph)?)
        })?;
        tao.set_constant_hessian(&a)?;
        tao.set_variable_bounds(&lower, &upper)?;
        tao.set_tolerances(0.0, 0.0, 0.0, max_it.min(10 * MAX_NEWTON) as PetscInt)?;
        tao.set_extra_convergence(|x: &Vector| -> Result<bool> { Ok(natural(x, &mut ax)? <= thr || crate::parallel::signals::agreed(comm)) })?;
        tao.set_from_options()?;
        let res = tao.solve(&mut x);
        let iterations = tao.iteration_number().unwrap_or(0).max(0) as u64;
        let linear = tao.linear_iterations().unwrap_or(0).max(0) as u64;
        let reason = tao.converged_reason().unwrap_or(0);
        drop(tao);
        res?;
        let residual = unscaled(comm, op, &c, &a, s, &x, p, f)?;
        log::debug!("cd tao: {kind} stopped ({reason}) after {iterations} iterations, {linear} Krylov, residual {residual:e} (threshold {thr:e})");
        return Ok(QpResult { iterations, linear, residual, threshold: thr, converged: residual <= thr });
    }
    // ICC(0) in each rank's block: a third of Jacobi's CG iterations on the
    // settled 2,500-sphere pack, and faster overall (BENCHMARKS.md).
    crate::petsc::options::set_default(&format!("-{PREFIX}sub_pc_type"), Some("icc"))?;
    let mut snes = Snes::new(comm)?;
    snes.set_options_prefix(PREFIX)?;
    let kind = crate::petsc::options::get(&format!("-{PREFIX}snes_type"))?.unwrap_or_else(|| "vinewtonrsls".into());
    snes.set_type("vinewtonrsls")?;
    snes.set_function(Some(&r), |x: &Vector, out: &mut Vector| -> Result<()> {
        last_r.set(natural(x, out)?);
        Ok(())
    })?;
    // N is constant: the matrix PETSc holds is the Jacobian throughout.
    snes.set_jacobian(&a, None, |_x: &Vector, _a: &mut Mat, _p: Option<&mut Mat>| -> Result<()> { Ok(()) })?;
    snes.set_variable_bounds(&lower, &upper)?;
    // Only our test (and the iteration limit) stops it.
    snes.set_tolerances(Some(0.0), Some(0.0), Some(0.0), Some(max_it.min(MAX_NEWTON) as PetscInt), Some(PetscInt::MAX))?;
    {
        let mut ksp = snes.ksp()?;
        ksp.set_type(if kind == "vinewtonssls" { "gmres" } else { "cg" })?;
        ksp.set_pc_type("bjacobi")?;
        ksp.set_tolerances(Some(KSP_RTOL), None, None, Some(10_000))?;
    }
    snes.set_extra_convergence(|_it, _fnorm: f64| -> Result<bool> { Ok(last_r.get() <= thr || crate::parallel::signals::agreed(comm)) })?;
    snes.set_from_options()?;
    let res = snes.solve(None, &mut x);
    let iterations = snes.iteration_number().unwrap_or(0).max(0) as u64;
    let linear = snes.linear_iterations().unwrap_or(0).max(0) as u64;
    let reason = snes.converged_reason().map(|r| r.name).unwrap_or_default();
    drop(snes);
    res?;
    // The measure at the returned forces, not the cached one; a solve that
    // failed hands back the warm start if it ended further from a solution.
    let mut residual = unscaled(comm, op, &c, &a, s, &x, p, f)?;
    if residual > thr {
        log::debug!("cd newton: SNES stopped ({reason}) at residual {residual:e} (threshold {thr:e})");
        let mut f0 = f.duplicate()?;
        let r0 = unscaled(comm, op, &c, &a, s, &x0, p, &mut f0)?;
        if r0 < residual {
            f.copy_from(&f0)?;
            residual = r0;
        }
    }
    Ok(QpResult { iterations, linear, residual, threshold: thr, converged: residual <= thr })
}

/// Writes the forces f = s x (zero on inactive rows) into `f` and returns
/// their natural-map residual. Collective.
#[allow(clippy::too_many_arguments)]
fn unscaled(comm: &Comm, op: &ContactOperator, c: &Constraint, a: &Mat, s: f64, x: &Vector, p: &Vector, f: &mut Vector) -> Result<f64> {
    // A x = s N x = N f.
    let mut nf = op.contact_vec()?;
    a.mult(x, &mut nf)?;
    f.copy_from(x)?;
    for (v, act) in f.view_mut()?.iter_mut().zip(&c.act) {
        *v *= s * act;
    }
    op.residual(comm, c, f, &nf, p)
}
