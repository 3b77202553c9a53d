//! The DEM's Newton problem of one step (eq 63): residual = inertia −
//! external + contact, the Jacobian as 6×6 body blocks and 12×12 contact
//! blocks in MPIBAIJ (bs 6, or 3 when no contact couples rotations), ghosts'
//! increments forwarded at each evaluation, a line-search pre-check that
//! keeps every gap above a fraction of its value; solved by PETSc SNES.
use super::assemble::{normal_at, normal_tangent, tangential, ContactElement, Mat12, NormalEval, TangentialElement, Vec12};
use super::elements::*;
use super::law::NormalLaw;
use super::rigid::{self, Newmark, RigidState};
use crate::body::dof_free;
use crate::body::Bodies;
use crate::contact::WALL_INDEX;
use crate::parallel::exchange::forward_increments;
use crate::parallel::{self};
use crate::petsc::{self, InsertMode, Mat, PetscInt, Snes, Vector};
use crate::solver::{SolverError, StepContext};
use nalgebra::{Matrix3, Vector3};

/// Why an evaluation of the Newton problem failed.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("PETSc: {0}")]
    Petsc(#[from] crate::petsc::PetscError),
    #[error("contact {}-{} (sub {} {}): gap closed (gap at detection {gap:e})", key.a, key.b, key.sub_a, key.sub_b)]
    GapClosed { key: crate::contact::ContactKey, gap: f64 },
}

/// Newton also stops when ‖F‖ is within this factor of the round-off floor
/// of the residual (see [`Problem::residual`]).
pub(super) const FLOOR_FACTOR: f64 = 64.0;

/// Friction residual, tangent and law result of one contact.
pub(super) type FrictionEval = (Vec12, super::law::Friction);

/// Everything a residual/Jacobian evaluation reads.
/// A residual and where it was taken: (local increments, owned entries,
/// floor).
pub(super) type CachedResidual = (Vec<f64>, Vec<f64>, f64);

pub(super) struct Problem<'a> {
    pub(super) ctx: &'a StepContext<'a>,
    pub(super) bodies: &'a Bodies,
    pub(super) states: Vec<RigidState>,
    pub(super) elements: Vec<ContactElement>,
    pub(super) law: NormalLaw,
    pub(super) zeta: f64,
    pub(super) dt: f64,
    pub(super) nm: Newmark,
    /// Friction part of each contact (`None`: frictionless).
    pub(super) tangential: Vec<Option<TangentialElement>>,
    /// `[dem] tangent`.
    pub(super) tangent_kind: crate::scene::DemTangent,
    /// `[dem] first_tangent`.
    pub(super) first_tangent: crate::scene::DemFirstTangent,
    /// Round-off floor of ‖F‖₂ at the last residual evaluation (global).
    pub(super) floor: std::cell::Cell<f64>,
    /// The local increments of the last iterate and `gap_grad` of every
    /// contact there: the residual, the Jacobian and the step limit at one
    /// Newton iterate share one evaluation of the (costly, exact mesh) gaps.
    pub(super) gaps: std::cell::RefCell<(Vec<f64>, Vec<Gap>)>,
    /// Prescribed displacement over the step of the wall of each contact
    /// (zero for body–body contacts): u_b of a moving wall.
    pub(super) wall_shift: Vec<Vector3<f64>>,
    /// The last residual: the local increments it was taken at, its owned
    /// entries and its floor (the energy line search and SNES evaluate the
    /// same iterate twice).
    pub(super) last_residual: std::cell::RefCell<Option<CachedResidual>>,
    /// Block size of the Jacobian: 6 (a body's DOFs), or 3 when no contact
    /// couples rotations (see [`Problem::rotation_free`]).
    pub(super) bs: std::cell::Cell<usize>,
}

/// Gap, its gradient and the normal of a contact at an iterate.
pub(super) type Gap = (f64, Vec12, Vector3<f64>);

/// What [`Problem::eval`] evaluates besides the residual.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    Residual,
    /// The tangent at x.
    Tangent,
    /// The tangent at the step's start with `[dem] first_tangent = "moving"`
    /// ([`Problem::moving_on`]).
    MovingTangent,
}

impl Problem<'_> {
    pub(super) fn n_owned(&self) -> usize {
        self.ctx.layout.n_owned
    }

    /// `gap_grad` of every contact at the local increments `all`, from the
    /// cache when `all` is the last iterate's.
    pub(super) fn gaps_at(&self, all: &[f64]) -> std::cell::Ref<'_, (Vec<f64>, Vec<Gap>)> {
        if self.gaps.borrow().0.as_slice() != all || self.gaps.borrow().1.len() != self.elements.len() {
            let g: Vec<Gap> = (0..self.elements.len()).map(|k| super::assemble::gap_grad(&self.elements[k].kin, &self.x12(all, k))).collect();
            *self.gaps.borrow_mut() = (all.to_vec(), g);
        }
        self.gaps.borrow()
    }

    /// Increments of every local body (owned from `x`, ghosts forwarded,
    /// a Lees–Edwards image's with its drift over the step).
    pub(super) fn local_increments(&self, x: &Vector) -> Result<Vec<f64>, EvalError> {
        let owned: Vec<f64> = x.view()?.to_vec();
        let ghosts = forward_increments(self.ctx.comm, self.ctx.layout, &owned, self.dt);
        let mut all = owned;
        all.extend(ghosts);
        Ok(all)
    }

    pub(super) fn x12(&self, all: &[f64], k: usize) -> Vec12 {
        let mut x = self.x12_dir(all, k);
        if self.ctx.contacts.ib[k] == WALL_INDEX {
            x.fixed_rows_mut::<3>(6).copy_from(&self.wall_shift[k]);
        }
        x
    }

    /// The 12 components of a direction `all` of the unknowns at contact
    /// `k` (a wall's prescribed motion is no part of it).
    pub(super) fn x12_dir(&self, all: &[f64], k: usize) -> Vec12 {
        let (ia, ib) = (self.ctx.contacts.ia[k], self.ctx.contacts.ib[k]);
        let mut x = Vec12::zeros();
        for j in 0..6 {
            x[j] = all[6 * ia + j];
            if ib != WALL_INDEX {
                x[6 + j] = all[6 * ib + j];
            }
        }
        x
    }

    /// Normal evaluation of contact `k` and, with friction and f_n > 0, its
    /// tangential residual and law result; unless `want` is the residual
    /// alone, the friction tangent is added to `kt`.
    pub(super) fn eval(
        &self,
        k: usize,
        x12: &Vec12,
        gap: Gap,
        want: Want,
        kt: Option<&mut Mat12>,
    ) -> Result<(NormalEval, Option<FrictionEval>), EvalError> {
        let e = normal_at(&self.elements[k], &self.law, self.zeta, self.dt, gap).ok_or_else(|| {
            let c = &self.ctx.contacts;
            EvalError::GapClosed { key: c.key(k), gap: c.gap[k] }
        })?;
        let t = match &self.tangential[k] {
            Some(te) if e.force > 0.0 => {
                let dfn = e.stiffness * e.grad;
                let tangent = if want == Want::Residual { None } else { kt.map(|m| (&dfn, m)) };
                let moved = if want == Want::MovingTangent { self.moving_on(k, te, e.force, x12) } else { None };
                tangential(te, self.dt, e.force, tangent, moved.as_ref().unwrap_or(x12))
            }
            _ => None,
        };
        Ok((e, t))
    }

    /// For [`Want::MovingTangent`] at the step's start (x = 0, the first
    /// Newton iterate): x + Δt v, where contact `k` slides at configuration i
    /// and its rates carry it farther in the step than its stick range
    /// μ_d f_n / ε_t; the friction tangent is then the slip tangent there.
    /// At x = 0 no contact has slipped yet, so the tangent there sticks
    /// every sliding contact and the first Newton step holds a moving pack
    /// on its tangential springs: on the collapsing tetrapod pile 740 of
    /// 3,500 contacts then changed state in the first step, and the next
    /// iterations went to the stick/slip changes that followed. Contacts
    /// sticking at i keep the tangent at x: taken from the rates for every
    /// contact, a settled, vibrating pile needed twice the iterations. The
    /// residual and the normal tangent are those at x, so Newton solves the
    /// same equations, along another path: on small settling packs the path
    /// (and with it the adaptive Δt) changed the slip while landing by up
    /// to 0.3 mm, hence not the default.
    pub(super) fn moving_on(&self, k: usize, te: &TangentialElement, f_n: f64, x12: &Vec12) -> Option<Vec12> {
        let mut step = self.dt * rates12(self.ctx, self.bodies, k, self.dt);
        if self.ctx.contacts.ib[k] == WALL_INDEX {
            step.fixed_rows_mut::<6>(6).fill(0.0); // x holds a wall's step already
        }
        (te.sliding && te.law.eps_t * te.apply(&step).norm() > te.law.mu_d * f_n).then(|| x12 + step)
    }

    pub(super) fn dof(&self, i: usize) -> PetscInt {
        self.ctx.layout.global_index[i] as PetscInt
    }

    /// True when no contact of this rank couples a body's rotations: no
    /// friction and spheres only (a frictionless sphere contact acts
    /// through the centres). The rotational DOFs then have their inertia
    /// block alone, and a Jacobian of 3×3 blocks leaves them out of the
    /// coupled part: a quarter of the 6×6 blocks' entries for ILU and MatMult.
    pub(super) fn rotation_free(&self) -> bool {
        let c = self.ctx.contacts;
        self.tangential.iter().all(Option::is_none)
            && (0..c.len()).all(|k| {
                sphere_radius(self.ctx, self.bodies, c.ia[k]).is_some()
                    && (c.ib[k] == WALL_INDEX || sphere_radius(self.ctx, self.bodies, c.ib[k]).is_some())
            })
    }

    /// The residual (eq 63) at `x`. Also records in `self.floor` the
    /// round-off floor of ‖F‖₂: per entry, ε times the sizes of the terms
    /// summed into it, plus for each contact |dF/dg| times the round-off of
    /// its gap. Near a barrier the stiffness is huge (∝ g^{n₂−1}) and the
    /// floor can exceed any fixed absolute tolerance, and it grows as Δt
    /// shrinks (inertia ∝ 1/Δt²): Newton then stagnates there and the step
    /// would be rejected again and again (the 2-rank crowd of tests/dem.rs
    /// died at dt_min this way).
    pub(super) fn residual(&self, x: &Vector, f: &mut Vector) -> Result<(), EvalError> {
        let all = self.local_increments(x)?;
        // The same iterate on every rank (residual_at is collective: a rank
        // whose own increments did not change must not skip it alone).
        let hit = self.last_residual.borrow().as_ref().is_some_and(|(at, _, _)| *at == all);
        if parallel::all_ok(self.ctx.comm, hit) {
            if let Some((_, vals, floor)) = self.last_residual.borrow().as_ref() {
                f.view_mut()?.copy_from_slice(vals);
                self.floor.set(*floor);
            }
            return Ok(());
        }
        self.residual_at(&all, f)?;
        let vals = f.view()?.to_vec();
        *self.last_residual.borrow_mut() = Some((all, vals, self.floor.get()));
        Ok(())
    }

    /// The residual at the local increments `all` (see [`Self::residual`]).
    pub(super) fn residual_at(&self, all: &[f64], f: &mut Vector) -> Result<(), EvalError> {
        let n = self.n_owned();
        f.zero()?;
        let cap = 6 * n + 12 * self.ctx.contacts.len();
        let mut idx: Vec<PetscInt> = Vec::with_capacity(cap);
        let mut val: Vec<f64> = Vec::with_capacity(cap);
        let mut scale = vec![0.0; all.len()];
        for i in 0..n {
            let u = Vector3::new(all[6 * i], all[6 * i + 1], all[6 * i + 2]);
            let a = Vector3::new(all[6 * i + 3], all[6 * i + 4], all[6 * i + 5]);
            let (r, _) = rigid::residual(&self.states[i], &self.nm, &u, &a);
            let sc = rigid::residual_scale(&self.states[i], &self.nm, &u, &a);
            for k in 0..6 {
                if dof_free(self.bodies.dof_mask[i], k) {
                    scale[6 * i + k] += sc[k];
                }
            }
            for k in 0..6 {
                idx.push(6 * self.dof(i) + k as PetscInt);
                val.push(if dof_free(self.bodies.dof_mask[i], k) { r[k] } else { all[6 * i + k] });
            }
        }
        let gaps = self.gaps_at(all);
        for k in 0..self.ctx.contacts.len() {
            // Open beyond ḡ: no force (nor friction).
            if gaps.1[k].0 >= self.law.gbar {
                continue;
            }
            let x12 = self.x12(all, k);
            // A closed gap here must not end this rank's residual alone (the
            // others would wait in its collectives): NaN in the residual makes
            // the global norm NaN, so every rank's SNES stops alike and the
            // step is redone shorter.
            let (mut e, t) = match self.eval(k, &x12, gaps.1[k], Want::Residual, None) {
                Ok(et) => et,
                Err(msg) => {
                    log::debug!("dem: {msg}");
                    let i = self.ctx.contacts.ia[k];
                    idx.push(6 * self.dof(i));
                    val.push(f64::NAN);
                    continue;
                }
            };
            if e.force == 0.0 {
                continue;
            }
            if let Some((r, fr)) = &t {
                e.residual += r;
                e.force += fr.force.norm();
            }
            let dg = super::assemble::gap_noise(&self.elements[k].kin, &x12);
            let grad = e.grad;
            if !e.residual.iter().all(|v| v.is_finite()) {
                let c = &self.ctx.contacts;
                log::debug!(
                    "dem: non-finite residual of contact {}-{} (sub {} {}): gap at detection {:e}, force {:e}, friction {:?}",
                    c.a[k],
                    c.b[k],
                    c.sub_a[k],
                    c.sub_b[k],
                    c.gap[k],
                    e.force,
                    self.tangential[k]
                );
            }
            for (side, body) in [(0, self.ctx.contacts.ia[k]), (1, self.ctx.contacts.ib[k])] {
                if body == WALL_INDEX {
                    continue;
                }
                for j in 0..6 {
                    if dof_free(self.bodies.dof_mask[body], j) {
                        idx.push(6 * self.dof(body) + j as PetscInt);
                        val.push(e.residual[6 * side + j]);
                        let gj = grad[6 * side + j].abs();
                        scale[6 * body + j] += e.force * gj + e.stiffness.abs() * gj * dg / f64::EPSILON;
                    }
                }
            }
        }
        let local: f64 = scale.iter().map(|s| s * s).sum();
        self.floor.set(f64::EPSILON * parallel::sum_f64(self.ctx.comm, local).sqrt());
        f.set_values(&idx, &val, InsertMode::Add)?;
        Ok(f.assemble()?)
    }

    /// The Jacobian at `x`. `pattern`: the first assembly of `a` (at the
    /// step's start, x = 0; with `first_tangent = "moving"` it takes
    /// [`Self::moving_on`]'s friction branches), which inserts a (zero)
    /// block for every listed contact so that the nonzero pattern holds for
    /// the whole solve; later assemblies skip open contacts.
    pub(super) fn jacobian(&self, x: &Vector, a: &mut Mat, pattern: bool) -> Result<(), EvalError> {
        let all = self.local_increments(x)?;
        let n = self.n_owned();
        a.zero_entries()?;
        for i in 0..n {
            let u = Vector3::new(all[6 * i], all[6 * i + 1], all[6 * i + 2]);
            let al = Vector3::new(all[6 * i + 3], all[6 * i + 4], all[6 * i + 5]);
            let (_, mut k) = rigid::residual(&self.states[i], &self.nm, &u, &al);
            for r in 0..6 {
                if !dof_free(self.bodies.dof_mask[i], r) {
                    k.row_mut(r).fill(0.0);
                    k.column_mut(r).fill(0.0);
                    k[(r, r)] = 1.0;
                }
            }
            let bi = self.dof(i);
            if self.bs.get() == 3 {
                // Translation and rotation blocks; inertia does not couple them.
                for part in 0..2 {
                    let blk = k.fixed_view::<3, 3>(3 * part, 3 * part).transpose();
                    let r = 2 * bi + part as PetscInt;
                    a.set_values_blocked(&[r], &[r], blk.as_slice(), InsertMode::Add)?;
                }
            } else {
                a.set_values_blocked(&[bi], &[bi], k.transpose().as_slice(), InsertMode::Add)?;
            }
        }
        let gaps = self.gaps_at(&all);
        let mut vals = [0.0; 144];
        for k in 0..self.ctx.contacts.len() {
            let open = gaps.1[k].0 >= self.law.gbar;
            if open && !pattern {
                continue;
            }
            // Open contacts, and inactive ones, insert zero blocks at the
            // first assembly: the nonzero pattern must not change between
            // Newton iterations, since a new off-process block in an
            // assembled MPIBAIJ matrix left its off-diagonal part
            // inconsistent (SEGV in MatMult_MPIBAIJ on 2 ranks once a
            // contact switched on mid-solve). A closed gap also gives zero
            // blocks (the residual at this x is NaN already, see `residual`).
            let x12 = self.x12(&all, k);
            if self.bs.get() == 3 {
                self.insert_translational(a, k, &x12, gaps.1[k], open)?;
                continue;
            }
            let mut t = Mat12::zeros();
            if !open {
                let want = if pattern && self.first_tangent == crate::scene::DemFirstTangent::Moving { Want::MovingTangent } else { Want::Tangent };
                // The friction tangent goes into t first, the normal one after.
                match self.eval(k, &x12, gaps.1[k], want, Some(&mut t)) {
                    Ok((e, _)) if e.force != 0.0 => {
                        t += normal_tangent(&self.elements[k], &x12, self.tangent_kind, &e);
                    }
                    Ok(_) => {}
                    Err(msg) => log::debug!("dem: Jacobian: {msg}"),
                }
            }
            let (ia, ib) = (self.ctx.contacts.ia[k], self.ctx.contacts.ib[k]);
            // A fixed DOF's row is the identity (its increment stays 0), and
            // its column is zero too: the same Newton direction, and the
            // Jacobian keeps the symmetry of the contact terms (CG, ICC, AMG).
            for (s, body) in [(0, ia), (1, ib)] {
                if body == WALL_INDEX {
                    continue;
                }
                for j in 0..6 {
                    if !dof_free(self.bodies.dof_mask[body], j) {
                        t.row_mut(6 * s + j).fill(0.0);
                        t.column_mut(6 * s + j).fill(0.0);
                    }
                }
            }
            // One call per contact: the 12×12 block row-major over block rows
            // and columns [a, b] (just [a] against a wall).
            if ib == WALL_INDEX {
                for r in 0..6 {
                    for c in 0..6 {
                        vals[6 * r + c] = t[(r, c)];
                    }
                }
                a.set_values_blocked(&[self.dof(ia)], &[self.dof(ia)], &vals[..36], InsertMode::Add)?;
            } else {
                vals.copy_from_slice(t.transpose().as_slice());
                let rows = [self.dof(ia), self.dof(ib)];
                a.set_values_blocked(&rows, &rows, &vals, InsertMode::Add)?;
            }
        }
        Ok(a.assemble()?)
    }

    /// Contact `k`'s part of the 3×3-block Jacobian (no contact couples
    /// rotations, see [`Self::rotation_free`]): its translational block K,
    /// [K, −K; −K, K] over [a, b], just K against a wall; zero blocks when
    /// `open` (the first assembly's pattern) or not loaded.
    fn insert_translational(&self, a: &mut Mat, k: usize, x12: &Vec12, gap: Gap, open: bool) -> Result<(), EvalError> {
        let mut kt = Matrix3::zeros();
        if !open {
            match self.eval(k, x12, gap, Want::Tangent, None) {
                Ok((e, _)) if e.force != 0.0 => {
                    kt = super::assemble::normal_tangent_translational(&self.elements[k], x12, self.tangent_kind, &e)
                        .expect("3×3 blocks only for sphere and wall contacts");
                }
                Ok(_) => {}
                Err(msg) => log::debug!("dem: Jacobian: {msg}"),
            }
        }
        let (ia, ib) = (self.ctx.contacts.ia[k], self.ctx.contacts.ib[k]);
        // A fixed DOF's row and column are zero here (its identity is on the
        // body's own block), as in the 12×12 path.
        let masked = |body: usize| -> [f64; 3] {
            let m = self.bodies.dof_mask[body];
            [0, 1, 2].map(|j| if dof_free(m, j) { 1.0 } else { 0.0 })
        };
        let ma = masked(ia);
        let mut vals = [0.0; 36];
        if ib == WALL_INDEX {
            for i in 0..3 {
                for j in 0..3 {
                    vals[3 * i + j] = if ma[i] * ma[j] != 0.0 { kt[(i, j)] } else { 0.0 };
                }
            }
            let r = [2 * self.dof(ia)];
            return Ok(a.set_values_blocked(&r, &r, &vals[..9], InsertMode::Add)?);
        }
        let mb = masked(ib);
        let m = [ma, mb];
        // Row-major over block rows [a, b] and block columns [a, b].
        for (r, mr) in m.iter().enumerate() {
            for (c, mc) in m.iter().enumerate() {
                for i in 0..3 {
                    for j in 0..3 {
                        let v = if r == c { kt[(i, j)] } else { -kt[(i, j)] };
                        vals[(3 * r + i) * 6 + 3 * c + j] = if mr[i] * mc[j] != 0.0 { v } else { 0.0 };
                    }
                }
            }
        }
        let rows = [2 * self.dof(ia), 2 * self.dof(ib)];
        Ok(a.set_values_blocked(&rows, &rows, &vals, InsertMode::Add)?)
    }

    /// Largest factor s ≤ 1 such that the step x → x − s y keeps every gap
    /// above `fraction` of its value at x, by the linear prediction (a lower
    /// bound for the linear and convex gaps; for the exact mesh gaps a
    /// closed gap on the way is a domain error and the step is redone).
    pub(super) fn step_limit(&self, x: &Vector, y: &Vector, fraction: f64) -> Result<f64, EvalError> {
        let all = self.local_increments(x)?;
        let dir = self.local_increments(y)?;
        let mut s: f64 = 1.0;
        let gaps = self.gaps_at(&all);
        for k in 0..self.ctx.contacts.len() {
            let (g, grad, _) = gaps.1[k];
            let dg = -grad.dot(&self.x12_dir(&dir, k)); // change of g along −y
            if g > 0.0 && g + dg < fraction * g {
                s = s.min((1.0 - fraction) * g / -dg);
            }
        }
        Ok(-parallel::max_f64(self.ctx.comm, -s))
    }

    /// The step length λ ∈ (0, s] along the Newton direction (PETSc steps to
    /// x − λ y) where the step's incremental energy Π stops falling: a root
    /// of h(λ) = yᵀF(x − λy) = −dΠ/dλ, by false position (Illinois) between
    /// h(0) > 0 and h(s) < 0; s when Π still falls at s. F is ∇Π for
    /// conservative contacts (the damping of a step is a function of the
    /// gap, ġ = (g − g^i)/Δt), and Π falls at every accepted step, so Newton
    /// cannot cycle between active sets, which it did with full steps and
    /// crept through with PETSc's backtracking on ‖F‖ (the dropped stiff
    /// pyramid: contacts switching on and off in a period of 2 or 4
    /// iterations). Stops once |h| ≤ h(0)/2 (a curvature condition), or at a
    /// direction that is no descent (h(0) ≤ 0, nonsymmetric tangents with
    /// friction): then s.
    pub(super) fn energy_step(&self, x: &Vector, y: &Vector, s: f64) -> Result<f64, EvalError> {
        let mut w = x.duplicate()?;
        let mut fw = x.duplicate()?;
        let mut h = |lambda: f64| -> Result<f64, EvalError> {
            w.waxpy(-lambda, y, x)?;
            self.residual(&w, &mut fw)?;
            let v = y.dot(&fw)?;
            // A closed gap (NaN residual) lies beyond the minimum.
            Ok(if v.is_nan() { f64::NEG_INFINITY } else { v })
        };
        let h0 = h(0.0)?;
        // (NaN included: no descent to search along)
        if h0.is_nan() || h0 <= 0.0 {
            return Ok(s);
        }
        let hs = h(s)?;
        if hs >= -0.5 * h0 {
            return Ok(s);
        }
        // Without a root in time: the last point where Π still fell.
        crate::roots::illinois(0.0, h0, s, hs, 0.5 * h0, 0.01, ENERGY_SEARCH_EVALUATIONS, h)
    }
}

/// Residual evaluations the energy line search may spend on one Newton step.
pub(super) const ENERGY_SEARCH_EVALUATIONS: usize = 8;

/// One Newton solve by SNES; returns (converged, Newton iterations, KSP
/// iterations, solution). `full_steps`: the "basic" line search instead of
/// PETSc's backtracking.
///
/// Newton starts from zero increments. A predictor (v Δt + a Δt²/2 per
/// body, cut by the gap limit, taken where it lowers ‖F‖) was measured and
/// not kept: on the collapsing tetrapods it took ‖F‖ from 3.6e6 to ~1.5e5,
/// what the first Newton iteration does, and saved 3 % of the Newton
/// iterations (the dropped pyramid 4 %) for two more residual
/// evaluations a step. A frictional tetrapod step takes ~9 iterations
/// against ~5.5 without friction because about 1,000 of its 6,800
/// contacts switch between sticking and sliding, and 100 between open and
/// closed, over its first three iterations; the stiff end converges
/// quadratically.
pub(super) fn solve(prob: &Problem, d: &crate::scene::DemSettings, full_steps: bool) -> Result<(bool, i64, u64, Vector), SolverError> {
    let comm = prob.ctx.comm;
    let n = prob.n_owned();
    let nb = n as PetscInt;
    // 3×3 blocks when no contact couples rotations (every rank agrees).
    let bs: usize = if parallel::all_ok(comm, prob.rotation_free()) { 3 } else { 6 };
    prob.bs.set(bs);
    let parts = 6 / bs; // block rows per body: [translation, rotation] or one
                        // Preallocation: block rows get the diagonal plus one block per local
                        // contact of the body (its translational row with 3×3 blocks); partners
                        // on other ranks add more (allowed).
    let mut d_nnz = vec![1 as PetscInt; parts * n];
    let mut o_nnz = vec![0 as PetscInt; parts * n];
    for k in 0..prob.ctx.contacts.len() {
        let (ia, ib) = (prob.ctx.contacts.ia[k], prob.ctx.contacts.ib[k]);
        for (p, q) in [(ia, ib), (ib, ia)] {
            if p < n && q != WALL_INDEX {
                if q < n {
                    d_nnz[parts * p] += 1;
                } else {
                    o_nnz[parts * p] += 1;
                }
            }
        }
    }
    let total = parallel::sum_u64(comm, n as u64) as PetscInt;
    let (rows, all_rows) = ((parts * n) as PetscInt, parts as PetscInt * total);
    for i in 0..parts * n {
        d_nnz[i] = (d_nnz[i] + 4).min(rows.max(1));
        o_nnz[i] = (o_nnz[i] + 4).min((all_rows - rows).max(0));
    }
    // BAIJ (block ILU), or AIJ of the block size for GAMG, which needs a
    // matrix graph PETSc 3.18 makes only of AIJ.
    let kind = if petsc::options::get("-pc_type")?.as_deref() == Some("gamg") { "aij" } else { "baij" };
    let mut jac = Mat::blocked(comm, kind, bs as PetscInt, 6 * nb, 6 * nb, &d_nnz, &o_nnz)?;
    jac.set_new_nonzero_allocation_err(false)?;
    let mut x = Vector::mpi(comm, 6 * nb)?;
    // For `-pc_type gamg`: the rigid motions (ignored by other preconditioners).
    jac.set_near_null_space(&crate::parallel::rigid_modes::rigid_modes(comm, prob.bodies, n, &x, |j| {
        crate::body::dof_free(prob.bodies.dof_mask[j / 6], j % 6)
    })?)?;
    x.zero()?;
    let f = x.duplicate()?;
    let fraction = d.gap_fraction;
    let mut snes = Snes::new(comm)?;
    let energy = d.line_search == crate::scene::DemLineSearch::Energy && !full_steps;
    if full_steps || energy {
        snes.set_line_search_type("basic")?;
    }
    snes.set_function(Some(&f), |x: &Vector, f: &mut Vector| prob.residual(x, f))?;
    let mut pattern = true;
    snes.set_jacobian(&jac, None, move |x: &Vector, a: &mut Mat, _p: Option<&mut Mat>| {
        let r = prob.jacobian(x, a, pattern);
        pattern = false;
        r
    })?;
    snes.set_line_search_precheck(move |x: &Vector, y: &mut Vector| -> Result<bool, EvalError> {
        let s = prob.step_limit(x, y, fraction)?;
        let s = if energy { prob.energy_step(x, y, s)? } else { s };
        if s < 1.0 {
            y.scale(s)?;
            Ok(true)
        } else {
            Ok(false)
        }
    })?;
    // Converged also at the round-off floor of the residual (same value on
    // every rank: the floor is a global sum and ‖F‖ is global).
    // A signal also ends the iterations; the caller then abandons the step.
    snes.set_extra_convergence(|_it, fnorm: f64| -> Result<bool, EvalError> {
        Ok(fnorm <= FLOOR_FACTOR * prob.floor.get() || parallel::signals::agreed(comm))
    })?;
    let fixed = d.newton == crate::scene::DemNewton::Fixed;
    snes.set_tolerances(Some(d.newton_tolerance), Some(1e-30), Some(0.0), Some(d.newton_max_iterations as PetscInt), Some(100_000))?;
    snes.set_from_options()?;
    let result = snes.solve(None, &mut x);
    let its = snes.iteration_number().unwrap_or(0) as i64;
    let lits = snes.linear_iterations().unwrap_or(0).max(0) as u64;
    let ok = match result {
        Ok(()) => {
            let r = snes.converged_reason()?;
            if !r.converged() {
                log::debug!("dem: SNES stopped: {}", r.name);
            }
            // `fixed`: the iterations taken are the step (with one, a linearly implicit one).
            r.converged() || (fixed && r.code == crate::petsc::snes::DIVERGED_MAX_IT)
        }
        Err(e) => {
            log::debug!("dem: SNES failed: {e}");
            false
        }
    };
    // Agree (a callback error may be local).
    let ok = parallel::all_ok(comm, ok);
    if log::log_enabled!(log::Level::Debug) {
        log::debug!("dem: residual history {:?}", snes.residual_history().unwrap_or_default());
    }
    drop(snes);
    Ok((ok, its, lits, x))
}
