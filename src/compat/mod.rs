//! Compatible CD, `solver = "compatible-cd"` (paper olsen-kamrin §6–7,
//! Algorithm 1, step 2): after the CD step, the contact forces are replaced
//! (for output and reactions; the motion is CD's) by the forces of a
//! no-tension truss in the rigid limit, eq 36:
//!
//! ```text
//! min_f Σ_i ((p−1)/p) k̃_i^{1/(1−p)} f_i^{p/(p−1)}
//! s.t.  (Bᵀf)_j = F̃_j on the free DOFs (Γ_N),  f ≥ 0,
//! ```
//!
//! with F̃ = M(v⁺ − v)/Δt − F_ext (eq 37). With CD's update
//! v⁺ = v + Δt M⁻¹(Bᵀ f_CD + F_ext), F̃ = Bᵀ f_CD exactly on the free DOFs
//! (B has no entries on fixed bodies or masked DOFs, Γ_D), so F̃ is computed
//! that way and f_CD is a feasible warm start. The truss is made of the
//! contacts closed at the end of the step ([`leave_out_open`]).
//!
//! `method = "newton"` (default, [`newton`]) and `"apgd"` ([`dual_apgd`])
//! solve the dual of eq 36 over the body displacements ([`dual`]), an
//! unconstrained smooth minimisation. `"augmented-lagrangian"` is the
//! paper's method, kept as a cross-check ([`solve`] below):
//!
//! Solved by an augmented Lagrangian in the LANCELOT manner: subproblems
//! min_{f ≥ 0} Σ w*(f_i) − λᵀ(Bᵀf − F̃) + μ/2 ‖Bᵀf − F̃‖² by the generic
//! APGD ([`apgd`]), to a tolerance tightened tenfold per outer iteration;
//! then λ ← λ − μ(Bᵀf − F̃), and μ ← 10 μ when the feasibility did not
//! improve by a factor 0.25. Forces are scaled by ‖F̃‖∞ inside. Stops when
//! ‖Bᵀf − F̃‖₂/‖F̃‖₂ ≤ `feasibility_tolerance` and the projected gradient
//! (of the Lagrangian with the updated λ) ≤ `optimality_tolerance`. At the
//! solution −λ is (up to the force scale) the truss displacement u, and
//! f_i = k̃_i (−B_i u)^{p−1} on the loaded contacts.
//!
//! Distributed like CD: f over this rank's contacts, λ and F̃ over the owned
//! bodies' DOFs, B the CD operator.
//!
//! With friction (a material with μ > 0) the CD step is frictional and the
//! compatible forces are those of elastic–frictional contacts in the rigid
//! limit: [`dual`] adds each contact's tangential spring, [`tresca`] solves
//! for the Coulomb bounds, and each contact's elastic tangential
//! displacement is carried as history ([`T_ANCHOR`], [`T_SLID`]).
pub mod apgd;
pub mod dual;
pub mod dual_apgd;
pub mod ipm;
pub mod newton;
pub mod tresca;

use crate::body::Bodies;
use crate::cd::operator::ContactOperator;
use crate::cd::CdSolver;
use crate::contact::{ContactKey, Contacts};
use crate::parallel::Comm;
use crate::petsc::{NormType, Result, Vector};
use crate::parallel::exchange::Layout;
use crate::scene::{CompatMethod, CompatSettings, Scene};
use crate::io::{FlatRecords, SolverState};
use dual::DualResult;
use crate::solver::{Column, ContactField, ReportedForces, ContactForces, History, HistorySpec, Solver, SolverError, StateError, StepContext, StepReport};
use nalgebra::Vector3;
use std::collections::{HashMap, HashSet};

/// Running totals of the compatibility solves (benchmarks, logs).
#[derive(Clone, Debug, Default)]
pub struct CompatStats {
    pub solves: u64,
    /// Newton steps (newton), 0 (apgd), AL iterations (augmented-lagrangian).
    pub outer: u64,
    /// Krylov iterations (newton), APGD iterations (apgd, augmented-lagrangian).
    pub inner: u64,
    /// Solves started from the previous solve's displacements.
    pub warm: u64,
    pub seconds: f64,
    pub not_converged: u64,
    /// Tresca rounds and coupled Coulomb solves of the frictional solves.
    pub friction_solves: u64,
}

/// The `compatible-cd` solver: a CD step, then (every `compatibility.every`
/// steps and at every output step) the compatible forces.
#[derive(Default)]
pub struct CompatibleCdSolver {
    cd: CdSolver,
    pub stats: CompatStats,
    /// Compatible normal force of each contact of the last step (empty
    /// when the step did not compute them) …
    f_compatible: Vec<f64>,
    /// … and tangential force on body b (zero without friction).
    f_compatible_t: Vec<Vector3<f64>>,
    /// The scene has friction: CD's B has three rows per contact and the
    /// compatible forces come from Tresca rounds ([`tresca`]).
    friction: bool,
    /// Force scale s, p and the global number of bars of the last dual
    /// solve, whose displacements and bars are World history
    /// ([`U_WARM`], [`IN_TRUSS`]).
    warm: Option<(f64, f64, u64)>,
    /// This is rank 0 (the one that writes the solver's scalars).
    rank0: bool,
    /// Unconverged compatibility solves of the run's earlier starts.
    earlier_not_converged: u64,
}

/// History columns of the last dual solve: each owned body's scaled
/// displacements, and 1 on the contacts that were its truss bars.
pub const U_WARM: &str = "u_compatible";
pub const IN_TRUSS: &str = "in_truss";
/// With friction, per contact: the elastic tangential displacement the next
/// solve starts from (world frame), and 1 where the spring slid.
pub const T_ANCHOR: &str = "t_compatible";
pub const T_SLID: &str = "slid_compatible";
/// Version of [`CompatibleCdSolver::state`]'s tables.
const STATE_VERSION: u32 = 1;

/// The last dual solve's displacements, reused when the truss (the
/// contacts not left out) is the same (per rank; every rank must agree).
pub struct WarmStart {
    keys: Vec<ContactKey>,
    /// Scaled u of each owned body by id.
    u: HashMap<u64, [f64; 6]>,
    /// Force scale s = ‖F̃‖∞ of that solve and its p.
    scale: f64,
    p: f64,
}

impl WarmStart {
    /// The last solve's warm start from the history: its bars still in
    /// contact on this rank and the owned bodies' displacements. None when
    /// no solve was kept or a bar has gone anywhere (the truss changed).
    /// Collective.
    fn from_history(comm: &Comm, history: &History, bodies: &Bodies, n_owned: usize, kept: Option<(f64, f64, u64)>) -> Option<Self> {
        let (h, flag) = (&history.contact, history.contact.col(IN_TRUSS));
        let mut keys: Vec<ContactKey> = h.keys().filter(|k| h.get(k).is_some_and(|row| flag.of(row)[0] != 0.0)).copied().collect();
        let all_bars = crate::parallel::sum_u64(comm, keys.len() as u64);
        let (scale, p, bars) = kept?;
        if all_bars != bars {
            return None;
        }
        keys.sort();
        let col = history.body.col(U_WARM);
        let u = (0..n_owned)
            .filter_map(|i| history.body.get(&bodies.id[i]).map(|row| (bodies.id[i], col.of(row).try_into().expect("6 wide"))))
            .collect();
        Some(Self { keys, u, scale, p })
    }

    /// Into the history: the bars flagged (others cleared), the owned
    /// bodies' displacements; returns what the solver keeps itself.
    fn into_history(self, comm: &Comm, history: &mut History) -> (f64, f64, u64) {
        let flag = history.contact.col(IN_TRUSS);
        let bars: HashSet<ContactKey> = self.keys.iter().copied().collect();
        let keys: Vec<ContactKey> = history.contact.keys().copied().collect();
        for k in keys {
            flag.of_mut(history.contact.entry(k))[0] = 0.0;
        }
        for &k in &bars {
            flag.of_mut(history.contact.entry(k))[0] = 1.0;
        }
        let col = history.body.col(U_WARM);
        for (id, u) in &self.u {
            col.of_mut(history.body.entry(*id)).copy_from_slice(u);
        }
        (self.scale, self.p, crate::parallel::sum_u64(comm, self.keys.len() as u64))
    }
}

impl CompatibleCdSolver {
    /// The solver for `scene`: frictional when a material has friction.
    pub fn for_scene(scene: &Scene) -> Self {
        let mut s = Self::default();
        s.cd = CdSolver::for_scene(scene);
        s.friction = crate::cd::friction::frictional(scene);
        s
    }
}

impl Drop for CompatibleCdSolver {
    fn drop(&mut self) {
        let s = &self.stats;
        if s.solves > 0 {
            log::info!(
                "compatibility: {} solves ({} warm-started), {} outer (Newton/AL) and {} inner (CG/APGD) iterations, {:.3} s on this rank, {} not converged",
                s.solves,
                s.warm,
                s.outer,
                s.inner,
                s.seconds,
                s.not_converged
            );
        }
    }
}

impl Solver for CompatibleCdSolver {
    fn history(&self) -> HistorySpec {
        let mut spec = self.cd.history();
        spec.body.push(Column { name: U_WARM, width: 6 });
        spec.contact.push(Column { name: IN_TRUSS, width: 1 });
        if self.friction {
            spec.contact.push(Column { name: T_ANCHOR, width: 3 });
            spec.contact.push(Column { name: T_SLID, width: 1 });
        }
        spec
    }

    /// Table "warm" (rank 0): scale, p and bars of the last dual solve.
    fn state(&self) -> SolverState {
        let mut st = SolverState::new(STATE_VERSION);
        let mut t = FlatRecords::new(0, 3);
        if let (Some((scale, p, bars)), true) = (self.warm, self.rank0) {
            t.push(0, &[], &[scale, p, bars as f64]);
        }
        st.push("warm", t);
        st
    }

    fn restore(&mut self, comm: &Comm, state: SolverState) -> std::result::Result<(), StateError> {
        // Version 0 without tables: written before the warm start was kept.
        if !(state.version == STATE_VERSION || (state.version == 0 && state.tables.is_empty())) {
            return Err(StateError { solver: "compatible-cd", found: state.version, expected: STATE_VERSION });
        }
        let mine = state.table("warm").filter(|t| t.n_f == 3 && !t.is_empty()).map(|t| t.f_row(0));
        // Whichever rank holds the record tells the others.
        self.warm = crate::parallel::record_from_any_rank(comm, mine, 3).map(|v| (v[0], v[1], v[2] as u64));
        Ok(())
    }

    fn step(&mut self, ctx: &StepContext, bodies: &mut Bodies, forces: &mut ContactForces, history: &mut History) -> std::result::Result<StepReport, SolverError> {
        let set = &ctx.scene.compat;
        if !(ctx.output || ctx.step % set.every == 0) {
            self.f_compatible.clear();
            return self.cd.step_with(ctx, bodies, forces, history, None).map(|(report, _)| report);
        }
        self.rank0 = mpi::traits::Communicator::rank(ctx.comm) == 0;
        let stats = &mut self.stats;
        let earlier_not_converged = self.earlier_not_converged;
        let mut warm = WarmStart::from_history(ctx.comm, history, bodies, ctx.layout.n_owned, self.warm);
        let warm = &mut warm;
        // The friction history of the step's contacts, read before the CD
        // step replaces the contact rows.
        let nc = ctx.contacts.len();
        let (mut anchor, mut was_sliding) = (Vec::new(), Vec::new());
        if self.friction {
            let (h, a, slid) = (&history.contact, history.contact.col(T_ANCHOR), history.contact.col(T_SLID));
            for i in 0..nc {
                let row = h.get(&ctx.contacts.key(i));
                anchor.push(row.map_or_else(Vector3::zeros, |r| Vector3::from_column_slice(a.of(r))));
                was_sliding.push(row.is_some_and(|r| slid.of(r)[0] != 0.0));
            }
        }
        let (friction, kappa) = (self.friction, set.tangential_ratio);
        let mut tangential: Option<FrictionOut> = None;
        let before = stats.seconds;
        let mut post = |op: &mut ContactOperator, f: &Vector, p: &Vector, cd: &crate::cd::QpResult, b: &Bodies| -> std::result::Result<Vec<f64>, SolverError> {
            let t0 = std::time::Instant::now();
            let mut k = relative_stiffness(ctx.scene, b, ctx.contacts);
            let thr = crate::cd::apgd::threshold(p, ctx.scene.solver.tolerance)?;
            let w = end_velocities(op, f, p)?;
            let open = leave_out_open(ctx.comm, op, f, &w, thr, &mut k)?;
            log::debug!("step {}: compatibility leaves out {open} contacts CD left open", ctx.step);
            let (mu_s, mu_d): (Vec<f64>, Vec<f64>) = if friction { (0..nc).map(|i| crate::cd::friction::coefficients(ctx.scene, b, ctx.contacts, i)).unzip() } else { Default::default() };
            // Slips within the residual CD reached are its inexactness.
            let slip = if friction { cd_slip(f, &w, thr.max(cd.residual), &k, &mu_s, &mu_d)? } else { Vec::new() };
            let fr = friction.then(|| FrictionIn { coulomb: tresca::Friction { mu_s: &mu_s, mu_d: &mu_d, was_sliding: &was_sliding, kappa, slip: &slip }, anchor: &anchor });
            let mut res = match set.method {
                CompatMethod::AugmentedLagrangian => solve(ctx.comm, op, f, &k, set)?,
                _ => {
                    let (res, warmed) = solve_dual(ctx.comm, op, ctx.layout, b, ctx.contacts, f, &k, set, warm, fr.as_ref())?;
                    stats.warm += warmed as u64;
                    res
                }
            };
            if crate::parallel::signals::stopping() {
                return Err(SolverError::Interrupted);
            }
            stats.seconds += t0.elapsed().as_secs_f64();
            stats.solves += 1;
            stats.outer += res.outer as u64;
            stats.inner += res.inner;
            tangential = res.friction.take();
            // Measured, not kept: solving a failed step again with its load
            // in four sub-increments from the previous step's (each from the
            // last one's history) converged none of the steps of the
            // 500-grain pour's first 100 that end short (26, with the
            // block-Jacobi preconditioner of the time; the first
            // sub-increment already misses by 0.6 of the load; 2.4× the
            // compatibility time).
            if !res.converged {
                // An iterate short of its tolerance is out of equilibrium;
                // CD's forces are admissible, so the step reports those.
                res.f = cd_normal(f, op.rows)?;
                if let Some(t) = tangential.as_mut() {
                    let rounds = t.rounds;
                    *t = cd_friction(op, f, &k, set.p, kappa, &mu_s, &mu_d)?;
                    t.rounds = rounds;
                }
                *warm = None;
                stats.not_converged += 1;
                if let Some(more) = crate::logging::step_warning(earlier_not_converged + stats.not_converged, "compatibility_not_converged") {
                    log::warn!(
                        "step {}: compatibility ({:?}) stopped after {} outer and {} inner iterations at feasibility {:e}, optimality {:e}{}; the step reports CD's forces{more}",
                        ctx.step,
                        set.method,
                        res.outer,
                        res.inner,
                        res.feasibility,
                        res.optimality,
                        tangential.as_ref().map_or(String::new(), |t| format!(", after {} frictional solves (Tresca rounds and coupled Coulomb solves)", t.rounds))
                    );
                }
            }
            log::debug!(
                "step {}: compatibility {} outer, {} inner, feasibility {:e}, optimality {:e}",
                ctx.step,
                res.outer,
                res.inner,
                res.feasibility,
                res.optimality
            );
            Ok(res.f)
        };
        let (mut report, compatible) = self.cd.step_with(ctx, bodies, forces, history, Some(&mut post))?;
        if let Some(w) = warm.take() {
            self.warm = Some(w.into_history(ctx.comm, history));
        }
        report.phases.push(("compatibility", self.stats.seconds - before));
        // No contact anywhere: nothing was solved.
        self.f_compatible = if compatible.len() == forces.f_n.len() { compatible } else { vec![0.0; forces.f_n.len()] };
        // Readers take a missing tangential force as zero (frictionless).
        self.f_compatible_t.clear();
        if let Some(t) = tangential.filter(|t| t.f_t.len() == forces.f_n.len()) {
            self.stats.friction_solves += t.rounds as u64;
            let (a, slid) = (history.contact.col(T_ANCHOR), history.contact.col(T_SLID));
            for i in 0..nc {
                let key = ctx.contacts.key(i);
                if t.anchor[i] == Vector3::zeros() && !t.sliding[i] && history.contact.get(&key).is_none() {
                    continue;
                }
                let row = history.contact.entry(key);
                a.of_mut(row).copy_from_slice(t.anchor[i].as_slice());
                slid.of_mut(row)[0] = if t.sliding[i] { 1.0 } else { 0.0 };
            }
            self.f_compatible_t = t.f_t;
        }
        Ok(report)
    }

    fn phases(&self) -> &'static [&'static str] {
        &["compatibility"]
    }

    /// CD's counters, and the compatibility solves: how many, how many
    /// missed their tolerance, and with friction their Tresca and Coulomb
    /// solves (every rank takes part in every solve: its counts are the run's).
    fn summary(&self, comm: &Comm) -> serde_json::Map<String, serde_json::Value> {
        let mut m = self.cd.summary(comm);
        m.insert("compatibility_solves".into(), self.stats.solves.into());
        m.insert("compatibility_not_converged".into(), self.stats.not_converged.into());
        if self.friction {
            m.insert("compatibility_friction_solves".into(), self.stats.friction_solves.into());
        }
        m
    }

    fn resume_counters(&mut self, earlier: &dyn Fn(&str) -> u64) {
        self.cd.resume_counters(earlier);
        self.earlier_not_converged = earlier("compatibility_not_converged");
    }

    /// `force_compatible`: the compatible normal force (0 at steps that did
    /// not compute it); with friction `force_compatible_tangent`, the
    /// compatible tangential force on body b; `force_normal` and
    /// `force_tangent` stay CD's.
    fn contact_fields(&self, contacts: &Contacts) -> Vec<ContactField> {
        let mut values = self.f_compatible.clone();
        values.resize(contacts.len(), 0.0);
        let mut fields = vec![ContactField { name: "force_compatible", width: 1, values, replaces: Some("force_normal") }];
        if self.friction {
            let mut t: Vec<f64> = self.f_compatible_t.iter().flat_map(|v| [v.x, v.y, v.z]).collect();
            t.resize(3 * contacts.len(), 0.0);
            fields.push(ContactField { name: "force_compatible_tangent", width: 3, values: t, replaces: Some("force_tangent") });
        }
        fields
    }

    fn reported_forces(&self) -> Option<ReportedForces<'_>> {
        (!self.f_compatible.is_empty()).then_some(ReportedForces { f_n: &self.f_compatible, f_t: &self.f_compatible_t })
    }
}

/// A contact CD leaves open counts as open when its end-of-step gap rate
/// Φ/Δt + B v⁺ = (N f + p)_i exceeds this many times CD's stopping
/// threshold (so closure within CD's own accuracy still counts as closed).
pub const OPEN_FACTOR: f64 = 10.0;

/// w = N f + p: the constraint velocities at the end of the CD step whose
/// forces are `f_cd`. Collective.
pub fn end_velocities(op: &mut ContactOperator, f_cd: &Vector, p: &Vector) -> Result<Vector> {
    let mut w = op.contact_vec()?;
    op.apply_n(f_cd, &mut w)?;
    w.axpy(1.0, p)?;
    Ok(w)
}

/// Leaves the contacts that CD leaves open (f_i = 0 and their end
/// velocity w_i = (N f + p)_i above [`OPEN_FACTOR`] · `thr`, `w` from
/// [`end_velocities`]) out of eq 36 by zeroing their k̃: as zero-gap
/// truss bars they would carry force across a gap that, in the rigid limit
/// of a stiff DEM, never closes. Contacts within `contact.distance` but
/// apart are most of a random pack's list (55 % of a poured 10^4-sphere
/// pack), and with them the truss is the wrong one. Returns how many were
/// left out on all ranks. Collective.
pub fn leave_out_open(comm: &Comm, op: &ContactOperator, f_cd: &Vector, w: &Vector, thr: f64, k: &mut [f64]) -> Result<u64> {
    let (fv, wv) = (f_cd.view()?, w.view()?);
    let mut open = 0u64;
    let r = op.rows;
    for (i, ki) in k.iter_mut().enumerate() {
        if fv[r * i] <= 0.0 && wv[r * i] > OPEN_FACTOR * thr && *ki != 0.0 {
            *ki = 0.0;
            open += 1;
        }
    }
    Ok(crate::parallel::sum_u64(comm, open))
}

/// Per local contact of a frictional problem: CD's f_t / f_n along
/// (t1, t2) where the contact is a truss bar (k̃ > 0) that slides at the
/// end of the CD step, else `None`. Sliding: the force on the cone (|f_t|
/// within [`ON_CONE`] of μ f_n, μ the smaller of μ_s and μ_d) and a
/// relative tangential speed |w_t| ([`end_velocities`]) above [`SLIDING`]
/// × `thr`: CD's threshold, or the residual CD reached if it stopped
/// short of it (its slips below that are the solve's inexactness).
pub fn cd_slip(f_cd: &Vector, w: &Vector, thr: f64, k: &[f64], mu_s: &[f64], mu_d: &[f64]) -> Result<Vec<Option<[f64; 2]>>> {
    let (fv, wv) = (f_cd.view()?, w.view()?);
    Ok((0..k.len())
        .map(|i| {
            let (f_n, f_t) = (fv[3 * i], [fv[3 * i + 1], fv[3 * i + 2]]);
            let on_cone = f_n > 0.0 && f_t[0].hypot(f_t[1]) >= (1.0 - ON_CONE) * mu_s[i].min(mu_d[i]) * f_n;
            let slides = k[i] > 0.0 && on_cone && wv[3 * i + 1].hypot(wv[3 * i + 2]) > SLIDING * thr;
            slides.then(|| [f_t[0] / f_n, f_t[1] / f_n])
        })
        .collect())
}

/// Relative distance to the Coulomb cone of a force [`cd_slip`] counts as
/// on it (CD projects sliding forces onto the cone).
const ON_CONE: f64 = 1e-6;

/// Tangential speed, in CD thresholds, above which a contact on the cone
/// slides: CD's residual leaves contacts of the n = 8 pyramid at rest
/// slipping at up to 1.4 thresholds, where a pour's colliding grains slide
/// at 100 to 3e5.
const SLIDING: f64 = 10.0;

/// CD's normal force of every local contact (`rows` per contact in `f_cd`).
pub fn cd_normal(f_cd: &Vector, rows: usize) -> Result<Vec<f64>> {
    Ok(f_cd.view()?.iter().step_by(rows).copied().collect())
}

/// The tangential answer that reports CD's forces: CD's f_t on body b
/// (world frame), the elastic history of a spring carrying it,
/// e = −f_t / k_t (k_t = κ k̃ for p = 2, κ k̃ δ^{p−2} ([`tresca::secant`]) at the
/// approach δ = (f_n/k̃)^{1/(p−1)} that carries CD's f_n), and sliding
/// where the force is on the cone. `rounds` is 0.
pub fn cd_friction(op: &ContactOperator, f_cd: &Vector, k: &[f64], p: f64, kappa: f64, mu_s: &[f64], mu_d: &[f64]) -> Result<FrictionOut> {
    let fv = f_cd.view()?;
    let n = op.n_local();
    let (mut f_t, mut anchor, mut sliding) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let (t1, t2) = op.tangents[i];
        let (f_n, ft) = (fv[3 * i], t1 * fv[3 * i + 1] + t2 * fv[3 * i + 2]);
        let kt = if k[i] > 0.0 && f_n > 0.0 { tresca::secant(k[i], p, kappa, tresca::approach(k[i], p, f_n)) } else { 0.0 };
        anchor.push(if kt > 0.0 { -ft / kt } else { Vector3::zeros() });
        sliding.push(kt > 0.0 && ft.norm() >= (1.0 - ON_CONE) * mu_s[i].min(mu_d[i]) * f_n);
        f_t.push(ft);
    }
    Ok(FrictionOut { f_t, anchor, sliding, rounds: 0 })
}

/// Relative stiffness k̃ of every contact ([`Scene::pair_stiffness`]).
pub fn relative_stiffness(scene: &Scene, bodies: &Bodies, contacts: &Contacts) -> Vec<f64> {
    (0..contacts.len()).map(|i| scene.pair_stiffness(bodies.material[contacts.ia[i]], contacts.material_b(i, bodies, &scene.walls))).collect()
}

/// Result of one compatibility solve (`optimality` is 0 for the dual
/// methods: their forces are optimal by construction).
#[derive(Clone, Debug, Default)]
pub struct CompatResult {
    /// Compatible force of every local contact.
    pub f: Vec<f64>,
    pub outer: u32,
    pub inner: u64,
    /// ‖Bᵀf − F̃‖₂/‖F̃‖₂ and the projected-gradient norm at the end.
    pub feasibility: f64,
    pub optimality: f64,
    pub converged: bool,
    /// The tangential forces and history (frictional solves).
    pub friction: Option<FrictionOut>,
}

/// The friction of a frictional compatible solve, per local contact.
pub struct FrictionIn<'a> {
    pub coulomb: tresca::Friction<'a>,
    /// The elastic tangential displacement carried from the last solve
    /// (world frame, unscaled; zero for a new contact).
    pub anchor: &'a [Vector3<f64>],
}

/// The tangential answer of a frictional compatible solve, per local contact.
#[derive(Clone, Debug, Default)]
pub struct FrictionOut {
    /// The tangential force on body b (world frame).
    pub f_t: Vec<Vector3<f64>>,
    /// The elastic history to carry to the next solve (world, unscaled).
    pub anchor: Vec<Vector3<f64>>,
    pub sliding: Vec<bool>,
    pub rounds: u32,
}

/// Solves eq 36 through its dual (`set.method` newton or apgd) for the
/// contacts of `op` with F̃ = Bᵀ `f_cd`, from the displacements in `warm`
/// when the truss is the one of that solve (returned flag), else from
/// the bilateral solve (newton) or zero (apgd); stores the new u in `warm`.
/// With `friction` (B has three rows per contact) the contacts are
/// elastic–plastic tangential springs too ([`tresca`]). Collective.
#[allow(clippy::too_many_arguments)]
pub fn solve_dual(
    comm: &Comm,
    op: &ContactOperator,
    layout: &Layout,
    bodies: &Bodies,
    contacts: &Contacts,
    f_cd: &Vector,
    k: &[f64],
    set: &CompatSettings,
    warm: &mut Option<WarmStart>,
    friction: Option<&FrictionIn>,
) -> Result<(CompatResult, bool)> {
    let mut ft = op.body_vec()?;
    op.b.mult_transpose(f_cd, &mut ft)?;
    let kappa = friction.map_or(0.0, |f| f.coulomb.kappa);
    let mut problem = dual::Dual::new(comm, op, layout, bodies, contacts, ft, k, set.p, kappa)?;
    let n = op.n_local();
    if problem.is_trivial() {
        *warm = None;
        let friction = friction.map(|_| FrictionOut { f_t: vec![Vector3::zeros(); n], anchor: vec![Vector3::zeros(); n], sliding: vec![false; n], rounds: 0 });
        return Ok((CompatResult { f: vec![0.0; n], converged: true, friction, ..Default::default() }, false));
    }
    // The truss bars (contacts left out have k̃ = 0).
    let keys: Vec<ContactKey> = (0..n).filter(|&i| k[i] > 0.0).map(|i| contacts.key(i)).collect();
    // Warm start: same bars on every rank, every owned body known.
    let same = warm.as_ref().is_some_and(|w| w.keys == keys && w.p == set.p && (0..op.n_owned).all(|i| w.u.contains_key(&bodies.id[i])));
    let u0 = if crate::parallel::all_ok(comm, same) {
        let w = warm.as_ref().expect("checked above");
        // f/s = k̃ δ^{p−1}: u scales with s^{−1/(p−1)}.
        let r = (w.scale / problem.scale).powf(1.0 / (set.p - 1.0));
        let mut u = op.body_vec()?;
        {
            let mut uv = u.view_mut()?;
            for i in 0..op.n_owned {
                let ui = w.u[&bodies.id[i]];
                for d in 0..6 {
                    uv[6 * i + d] = if problem.free[6 * i + d] { r * ui[d] } else { 0.0 };
                }
            }
        }
        Some(u)
    } else {
        None
    };
    // The interior point starts from its own central point.
    let warmed = u0.is_some() && !(friction.is_some() && set.method == CompatMethod::InteriorPoint);
    let tol = set.feasibility_tolerance;
    let apgd = |problem: &dual::Dual, u0: Option<Vector>, tol: f64| dual_apgd::solve(problem, u0, tol, set.max_iterations as u64);
    let inner = |problem: &dual::Dual, u0: Option<Vector>, tol: f64| match set.method {
        CompatMethod::Apgd => apgd(problem, u0, tol),
        _ => newton::solve(problem, bodies, u0, tol, set.max_iterations),
    };
    let (res, friction) = match friction {
        None => (inner(&problem, u0, tol)?, None),
        Some(fr) => {
            // Lengths scale with s^{1/(p−1)} (f/s = k̃ δ^{p−1}).
            let length = problem.scale.powf(1.0 / (set.p - 1.0));
            let anchor: Vec<[f64; 2]> = (0..n)
                .map(|i| {
                    let (t1, t2) = op.tangents[i];
                    [fr.anchor[i].dot(&t1) / length, fr.anchor[i].dot(&t2) / length]
                })
                .collect();
            let f_n0: Vec<f64> = {
                let fv = f_cd.view()?;
                (0..n).map(|i| fv[3 * i] / problem.scale).collect()
            };
            let out = if set.method == CompatMethod::InteriorPoint {
                let kt: Vec<f64> = problem.k.iter().map(|k| kappa * k).collect();
                let ip = ipm::solve(&problem, bodies, &anchor, &kt, &fr.coulomb, tol, set.max_iterations)?;
                // Near a degenerate solution (a contact at its bound that does
                // not slip) the interior point converges only to √gap: Newton
                // finishes from its displacements and normal forces.
                let f_ip: Vec<f64> = (0..n).map(|i| ip.result.f[3 * i] / problem.scale).collect();
                let u_ip = ip.result.u.try_clone()?;
                let polished = tresca::solve(&mut problem, Some(u_ip), anchor.clone(), &f_ip, &fr.coulomb, tol, true, tresca::Limit::FULL, inner)?;
                log::debug!("compatibility: Newton from the interior point: {} steps, feasibility {:e}", polished.result.iterations, polished.result.feasibility);
                if polished.result.converged || !ip.result.converged {
                    tresca::Rounds { rounds: polished.rounds + ip.rounds, result: DualResult { iterations: polished.result.iterations + ip.result.iterations, linear: polished.result.linear + ip.result.linear, ..polished.result }, ..polished }
                } else {
                    ip
                }
            } else {
                let newton = tresca::solve(&mut problem, u0, anchor.clone(), &f_n0, &fr.coulomb, tol, set.method != CompatMethod::Apgd, tresca::Limit::FULL, inner)?;
                if newton.result.converged || set.method == CompatMethod::Apgd {
                    newton
                } else {
                    // The first Tresca round bounds the springs by CD's
                    // normal forces; where those are far from the
                    // compatible ones (the nonsmooth Gauss–Seidel's on a
                    // pyramid with touching neighbours, n = 18 and 20 at
                    // μ = 0.3) the coupled Coulomb solve that follows
                    // stalls near 1e-3, while from zero bounds (a first
                    // round without friction) it converges in about 33
                    // Newton steps. Sub-increments of the load do not help
                    // under Hooke: the first is the same problem, scaled.
                    // With tangential history (the 500-grain pour of
                    // tests/compat_friction.rs) it rescued no step of 100
                    // and cost a fifth more time, so only fresh solves try.
                    let fresh = fr.anchor.iter().all(|a| *a == Vector3::zeros()) && !fr.coulomb.was_sliding.iter().any(|&s| s);
                    // What every attempt spent: Newton steps, inner iterations (APGD's count as inner ones), solves.
                    let mut spent = (newton.result.iterations, newton.result.linear, newton.rounds);
                    let tally = |r: tresca::Rounds, (iterations, linear, rounds): (u64, u64, u32)| tresca::Rounds { rounds, result: DualResult { iterations, linear, ..r.result }, ..r };
                    let from_zero = if crate::parallel::all_ok(comm, fresh) {
                        let z = tresca::solve(&mut problem, None, anchor.clone(), &vec![0.0; n], &fr.coulomb, tol, true, tresca::Limit::FULL, inner)?;
                        log::debug!("compatibility: Newton stopped at feasibility {:e}; from zero bounds: {} steps, feasibility {:e}", newton.result.feasibility, z.result.iterations, z.result.feasibility);
                        spent = (spent.0 + z.result.iterations, spent.1 + z.result.linear, spent.2 + z.rounds);
                        z.result.converged.then_some(z)
                    } else {
                        None
                    };
                    if let Some(z) = from_zero {
                        tally(z, spent)
                    } else {
                        // Newton's coupled Coulomb solves can also stall
                        // where a line search fails between stick and slip
                        // (a pour's landing grains); APGD's rounds on the
                        // same problem, from rest, take their place for a
                        // bounded effort (most such steps of a formed pack
                        // do not converge either). The interior point in
                        // their place (Hooke, up to 2,000 bodies): 17 of the
                        // 500-grain pour's first 100 steps short against 26,
                        // compatibility 66 s against 35–47 s (the interior
                        // point first and Newton after it: 14, 66 s;
                        // `method = "interior-point"` alone: 15, 31 s); but
                        // where Newton converges the interior point can take
                        // minutes (n = 16 pyramid at μ = 10: 247 s against
                        // 0.23 s), so it stays a method to choose.
                        let again = tresca::solve(&mut problem, None, anchor, &f_n0, &fr.coulomb, tol, false, tresca::Limit::RESCUE, apgd)?;
                        log::debug!("compatibility: Newton stopped at feasibility {:e}; APGD's rounds: {} iterations, feasibility {:e}", newton.result.feasibility, again.result.iterations, again.result.feasibility);
                        spent = (spent.0, spent.1 + again.result.iterations, spent.2 + again.rounds);
                        tally(if again.result.converged { again } else { newton }, spent)
                    }
                }
            };
            let f_t = (0..n)
                .map(|i| {
                    let (t1, t2) = op.tangents[i];
                    t1 * out.result.f[3 * i + 1] + t2 * out.result.f[3 * i + 2]
                })
                .collect();
            let anchor = (0..n)
                .map(|i| {
                    let (t1, t2) = op.tangents[i];
                    (t1 * out.anchor[i][0] + t2 * out.anchor[i][1]) * length
                })
                .collect();
            (out.result, Some(FrictionOut { f_t, anchor, sliding: out.sliding, rounds: out.rounds }))
        }
    };
    {
        let uv = res.u.view()?;
        let u = (0..op.n_owned)
            .map(|i| {
                let mut x = [0.0; 6];
                x.copy_from_slice(&uv[6 * i..6 * i + 6]);
                (bodies.id[i], x)
            })
            .collect();
        *warm = Some(WarmStart { keys, u, scale: problem.scale, p: set.p });
    }
    let (outer, inner) = match set.method {
        CompatMethod::Apgd => (0, res.iterations),
        _ => (res.iterations as u32, res.linear),
    };
    let rows = op.rows;
    let out = CompatResult {
        f: (0..n).map(|i| res.f[rows * i]).collect(),
        outer,
        inner,
        feasibility: res.feasibility,
        optimality: 0.0,
        converged: res.converged,
        friction,
    };
    Ok((out, warmed))
}

/// Solves eq 36 for the contacts of `op` with F̃ = Bᵀ `f_cd`, warm-started
/// from `f_cd`; `k` is k̃ per local contact. Collective.
pub fn solve(comm: &Comm, op: &mut ContactOperator, f_cd: &Vector, k: &[f64], set: &CompatSettings) -> Result<CompatResult> {
    let n = op.n_local();
    let mut ft = op.body_vec()?;
    op.b.mult_transpose(f_cd, &mut ft)?;
    let scale = ft.norm(NormType::Infinity)?;
    if !(scale > 0.0 && scale.is_finite()) {
        return Ok(CompatResult { f: vec![0.0; n], converged: true, ..Default::default() });
    }
    ft.scale(1.0 / scale)?;
    let ft_norm = ft.norm(NormType::Two)?;
    // w*(f) = a f^q / q with q = p/(p−1), a = k̃^{1/(1−p)}; ∇w* = a f^{q−1}.
    let p = set.p;
    let q = p / (p - 1.0);
    // k̃ = 0: a contact left out (held at f = 0 by the projection below).
    let a: Vec<f64> = k.iter().map(|&k| if k > 0.0 { k.powf(1.0 / (1.0 - p)) } else { 0.0 }).collect();
    let mut x = f_cd.try_clone()?;
    x.scale(1.0 / scale)?;
    let mut lambda = op.body_vec()?;
    let mut c = op.body_vec()?;
    let mut t = op.body_vec()?;
    let mut mu = 10.0f64;
    let mut lip = 0.0f64;
    let mut omega = 1e-2f64.max(set.optimality_tolerance);
    let mut feas_prev = f64::INFINITY;
    let (mut outer, mut inner) = (0u32, 0u64);
    let (mut feasibility, mut optimality, mut converged) = (f64::INFINITY, f64::INFINITY, false);
    let active: Vec<bool> = op.active.iter().zip(k).map(|(&on, &k)| on && k > 0.0).collect();
    let project = |v: &mut Vector| -> Result<()> {
        let mut vv = v.view_mut()?;
        for (x, &on) in vv.iter_mut().zip(&active) {
            *x = if on { x.max(0.0) } else { 0.0 };
        }
        Ok(())
    };
    let b = &op.b;
    while outer < set.max_outer {
        outer += 1;
        let eval = |f: &Vector, g: &mut Vector| -> Result<f64> {
            // c = Bᵀf − F̃, t = μ c − λ, g = B t + ∇w*(f).
            b.mult_transpose(f, &mut c)?;
            c.axpy(-1.0, &ft)?;
            t.copy_from(&c)?;
            t.scale(mu)?;
            t.axpy(-1.0, &lambda)?;
            b.mult(&t, g)?;
            let mut w = 0.0;
            {
                let fv = f.view()?;
                let mut gv = g.view_mut()?;
                for i in 0..fv.len() {
                    let fi = fv[i].max(0.0);
                    w += a[i] * fi.powf(q) / q;
                    gv[i] += a[i] * fi.powf(q - 1.0);
                }
            }
            let w = crate::parallel::sum_f64(comm, w);
            Ok(w - lambda.dot(&c)? + 0.5 * mu * c.dot(&c)?)
        };
        let stop = |it: u64| crate::parallel::signals::agreed_at(comm, it);
        let res = apgd::apgd(&mut x, eval, project, omega, set.max_inner as u64, &mut lip, &stop)?;
        inner += res.iterations;
        if crate::parallel::signals::stopping() {
            break;
        }
        optimality = res.residual;
        b.mult_transpose(&x, &mut c)?;
        c.axpy(-1.0, &ft)?;
        feasibility = c.norm(NormType::Two)? / ft_norm;
        if feasibility <= set.feasibility_tolerance && optimality <= set.optimality_tolerance {
            converged = true;
            break;
        }
        // λ ← λ − μ c; a larger penalty when feasibility stalls.
        lambda.axpy(-mu, &c)?;
        if feasibility > 0.25 * feas_prev {
            mu *= 10.0;
        }
        feas_prev = feasibility;
        omega = (0.1 * omega).max(set.optimality_tolerance);
    }
    let f: Vec<f64> = x.view()?.iter().map(|v| v * scale).collect();
    Ok(CompatResult { f, outer, inner, feasibility, optimality, converged, friction: None })
}
