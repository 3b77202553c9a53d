//! The DEM time step (stage 3 "solver", solver = "dem"; ARCHITECTURE.md "One time
//! step"): SNES (newtonls) on the incremental DOFs (u^Δ, α^Δ) of the owned
//! bodies; residual = inertia − external + contact (eq 63), Jacobian as 6×6
//! body blocks and 12×12 contact blocks in MPIBAIJ (bs 6); ghosts' DOFs
//! forwarded at each evaluation; a line-search pre-check that keeps every
//! gap above a fraction of its current value; the penetration test of
//! §2.4.7; rejected steps halve Δt; Δt grows after easy steps.
use crate::body::dof_free;
use super::assemble::{normal_at, normal_tangent, tangential, ContactElement, Kinematics, Mat12, MeshKind, NormalEval, TangentialElement, Vec12};
use super::law::TangentialLaw;
use super::law::NormalLaw;
use super::rigid::{self, Newmark, RigidState};
use crate::body::{Bodies, Shape};
use super::night_owl::{self, MAX_NIGHT_OWL_REDOS, PENETRATION_FLOOR};
use crate::contact::{BodyDepths, ContactKey, WALL_ID_BASE, WALL_INDEX};
use crate::io::SolverState;
use crate::scene::DemClosedDepth;
use crate::parallel::exchange::forward_values;
use crate::parallel::records::{ask_all, FlatRecords};
use crate::parallel::{self, Comm};
use crate::petsc::{self, InsertMode, Mat, PetscInt, Snes, Vector};
use crate::solver::{ContactForces, Review, Solver, SolverError, StateError, StepContext, StepReport};
use crate::world::World;
use mpi::traits::*;
use nalgebra::Vector3;
use std::collections::{HashMap, HashSet};

/// `[dem] closed_depth = "step"`: the search after a step seeks closed mesh
/// pairs down to this factor × twice the step's reach scaled to Δt_max (the
/// next step's reach may grow by this factor without spurious night owls).
const CLOSED_DEPTH_MARGIN: f64 = 1.5;

/// Growth factor of Δt after an easy step.
const GROWTH: f64 = 1.5;
/// Newton also stops when ‖F‖ is within this factor of the round-off floor
/// of the residual (see [`Problem::residual`]).
const FLOOR_FACTOR: f64 = 64.0;
/// A step whose largest active gap change exceeds this multiple of
/// `dem.gap_change` is redone with a shorter Δt.
const REJECT_RATIO: f64 = 2.0;

/// Implicit barrier DEM.
pub struct DemSolver {
    /// Δt to try next.
    dt: f64,
    /// Newmark accelerations (ü, ω̇) of owned bodies, by body id.
    accel: HashMap<u64, (Vector3<f64>, Vector3<f64>)>,
    options_set: bool,
    /// Steps rejected so far (Newton failure or penetration).
    pub rejected: u64,
    /// Friction history of this rank's contacts, by (a, b, sub_a, sub_b):
    /// the tangential gap, the normal it lies against, sliding. Kept on the
    /// contact's rank (the owner of a); travels with a when a migrates.
    history: HashMap<ContactKey, Tangential>,
    /// The start of the step being taken, to redo it from.
    start: Option<StepStart>,
    /// The step being taken (log lines).
    step: u64,
    /// Night-owl counters for summary.json (global).
    night_owls: u64,
    night_owl_redos: u64,
    /// Mesh pairs detected closed and dropped (this rank).
    closed_pairs_dropped: u64,
}

/// The start of a step: owned bodies and this solver's state, the mesh
/// pairs dropped closed, and how the step has been redone so far.
struct StepStart {
    bodies: Bodies,
    accel: HashMap<u64, (Vector3<f64>, Vector3<f64>)>,
    history: HashMap<ContactKey, Tangential>,
    dt: f64,
    closed: HashSet<ContactKey>,
    /// The Δt the step is tried with.
    dt_try: f64,
    distance: f64,
    redos: u32,
    widened: u32,
}

/// Version of the checkpoint tables of [`DemSolver::state`].
const STATE_VERSION: u32 = 1;

/// Friction residual, tangent and law result of one contact.
type FrictionEval = (Vec12, super::law::Friction);

/// Stored tangential state of one contact.
#[derive(Clone, Copy, Debug)]
struct Tangential {
    gt: Vector3<f64>,
    normal: Vector3<f64>,
    sliding: bool,
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
            accel: HashMap::new(),
            options_set: false,
            rejected: 0,
            history: HashMap::new(),
            start: None,
            step: 0,
            night_owls: 0,
            night_owl_redos: 0,
            closed_pairs_dropped: 0,
        }
    }

    /// Accelerations of owned bodies that arrived from another rank: asks
    /// every rank for the ids this rank lacks (collective); the map then
    /// keeps exactly the owned bodies.
    fn sync_accelerations(&mut self, comm: &Comm, bodies: &Bodies, n_owned: usize, gravity: &Vector3<f64>) {
        let missing: Vec<u64> = (0..n_owned).map(|i| bodies.id[i]).filter(|id| !self.accel.contains_key(id)).collect();
        if parallel::sum_u64(comm, missing.len() as u64) > 0 {
            let mut q = FlatRecords::new(0, 0);
            missing.iter().for_each(|&id| q.push(id, &[], &[]));
            // Replies: u = [0] with ü, ω̇ of the body, or [1, b, sub_a, sub_b,
            // sliding] with the friction state of a contact whose body a it is.
            let got = ask_all(comm, &q, true, (5, 6), |id, _, _, reply| {
                if let Some((a, w)) = self.accel.get(&id) {
                    reply.push(0, &[0; 5], &[a.x, a.y, a.z, w.x, w.y, w.z]);
                }
                for (key, h) in self.history.iter().filter(|(key, _)| key.a == id) {
                    let (g, nn) = (h.gt, h.normal);
                    reply.push(0, &[1, key.b, key.sub_a as u64, key.sub_b as u64, h.sliding as u64], &[g.x, g.y, g.z, nn.x, nn.y, nn.z]);
                }
            });
            for k in 0..got.len() {
                let (id, u, f) = (missing[got.keys[k] as usize], got.u_row(k), got.f_row(k));
                let (x, y) = (Vector3::new(f[0], f[1], f[2]), Vector3::new(f[3], f[4], f[5]));
                if u[0] == 0 {
                    self.accel.insert(id, (x, y));
                } else {
                    let key = ContactKey::from_u64s(&[id, u[1], u[2], u[3]]);
                    self.history.insert(key, Tangential { gt: x, normal: y, sliding: u[4] != 0 });
                }
            }
        }
        let mut fresh = HashMap::with_capacity(n_owned);
        for i in 0..n_owned {
            let id = bodies.id[i];
            // A body never seen anywhere (first step): free-flight start.
            let a = self.accel.get(&id).copied().unwrap_or_else(|| {
                if bodies.fixed[i] {
                    (Vector3::zeros(), Vector3::zeros())
                } else {
                    (mask3(*gravity, bodies.dof_mask[i], 0), Vector3::zeros())
                }
            });
            fresh.insert(id, a);
        }
        self.accel = fresh;
    }
}

fn mask3(v: Vector3<f64>, mask: u8, first: usize) -> Vector3<f64> {
    Vector3::from_fn(|k, _| if dof_free(mask, first + k) { v[k] } else { 0.0 })
}

fn sphere_radius(ctx: &StepContext, bodies: &Bodies, i: usize) -> Option<f64> {
    match ctx.shapes.shape(bodies.shape[i]) {
        Shape::Sphere { radius } => Some(*radius),
        Shape::Mesh(_) => None,
    }
}

/// World direction of edge `e` of local mesh body `i`.
fn edge_direction(ctx: &StepContext, bodies: &Bodies, i: usize, e: u32) -> Option<Vector3<f64>> {
    let Shape::Mesh(m) = ctx.shapes.shape(bodies.shape[i]) else { return None };
    let [p, q] = ctx.shapes.features(bodies.shape[i])?.edges.get(e as usize)?.map(|v| m.vertices[v as usize]);
    Some((bodies.orientation[i] * (q - p)).normalize())
}

/// Exact kinematics of contact `k` when body a is a mesh (against a mesh or
/// a wall), from its sub-regions: the points of configuration i are
/// point ∓ n g/2 (contact/ puts `point` midway). `None` for other pairs.
fn mesh_kinematics(ctx: &StepContext, bodies: &Bodies, k: usize, wall: bool) -> Option<Kinematics> {
    use crate::geometry::SubRegion::{Edge, Face, Vertex};
    let c = ctx.contacts;
    let (ia, ib) = (c.ia[k], c.ib[k]);
    let (n, g) = (c.normal[k], c.gap[k]);
    let r_a = c.r_a[k] - 0.5 * g * n;
    let r_b = if wall { Vector3::zeros() } else { c.r_b[k] + 0.5 * g * n };
    let zero = Vector3::zeros();
    let sa = crate::geometry::SubRegion::decode(c.sub_a[k])?;
    let (kind, d_a, d_b) = if wall {
        match sa {
            Vertex(_) => (MeshKind::PlaneOnB, zero, n),
            _ => return None,
        }
    } else {
        if sphere_radius(ctx, bodies, ib).is_some() {
            return None;
        }
        match (sa, crate::geometry::SubRegion::decode(c.sub_b[k])?) {
            (Vertex(_), Face(_)) => (MeshKind::PlaneOnB, zero, n),
            (Face(_), Vertex(_)) => (MeshKind::PlaneOnA, n, zero),
            (Edge(ea), Edge(eb)) => {
                let (da, db) = (edge_direction(ctx, bodies, ia, ea)?, edge_direction(ctx, bodies, ib, eb)?);
                (MeshKind::Lines { sign: da.cross(&db).dot(&n).signum() }, da, db)
            }
            (Vertex(_), Edge(eb)) => (MeshKind::PointLineB, zero, edge_direction(ctx, bodies, ib, eb)?),
            (Edge(ea), Vertex(_)) => (MeshKind::PointLineA, edge_direction(ctx, bodies, ia, ea)?, zero),
            (Vertex(_), Vertex(_)) => (MeshKind::Points, zero, zero),
            _ => return None,
        }
    };
    Some(Kinematics::Mesh { kind, d0: g * n, r_a, r_b, d_a, d_b })
}

/// The contact elements of this step from the detected contacts.
fn elements(ctx: &StepContext, bodies: &Bodies) -> Vec<ContactElement> {
    ctx.contacts
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let (ia, ib) = (c.ia, c.ib);
            let wall = ib == WALL_INDEX;
            let kin = match (sphere_radius(ctx, bodies, ia), (!wall).then(|| sphere_radius(ctx, bodies, ib)).flatten()) {
                (Some(ra), Some(rb)) => {
                    Kinematics::Spheres { xa: bodies.position[ia], xb: bodies.position[ib], ra, rb }
                }
                (None, _) => mesh_kinematics(ctx, bodies, k, wall)
                    .unwrap_or(Kinematics::Linear { g0: c.gap, n: c.normal, r_a: c.r_a, r_b: if wall { Vector3::zeros() } else { c.r_b } }),
                _ => Kinematics::Linear { g0: c.gap, n: c.normal, r_a: c.r_a, r_b: if wall { Vector3::zeros() } else { c.r_b } },
            };
            let (g0, grad0, n0) = super::assemble::gap_grad(&kin, &Vec12::zeros());
            let ma = bodies.mass[ia];
            let m_eff = if wall || bodies.fixed[ib] {
                ma
            } else if bodies.fixed[ia] {
                bodies.mass[ib]
            } else {
                ma * bodies.mass[ib] / (ma + bodies.mass[ib])
            };
            let scale = if ctx.scene.dem.pair_stiffness {
                ctx.scene.pair_stiffness(bodies.material[ia], ctx.contacts.material_b(k, bodies, &ctx.scene.walls))
            } else {
                1.0
            };
            ContactElement { kin, g_start: g0, n_start: n0, grad_start: grad0, m_eff, scale }
        })
        .collect()
}

/// Everything a residual/Jacobian evaluation reads.
/// A residual and where it was taken: (local increments, owned entries,
/// floor).
type CachedResidual = (Vec<f64>, Vec<f64>, f64);

struct Problem<'a> {
    ctx: &'a StepContext<'a>,
    bodies: &'a Bodies,
    states: Vec<RigidState>,
    elements: Vec<ContactElement>,
    law: NormalLaw,
    zeta: f64,
    dt: f64,
    nm: Newmark,
    /// Friction part of each contact (`None`: frictionless).
    tangential: Vec<Option<TangentialElement>>,
    /// `[dem] tangent`.
    tangent_kind: crate::scene::DemTangent,
    /// `[dem] first_tangent`.
    first_tangent: crate::scene::DemFirstTangent,
    /// Round-off floor of ‖F‖₂ at the last residual evaluation (global).
    floor: std::cell::Cell<f64>,
    /// The local increments of the last iterate and `gap_grad` of every
    /// contact there: the residual, the Jacobian and the step limit at one
    /// Newton iterate share one evaluation of the (costly, exact mesh) gaps.
    gaps: std::cell::RefCell<(Vec<f64>, Vec<Gap>)>,
    /// Prescribed displacement over the step of the wall of each contact
    /// (zero for body–body contacts): u_b of a moving wall.
    wall_shift: Vec<Vector3<f64>>,
    /// The last residual: the local increments it was taken at, its owned
    /// entries and its floor (the energy line search and SNES evaluate the
    /// same iterate twice).
    last_residual: std::cell::RefCell<Option<CachedResidual>>,
    /// Block size of the Jacobian: 6 (a body's DOFs), or 3 when no contact
    /// couples rotations (see [`Problem::rotation_free`]).
    bs: std::cell::Cell<usize>,
}

/// Gap, its gradient and the normal of a contact at an iterate.
type Gap = (f64, Vec12, Vector3<f64>);

/// What [`Problem::eval`] evaluates besides the residual.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Residual,
    /// The tangent at x.
    Tangent,
    /// The tangent at the step's start with `[dem] first_tangent = "moving"`
    /// ([`Problem::moving_on`]).
    MovingTangent,
}

impl Problem<'_> {
    fn n_owned(&self) -> usize {
        self.ctx.layout.n_owned
    }

    /// `gap_grad` of every contact at the local increments `all`, from the
    /// cache when `all` is the last iterate's.
    fn gaps_at(&self, all: &[f64]) -> std::cell::Ref<'_, (Vec<f64>, Vec<Gap>)> {
        if self.gaps.borrow().0.as_slice() != all || self.gaps.borrow().1.len() != self.elements.len() {
            let g: Vec<Gap> = (0..self.elements.len()).map(|k| super::assemble::gap_grad(&self.elements[k].kin, &self.x12(all, k))).collect();
            *self.gaps.borrow_mut() = (all.to_vec(), g);
        }
        self.gaps.borrow()
    }

    /// Increments of every local body (owned from `x`, ghosts forwarded).
    fn local_increments(&self, x: &Vector) -> Result<Vec<f64>, String> {
        let owned: Vec<f64> = x.view().map_err(|e| e.to_string())?.to_vec();
        let ghosts = forward_values(self.ctx.comm, self.ctx.layout, &owned, 6);
        let mut all = owned;
        all.extend(ghosts);
        Ok(all)
    }

    fn x12(&self, all: &[f64], k: usize) -> Vec12 {
        let mut x = self.x12_dir(all, k);
        if self.ctx.contacts.ib[k] == WALL_INDEX {
            x.fixed_rows_mut::<3>(6).copy_from(&self.wall_shift[k]);
        }
        x
    }

    /// The 12 components of a direction `all` of the unknowns at contact
    /// `k` (a wall's prescribed motion is no part of it).
    fn x12_dir(&self, all: &[f64], k: usize) -> Vec12 {
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
    fn eval(&self, k: usize, x12: &Vec12, gap: Gap, want: Want, kt: Option<&mut Mat12>) -> Result<(NormalEval, Option<FrictionEval>), String> {
        let e = normal_at(&self.elements[k], &self.law, self.zeta, self.dt, gap).ok_or_else(|| {
            let c = &self.ctx.contacts;
            format!("contact {}-{} (sub {} {}): gap closed (gap at detection {:e})", c.a[k], c.b[k], c.sub_a[k], c.sub_b[k], c.gap[k])
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
    /// to 0.3 mm, hence not the default (BENCHMARKS.md, session 11).
    fn moving_on(&self, k: usize, te: &TangentialElement, f_n: f64, x12: &Vec12) -> Option<Vec12> {
        let mut step = self.dt * rates12(self.ctx, self.bodies, k, self.dt);
        if self.ctx.contacts.ib[k] == WALL_INDEX {
            step.fixed_rows_mut::<6>(6).fill(0.0); // x holds a wall's step already
        }
        (te.sliding && te.law.eps_t * te.apply(&step).norm() > te.law.mu_d * f_n).then(|| x12 + step)
    }

    fn dof(&self, i: usize) -> PetscInt {
        self.ctx.layout.global_index[i] as PetscInt
    }

    /// True when no contact of this rank couples a body's rotations: no
    /// friction and spheres only (a frictionless sphere contact acts
    /// through the centres). The rotational DOFs then have their inertia
    /// block alone, and a Jacobian of 3×3 blocks leaves them out of the
    /// coupled part: a quarter of the 6×6 blocks' entries for ILU and MatMult.
    fn rotation_free(&self) -> bool {
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
    fn residual(&self, x: &Vector, f: &mut Vector) -> Result<(), String> {
        let all = self.local_increments(x)?;
        // The same iterate on every rank (residual_at is collective: a rank
        // whose own increments did not change must not skip it alone).
        let hit = self.last_residual.borrow().as_ref().is_some_and(|(at, _, _)| *at == all);
        if parallel::all_ok(self.ctx.comm, hit) {
            if let Some((_, vals, floor)) = self.last_residual.borrow().as_ref() {
                f.view_mut().map_err(|e| e.to_string())?.copy_from_slice(vals);
                self.floor.set(*floor);
            }
            return Ok(());
        }
        self.residual_at(&all, f)?;
        let vals = f.view().map_err(|e| e.to_string())?.to_vec();
        *self.last_residual.borrow_mut() = Some((all, vals, self.floor.get()));
        Ok(())
    }

    /// The residual at the local increments `all` (see [`Self::residual`]).
    fn residual_at(&self, all: &[f64], f: &mut Vector) -> Result<(), String> {
        let n = self.n_owned();
        f.zero().map_err(|e| e.to_string())?;
        let mut idx: Vec<PetscInt> = Vec::with_capacity(6 * n);
        let mut val: Vec<f64> = Vec::with_capacity(6 * n);
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
                    c.a[k], c.b[k], c.sub_a[k], c.sub_b[k], c.gap[k], e.force, self.tangential[k]
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
        f.set_values(&idx, &val, InsertMode::Add).map_err(|e| e.to_string())?;
        f.assemble().map_err(|e| e.to_string())
    }

    /// The Jacobian at `x`. `pattern`: the first assembly of `a` (at the
    /// step's start, x = 0; with `first_tangent = "moving"` it takes
    /// [`Self::moving_on`]'s friction branches), which inserts a (zero)
    /// block for every listed contact so that the nonzero pattern holds for
    /// the whole solve; later assemblies skip open contacts.
    fn jacobian(&self, x: &Vector, a: &mut Mat, pattern: bool) -> Result<(), String> {
        let all = self.local_increments(x)?;
        let n = self.n_owned();
        a.zero_entries().map_err(|e| e.to_string())?;
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
                    a.set_values_blocked(&[r], &[r], blk.as_slice(), InsertMode::Add).map_err(|e| e.to_string())?;
                }
            } else {
                a.set_values_blocked(&[bi], &[bi], k.transpose().as_slice(), InsertMode::Add).map_err(|e| e.to_string())?;
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
            // and columns [a, b] (just [a] against a wall); with 3×3 blocks
            // the translational parts only.
            if self.bs.get() == 3 {
                let sides: &[usize] = if ib == WALL_INDEX { &[0] } else { &[0, 1] };
                let m = 3 * sides.len();
                for (r, &sr) in sides.iter().enumerate() {
                    for (c, &sc) in sides.iter().enumerate() {
                        for i in 0..3 {
                            for j in 0..3 {
                                vals[(3 * r + i) * m + 3 * c + j] = t[(6 * sr + i, 6 * sc + j)];
                            }
                        }
                    }
                }
                let rows = [2 * self.dof(ia), if ib == WALL_INDEX { 0 } else { 2 * self.dof(ib) }];
                a.set_values_blocked(&rows[..sides.len()], &rows[..sides.len()], &vals[..m * m], InsertMode::Add).map_err(|e| e.to_string())?;
            } else if ib == WALL_INDEX {
                for r in 0..6 {
                    for c in 0..6 {
                        vals[6 * r + c] = t[(r, c)];
                    }
                }
                a.set_values_blocked(&[self.dof(ia)], &[self.dof(ia)], &vals[..36], InsertMode::Add).map_err(|e| e.to_string())?;
            } else {
                vals.copy_from_slice(t.transpose().as_slice());
                let rows = [self.dof(ia), self.dof(ib)];
                a.set_values_blocked(&rows, &rows, &vals, InsertMode::Add).map_err(|e| e.to_string())?;
            }
        }
        a.assemble().map_err(|e| e.to_string())
    }

    /// Largest factor s ≤ 1 such that the step x → x − s y keeps every gap
    /// above `fraction` of its value at x, by the linear prediction (a lower
    /// bound for the linear and convex gaps; for the exact mesh gaps a
    /// closed gap on the way is a domain error and the step is redone).
    fn step_limit(&self, x: &Vector, y: &Vector, fraction: f64) -> Result<f64, String> {
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
    fn energy_step(&self, x: &Vector, y: &Vector, s: f64) -> Result<f64, String> {
        let mut w = x.duplicate().map_err(|e| e.to_string())?;
        let mut fw = x.duplicate().map_err(|e| e.to_string())?;
        let mut h = |lambda: f64| -> Result<f64, String> {
            w.waxpy(-lambda, y, x).map_err(|e| e.to_string())?;
            self.residual(&w, &mut fw)?;
            let v = y.dot(&fw).map_err(|e| e.to_string())?;
            // A closed gap (NaN residual) lies beyond the minimum.
            Ok(if v.is_nan() { f64::NEG_INFINITY } else { v })
        };
        let h0 = h(0.0)?;
        // (NaN included: no descent to search along)
        if h0.is_nan() || h0 <= 0.0 {
            return Ok(s);
        }
        let (mut a, mut ha, mut b) = (0.0, h0, s);
        let mut hb = h(b)?;
        if hb >= -0.5 * h0 {
            return Ok(s);
        }
        let mut side = 0;
        for _ in 0..ENERGY_SEARCH_EVALUATIONS {
            // False position; an infinite h(b) (closed gap) bisects.
            let c = if hb.is_finite() { a + (b - a) * ha / (ha - hb) } else { 0.5 * (a + b) };
            let c = c.clamp(a + 0.01 * (b - a), b - 0.01 * (b - a));
            let hc = h(c)?;
            if hc.abs() <= 0.5 * h0 {
                return Ok(c);
            }
            if hc > 0.0 {
                (a, ha) = (c, hc);
                if side == 1 {
                    hb *= 0.5;
                }
                side = 1;
            } else {
                (b, hb) = (c, hc);
                if side == -1 {
                    ha *= 0.5;
                }
                side = -1;
            }
        }
        // Π fell on the whole of [0, a].
        Ok(if a > 0.0 { a } else { b })
    }
}

/// Residual evaluations the energy line search may spend on one Newton step.
const ENERGY_SEARCH_EVALUATIONS: usize = 8;

impl Solver for DemSolver {
    /// Tables: "accelerations" (key body id; ü, ω̇), "friction" (key body
    /// a; b, sub_a, sub_b, sliding; tangential gap, its normal), "dt" (the
    /// next Δt, rank 0 only).
    fn state(&self) -> SolverState {
        let mut st = SolverState::new(STATE_VERSION);
        let mut acc = FlatRecords::new(0, 6);
        for (&id, (a, w)) in &self.accel {
            acc.push(id, &[], &[a.x, a.y, a.z, w.x, w.y, w.z]);
        }
        let mut fr = FlatRecords::new(4, 6);
        for (key, t) in &self.history {
            let (g, n) = (t.gt, t.normal);
            fr.push(key.a, &[key.b, key.sub_a as u64, key.sub_b as u64, t.sliding as u64], &[g.x, g.y, g.z, n.x, n.y, n.z]);
        }
        let mut dt = FlatRecords::new(0, 1);
        if self.dt.is_finite() {
            dt.push(0, &[], &[self.dt]);
        }
        st.push("accelerations", acc);
        st.push("friction", fr);
        st.push("dt", dt);
        st
    }

    /// Records land on any rank; `sync_accelerations` fetches them by id
    /// at the first step, as after a migration.
    fn restore(&mut self, comm: &Comm, state: SolverState) -> Result<(), StateError> {
        if state.version != STATE_VERSION {
            return Err(StateError { solver: "dem", found: state.version, expected: STATE_VERSION });
        }
        self.accel.clear();
        self.history.clear();
        let v3 = |f: &[f64], k: usize| Vector3::new(f[k], f[k + 1], f[k + 2]);
        if let Some(t) = state.table("accelerations") {
            for k in 0..t.len() {
                self.accel.insert(t.keys[k], (v3(t.f_row(k), 0), v3(t.f_row(k), 3)));
            }
        }
        if let Some(t) = state.table("friction") {
            for k in 0..t.len() {
                let u = t.u_row(k);
                let key = ContactKey::from_u64s(&[t.keys[k], u[0], u[1], u[2]]);
                self.history.insert(key, Tangential { gt: v3(t.f_row(k), 0), normal: v3(t.f_row(k), 3), sliding: u[3] != 0 });
            }
        }
        let dt = state.table("dt").map_or(f64::NEG_INFINITY, |t| t.f.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        let dt = parallel::max_f64(comm, dt);
        self.dt = if dt.is_finite() { dt } else { f64::INFINITY };
        Ok(())
    }

    fn adaptive(&self) -> bool {
        true
    }

    /// Remembers the step's start, drops mesh pairs detected closed, and
    /// ends the step where a wall is removed (`until`).
    fn begin_step(&mut self, world: &mut World, time: f64, dt: f64) -> f64 {
        let tol = 1e-9 * world.scene.simulation.dt;
        let dt = world.scene.walls.iter().filter(|w| w.until > time + tol).fold(dt, |dt, w| dt.min(w.until - time));
        let closed = night_owl::drop_closed_mesh_pairs(world);
        self.closed_pairs_dropped += closed.len() as u64;
        self.start = Some(StepStart {
            bodies: world.owned_bodies(),
            accel: self.accel.clone(),
            history: self.history.clone(),
            dt: self.dt,
            closed,
            dt_try: dt,
            distance: world.scene.contact.distance,
            redos: 0,
            widened: 0,
        });
        dt
    }

    /// The night-owl search (§2.6.3): a step that missed contacts is redone
    /// from its start, out to a larger contact distance for new pairs, with
    /// half the Δt for a degeneration found below the penetration floor.
    fn review(&mut self, world: &mut World, time: f64, report: &StepReport) -> Review {
        let (comm, scene) = (world.comm, world.scene);
        let d = &scene.dem;
        let Some(start) = self.start.as_mut() else { return Review::Accept };
        // A gap changes by at most the two bodies' displacements.
        let walls = scene.walls.iter().map(|w| w.displacement(time, report.dt).norm()).fold(0.0, f64::max);
        let disp = night_owl::displacements(world, &start.bodies);
        let largest = parallel::max_f64(comm, disp.iter().copied().fold(0.0, f64::max));
        let moved = night_owl::step_displacements(world, &disp, largest);
        let reach = 2.0 * largest.max(walls);
        // The search finds the next step's contacts: walls as at its start.
        world.set_time(time + report.dt);
        let floor = PENETRATION_FLOOR * d.f * d.gbar;
        if d.closed_depth == DemClosedDepth::Step {
            // A closed mesh pair deeper than its two bodies' displacements
            // was closed at the step's start (a projection, no owl): the
            // search need not find it. The next step's start list (this
            // search) must hold every pair closed less than twice the pair's
            // next reach, else a projection it missed would show up as an
            // owl; that reach is bounded by this one at Δt_max with a margin
            // for faster motion. Per body pair: one fast body deepened every
            // pair's search (its step moved 30× the mean on the tetrapod
            // collapse). A redo starts from the one depth of all pairs.
            let scale = CLOSED_DEPTH_MARGIN * 2.0 * (d.dt_max / report.dt).max(1.0);
            world.params.mesh_depth = Some(scale * reach);
            let by_id = moved.by_id.iter().map(|(&id, &m)| (id, scale * m)).collect();
            world.body_depths = Some(BodyDepths { by_id, default: 0.5 * scale * reach });
        }
        let owls = night_owl::search_after_step(world, &start.bodies, &start.closed, d.gbar, floor, &moved);
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
        (self.accel, self.history, self.dt) = (start.accel.clone(), start.history.clone(), start.dt);
        world.set_time(time);
        world.body_depths = None;
        world.roll_back(&start.bodies, start.distance);
        // The roll-back migrated bodies that had drifted across a rank
        // boundary since the last rebuild: the redo starts from this
        // distribution (its contacts were detected in it).
        start.bodies = world.owned_bodies();
        let closed = night_owl::drop_closed_mesh_pairs(world);
        self.closed_pairs_dropped += closed.len() as u64;
        if let Some(start) = self.start.as_mut() {
            start.closed = closed;
        }
        Review::Redo { dt }
    }

    fn summary(&self, comm: &Comm) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("night_owls".into(), self.night_owls.into());
        m.insert("night_owl_redos".into(), self.night_owl_redos.into());
        m.insert("closed_pairs_dropped".into(), parallel::sum_u64(comm, self.closed_pairs_dropped).into());
        m
    }

    fn step(&mut self, ctx: &StepContext, bodies: &mut Bodies, forces: &mut ContactForces) -> Result<StepReport, SolverError> {
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
            for (k, v) in [
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
        self.sync_accelerations(ctx.comm, bodies, n, &g);
        let law = NormalLaw::new(d.eps1, d.n1, d.n2, d.gbar, d.f).with_damping_cap(d.damping_cap);
        let elements = elements(ctx, bodies);
        let tangentials = self.tangential_elements(ctx, bodies, &elements);
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
        let mut iterations = 0u64;
        let (mut linear, rejected_before) = (0u64, self.rejected);
        // `[[load]]`s by body id: whichever rank owns the body applies it.
        let loads: HashMap<u64, &crate::scene::Load> = ctx.scene.loads.iter().map(|l| (l.body, l)).collect();
        loop {
            let nm = Newmark::new(d.beta, d.gamma, dt);
            let states: Vec<RigidState> = (0..n)
                .map(|i| {
                    let (acc, wacc) = self.accel[&bodies.id[i]];
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
                    let all = prob.local_increments(x).map_err(SolverError::Other)?;
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
            let accepted = if ratio > REJECT_RATIO && dt > d.dt_min * (1.0 + 1e-12) {
                self.rejected += 1;
                dt = (dt * (0.8 / ratio).max(0.1)).max(d.dt_min);
                log::debug!("dem: step {}: gap change {ratio:.2} x the allowed, retrying with dt = {dt:e}", ctx.step);
                continue;
            } else {
                accepted
            };
            match accepted {
                Some(all) => {
                    let mut f_n = Vec::with_capacity(ctx.contacts.len());
                    let mut f_t = Vec::with_capacity(ctx.contacts.len());
                    let mut history = HashMap::new();
                    let gaps = prob.gaps_at(&all);
                    for k in 0..ctx.contacts.len() {
                        let (e, t) = prob.eval(k, &prob.x12(&all, k), gaps.1[k], Want::Residual, None).map_err(SolverError::Other)?;
                        f_n.push(e.force);
                        // force on b: −f_t of the law
                        f_t.push(t.as_ref().map_or(Vector3::zeros(), |(_, fr)| -fr.force));
                        if let (Some(te), Some((_, fr))) = (&prob.tangential[k], &t) {
                            let c = &ctx.contacts;
                            history.insert(c.key(k), Tangential { gt: fr.gap_t, normal: te.n, sliding: fr.sliding });
                        }
                    }
                    drop(gaps);
                    self.history = history;
                    let Problem { states, nm, .. } = prob;
                    self.finish(&states, &nm, &all, bodies);
                    forces.f_t = f_t;
                    forces.f_n = f_n;
                    let next = if its <= d.easy_iterations as i64 { dt * GROWTH } else { dt };
                    let next = if ratio > 0.0 { next.min(dt * 0.9 / ratio) } else { next };
                    self.dt = next.clamp(d.dt_min, d.dt_max);
                    return Ok(StepReport {
                        iterations,
                        dt,
                        linear_iterations: linear,
                        rejected: self.rejected - rejected_before,
                        ..Default::default()
                    });
                }
                None => {
                    self.rejected += 1;
                    if dt <= d.dt_min * (1.0 + 1e-12) {
                        return Err(SolverError::Other(format!(
                            "Newton failed at the smallest time step dt_min = {dt:e} (t = {:e})",
                            ctx.time
                        )));
                    }
                    dt = (0.5 * dt).max(d.dt_min);
                    log::info!("dem: step {} rejected, retrying with dt = {dt:e}", ctx.step);
                }
            }
        }
    }
}

impl DemSolver {
    /// The friction elements of this step: coefficients as the means of the
    /// two materials' (a wall's own material for a wall), none when both
    /// are zero; the stored tangential gap of the same contact (same ids and
    /// sub-regions) rotated from its old normal onto the current one and
    /// projected on the tangent plane (zero for a new contact).
    fn tangential_elements(&self, ctx: &StepContext, bodies: &Bodies, elements: &[ContactElement]) -> Vec<Option<TangentialElement>> {
        let c = ctx.contacts;
        let mats = &ctx.scene.materials;
        (0..c.len())
            .map(|k| {
                let ma = &mats[bodies.material[c.ia[k]] as usize];
                let mb = &mats[c.material_b(k, bodies, &ctx.scene.walls) as usize];
                let mu_s = 0.5 * (ma.friction_static + mb.friction_static);
                let mu_d = 0.5 * (ma.friction_dynamic + mb.friction_dynamic);
                if mu_s == 0.0 && mu_d == 0.0 {
                    return None;
                }
                let n = elements[k].n_start;
                let p = nalgebra::Matrix3::identity() - n * n.transpose();
                let (gt_start, sliding) = match self.history.get(&c.key(k)) {
                    Some(h) => {
                        (p * rotate_onto(&h.gt, &h.normal, &n), h.sliding)
                    }
                    None => (Vector3::zeros(), false),
                };
                let (r_a, r_b) = match elements[k].kin {
                    Kinematics::Spheres { ra, rb, .. } => (n * ra, -n * rb),
                    Kinematics::Linear { r_a, r_b, .. } => (r_a, r_b),
                    // the midpoint, as for the other kinds
                    Kinematics::Mesh { d0, r_a, r_b, .. } => (r_a + 0.5 * d0, r_b - 0.5 * d0),
                };
                // eq 54's c_t from a damping ratio, like eq 52 in the normal direction
                let c_t = 2.0 * ctx.scene.dem.damping_t * (ctx.scene.dem.eps_t * elements[k].m_eff).sqrt();
                let law = TangentialLaw { eps_t: ctx.scene.dem.eps_t, c_t, mu_s, mu_d };
                Some(TangentialElement::new(law, gt_start, sliding, n, r_a, r_b))
            })
            .collect()
    }

    /// Moves the owned bodies to configuration i+1 (eqs 3, 5, 21, 22).
    fn finish(&mut self, states: &[RigidState], nm: &Newmark, all: &[f64], bodies: &mut Bodies) {
        for (i, st) in states.iter().enumerate() {
            let mask = bodies.dof_mask[i];
            let u = mask3(Vector3::new(all[6 * i], all[6 * i + 1], all[6 * i + 2]), mask, 0);
            let a = mask3(Vector3::new(all[6 * i + 3], all[6 * i + 4], all[6 * i + 5]), mask, 3);
            let up = rigid::update(st, nm, &u, &a);
            bodies.position[i] += u;
            bodies.orientation[i] = up.rotation * bodies.orientation[i];
            bodies.velocity[i] = mask3(up.velocity, mask, 0);
            bodies.angular_velocity[i] = mask3(up.angular_velocity, mask, 3);
            self.accel.insert(bodies.id[i], (mask3(up.acceleration, mask, 0), mask3(up.angular_acceleration, mask, 3)));
        }
    }
}

/// The velocities of contact `k`'s two bodies at configuration i as the
/// 12 components of its increments per unit time (a wall: its mean velocity
/// over a step of length `dt`).
fn rates12(ctx: &StepContext, bodies: &Bodies, k: usize, dt: f64) -> Vec12 {
    let (ia, ib) = (ctx.contacts.ia[k], ctx.contacts.ib[k]);
    let mut v = Vec12::zeros();
    v.fixed_rows_mut::<3>(0).copy_from(&bodies.velocity[ia]);
    v.fixed_rows_mut::<3>(3).copy_from(&bodies.angular_velocity[ia]);
    if ib == WALL_INDEX {
        if let Some(w) = ctx.scene.walls.get((ctx.contacts.b[k] - WALL_ID_BASE) as usize) {
            v.fixed_rows_mut::<3>(6).copy_from(&(w.displacement(ctx.time, dt) / dt));
        }
    } else {
        v.fixed_rows_mut::<3>(6).copy_from(&bodies.velocity[ib]);
        v.fixed_rows_mut::<3>(9).copy_from(&bodies.angular_velocity[ib]);
    }
    v
}

/// The largest Δt ≤ `dt` (global) at which no contact closing at its rate
/// of the step's start, ġ = ∇g · (v_a, ω_a, v_b, ω_b), and ending within ḡ,
/// changes its gap by more than `gap_change` of the gap it ends at:
/// |ġ| Δt ≤ c (g − |ġ| Δt), i.e. Δt ≤ c g / (|ġ| (1 + c)).
fn impact_dt(ctx: &StepContext, bodies: &Bodies, elements: &[ContactElement], gbar: f64, gap_change: f64, dt: f64) -> f64 {
    let mut limit = dt;
    for (k, el) in elements.iter().enumerate() {
        let v = rates12(ctx, bodies, k, dt);
        let closing = -el.grad_start.dot(&v);
        if closing > 0.0 && el.g_start - closing * limit < gbar {
            limit = limit.min(gap_change * el.g_start / (closing * (1.0 + gap_change)));
        }
    }
    -parallel::max_f64(ctx.comm, -limit)
}

/// `v` turned by the smallest rotation taking unit `from` onto unit `to`
/// (eq 44's Q_c^Δ): R = I + [w]× + [w]×²/(1 + c), w = from × to, c = from·to
/// (no acos: `Rotation3::rotation_between` gave NaN for normals a few ulps
/// apart, whose dot product rounds above 1). `v` unchanged for opposite normals.
fn rotate_onto(v: &Vector3<f64>, from: &Vector3<f64>, to: &Vector3<f64>) -> Vector3<f64> {
    let w = from.cross(to);
    let c = from.dot(to);
    if c <= -1.0 + 1e-12 {
        return *v;
    }
    let wv = w.cross(v);
    v + wv + w.cross(&wv) / (1.0 + c)
}

/// One Newton solve by SNES; returns (converged, Newton iterations, KSP
/// iterations, solution). `full_steps`: the "basic" line search instead of
/// PETSc's backtracking.
fn solve(prob: &Problem, d: &crate::scene::DemSettings, full_steps: bool) -> Result<(bool, i64, u64, Vector), SolverError> {
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
    jac.set_near_null_space(&crate::parallel::rigid_modes::rigid_modes(comm, prob.bodies, n, &x, |j| crate::body::dof_free(prob.bodies.dof_mask[j / 6], j % 6))?)?;
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
    snes.set_line_search_precheck(move |x: &Vector, y: &mut Vector| -> Result<bool, String> {
        let s = prob.step_limit(x, y, fraction)?;
        let s = if energy { prob.energy_step(x, y, s)? } else { s };
        if s < 1.0 {
            y.scale(s).map_err(|e| e.to_string())?;
            Ok(true)
        } else {
            Ok(false)
        }
    })?;
    // Converged also at the round-off floor of the residual (same value on
    // every rank: the floor is a global sum and ‖F‖ is global).
    snes.set_extra_convergence(|_it, fnorm: f64| -> Result<bool, String> { Ok(fnorm <= FLOOR_FACTOR * prob.floor.get()) })?;
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
            r.converged()
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

#[cfg(test)]
mod tests {
    use super::rotate_onto;
    use nalgebra::Vector3;

    #[test]
    fn rotate_onto_turns_onto_the_target_and_stays_finite_near_parallel() {
        let r = rotate_onto(&Vector3::new(1.0, 0.0, 2.0), &Vector3::x(), &Vector3::y());
        assert!((r - Vector3::new(0.0, 1.0, 2.0)).norm() < 1e-15, "{r}");
        assert_eq!(rotate_onto(&Vector3::x(), &Vector3::z(), &-Vector3::z()), Vector3::x());
        // Nearly equal normals (cross product just above ε): a finite, tiny turn.
        for k in 0..200 {
            let e = 1e-16 * (1.0 + k as f64 * 0.05);
            let a = Vector3::new(e, 0.3 * e, 1.0).normalize();
            let b = Vector3::new(-0.7 * e, e, 1.0).normalize();
            let v = Vector3::new(1e-3, -2e-3, 0.0);
            let r = rotate_onto(&v, &a, &b);
            assert!(r.iter().all(|x| x.is_finite()) && (r - v).norm() < 1e-12, "{a} {b} {r}");
        }
    }
}
