//! The compatibility problem (eq 36) in its dual form over the body
//! displacements u: with the approach δ = −B u (B v is the
//! opening velocity) and the rigid-limit truss law f_i = k̃_i [δ_i]₊^{p−1},
//!
//! ```text
//! Π(u)   = Σ_i (k̃_i/p) [δ_i]₊^p + F̃ᵀu                       (dual of eq 36)
//! ∇Π(u)  = F̃ − Bᵀ f(u)                                        (force balance, eq 37)
//! ∇²Π(u) = Bᵀ diag(k̃_i (p−1) [δ_i]₊^{p−2}) B
//! ```
//!
//! Π is convex, C¹ (piecewise quadratic for p = 2, C² for p > 2); its
//! minimisers give the unique forces of eq 36 even where u is not unique
//! (floppy modes). Used by [`super::newton`] and [`super::dual_apgd`].
//!
//! DOFs no contact can move (zero columns of B: sphere rotations under
//! frictionless contact, masked DOFs of 2D scenes, fixed bodies) are kept
//! out of the problem: their gradient is zero and their Hessian row is the
//! identity, so Newton never moves them. A free DOF of that kind carrying a
//! load F̃ makes the problem infeasible: [`Dual::new`] warns, naming the
//! body, and drops that load.
//!
//! With friction (B has the rows n, t1, t2 per contact) each contact adds
//! the tangential potential ψ of an elastic–plastic spring
//! ([`Tangential`]) of its tangential displacement s = e + B_t u (e the
//! contact's elastic history): ½ k_t |s|² while k_t |s| ≤ τ, then
//! τ |s| − τ²/(2 k_t), with τ = μ f_n frozen (a Tresca problem: still
//! convex and C¹, its gradient adds −B_tᵀ f_t with f_t = −∂ψ/∂s, the
//! spring force clipped to the disc |f_t| ≤ τ). [`super::tresca`] updates
//! τ to a fixed point.
//!
//! Forces are scaled by s = ‖F̃‖∞ inside (f/s = O(1)); distributed like B:
//! contacts over their rank, u and F̃ over the owned bodies' DOFs.
use crate::body::Bodies;
use crate::cd::operator::ContactOperator;
use crate::contact::{Contacts, WALL_INDEX};
use crate::parallel::exchange::Layout;
use crate::parallel::Comm;
use crate::petsc::{InsertMode, Mat, NormType, PetscInt, Result, Vector};
use std::cell::RefCell;

/// The tangential springs of a frictional problem (scaled units), per
/// local contact. In a Tresca round `tau` and `kt` are frozen; `coupled`
/// takes the bound from the current normal force instead, τ = μ f_n(u)
/// (the Coulomb problem itself: no potential, a non-symmetric Jacobian).
#[derive(Clone, Debug, Default)]
pub struct Tangential {
    /// e: the elastic tangential displacement at u = 0 along (t1, t2).
    pub anchor: Vec<[f64; 2]>,
    /// τ = μ f_n, the bound of |f_t| (frozen).
    pub tau: Vec<f64>,
    /// The spring's stiffness k_t (0: no tangential force).
    pub kt: Vec<f64>,
    /// μ of each contact (μ_s, or μ_d where it slides).
    pub mu: Vec<f64>,
    /// f_t / f_n of the CD step along (t1, t2) where the contact slides in
    /// it (else `None`): in the rigid limit such a spring is at its bound
    /// along the slip, so its tangential force is this ratio times f_n
    /// (CD's f_n in a Tresca round, f_n(u) when `coupled`).
    pub slip: Vec<Option<[f64; 2]>>,
    pub coupled: bool,
}

impl Tangential {
    /// The bound of contact `i` at normal force `f_n`.
    pub fn bound(&self, i: usize, f_n: f64) -> f64 {
        if self.coupled {
            self.mu[i] * f_n.max(0.0)
        } else {
            self.tau[i]
        }
    }

    /// The normal force a sliding contact's ratio multiplies: CD's (τ/μ)
    /// in a Tresca round, `f_n` when coupled.
    fn slip_normal(&self, i: usize, f_n: f64) -> f64 {
        if self.coupled {
            f_n.max(0.0)
        } else if self.mu[i] > 0.0 {
            self.tau[i] / self.mu[i]
        } else {
            0.0
        }
    }

    /// s = e + B_t u from `bt_u` = B_t u, and the force on b along (t1, t2)
    /// ([`spring`], or CD's slip ratio) at normal force `f_n`.
    pub fn force(&self, i: usize, bt_u: [f64; 2], f_n: f64) -> ([f64; 2], [f64; 2]) {
        if let Some(c) = self.slip[i] {
            let (s, r) = ([self.anchor[i][0] + bt_u[0], self.anchor[i][1] + bt_u[1]], self.slip_normal(i, f_n));
            return (s, [c[0] * r, c[1] * r]);
        }
        spring(self.anchor[i], self.bound(i, f_n), self.kt[i], bt_u)
    }

    /// ψ(s): ½ k_t |s|² within the bound, τ |s| − τ²/(2 k_t) beyond.
    fn energy(&self, i: usize, s: [f64; 2], f_n: f64) -> f64 {
        if let Some(c) = self.slip[i] {
            // A constant force f: ψ = −f·s.
            let r = self.slip_normal(i, f_n);
            return -r * (c[0] * s[0] + c[1] * s[1]);
        }
        let (tau, kt) = (self.bound(i, f_n), self.kt[i]);
        if !(tau > 0.0 && kt > 0.0) {
            return 0.0;
        }
        let norm = s[0].hypot(s[1]);
        if kt * norm <= tau {
            0.5 * kt * norm * norm
        } else {
            tau * norm - tau * tau / (2.0 * kt)
        }
    }

    /// −∂f_t/∂(B_t u) (2×2, row-major) plus `open` k_t along the
    /// directions in which the spring gives way (the slip direction, or
    /// both when τ = 0); and −∂f_t/∂(B_n u) = −μ w_n ŝ of a sliding
    /// spring (c w_n of a contact sliding in CD at ratio c) when `coupled`
    /// (w_n the normal weight).
    fn jacobian(&self, i: usize, s: [f64; 2], f_n: f64, w_n: f64, open: f64) -> ([f64; 4], [f64; 2]) {
        let (tau, kt) = (self.bound(i, f_n), self.kt[i]);
        if kt <= 0.0 {
            return ([0.0; 4], [0.0; 2]);
        }
        if let Some(c) = self.slip[i] {
            let w = open.max(SLIP_FLOOR) * kt;
            let tn = if self.coupled { [c[0] * w_n, c[1] * w_n] } else { [0.0; 2] };
            return ([w, 0.0, 0.0, w], tn);
        }
        if tau <= 0.0 {
            return ([open * kt, 0.0, 0.0, open * kt], [0.0; 2]);
        }
        let norm = s[0].hypot(s[1]);
        if kt * norm <= tau {
            return ([kt, 0.0, 0.0, kt], [0.0; 2]);
        }
        let (c, h) = (tau / norm, [s[0] / norm, s[1] / norm]);
        let w = open.max(SLIP_FLOOR) * kt - c;
        let tn = if self.coupled { [-self.mu[i] * w_n * h[0], -self.mu[i] * w_n * h[1]] } else { [0.0; 2] };
        ([c + w * h[0] * h[0], w * h[0] * h[1], w * h[1] * h[0], c + w * h[1] * h[1]], tn)
    }
}

/// Least weight (× k_t) of a sliding spring along its slip in the Newton
/// matrix: a proximal term that keeps the matrix of a pack whose sliding
/// contacts form a mechanism away from singular (it changes the steps, not
/// the solution). It keeps the coupled Coulomb Newton's last steps linear
/// (the n = 20 pyramid at μ = 0.3: ‖∇Π‖ 2.6e-7, 3.2e-8, 1.3e-8, 3.1e-9);
/// lowered to 1e-4 or 1e-5 once ‖∇Π‖/‖F̃‖ < 1e-8, that solve no longer
/// converges (nine rounds, feasibility 5e-9); 1e-4, 1e-5 or 1e-6 from the
/// start, its coupled solve stops on a failed line search (at ‖∇Π‖
/// 2.7e-4 with 1e-4; all measured with block-Jacobi).
const SLIP_FLOOR: f64 = 1e-3;

/// A tangential spring with anchor `e`, bound `tau` and stiffness `kt` at
/// `bt_u` = B_t u: s = e + B_t u and the force on b along (t1, t2), −k_t s
/// clipped to |f_t| ≤ τ (0 where τ or k_t is not positive).
pub fn spring(e: [f64; 2], tau: f64, kt: f64, bt_u: [f64; 2]) -> ([f64; 2], [f64; 2]) {
    let s = [e[0] + bt_u[0], e[1] + bt_u[1]];
    if !(tau > 0.0 && kt > 0.0) {
        return (s, [0.0; 2]);
    }
    let norm = s[0].hypot(s[1]);
    let c = if kt * norm <= tau { kt } else { tau / norm };
    (s, [-c * s[0], -c * s[1]])
}

/// One compatibility problem: B (borrowed from the CD operator), k̃, p and
/// the scaled load F̃/s.
pub struct Dual<'a> {
    pub comm: &'a Comm,
    pub op: &'a ContactOperator,
    pub p: f64,
    /// k̃ per local contact (0 for a contact whose row of B is empty).
    pub k: Vec<f64>,
    /// Rows of B per contact: 1, or 3 (n, t1, t2) with friction.
    rows: usize,
    /// The DOFs of contact i's rows of B without their round-off entries
    /// (at most 12), `row_idx[row_start[i]..row_start[i + 1]]`, and each
    /// row's values on them, row after row from `rows · row_start[i]`.
    row_start: Vec<usize>,
    row_idx: Vec<PetscInt>,
    row_val: Vec<f64>,
    /// The tangential springs (with friction).
    pub friction: Option<Tangential>,
    /// Global block index of the owned bodies.
    pub blk_owned: Vec<PetscInt>,
    /// Per owned DOF: does some contact move it (a non-zero column of B)?
    pub free: Vec<bool>,
    /// F̃/s (zero on DOFs that are not free).
    pub ft: Vector,
    /// s = ‖F̃‖∞ (0: nothing to solve).
    pub scale: f64,
    /// ‖F̃/s‖₂.
    pub ft_norm: f64,
    /// diag(Bᵀ K̃ B) on the free DOFs, 1 elsewhere: the bilateral Hessian's
    /// diagonal (the APGD metric and the Levenberg–Marquardt weight).
    pub diag: Vector,
    /// Ids of owned bodies whose load F̃ no contact can carry.
    pub unsupported: Vec<u64>,
    /// The Hessian matrices made so far, by options prefix: every Tresca
    /// round and coupled solve of one problem has the same pattern.
    hessians: RefCell<Vec<(String, Mat)>>,
}

/// The `max` smallest ids over all ranks' `ids` (sorted), the same on
/// every rank (so rank 0 can name them). Collective.
fn first_ids(comm: &Comm, ids: &[u64], max: usize) -> Vec<u64> {
    use mpi::collective::SystemOperation;
    use mpi::traits::CommunicatorCollectives;
    let mut out: Vec<u64> = Vec::new();
    if crate::parallel::sum_u64(comm, ids.len() as u64) == 0 {
        return out;
    }
    while out.len() < max {
        let after = out.last().copied();
        let mine = ids.iter().copied().filter(|&i| after.is_none_or(|a| i > a)).min().unwrap_or(u64::MAX);
        let mut next = u64::MAX;
        comm.all_reduce_into(&mine, &mut next, SystemOperation::min());
        if next == u64::MAX {
            break;
        }
        out.push(next);
    }
    out
}

/// Contact weights of the Hessian.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Weights {
    /// k̃_i (p−1) [δ_i]₊^{p−2} at the given approach.
    Tangent,
    /// k̃_i for every contact: the Hookean all-contacts-bilateral Hessian
    /// Bᵀ K̃ B (the start, and the metric of the dual APGD).
    Bilateral,
}

/// Smallest approach used in the Hessian weight δ^{p−2} when p < 2 (the
/// weight is unbounded at δ → 0⁺), in the scaled units where f ≈ 1.
const DELTA_FLOOR: f64 = 1e-8;

impl<'a> Dual<'a> {
    /// Sets up the problem for the contacts of `op` with load `ft` (body
    /// vector, unscaled; consumed). `k` is k̃ per local contact; with
    /// friction (`op.rows` = 3) `kappa` = k_t / k̃ weighs the tangential
    /// rows in the metric `diag`, and [`Dual::friction`] must be set before
    /// a solve. Collective.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        comm: &'a Comm,
        op: &'a ContactOperator,
        layout: &Layout,
        bodies: &Bodies,
        contacts: &Contacts,
        mut ft: Vector,
        k: &[f64],
        p: f64,
        kappa: f64,
    ) -> Result<Self> {
        let nc = op.n_local();
        let rows = op.rows;
        let blk_owned: Vec<PetscInt> = (0..op.n_owned).map(|i| layout.global_index[i] as PetscInt).collect();
        let k: Vec<f64> = (0..nc).map(|i| if op.active[i] { k[i] } else { 0.0 }).collect();
        // B's rows (jacobian_rows has cut the round-off entries): the
        // DOFs where any of the contact's rows is not zero.
        let (mut row_start, mut row_idx, mut row_val) = (vec![0], Vec::with_capacity(6 * nc), Vec::with_capacity(6 * rows * nc));
        let mut halves = Vec::with_capacity(rows);
        for (i, &ki) in k.iter().enumerate() {
            halves.clear();
            halves.push((op.ja[i], op.jb[i]));
            if rows == 3 {
                let (t1, t2) = op.tangents[i];
                halves.push(crate::cd::operator::row_halves(contacts, i, bodies, &t1));
                halves.push(crate::cd::operator::row_halves(contacts, i, bodies, &t2));
            }
            let first = row_idx.len();
            // Per side, the DOFs where any of the contact's rows is not zero
            // (none on a wall or an inactive contact).
            let mut used = [[false; 6]; 2];
            for (side, local) in [op.ia[i], op.ib[i]].into_iter().enumerate() {
                if local == WALL_INDEX || ki == 0.0 {
                    continue;
                }
                let base = 6 * layout.global_index[local] as PetscInt;
                for d in 0..6 {
                    used[side][d] = halves.iter().any(|h| if side == 0 { h.0[d] } else { h.1[d] } != 0.0);
                    if used[side][d] {
                        row_idx.push(base + d as PetscInt);
                    }
                }
            }
            for h in &halves {
                for (side, half) in [&h.0, &h.1].into_iter().enumerate() {
                    row_val.extend((0..6).filter(|&d| used[side][d]).map(|d| half[d]));
                }
            }
            debug_assert_eq!(row_val.len(), rows * row_idx.len(), "contact {i}: {} DOFs", row_idx.len() - first);
            row_start.push(row_idx.len());
        }
        // diag(Bᵀ K̃ B): each contact adds k̃ j_k² (and κ k̃ for the
        // tangential rows) to the DOFs of its bodies, on whichever rank owns them.
        let mut diag = op.body_vec()?;
        {
            let mut val = Vec::with_capacity(row_idx.len());
            for (i, &ki) in k.iter().enumerate() {
                let (a, b) = (row_start[i], row_start[i + 1]);
                if rows == 1 {
                    val.extend(row_val[a..b].iter().map(|b| ki * b * b));
                } else {
                    let v = &row_val[3 * a..3 * b];
                    let n = b - a;
                    val.extend((0..n).map(|j| ki * v[j] * v[j] + kappa * ki * (v[n + j] * v[n + j] + v[2 * n + j] * v[2 * n + j])));
                }
            }
            diag.set_values(&row_idx, &val, InsertMode::Add)?;
            diag.assemble()?;
        }
        let mut free = Vec::with_capacity(6 * op.n_owned);
        let mut unsupported = Vec::new();
        let fmax = ft.norm(NormType::Infinity)?;
        {
            let mut dv = diag.view_mut()?;
            let mut fv = ft.view_mut()?;
            for j in 0..dv.len() {
                let on = dv[j] > 0.0;
                free.push(on);
                if !on {
                    dv[j] = 1.0;
                    if fv[j].abs() > 1e-12 * fmax {
                        let id = bodies.id[j / 6];
                        if unsupported.last() != Some(&id) {
                            unsupported.push(id);
                        }
                    }
                    fv[j] = 0.0;
                }
            }
        }
        for id in first_ids(comm, &unsupported, 8) {
            log::warn!(
                "compatibility: body {id} carries a load that no contact can take (it has no contact along that DOF): \
                 the problem is infeasible there; that part of the load is left out"
            );
        }
        let scale = ft.norm(NormType::Infinity)?;
        let mut ft_norm = 0.0;
        if scale > 0.0 && scale.is_finite() {
            ft.scale(1.0 / scale)?;
            ft_norm = ft.norm(NormType::Two)?;
        }
        Ok(Self { comm, op, p, k, rows, row_start, row_idx, row_val, friction: None, blk_owned, free, ft, scale, ft_norm, diag, unsupported, hessians: RefCell::new(Vec::new()) })
    }

    /// Whether there is anything to solve (a non-zero supported load).
    pub fn is_trivial(&self) -> bool {
        !(self.scale > 0.0 && self.scale.is_finite())
    }

    /// `delta = −B u`. Collective.
    pub fn approach(&self, u: &Vector, delta: &mut Vector) -> Result<()> {
        self.op.b.mult(u, delta)?;
        delta.scale(-1.0)
    }

    /// f_i = k̃_i [δ_i]₊^{p−1} (scaled) into `f`, given `delta`; with
    /// friction also each contact's tangential force ([`Tangential::force`]).
    pub fn forces(&self, delta: &Vector, f: &mut Vector) -> Result<()> {
        let dv = delta.view()?;
        let mut fv = f.view_mut()?;
        let r = self.rows;
        for i in 0..dv.len() / r {
            fv[r * i] = self.normal_force(i, dv[r * i]);
        }
        if let Some(t) = &self.friction {
            for i in 0..dv.len() / 3 {
                let (_, ft) = t.force(i, [-dv[3 * i + 1], -dv[3 * i + 2]], fv[3 * i]);
                fv[3 * i + 1] = ft[0];
                fv[3 * i + 2] = ft[1];
            }
        }
        Ok(())
    }

    /// f_n = k̃ [δ]₊^{p−1} of contact `i` at approach `d` (scaled).
    pub fn normal_force(&self, i: usize, d: f64) -> f64 {
        if d > 0.0 {
            self.k[i] * d.powf(self.p - 1.0)
        } else {
            0.0
        }
    }

    /// This rank's share of Σ (k̃/p) [δ]₊^p + Σ ψ(s) at `delta` = −B u.
    fn energy(&self, delta: &Vector) -> Result<f64> {
        let dv = delta.view()?;
        let r = self.rows;
        let mut w = 0.0;
        for i in 0..dv.len() / r {
            let d = dv[r * i];
            if d > 0.0 {
                w += self.k[i] / self.p * d.powf(self.p);
            }
        }
        if let Some(t) = &self.friction {
            for i in 0..dv.len() / 3 {
                let f_n = self.normal_force(i, dv[3 * i]);
                let (s, _) = t.force(i, [-dv[3 * i + 1], -dv[3 * i + 2]], f_n);
                w += t.energy(i, s, f_n);
            }
        }
        Ok(w)
    }

    /// Π(u); `delta` is scratch. Collective.
    pub fn objective(&self, u: &Vector, delta: &mut Vector) -> Result<f64> {
        self.approach(u, delta)?;
        let w = self.energy(delta)?;
        Ok(crate::parallel::sum_f64(self.comm, w) + self.ft.dot(u)?)
    }

    /// g = ∇Π(u) = F̃ − Bᵀ f(u), zero on the DOFs that are not free; `delta`
    /// and `f` are scratch (they hold −B u and f(u) on return). Collective.
    pub fn gradient(&self, u: &Vector, delta: &mut Vector, f: &mut Vector, g: &mut Vector) -> Result<()> {
        self.approach(u, delta)?;
        self.forces(delta, f)?;
        self.op.b.mult_transpose(f, g)?;
        g.aypx(-1.0, &self.ft)?;
        let mut gv = g.view_mut()?;
        for (x, &on) in gv.iter_mut().zip(&self.free) {
            if !on {
                *x = 0.0;
            }
        }
        Ok(())
    }

    /// Π(u) and g = ∇Π(u) with one B and one Bᵀ apply (scratch as in
    /// [`Dual::gradient`]). Collective.
    pub fn value_and_gradient(&self, u: &Vector, delta: &mut Vector, f: &mut Vector, g: &mut Vector) -> Result<f64> {
        self.gradient(u, delta, f, g)?;
        let w = self.energy(delta)?;
        Ok(crate::parallel::sum_f64(self.comm, w) + self.ft.dot(u)?)
    }

    /// ‖F̃ − Bᵀf‖₂ / ‖F̃‖₂ for a gradient `g`. Collective.
    pub fn feasibility(&self, g: &Vector) -> Result<f64> {
        Ok(g.norm(NormType::Two)? / self.ft_norm)
    }

    /// Hessian weight of every contact at `delta` (Tangent; `open` k̃ for
    /// the contacts with δ ≤ 0) or k̃ (Bilateral); with friction a 3 × 3
    /// block W per contact (row-major over n, t1, t2; the Jacobian of
    /// ∇Π is Σ B_iᵀ W_i B_i): the normal weight, then the tangential rows
    /// ([`Tangential::jacobian`]; k_t for Bilateral).
    fn weights(&self, delta: &Vector, kind: Weights, open: f64) -> Result<Vec<f64>> {
        let normal = |d: f64, k: f64| {
            let e = self.p - 2.0;
            if kind == Weights::Bilateral {
                k
            } else if d <= 0.0 || k == 0.0 {
                open * k
            } else if e == 0.0 {
                k
            } else {
                let d = if e < 0.0 { d.max(DELTA_FLOOR) } else { d };
                k * (self.p - 1.0) * d.powf(e)
            }
        };
        let dv = delta.view()?;
        let Some(t) = &self.friction else {
            return Ok((0..self.k.len()).map(|i| normal(dv[i], self.k[i])).collect());
        };
        let mut w = Vec::with_capacity(9 * self.k.len());
        for i in 0..self.k.len() {
            let w_n = normal(dv[3 * i], self.k[i]);
            let (h, tn) = match kind {
                Weights::Bilateral => ([t.kt[i], 0.0, 0.0, t.kt[i]], [0.0; 2]),
                Weights::Tangent => {
                    let f_n = self.normal_force(i, dv[3 * i]);
                    let (s, _) = t.force(i, [-dv[3 * i + 1], -dv[3 * i + 2]], f_n);
                    // The coupling follows f_n, whose weight is w_n only where the contact is closed.
                    t.jacobian(i, s, f_n, if dv[3 * i] > 0.0 { w_n } else { 0.0 }, open)
                }
            };
            w.extend_from_slice(&[w_n, 0.0, 0.0, tn[0], h[0], h[1], tn[1], h[2], h[3]]);
        }
        Ok(w)
    }

    /// The (row, column) pairs of the Hessian in COO order: every
    /// contact's dense block on its at most 12 DOFs of B, then the diagonal
    /// of every owned DOF (repeats are summed).
    fn coo(&self) -> (Vec<PetscInt>, Vec<PetscInt>) {
        let (mut ii, mut jj) = (Vec::new(), Vec::new());
        for i in 0..self.row_start.len() - 1 {
            let idx = &self.row_idx[self.row_start[i]..self.row_start[i + 1]];
            for &r in idx {
                for &c in idx {
                    ii.push(r);
                    jj.push(c);
                }
            }
        }
        for &blk in &self.blk_owned {
            for d in 0..6 {
                ii.push(6 * blk + d);
                jj.push(6 * blk + d);
            }
        }
        (ii, jj)
    }

    /// The values of [`Dual::coo`]'s entries for contact weights `w`:
    /// w_i b_iᵀ b_i (B_iᵀ W_i B_i with friction), then `mu` · diag on the free DOFs and 1 on the others.
    fn coo_values(&self, w: &[f64], mu: f64) -> Result<Vec<f64>> {
        let mut v = Vec::with_capacity(self.row_idx.len() * 6 + 6 * self.blk_owned.len());
        if self.rows == 1 {
            for (i, &wi) in w.iter().enumerate() {
                let b = &self.row_val[self.row_start[i]..self.row_start[i + 1]];
                for &br in b {
                    for &bc in b {
                        v.push(wi * br * bc);
                    }
                }
            }
        } else {
            // Σ_kl b_k[r] W_kl b_l[c] over the contact's rows k, l.
            for i in 0..self.k.len() {
                let (a, b) = (self.row_start[i], self.row_start[i + 1]);
                let (n, rows) = (b - a, &self.row_val[3 * a..3 * b]);
                let wi = &w[9 * i..9 * i + 9];
                for r in 0..n {
                    let rw: [f64; 3] = std::array::from_fn(|l| (0..3).map(|k| rows[k * n + r] * wi[3 * k + l]).sum());
                    for c in 0..n {
                        v.push((0..3).map(|l| rw[l] * rows[l * n + c]).sum());
                    }
                }
            }
        }
        let dv = self.diag.view()?;
        for j in 0..dv.len() {
            v.push(if self.free[j] { mu * dv[j] } else { 1.0 });
        }
        Ok(v)
    }

    /// A Hessian matrix of this problem's pattern: type `"aij"`, rows and
    /// columns by body (six per body, the layout of B's columns),
    /// preallocated exactly from B's non-zero DOFs (a sphere's rotations
    /// only on the diagonal) by `MatSetPreallocationCOO`, with the
    /// rigid-body near null space set (for `-compat_pc_type gamg`).
    /// Block size 1: PETSc 3.18's MPIAIJ COO assembly loses off-rank
    /// entries when the block size is 6 (1 rank is right, 2 are not), so
    /// the default preconditioner is point Jacobi, not 6×6 `pbjacobi`.
    /// Made once per prefix and problem (the COO preallocation was 3 % of
    /// a frictional solve on the n = 20 pyramid, made again at each round);
    /// later calls share it. Collective.
    pub fn hessian_matrix(&self, bodies: &Bodies, prefix: &str) -> Result<Mat> {
        if let Some((_, h)) = self.hessians.borrow().iter().find(|(p, _)| p == prefix) {
            return Ok(h.share());
        }
        let n = 6 * self.op.n_owned as PetscInt;
        // With friction every contact couples all six DOFs of its bodies:
        // 6 × 6 blocks (BAIJ, block ILU) pay; frictionless, only B's
        // non-zero DOFs are stored.
        let (kind, bs) = if self.rows == 3 { ("baij", 6) } else { ("aij", 1) };
        let mut h = Mat::create(self.comm, kind, bs, n, n)?;
        h.set_options_prefix(prefix)?;
        h.set_from_options()?;
        let (ii, jj) = self.coo();
        h.set_preallocation_coo(&ii, &jj)?;
        let nns = crate::parallel::rigid_modes::rigid_modes(self.comm, bodies, self.op.n_owned, &self.diag, |j| self.free[j])?;
        h.set_near_null_space(&nns)?;
        self.hessians.borrow_mut().push((prefix.to_string(), h.share()));
        Ok(h)
    }

    /// Fills `h` (from [`Dual::hessian_matrix`]) with Σ B_iᵀ G_i B_i for
    /// 3 × 3 blocks `g` (row-major over n, t1, t2; frictional problems)
    /// plus `reg` · diag on the free DOFs and 1 on the others. Collective.
    pub fn assemble_blocks(&self, g: &[f64], reg: f64, h: &mut Mat) -> Result<()> {
        h.zero_entries()?;
        h.set_values_coo(&self.coo_values(g, reg)?, InsertMode::Add)
    }

    /// Fills `h` (from [`Dual::hessian_matrix`]) with ∇²Π at `delta` (or
    /// the bilateral Hessian) plus the regularisation: `open` k̃ on the open
    /// contacts (δ ≤ 0) and `mu` · diag on the free DOFs. Collective.
    pub fn hessian(&self, delta: &Vector, kind: Weights, open: f64, mu: f64, h: &mut Mat) -> Result<()> {
        let w = self.weights(delta, kind, open)?;
        h.zero_entries()?;
        h.set_values_coo(&self.coo_values(&w, mu)?, InsertMode::Add)
    }
}

/// How a dual solve (Newton or APGD) ended.
pub struct DualResult {
    /// Scaled displacements u (multiply by s^{1/(p−1)} for the unscaled ones).
    pub u: Vector,
    /// Compatible force of every local contact (unscaled).
    pub f: Vec<f64>,
    /// Newton steps, or APGD iterations.
    pub iterations: u64,
    /// Krylov iterations over all Newton steps (and the start); 0 for APGD.
    pub linear: u64,
    /// ‖F̃ − Bᵀf‖₂/‖F̃‖₂ at the end.
    pub feasibility: f64,
    pub converged: bool,
    /// Newton stopped because ‖∇Π‖ had stopped falling ([`super::newton`]).
    pub stalled: bool,
}

impl Dual<'_> {
    /// The result at `u`: forces (unscaled) and feasibility. Collective.
    pub fn finish(&self, u: Vector, iterations: u64, linear: u64, tol: f64) -> Result<DualResult> {
        let mut delta = self.op.contact_vec()?;
        let mut f = self.op.contact_vec()?;
        let mut g = self.diag.duplicate()?;
        self.gradient(&u, &mut delta, &mut f, &mut g)?;
        let feasibility = self.feasibility(&g)?;
        let fv: Vec<f64> = f.view()?.iter().map(|x| x * self.scale).collect();
        Ok(DualResult { u, f: fv, iterations, linear, feasibility, converged: feasibility <= tol, stalled: false })
    }
}
