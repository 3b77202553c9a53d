//! Compatible frictional forces: the dual Π(u) with the contacts'
//! tangential springs ([`super::dual::Tangential`]) solved as a sequence of
//! Tresca problems. Each round freezes the bound τ = μ f_n (and, for
//! p ≠ 2, the spring's k_t = κ f_n/δ, [`secant`]) at the previous round's forces,
//! minimises Π by Newton or APGD from the previous round's u, and stops
//! when the new bounds no longer change any tangential force by more than
//! the solve's tolerance: then f_t is the Coulomb return of the trial
//! spring force, |f_t| ≤ μ f_n, with equality only where the spring slides.
//!
//! μ_s and μ_d: a contact slides when its trial force exceeds μ_s f_n, or
//! μ_d f_n when it slid at the previous solve or round; a sliding contact
//! is bounded by μ_d f_n, the others by μ_s f_n.
//!
//! Contacts that slide in the CD step: in the rigid limit their spring is
//! at its bound along the slip whatever its history, so their tangential
//! force is CD's ratio f_t/f_n times their normal force
//! ([`super::cd_slip`]). As springs they would need CD's slip direction
//! exactly, which a spring with another history reaches only as |u| → ∞:
//! the steps of a pour in which grains collide and slide did not converge.
//!
//! Where it stands: on settled random packs (2,500 spheres, μ = 0.5) the
//! solves still do not converge, whether the first round takes CD's normal
//! forces or those of the stick network (which Newton solves in 11
//! steps), by Tresca rounds or the coupled Coulomb Newton, with the load
//! in one increment or in ten: a third of the contacts slide at a tenth of
//! the load already (without history the Hookean problem is homogeneous
//! in the load), an eighth at μ = 10. Augmented Lagrangians over the
//! forces (APGD onto the Tresca discs, or onto the associated Coulomb
//! cone) stall near feasibility 1e-3 at a fixed penalty with a third of
//! the contacts on their bound: the admissible forces of these packs have
//! almost no interior, so Π's infimum is approached only as |u| → ∞. On
//! the 10⁴-sphere pack an interior-point solve of the force form finds the
//! second round (bounds from the first round's f_n) infeasible, and no
//! admissible forces in the associated cone at μ/√(1+μ²): the pack stands
//! on nearly all of its friction. On the 10⁴-sphere pack of the frictional
//! pour at rest, a stiff explicit DEM loaded on the same geometry moves
//! five spheres by 0.1–0.2 mm at every stiffness from 100 to 6,400 N/m:
//! the forces do not exist there (the compatible-cd chapter).
use super::dual::{spring, Dual, DualResult, Tangential};
use crate::petsc::{Result, Vector};

/// Tresca rounds before a solve is reported as not converged.
pub const MAX_ROUNDS: u32 = 100;

/// How many Tresca rounds a solve may take.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    pub rounds: u32,
    /// Also stop (not converged) once the rounds' change of the tangential
    /// forces has not halved over the last [`STALL_ROUNDS`] rounds.
    pub stall: bool,
}

impl Limit {
    pub const FULL: Limit = Limit { rounds: MAX_ROUNDS, stall: false };
    /// APGD's rounds where Newton's solve stopped short
    /// ([`super::solve_dual`]). The landing step of tests/compat_friction.rs's
    /// pour converges in 17, the change falling by about half each round.
    /// Allowed [`MAX_ROUNDS`], the first 100 steps of that pour rescued 3
    /// of 63 steps (1,478 to 5,300 APGD iterations) while the others'
    /// changes stalled or grew, most of them for all 100 rounds: the pour
    /// took 207 s. With 20 rounds 94 s, and with the stall rule too 73 s.
    pub const RESCUE: Limit = Limit { rounds: 20, stall: true };
}

/// See [`Limit::stall`].
const STALL_ROUNDS: usize = 4;

/// Whether the rounds' changes (oldest first, the last just taken) have
/// stopped halving ([`Limit::stall`]).
fn stalled(changes: &[f64]) -> bool {
    let n = changes.len();
    n > STALL_ROUNDS && changes[n - 1] > 0.5 * changes[n - 1 - STALL_ROUNDS]
}

/// Tresca rounds before the coupled Newton takes over. On the n = 20
/// pyramid one round, then the coupled solve: μ = 0.3 in 26 Newton steps
/// (1.8 s), against 64 (2.1 s) when the rounds go on while each halves
/// the change; μ = 10 in 15 against 20. Coupled from the start (no
/// round): 12 and 11 Newton steps on the pyramid in about the same time
/// (GMRES with block ILU(1) throughout instead of CG), and the first 100
/// steps of tests/compat_friction.rs's 500-grain pour 63 short in 39.5 s
/// of compatibility against 64 in 29 s.
const SWITCH_AFTER: u32 = 1;

/// Feasibility to which the Tresca round before the coupled solve is
/// taken: only its bounds and starting point matter, the coupled solve
/// converges the forces. On the n = 20 pyramid at μ = 0.3 18 Newton steps
/// and 805 Krylov iterations against 24 and 1,038 with the round to the
/// solve's tolerance, at μ = 10 10 and 368 against 13 and 462; the first
/// 100 steps of tests/compat_friction.rs's 500-grain pour 26 short either
/// way, and the settled 10⁴-sphere pack's step the same (its round stalls
/// above 1e-3). At 1e-2: 16 and 726 on the pyramid, but 33 of those
/// steps short (the coupled solves start further out), also when a loose
/// round that changes no bound is finished as a Tresca round instead.
const LOOSE: f64 = 1e-3;

/// Smallest approach in k_t = κ k̃ δ^{p−2} ([`secant`]) when p < 2.
const DELTA_FLOOR: f64 = 1e-8;

/// The friction data of one compatible solve, per local contact.
pub struct Friction<'a> {
    pub mu_s: &'a [f64],
    pub mu_d: &'a [f64],
    /// Slid at the previous compatible solve.
    pub was_sliding: &'a [bool],
    /// k_t / k_n.
    pub kappa: f64,
    /// f_t / f_n of CD along (t1, t2) where the contact slides in the CD
    /// step ([`super::cd_slip`]), else `None`.
    pub slip: &'a [Option<[f64; 2]>],
}

/// How the rounds ended.
pub struct Rounds {
    pub result: DualResult,
    /// Solves in all: Tresca rounds and coupled Coulomb solves.
    pub rounds: u32,
    /// Contacts whose spring slides at the end.
    pub sliding: Vec<bool>,
    /// e' = s_el − B_t u: the elastic tangential displacement that the next
    /// solve's u = 0 stands for (scaled units, along t1, t2).
    pub anchor: Vec<[f64; 2]>,
}

/// k_t of contact `i` at normal force `f_n` (scaled): κ k̃ for p = 2, else
/// [`secant`] at the approach δ that carries f_n.
fn stiffness(dual: &Dual, kappa: f64, i: usize, f_n: f64) -> f64 {
    let (k, p) = (dual.k[i], dual.p);
    if p == 2.0 || k == 0.0 {
        return kappa * k;
    }
    let delta = approach(k, p, f_n.max(0.0));
    secant(k, p, kappa, if p < 2.0 { delta.max(DELTA_FLOOR) } else { delta })
}

/// The approach δ of a contact of stiffness `k` and exponent `p` that
/// carries `f_n` = k δ^{p−1}.
pub(super) fn approach(k: f64, p: f64, f_n: f64) -> f64 {
    (f_n / k).powf(1.0 / (p - 1.0))
}

/// The spring's tangential stiffness at the approach δ: κ f_n/δ = κ k δ^{p−2}.
/// Mindlin's law is incremental, df_t = κ ∂f_n/∂δ ds; one load increment
/// applied quasi-statically from an unloaded contact grows δ and s in
/// proportion (the problem is homogeneous in the load), and integrated
/// along that ramp it gives f_t = κ (f_n/δ) s, 1/(p−1) of the tangent
/// (2/3 for Hertz). Measured on the Hertzian n = 18 pyramid at μ = 0.43: a
/// stiff DEM with the incremental law ramped to rest (LAMMPS
/// `mindlin/force`) ends 0.14 % from these forces, and 5 % from those with
/// the tangent κ ∂f_n/∂δ as secant (LAMMPS `mindlin`, whose own ramp
/// ends 1.4 % from those); with that law the solver's solutions on
/// n = 18 and 20 ended near μ = 0.41, with this one it converges at 0.3.
pub(super) fn secant(k: f64, p: f64, kappa: f64, delta: f64) -> f64 {
    kappa * k * delta.powf(p - 2.0)
}

/// Solves the frictional dual from `u0` (scaled) with the elastic history
/// `anchor` (scaled) and the first bounds from `f_n0` (scaled normal forces:
/// CD's, or the interior point's it finishes from). `inner(dual, u0, tol)` is one solve (Newton or APGD) of the problem
/// `dual` holds, to the feasibility given. Tresca rounds first; with
/// `coupled` (Newton) after [`SWITCH_AFTER`] rounds (taken to [`LOOSE`]) the Coulomb problem is solved whole from there (τ = μ f_n(u) inside the Newton iterations),
/// again until the sliding contacts keep their μ and (p ≠ 2) the springs'
/// k_t at its forces changes no tangential force; within `limit`.
/// Collective.
#[allow(clippy::too_many_arguments)]
pub fn solve<S>(dual: &mut Dual, u0: Option<Vector>, anchor: Vec<[f64; 2]>, f_n0: &[f64], fr: &Friction, tol: f64, coupled: bool, limit: Limit, mut inner: S) -> Result<Rounds>
where
    S: FnMut(&Dual, Option<Vector>, f64) -> Result<DualResult>,
{
    let nc = dual.k.len();
    let mut sliding: Vec<bool> = (0..nc).map(|i| fr.was_sliding[i] || fr.slip[i].is_some()).collect();
    let mu_of = |sliding: bool, i: usize| if sliding { fr.mu_d[i] } else { fr.mu_s[i] };
    let mu: Vec<f64> = (0..nc).map(|i| mu_of(sliding[i], i)).collect();
    dual.friction = Some(Tangential {
        anchor,
        tau: (0..nc).map(|i| mu[i] * f_n0[i].max(0.0)).collect(),
        kt: (0..nc).map(|i| stiffness(dual, fr.kappa, i, f_n0[i])).collect(),
        mu,
        slip: fr.slip.to_vec(),
        coupled: false,
    });
    let mut u = u0;
    let (mut iterations, mut linear, mut rounds) = (0u64, 0u64, 0u32);
    let mut delta = dual.op.contact_vec()?;
    let mut changes = Vec::new();
    loop {
        rounds += 1;
        let loose = coupled && rounds <= SWITCH_AFTER;
        let mut res = inner(dual, u.take(), if loose { tol.max(LOOSE) } else { tol })?;
        iterations += res.iterations;
        linear += res.linear;
        // The bounds and stiffnesses at this solve's forces, and how much
        // they would change its tangential forces.
        dual.approach(&res.u, &mut delta)?;
        let t = dual.friction.as_ref().expect("set above");
        let (mut tau, mut kt, mut mu) = (t.tau.clone(), t.kt.clone(), t.mu.clone());
        let mut change = 0.0f64;
        let mut switched = 0u64;
        {
            let dv = delta.view()?;
            for i in 0..nc {
                let f_n = res.f[3 * i] / dual.scale;
                let bt_u = [-dv[3 * i + 1], -dv[3 * i + 2]];
                let (s, f_old) = t.force(i, bt_u, f_n);
                kt[i] = stiffness(dual, fr.kappa, i, f_n);
                let trial = kt[i] * s[0].hypot(s[1]);
                let slides = fr.slip[i].is_some() || trial > fr.mu_s[i] * f_n.max(0.0) || (sliding[i] && trial > fr.mu_d[i] * f_n.max(0.0));
                switched += (slides != sliding[i] && fr.mu_s[i] != fr.mu_d[i]) as u64;
                sliding[i] = slides;
                mu[i] = mu_of(slides, i);
                tau[i] = mu[i] * f_n.max(0.0);
                let f_new = match fr.slip[i] {
                    Some(c) => [c[0] * f_n.max(0.0), c[1] * f_n.max(0.0)],
                    None => spring(t.anchor[i], tau[i], kt[i], bt_u).1,
                };
                change = change.max((f_new[0] - f_old[0]).hypot(f_new[1] - f_old[1]));
            }
        }
        let change = crate::parallel::max_f64(dual.comm, change);
        let switched = crate::parallel::sum_u64(dual.comm, switched);
        let stage = if t.coupled { "Coulomb" } else { "Tresca" };
        log::debug!("compatibility: {stage} solve {rounds}: {} iterations, tangential forces change by {change:e}, {switched} contacts change μ", res.iterations);
        let done = change <= tol && !loose && (!t.coupled || (switched == 0 && res.converged));
        // A coupled solve that did not move, or stalled, cannot be helped
        // by another from where it stopped. A Tresca round with the bounds
        // of a failed coupled solve's forces, then the coupled solve again
        // (at most 1 / 2 / 5 times a solve): 24 / 21 / 21 of the
        // 500-grain pour's first 100 steps short against 26, compatibility
        // 43 / 49 / 63 s against 33 s; but the settled 10⁴-sphere pack's
        // step (not converged either way) 99 s against 32 s at 2. Not kept.
        let stuck = t.coupled && !res.converged && (res.iterations == 0 || res.stalled);
        changes.push(change);
        let stalling = limit.stall && stalled(&changes);
        if done || stuck || stalling || rounds >= limit.rounds || crate::parallel::signals::stopping() {
            res.converged &= done;
            res.iterations = iterations;
            res.linear = linear;
            let anchor = anchors(dual, &res, &delta)?;
            return Ok(Rounds { result: res, rounds, sliding, anchor });
        }
        let t = dual.friction.as_mut().expect("set above");
        t.coupled |= coupled && rounds >= SWITCH_AFTER;
        t.tau = tau;
        t.kt = kt;
        t.mu = mu;
        u = Some(res.u);
    }
}

/// e' = s_el − B_t u at the end of a solve: s_el is s, or its return to
/// the disc where the spring slides (0 without a spring). Collective.
fn anchors(dual: &Dual, res: &DualResult, delta: &Vector) -> Result<Vec<[f64; 2]>> {
    let t = dual.friction.as_ref().expect("a frictional problem");
    let dv = delta.view()?;
    Ok((0..dual.k.len())
        .map(|i| {
            let bt_u = [-dv[3 * i + 1], -dv[3 * i + 2]];
            let f_n = res.f[3 * i] / dual.scale;
            let (_, f) = t.force(i, bt_u, f_n);
            let el = if t.kt[i] > 0.0 && t.bound(i, f_n) > 0.0 { [-f[0] / t.kt[i], -f[1] / t.kt[i]] } else { [0.0; 2] };
            [el[0] - bt_u[0], el[1] - bt_u[1]]
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first round after which [`stalled`] stops a solve, if any.
    fn stop(changes: &[f64]) -> Option<usize> {
        (1..=changes.len()).find(|&n| stalled(&changes[..n]))
    }

    /// Changes of APGD's rescue rounds on the 500-grain pour (2 ranks):
    /// the landing step it rescues halves its change every round to the
    /// tolerance; two it does not rescue stagnate or grow.
    #[test]
    fn rescue_rounds_stop_when_the_change_stops_halving() {
        let rescued = [6.9e-7, 6.9e-7, 2.7e-7, 1.1e-7, 6.3e-8, 2.7e-8, 1.8e-8, 8.9e-9, 5.4e-9, 2.9e-9, 1.7e-9, 9.8e-10, 5.6e-10, 3.2e-10, 1.9e-10, 1.1e-10];
        assert_eq!(stop(&rescued), None);
        let stagnant = [8e-5, 6e-5, 4e-5, 2e-5, 1e-5, 6e-6, 5e-6, 5e-6, 5e-6, 5e-6, 5e-6];
        assert_eq!(stop(&stagnant), Some(10));
        let growing = [1e-2, 6e-3, 3e-3, 3e-3, 4e-3, 5e-3, 7e-3, 1e-2];
        assert_eq!(stop(&growing), Some(6));
    }
}
