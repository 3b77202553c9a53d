//! CD, step 3b: APGD on the QP (22), min ½ fᵀNf + pᵀf s.t. f ≥ 0
//! (Mazhar, Heyn, Negrut, Tasora 2015, Algorithm "APGD"): Nesterov
//! acceleration, step 1/L with L from a backtracking Lipschitz estimate
//! (doubled until the quadratic upper bound holds, relaxed by 0.9 after each
//! iteration), gradient restart when gᵀ(f_{k+1} − f_k) > 0.
//!
//! Distributed on PETSc vectors: the projection is local, dot products and
//! norms are collective. Because N is linear, N y is updated from N f_k and
//! N f_{k+1} without another apply, so an iteration costs one N apply (plus
//! one per backtrack).
//!
//! Stopping rule (shared with PGS): `r = max_i |min(f_i, (Nf + p)_i)| ≤
//! tol · max(‖p‖∞, 1e-300)` over the active contacts, i.e. f ≥ 0 holds
//! exactly (projection), Nf + p ≥ −r and the complementarity gap of each
//! contact is at most r in the min sense. The iterate with the smallest r is
//! returned.
use super::operator::ContactOperator;
use crate::parallel::Comm;
use crate::petsc::{NormType, Result, Vector};

/// How a contact solve ended.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QpResult {
    /// Iterations (APGD steps or PGS sweeps) taken.
    pub iterations: u64,
    /// Final residual `max |min(f, Nf + p)|`.
    pub residual: f64,
    /// The threshold the residual was compared with.
    pub threshold: f64,
    pub converged: bool,
}

/// The stopping threshold `tol · max(‖p‖∞, tiny)`. Collective.
pub fn threshold(p: &Vector, tol: f64) -> Result<f64> {
    Ok(tol * p.norm(NormType::Infinity)?.max(1e-300))
}

/// Solves (22) in place: `f` holds the warm start on entry (projected first)
/// and the solution on exit. Collective.
pub fn apgd(comm: &Comm, op: &mut ContactOperator, p: &Vector, f: &mut Vector, tol: f64, max_it: u32) -> Result<QpResult> {
    let thr = threshold(p, tol)?;
    op.project(f)?;
    let mut x = f.try_clone()?;
    let mut nx = op.contact_vec()?;
    op.apply_n(&x, &mut nx)?;
    let mut r = op.residual(comm, &x, &nx, p)?;
    if r <= thr {
        return Ok(QpResult { iterations: 0, residual: r, threshold: thr, converged: true });
    }
    // Lipschitz estimate ‖N d‖/‖d‖ on d = 1 over the active contacts
    // (a lower bound on the largest eigenvalue; backtracking raises it).
    let mut d = op.contact_vec()?;
    d.set(1.0)?;
    op.project(&mut d)?;
    let mut nd = op.contact_vec()?;
    op.apply_n(&d, &mut nd)?;
    let dn = d.norm(NormType::Two)?;
    let mut lip = if dn > 0.0 { nd.norm(NormType::Two)? / dn } else { 1.0 };
    if !(lip.is_finite() && lip > 0.0) {
        lip = 1.0;
    }
    let mut best = x.try_clone()?;
    let mut best_r = r;
    let mut y = x.try_clone()?;
    let mut ny = nx.try_clone()?;
    let mut xn = op.contact_vec()?;
    let mut nxn = op.contact_vec()?;
    let mut g = op.contact_vec()?;
    let mut theta = 1.0f64;
    let mut it = 0u64;
    let mut converged = false;
    while it < max_it as u64 {
        it += 1;
        g.waxpy(1.0, &ny, p)?;
        let obj_y = 0.5 * y.dot(&ny)? + p.dot(&y)?;
        let mut tries = 0;
        loop {
            xn.waxpy(-1.0 / lip, &g, &y)?;
            op.project(&mut xn)?;
            op.apply_n(&xn, &mut nxn)?;
            let obj_x = 0.5 * xn.dot(&nxn)? + p.dot(&xn)?;
            d.waxpy(-1.0, &y, &xn)?;
            let bound = obj_y + g.dot(&d)? + 0.5 * lip * d.dot(&d)?;
            let slack = 1e-13 * (obj_y.abs() + obj_x.abs());
            tries += 1;
            if obj_x <= bound + slack || tries > 60 {
                break;
            }
            lip *= 2.0;
        }
        let theta_n = 0.5 * (-theta * theta + theta * (theta * theta + 4.0).sqrt());
        let beta = theta * (1.0 - theta) / (theta * theta + theta_n);
        r = op.residual(comm, &xn, &nxn, p)?;
        if r < best_r {
            best_r = r;
            best.copy_from(&xn)?;
        }
        if r <= thr {
            converged = true;
            break;
        }
        // Restart when the step goes against the gradient.
        d.waxpy(-1.0, &x, &xn)?;
        if g.dot(&d)? > 0.0 {
            y.copy_from(&xn)?;
            ny.copy_from(&nxn)?;
            theta = 1.0;
        } else {
            // y = xn + β (xn − x), N y likewise (N is linear).
            y.waxpy(beta, &d, &xn)?;
            d.waxpy(-1.0, &nx, &nxn)?;
            ny.waxpy(beta, &d, &nxn)?;
            theta = theta_n;
        }
        std::mem::swap(&mut x, &mut xn);
        std::mem::swap(&mut nx, &mut nxn);
        lip *= 0.9;
    }
    f.copy_from(&best)?;
    Ok(QpResult { iterations: it, residual: best_r, threshold: thr, converged })
}
