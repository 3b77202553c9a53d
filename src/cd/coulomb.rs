//! CD, step 3b with friction: the contact problem of [`super::friction`]
//! solved by nonsmooth Gauss–Seidel or APGD, for either law of `[solver] friction_law`.
//!
//! - "coulomb" (exact): APGD whose projection is the Coulomb map of
//!   [`super::friction::project_coulomb`] (f_n clamped, then f_t clipped to
//!   μ f_n): its fixed points are the exact law's solutions, |f_t| ≤ μ f_n
//!   with f_t against the sliding and sliding contacts not opening. The law
//!   is not a convex program, so nothing guarantees convergence: the solve
//!   stops on De Saxcé's residual and returns its best iterate. (Measured
//!   and not kept: a fixed point of Tresca problems, APGD over discs with
//!   μ f_n frozen per round; on a 2,500-sphere pour its rounds stalled near
//!   the threshold and some steps ran out of iterations where this map
//!   converged.)
//! - "cone": one QP over the friction cones (Anitescu–Tasora).
//!
//! Each round is solved by nonsmooth Gauss–Seidel on the same law
//! ([`super::pgs::pgs_friction`]; `method = "auto"`, the default, or
//! `"pgs"`) or by APGD as above (`method = "apgd"`).
//!
//! Static and dynamic coefficients: a contact that slid at the end of the
//! previous step starts with μ_d, one that stuck with μ_s; a contact that
//! slides in a solution with μ_s (|u_t| above [`SLIP`] × threshold) takes
//! μ_d and the step is solved again from there. Each contact switches at
//! most once per step, so the rounds end.
use super::apgd::{apgd, threshold, QpResult};
use super::friction::{Set, SLIP};
use super::operator::ContactOperator;
use crate::parallel::Comm;
use crate::petsc::{Result, Vector};
use crate::parallel::exchange::Layout;
use crate::scene::{FrictionLaw, PgsOrder};

/// Solves per step at most (each μ_s → μ_d switch costs one more).
const MAX_ROUNDS: u32 = 50;

/// The per-contact coefficients of one step.
pub struct Coefficients<'a> {
    pub mu_s: &'a [f64],
    pub mu_d: &'a [f64],
    /// The contact slid at the end of the previous step.
    pub sliding: &'a [bool],
}

/// How a frictional solve ended.
pub struct FrictionResult {
    /// Iterations summed over rounds; `residual` is the Coulomb (or cone)
    /// natural-map residual of the returned forces.
    pub qp: QpResult,
    /// APGD solves taken (1 + the rounds after μ_s → μ_d switches).
    pub rounds: u32,
    /// Per local contact: slides at the end of the step.
    pub sliding: Vec<bool>,
}

/// The solver of each round.
pub enum Inner<'a> {
    /// APGD, its metric scaled by the diagonal of N or not.
    Apgd { scaled: bool },
    /// Nonsmooth Gauss–Seidel ([`super::pgs::pgs_friction`]).
    Pgs { layout: &'a Layout, n_local_bodies: usize, order: PgsOrder, anderson: usize },
}

/// Solves the frictional contact problem in place (`f` holds the warm
/// start, 3 entries per contact). Collective.
#[allow(clippy::too_many_arguments)]
pub fn solve(comm: &Comm, op: &mut ContactOperator, p: &Vector, f: &mut Vector, coef: &Coefficients, law: FrictionLaw, inner: &Inner, tol: f64, max_it: u32) -> Result<FrictionResult> {
    let nc = op.n_local();
    let thr = threshold(p, tol)?;
    let mut mu: Vec<f64> = (0..nc).map(|i| if coef.sliding[i] { coef.mu_d[i] } else { coef.mu_s[i] }).collect();
    let mut switched: Vec<bool> = coef.sliding.to_vec();
    let mut nf = op.contact_vec()?;
    let mut iterations = 0u64;
    let mut rounds = 0;
    let (residual, converged) = loop {
        rounds += 1;
        let set = match law {
            FrictionLaw::Cone => Set::Cone(mu.clone()),
            FrictionLaw::Coulomb => Set::Coulomb(mu.clone()),
        };
        let left = (max_it as u64).saturating_sub(iterations).max(1) as u32;
        let (c, res) = match *inner {
            Inner::Apgd { scaled } => {
                let c = if scaled { op.constraint_scaled(set) } else { op.constraint(set) };
                let res = apgd(comm, op, &c, p, f, tol, left)?;
                (c, res)
            }
            Inner::Pgs { layout, n_local_bodies, order, anderson } => {
                let c = op.constraint(set);
                let res = super::pgs::pgs_friction(comm, op, layout, n_local_bodies, &c, p, f, tol, left, order, anderson)?;
                (c, res)
            }
        };
        iterations += res.iterations;
        op.apply_n(f, &mut nf)?;
        let (fv, nv, pv) = (f.view()?, nf.view()?, p.view()?);
        let r = crate::parallel::max_f64(comm, c.residual(&fv, &nv, &pv));
        // Slip is judged at a solution of the law with the present μ (a
        // round with frozen bounds slides where the bound is still short).
        let mut n_switch = 0u64;
        for i in 0..nc {
            if r <= thr && !switched[i] && mu[i] != coef.mu_d[i] && slip_speed(&nv, &pv, &op.row_act, op.rows, i) > SLIP * thr {
                (mu[i], switched[i]) = (coef.mu_d[i], true);
                n_switch += 1;
            }
        }
        let n_switch = crate::parallel::sum_u64(comm, n_switch);
        let out_of_budget = iterations >= max_it as u64 || rounds >= MAX_ROUNDS;
        if crate::parallel::signals::stopping() || (r <= thr && n_switch == 0) || out_of_budget {
            break (r, r <= thr && n_switch == 0);
        }
    };
    let sliding = {
        let (nv, pv) = (nf.view()?, p.view()?);
        (0..nc).map(|i| slip_speed(&nv, &pv, &op.row_act, op.rows, i) > SLIP * thr).collect()
    };
    Ok(FrictionResult { qp: QpResult { iterations, residual, threshold: thr, converged, ..Default::default() }, rounds, sliding })
}

/// |u_t| of contact `i` from N f and p.
fn slip_speed(nf: &[f64], p: &[f64], act: &[f64], rows: usize, i: usize) -> f64 {
    let t = |k: usize| (nf[rows * i + k] + p[rows * i + k]) * act[rows * i + k];
    super::friction::norm2(t(1), t(2))
}
