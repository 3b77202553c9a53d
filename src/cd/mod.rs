//! Contact Dynamics, `solver = "cd"` (time-step stage 3; paper olsen-kamrin
//! §4–5 and step 1 of Algorithm 1): per step
//!
//! 1. assemble B and M⁻¹ ([`operator`]), p = Φ/Δt + B v + Δt B M⁻¹ F_ext (eq 20),
//!    with the restitution substitution Φ/Δt → e_n B v for closing contacts;
//!    F_ext is gravity and the `[[load]]`s (at t + Δt);
//! 2. solve the QP (22) by APGD ([`apgd`], the default without friction) or the LCP (21) by PGS
//!    ([`pgs`]) or a VI Newton method on N assembled ([`newton`]), warm-started from the previous step's forces; with
//!    friction, B has two tangential rows per contact (and with rolling
//!    resistance three more on the relative angular velocity) and
//!    [`coulomb`] solves the Coulomb law (or its cone relaxation) by
//!    nonsmooth Gauss–Seidel (the default) or APGD;
//! 3. v⁺ = v + Δt M⁻¹ (Bᵀ f + F_ext), q⁺ = q + Δt v⁺, orientation by
//!    exp(ω⁺ Δt) (semi-implicit Euler, eq 13), on the owned free DOFs.
//!
//! f is a force (N carries the Δt): [`ContactForces::f_n`] holds it, and
//! the tangential force on body b in [`ContactForces::f_t`].
pub mod anderson;
pub mod apgd;
pub mod coulomb;
pub mod friction;
pub mod newton;
pub mod operator;
pub mod pgs;
pub mod step_control;

use crate::body::dof_free;
use crate::body::Bodies;
use crate::contact::{Contacts, WALL_ID_BASE, WALL_INDEX};
use crate::parallel::exchange;
use crate::petsc::{Stage, Vector};
use crate::scene::{CdMethod, CdScaling, Scene, SolverKind};
use crate::contact::ContactKey;
use crate::io::SolverState;
use crate::parallel::records::FlatRecords;
use crate::solver::{Column, ContactField, ContactForces, History, HistorySpec, Plan, SolverError, Solver, StateError, StepContext, StepReport, World};
use nalgebra::{UnitQuaternion, Vector3, Vector6};
use friction::Set;
use operator::ContactOperator;

pub use apgd::QpResult;

/// Running totals of the contact solves (for benchmarks and logs).
#[derive(Clone, Debug, Default)]
pub struct CdStats {
    /// Steps with at least one contact somewhere.
    pub solves: u64,
    /// Solver iterations over all solves.
    pub iterations: u64,
    /// Krylov iterations of the Newton solves.
    pub linear_iterations: u64,
    /// N applications (APGD) on this rank.
    pub n_applies: u64,
    /// Sum over solves of this rank's contacts × N applies.
    pub contact_applies: u64,
    /// Seconds in the solve (APGD/PGS) on this rank.
    pub solve_seconds: f64,
    /// Solves that stopped at max_iterations.
    pub not_converged: u64,
    /// Steps in which a body moved farther than `contact.distance`.
    pub beyond_distance: u64,
    /// `method = "newton"`: its solves that APGD finished (None before
    /// its first solve).
    pub newton_fallbacks: Option<u64>,
    /// APGD solves of the frictional steps (one per step, plus one after
    /// each round of μ_s → μ_d switches).
    pub friction_rounds: u64,
}

/// History column of the previous step's force of each contact (the warm
/// start; World history, so it moves with the contact and is checkpointed).
pub const WARM: &str = "f_previous";
/// History columns of a frictional scene: the previous step's tangential
/// force on body b (world frame; the warm start, turned onto the new
/// tangent plane) and whether the contact slid (then it starts with μ_d).
pub const WARM_T: &str = "f_t_previous";
pub const SLIDING: &str = "sliding";
/// History column with rolling resistance: the previous step's rolling and
/// twisting forces (moments over R) as one world vector f_r1 t1 + f_r2 t2 +
/// f_tw n (the warm start, turned onto the new frame).
pub const WARM_R: &str = "f_roll_previous";

/// The `cd` solver; its warm-start forces live in the World's history.
#[derive(Default)]
pub struct CdSolver {
    stages: Option<(Stage, Stage)>,
    pub stats: CdStats,
    /// Some material has friction: three rows of B per contact.
    friction: bool,
    /// Some material has rolling or twisting resistance: six rows.
    rolling: bool,
    /// With `rolling`: the last step's rolling and twisting moment on body
    /// b of each contact (world frame; body a receives the opposite).
    moment_rolling: Vec<Vector3<f64>>,
    /// Unconverged and too-far steps of the run's earlier starts (their
    /// warnings go on counting from there).
    earlier: [u64; 2],
    /// `solver.dt_control = "iterations"`: the next step's Δt.
    control: Option<step_control::StepControl>,
    /// This process is rank 0 (it writes the controller's record).
    rank0: bool,
}

/// Version of [`CdSolver::state`]'s tables (0: none, before Δt control).
const STATE_VERSION: u32 = 1;

impl CdSolver {
    /// A frictionless CD solver (compatible-cd's first stage).
    pub fn new() -> Self {
        Self::default()
    }

    /// The CD solver of `scene`: frictional when a material has friction.
    pub fn for_scene(scene: &Scene) -> Self {
        let control = match (scene.simulation.solver, scene.solver.step_control) {
            (SolverKind::Cd, Some(s)) => Some(step_control::StepControl::new(scene.simulation.dt, s.dt_min, s.target_iterations)),
            _ => None,
        };
        Self { friction: friction::frictional(scene), rolling: friction::rolling(scene), control, ..Self::default() }
    }
}

/// Combined normal restitution of a contact: the smaller of the two
/// materials' e_n (a wall uses its own material), so a perfectly plastic
/// material never bounces whatever it hits.
pub fn restitution(scene: &Scene, bodies: &Bodies, contacts: &Contacts, i: usize) -> f64 {
    let e = |m: u32| scene.materials.get(m as usize).map_or(0.0, |m| m.restitution);
    e(bodies.material[contacts.ia[i]]).min(e(contacts.material_b(i, bodies, &scene.walls)))
}

/// Δt M⁻¹ F_ext of each owned body over a step from `time`: gravity on the
/// free translational DOFs, and its `[[load]]` (force at its point, and
/// moment) at t + Δt, as the DEM applies it.
pub fn external_velocity(scene: &Scene, bodies: &Bodies, n_owned: usize, time: f64, dt: f64) -> Vec<Vector6<f64>> {
    let gravity = scene.simulation.gravity;
    let mut out: Vec<Vector6<f64>> = (0..n_owned)
        .map(|i| {
            let mut g = Vector6::zeros();
            for k in 0..3 {
                if dof_free(bodies.dof_mask[i], k) {
                    g[k] = dt * gravity[k];
                }
            }
            g
        })
        .collect();
    if scene.loads.is_empty() {
        return out;
    }
    // Loads by body id (the owner of the body applies it): one lookup per
    // owned body, not a search of the bodies per load.
    let loads: std::collections::HashMap<u64, &crate::scene::Load> = scene.loads.iter().map(|l| (l.body, l)).collect();
    for i in 0..n_owned {
        if let Some(l) = loads.get(&bodies.id[i]) {
            let s = l.factor(time + dt);
            let force = s * l.force;
            let moment = s * l.moment + (bodies.orientation[i] * l.point).cross(&force);
            let w = Vector6::new(force.x, force.y, force.z, moment.x, moment.y, moment.z);
            out[i] += dt * (operator::inverse_mass(bodies, i) * w);
        }
    }
    out
}

/// [v, ω] of body `i` with the external impulse `ext` (from
/// [`external_velocity`]) applied: v + Δt M⁻¹ F_ext, zero on masked DOFs.
fn free_velocity(bodies: &Bodies, i: usize, ext: &Vector6<f64>) -> Vector6<f64> {
    let (v, w) = (bodies.velocity[i], bodies.angular_velocity[i]);
    let mut out = Vector6::new(v.x, v.y, v.z, w.x, w.y, w.z) + ext;
    for k in 0..6 {
        if !dof_free(bodies.dof_mask[i], k) {
            out[k] = 0.0;
        }
    }
    out
}

/// The mean velocity over the step from `time` of the wall on side b of
/// contact `i` (zero for other contacts): what it adds to B v.
pub fn wall_velocity(scene: &Scene, contacts: &Contacts, i: usize, time: f64, dt: f64) -> Vector3<f64> {
    if contacts.b[i] < WALL_ID_BASE {
        return Vector3::zeros();
    }
    scene.walls.get((contacts.b[i] - WALL_ID_BASE) as usize).map_or(Vector3::zeros(), |w| w.displacement(time, dt) / dt)
}

/// p of eq 20 for the contacts of `op`: Φ/Δt + B (v + Δt M⁻¹ F_ext), with
/// the restitution substitution Φ/Δt → e_n B v for contacts that are closing
/// (B v < 0) and would close within the step without a force (so contacts
/// not yet formed do not bounce early); a tangential row has B (v + Δt M⁻¹
/// F_ext) alone. A moving wall adds its velocity along each row, and so
/// does a Lees–Edwards image its velocity beyond its owner (`images`, from
/// [`exchange::image_velocities`]: B's columns are the owners'). Collective.
#[allow(clippy::too_many_arguments)]
pub fn rhs(op: &ContactOperator, scene: &Scene, bodies: &Bodies, contacts: &Contacts, ext: &[Vector6<f64>], images: Option<&Vec<Vector3<f64>>>, time: f64, dt: f64) -> crate::petsc::Result<Vector> {
    let mut v = op.body_vec()?;
    let mut vf = op.body_vec()?;
    {
        let (mut vv, mut fv) = (v.view_mut()?, vf.view_mut()?);
        for i in 0..op.n_owned {
            let (lin, ang) = (bodies.velocity[i], bodies.angular_velocity[i]);
            vv[6 * i..6 * i + 3].copy_from_slice(lin.as_slice());
            vv[6 * i + 3..6 * i + 6].copy_from_slice(ang.as_slice());
            fv[6 * i..6 * i + 6].copy_from_slice(free_velocity(bodies, i, &ext[i]).as_slice());
        }
    }
    let mut bv = op.contact_vec()?;
    op.b.mult(&v, &mut bv)?;
    let mut p = op.contact_vec()?;
    op.b.mult(&vf, &mut p)?;
    {
        let bvv = bv.view()?;
        let mut pv = p.view_mut()?;
        let rows = op.rows;
        // The image velocity of local body `l` beyond its owner (zero if owned).
        let image = |l: usize| match images {
            Some(v) if l != WALL_INDEX && l >= op.n_owned => v[l - op.n_owned],
            _ => Vector3::zeros(),
        };
        for i in 0..contacts.len() {
            let phi = contacts.gap[i] / dt;
            let e = restitution(scene, bodies, contacts, i);
            // Row k's halves times the images' velocities beyond their owners.
            let drift = |k: usize| match images {
                Some(_) => {
                    let (a, b) = if k == 0 { (op.ja[i], op.jb[i]) } else { op.jt[i][k - 1] };
                    a.fixed_rows::<3>(0).dot(&image(contacts.ia[i])) + b.fixed_rows::<3>(0).dot(&image(contacts.ib[i]))
                }
                None => 0.0,
            };
            // B v and B v_free with a moving wall's velocity on side b.
            let wall = wall_velocity(scene, contacts, i, time, dt);
            let w = contacts.normal[i].dot(&wall) + drift(0);
            let (bv, p) = (bvv[rows * i] + w, pv[rows * i] + w);
            pv[rows * i] = p + if e > 0.0 && bv < 0.0 && phi + p < 0.0 { e * bv } else { phi };
            // The rolling rows see no wall (walls do not turn) nor image
            // (Lees–Edwards moves images, it does not turn them).
            if rows >= 3 {
                let (t1, t2) = op.tangents[i];
                pv[rows * i + 1] += t1.dot(&wall) + drift(1);
                pv[rows * i + 2] += t2.dot(&wall) + drift(2);
            }
        }
    }
    Ok(p)
}

/// A post-process run after the CD solve of a step, before the bodies move:
/// given B (in `op`), the CD forces, p of eq 20, how the CD solve ended
/// and the bodies at the start of the step, it returns a normal force per
/// local contact (compatible-cd).
pub type PostProcess<'a> = dyn FnMut(&mut ContactOperator, &Vector, &Vector, &QpResult, &Bodies) -> Result<Vec<f64>, SolverError> + 'a;

impl Solver for CdSolver {
    fn history(&self) -> HistorySpec {
        let mut contact = vec![Column { name: WARM, width: 1 }];
        if self.friction {
            contact.extend([Column { name: WARM_T, width: 3 }, Column { name: SLIDING, width: 1 }]);
        }
        if self.rolling {
            contact.push(Column { name: WARM_R, width: 3 });
        }
        HistorySpec { body: Vec::new(), contact }
    }

    fn adaptive(&self) -> bool {
        self.control.is_some()
    }

    fn begin_step(&mut self, _world: &World, _time: f64, dt: f64, _attempt: u32) -> Plan {
        Plan { dt: self.control.as_ref().map_or(dt, |c| c.dt().min(dt)), drop: Vec::new() }
    }

    fn step(&mut self, ctx: &StepContext, bodies: &mut Bodies, forces: &mut ContactForces, history: &mut History) -> Result<StepReport, SolverError> {
        self.rank0 = mpi::traits::Communicator::rank(ctx.comm) == 0;
        let short = self.stats.not_converged;
        let report = self.step_with(ctx, bodies, forces, history, None)?.0;
        if let Some(c) = self.control.as_mut() {
            // Global counts: every rank takes the same next Δt.
            c.after_step(report.iterations, self.stats.not_converged == short);
        }
        Ok(report)
    }

    /// Table "dt_control" (rank 0): the Δt controller's state.
    fn state(&self) -> SolverState {
        let mut st = SolverState::new(STATE_VERSION);
        if let Some(c) = &self.control {
            let v = c.state();
            let mut t = FlatRecords::new(0, v.len());
            if self.rank0 {
                t.push(0, &[], &v);
            }
            st.push("dt_control", t);
        }
        st
    }

    fn restore(&mut self, comm: &crate::parallel::Comm, state: SolverState) -> Result<(), StateError> {
        if !(state.version == STATE_VERSION || (state.version == 0 && state.tables.is_empty())) {
            return Err(StateError { solver: "cd", found: state.version, expected: STATE_VERSION });
        }
        self.rank0 = mpi::traits::Communicator::rank(comm) == 0;
        // Every rank lists the table with its width; rank 0 of the run that
        // wrote it holds the record, whichever rank reads it now.
        let Some(t) = state.table("dt_control") else { return Ok(()) };
        let v = crate::parallel::record_from_any_rank(comm, (!t.is_empty()).then(|| t.f_row(0)), t.n_f);
        if let (Some(c), Some(v)) = (self.control.as_mut(), v) {
            c.restore(&v);
        }
        Ok(())
    }

    fn summary(&self, _comm: &crate::parallel::Comm) -> serde_json::Map<String, serde_json::Value> {
        // Every rank takes part in every solve: its counts are the run's.
        let mut m = serde_json::Map::new();
        m.insert("cd_steps_not_converged".into(), self.stats.not_converged.into());
        m.insert("cd_steps_beyond_contact_distance".into(), self.stats.beyond_distance.into());
        if self.friction {
            m.insert("friction_rounds".into(), self.stats.friction_rounds.into());
        }
        if let Some(n) = self.stats.newton_fallbacks {
            m.insert("cd_newton_fallbacks".into(), n.into());
        }
        m
    }

    fn resume_counters(&mut self, earlier: &dyn Fn(&str) -> u64) {
        self.earlier = [earlier("cd_steps_not_converged"), earlier("cd_steps_beyond_contact_distance")];
    }

    /// With rolling resistance `moment_rolling`: the rolling and twisting
    /// moment on body b of each contact (world frame), body a receiving
    /// the opposite.
    fn contact_fields(&self, contacts: &Contacts) -> Vec<ContactField> {
        if !self.rolling {
            return Vec::new();
        }
        let mut values: Vec<f64> = self.moment_rolling.iter().flat_map(|m| [m.x, m.y, m.z]).collect();
        values.resize(3 * contacts.len(), 0.0);
        vec![ContactField { name: "moment_rolling", width: 3, values, replaces: None }]
    }
}

impl CdSolver {
    /// Warns when a body moved farther in the step than both
    /// `contact.distance` and its own bounding radius: detection at the
    /// step's start saw only the pairs closer than the distance, so such a
    /// body may have passed a contact unseen, into or through a neighbour
    /// of its size or a wall. A step too long for the speeds, or an
    /// unconverged solve that flung a body (the residual is in the line).
    /// Farther than the distance alone is no sure sign: in a falling
    /// pyramid every pair it could meet is listed already. Collective.
    fn check_reach(&mut self, ctx: &StepContext, bodies: &Bodies, n_owned: usize, dt: f64, residual: Option<f64>) {
        let comm = ctx.comm;
        let distance = ctx.scene.contact.distance;
        // (motion, motion / allowed) of body i
        let reach = |i: usize| {
            let r = ctx.shapes.bounding_radius(bodies.shape[i]);
            let d = dt * (bodies.velocity[i].norm() + r * bodies.angular_velocity[i].norm());
            (d, d / distance.max(r))
        };
        let (mut far, mut worst, mut who) = (0.0, 0.0, None);
        for i in 0..n_owned {
            let (d, ratio) = reach(i);
            if ratio > worst {
                (far, worst, who) = (d, ratio, Some(i));
            }
        }
        let largest = crate::parallel::max_f64(comm, worst);
        if largest <= 1.0 {
            return;
        }
        let who = who.filter(|_| worst == largest);
        let far = crate::parallel::max_f64(comm, if who.is_some() { far } else { 0.0 });
        let id = crate::parallel::first_id(comm, who.map(|i| bodies.id[i]));
        self.stats.beyond_distance += 1;
        if let Some(more) = crate::logging::step_warning(self.earlier[1] + self.stats.beyond_distance, "cd_steps_beyond_contact_distance") {
            let solve = residual.map_or(String::new(), |r| format!(" (solver residual {r:e})"));
            log::warn!(
                "step {}: body {} moved {far:.3e} m in the step{solve}, farther than contact.distance ({distance:e} m) and its own size: contacts on its way went unseen; shorten simulation.dt or raise contact.distance{more}",
                ctx.step,
                id.map_or("?".to_string(), |i| i.to_string()),
            );
        }
    }

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
        let nc = contacts.len();
        let rows = operator::rows_per_contact(self.friction, self.rolling);
        let nc_global = crate::parallel::sum_u64(comm, nc as u64);
        let ext = external_velocity(scene, bodies, n_owned, ctx.time, dt);
        // Forces (`rows` per contact) and Δt M⁻¹ Bᵀ f per owned body (zero
        // without contacts), allocated after the solve: not beside its
        // vectors at the peak.
        let f_local: Vec<f64>;
        let dv: Vec<Vector6<f64>>;
        let mut tangents = Vec::new();
        let mut sliding: Vec<bool> = Vec::new();
        let mut iterations = 0;
        let mut linear = 0;
        let mut residual = None;
        let mut compatible = Vec::new();
        let mut radius = Vec::new();
        if nc_global > 0 {
            if self.stages.is_none() {
                self.stages = Some((Stage::register("CD assembly")?, Stage::register("CD solve")?));
            }
            let (st_asm, st_solve) = self.stages.expect("registered above");
            let guard = st_asm.push()?;
            let rolling = self.rolling.then(|| rolling(ctx, bodies));
            radius = rolling.as_ref().map_or(Vec::new(), |r| r.radius.clone());
            let mut op = ContactOperator::assemble(comm, bodies, ctx.layout, contacts, dt, self.friction, rolling)?;
            let images = exchange::image_velocities(comm, ctx.layout);
            let p = rhs(&op, scene, bodies, contacts, &ext, images.as_ref(), ctx.time, dt)?;
            let mut f = op.contact_vec()?;
            f.view_mut()?.copy_from_slice(&self.warm_start(&op, contacts, history));
            drop(guard);
            let guard = st_solve.push()?;
            let t0 = std::time::Instant::now();
            let applies0 = op.applies;
            let set = &scene.solver;
            let res = if self.friction {
                let (mu_s, mu_d): (Vec<f64>, Vec<f64>) = (0..nc).map(|i| friction::coefficients(scene, bodies, contacts, i)).unzip();
                let slid = history.contact.col(SLIDING);
                let was: Vec<bool> = (0..nc).map(|i| history.contact.get(&contacts.key(i)).is_some_and(|row| slid.of(row)[0] != 0.0)).collect();
                let coef = coulomb::Coefficients { mu_s: &mu_s, mu_d: &mu_d, sliding: &was };
                let inner = match set.method.resolved(true) {
                    CdMethod::Pgs => coulomb::Inner::Pgs { layout: ctx.layout, n_local_bodies: bodies.len(), order: set.pgs_order, anderson: set.anderson },
                    _ => coulomb::Inner::Apgd { scaled: set.scaling != CdScaling::None },
                };
                let out = coulomb::solve(comm, &mut op, &p, &mut f, &coef, set.friction_law, &inner, set.tolerance, set.max_iterations)?;
                sliding = out.sliding;
                self.stats.friction_rounds += out.rounds as u64;
                out.qp
            } else {
                match set.method.resolved(false) {
                    CdMethod::Apgd | CdMethod::Auto => {
                        let c = match set.scaling {
                            CdScaling::None | CdScaling::Auto => op.constraint(Set::Normal),
                            CdScaling::Diagonal => op.constraint_scaled(Set::Normal),
                        };
                        apgd::apgd(comm, &mut op, &c, &p, &mut f, set.tolerance, set.max_iterations)?
                    }
                    CdMethod::Pgs => pgs::pgs(comm, &op, ctx.layout, bodies.len(), &p, &mut f, set.tolerance, set.max_iterations, set.pgs_order)?,
                    CdMethod::Newton => {
                        let mut res = newton::newton(comm, &mut op, &p, &mut f, set.tolerance, set.max_iterations)?;
                        let fallbacks = self.stats.newton_fallbacks.get_or_insert(0);
                        if !res.converged {
                            *fallbacks += 1;
                            // APGD from where Newton stopped: a failed solve
                            // (e.g. a line search that found no decrease)
                            // still ends at the tolerance.
                            let c = op.constraint(Set::Normal);
                            let more = apgd::apgd(comm, &mut op, &c, &p, &mut f, set.tolerance, set.max_iterations)?;
                            log::debug!("step {}: cd newton did not converge (residual {:e}); APGD took {} iterations", ctx.step, res.residual, more.iterations);
                            res = QpResult { iterations: res.iterations + more.iterations, linear: res.linear, ..more };
                        }
                        res
                    }
                }
            };
            drop(guard);
            if crate::parallel::signals::stopping() {
                return Err(SolverError::Interrupted);
            }
            self.stats.solve_seconds += t0.elapsed().as_secs_f64();
            self.stats.solves += 1;
            self.stats.iterations += res.iterations;
            self.stats.linear_iterations += res.linear;
            self.stats.n_applies += op.applies - applies0;
            self.stats.contact_applies += (op.applies - applies0) * nc as u64;
            if !res.converged {
                self.stats.not_converged += 1;
                let n = self.earlier[0] + self.stats.not_converged;
                if let Some(more) = crate::logging::step_warning(n, "cd_steps_not_converged") {
                    let method = set.method.resolved(self.friction);
                    let what = if self.friction { format!("{:?} friction, {method:?}", set.friction_law) } else { format!("{method:?}") }.to_lowercase();
                    // Settled frictional packs stall a few times above a
                    // tight threshold, and a pour's steps get harder faster
                    // than Δt grows (the CD chapter measures both).
                    let hint = if self.friction && n == 1 {
                        "; frictional packs often stall just above a tight tolerance: solver.tolerance = 1e-4 ends the steps of settled packs, and a shorter simulation.dt makes a pour's steps far easier (the guide's CD chapter, friction)"
                    } else {
                        ""
                    };
                    log::warn!(
                        "step {}: cd ({what}) stopped after {} iterations at residual {:e} (threshold {:e}){hint}{more}",
                        ctx.step,
                        res.iterations,
                        res.residual,
                        res.threshold
                    );
                }
            }
            iterations = res.iterations;
            linear = res.linear;
            residual = Some(res.residual);
            f_local = f.view()?.to_vec();
            if let Some(post) = post.as_mut() {
                compatible = post(&mut op, &f, &p, &res, bodies)?;
                if crate::parallel::signals::stopping() {
                    return Err(SolverError::Interrupted);
                }
            }
            tangents = std::mem::take(&mut op.tangents);
            let mut u = op.body_vec()?;
            op.b.mult_transpose(&f, &mut u)?;
            let uv = u.view()?;
            dv = (0..n_owned).map(|i| dt * (op.minv[i] * Vector6::from_column_slice(&uv[6 * i..6 * i + 6]))).collect();
        } else {
            (f_local, dv) = (vec![0.0; rows * nc], vec![Vector6::<f64>::zeros(); n_owned]);
        }
        // A non-finite update stops the run before it reaches the bodies:
        // the driver checkpoints the last finite state.
        let bad = (0..n_owned).find(|&i| {
            let v = free_velocity(bodies, i, &ext[i]) + dv[i];
            !(v.iter().all(|x| x.is_finite()) && (bodies.position[i] + dt * Vector3::new(v[0], v[1], v[2])).iter().all(|x| x.is_finite()))
        });
        if let Some(body) = crate::parallel::first_id(comm, bad.map(|i| bodies.id[i])) {
            return Err(SolverError::NonFinite { body });
        }
        integrate(bodies, n_owned, &ext, dt, &dv);
        self.check_reach(ctx, bodies, n_owned, dt, residual);
        forces.f_n = (0..nc).map(|i| f_local[rows * i]).collect();
        forces.f_t = (0..nc)
            .map(|i| match tangents.get(i) {
                Some((t1, t2)) => t1 * f_local[rows * i + 1] + t2 * f_local[rows * i + 2],
                None => Vector3::zeros(),
            })
            .collect();
        let roll: Vec<Vector3<f64>> = if rows == 6 {
            (0..nc)
                .map(|i| match tangents.get(i) {
                    Some((t1, t2)) => t1 * f_local[6 * i + 3] + t2 * f_local[6 * i + 4] + contacts.normal[i] * f_local[6 * i + 5],
                    None => Vector3::zeros(),
                })
                .collect()
        } else {
            Vec::new()
        };
        self.keep_history(contacts, forces, &sliding, &roll, history);
        // The moments themselves: R times the rows' forces.
        self.moment_rolling = roll.iter().zip(&radius).map(|(f, r)| f * *r).collect();
        Ok((StepReport { iterations, linear_iterations: linear, dt, residual, ..Default::default() }, compatible))
    }

    /// The warm start of the step's forces by contact identity: the
    /// previous step's f_n, and with friction its tangential force turned
    /// onto the new tangents (zero for a new contact).
    fn warm_start(&self, op: &ContactOperator, contacts: &Contacts, history: &History) -> Vec<f64> {
        let h = &history.contact;
        let warm = h.col(WARM);
        let mut out = vec![0.0; op.rows * contacts.len()];
        for i in 0..contacts.len() {
            let Some(row) = h.get(&contacts.key(i)) else { continue };
            out[op.rows * i] = warm.of(row)[0];
            let r = op.rows;
            if r >= 3 {
                let ft = Vector3::from_column_slice(h.col(WARM_T).of(row));
                let (t1, t2) = op.tangents[i];
                (out[r * i + 1], out[r * i + 2]) = (ft.dot(&t1), ft.dot(&t2));
            }
            if r == 6 {
                let fr = Vector3::from_column_slice(h.col(WARM_R).of(row));
                let (t1, t2) = op.tangents[i];
                (out[6 * i + 3], out[6 * i + 4], out[6 * i + 5]) = (fr.dot(&t1), fr.dot(&t2), fr.dot(&contacts.normal[i]));
            }
        }
        out
    }

    /// The step's contacts keep their rows (other solvers' columns too,
    /// compatible-cd's truss); a contact that disappeared drops its own.
    fn keep_history(&self, contacts: &Contacts, forces: &ContactForces, sliding: &[bool], roll: &[Vector3<f64>], history: &mut History) {
        let keys: rustc_hash::FxHashSet<ContactKey> = (0..contacts.len()).map(|i| contacts.key(i)).collect();
        history.contact.retain(|k| keys.contains(k));
        let warm = history.contact.col(WARM);
        let cols = self.friction.then(|| (history.contact.col(WARM_T), history.contact.col(SLIDING)));
        let warm_r = self.rolling.then(|| history.contact.col(WARM_R));
        for (i, &fi) in forces.f_n.iter().enumerate() {
            let key = contacts.key(i);
            if fi != 0.0 || history.contact.get(&key).is_some() {
                let row = history.contact.entry(key);
                warm.of_mut(row)[0] = fi;
                if let Some((warm_t, slid)) = &cols {
                    warm_t.of_mut(row).copy_from_slice(forces.f_t[i].as_slice());
                    slid.of_mut(row)[0] = if sliding.get(i).copied().unwrap_or(false) { 1.0 } else { 0.0 };
                }
                if let (Some(warm_r), Some(r)) = (&warm_r, roll.get(i)) {
                    warm_r.of_mut(row).copy_from_slice(r.as_slice());
                }
            }
        }
    }
}

/// The rolling radius and (μ_r, μ_tw) of each of the step's contacts:
/// R = R_a R_b / (R_a + R_b) over the sphere sides (a wall or a mesh is
/// flat), zero between two meshes (a polyhedron resists rolling by its
/// shape).
fn rolling(ctx: &StepContext, bodies: &Bodies) -> operator::Rolling {
    let contacts = ctx.contacts;
    let inv = |l: usize| match l {
        WALL_INDEX => 0.0,
        l => match ctx.shapes.shape(bodies.shape[l]) {
            crate::body::Shape::Sphere { radius } => 1.0 / radius,
            crate::body::Shape::Mesh(_) => 0.0,
        },
    };
    let radius = (0..contacts.len())
        .map(|i| {
            let s = inv(contacts.ia[i]) + inv(contacts.ib[i]);
            if s > 0.0 { 1.0 / s } else { 0.0 }
        })
        .collect();
    let mu = (0..contacts.len()).map(|i| friction::rolling_coefficients(ctx.scene, bodies, contacts, i)).collect();
    operator::Rolling { radius, mu }
}

/// Semi-implicit Euler (eq 13) on the owned bodies: v⁺ = v + Δt M⁻¹ F_ext
/// (`ext`) + `dv` on free DOFs (masked DOFs get zero velocity), q⁺ = q +
/// Δt v⁺, orientation rotated by exp(ω⁺ Δt).
pub fn integrate(bodies: &mut Bodies, n_owned: usize, ext: &[Vector6<f64>], dt: f64, dv: &[Vector6<f64>]) {
    for (i, d) in dv.iter().enumerate().take(n_owned) {
        let mask = bodies.dof_mask[i];
        let mut v = free_velocity(bodies, i, &ext[i]) + d;
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
