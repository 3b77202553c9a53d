//! The state of a run on one rank (ARCHITECTURE.md "One time step", stages 1
//! and 2): owned bodies then ghosts, the process grid, the neighbour lists,
//! this step's contacts and their forces. The driver moves it through the
//! stages; a solver reads it in `step` and may re-detect or roll it back in
//! its hooks (the DEM's night-owl search).
use crate::body::{Bodies, Shape};
use crate::contact::{self, BodyDepths, ContactShapes, Contacts, DetectParams, VerletList, WALL_INDEX};
use crate::history::{History, HistorySpec};
use crate::io::{ContactTable, WorldState};
use crate::logging::num;
use crate::parallel::domain::Domain;
use crate::parallel::exchange::{self, Layout};
use crate::parallel::records::{send_to, FlatRecords};
use crate::parallel::{self, Comm};
use crate::scene::{Scene, Wall};
use crate::timers::Timers;
use mpi::traits::*;
use nalgebra::Vector3;
use std::collections::BTreeMap;

/// Per-contact forces a solver reports in place of the step's
/// (`Solver::reported_forces`): normal force, and tangential force on
/// body b (world frame), indexed like the step's contacts.
#[derive(Clone, Copy, Debug)]
pub struct ReportedForces<'a> {
    pub f_n: &'a [f64],
    pub f_t: &'a [Vector3<f64>],
}

/// Forces of the contacts of one step, in `Contacts` order: the force on
/// body b is `f_n · normal + f_t`, on body a its opposite.
#[derive(Clone, Debug, Default)]
pub struct ContactForces {
    pub f_n: Vec<f64>,
    pub f_t: Vec<Vector3<f64>>,
}

/// Everything a solver reads in one step. Bodies `0..layout.n_owned` are
/// owned, the rest are ghosts (read-only copies of other ranks' bodies).
pub struct StepContext<'a> {
    pub comm: &'a Comm,
    pub scene: &'a Scene,
    pub shapes: &'a ContactShapes,
    pub layout: &'a Layout,
    /// This rank's contacts: each global contact exists on exactly one rank,
    /// the owner of its smaller-id body. `ib` may index a ghost or be a wall.
    pub contacts: &'a Contacts,
    pub step: u64,
    pub time: f64,
    pub dt: f64,
    /// The step's results are written (a frame, or the end of the run): a
    /// solver computes the diagnostics it only needs for output now.
    pub output: bool,
}

/// One rank's share of the scene and of the step's contacts. The driver
/// moves it through the stages; solvers read it through the accessors and
/// change it only through the requests of their hooks.
pub struct World<'a> {
    comm: &'a Comm,
    scene: &'a Scene,
    /// The scene as the solvers see it when a wall or the periodic cell is
    /// stress-controlled: a copy whose walls carry the servo's present
    /// motion and whose cell its present period (None: `scene`).
    servo_scene: Option<Box<Scene>>,
    domain: Domain,
    bodies: Bodies,
    layout: Layout,
    shapes: ContactShapes,
    contacts: Contacts,
    forces: ContactForces,
    /// What solvers keep between steps, carried with the bodies.
    history: History,
    /// The owned bodies and history at the start of the step being taken,
    /// to roll back to ([`World::begin_step`]).
    start: Option<(Bodies, History)>,
    /// A body migrated during the last [`World::search`].
    search_migrated: bool,
    verlet: VerletList,
    params: DetectParams,
    /// Per-body closed depths of the mesh search, in place of
    /// `params.mesh_depth` (a solver's, see [`crate::contact::BodyDepths`]).
    body_depths: Option<BodyDepths>,
    /// Owned positions when the ghost lists were last built.
    reference: Vec<Vector3<f64>>,
    /// A restart's per-body work ([`World::work`]) as the checkpointed run
    /// had it, until the restarted run detects its own contacts: the first
    /// rebalance decision and cuts are then the uninterrupted run's.
    restored_work: Option<Vec<f64>>,
    timers: Timers,
    /// Neighbour-list rebuilds (migrate + borders) so far (the same on every rank).
    rebuilds: u64,
    /// RCB rebalances so far.
    rebalances: u64,
    /// Bodies this rank sent to another owner so far.
    migrated: u64,
    /// Per contact of `contacts`: whether each side is fixed (or a wall)
    /// and its arms, taken at detection — a search after the step may
    /// migrate bodies and leave the step's local indices stale before the
    /// reactions and measures are summed.
    contact_fixed: Vec<ContactSides>,
    /// Contacts already detected for the configuration at the end of the
    /// last step (a solver's search), used instead of a new detection.
    next: Option<(Contacts, Vec<ContactSides>)>,
    /// The scene's walls, those removed by now (`until`) marked: indices
    /// stay stable, so wall ids are 2^63 + index throughout.
    walls: Vec<Wall>,
    /// The time of [`World::set_time`] (a Lees–Edwards cell's offset).
    time: f64,
    /// A Lees–Edwards cell's offset and gradient period when the ghost
    /// lists were last built: how far its images have moved since decides
    /// the next rebuild (checkpointed, so a restart rebuilds when the
    /// uninterrupted run would).
    drift_from: (f64, f64),
}

/// The checkpoint table of the World's own per-body rows.
const WORLD_TABLE: &str = "world";
/// The checkpoint table of the servo walls' motion: key wall index,
/// f = [anchor x, y, z, since, speed, scale, error].
const SERVO_TABLE: &str = "servo_walls";
/// The checkpoint table of a stress-controlled cell (one row, rank 0's):
/// f = [gradient face, offset, since, speed, scale, error, averaged stress].
const CELL_TABLE: &str = "servo_cell";
/// The checkpoint table of a Lees–Edwards cell's images (one row, rank
/// 0's): f = [offset, gradient period] when the ghost lists were built.
const DRIFT_TABLE: &str = "image_drift";

/// The neighbour lists' reference position of each of `bodies` (this
/// rank's slab of a checkpoint) from the checkpoint's World table (its own
/// position where the table has none). Collective.
fn reference_positions(comm: &Comm, state: &WorldState, bodies: &Bodies) -> Vec<Vector3<f64>> {
    let empty = FlatRecords::new(0, 4);
    let table = crate::history::table(&state.history, WORLD_TABLE).filter(|r| (r.n_f == 3 || r.n_f == 4) && r.n_u == 0).unwrap_or(&empty);
    let got = crate::history::route_to_owners(comm, table, &bodies.id);
    let at: std::collections::HashMap<u64, Vector3<f64>> = (0..got.len()).map(|k| (got.keys[k], Vector3::from_column_slice(&got.f_row(k)[..3]))).collect();
    (0..bodies.len()).map(|i| at.get(&bodies.id[i]).copied().unwrap_or(bodies.position[i])).collect()
}

/// Takes a checkpoint's stress-controlled cell (table [`CELL_TABLE`], on
/// whichever rank's slab holds it) into `per` on every rank; a checkpoint
/// without one leaves the cell as configured. Collective.
fn restore_cell(comm: &Comm, state: &WorldState, per: &mut crate::scene::Periodic) {
    let (Some(row), Some(s)) = (single_row(comm, state, CELL_TABLE, 7), per.shear) else { return };
    let Some(c) = per.cell.as_mut() else { return };
    (c.speed, c.scale, c.error) = (row[3], row[4], row[5]);
    (per.hi[s.gradient], per.offset, per.since, per.measured) = (row[0], row[1], row[2], row[6]);
}

/// The one row (`n_f` values) of a checkpoint's table `name` that a single
/// rank's slab holds, on every rank; None if the checkpoint has no such
/// row. Collective.
fn single_row(comm: &Comm, state: &WorldState, name: &str, n_f: usize) -> Option<Vec<f64>> {
    let mut row = vec![0.0; n_f + 1];
    if let Some(t) = crate::history::table(&state.history, name).filter(|r| r.n_f == n_f && r.len() == 1) {
        row[0] = 1.0;
        row[1..].copy_from_slice(t.f_row(0));
    }
    // One rank holds the row: a sum with zeros is exact.
    parallel::sum_f64s(comm, &mut row);
    (row[0] == 1.0).then(|| row[1..].to_vec())
}

/// The two sides of a contact as detection saw them: fixed (a fixed body
/// or, for b, a wall), and the arm from each body's centre to the contact
/// point (zero for a wall; from the periodic image the contact was found with).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactSides {
    pub fixed: (bool, bool),
    pub arm_a: Vector3<f64>,
    pub arm_b: Vector3<f64>,
}

/// A search a solver asks for at the end of an attempt of a step
/// ([`crate::solver::Solver::search`]): how deep the mesh search seeks
/// closed pairs, for all pairs or per body.
#[derive(Clone, Debug, Default)]
pub struct Search {
    pub mesh_depth: Option<f64>,
    pub body_depths: Option<BodyDepths>,
}

/// Contact force on a fixed body or a wall (walls: id = 2^63 + index).
#[derive(Debug, serde::Serialize)]
pub struct Reaction {
    pub body: u64,
    pub force: [f64; 3],
}

impl<'a> World<'a> {
    /// Distributes `bodies` (any subset per rank, e.g. a checkpoint slab)
    /// to their owners in `domain`: the decomposition start-up placed them
    /// in, or a checkpoint's on the same rank count (then `rebalance` is
    /// false: the run continues as it would have). Without one, the rank
    /// boxes are made over the bodies' box. `time`: the run's (a restart's);
    /// `restart`: a checkpoint's World, whose stress-controlled cell is taken
    /// before the bodies are wrapped into it. Collective.
    #[allow(clippy::too_many_arguments)]
    pub fn new(comm: &'a Comm, scene: &'a Scene, bodies: Bodies, domain: Option<Domain>, rebalance: bool, history: &HistorySpec, time: f64, restart: Option<&WorldState>) -> Self {
        let domain = domain.unwrap_or_else(|| {
            let (lo, hi) = crate::parallel::domain::domain_box(comm, scene, &bodies);
            Domain::new(lo, hi, comm.size() as usize, scene.simulation.dim)
        });
        let n = bodies.len();
        let servo = scene.walls.iter().any(|w| matches!(w.motion, crate::scene::WallMotion::Servo(_)));
        let cell = scene.periodic.as_ref().is_some_and(|p| p.cell.is_some());
        let mut servo_scene = (servo || cell).then(|| Box::new(scene.clone()));
        if let (Some(state), Some(per)) = (restart, servo_scene.as_mut().and_then(|s| s.periodic.as_mut())) {
            restore_cell(comm, state, per);
        }
        let mut world = World {
            comm,
            scene,
            servo_scene,
            domain,
            bodies,
            layout: Layout::default(),
            shapes: ContactShapes::new(&scene.shapes),
            contacts: Contacts::new(),
            forces: ContactForces::default(),
            history: History::new(history),
            start: None,
            search_migrated: false,
            verlet: VerletList::new(),
            params: DetectParams { entity_lists: scene.contact.entity_lists, ..DetectParams::new(scene.contact.skin, scene.contact.distance) },
            body_depths: None,
            reference: Vec::new(),
            restored_work: None,
            timers: Timers::default(),
            rebuilds: 0,
            rebalances: 0,
            migrated: 0,
            contact_fixed: Vec::new(),
            next: None,
            walls: scene.walls.clone(),
            time,
            drift_from: (0.0, 0.0),
        };
        world.layout.n_owned = n;
        // A checkpoint's bodies stay as the run had them: unwrapped (a body
        // that left the periodic box since the last rebuild is wrapped at
        // the next, as in the uninterrupted run), and on the ranks that
        // owned them at the positions where the run last rebuilt its lists.
        let owners_at = restart.map(|state| reference_positions(comm, state, &world.bodies));
        world.rebuild(rebalance, restart.is_none(), owners_at.as_deref());
        world
    }

    /// One attempt of a step: `f` gets what the step reads and the bodies,
    /// forces and history it writes; timed as "solve".
    pub fn attempt<T>(
        &mut self,
        (step, time, dt, output): (u64, f64, f64, bool),
        f: impl FnOnce(&StepContext, &mut Bodies, &mut ContactForces, &mut History) -> T,
    ) -> T {
        let ctx = StepContext {
            comm: self.comm,
            scene: self.servo_scene.as_deref().unwrap_or(self.scene),
            shapes: &self.shapes,
            layout: &self.layout,
            contacts: &self.contacts,
            step,
            time,
            dt,
            output,
        };
        let (bodies, forces, history) = (&mut self.bodies, &mut self.forces, &mut self.history);
        self.timers.time("solve", || f(&ctx, bodies, forces, history))
    }

    pub fn comm(&self) -> &'a Comm {
        self.comm
    }

    /// The scene; with servo walls, their present motion included.
    pub fn scene(&self) -> &Scene {
        self.servo_scene.as_deref().unwrap_or(self.scene)
    }

    /// The process grid (rank boxes).
    pub fn domain(&self) -> &Domain {
        &self.domain
    }

    /// Owned bodies, then ghosts.
    pub fn bodies(&self) -> &Bodies {
        &self.bodies
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn shapes(&self) -> &ContactShapes {
        &self.shapes
    }

    /// The step's contacts.
    pub fn contacts(&self) -> &Contacts {
        &self.contacts
    }

    /// The step's contact forces.
    pub fn forces(&self) -> &ContactForces {
        &self.forces
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    /// Body-history column `name` of every local body, owned then ghosts
    /// (the ghosts' from their owners; zeros for a body without a row):
    /// `width` values per body. History lives with the owners; a solver
    /// that reads it on ghosts asks here. Collective.
    pub fn body_history_with_ghosts(&self, name: &str) -> Vec<f64> {
        let (h, n) = (&self.history.body, self.layout.n_owned);
        let col = h.col(name);
        let w = col.width();
        let mut owned = vec![0.0; w * n];
        for i in 0..n {
            if let Some(row) = h.get(&self.bodies.id[i]) {
                owned[w * i..w * (i + 1)].copy_from_slice(col.of(row));
            }
        }
        let ghosts = exchange::forward_values(self.comm, &self.layout, &owned, w);
        owned.extend(ghosts);
        owned
    }

    /// What a checkpoint keeps of the World: the history tables, the
    /// neighbour lists' reference positions and each body's work (table
    /// "world": when the next rebuild happens, and whether and where it
    /// rebalances) and the decomposition.
    pub fn state(&self) -> WorldState {
        let n = self.layout.n_owned;
        let mut history = self.history.tables();
        let mut reference = FlatRecords::with_capacity(0, 4, n);
        let work = self.work();
        for (i, p) in self.reference.iter().enumerate().take(n) {
            reference.push(self.bodies.id[i], &[], &[p.x, p.y, p.z, work[i]]);
        }
        history.push((WORLD_TABLE.to_string(), reference));
        let mut servo = FlatRecords::new(0, 7);
        if self.comm.rank() == 0 {
            for (k, w) in self.walls.iter().enumerate() {
                if let crate::scene::WallMotion::Servo(s) = &w.motion {
                    servo.push(k as u64, &[], &[s.anchor.x, s.anchor.y, s.anchor.z, s.since, s.speed, s.scale, s.error]);
                }
            }
        }
        history.push((SERVO_TABLE.to_string(), servo));
        let mut cell = FlatRecords::new(0, 7);
        if let (0, Some(p)) = (self.comm.rank(), self.scene().periodic.as_ref()) {
            if let (Some(s), Some(c)) = (p.shear, &p.cell) {
                cell.push(0, &[], &[p.hi[s.gradient], p.offset, p.since, c.speed, c.scale, c.error, p.measured]);
            }
        }
        history.push((CELL_TABLE.to_string(), cell));
        let mut drift = FlatRecords::new(0, 2);
        if self.comm.rank() == 0 && self.scene().periodic.as_ref().is_some_and(|p| p.shear.is_some()) {
            drift.push(0, &[], &[self.drift_from.0, self.drift_from.1]);
        }
        history.push((DRIFT_TABLE.to_string(), drift));
        WorldState { history, domain: self.domain.to_flat() }
    }

    /// Takes a checkpoint's history tables (this rank's slab of each) and
    /// reference positions to the owners of their bodies. Collective.
    pub fn restore(&mut self, state: &WorldState) {
        let owned = self.bodies.id[..self.layout.n_owned].to_vec();
        self.history.adopt(self.comm, &state.history, &owned);
        let empty = FlatRecords::new(0, 4);
        // Older checkpoints kept the positions alone (3 columns).
        let reference = crate::history::table(&state.history, WORLD_TABLE).filter(|r| (r.n_f == 3 || r.n_f == 4) && r.n_u == 0).unwrap_or(&empty);
        let got = crate::history::route_to_owners(self.comm, reference, &owned);
        let at: std::collections::HashMap<u64, usize> = owned.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        let mut work = (got.n_f == 4).then(|| vec![1.0; owned.len()]);
        for k in 0..got.len() {
            let f = got.f_row(k);
            let i = at[&got.keys[k]];
            self.reference[i] = Vector3::new(f[0], f[1], f[2]);
            if let Some(w) = work.as_mut() {
                w[i] = f[3];
            }
        }
        self.restored_work = work;
        // The servo walls' motion, to every rank.
        let servo = crate::history::table(&state.history, SERVO_TABLE).filter(|r| r.n_f == 7).cloned().unwrap_or_else(|| FlatRecords::new(0, 7));
        let size = self.comm.size() as usize;
        let mut all = FlatRecords::new(0, 7);
        let mut dest = Vec::new();
        for k in 0..servo.len() {
            for r in 0..size {
                all.push(servo.keys[k], &[], servo.f_row(k));
                dest.push(r);
            }
        }
        let got = send_to(self.comm, &all, &dest);
        for k in 0..got.len() {
            let f = got.f_row(k);
            if let Some(crate::scene::WallMotion::Servo(s)) = self.walls.get_mut(got.keys[k] as usize).map(|w| &mut w.motion) {
                (s.anchor, s.since, s.speed, s.scale, s.error) = (Vector3::new(f[0], f[1], f[2]), f[3], f[4], f[5], f[6]);
            }
        }
        self.sync_servo_scene();
        if let Some(row) = single_row(self.comm, state, DRIFT_TABLE, 2) {
            self.drift_from = (row[0], row[1]);
        }
    }

    /// The solvers' copy of the scene takes the walls' present motion.
    fn sync_servo_scene(&mut self) {
        if let Some(s) = self.servo_scene.as_mut() {
            s.walls.clone_from(&self.walls);
        }
    }

    /// The cell the bodies are in, (lo, hi), on the axes of the scene: per
    /// axis the periodic box, else the innermost acting walls whose normal
    /// is that axis (one on each side), else the free bodies' extent (their
    /// bounding spheres) on the missing side. Collective.
    pub fn cell_box(&self) -> (Vector3<f64>, Vector3<f64>) {
        let mut lo = Vector3::repeat(f64::NEG_INFINITY);
        let mut hi = Vector3::repeat(f64::INFINITY);
        for w in self.walls.iter().filter(|w| !w.removed) {
            for a in 0..3 {
                if (w.normal[a].abs() - 1.0).abs() < 1e-12 {
                    if w.normal[a] > 0.0 {
                        lo[a] = lo[a].max(w.point[a]);
                    } else {
                        hi[a] = hi[a].min(w.point[a]);
                    }
                }
            }
        }
        if let Some(p) = &self.scene().periodic {
            for a in 0..3 {
                if p.axes[a] {
                    (lo[a], hi[a]) = (p.lo[a], p.hi[a]);
                }
            }
        }
        if lo.iter().chain(hi.iter()).any(|x| x.is_infinite()) {
            let b = &self.bodies;
            let (mut elo, mut ehi) = (Vector3::repeat(f64::INFINITY), Vector3::repeat(f64::NEG_INFINITY));
            for i in (0..self.layout.n_owned).filter(|&i| !b.fixed[i]) {
                let r = self.shapes.bounding_radius(b.shape[i]);
                elo = elo.inf(&b.position[i].add_scalar(-r));
                ehi = ehi.sup(&b.position[i].add_scalar(r));
            }
            for a in 0..3 {
                let (l, h) = (-parallel::max_f64(self.comm, -elo[a]), parallel::max_f64(self.comm, ehi[a]));
                if lo[a].is_infinite() {
                    lo[a] = l;
                }
                if hi[a].is_infinite() {
                    hi[a] = h;
                }
            }
        }
        (lo, hi)
    }

    /// Sets the speed of every servo wall from its reaction after the step
    /// that ended at `t` ([`crate::scene::Servo::control`]); `normal` as in
    /// [`World::reactions`]. Collective; nothing without servo walls.
    pub fn control_walls(&mut self, reported: Option<ReportedForces>, t: f64) {
        if self.servo_scene.is_none() {
            return;
        }
        let reactions = self.reactions(reported);
        let stress = self.walls.iter().any(|w| matches!(&w.motion, crate::scene::WallMotion::Servo(s) if matches!(s.target, crate::scene::ServoTarget::Stress(_))));
        let cell = if stress { Some(self.cell_box()) } else { None };
        let dim = self.scene.simulation.dim as usize;
        // Rigid contacts (cd, compatible-cd) cannot give way: a wall pushed
        // into a jammed pack has no finite reaction, so there it advances no
        // farther in a step than its gap to the nearest body.
        let rigid = self.scene.simulation.solver != crate::scene::SolverKind::Dem;
        let gaps: Vec<f64> = if rigid {
            let b = &self.bodies;
            self.walls
                .iter()
                .map(|w| {
                    if !matches!(w.motion, crate::scene::WallMotion::Servo(_)) {
                        return f64::INFINITY;
                    }
                    let p = w.position(t);
                    let local = (0..self.layout.n_owned).map(|i| (b.position[i] - p).dot(&w.normal) - self.shapes.bounding_radius(b.shape[i])).fold(f64::INFINITY, f64::min);
                    -parallel::max_f64(self.comm, -local)
                })
                .collect()
        } else {
            Vec::new()
        };
        let dt = self.scene.simulation.dt;
        for (k, w) in self.walls.iter_mut().enumerate() {
            let point = w.position(t);
            let n = w.normal;
            let crate::scene::WallMotion::Servo(s) = &mut w.motion else { continue };
            let r = reactions.iter().find(|r| r.body == contact::WALL_ID_BASE + k as u64).map_or(Vector3::zeros(), |r| Vector3::from(r.force));
            // The bodies push the wall against its normal.
            let measured = -r.dot(&n);
            let area = cell.map_or(1.0, |(lo, hi)| {
                let axis = n.iamax();
                (0..dim).filter(|&a| a != axis).map(|a| hi[a] - lo[a]).product()
            });
            let target = s.target_force(t, area);
            s.control(t, point, measured, target);
            if let Some(&gap) = gaps.get(k) {
                s.speed = s.speed.min(gap.max(0.0) / dt);
            }
        }
        self.sync_servo_scene();
    }

    /// Moves a stress-controlled periodic cell (`[parallel] servo_stress`)
    /// on to time `t`, its gradient period at the rate it had over the
    /// step, and sets that rate from the cell's normal stress on the
    /// gradient axis after the step (Love–Weber over the cell, from the
    /// forces `reported` as in [`World::reactions`]) by the law of the
    /// stress-controlled walls ([`crate::scene::Servo::control`]), the
    /// cell's face as the wall. Collective; nothing without such a cell.
    pub fn control_cell(&mut self, reported: Option<ReportedForces>, t: f64) {
        let Some(g) = self.scene().periodic.as_ref().filter(|p| p.cell.is_some()).and_then(|p| p.shear).map(|s| s.gradient) else { return };
        let forces = self.answer_forces(reported);
        let mut local = 0.0;
        for (k, s) in self.contact_fixed.iter().enumerate().take(self.contacts.len()) {
            let f = self.contacts.normal[k] * forces.f_n.get(k).copied().unwrap_or(0.0) + forces.f_t.get(k).copied().unwrap_or_else(Vector3::zeros);
            if !s.fixed.0 {
                local += f[g] * s.arm_a[g];
            }
            if !s.fixed.1 {
                local -= f[g] * s.arm_b[g];
            }
        }
        let sum = parallel::sum_f64(self.comm, local);
        let (lo, hi) = self.cell_box();
        let dim = self.scene.simulation.dim as usize;
        let area: f64 = (0..dim).filter(|&a| a != g).map(|a| hi[a] - lo[a]).product();
        // A body must never meet its own image (as the configuration checks).
        let rmax = self.scene.shapes.iter().map(|s| s.bounding_radius()).fold(0.0, f64::max);
        let shortest = 2.0 * (2.0 * rmax + self.params.skin + self.params.contact_distance);
        let dt = self.scene.simulation.dt;
        let per = self.servo_scene.as_mut().and_then(|s| s.periodic.as_mut()).expect("a stress-controlled cell has its scene copy");
        // The step just taken (the DEM's may be shorter than dt).
        let step = t - per.since;
        per.advance(t);
        // Rigid grains in flow give a stress that changes from step to step:
        // the servo may follow its average instead.
        let now = sum / (area * per.period(g));
        per.measured = if per.average > 0.0 && per.measured.is_finite() { per.measured + (step / per.average).min(1.0) * (now - per.measured) } else { now };
        let measured = per.measured;
        let point = per.hi;
        let period = per.period(g);
        if let Some(c) = per.cell.as_mut() {
            let target = c.target_force(t, 1.0);
            c.control(t, point, measured, target);
            if period - c.speed * dt <= shortest && c.speed > 0.0 {
                if self.comm.rank() == 0 {
                    log::warn!("the stress-controlled cell stops shrinking: its gradient period {} would come within two reaches of the largest body ({})", num(period), num(shortest));
                }
                c.speed = 0.0;
            }
        }
        // A solver's search may have found the next step's contacts already
        // (no ghost refresh before it): its images move at the new rate.
        self.layout.follow(self.servo_scene.as_deref().and_then(|s| s.periodic.as_ref()), t);
    }

    pub fn timers(&self) -> &Timers {
        &self.timers
    }

    /// Adds a solver's own phase to the timers.
    pub fn add_phase(&mut self, name: &'static str) {
        self.timers.add_phase(name);
    }

    /// Neighbour-list rebuilds (migrate + borders) so far, the same on every rank.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// RCB rebalances so far.
    pub fn rebalances(&self) -> u64 {
        self.rebalances
    }

    /// Bodies this rank sent to another owner so far.
    pub fn migrated(&self) -> u64 {
        self.migrated
    }

    /// Candidate pairs (body–body and body–wall) in this rank's Verlet list.
    pub fn candidate_pairs(&self) -> usize {
        self.verlet.pairs().len() + self.verlet.wall_pairs().len()
    }

    pub fn n_owned(&self) -> usize {
        self.layout.n_owned
    }

    /// A copy of the owned bodies (no ghosts).
    pub fn owned_bodies(&self) -> Bodies {
        let mut b = self.bodies.clone();
        b.truncate(self.layout.n_owned);
        b
    }

    /// Stage 1: migrate and rebuild ghosts when some body (anywhere) moved
    /// more than half the skin since the last rebuild, else refresh ghosts.
    pub fn neighbours(&mut self, force: bool) {
        let n = self.layout.n_owned;
        let moved = (0..n.min(self.reference.len()))
            .map(|i| (self.bodies.position[i] - self.reference[i]).norm())
            .fold(0.0, f64::max);
        // A Lees–Edwards cell's images slide past the bodies across the
        // gradient faces: as far as the offset (and the period) moved since
        // the lists were built.
        let periodic = self.servo_scene.as_deref().unwrap_or(self.scene).periodic.as_ref();
        let sheared = periodic.and_then(|p| p.image_frame(self.time)).map_or(0.0, |(offset, period)| (offset - self.drift_from.0).abs() + (period - self.drift_from.1).abs());
        let stale = force || self.reference.len() != n || moved + sheared > 0.5 * self.params.skin;
        if parallel::all_ok(self.comm, !stale) {
            let time = self.time;
            let (comm, bodies, layout) = (self.comm, &mut self.bodies, &mut self.layout);
            self.timers.time("ghost_exchange", || exchange::forward(comm, bodies, layout, periodic, time));
            return;
        }
        self.rebuild(true, true, None);
    }

    /// Migrate (after an RCB rebalance when asked and the load is uneven)
    /// and rebuild the ghosts; the positions become the new reference.
    fn rebuild(&mut self, rebalance: bool, wrap: bool, owners_at: Option<&[Vector3<f64>]>) {
        let n = self.layout.n_owned;
        self.bodies.truncate(n);
        if let (Some(per), true) = (&self.servo_scene.as_deref().unwrap_or(self.scene).periodic, wrap) {
            let b = &mut self.bodies;
            for i in 0..n {
                (b.position[i], b.velocity[i]) = per.wrap_state(&b.position[i], &b.velocity[i], self.time);
            }
        }
        let time = self.time;
        if let Some(frame) = self.servo_scene.as_deref().unwrap_or(self.scene).periodic.as_ref().and_then(|p| p.image_frame(time)) {
            self.drift_from = frame;
        }
        if rebalance {
            self.rebalance();
        }
        let (comm, domain) = (self.comm, &self.domain);
        let (bodies, history) = (&mut self.bodies, &mut self.history);
        let departed = self.timers.time("migration", || {
            let departed = exchange::migrate(comm, domain, bodies, n, owners_at);
            history.migrate(comm, &departed);
            departed.len() as u64
        });
        self.migrated += departed;
        let n = bodies.len();
        let extra = self.params.skin + self.params.contact_distance;
        let shapes = &self.scene.shapes;
        let periodic = self.servo_scene.as_deref().unwrap_or(self.scene).periodic.as_ref();
        self.layout =
            self.timers.time("ghost_exchange", || exchange::borders(comm, domain, bodies, n, shapes, extra, periodic, time));
        self.reference = self.bodies.position[..n].to_vec();
        self.verlet.invalidate();
        self.rebuilds += 1;
    }

    /// The work of each owned body: 1 plus the contacts it owns (those it is
    /// the smaller-id body of, which this rank detects and assembles), from
    /// the last detection.
    pub fn work(&self) -> Vec<f64> {
        if let Some(w) = &self.restored_work {
            return w.clone();
        }
        let n = self.layout.n_owned;
        let mut work = vec![1.0; n];
        for &i in &self.contacts.ia {
            if i < n {
                work[i] += 1.0;
            }
        }
        work
    }

    /// Recomputes the rank boxes by RCB when the work ([`World::work`]) is
    /// uneven: with equal body counts the contacts of a pack can still
    /// differ by a fifth between ranks (the tetrapod collapse).
    fn rebalance(&mut self) {
        let size = self.comm.size() as usize;
        if size == 1 {
            return;
        }
        let work = self.work();
        let total: f64 = work.iter().sum();
        let (max, mean) = (parallel::max_f64(self.comm, total), parallel::sum_f64(self.comm, total) / size as f64);
        if mean <= 0.0 || max / mean <= self.scene.imbalance {
            return;
        }
        let positions = &self.bodies.position[..self.layout.n_owned];
        self.domain = self.timers.time("migration", || Domain::rcb(self.comm, positions, &work, self.scene.simulation.dim));
        self.rebalances += 1;
        // Once per run: a pack whose contacts keep shifting (or fewer bodies
        // than ranks) rebalances often; summary.json counts them all.
        if self.rebalances == 1 {
            log::info!("rebalanced by RCB: max/mean work (bodies + contacts) per rank was {:.2} (further rebalances are counted in summary.json)", max / mean);
        } else {
            log::debug!("rebalanced by RCB: max/mean work (bodies + contacts) per rank was {:.2}", max / mean);
        }
    }

    /// Moves the walls to their positions at time `t` and marks those
    /// removed by then (t >= until, within 1e-9 dt so a step ending on
    /// `until` counts); the next detection drops them (the Verlet list sees
    /// the change and rebuilds). The same on every rank.
    pub fn set_time(&mut self, t: f64) {
        self.time = t;
        let tol = 1e-9 * self.scene.simulation.dt;
        for (k, w) in self.walls.iter_mut().enumerate() {
            w.point = w.position(t);
            let removed = t >= w.until - tol;
            if removed && !w.removed && self.comm.rank() == 0 {
                log::info!("wall[{k}] removed at t = {} (until = {})", num(t), num(w.until));
            }
            w.removed = removed;
        }
    }

    /// Stage 2: contacts of the owned bodies (each contact on one rank),
    /// or those a solver's search already found for this configuration.
    pub fn detect(&mut self) {
        self.restored_work = None;
        if let Some((c, f)) = self.next.take() {
            self.contacts = c;
            self.contact_fixed = f;
            return;
        }
        let (b, n, s, w, p) = (&self.bodies, self.layout.n_owned, &self.shapes, &self.walls, &self.params);
        let (verlet, out) = (&mut self.verlet, &mut self.contacts);
        // The Verlet build is the broad phase; detect() then only runs the
        // narrow phase on the stored pairs.
        if verlet.is_stale(b, w, p) {
            self.timers.time("broad_phase", || verlet.build(b, s, w, p));
        }
        let depths = self.body_depths.as_ref().map(|d| d.local(b));
        self.timers.time("narrow_phase", || {
            contact::detect(b, n, s, w, p, depths.as_deref(), verlet, out);
            // By key, not by the order of the neighbour lists: a restart,
            // whose lists are younger, then sums every force in the same order.
            out.sort_canonical();
        });
        self.refresh_fixed();
    }

    /// Stages 1 and 2 at the start of a step: neighbours and contacts,
    /// unless a solver's search already found them at this configuration.
    pub fn update_contacts(&mut self) {
        if self.next.is_none() {
            self.neighbours(false);
        }
        self.detect();
    }

    /// The contacts [`World::detect_next`] found, until the next detection.
    pub fn next_contacts(&self) -> Option<&Contacts> {
        self.next.as_ref().map(|(c, _)| c)
    }

    /// Carries out a solver's [`Search`] at the present configuration
    /// (the end of an attempt): its depths for the mesh search, then
    /// [`World::detect_next`]. Collective.
    pub fn search(&mut self, search: Search) {
        if let Some(d) = search.mesh_depth {
            self.params.mesh_depth = Some(d);
        }
        if search.body_depths.is_some() {
            self.body_depths = search.body_depths;
        }
        let rebuilds = self.rebuilds;
        self.detect_next();
        self.search_migrated = self.rebuilds != rebuilds;
    }

    /// A body migrated during the last [`World::search`] (the same on every rank).
    pub fn search_migrated(&self) -> bool {
        self.search_migrated
    }

    /// Detects the contacts at the present configuration into a separate
    /// list (neighbour lists refreshed first), leaving the step's contacts
    /// and forces in place; the list is used by the next [`World::detect`].
    /// Collective.
    pub fn detect_next(&mut self) {
        self.next = None;
        // The step's contacts are the work estimate of a rebalance.
        self.neighbours(false);
        let step_list = std::mem::take(&mut self.contacts);
        let step_fixed = std::mem::take(&mut self.contact_fixed);
        self.detect();
        let new_list = std::mem::replace(&mut self.contacts, step_list);
        let new_fixed = std::mem::replace(&mut self.contact_fixed, step_fixed);
        self.next = Some((new_list, new_fixed));
    }

    /// Drops the contacts of the step at these indices (a solver's [`Plan`]).
    pub fn drop_contacts(&mut self, drop: &[usize]) {
        if drop.is_empty() {
            return;
        }
        let mut gone = vec![false; self.contacts.len()];
        drop.iter().for_each(|&k| gone[k] = true);
        self.contacts.retain(|k| !gone[k]);
        self.refresh_fixed();
    }

    /// Remembers the owned bodies and the history at the start of a step,
    /// the state [`World::roll_back`] returns to (for a solver that
    /// [`rolls_back`](crate::solver::Solver::rolls_back)).
    pub fn begin_step(&mut self) {
        self.start = Some((self.owned_bodies(), self.history.clone()));
    }

    /// The owned bodies at the start of the step being taken.
    pub fn step_start(&self) -> Option<&Bodies> {
        self.start.as_ref().map(|(b, _)| b)
    }

    /// `contact_fixed` of the current contacts: whether each side is fixed.
    fn refresh_fixed(&mut self) {
        let (b, c) = (&self.bodies, &self.contacts);
        self.contact_fixed.clear();
        self.contact_fixed.extend((0..c.len()).map(|k| {
            let (ia, ib) = (c.ia[k], c.ib[k]);
            let wall = ib == WALL_INDEX;
            ContactSides {
                fixed: (b.fixed[ia], wall || b.fixed[ib]),
                arm_a: c.point[k] - b.position[ia],
                arm_b: if wall { Vector3::zeros() } else { c.point[k] - b.position[ib] },
            }
        }));
    }

    /// Per contact of the step: its sides as detection saw them.
    pub fn contact_sides(&self) -> &[ContactSides] {
        &self.contact_fixed
    }

    /// True for a contact of `list` between two bodies at least one of
    /// which is a mesh (no wall): its closest-point projection can land on
    /// the far side of a thin tip or in a concave region.
    pub fn is_mesh_pair(&self, list: &Contacts, k: usize) -> bool {
        let (ia, ib) = (list.ia[k], list.ib[k]);
        ib != WALL_INDEX && [ia, ib].iter().any(|&i| matches!(self.shapes.shape(self.bodies.shape[i]), Shape::Mesh(_)))
    }

    /// Back to the start of the step ([`World::begin_step`]: owned bodies
    /// and history) with contacts detected out to `distance`: neighbour
    /// lists rebuilt so the ghost halo reaches that far, then the normal
    /// distance again. Bodies that drifted across a rank boundary since the
    /// last rebuild migrate with their history; the redo starts from this
    /// distribution (its contacts were detected in it).
    pub fn roll_back(&mut self, distance: f64) {
        let (bodies, history) = self.start.take().expect("roll_back without begin_step");
        self.layout.n_owned = bodies.len();
        self.bodies = bodies;
        self.history = history;
        self.body_depths = None;
        self.next = None;
        let normal = self.params.contact_distance;
        self.params.contact_distance = distance;
        self.neighbours(true);
        self.detect();
        self.params.contact_distance = normal;
        self.begin_step();
    }

    /// The contacts with their forces as named output columns; `extra`
    /// adds a solver's own per-contact fields.
    pub fn contact_table(&self, extra: &[crate::io::ContactField]) -> ContactTable {
        let c = &self.contacts;
        let n = c.len();
        let mut t = ContactTable::new(n);
        t.u64("body_a", 1, c.a.clone());
        t.u64("body_b", 1, c.b.clone());
        t.u32("sub_a", c.sub_a.clone());
        t.u32("sub_b", c.sub_b.clone());
        t.f64("point", 3, c.point.iter().flat_map(|p| [p.x, p.y, p.z]).collect());
        t.f64("normal", 3, c.normal.iter().flat_map(|p| [p.x, p.y, p.z]).collect());
        t.f64("gap", 1, c.gap.clone());
        t.f64("force_normal", 1, (0..n).map(|k| self.forces.f_n.get(k).copied().unwrap_or(0.0)).collect());
        let ft = |k: usize| self.forces.f_t.get(k).copied().unwrap_or_else(Vector3::zeros);
        t.f64("force_tangent", 3, (0..n).flat_map(|k| ft(k).as_slice().to_vec()).collect());
        for field in extra {
            t.f64(field.name, field.width, field.values.clone());
            match field.replaces {
                Some("force_normal") => t.normal_force = field.name.to_string(),
                Some("force_tangent") => t.tangent_force = field.name.to_string(),
                _ => {}
            }
        }
        t
    }

    /// The contact forces that stand for the solver's answer: `reported`
    /// when a solver gives others (compatible-cd), else the step's.
    pub fn answer_forces<'r>(&'r self, reported: Option<ReportedForces<'r>>) -> ReportedForces<'r> {
        reported.unwrap_or(ReportedForces { f_n: &self.forces.f_n, f_t: &self.forces.f_t })
    }

    /// Total contact force on every fixed body and wall, gathered on every
    /// rank, sorted by id, from the forces `reported` by the solver (or the
    /// step's: [`World::answer_forces`]). Collective.
    pub fn reactions(&self, reported: Option<ReportedForces>) -> Vec<Reaction> {
        let mut local: BTreeMap<u64, Vector3<f64>> = BTreeMap::new();
        let forces = self.answer_forces(reported);
        for (k, c) in self.contacts.iter().enumerate() {
            let f = c.normal * forces.f_n.get(k).copied().unwrap_or(0.0) + forces.f_t.get(k).copied().unwrap_or_else(Vector3::zeros);
            let (fixed_a, fixed_b) = self.contact_fixed[k].fixed;
            if fixed_b {
                *local.entry(c.b).or_insert_with(Vector3::zeros) += f;
            }
            if fixed_a {
                *local.entry(c.a).or_insert_with(Vector3::zeros) -= f;
            }
        }
        let mut recs = FlatRecords::new(0, 3);
        for (id, f) in &local {
            recs.push(*id, &[], f.as_slice());
        }
        // Everything to rank 0, summed there in id order, then broadcast.
        let got = send_to(self.comm, &recs, &vec![0; recs.len()]);
        let mut sum: BTreeMap<u64, Vector3<f64>> = BTreeMap::new();
        for i in 0..got.len() {
            let f = got.f_row(i);
            *sum.entry(got.keys[i]).or_insert_with(Vector3::zeros) += Vector3::new(f[0], f[1], f[2]);
        }
        let mut flat: Vec<f64> = sum.iter().flat_map(|(id, f)| [f64::from_bits(*id), f.x, f.y, f.z]).collect();
        let mut len = flat.len() as u64;
        let root = self.comm.process_at_rank(0);
        root.broadcast_into(&mut len);
        flat.resize(len as usize, 0.0);
        if len > 0 {
            root.broadcast_into(&mut flat[..]);
        }
        flat.chunks(4).map(|c| Reaction { body: c[0].to_bits(), force: [c[1], c[2], c[3]] }).collect()
    }

    /// The walls as they are now (points moved, removed ones marked).
    pub fn walls(&self) -> &[Wall] {
        &self.walls
    }

    /// Kinetic energy of all bodies (collective).
    pub fn kinetic_energy(&self) -> f64 {
        parallel::sum_f64(self.comm, self.bodies.kinetic_energy(self.layout.n_owned))
    }
}
