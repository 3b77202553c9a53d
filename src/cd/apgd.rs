//! CD, step 3b: APGD on the QP (22), min ½ fᵀNf + pᵀf s.t. f ≥ 0, or over
//! a frictional set of [`super::friction`] (the Coulomb map or the cone)
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
//! contact is at most r in the min sense; with friction, the largest
//! natural-map residual |f − P(f − (Nf + p))| of a contact. The iterate
//! with the smallest r is returned.
//!
//! MPRGP (Dostál's conjugate gradients with proportioning and projections,
//! Jacobi-scaled, expansion by the projected CG step) was measured on the
//! settled 10⁴-sphere pack and not kept: 600–700 steps a solve, ~450 of
//! them CG steps on the free face, against APGD's 570–870 iterations, and
//! 1.6× APGD's time. The face itself is ill-conditioned, not the active
//! set hard to find.
use super::friction::{Constraint, Set};
use super::operator::ContactOperator;
use crate::parallel::Comm;
use crate::petsc::{NormType, Result, Vector};

/// How a contact solve ended.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QpResult {
    /// Iterations (APGD steps, PGS sweeps or Newton steps) taken.
    pub iterations: u64,
    /// Krylov iterations inside the Newton steps (0 for APGD and PGS).
    pub linear: u64,
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
///
/// One iteration is one N apply, one local pass and two reductions (a sum
/// of three terms and the residual's max): N is linear, so the Lipschitz
/// test f(x⁺) ≤ f(y) + gᵀd + ½L‖d‖² reads dᵀ(N x⁺ − N y) ≤ L‖d‖² with
/// d = x⁺ − y, which needs neither objective value and has no cancellation.
pub fn apgd(comm: &Comm, op: &mut ContactOperator, c: &Constraint, p: &Vector, f: &mut Vector, tol: f64, max_it: u32) -> Result<QpResult> {
    let thr = threshold(p, tol)?;
    c.project(&mut f.view_mut()?);
    let mut x = f.try_clone()?;
    let mut nx = op.contact_vec()?;
    op.apply_n(&x, &mut nx)?;
    let mut r = op.residual(comm, c, &x, &nx, p)?;
    if r <= thr {
        return Ok(QpResult { iterations: 0, residual: r, threshold: thr, converged: true, ..Default::default() });
    }
    // No diagonal scaling: from f = 0 the unscaled iteration picks the
    // minimum-norm forces of an indeterminate pack (the paper's Fig. 8 APGD
    // result), which a metric diag(N) would change.
    let act = &c.act;
    let normal = matches!(c.set, Set::Normal);
    let mut lip = lipschitz_estimate(comm, op, act, c.scale.as_deref())?;
    let mut best = x.try_clone()?;
    let mut best_r = r;
    let mut y = x.try_clone()?;
    let mut ny = nx.try_clone()?;
    let mut xn = op.contact_vec()?;
    let mut nxn = op.contact_vec()?;
    let mut theta = 1.0f64;
    let mut it = 0u64;
    let mut converged = false;
    while it < max_it as u64 {
        if crate::parallel::signals::agreed_at(comm, it) {
            break;
        }
        it += 1;
        // [dᵀ(N x⁺ − N y), ‖d‖², gᵀ(x⁺ − x)] of the accepted trial.
        let mut sums: [f64; 3];
        let mut tries = 0;
        loop {
            {
                let (yg, nyg, pg, mut xg) = (y.view()?, ny.view()?, p.view()?, xn.view_mut()?);
                let inv = 1.0 / lip;
                // x⁺ = P(y − g/L), g = N y + p (the projection fused for f ≥ 0).
                if let Some(sc) = &c.scale {
                    for ((((x, y), ny), p), s) in xg.iter_mut().zip(yg.iter()).zip(nyg.iter()).zip(pg.iter()).zip(sc) {
                        *x = y - (ny + p) * (inv * s);
                    }
                    c.project(&mut xg);
                } else if normal {
                    for ((((x, y), ny), p), a) in xg.iter_mut().zip(yg.iter()).zip(nyg.iter()).zip(pg.iter()).zip(act) {
                        *x = (y - (ny + p) * inv).max(0.0) * a;
                    }
                } else {
                    for (((x, y), ny), p) in xg.iter_mut().zip(yg.iter()).zip(nyg.iter()).zip(pg.iter()) {
                        *x = y - (ny + p) * inv;
                    }
                    c.project(&mut xg);
                }
            }
            op.apply_n(&xn, &mut nxn)?;
            let r_local;
            if normal {
                (sums, r_local) = trial_sums::<true>(&xn.view()?, &nxn.view()?, &y.view()?, &ny.view()?, &x.view()?, &p.view()?, act);
            } else {
                // The frictional residual is per contact (De Saxcé's or the
                // cone's natural map), not the sums' per-row lane.
                (sums, _) = trial_sums::<false>(&xn.view()?, &nxn.view()?, &y.view()?, &ny.view()?, &x.view()?, &p.view()?, act);
                r_local = c.residual(&xn.view()?, &nxn.view()?, &p.view()?);
            }
            if let Some(sc) = &c.scale {
                // ‖d‖² in the metric diag(1/s).
                let (xv, yv) = (xn.view()?, y.view()?);
                sums[1] = xv.iter().zip(yv.iter()).zip(sc).map(|((x, y), s)| if *s > 0.0 { (x - y) * (x - y) / s } else { 0.0 }).sum::<f64>();
            }
            crate::parallel::sum_f64s(comm, &mut sums);
            r = crate::parallel::max_f64(comm, r_local);
            tries += 1;
            if sums[0] <= lip * sums[1] * (1.0 + 1e-12) || tries > 60 {
                break;
            }
            lip *= 2.0;
        }
        let theta_n = 0.5 * (-theta * theta + theta * (theta * theta + 4.0).sqrt());
        let beta = theta * (1.0 - theta) / (theta * theta + theta_n);
        if r < best_r {
            best_r = r;
            best.copy_from(&xn)?;
        }
        if r <= thr {
            converged = true;
            break;
        }
        if sums[2] > 0.0 {
            // Restart when the step goes against the gradient.
            y.copy_from(&xn)?;
            ny.copy_from(&nxn)?;
            theta = 1.0;
        } else {
            // y = x⁺ + β (x⁺ − x), N y likewise (N is linear).
            let (xng, nxng, xg, nxg) = (xn.view()?, nxn.view()?, x.view()?, nx.view()?);
            let (mut yg, mut nyg) = (y.view_mut()?, ny.view_mut()?);
            for (((y, xn), x), (ny, (nxn, nx))) in yg.iter_mut().zip(xng.iter()).zip(xg.iter()).zip(nyg.iter_mut().zip(nxng.iter().zip(nxg.iter()))) {
                *y = xn + beta * (xn - x);
                *ny = nxn + beta * (nxn - nx);
            }
            theta = theta_n;
        }
        std::mem::swap(&mut x, &mut xn);
        std::mem::swap(&mut nx, &mut nxn);
        lip *= 0.9;
    }
    f.copy_from(&best)?;
    Ok(QpResult { iterations: it, residual: best_r, threshold: thr, converged, ..Default::default() })
}

/// The local parts of [dᵀ(N x⁺ − N y), ‖d‖², gᵀ(x⁺ − x)] with d = x⁺ − y,
/// g = N y + p, and with `RESIDUAL` of the residual max |min(x⁺, N x⁺ + p)|
/// over the active contacts (`act` is 1 or 0; 0 without). Four lanes of
/// sums break the add chains.
#[allow(clippy::too_many_arguments)]
fn trial_sums<const RESIDUAL: bool>(xn: &[f64], nxn: &[f64], y: &[f64], ny: &[f64], x: &[f64], p: &[f64], act: &[f64]) -> ([f64; 3], f64) {
    const L: usize = 4;
    let n = xn.len();
    let (nxn, y, ny, x, p, act) = (&nxn[..n], &y[..n], &ny[..n], &x[..n], &p[..n], &act[..n]);
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn terms<const R: bool>(xn: f64, nxn: f64, y: f64, ny: f64, x: f64, p: f64, act: f64) -> [f64; 4] {
        let d = xn - y;
        let r = if R { xn.min(nxn + p).abs() * act } else { 0.0 };
        [d * (nxn - ny), d * d, (ny + p) * (xn - x), r]
    }
    #[inline(always)]
    fn add(a: &mut [f64; 4], t: [f64; 4]) {
        a[0] += t[0];
        a[1] += t[1];
        a[2] += t[2];
        a[3] = if t[3] > a[3] { t[3] } else { a[3] };
    }
    let mut acc = [[0.0f64; 4]; L];
    let full = n - n % L;
    for c in (0..full).step_by(L) {
        for (l, a) in acc.iter_mut().enumerate() {
            let k = c + l;
            add(a, terms::<RESIDUAL>(xn[k], nxn[k], y[k], ny[k], x[k], p[k], act[k]));
        }
    }
    for k in full..n {
        add(&mut acc[0], terms::<RESIDUAL>(xn[k], nxn[k], y[k], ny[k], x[k], p[k], act[k]));
    }
    let sum = |j: usize| acc.iter().map(|a| a[j]).sum::<f64>();
    ([sum(0), sum(1), sum(2)], acc.iter().fold(0.0, |m, a| m.max(a[3])))
}

/// ‖N d‖/‖d‖ on d = 1 over the active contacts (`act`), in the metric of
/// `scale` if any (‖S^½ N S^½ 1‖/‖1‖): a lower bound on the largest
/// eigenvalue, raised by backtracking. Collective.
fn lipschitz_estimate(comm: &Comm, op: &mut ContactOperator, act: &[f64], scale: Option<&[f64]>) -> Result<f64> {
    let root: Vec<f64> = match scale {
        Some(s) => s.iter().zip(act).map(|(s, a)| s.sqrt() * a).collect(),
        None => act.to_vec(),
    };
    let mut d = op.contact_vec()?;
    d.view_mut()?.copy_from_slice(&root);
    let mut nd = op.contact_vec()?;
    op.apply_n(&d, &mut nd)?;
    let mut s = [nd.view()?.iter().zip(&root).zip(act).map(|((x, r), a)| if scale.is_some() { (x * r) * (x * r) } else { x * x * a }).sum::<f64>(), act.iter().sum::<f64>()];
    crate::parallel::sum_f64s(comm, &mut s);
    let lip = if s[1] > 0.0 { (s[0] / s[1]).sqrt() } else { 1.0 };
    Ok(if lip.is_finite() && lip > 0.0 { lip } else { 1.0 })
}
