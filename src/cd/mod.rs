//! Contact Dynamics, `solver = "cd"` (time-step stage 3; paper olsen-kamrin
//! §4–5 and step 1 of Algorithm 1): per step
//!
//! 1. assemble B and M⁻¹ ([`operator`]), p = Φ/Δt + B v + Δt B M⁻¹ F_ext (eq 20),
//!    with the restitution substitution Φ/Δt → e_n B v for closing contacts;
//! 2. solve the QP (22) by APGD ([`apgd`], default) or the LCP (21) by PGS
//!    ([`pgs`]), warm-started from the previous step's forces;
//! 3. v⁺ = v + Δt M⁻¹ (Bᵀ f + F_ext), q⁺ = q + Δt v⁺, orientation by
//!    exp(ω⁺ Δt) (semi-implicit Euler, eq 13), on the owned free DOFs.
//!
//! f is a force (N carries the Δt): [`ContactForces::f_n`] holds it.
pub mod apgd;
pub mod operator;
pub mod pgs;

use crate::body::dof_free;
use crate::body::Bodies;
use crate::contact::{Contacts, WALL_ID_BASE};
use crate::petsc::{InsertMode, PetscInt, Stage, Vector};
use crate::scene::{CdMethod, Scene};
use crate::contact::ContactKey;
use crate::solver::{Column, ContactForces, History, HistorySpec, SolverError, Solver, StepContext, StepReport};
use nalgebra::{UnitQuaternion, Vector3, Vector6};
use operator::ContactOperator;
use std::collections::HashSet;

pub use apgd::QpResult;

/// Running totals of the contact solves (for benchmarks and logs).
#[derive(Clone, Debug, Default)]
pub struct CdStats {
    /// Steps with at least one contact somewhere.
    pub solves: u64,
    /// Solver iterations over all solves.
    pub iterations: u64,
    /// N applications (APGD) on this rank.
    pub n_applies: u64,
    /// Sum over solves of this rank's contacts × N applies.
    pub contact_applies: u64,
    /// Seconds in the solve (APGD/PGS) on this rank.
    pub solve_seconds: f64,
    /// Solves that stopped at max_iterations.
    pub not_converged: u64,
}

/// History column of the previous step's force of each contact (the warm
/// start; World history, so it moves with the contact and is checkpointed).
pub const WARM: &str = "f_previous";

/// The `cd` solver; its warm-start forces live in the World's history.
#[derive(Default)]
pub struct CdSolver {
    stages: Option<(Stage, Stage)>,
    pub stats: CdStats,
}

impl CdSolver {
    pub fn new() -> Self {
        Self::default()
    }
}

/// Combined normal restitution of a contact: the smaller of the two
/// materials' e_n (a wall uses its own material), so a perfectly plastic
/// material never bounces whatever it hits.
pub fn restitution(scene: &Scene, bodies: &Bodies, contacts: &Contacts, i: usize) -> f64 {
    let e = |m: u32| scene.materials.get(m as usize).map_or(0.0, |m| m.restitution);
    e(bodies.material[contacts.ia[i]]).min(e(contacts.material_b(i, bodies, &scene.walls)))
}

/// [v, ω] of body `i` with the external acceleration (gravity on the free
/// translational DOFs) applied for `dt`: v + Δt M⁻¹ F_ext.
fn free_velocity(bodies: &Bodies, i: usize, gravity: &Vector3<f64>, dt: f64) -> Vector6<f64> {
    let (v, w) = (bodies.velocity[i], bodies.angular_velocity[i]);
    let mut out = Vector6::new(v.x, v.y, v.z, w.x, w.y, w.z);
    let mask = bodies.dof_mask[i];
    for k in 0..6 {
        if !dof_free(mask, k) {
            out[k] = 0.0;
        } else if k < 3 {
            out[k] += dt * gravity[k];
        }
    }
    out
}

/// The opening velocity of contact `i` that a moving wall (side b) adds
/// over the step from `time`: n · (its mean velocity), 0 for other contacts.
pub fn wall_opening_rate(scene: &Scene, contacts: &Contacts, i: usize, time: f64, dt: f64) -> f64 {
    if contacts.b[i] < WALL_ID_BASE {
        return 0.0;
    }
    scene.walls.get((contacts.b[i] - WALL_ID_BASE) as usize).map_or(0.0, |w| contacts.normal[i].dot(&w.displacement(time, dt)) / dt)
}

/// p of eq 20 for the contacts of `op`: Φ/Δt + B (v + Δt M⁻¹ F_ext), with
/// the restitution substitution Φ/Δt → e_n B v for contacts that are closing
/// (B v < 0) and would close within the step without a force (so contacts
/// not yet formed do not bounce early). Collective.
pub fn rhs(op: &ContactOperator, scene: &Scene, bodies: &Bodies, contacts: &Contacts, time: f64, dt: f64) -> crate::petsc::Result<Vector> {
    let gravity = scene.simulation.gravity;
    let mut v = op.body_vec()?;
    let mut vf = op.body_vec()?;
    {
        let (mut vv, mut fv) = (v.view_mut()?, vf.view_mut()?);
        for i in 0..op.n_owned {
            let (lin, ang) = (bodies.velocity[i], bodies.angular_velocity[i]);
            vv[6 * i..6 * i + 3].copy_from_slice(lin.as_slice());
            vv[6 * i + 3..6 * i + 6].copy_from_slice(ang.as_slice());
            fv[6 * i..6 * i + 6].copy_from_slice(free_velocity(bodies, i, &gravity, dt).as_slice());
        }
    }
    let mut bv = op.contact_vec()?;
    op.b.mult(&v, &mut bv)?;
    let mut p = op.contact_vec()?;
    op.b.mult(&vf, &mut p)?;
    {
        let bvv = bv.view()?;
        let mut pv = p.view_mut()?;
        for i in 0..contacts.len() {
            let phi = contacts.gap[i] / dt;
            let e = restitution(scene, bodies, contacts, i);
            // B v and B v_free with a moving wall's velocity on side b.
            let w = wall_opening_rate(scene, contacts, i, time, dt);
            let (bv, p) = (bvv[i] + w, pv[i] + w);
            pv[i] = p + if e > 0.0 && bv < 0.0 && phi + p < 0.0 { e * bv } else { phi };
        }
    }
    Ok(p)
}

/// A post-process run after the CD solve of a step, before the bodies move:
/// given B (in `op`), the CD forces, p of eq 20 and the bodies at the start
/// of the step, it returns a normal force per local contact (compatible-cd).
pub type PostProcess<'a> = dyn FnMut(&mut ContactOperator, &Vector, &Vector, &Bodies) -> Result<Vec<f64>, SolverError> + 'a;

impl Solver for CdSolver {
    fn history(&self) -> HistorySpec {
        HistorySpec { body: Vec::new(), contact: vec![Column { name: WARM, width: 1 }] }
    }

    fn step(&mut self, ctx: &StepContext, bodies: &mut Bodies, forces: &mut ContactForces, history: &mut History) -> Result<StepReport, SolverError> {
        self.step_with(ctx, bodies, forces, history, None).map(|(report, _)| report)
    }
}

impl CdSolver {
    /// One CD step; also returns what `post` (if any) gave per contact
    /// (empty when no rank has contacts).
    pub fn step_with(
        &mut self,
        ctx: &StepContext,
        bodies: &mut Bodies,
        forces: &mut ContactForces,
        history: &mut History,
        mut post: Option<&mut PostProcess>,
    ) -> Result<(StepReport, Vec<f64>), SolverError> {
        let (comm, scene, contacts, dt) = (ctx.comm, ctx.scene, ctx.contacts, ctx.dt);
        let n_owned = ctx.layout.n_owned;
        let gravity = scene.simulation.gravity;
        let nc = contacts.len();
        let nc_global = crate::parallel::sum_u64(comm, nc as u64);
        // Forces and Δt M⁻¹ Bᵀ f per owned body (zero without contacts),
        // allocated after the solve: not beside its vectors at the peak.
        let f_local: Vec<f64>;
        let dv: Vec<Vector6<f64>>;
        let mut iterations = 0;
        let mut compatible = Vec::new();
        if nc_global > 0 {
            if self.stages.is_none() {
                self.stages = Some((Stage::register("CD assembly")?, Stage::register("CD solve")?));
            }
            let (st_asm, st_solve) = self.stages.expect("registered above");
            let guard = st_asm.push()?;
            let mut op = ContactOperator::assemble(comm, bodies, ctx.layout, contacts, dt)?;
            let p = rhs(&op, scene, bodies, contacts, ctx.time, dt)?;
            // Warm start by contact identity.
            let mut f = op.contact_vec()?;
            {
                let rows: Vec<PetscInt> = (0..nc).map(|i| op.row_offset + i as PetscInt).collect();
                let (h, warm) = (&history.contact, history.contact.col(WARM));
                let vals: Vec<f64> = (0..nc).map(|i| h.get(&contacts.key(i)).map_or(0.0, |row| warm.of(row)[0])).collect();
                f.set_values(&rows, &vals, InsertMode::Insert)?;
                f.assemble()?;
            }
            drop(guard);
            let guard = st_solve.push()?;
            let t0 = std::time::Instant::now();
            let applies0 = op.applies;
            let set = &scene.solver;
            let res = match set.method {
                CdMethod::Apgd => apgd::apgd(comm, &mut op, &p, &mut f, set.tolerance, set.max_iterations)?,
                CdMethod::Pgs => pgs::pgs(
                    comm,
                    &op,
                    ctx.layout,
                    bodies.len(),
                    &p,
                    &mut f,
                    set.tolerance,
                    set.max_iterations,
                    set.pgs_order,
                )?,
            };
            drop(guard);
            if crate::parallel::signals::stopping() {
                return Err(SolverError::Interrupted);
            }
            self.stats.solve_seconds += t0.elapsed().as_secs_f64();
            self.stats.solves += 1;
            self.stats.iterations += res.iterations;
            self.stats.n_applies += op.applies - applies0;
            self.stats.contact_applies += (op.applies - applies0) * nc as u64;
            if !res.converged {
                self.stats.not_converged += 1;
                log::warn!(
                    "step {}: cd {:?} stopped after {} iterations at residual {:e} (threshold {:e})",
                    ctx.step,
                    set.method,
                    res.iterations,
                    res.residual,
                    res.threshold
                );
            }
            iterations = res.iterations;
            f_local = f.view()?.to_vec();
            if let Some(post) = post.as_mut() {
                compatible = post(&mut op, &f, &p, bodies)?;
                if crate::parallel::signals::stopping() {
                    return Err(SolverError::Interrupted);
                }
            }
            let mut u = op.body_vec()?;
            op.b.mult_transpose(&f, &mut u)?;
            let uv = u.view()?;
            dv = (0..n_owned).map(|i| dt * (op.minv[i] * Vector6::from_column_slice(&uv[6 * i..6 * i + 6]))).collect();
        } else {
            (f_local, dv) = (vec![0.0; nc], vec![Vector6::<f64>::zeros(); n_owned]);
        }
        // A non-finite update stops the run before it reaches the bodies:
        // the driver checkpoints the last finite state.
        let bad = (0..n_owned).find(|&i| {
            let v = free_velocity(bodies, i, &gravity, dt) + dv[i];
            !(v.iter().all(|x| x.is_finite()) && (bodies.position[i] + dt * Vector3::new(v[0], v[1], v[2])).iter().all(|x| x.is_finite()))
        });
        if let Some(body) = crate::parallel::first_id(comm, bad.map(|i| bodies.id[i])) {
            return Err(SolverError::NonFinite { body });
        }
        integrate(bodies, n_owned, &gravity, dt, &dv);
        // The step's contacts keep their rows (other solvers' columns too,
        // compatible-cd's truss); a contact that disappeared drops its own.
        let keys: HashSet<ContactKey> = (0..nc).map(|i| contacts.key(i)).collect();
        history.contact.retain(|k| keys.contains(k));
        let warm = history.contact.col(WARM);
        for (i, &fi) in f_local.iter().enumerate() {
            let key = contacts.key(i);
            if fi != 0.0 || history.contact.get(&key).is_some() {
                warm.of_mut(history.contact.entry(key))[0] = fi;
            }
        }
        forces.f_n = f_local;
        forces.f_t = vec![Vector3::zeros(); nc];
        Ok((StepReport { iterations, dt, ..Default::default() }, compatible))
    }
}

/// Semi-implicit Euler (eq 13) on the owned bodies: v⁺ = v + Δt g + `dv`
/// on free DOFs (masked DOFs get zero velocity), q⁺ = q + Δt v⁺, orientation
/// rotated by exp(ω⁺ Δt).
pub fn integrate(bodies: &mut Bodies, n_owned: usize, gravity: &Vector3<f64>, dt: f64, dv: &[Vector6<f64>]) {
    for (i, d) in dv.iter().enumerate().take(n_owned) {
        let mask = bodies.dof_mask[i];
        let mut v = free_velocity(bodies, i, gravity, dt) + d;
        for k in 0..6 {
            if !dof_free(mask, k) {
                v[k] = 0.0;
            }
        }
        let lin = Vector3::new(v[0], v[1], v[2]);
        let ang = Vector3::new(v[3], v[4], v[5]);
        bodies.velocity[i] = lin;
        bodies.angular_velocity[i] = ang;
        bodies.position[i] += dt * lin;
        bodies.orientation[i] = UnitQuaternion::from_scaled_axis(ang * dt) * bodies.orientation[i];
    }
}
