//! The DEM time step (stage 3 "solver", solver = "dem"; ARCHITECTURE.md "One time
//! step"): the hooks (closed mesh pairs dropped, the night-owl search and
//! its redo requests) and the Δt loop around the Newton problem
//! ([`super::problem`]): the penetration test of §2.4.7; rejected steps
//! halve Δt; Δt grows after easy steps.
use super::law::NormalLaw;
use super::rigid::{Newmark, RigidState};
use crate::body::Bodies;
use super::night_owl::{self, MAX_NIGHT_OWL_REDOS, PENETRATION_FLOOR};
use crate::contact::{BodyDepths, ContactKey, WALL_ID_BASE, WALL_INDEX};
use crate::io::SolverState;
use crate::scene::DemClosedDepth;
use crate::parallel::records::FlatRecords;
use crate::parallel::{self, Comm};
use crate::petsc::{self};
use crate::solver::{Column, ContactForces, History, HistorySpec, Plan, Rows, Review, Search, Solver, SolverError, StateError, StepContext, StepReport};
use crate::world::World;
use mpi::traits::*;
use nalgebra::Vector3;
use super::elements::*;
use super::problem::*;
use super::state::*;
use std::collections::{HashMap, HashSet};

/// `[dem] closed_depth = "step"`: the search after a step seeks closed mesh
/// pairs down to this factor × twice the step's reach scaled to Δt_max (the
/// next step's reach may grow by this factor without spurious night owls).
const CLOSED_DEPTH_MARGIN: f64 = 1.5;

/// Growth factor of Δt after an easy step.
const GROWTH: f64 = 1.5;
/// A step whose largest active gap change exceeds this multiple of
/// `dem.gap_change` is redone with a shorter Δt.
const REJECT_RATIO: f64 = 2.0;

/// Implicit barrier DEM.
pub struct DemSolver {
    /// Δt to try next.
    dt: f64,
    options_set: bool,
    /// Steps rejected so far (Newton failure or penetration).
    pub rejected: u64,
    /// The start of the step being taken, to redo it from.
    start: Option<StepStart>,
    /// The displacements of the attempt just taken and their reach (twice
    /// the largest, walls included), from [`Solver::search`] to [`Solver::review`].
    moved: Option<(BodyDepths, f64)>,
    /// The step being taken (log lines).
    step: u64,
    /// Night-owl counters for summary.json (global).
    night_owls: u64,
    night_owl_redos: u64,
    /// Mesh pairs detected closed and dropped (this rank).
    closed_pairs_dropped: u64,
}

/// The start of a step beyond what the World rolls back (bodies, history):
/// this solver's Δt, the mesh pairs dropped closed, and how the step has
/// been redone so far.
struct StepStart {
    dt: f64,
    closed: HashSet<ContactKey>,
    /// The Δt the step is tried with.
    dt_try: f64,
    distance: f64,
    redos: u32,
    widened: u32,
}





impl Default for DemSolver {
    fn default() -> Self {
        Self::new()
    }
}

impl DemSolver {
    pub fn new() -> Self {
        Self {
            dt: f64::INFINITY,
            options_set: false,
            rejected: 0,
            start: None,
            moved: None,
            step: 0,
            night_owls: 0,
            night_owl_redos: 0,
            closed_pairs_dropped: 0,
        }
    }
}














impl Solver for DemSolver {
    fn history(&self) -> HistorySpec {
        let col = |name, width| Column { name, width };
        HistorySpec {
            body: vec![col(ACCELERATION, 3), col(ANGULAR_ACCELERATION, 3)],
            contact: vec![col(GAP_T, 3), col(GAP_T_NORMAL, 3), col(SLIDING, 1)],
        }
    }

    /// Tables: "dt" (the next Δt, rank 0 only).
    fn state(&self) -> SolverState {
        let mut st = SolverState::new(STATE_VERSION);
        let mut dt = FlatRecords::new(0, 1);
        if self.dt.is_finite() {
            dt.push(0, &[], &[self.dt]);
        }
        st.push("dt", dt);
        st
    }

    fn restore(&mut self, comm: &Comm, state: SolverState) -> Result<(), StateError> {
        if state.version != STATE_VERSION {
            return Err(StateError { solver: "dem", found: state.version, expected: STATE_VERSION });
        }
        let dt = state.table("dt").map_or(f64::NEG_INFINITY, |t| t.f.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        let dt = parallel::max_f64(comm, dt);
        self.dt = if dt.is_finite() { dt } else { f64::INFINITY };
        Ok(())
    }

    fn adaptive(&self) -> bool {
        true
    }

    fn rolls_back(&self) -> bool {
        true
    }

    /// The first attempt remembers the step's start and ends the step
    /// where a wall is removed (`until`); every attempt drops the mesh
    /// pairs detected closed.
    fn begin_step(&mut self, world: &World, time: f64, dt: f64, attempt: u32) -> Plan {
        let (drop, closed) = night_owl::closed_mesh_pairs(world);
        self.closed_pairs_dropped += closed.len() as u64;
        if attempt > 0 {
            if let Some(start) = self.start.as_mut() {
                start.closed = closed;
            }
            return Plan { dt, drop };
        }
        let tol = 1e-9 * world.scene().simulation.dt;
        let dt = world.scene().walls.iter().filter(|w| w.until > time + tol).fold(dt, |dt, w| dt.min(w.until - time));
        self.start = Some(StepStart {
            dt: self.dt,
            closed,
            dt_try: dt,
            distance: world.scene().contact.distance,
            redos: 0,
            widened: 0,
        });
        Plan { dt, drop }
    }

    /// The night-owl search (§2.6.3) at the step's end: with
    /// `closed_depth = "step"`, a mesh pair deeper than its two bodies'
    /// displacements was closed at the step's start (a projection, no owl):
    /// the search need not find it. The next step's start list (this
    /// search) must hold every pair closed less than twice the pair's next
    /// reach, else a projection it missed would show up as an owl; that
    /// reach is bounded by this one at Δt_max with a margin for faster
    /// motion. Per body pair: one fast body deepened every pair's search
    /// (its step moved 30× the mean on the tetrapod collapse). A redo
    /// starts from the one depth of all pairs.
    fn search(&mut self, world: &World, time: f64, report: &StepReport) -> Option<Search> {
        let (comm, scene) = (world.comm(), world.scene());
        let d = &scene.dem;
        let start = world.step_start()?;
        // A gap changes by at most the two bodies' displacements.
        let walls = scene.walls.iter().map(|w| w.displacement(time, report.dt).norm()).fold(0.0, f64::max);
        let disp = night_owl::displacements(world, start);
        // A Lees–Edwards image drifts past the bodies besides.
        let drift = world.layout().image_speed() * report.dt;
        let largest = parallel::max_f64(comm, disp.iter().copied().fold(0.0, f64::max)) + drift;
        let moved = night_owl::step_displacements(world, &disp, largest, report.dt);
        let reach = 2.0 * largest.max(walls);
        let mut search = Search::default();
        if d.closed_depth == DemClosedDepth::Step {
            let scale = CLOSED_DEPTH_MARGIN * 2.0 * (d.dt_max / report.dt).max(1.0);
            search.mesh_depth = Some(scale * reach);
            let by_id = moved.by_id.iter().map(|(&id, &m)| (id, scale * m)).collect();
            search.body_depths = Some(BodyDepths { by_id, default: 0.5 * scale * reach });
        }
        self.moved = Some((moved, reach));
        Some(search)
    }

    /// A step that missed contacts is redone from its start, out to a
    /// larger contact distance for new pairs, with half the Δt for a
    /// degeneration found below the penetration floor.
    fn review(&mut self, world: &World, _time: f64, report: &StepReport) -> Review {
        let (comm, scene) = (world.comm(), world.scene());
        let d = &scene.dem;
        let (Some(start), Some((moved, reach)), Some(start_bodies)) = (self.start.as_mut(), self.moved.take(), world.step_start()) else {
            return Review::Accept;
        };
        let floor = PENETRATION_FLOOR * d.f * d.gbar;
        let owls = night_owl::owls_after_step(world, start_bodies, &start.closed, d.gbar, floor, &moved);
        let n_owls = night_owl::count(comm, &owls, |_| true);
        if n_owls == 0 {
            return Review::Accept;
        }
        let (n_new, n_deep) = (night_owl::count(comm, &owls, |o| o.new_pair), night_owl::count(comm, &owls, |o| o.penetrating));
        self.night_owls += n_owls;
        let names = night_owl::names(comm, &owls);
        let halve = n_deep > 0 && 0.5 * report.dt >= d.dt_min;
        let widen = n_new > 0 && start.widened < MAX_NIGHT_OWL_REDOS;
        let rank0 = comm.rank() == 0;
        if !halve && !widen {
            if rank0 {
                log::warn!("step {}: night-owl contact(s) {names} remain after {} redos (dt = {:e}); step accepted", self.step, start.redos, report.dt);
            }
            return Review::Accept;
        }
        if widen {
            // The new pairs were within `reach` at the step's start.
            start.distance = start.distance.max(scene.contact.distance + 1.01 * reach);
            start.widened += 1;
        }
        if halve {
            start.dt_try = 0.5 * report.dt;
        }
        let dt = start.dt_try;
        start.redos += 1;
        self.night_owl_redos += 1;
        if rank0 {
            log::info!("step {}: night-owl contact(s) {names}: redoing the step with contact distance {:.4e}, dt = {dt:e}", self.step, start.distance);
        }
        self.dt = start.dt;
        Review::Redo { dt, distance: start.distance }
    }

    fn summary(&self, comm: &Comm) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("night_owls".into(), self.night_owls.into());
        m.insert("night_owl_redos".into(), self.night_owl_redos.into());
        m.insert("closed_pairs_dropped".into(), parallel::sum_u64(comm, self.closed_pairs_dropped).into());
        m
    }

    fn step(&mut self, ctx: &StepContext, bodies: &mut Bodies, forces: &mut ContactForces, history: &mut History) -> Result<StepReport, SolverError> {
        let d = &ctx.scene.dem;
        self.step = ctx.step;
        if !self.options_set {
            // ILU(0) with at most 500 GMRES iterations: a stalled solve (ILU(0)
            // stalled at 10,000 on the connected stiff pyramid) fails fast and
            // the step is cut; ILU(2)'s factorisation cost more than its fewer
            // iterations saved: the n = 20 pyramid's drop to rest 98.6 s vs
            // 135.7 s, the tetrapod collapse's solve 17.0 s vs 38.1 s
            // (BENCHMARKS.md "n = 20 dropped to rest, dynamically").
            // An inexact Newton direction (GMRES to 1e-4) took the same
            // Newton iterations as 1e-12 for a quarter of the GMRES ones:
            // the drop 64.7 s vs 100.4 s, the same rest state to 8e-8.
            // The backtracking line search asks a step to remove 0.4 of ‖F‖²'s
            // linear prediction (PETSc: 1e-4): a frictional step's Newton
            // creeps with full steps that hardly lower ‖F‖ while contacts
            // switch stick and slip; cut, it reaches its quadratic end sooner
            // (the tetrapod collapse's first 1.5 s: 11,650 Newton iterations
            // against 13,773; frictionless drops are unchanged).
            for (k, v) in [
                ("-snes_linesearch_alpha", "0.4"),
                ("-ksp_type", "gmres"),
                ("-pc_type", "bjacobi"),
                ("-sub_pc_type", "ilu"),
                ("-sub_pc_factor_levels", "0"),
                ("-ksp_rtol", "1e-4"),
                ("-ksp_max_it", "500"),
            ] {
                petsc::options::set_default(k, Some(v))?;
            }
            self.options_set = true;
        }
        let n = ctx.layout.n_owned;
        let g = ctx.scene.simulation.gravity;
        let law = NormalLaw::new(d.eps1, d.n1, d.n2, d.gbar, d.f).with_damping_cap(d.damping_cap);
        let elements = elements(ctx, bodies);
        let tangentials = tangential_elements(ctx, bodies, &elements, history);
        // A retry of this step has ctx.dt below the Δt it failed with.
        let mut dt = self.dt.min(d.dt_max).min(ctx.dt);
        // Δt control for impacts, ahead of the step: the largest Δt at which
        // no closing contact changes its gap by more than `gap_change` of
        // its end value (the criterion checked after the step), predicted
        // from the gap rates at the step's start. Without it a contact
        // landing from beyond ḡ is found only by a failed or rejected step.
        let ahead = impact_dt(ctx, bodies, &elements, law.gbar, d.gap_change, dt);
        if ahead < dt {
            dt = ahead.max(d.dt_min);
        }
        let (mut iterations, mut linear) = (0u64, 0u64);
        // `[[load]]`s by body id: whichever rank owns the body applies it.
        let loads: HashMap<u64, &crate::scene::Load> = ctx.scene.loads.iter().map(|l| (l.body, l)).collect();
        let nm = Newmark::new(d.beta, d.gamma, dt);
        let states: Vec<RigidState> = (0..n)
            .map(|i| {
                let (acc, wacc) = acceleration(history, bodies, i, &g);
                // External loads at configuration i+1 (implicit, eqs 23–24):
                // the ramp at t + Δt; the body-frame point turned to the
                // world frame at i (rigid::residual turns it on by Q^Δ).
                let (moment, point_force, point_offset) = match loads.get(&bodies.id[i]) {
                    Some(l) => {
                        let s = l.factor(ctx.time + dt);
                        (s * l.moment, s * l.force, bodies.orientation[i] * l.point)
                    }
                    None => (Vector3::zeros(), Vector3::zeros(), Vector3::zeros()),
                };
                RigidState {
                    mass: bodies.mass[i],
                    inertia: bodies.world_inertia(i),
                    velocity: bodies.velocity[i],
                    acceleration: acc,
                    angular_velocity: bodies.angular_velocity[i],
                    angular_acceleration: wacc,
                    force: bodies.mass[i] * g,
                    moment,
                    point_force,
                    point_offset,
                }
            })
            .collect();
        let prob = Problem {
            ctx,
            bodies,
            states,
            elements: elements.clone(),
            law,
            zeta: d.damping,
            dt,
            nm,
            floor: std::cell::Cell::new(0.0),
            gaps: Default::default(),
            last_residual: Default::default(),
            bs: std::cell::Cell::new(6),
            tangential: tangentials.clone(),
            tangent_kind: d.tangent,
            first_tangent: d.first_tangent,
            wall_shift: (0..ctx.contacts.len())
                .map(|k| {
                    let c = ctx.contacts;
                    let wall = (c.ib[k] == WALL_INDEX).then(|| ctx.scene.walls.get((c.b[k] - WALL_ID_BASE) as usize)).flatten();
                    wall.map_or_else(Vector3::zeros, |w| w.displacement(ctx.time, dt))
                })
                .collect(),
        };
        let (ok, its, lits, x) = solve(&prob, d, false)?;
        if parallel::signals::stopping() {
            return Err(SolverError::Interrupted);
        }
        iterations += its as u64;
        linear += lits;
        // Friction makes the residual jump where a contact turns from
        // stick to slip with μ_d < μ_s (the force drops from μ_s f_n to
        // μ_d f_n): backtracking then creeps towards the jump in ever
        // shorter steps and never crosses it, at any Δt (the sliding
        // block of §3.3 died at dt_min). Full Newton steps cross it.
        let (ok, x) = if ok {
            (ok, x)
        } else {
            let (ok, its, lits, x) = solve(&prob, d, true)?;
            if parallel::signals::stopping() {
                return Err(SolverError::Interrupted);
            }
            iterations += its as u64;
            linear += lits;
            if ok {
                log::debug!("dem: step {}: converged with full Newton steps after backtracking failed", ctx.step);
            }
            (ok, x)
        };
        let x = if ok { Some(x) } else { None };
        // Penetration test (§2.4.7): every gap positive, no normal flipped.
        let accepted = match &x {
            Some(x) => {
                let all = prob.local_increments(x).map_err(|e| SolverError::Step(Box::new(e)))?;
                let fine = (0..ctx.contacts.len()).all(|k| {
                    let (gk, _, nk) = super::assemble::gap_grad(&prob.elements[k].kin, &prob.x12(&all, k));
                    gk > 0.0 && nk.dot(&prob.elements[k].n_start) > 0.0
                });
                parallel::all_ok(ctx.comm, fine).then_some(all)
            }
            None => None,
        };
        // Δt control for impacts: the largest |Δg| / (gap_change · min(g^i,
        // g^{i+1})) over contacts active at either end (global). Above
        // REJECT_RATIO the step is redone shorter; the next Δt aims at 1.
        let ratio = match &accepted {
            Some(all) => {
                let local = (0..ctx.contacts.len())
                    .map(|k| {
                        let g0 = prob.elements[k].g_start;
                        let (g1, ..) = super::assemble::gap_grad(&prob.elements[k].kin, &prob.x12(all, k));
                        let gmin = g0.min(g1);
                        if gmin < law.gbar {
                            (g1 - g0).abs() / (d.gap_change * gmin)
                        } else {
                            0.0
                        }
                    })
                    .fold(0.0, f64::max);
                parallel::max_f64(ctx.comm, local)
            }
            None => 0.0,
        };
        let retry = |dt: f64| StepReport { iterations, dt, linear_iterations: linear, rejected: 1, retry: Some(dt), ..Default::default() };
        if ratio > REJECT_RATIO && dt > d.dt_min * (1.0 + 1e-12) {
            self.rejected += 1;
            let dt = (dt * (0.8 / ratio).max(0.1)).max(d.dt_min);
            log::debug!("dem: step {}: gap change {ratio:.2} x the allowed, retrying with dt = {dt:e}", ctx.step);
            return Ok(retry(dt));
        }
        match accepted {
            Some(all) => {
                let mut f_n = Vec::with_capacity(ctx.contacts.len());
                let mut f_t = Vec::with_capacity(ctx.contacts.len());
                let mut friction = Rows::default();
                let (gt_col, normal_col, sliding_col) = (history.contact.col(GAP_T), history.contact.col(GAP_T_NORMAL), history.contact.col(SLIDING));
                let gaps = prob.gaps_at(&all);
                for k in 0..ctx.contacts.len() {
                    let (e, t) = prob.eval(k, &prob.x12(&all, k), gaps.1[k], Want::Residual, None).map_err(|e| SolverError::Step(Box::new(e)))?;
                    f_n.push(e.force);
                    // force on b: −f_t of the law
                    f_t.push(t.as_ref().map_or(Vector3::zeros(), |(_, fr)| -fr.force));
                    if let (Some(te), Some((_, fr))) = (&prob.tangential[k], &t) {
                        let c = &ctx.contacts;
                        let mut row = vec![0.0; history.contact.width()];
                        gt_col.of_mut(&mut row).copy_from_slice(fr.gap_t.as_slice());
                        normal_col.of_mut(&mut row).copy_from_slice(te.n.as_slice());
                        sliding_col.of_mut(&mut row)[0] = if fr.sliding { 1.0 } else { 0.0 };
                        friction.insert(c.key(k), row);
                    }
                }
                drop(gaps);
                // Contacts of this step only: one that opened forgets its history.
                history.contact.replace(friction);
                let Problem { states, nm, .. } = prob;
                finish(&states, &nm, &all, bodies, history);
                forces.f_t = f_t;
                forces.f_n = f_n;
                // `fixed`: the gap change alone bounds Δt.
                let easy = d.newton == crate::scene::DemNewton::Fixed || its <= d.easy_iterations as i64;
                let next = if easy { dt * GROWTH } else { dt };
                let next = if ratio > 0.0 { next.min(dt * 0.9 / ratio) } else { next };
                self.dt = next.clamp(d.dt_min, d.dt_max);
                Ok(StepReport { iterations, dt, linear_iterations: linear, ..Default::default() })
            }
            None => {
                self.rejected += 1;
                if dt <= d.dt_min * (1.0 + 1e-12) {
                    return Err(SolverError::SmallestStep { dt, time: ctx.time });
                }
                let dt = (0.5 * dt).max(d.dt_min);
                log::info!("dem: step {} rejected, retrying with dt = {dt:e}", ctx.step);
                Ok(retry(dt))
            }
        }
    }
}
