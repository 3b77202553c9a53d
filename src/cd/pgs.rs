//! CD, step 3b (alternative): projected Gauss–Seidel on the LCP (21),
//! 0 ≤ f ⊥ Nf + p ≥ 0, and with friction its nonsmooth form on the exact
//! Coulomb law or the cone ([`pgs_friction`]).
//!
//! Inside a rank the contacts are visited one at a time in the configured
//! order (`forward` or `reverse` contact-list order), each updated to
//! f_i ← max(0, f_i − (Nf + p)_i / N_ii) with `w = M⁻¹ Bᵀ f` kept up to date
//! incrementally. Between ranks it is Jacobi: at the start of each sweep
//! `Bᵀ f` is formed globally (MatMultTranspose) and the ghost bodies' entries
//! are fetched from their owners (MatMult with a 0/1 gather matrix), so the
//! other ranks' contributions are frozen during the sweep.
//!
//! PGS is order-dependent: where N is singular (more contacts than the
//! bodies' DOFs can resolve, e.g. a beam on three supports) the forces it
//! returns depend on the contact order (paper Fig. 1) — the velocities, which
//! are unique, do not. Stopping rule as in [`super::apgd`]; the residual is
//! evaluated exactly at the start of every sweep.
//!
//! Measured and not kept: nonsmooth nonlinear conjugate gradients over the
//! frictional sweeps (Silcowitz, Niebe & Erleben 2010; Fletcher–Reeves on
//! the sweeps' change, restarting when β > 1). The first 45 steps of the
//! 2,500-sphere pour took 2,782 sweeps against 6,278, but once a pack has
//! settled the conjugate steps stall 2–5× above the plain sweeps' residual
//! (also restarting when the residual grows): the 500-sphere pour to rest
//! left 318 steps at `max_iterations` against 238. Nor subspace
//! minimisation (PGS-SM, Silcowitz, Niebe & Erleben 2009): with the
//! sticking and sliding sets of the sweeps frozen, CG on W_SS Δf_S = −u_S
//! (regularised by 1e-4 to 1e-1 of W's mean diagonal), on the settled
//! 2,500-sphere pack after 40 or 1,000 sweeps, raised the residual
//! (7e-6 to 2e-4 after 1,000): where sticking contacts outnumber the
//! bodies' DOFs W_SS is nearly singular, and its solution leaves the cones.
//! Nor Anderson acceleration of the frictionless sweeps: on the settled
//! 2,500-sphere pack it took 350 sweeps a step where APGD takes about 790
//! iterations (plain sweeps stop at 5,000), but 1.4× APGD's time, a sweep
//! with its exchange costing about three APGD iterations.
//! Nor dropping the Anderson mixing for the rest of a step once its lowest
//! residual has not halved in 200 (100) sweeps: the 500-sphere pour at
//! tolerance 1e-6 left 231 steps short against 160, in 1.4× the sweeps
//! (100: slower still); the mixing also gets stalled steps out.
//! Nor stopping a frictional solve early once its residual has not halved
//! in 500 (1,000) sweeps: the 500-sphere pour to rest then left 312 (133)
//! steps short against 145, in 1.9× (0.87×) the sweeps. A stalled step's
//! sweeps still settle the pack for the steps after it.
//! Nor over- or under-relaxing the frictional sweeps (every step scaled
//! by ω): the 500-sphere pour to rest at tolerance 1e-4 took 117,486 /
//! 124,932 / 146,346 sweeps at ω = 1.2 / 1.4 / 0.8 against 125,493 at 1
//! (1.4 left 2 steps short): within what a changed trajectory varies.
//! Nor visiting the contacts from the top of the pile down along gravity
//! (so that one sweep carries the weight to the floor): the same pour took
//! 155,615 sweeps against 125,493 in list order, and at tolerance 1e-6 its
//! first 0.2 s 574,263 against 560,107.
//! Nor full steps on contacts with a ghost: that pour (tolerance 1e-4)
//! took 88,871 sweeps on 2 ranks against 125,493 with half steps, but
//! 104,257 on 3 ranks against 86,815, one step short (1 rank: 71,107).
use super::anderson::Anderson;
use super::apgd::{threshold, QpResult};
use super::friction::{Constraint, Set};
use super::operator::ContactOperator;
use crate::contact::WALL_INDEX;
use crate::parallel::exchange::Layout;
use crate::parallel::Comm;
use crate::petsc::{Mat, PetscInt, Result, SplitCsr, Vector};
use crate::scene::PgsOrder;
use nalgebra::{Matrix3, Matrix3x6, Matrix6x3, Vector3, Vector6};

/// Gathers the ghost bodies' entries of a body vector: rows = 6 per ghost
/// of this rank, one 1 per row at the ghost's global DOF.
fn ghost_gather(comm: &Comm, layout: &Layout, n_local_bodies: usize) -> Result<Mat> {
    let n_owned = layout.n_owned;
    let n_ghost = n_local_bodies - n_owned;
    let first = 6 * layout.offset as PetscInt;
    let owned = first..first + 6 * n_owned as PetscInt;
    let mut csr = SplitCsr::with_capacity(6 * n_ghost, 6 * n_ghost);
    for g in 0..n_ghost {
        let col0 = 6 * layout.global_index[n_owned + g] as PetscInt;
        for k in 0..6 {
            csr.push_row(&mut [(col0 + k as PetscInt, 1.0)], &owned);
        }
    }
    Mat::aij_from_split(comm, 6 * n_owned as PetscInt, 6 * layout.total as PetscInt, csr)
}

/// Solves (21) in place by PGS; `f` holds the warm start on entry. Collective.
#[allow(clippy::too_many_arguments)]
pub fn pgs(
    comm: &Comm,
    op: &ContactOperator,
    layout: &Layout,
    n_local_bodies: usize,
    p: &Vector,
    f: &mut Vector,
    tol: f64,
    max_it: u32,
    order: PgsOrder,
) -> Result<QpResult> {
    let thr = threshold(p, tol)?;
    // Frictionless: one row per contact (with friction, `pgs_friction`).
    debug_assert_eq!(op.rows, 1);
    op.constraint(super::friction::Set::Normal).project(&mut f.view_mut()?);
    let Sweeps { gather, mut ghost_u, mut u, mut w, pl, mut fl, order } = Sweeps::new(comm, op, layout, n_local_bodies, p, f, order)?;
    let nc = op.n_local();
    let dt = op.dt;
    // M⁻¹ jᵀ per contact side and the diagonal of N.
    let ma: Vec<Vector6<f64>> = (0..nc).map(|i| op.minv[op.ia[i]] * op.ja[i]).collect();
    let mb: Vec<Vector6<f64>> =
        (0..nc).map(|i| if op.ib[i] == WALL_INDEX { Vector6::zeros() } else { op.minv[op.ib[i]] * op.jb[i] }).collect();
    let diag: Vec<f64> = (0..nc).map(|i| dt * (op.ja[i].dot(&ma[i]) + op.jb[i].dot(&mb[i]))).collect();
    let mut sweeps = 0u64;
    let mut res;
    loop {
        refresh(op, &gather, f, &fl, &mut u, &mut ghost_u, &mut w)?;
        let local_res = (0..nc)
            .filter(|&i| op.active[i])
            .map(|i| fl[i].min(normal_velocity(op, &w, i) * dt + pl[i]).abs())
            .fold(0.0, f64::max);
        res = crate::parallel::max_f64(comm, local_res);
        if res <= thr || sweeps >= max_it as u64 || crate::parallel::signals::agreed_at(comm, sweeps) {
            break;
        }
        sweeps += 1;
        for &i in &order {
            if !op.active[i] || diag[i] <= 0.0 {
                fl[i] = 0.0;
                continue;
            }
            let r = normal_velocity(op, &w, i) * dt + pl[i];
            // A contact on a ghost: its owner's rank moves the same body in
            // the same sweep without seeing this update (Jacobi across
            // ranks); half steps there keep the two from overshooting in
            // turn. The fixed point (the LCP's solution) is the same.
            let omega = if op.ib[i] != WALL_INDEX && op.ib[i] >= op.n_owned { 0.5 } else { 1.0 };
            let new = (fl[i] - omega * r / diag[i]).max(0.0);
            let df = new - fl[i];
            if df != 0.0 {
                w[op.ia[i]] += ma[i] * df;
                if op.ib[i] != WALL_INDEX {
                    w[op.ib[i]] += mb[i] * df;
                }
                fl[i] = new;
            }
        }
    }
    Ok(QpResult { iterations: sweeps, residual: res, threshold: thr, converged: res <= thr, ..Default::default() })
}

/// What both sweeps keep: the ghost gather and its vectors, w = M⁻¹ Bᵀ f
/// on the local bodies, this rank's p and f, and the contact order.
struct Sweeps {
    gather: Mat,
    ghost_u: Vector,
    u: Vector,
    w: Vec<Vector6<f64>>,
    pl: Vec<f64>,
    fl: Vec<f64>,
    order: Vec<usize>,
}

impl Sweeps {
    /// From the warm start in `f` (projected already). Collective.
    fn new(comm: &Comm, op: &ContactOperator, layout: &Layout, n_local_bodies: usize, p: &Vector, f: &Vector, order: PgsOrder) -> Result<Self> {
        let gather = ghost_gather(comm, layout, n_local_bodies)?;
        let (_, ghost_u) = gather.create_vecs()?;
        let nc = op.n_local();
        let order = match order {
            PgsOrder::Forward => (0..nc).collect(),
            PgsOrder::Reverse => (0..nc).rev().collect(),
        };
        Ok(Self { ghost_u, u: op.body_vec()?, w: vec![Vector6::zeros(); n_local_bodies], pl: p.view()?.to_vec(), fl: f.view()?.to_vec(), order, gather })
    }
}

/// w = M⁻¹ Bᵀ f on owned and ghost bodies (all ranks' contributions), from
/// this rank's forces `fl`. Collective.
fn refresh(op: &ContactOperator, gather: &Mat, f: &mut Vector, fl: &[f64], u: &mut Vector, ghost_u: &mut Vector, w: &mut [Vector6<f64>]) -> Result<()> {
    f.view_mut()?.copy_from_slice(fl);
    op.b.mult_transpose(f, u)?;
    gather.mult(u, ghost_u)?;
    let (uv, gv) = (u.view()?, ghost_u.view()?);
    for (j, wj) in w.iter_mut().enumerate() {
        let s = if j < op.n_owned { &uv[6 * j..6 * j + 6] } else { &gv[6 * (j - op.n_owned)..6 * (j - op.n_owned) + 6] };
        *wj = op.minv[j] * Vector6::from_column_slice(s);
    }
    Ok(())
}

/// [`pgs_friction`] checks its residual at every sweep up to this one, then
/// at every this-many.
const CHECK_EVERY: u64 = 4;

/// The frictional problem of [`super::friction`] in place by nonsmooth
/// Gauss–Seidel (the contact-by-contact solver of LMGC90 and Siconos),
/// ordered, Jacobi between ranks and stopped as [`pgs`]; `c` is
/// `Set::Coulomb` or `Set::Cone`. Each contact's update, with its 3×3
/// Delassus block W (N restricted to its rows):
///
/// - Coulomb: f_n ← max(0, f_n − u_n / W_nn), then, with u_t updated for
///   the new f_n, f_t ← clip(f_t − u_t / λ_max(W_tt), μ f_n): scalar steps
///   on each part, so a fixed point is the exact law (a clipped f_t
///   opposes u_t), as with APGD's Coulomb map;
/// - cone: f ← P_K(f − u / λ_max(W)), one scalar step and the orthogonal
///   projection, whose fixed points are the cone complementarity problem's.
///
/// W over the active rows only: a 2D scene's out-of-plane tangent is no
/// part of it. With rolling resistance (six rows) the rolling pair and the
/// twist follow, each a scalar step clipped to its bound from the new f_n
/// ([`super::friction::project_rolling`]).
///
/// With `anderson` = m > 0 each sweep's forces are mixed with the last m
/// sweeps' ([`super::anderson`]) and projected back onto the cones. Sweeps
/// are linear while no contact changes between open, sticking and
/// sliding, and there the mixing is GMRES: on a 2,500-sphere frictional
/// pour 4.4× fewer sweeps (m = 5; 3.6–4.5× for m = 3–10), on a frictional
/// sheared pack 5×. Restarting the history only when ‖r‖ grows was the
/// best rule measured (a restart at every change of a contact's state:
/// 1.3× more sweeps). Where a pack stalls (contacts at |f_t| = μ f_n
/// flipping between sticking and sliding every few sweeps) it gains
/// little.
///
/// Collective.
#[allow(clippy::too_many_arguments)]
pub fn pgs_friction(
    comm: &Comm,
    op: &ContactOperator,
    layout: &Layout,
    n_local_bodies: usize,
    c: &Constraint,
    p: &Vector,
    f: &mut Vector,
    tol: f64,
    max_it: u32,
    order: PgsOrder,
    anderson: usize,
) -> Result<QpResult> {
    let thr = threshold(p, tol)?;
    let nr = op.rows;
    debug_assert!(nr == 3 || nr == 6);
    c.project(&mut f.view_mut()?);
    let Sweeps { gather, mut ghost_u, mut u, mut w, pl, mut fl, order } = Sweeps::new(comm, op, layout, n_local_bodies, p, f, order)?;
    let nc = op.n_local();
    let dt = op.dt;
    // Per contact the three rows (normal, t1, t2) as 3×6 blocks on each
    // body, M⁻¹ jᵀ of them, and the Delassus block W = Δt J M⁻¹ Jᵀ (unmasked):
    // a contact's velocity is two block products, and the tangential
    // velocity after a change of f_n follows from W instead of from w again.
    let wall = |i: usize| op.ib[i] == WALL_INDEX;
    let half = |h: [Vector6<f64>; 3]| Matrix3x6::from_rows(&h.map(|v| v.transpose()));
    let ja3: Vec<Matrix3x6<f64>> = (0..nc).map(|i| half([op.ja[i], op.jt[i][0].0, op.jt[i][1].0])).collect();
    let jb3: Vec<Matrix3x6<f64>> = (0..nc).map(|i| if wall(i) { Matrix3x6::zeros() } else { half([op.jb[i], op.jt[i][0].1, op.jt[i][1].1]) }).collect();
    let minv_times = |j: usize, h: &Matrix3x6<f64>| Matrix6x3::from_columns(&[0, 1, 2].map(|r| op.minv[j] * h.row(r).transpose()));
    let ma3: Vec<Matrix6x3<f64>> = (0..nc).map(|i| minv_times(op.ia[i], &ja3[i])).collect();
    let mb3: Vec<Matrix6x3<f64>> = (0..nc).map(|i| if wall(i) { Matrix6x3::zeros() } else { minv_times(op.ib[i], &jb3[i]) }).collect();
    let delassus: Vec<Matrix3<f64>> = (0..nc).map(|i| (ja3[i] * ma3[i] + jb3[i] * mb3[i]) * dt).collect();
    let times_minv = |i: usize, h: &[(Vector6<f64>, Vector6<f64>); 3]| h.map(|(a, b)| (op.minv[op.ia[i]] * a, if wall(i) { Vector6::zeros() } else { op.minv[op.ib[i]] * b }));
    let mr: Vec<[(Vector6<f64>, Vector6<f64>); 3]> = op.jr.iter().enumerate().map(|(i, h)| times_minv(i, h)).collect();
    // The steps: 1/λ_max of the block each one acts on (W over the active
    // rows), so that a contact's update alone converges (below 2/λ_max);
    // for spheres W is diagonal in the contact frame and the steps are
    // exact Gauss–Seidel.
    let steps: Vec<[f64; 3]> = (0..nc)
        .map(|i| {
            let act = &c.act[nr * i..nr * i + 3];
            let w = Matrix3::from_fn(|r, k| act[r] * act[k] * delassus[i][(r, k)]);
            let inv = |l: f64| if l > 0.0 { 1.0 / l } else { 0.0 };
            match c.set {
                Set::Cone(_) => [inv(w.symmetric_eigenvalues().max()); 3],
                _ => {
                    let t = inv(w.fixed_view::<2, 2>(1, 1).into_owned().symmetric_eigenvalues().max());
                    [inv(w[(0, 0)]), t, t]
                }
            }
        })
        .collect();
    // The rolling rows act on rotations alone: per body the 3×3 block of
    // their angular parts, M⁻¹ of it (columns, angular parts; the linear ones
    // are zero), and their Delassus block, as for the three rows above.
    let ang = |h: &[(Vector6<f64>, Vector6<f64>); 3], b: bool| Matrix3::from_rows(&h.each_ref().map(|(ra, rb)| (if b { rb } else { ra }).fixed_rows::<3>(3).transpose()));
    let jra: Vec<Matrix3<f64>> = op.jr.iter().map(|h| ang(h, false)).collect();
    let jrb: Vec<Matrix3<f64>> = op.jr.iter().map(|h| ang(h, true)).collect();
    let mra: Vec<Matrix3<f64>> = mr.iter().map(|h| ang(h, false).transpose()).collect();
    let mrb: Vec<Matrix3<f64>> = mr.iter().map(|h| ang(h, true).transpose()).collect();
    let roll_delassus: Vec<Matrix3<f64>> = (0..op.jr.len()).map(|i| (jra[i] * mra[i] + jrb[i] * mrb[i]) * dt).collect();
    // The rolling block's steps: 1/λ_max of W over the active rolling pair,
    // and 1/W of the twist.
    let roll_steps: Vec<[f64; 2]> = (0..op.jr.len())
        .map(|i| {
            let act = &c.act[6 * i + 3..6 * i + 6];
            let w = Matrix3::from_fn(|r, k| act[r] * act[k] * roll_delassus[i][(r, k)]);
            let inv = |l: f64| if l > 0.0 { 1.0 / l } else { 0.0 };
            [inv(w.fixed_view::<2, 2>(0, 0).into_owned().symmetric_eigenvalues().max()), inv(w[(2, 2)])]
        })
        .collect();
    let spin_velocity = |w: &[Vector6<f64>], i: usize| {
        let mut s = jra[i] * w[op.ia[i]].fixed_rows::<3>(3);
        if !wall(i) {
            s += jrb[i] * w[op.ib[i]].fixed_rows::<3>(3);
        }
        s * dt
    };
    let mu: &[f64] = match &c.set {
        Set::Coulomb(mu) | Set::Cone(mu) => mu,
        Set::Normal => panic!("pgs_friction needs a frictional set"),
    };
    // B w on the three rows of contact i.
    let velocity = |w: &[Vector6<f64>], i: usize| {
        let mut s = ja3[i] * w[op.ia[i]];
        if !wall(i) {
            s += jb3[i] * w[op.ib[i]];
        }
        s * dt
    };
    let mut nf = vec![0.0; nr * nc];
    let mut sweeps = 0u64;
    let mut res = f64::INFINITY;
    let mut accel = (anderson > 0).then(|| (Anderson::new(anderson), vec![0.0; nr * nc]));
    // The lowest residual met and its forces: a solve that stops short
    // returns them (a stalled pack's residual wanders by 2-3x between checks).
    let (mut best, mut best_f) = (f64::INFINITY, Vec::with_capacity(nr * nc));
    loop {
        // The exchange between ranks at every sweep, the residual (about
        // 40 % of a sweep's cost) at every CHECK_EVERY-th after the first ones.
        refresh(op, &gather, f, &fl, &mut u, &mut ghost_u, &mut w)?;
        let last = sweeps >= max_it as u64;
        if sweeps < CHECK_EVERY || sweeps % CHECK_EVERY == 0 || last {
            for i in 0..nc {
                nf[nr * i..nr * i + 3].copy_from_slice(velocity(&w, i).as_slice());
                if nr == 6 {
                    nf[6 * i + 3..6 * i + 6].copy_from_slice(spin_velocity(&w, i).as_slice());
                }
            }
            res = crate::parallel::max_f64(comm, c.residual(&fl, &nf, &pl));
            if res < best {
                best = res;
                best_f.clear();
                best_f.extend_from_slice(&fl);
            }
        }
        if res <= thr || last || crate::parallel::signals::agreed_at(comm, sweeps) {
            break;
        }
        sweeps += 1;
        if let Some((_, x)) = &mut accel {
            x.copy_from_slice(&fl);
        }
        for &i in &order {
            let act = &c.act[nr * i..nr * i + nr];
            if !op.active[i] {
                fl[nr * i..nr * i + nr].fill(0.0);
                continue;
            }
            // Half steps on a contact with a ghost, as in `pgs`.
            let omega = if !wall(i) && op.ib[i] >= op.n_owned { 0.5 } else { 1.0 };
            let old = Vector3::new(fl[nr * i], fl[nr * i + 1], fl[nr * i + 2]);
            let a3 = Vector3::new(act[0], act[1], act[2]);
            let u = (velocity(&w, i) + Vector3::new(pl[nr * i], pl[nr * i + 1], pl[nr * i + 2])).component_mul(&a3);
            let st = steps[i];
            let z = match c.set {
                Set::Cone(_) => super::friction::project_cone(std::array::from_fn(|r| (old[r] - omega * st[r] * u[r]) * act[r]), mu[i]),
                _ => {
                    // f_n first; u_t then sees it (through W).
                    let f_n = (old[0] - omega * st[0] * u[0]).max(0.0) * act[0];
                    let d_n = f_n - old[0];
                    let u_t = |r: usize| u[r] + act[r] * delassus[i][(r, 0)] * d_n;
                    super::friction::project_coulomb([f_n, (old[1] - omega * st[1] * u_t(1)) * act[1], (old[2] - omega * st[2] * u_t(2)) * act[2]], mu[i])
                }
            };
            let d = Vector3::from(z) - old;
            if d != Vector3::zeros() {
                w[op.ia[i]] += ma3[i] * d;
                if !wall(i) {
                    w[op.ib[i]] += mb3[i] * d;
                }
                fl[nr * i..nr * i + 3].copy_from_slice(&z);
            }
            if nr == 6 {
                // The rolling pair, then the twist (its velocity after the
                // pair's change from W), bounded by the new f_n.
                let (f_n, [s_r, s_tw]) = (fl[6 * i], roll_steps[i]);
                let old = Vector3::new(fl[6 * i + 3], fl[6 * i + 4], fl[6 * i + 5]);
                let ar = Vector3::new(act[3], act[4], act[5]);
                let u = (spin_velocity(&w, i) + Vector3::new(pl[6 * i + 3], pl[6 * i + 4], pl[6 * i + 5])).component_mul(&ar);
                let pair = super::friction::project_rolling([(old[0] - omega * s_r * u[0]) * ar[0], (old[1] - omega * s_r * u[1]) * ar[1], 0.0], f_n, c.roll[i]);
                let (d0, d1) = (pair[0] - old[0], pair[1] - old[1]);
                let u_tw = u[2] + ar[2] * (roll_delassus[i][(2, 0)] * d0 + roll_delassus[i][(2, 1)] * d1);
                let twist = super::friction::project_rolling([0.0, 0.0, (old[2] - omega * s_tw * u_tw) * ar[2]], f_n, c.roll[i])[2];
                let z = Vector3::new(pair[0], pair[1], twist);
                let d = z - old;
                if d != Vector3::zeros() {
                    let mut wa = w[op.ia[i]].fixed_rows_mut::<3>(3);
                    wa += mra[i] * d;
                    if !wall(i) {
                        let mut wb = w[op.ib[i]].fixed_rows_mut::<3>(3);
                        wb += mrb[i] * d;
                    }
                    fl[6 * i + 3..6 * i + 6].copy_from_slice(z.as_slice());
                }
            }
        }
        if let Some((acc, x)) = &mut accel {
            acc.step(|s| crate::parallel::sum_f64s(comm, s), x, &mut fl);
            // The mixed forces back onto the cones (the next sweep's w follows
            // them). An inactive contact's entries stay 0: every sweep zeroes
            // them, so its x, g and Δg are 0 from the second pair on.
            c.project(&mut fl);
        }
    }
    if best < res {
        f.view_mut()?.copy_from_slice(&best_f);
        res = best;
    }
    Ok(QpResult { iterations: sweeps, residual: res, threshold: thr, converged: res <= thr, ..Default::default() })
}

/// `(B w)_i` from the local copy of w.
fn normal_velocity(op: &ContactOperator, w: &[Vector6<f64>], i: usize) -> f64 {
    let mut s = op.ja[i].dot(&w[op.ia[i]]);
    if op.ib[i] != WALL_INDEX {
        s += op.jb[i].dot(&w[op.ib[i]]);
    }
    s
}
