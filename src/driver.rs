//! The time loop (DESIGN.md "One time step"): neighbours (migrate, ghosts),
//! contacts, solver, output — each stage called in order with its inputs,
//! timed per phase; frames, checkpoints, thermo lines and the summary.
use crate::body::{Bodies, Shape};
use crate::contact::{self, ContactShapes, Contacts, DetectParams, VerletList, WALL_ID_BASE, WALL_INDEX};
use crate::io::{self, CheckpointExtra, ContactRecord, ContactRecords, FrameWriter, IoError};
use crate::parallel::domain::Domain;
use crate::parallel::exchange::{self, Layout};
use crate::parallel::records::{send_to, FlatRecords};
use crate::parallel::{self, Comm};
use crate::cd::CdSolver;
use crate::scene::{Scene, SolverKind, Wall};
use crate::solver::{ContactForces, Solver, StepContext, StepReport};
use crate::timers::Timers;
use mpi::traits::*;
use nalgebra::Vector3;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad input (exit status 2).
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("step {step}: {message}")]
    Solver { step: u64, message: String },
    #[error("{0}")]
    Runtime(String),
}

impl RunError {
    /// Process exit status: 2 for bad input, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Input(_) => 2,
            _ => 1,
        }
    }
}

/// What the caller chose on the command line.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Replace the frames of an earlier run in the output directory.
    pub overwrite: bool,
    /// Continue from a checkpoint: (step, time) it was written at.
    pub restart: Option<(u64, f64)>,
    /// The solver's state records from the checkpoint (this rank's slab).
    pub restart_state: crate::io::ContactHistory,
    /// Largest number of bodies this rank held during start-up (summary.json).
    pub startup_max_bodies: u64,
}

/// Final diagnostics, also written to OUT/summary.json.
#[derive(Debug, serde::Serialize)]
pub struct Summary {
    pub version: &'static str,
    pub solver: &'static str,
    pub ranks: usize,
    pub bodies: u64,
    pub steps: u64,
    pub time: f64,
    pub contacts: u64,
    /// DEM: night-owl contacts found by the search at the end of a step
    /// (§2.6.3), and the steps redone for them.
    pub night_owls: u64,
    pub night_owl_redos: u64,
    /// DEM: mesh pairs detected with a closed gap and dropped (projections
    /// through thin tips or across concave regions), summed over ranks.
    pub closed_pairs_dropped: u64,
    /// Candidate pairs in the Verlet lists at the end (all ranks).
    pub candidate_pairs: u64,
    /// Neighbour-list rebuilds (migrate + ghosts + Verlet) and RCB rebalances.
    pub rebuilds: u64,
    pub rebalances: u64,
    pub kinetic_energy: f64,
    pub solver_iterations_total: u64,
    pub solver_iterations_per_step: Vec<u64>,
    /// Linear (KSP) iterations over the run (implicit DEM).
    pub linear_iterations_total: u64,
    /// Step attempts rejected and redone shorter (implicit DEM).
    pub rejected_steps: u64,
    /// Time steps taken: [min, mean, max].
    pub dt_taken: [f64; 3],
    pub wall_time: f64,
    /// Seconds per phase: [min, mean, max] over ranks.
    pub phases: BTreeMap<String, [f64; 3]>,
    /// Total contact force on every fixed body and wall at the end.
    pub reactions: Vec<Reaction>,
    /// Peak resident memory (VmHWM) per rank in MB: [min, mean, max].
    pub peak_rss_mb: [f64; 3],
    /// Largest number of bodies any rank held at once during start-up.
    pub startup_max_bodies: u64,
}

/// What the steps of a run reported, for summary.json.
#[derive(Debug, Default)]
struct StepTally {
    iterations_per_step: Vec<u64>,
    linear_iterations: u64,
    rejected: u64,
    dt_min: f64,
    dt_max: f64,
    dt_sum: f64,
}

impl StepTally {
    fn add(&mut self, r: &crate::solver::StepReport) {
        if self.iterations_per_step.is_empty() {
            (self.dt_min, self.dt_max) = (r.dt, r.dt);
        }
        self.iterations_per_step.push(r.iterations);
        self.linear_iterations += r.linear_iterations;
        self.rejected += r.rejected;
        self.dt_min = self.dt_min.min(r.dt);
        self.dt_max = self.dt_max.max(r.dt);
        self.dt_sum += r.dt;
    }

    fn dt_taken(&self) -> [f64; 3] {
        let n = self.iterations_per_step.len().max(1) as f64;
        [self.dt_min, self.dt_sum / n, self.dt_max]
    }
}

/// Contact force on a fixed body or a wall (walls: id = 2^63 + index).
#[derive(Debug, serde::Serialize)]
pub struct Reaction {
    pub body: u64,
    pub force: [f64; 3],
}

/// Number of steps to reach `t_end` (a last partial step is not taken).
pub fn step_count(t_end: f64, dt: f64) -> u64 {
    ((t_end / dt) * (1.0 + 1e-12)).floor() as u64
}

/// Refuses to clobber an earlier run unless asked; creates the directory.
fn prepare_output(comm: &Comm, dir: &Path, opts: &RunOptions) -> Result<(), RunError> {
    let mut msg = String::new();
    if comm.rank() == 0 {
        let frames = dir.join("frames.h5");
        if frames.exists() && !opts.overwrite && opts.restart.is_none() {
            msg = format!(
                "output.dir: {} already holds a run (frames.h5); choose another output.dir or pass --overwrite",
                dir.display()
            );
        } else if let Err(e) = std::fs::create_dir_all(dir) {
            msg = format!("output.dir: cannot create {}: {e}", dir.display());
        }
    }
    parallel::broadcast_string(comm, &mut msg);
    if msg.is_empty() {
        Ok(())
    } else {
        Err(RunError::Input(msg))
    }
}

/// The state of a run on one rank: owned bodies then ghosts, the process
/// grid, contacts and the neighbour lists.
pub struct Sim<'a> {
    pub comm: &'a Comm,
    pub scene: &'a Scene,
    pub domain: Domain,
    pub bodies: Bodies,
    pub layout: Layout,
    pub shapes: ContactShapes,
    pub contacts: Contacts,
    pub forces: ContactForces,
    verlet: VerletList,
    params: DetectParams,
    /// Owned positions when the ghost lists were last built.
    reference: Vec<Vector3<f64>>,
    pub timers: Timers,
    /// Neighbour-list rebuilds (migrate + borders) so far.
    pub rebuilds: u64,
    /// RCB rebalances so far.
    pub rebalances: u64,
    /// Per contact of `contacts`: (a fixed, b fixed or a wall), taken at
    /// detection — the search at the end of a DEM step may migrate bodies
    /// and leave the step's local indices stale before the reactions.
    contact_fixed: Vec<(bool, bool)>,
    /// DEM: the search at the end of the last step, for the next step.
    next: Option<(Contacts, Vec<(bool, bool)>)>,
    /// DEM: night-owl contacts found and steps redone for them so far.
    pub night_owls: u64,
    pub night_owl_redos: u64,
    /// DEM: mesh pairs detected with a closed gap and dropped (projections
    /// through thin tips or across concave regions), summed over ranks.
    pub closed_pairs_dropped: u64,
    /// DEM: keys (a, b, sub_a, sub_b) of the mesh pairs dropped closed at
    /// the start of the current step attempt.
    closed_keys: HashSet<[u64; 4]>,
    /// The scene's walls, those removed by now (`until`) marked: indices
    /// stay stable, so wall ids are 2^63 + index throughout.
    walls: Vec<Wall>,
}

/// A DEM step is redone at most this many times with a larger contact
/// distance for night-owl contacts, then accepted with a warning.
const MAX_NIGHT_OWL_REDOS: u32 = 3;

/// A contact unseen in a step that the search at its end found (§2.6.3).
#[derive(Clone, Copy, Debug)]
struct NightOwl {
    a: u64,
    b: u64,
    gap: f64,
    /// Its body pair had no contact in the step: the redo detects out to a
    /// larger distance.
    new_pair: bool,
    /// Its sub-region pair was not in the step and its gap is already below
    /// the penetration floor: the redo takes half the step, so that it
    /// enters the list before it is closed (the start configuration may
    /// hold it outside its validity range at any distance).
    penetrating: bool,
}

/// The penetration floor of a night owl, as a fraction of the law's
/// penalty/barrier switch gap f ḡ_n (eq 49): above the switch a contact
/// carries at most the ~100 weights eps1 is sized for, so a degeneration
/// that takes over from a listed one under an ordinary load is no owl.
const PENETRATION_FLOOR: f64 = 0.5;

impl<'a> Sim<'a> {
    /// Distributes `bodies` (any subset per rank, e.g. the whole scene on
    /// every rank, or a checkpoint slab) to their owners.
    pub fn new(comm: &'a Comm, scene: &'a Scene, bodies: Bodies, whole_scene_everywhere: bool) -> Self {
        let (lo, hi) = crate::startup::domain_box(comm, scene, &bodies);
        let domain = Domain::new(lo, hi, comm.size() as usize, scene.simulation.dim);
        let mut bodies = bodies;
        let me = comm.rank() as usize;
        if whole_scene_everywhere {
            bodies.retain(|b| domain.owner(&b.position) == me);
        }
        let n = bodies.len();
        let mut sim = Sim {
            comm,
            scene,
            domain,
            bodies,
            layout: Layout::default(),
            shapes: ContactShapes::new(&scene.shapes),
            contacts: Contacts::new(),
            forces: ContactForces::default(),
            verlet: VerletList::new(),
            params: DetectParams { entity_lists: scene.contact.entity_lists, ..DetectParams::new(scene.contact.skin, scene.contact.distance) },
            reference: Vec::new(),
            timers: Timers::default(),
            rebuilds: 0,
            rebalances: 0,
            contact_fixed: Vec::new(),
            next: None,
            night_owls: 0,
            night_owl_redos: 0,
            closed_pairs_dropped: 0,
            closed_keys: HashSet::new(),
            walls: scene.walls.clone(),
        };
        sim.layout.n_owned = n;
        sim.neighbours(true);
        sim
    }

    /// Candidate pairs (body–body and body–wall) in this rank's Verlet list.
    pub fn candidate_pairs(&self) -> usize {
        self.verlet.pairs().len() + self.verlet.wall_pairs().len()
    }

    pub fn n_owned(&self) -> usize {
        self.layout.n_owned
    }

    /// Step 1: migrate and rebuild ghosts when some body (anywhere) moved
    /// more than half the skin since the last rebuild, else refresh ghosts.
    pub fn neighbours(&mut self, force: bool) {
        let n = self.layout.n_owned;
        let moved = (0..n.min(self.reference.len()))
            .map(|i| (self.bodies.position[i] - self.reference[i]).norm())
            .fold(0.0, f64::max);
        let stale = force || self.reference.len() != n || moved > 0.5 * self.params.skin;
        if parallel::all_ok(self.comm, !stale) {
            self.timers.time("ghost_exchange", || exchange::forward(self.comm, &mut self.bodies, &self.layout));
            return;
        }
        self.bodies.truncate(n);
        if let Some(per) = &self.scene.periodic {
            for p in &mut self.bodies.position {
                *p = per.wrap(p);
            }
        }
        self.rebalance();
        let (comm, domain) = (self.comm, &self.domain);
        let bodies = &mut self.bodies;
        self.timers.time("migration", || exchange::migrate(comm, domain, bodies, n));
        let n = bodies.len();
        let extra = self.params.skin + self.params.contact_distance;
        let shapes = &self.scene.shapes;
        let periodic = self.scene.periodic.as_ref();
        self.layout =
            self.timers.time("ghost_exchange", || exchange::borders(comm, domain, bodies, n, shapes, extra, periodic));
        self.reference = self.bodies.position[..n].to_vec();
        self.verlet.invalidate();
        self.rebuilds += 1;
    }

    /// Recomputes the rank boxes by RCB when the body counts are uneven.
    fn rebalance(&mut self) {
        let size = self.comm.size() as usize;
        if size == 1 {
            return;
        }
        let n = self.layout.n_owned as f64;
        let (max, mean) = (parallel::max_f64(self.comm, n), parallel::sum_f64(self.comm, n) / size as f64);
        if mean <= 0.0 || max / mean <= self.scene.imbalance {
            return;
        }
        let positions = &self.bodies.position[..self.layout.n_owned];
        self.domain = self.timers.time("migration", || Domain::rcb(self.comm, positions, self.scene.simulation.dim));
        self.rebalances += 1;
        log::info!("rebalanced by RCB: max/mean bodies per rank was {:.2}", max / mean);
    }

    /// Marks the walls removed at time `t` (t >= until, within 1e-9 dt so
    /// a step ending on `until` counts); the next detection drops them
    /// (the Verlet list sees the change and rebuilds). The same on every rank.
    pub fn set_time(&mut self, t: f64) {
        let tol = 1e-9 * self.scene.simulation.dt;
        for (k, w) in self.walls.iter_mut().enumerate() {
            let removed = t >= w.until - tol;
            if removed && !w.removed && self.comm.rank() == 0 {
                log::info!("wall[{k}] removed at t = {t:e} (until = {:e})", w.until);
            }
            w.removed = removed;
        }
    }

    /// Step 2: contacts of the owned bodies (each contact on one rank).
    pub fn detect(&mut self) {
        let (b, n, s, w, p) = (&self.bodies, self.layout.n_owned, &self.shapes, &self.walls, &self.params);
        let (verlet, out) = (&mut self.verlet, &mut self.contacts);
        // The Verlet build is the broad phase; detect() then only runs the
        // narrow phase on the stored pairs.
        if verlet.is_stale(b, w, p) {
            self.timers.time("broad_phase", || verlet.build(b, s, w, p));
        }
        self.timers.time("narrow_phase", || contact::detect(b, n, s, w, p, verlet, out));
        self.refresh_fixed();
    }

    /// `contact_fixed` of the current contacts: whether each side is fixed.
    fn refresh_fixed(&mut self) {
        let (b, c) = (&self.bodies, &self.contacts);
        self.contact_fixed.clear();
        self.contact_fixed
            .extend(c.ia.iter().zip(&c.ib).map(|(&ia, &ib)| (b.fixed[ia], ib == WALL_INDEX || b.fixed[ib])));
    }

    /// True for a contact between two bodies at least one of which is a
    /// mesh (no wall): its closest-point projection can land on the far
    /// side of a thin tip or in a concave region.
    fn mesh_pair(&self, list: &Contacts, k: usize) -> bool {
        let (ia, ib) = (list.ia[k], list.ib[k]);
        ib != WALL_INDEX
            && [ia, ib].iter().any(|&i| matches!(self.shapes.shape(self.bodies.shape[i]), Shape::Mesh(_)))
    }

    /// DEM: drops the mesh pairs detected with a closed gap. The barrier law
    /// keeps every tracked gap open and the night-owl checks track every
    /// pair that closes within a step, so a closed one is a projection
    /// through a thin tip or across a concave region (§3.6), not a contact
    /// (it would end every step at once: "gap closed"). Returns how many.
    fn drop_closed_mesh_pairs(&mut self) -> usize {
        let closed: Vec<bool> = (0..self.contacts.len()).map(|k| self.contacts.gap[k] <= 0.0 && self.mesh_pair(&self.contacts, k)).collect();
        let n = closed.iter().filter(|&&c| c).count();
        self.closed_keys.clear();
        if n > 0 {
            for k in (0..closed.len()).filter(|&k| closed[k]) {
                let c = &self.contacts;
                log::debug!("dropped mesh pair {}-{} (sub {} {}) with closed gap {:e}", c.a[k], c.b[k], c.sub_a[k], c.sub_b[k], c.gap[k]);
                self.closed_keys.insert(c.key(k));
            }
            self.contacts.retain(|k| !closed[k]);
            self.refresh_fixed();
        }
        n
    }

    /// Takes the contacts found by the search at the end of the last step
    /// (DEM); false when there is none (then detect).
    fn take_next(&mut self) -> bool {
        match self.next.take() {
            Some((c, f)) => {
                self.contacts = c;
                self.contact_fixed = f;
                true
            }
            None => false,
        }
    }

    /// The largest distance a surface point of an owned body moved since
    /// `start` (the owned bodies, same order): |Δx| plus, for a mesh, the
    /// bounding radius times the rotation angle. A gap changes by at most
    /// the sum of its two bodies' values.
    fn largest_displacement(&self, start: &Bodies) -> f64 {
        let (b, n) = (&self.bodies, self.layout.n_owned);
        assert_eq!(n, start.len(), "the owned bodies changed within the step");
        (0..n)
            .map(|i| {
                let turn = match self.shapes.shape(b.shape[i]) {
                    Shape::Sphere { .. } => 0.0,
                    Shape::Mesh(_) => {
                        self.shapes.bounding_radius(b.shape[i]) * (b.orientation[i] * start.orientation[i].inverse()).angle()
                    }
                };
                (b.position[i] - start.position[i]).norm() + turn
            })
            .fold(0.0, f64::max)
    }

    /// The global search at the end of a DEM step (§2.6.3), which the next
    /// step reuses (`next`): neighbours and contacts at the new
    /// configuration. The step's contacts and forces stay in `contacts` and
    /// `forces` (frames, reactions). Returns this rank's night owls: active
    /// contacts (gap < ḡ_n) whose body pair had no contact in the step's
    /// list, and contacts closer than `floor` whose sub-region pair was not
    /// in it (`penetrating`: the step crossed into a degeneration it did not
    /// model, e.g. an edge–edge pair beside a listed vertex–face one).
    /// Collective. `start`: the owned bodies at the step's start.
    /// `reach`: twice the largest displacement in the step (global): a mesh
    /// pair closed deeper than that was closed at the start already, a
    /// projection through a thin tip (see `drop_closed_mesh_pairs`), no owl.
    fn search_after_step(&mut self, start: &Bodies, gbar: f64, floor: f64, reach: f64) -> Vec<NightOwl> {
        let rebuilds = self.rebuilds;
        let step_list = std::mem::take(&mut self.contacts);
        let step_fixed = std::mem::take(&mut self.contact_fixed);
        self.neighbours(false);
        self.detect();
        let new_list = std::mem::replace(&mut self.contacts, step_list);
        let new_fixed = std::mem::replace(&mut self.contact_fixed, step_fixed);
        // A contact lives on the owner of its body a. Without a migration
        // the step's list here holds every pair of the new list's a; a body
        // that arrived by migration had its step contacts on its old rank:
        // those pairs are asked of every rank (agreed: rebuilds is global).
        let migrated = self.rebuilds != rebuilds;
        // A closed mesh pair that was closed at the step's start already, or
        // deeper than the step's displacements, is a projection, no owl.
        let projection = |k: usize| {
            new_list.gap[k] <= 0.0
                && self.mesh_pair(&new_list, k)
                && (new_list.gap[k] < -reach || self.closed_keys.contains(&new_list.key(k)))
        };
        let active: Vec<usize> = (0..new_list.len()).filter(|&k| new_list.gap[k] < gbar && !projection(k)).collect();
        let mut owls = Vec::new();
        if !active.is_empty() || migrated {
            let c = &self.contacts;
            let pairs: HashSet<(u64, u64)> = c.a.iter().copied().zip(c.b.iter().copied()).collect();
            let keys: HashSet<[u64; 4]> = (0..c.len()).map(|k| c.key(k)).collect();
            // The owl a contact is, given whether its pair / its key was listed.
            let classify = |k: usize, pair: bool, key: bool| {
                let (a, b, gap) = (new_list.a[k], new_list.b[k], new_list.gap[k]);
                let penetrating = !key && gap < floor;
                (!pair || penetrating).then_some(NightOwl { a, b, gap, new_pair: !pair, penetrating })
            };
            let mut ask = Vec::new();
            let mut arrived: Option<HashSet<u64>> = None;
            for k in active {
                let key = new_list.key(k);
                let (pair_listed, key_listed) = (pairs.contains(&(key[0], key[1])), keys.contains(&key));
                if key_listed || (pair_listed && new_list.gap[k] >= floor) {
                    continue;
                }
                let arrival = migrated && {
                    let arrived = arrived.get_or_insert_with(|| {
                        let here: HashSet<u64> = start.id.iter().copied().collect();
                        (0..self.layout.n_owned).map(|i| self.bodies.id[i]).filter(|id| !here.contains(id)).collect()
                    });
                    arrived.contains(&key[0])
                };
                if arrival {
                    ask.push((k, pair_listed));
                } else {
                    owls.extend(classify(k, pair_listed, false));
                }
            }
            if migrated {
                if !ask.is_empty() {
                    log::debug!("night-owl search: asking the other ranks about {} contact(s) of arrived bodies", ask.len());
                }
                let (me, size) = (self.comm.rank() as u64, self.comm.size() as usize);
                // Query: a | b, sub_a, sub_b, asking rank, index; answer: index, pair listed, key listed.
                let mut q = FlatRecords::new(5, 0);
                let mut dest = Vec::new();
                for (i, &(k, _)) in ask.iter().enumerate() {
                    let key = new_list.key(k);
                    for r in (0..size).filter(|&r| r as u64 != me) {
                        q.push(key[0], &[key[1], key[2], key[3], me, i as u64], &[]);
                        dest.push(r);
                    }
                }
                let got = send_to(self.comm, &q, &dest);
                let mut yes = FlatRecords::new(2, 0);
                let mut back = Vec::new();
                for k in 0..got.len() {
                    let u = got.u_row(k);
                    let key = [got.keys[k], u[0], u[1], u[2]];
                    let (pair, listed) = (pairs.contains(&(key[0], key[1])), keys.contains(&key));
                    if pair || listed {
                        yes.push(u[4], &[pair as u64, listed as u64], &[]);
                        back.push(u[3] as usize);
                    }
                }
                let yes = send_to(self.comm, &yes, &back);
                let mut seen: Vec<(bool, bool)> = ask.iter().map(|&(_, pair)| (pair, false)).collect();
                for k in 0..yes.len() {
                    let s = &mut seen[yes.keys[k] as usize];
                    s.0 |= yes.u_row(k)[0] != 0;
                    s.1 |= yes.u_row(k)[1] != 0;
                }
                owls.extend(ask.iter().zip(seen).filter_map(|(&(k, _), (pair, key))| classify(k, pair, key)));
            }
        }
        self.next = Some((new_list, new_fixed));
        owls
    }

    /// Back to the start of a DEM step (`start`: the owned bodies then) with
    /// contacts detected out to `distance`: neighbour lists rebuilt so the
    /// ghost halo reaches that far, then the normal distance again.
    fn roll_back(&mut self, start: &Bodies, distance: f64) {
        self.bodies = start.clone();
        self.layout.n_owned = start.len();
        self.next = None;
        let normal = self.params.contact_distance;
        self.params.contact_distance = distance;
        self.neighbours(true);
        self.detect();
        self.params.contact_distance = normal;
    }

    /// Contacts with their forces, for a frame.
    pub fn contact_records(&self) -> ContactRecords {
        let mut r = ContactRecords::new();
        for (k, c) in self.contacts.iter().enumerate() {
            r.push(ContactRecord {
                body_a: c.a,
                body_b: c.b,
                sub_a: c.sub_a,
                sub_b: c.sub_b,
                point: c.point,
                normal: c.normal,
                gap: c.gap,
                force_normal: self.forces.f_n.get(k).copied().unwrap_or(0.0),
                force_tangent: self.forces.f_t.get(k).copied().unwrap_or_else(Vector3::zeros),
                force_compatible: self.forces.f_compatible.get(k).copied().unwrap_or(0.0),
            });
        }
        r
    }

    /// Total contact force on every fixed body and wall, gathered on every
    /// rank, sorted by id. For compatible-cd the compatible normal forces
    /// (computed at the last step, an output step) replace the CD ones.
    pub fn reactions(&self) -> Vec<Reaction> {
        let mut local: BTreeMap<u64, Vector3<f64>> = BTreeMap::new();
        let normal = if self.scene.simulation.solver == SolverKind::CompatibleCd && !self.forces.f_compatible.is_empty() {
            &self.forces.f_compatible
        } else {
            &self.forces.f_n
        };
        for (k, c) in self.contacts.iter().enumerate() {
            let f = c.normal * normal.get(k).copied().unwrap_or(0.0)
                + self.forces.f_t.get(k).copied().unwrap_or_else(Vector3::zeros);
            let (fixed_a, fixed_b) = self.contact_fixed[k];
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
}

/// Picks the solver for the scene.
fn make_solver(scene: &Scene) -> Box<dyn Solver> {
    match scene.simulation.solver {
        SolverKind::Dem => Box::new(crate::dem::DemSolver::new()),
        SolverKind::Cd => Box::new(CdSolver::new()),
        SolverKind::CompatibleCd => Box::new(crate::compat::CompatibleCdSolver::new()),
    }
}

/// Runs the scene to t_end on every rank of `comm`. `bodies` is this rank's
/// share: its bodies from `startup::populate` for a fresh run, or its slab
/// of a checkpoint.
pub fn run(comm: &Comm, scene: &Scene, bodies: Bodies, opts: &RunOptions) -> Result<Summary, RunError> {
    let rank = comm.rank() as usize;
    let ranks = comm.size() as usize;
    let out_dir = scene.output.dir.clone();
    prepare_output(comm, &out_dir, opts)?;

    let mut sim = Sim::new(comm, scene, bodies, false);
    let n_global = parallel::sum_u64(comm, sim.n_owned() as u64);
    let mut solver = make_solver(scene);
    if opts.restart.is_some() {
        solver.restore_state(comm, opts.restart_state.clone());
    }

    let dt = scene.simulation.dt;
    let (first_step, t0_sim) = opts.restart.unwrap_or((0, 0.0));
    let steps = step_count(scene.simulation.t_end, dt);
    let mut thermo = Thermo::open(comm, &out_dir.join("log.txt"), opts.restart.is_some())?;
    let mut frames = match opts.restart {
        None => FrameWriter::create(comm, &out_dir, scene)?,
        Some((step, _)) => FrameWriter::append(comm, &out_dir, scene, step)?,
    };
    let wall0 = Instant::now();
    // DEM steps adapt Δt: say where the run ends, not a step count.
    let span = if scene.simulation.solver == SolverKind::Dem {
        format!("from step {} (t = {t0_sim:e}) to t = {:e}, dt ≤ {dt:e}", first_step + 1, scene.simulation.t_end)
    } else {
        format!("steps {}..{steps} of dt = {dt:e}", first_step + 1)
    };
    log::info!(
        "stiffgrain {}: {} bodies on {ranks} rank(s) ({}x{}x{} grid), solver {}, {span}",
        env!("CARGO_PKG_VERSION"),
        n_global,
        sim.domain.dims[0],
        sim.domain.dims[1],
        sim.domain.dims[2],
        scene.simulation.solver.name(),
    );
    sim.set_time(t0_sim);
    sim.detect();
    if opts.restart.is_none() {
        frames.write_frame(0, 0.0, dt, &sim.bodies, sim.n_owned(), &sim.contact_records())?;
    }
    log::info!("{}", Thermo::HEADER);
    let mut tally = StepTally::default();
    // Adaptive solvers may take shorter steps (report.dt): time advances by
    // the step taken, and the run ends at the time `steps` full steps reach.
    // After a restart of an adaptive (dem) run the step numbers no longer
    // count full steps: end at steps·dt (also when fewer steps remain).
    let t_final = match steps.checked_sub(first_step) {
        Some(n) if scene.simulation.solver != SolverKind::Dem => t0_sim + n as f64 * dt,
        _ => steps as f64 * dt,
    };
    let mut time = t0_sim;
    let mut uniform = true;
    let mut step = first_step;
    // DEM: a step found to miss night-owl contacts is redone (§2.6.3).
    let night_owls = scene.simulation.solver == SolverKind::Dem;
    while t_final - time > 1e-9 * dt {
        step += 1;
        let mut dt_try = dt.min(t_final - time);
        // DEM: a step ends exactly where a wall is removed (`until`).
        if night_owls {
            let tol = 1e-9 * dt;
            for w in scene.walls.iter().filter(|w| w.until > time + tol) {
                dt_try = dt_try.min(w.until - time);
            }
        }
        sim.set_time(time);
        if !sim.take_next() && step > first_step + 1 {
            sim.neighbours(false);
            sim.detect();
        }
        // Output after this step (a fixed-step run ends exactly at t_final).
        let output = t_final - (time + dt_try) <= 1e-9 * dt || (scene.output.every > 0 && step % scene.output.every == 0);
        // The start of the step, to redo it from (owned bodies, solver state).
        let mut start = night_owls.then(|| {
            let mut b = sim.bodies.clone();
            b.truncate(sim.n_owned());
            (b, solver.save_state())
        });
        let (mut redos, mut widened) = (0, 0);
        let mut distance = scene.contact.distance;
        // Iterations and rejections of the attempts redone, counted with the step's.
        let mut earlier = StepReport::default();
        let report = loop {
            if night_owls {
                sim.closed_pairs_dropped += sim.drop_closed_mesh_pairs() as u64;
            }
            let report = {
                let ctx = StepContext {
                    comm,
                    scene,
                    shapes: &sim.shapes,
                    layout: &sim.layout,
                    contacts: &sim.contacts,
                    step,
                    time,
                    dt: dt_try,
                    output,
                };
                let (bodies, forces) = (&mut sim.bodies, &mut sim.forces);
                sim.timers.time("solve", || solver.step(&ctx, bodies, forces))
            };
            let mut report = match report {
                Ok(r) => r,
                Err(e) => {
                    // The solver leaves the bodies at the start of the step: keep them.
                    let path = write_checkpoint(comm, scene, &sim, solver.as_ref(), step - 1, time, dt_try)?;
                    return Err(RunError::Solver {
                        step,
                        message: format!("{e}; the state before the step is in {}", path.display()),
                    });
                }
            };
            let bad: Vec<u64> = (0..sim.n_owned())
                .filter(|&i| {
                    !(sim.bodies.position[i].iter().all(|x| x.is_finite())
                        && sim.bodies.velocity[i].iter().all(|x| x.is_finite()))
                })
                .map(|i| sim.bodies.id[i])
                .collect();
            if !parallel::all_ok(comm, bad.is_empty()) {
                if !bad.is_empty() {
                    log::error!("step {step}: non-finite state of bodies {:?}", &bad[..bad.len().min(10)]);
                }
                return Err(RunError::Solver {
                    step,
                    message: "non-finite positions or velocities (earlier checkpoints are kept)".into(),
                });
            }
            report.iterations += earlier.iterations;
            report.linear_iterations += earlier.linear_iterations;
            report.rejected += earlier.rejected;
            let Some((start_bodies, start_state)) = start.as_mut() else { break report };
            // A gap changes by at most the two bodies' displacements.
            let reach = 2.0 * parallel::max_f64(comm, sim.largest_displacement(start_bodies));
            // The search finds the next step's contacts: walls as at its start.
            sim.set_time(time + report.dt);
            let floor = PENETRATION_FLOOR * scene.dem.f * scene.dem.gbar;
            let owls = sim.search_after_step(start_bodies, scene.dem.gbar, floor, reach);
            let count = |f: fn(&NightOwl) -> bool| parallel::sum_u64(comm, owls.iter().filter(|o| f(o)).count() as u64);
            let (n_owls, n_new, n_deep) = (count(|_| true), count(|o| o.new_pair), count(|o| o.penetrating));
            if n_owls == 0 {
                break report;
            }
            sim.night_owls += n_owls;
            let names = night_owl_names(comm, &owls);
            let halve = n_deep > 0 && 0.5 * report.dt >= scene.dem.dt_min;
            let widen = n_new > 0 && widened < MAX_NIGHT_OWL_REDOS;
            if !halve && !widen {
                if rank == 0 {
                    log::warn!("step {step}: night-owl contact(s) {names} remain after {redos} redos (dt = {:e}); step accepted", report.dt);
                }
                break report;
            }
            if widen {
                // The new pairs were within `reach` at the step's start.
                distance = distance.max(scene.contact.distance + 1.01 * reach);
                widened += 1;
            }
            if halve {
                dt_try = 0.5 * report.dt;
            }
            redos += 1;
            earlier = report;
            sim.night_owl_redos += 1;
            if rank == 0 {
                log::info!("step {step}: night-owl contact(s) {names}: redoing the step with contact distance {distance:.4e}, dt = {dt_try:e}");
            }
            solver.restore_state(comm, start_state.clone());
            sim.set_time(time);
            sim.roll_back(start_bodies, distance);
            // The roll-back migrated bodies that had drifted across a rank
            // boundary since the last rebuild: the redo starts from this
            // distribution (its contacts were detected in it).
            let mut owned = sim.bodies.clone();
            owned.truncate(sim.n_owned());
            *start_bodies = owned;
        };
        sim.timers.reassign("solve", "compatibility", report.compatibility_seconds);
        tally.add(&report);
        uniform &= report.dt == dt;
        // Uniform steps keep the exact t0 + n·dt of a fixed-step run.
        time = if uniform { t0_sim + (step - first_step) as f64 * dt } else { time + report.dt };
        let step_dt = report.dt;
        let last = t_final - time <= 1e-9 * dt;
        if last || (scene.output.every > 0 && step % scene.output.every == 0) {
            let recs = sim.contact_records();
            let (b, n) = (&sim.bodies, sim.n_owned());
            sim.timers.time("output", || frames.write_frame(step, time, step_dt, b, n, &recs))?;
        }
        if scene.output.checkpoint_every > 0 && step % scene.output.checkpoint_every == 0 {
            write_checkpoint(comm, scene, &sim, solver.as_ref(), step, time, step_dt)?;
        }
        if !parallel::all_ok(comm, !stop_requested()) {
            let path = write_checkpoint(comm, scene, &sim, solver.as_ref(), step, time, step_dt)?;
            if rank == 0 {
                println!(
                    "stopped by a signal after step {step} (t = {time:e}); resume with: stiffgrain restart {}",
                    path.display()
                );
            }
            return finish(comm, scene, &sim, first_step, step, time, n_global, tally, wall0, opts.startup_max_bodies);
        }
        if last || step % scene.output.thermo_every == 0 {
            let ke = parallel::sum_f64(comm, sim.bodies.kinetic_energy(sim.n_owned()));
            let n_contacts = parallel::sum_u64(comm, sim.contacts.len() as u64);
            let wall = wall0.elapsed().as_secs_f64();
            let eta = wall / (time - t0_sim) * (t_final - time);
            thermo.line(step, time, step_dt, n_global, n_contacts, ke, report.iterations, wall, eta)?;
        }
    }
    finish(comm, scene, &sim, first_step, step, time, n_global, tally, wall0, opts.startup_max_bodies)
}

/// Ends a run after `last_step`: reduces the timers over ranks, gathers the
/// reactions, writes summary.json and prints the phase table (rank 0).
#[allow(clippy::too_many_arguments)]
fn finish(
    comm: &Comm,
    scene: &Scene,
    sim: &Sim,
    first_step: u64,
    last_step: u64,
    time: f64,
    n_global: u64,
    tally: StepTally,
    wall0: Instant,
    startup_max_bodies: u64,
) -> Result<Summary, RunError> {
    let (rank, ranks) = (comm.rank() as usize, comm.size() as usize);
    let out_dir = &scene.output.dir;
    let wall_time = wall0.elapsed().as_secs_f64();
    let ke = parallel::sum_f64(comm, sim.bodies.kinetic_energy(sim.n_owned()));
    let reactions = sim.reactions();
    let mut phases = BTreeMap::new();
    for (name, secs) in sim.timers.iter() {
        let max = parallel::max_f64(comm, secs);
        let min = -parallel::max_f64(comm, -secs);
        let mean = parallel::sum_f64(comm, secs) / ranks as f64;
        phases.insert(name.to_string(), [min, mean, max]);
    }
    let peak_rss_mb = crate::parallel::memory::min_mean_max(comm, crate::parallel::memory::peak_rss() as f64 / 1e6);
    let startup_max_bodies = parallel::max_f64(comm, startup_max_bodies as f64) as u64;
    let summary = Summary {
        version: env!("CARGO_PKG_VERSION"),
        solver: scene.simulation.solver.name(),
        ranks,
        bodies: n_global,
        steps: last_step,
        time,
        contacts: parallel::sum_u64(comm, sim.contacts.len() as u64),
        night_owls: sim.night_owls,
        night_owl_redos: sim.night_owl_redos,
        closed_pairs_dropped: parallel::sum_u64(comm, sim.closed_pairs_dropped),
        candidate_pairs: parallel::sum_u64(comm, sim.candidate_pairs() as u64),
        rebuilds: sim.rebuilds,
        rebalances: sim.rebalances,
        kinetic_energy: ke,
        solver_iterations_total: tally.iterations_per_step.iter().sum(),
        linear_iterations_total: tally.linear_iterations,
        rejected_steps: tally.rejected,
        dt_taken: tally.dt_taken(),
        solver_iterations_per_step: tally.iterations_per_step,
        wall_time,
        phases,
        reactions,
        peak_rss_mb,
        startup_max_bodies,
    };
    if rank == 0 {
        write_json_atomically(&out_dir.join("summary.json"), &summary)
            .map_err(|e| RunError::Runtime(format!("{}: {e}", out_dir.join("summary.json").display())))?;
        log::info!("{:<16} {:>10} {:>10} {:>10}   (seconds over {ranks} rank(s))", "phase", "min", "mean", "max");
        for (name, [min, mean, max]) in &summary.phases {
            log::info!("{name:<16} {min:>10.3} {mean:>10.3} {max:>10.3}");
        }
        if summary.linear_iterations_total > 0 || summary.rejected_steps > 0 {
            let [lo, mean, hi] = summary.dt_taken;
            log::info!(
                "newton: {} iterations, ksp: {} iterations, {} rejected attempts; dt taken min {lo:e} mean {mean:e} max {hi:e}",
                summary.solver_iterations_total,
                summary.linear_iterations_total,
                summary.rejected_steps
            );
        }
        log::info!(
            "done: steps {}..{last_step} in {wall_time:.2} s ({} neighbour rebuilds); wrote {}",
            first_step + 1,
            sim.rebuilds,
            out_dir.display()
        );
    }
    Ok(summary)
}

/// The night owls of every rank as "a-b (gap g)" (walls as "wall w"), at
/// most ten, for rank 0's log line. Collective.
fn night_owl_names(comm: &Comm, owls: &[NightOwl]) -> String {
    let mut recs = FlatRecords::new(1, 1);
    for o in owls {
        recs.push(o.a, &[o.b], &[o.gap]);
    }
    let mut got = send_to(comm, &recs, &vec![0; recs.len()]);
    got.sort();
    let mut names: Vec<String> = (0..got.len().min(10))
        .map(|k| {
            let b = got.u_row(k)[0];
            let b = if b >= WALL_ID_BASE { format!("wall {}", b - WALL_ID_BASE) } else { b.to_string() };
            format!("{}-{b} (gap {:.3e})", got.keys[k], got.f_row(k)[0])
        })
        .collect();
    if got.len() > 10 {
        names.push(format!("and {} more", got.len() - 10));
    }
    names.join(", ")
}

/// Set by SIGTERM or SIGUSR1 (SLURM's warning before the time limit).
static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> = std::sync::OnceLock::new();

/// Installs the SIGTERM/SIGUSR1 handlers: the run checkpoints at the next
/// step boundary on every rank and exits 0.
pub fn install_signal_handlers() {
    let flag = STOP.get_or_init(Default::default).clone();
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGUSR1] {
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
}

fn stop_requested() -> bool {
    STOP.get().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

fn write_checkpoint(
    comm: &Comm,
    scene: &Scene,
    sim: &Sim,
    solver: &dyn Solver,
    step: u64,
    time: f64,
    dt: f64,
) -> Result<PathBuf, RunError> {
    let dir = &scene.output.dir;
    let path = io::checkpoint_path(dir, step);
    let extra = CheckpointExtra { history: solver.save_state() };
    io::write_checkpoint(comm, &path, step, time, dt, scene, &sim.bodies, sim.n_owned(), &extra)?;
    if comm.rank() == 0 {
        io::prune_checkpoints(dir, scene.output.checkpoint_keep)?;
        log::info!("checkpoint {}", path.display());
    }
    Ok(path)
}

fn write_json_atomically(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        serde_json::to_writer_pretty(&mut f, value)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(tmp, path)
}

/// Thermo lines: printed by rank 0 and appended to OUT/log.txt.
struct Thermo {
    file: Option<std::fs::File>,
}

impl Thermo {
    const HEADER: &'static str =
        "      step          time          dt    bodies  contacts  kinetic_energy  iters    wall[s]     left[s]";

    fn open(comm: &Comm, path: &PathBuf, append: bool) -> Result<Self, RunError> {
        let file = if comm.rank() == 0 {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(append)
                .write(true)
                .truncate(!append)
                .open(path)
                .map_err(|e| RunError::Runtime(format!("{}: cannot create: {e}", path.display())))?;
            let _ = writeln!(f, "{}", Self::HEADER);
            Some(f)
        } else {
            None
        };
        Ok(Self { file })
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        step: u64,
        time: f64,
        dt: f64,
        bodies: u64,
        contacts: u64,
        ke: f64,
        iters: u64,
        wall: f64,
        eta: f64,
    ) -> Result<(), RunError> {
        let s = format!(
            "{step:>10} {time:>13.6e} {dt:>11.4e} {bodies:>9} {contacts:>9} {ke:>15.8e} {iters:>6} {wall:>10.2} {eta:>11.2}"
        );
        log::info!("{s}");
        if let Some(f) = &mut self.file {
            writeln!(f, "{s}").and_then(|_| f.flush()).map_err(|e| RunError::Runtime(format!("log.txt: {e}")))?;
        }
        Ok(())
    }
}
