//! `[compatibility] method = "apgd"`: the accelerated gradient of the CD
//! solver applied to the smooth, unconstrained dual Π(u) ([`super::dual`])
//! — no projection, no outer augmented-Lagrangian loop. Preconditioned by
//! the diagonal D = diag(Bᵀ K̃ B) of the bilateral Hessian (steps
//! x = y − D⁻¹∇Π(y)/L), Nesterov momentum, backtracking on L (doubled until
//! the quadratic bound in the D-norm holds, relaxed by 0.9 after a step),
//! gradient restart when ∇Π(y)ᵀ(x_{k+1} − x_k) > 0. Stops on the
//! feasibility ‖∇Π‖₂/‖F̃‖₂ ≤ tol of the new iterate; returns the best.
//! Distributed like B (dots and norms are collective).
use super::dual::{Dual, DualResult};
use crate::petsc::{Result, Vector};

/// Minimises Π from `u0` (scaled; `None`: zero) in at most `max_it`
/// iterations. Collective.
pub fn solve(dual: &Dual, u0: Option<Vector>, tol: f64, max_it: u64) -> Result<DualResult> {
    let mut x = match u0 {
        Some(u) => u,
        None => {
            let mut u = dual.diag.duplicate()?;
            u.zero()?;
            u
        }
    };
    let (mut delta, mut f) = (dual.op.contact_vec()?, dual.op.contact_vec()?);
    let mut dinv = dual.diag.duplicate()?;
    dinv.set(1.0)?;
    {
        let dv = dual.diag.view()?;
        let mut iv = dinv.view_mut()?;
        for j in 0..dv.len() {
            iv[j] = 1.0 / dv[j];
        }
    }
    let mut gx = x.duplicate()?;
    dual.value_and_gradient(&x, &mut delta, &mut f, &mut gx)?;
    let mut best = x.try_clone()?;
    let mut best_r = dual.feasibility(&gx)?;
    if best_r <= tol {
        return dual.finish(best, 0, 0, tol);
    }
    let mut lip = 1.0f64;
    let mut y = x.try_clone()?;
    let mut gy = gx.duplicate()?;
    let (mut xn, mut gxn, mut d, mut s) = (x.duplicate()?, x.duplicate()?, x.duplicate()?, x.duplicate()?);
    let mut theta = 1.0f64;
    let mut it = 0u64;
    while it < max_it && !crate::parallel::signals::agreed_at(dual.comm, it) {
        it += 1;
        let phi_y = dual.value_and_gradient(&y, &mut delta, &mut f, &mut gy)?;
        // s = D⁻¹ ∇Π(y): the preconditioned descent direction.
        s.pointwise_mult(&dinv, &gy)?;
        let gs = gy.dot(&s)?;
        let mut tries = 0;
        loop {
            xn.waxpy(-1.0 / lip, &s, &y)?;
            let phi = dual.value_and_gradient(&xn, &mut delta, &mut f, &mut gxn)?;
            // Quadratic bound in the D-norm along −s/L: φ_y − gᵀs/L + gᵀs/(2L).
            let bound = phi_y - 0.5 * gs / lip;
            tries += 1;
            if phi <= bound + 1e-13 * (phi_y.abs() + phi.abs()) || tries > 60 {
                break;
            }
            lip *= 2.0;
        }
        let r = dual.feasibility(&gxn)?;
        if r < best_r {
            best_r = r;
            best.copy_from(&xn)?;
        }
        if r <= tol {
            break;
        }
        let theta_n = 0.5 * (-theta * theta + theta * (theta * theta + 4.0).sqrt());
        let beta = theta * (1.0 - theta) / (theta * theta + theta_n);
        d.waxpy(-1.0, &x, &xn)?;
        if gy.dot(&d)? > 0.0 {
            // Restart from the new iterate.
            y.copy_from(&xn)?;
            theta = 1.0;
        } else {
            y.waxpy(beta, &d, &xn)?;
            theta = theta_n;
        }
        std::mem::swap(&mut x, &mut xn);
        lip *= 0.9;
    }
    dual.finish(best, it, 0, tol)
}
