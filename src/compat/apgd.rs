//! Generic APGD on PETSc vectors: min φ(x) over a convex set with a cheap
//! projection, φ convex and C¹, given by a closure returning φ(x) and ∇φ(x).
//!
//! Why two APGDs: [`crate::cd::apgd`] is specialised to the CD QP
//! ½fᵀNf + pᵀf — N is linear, so N y is updated from N x without another
//! apply, and its stopping rule is the LCP residual min(f, Nf + p). The
//! augmented-Lagrangian subproblems of the compatibility solve are not
//! quadratic for p ≠ 2 (f^{p/(p−1)}), so this version evaluates the
//! objective and gradient through a closure and stops on the projected
//! gradient ‖x − P(x − ∇φ(x))‖∞. The structure is the same: Nesterov
//! acceleration, backtracking on the Lipschitz estimate L (doubled until the
//! quadratic upper bound holds, relaxed by 0.9 after each step), gradient
//! restart when ∇φ(y)ᵀ(x_{k+1} − x_k) > 0, the best iterate returned.
//!
//! Distributed like CD: the closure and the projection act on this rank's
//! entries (and may be collective); norms and dots are collective.
use crate::petsc::{NormType, Result, Vector};

/// How a generic APGD solve ended.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ApgdResult {
    pub iterations: u64,
    /// Projected-gradient norm ‖x − P(x − ∇φ(x))‖∞ of the returned x.
    pub residual: f64,
    pub converged: bool,
}

/// Minimises φ from the start `x` (projected first); `x` holds the best
/// iterate on exit. `eval(x, g)` returns φ(x) and writes ∇φ(x) to `g`;
/// `project` maps onto the feasible set. `lip` carries the Lipschitz
/// estimate between calls. Collective.
pub fn apgd<E, P>(x: &mut Vector, mut eval: E, project: P, tol: f64, max_it: u64, lip: &mut f64, stop: &dyn Fn(u64) -> bool) -> Result<ApgdResult>
where
    E: FnMut(&Vector, &mut Vector) -> Result<f64>,
    P: Fn(&mut Vector) -> Result<()>,
{
    project(x)?;
    let mut gx = x.duplicate()?;
    let phi_x = eval(x, &mut gx)?;
    let mut scratch = x.duplicate()?;
    let mut r = pg_norm(x, &gx, &project, &mut scratch)?;
    if r <= tol {
        return Ok(ApgdResult { iterations: 0, residual: r, converged: true });
    }
    if !(lip.is_finite() && *lip > 0.0) {
        *lip = 1.0;
    }
    let mut best = x.try_clone()?;
    let mut best_r = r;
    let mut y = x.try_clone()?;
    let mut gy = gx;
    let mut phi_y = phi_x;
    // y == x with its gradient known (after a restart or at the start).
    let mut y_known = true;
    let mut xn = x.duplicate()?;
    let mut gxn = x.duplicate()?;
    let mut d = x.duplicate()?;
    let mut theta = 1.0f64;
    let mut it = 0u64;
    let mut converged = false;
    while it < max_it && !stop(it) {
        it += 1;
        if !y_known {
            phi_y = eval(&y, &mut gy)?;
        }
        let mut tries = 0;
        let phi_xn = loop {
            xn.waxpy(-1.0 / *lip, &gy, &y)?;
            project(&mut xn)?;
            let phi = eval(&xn, &mut gxn)?;
            d.waxpy(-1.0, &y, &xn)?;
            let bound = phi_y + gy.dot(&d)? + 0.5 * *lip * d.dot(&d)?;
            let slack = 1e-13 * (phi_y.abs() + phi.abs());
            tries += 1;
            if phi <= bound + slack || tries > 60 {
                break phi;
            }
            *lip *= 2.0;
        };
        r = pg_norm(&xn, &gxn, &project, &mut scratch)?;
        if r < best_r {
            best_r = r;
            best.copy_from(&xn)?;
        }
        if r <= tol {
            converged = true;
            break;
        }
        let theta_n = 0.5 * (-theta * theta + theta * (theta * theta + 4.0).sqrt());
        let beta = theta * (1.0 - theta) / (theta * theta + theta_n);
        d.waxpy(-1.0, x, &xn)?;
        if gy.dot(&d)? > 0.0 {
            // Restart: y = x_{k+1}, whose value and gradient are known.
            y.copy_from(&xn)?;
            gy.copy_from(&gxn)?;
            phi_y = phi_xn;
            y_known = true;
            theta = 1.0;
        } else {
            y.waxpy(beta, &d, &xn)?;
            y_known = false;
            theta = theta_n;
        }
        std::mem::swap(x, &mut xn);
        *lip *= 0.9;
    }
    x.copy_from(&best)?;
    Ok(ApgdResult { iterations: it, residual: best_r, converged })
}

/// ‖x − P(x − g)‖∞. Collective.
pub fn pg_norm<P: Fn(&mut Vector) -> Result<()>>(x: &Vector, g: &Vector, project: &P, scratch: &mut Vector) -> Result<f64> {
    scratch.waxpy(-1.0, g, x)?;
    project(scratch)?;
    scratch.aypx(-1.0, x)?;
    scratch.norm(NormType::Infinity)
}
