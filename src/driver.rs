//! The time loop (ARCHITECTURE.md "One time step"): neighbours (migrate,
//! ghosts) → contacts → solver step → the solver's review → output →
//! checkpoint, each stage timed as a phase; thermo lines and the summary.
//! The loop knows the physics only through the [`Solver`] trait.
use crate::body::Bodies;
use crate::contact::WALL_ID_BASE;
use crate::io::{self, FlatRecords, FrameWriter, IoError, SolverState};
use crate::logging::num;
use crate::parallel::domain::Domain;
use crate::parallel::{self, Comm};
use crate::scene::{Scene, STATIC_STEPS};
use crate::registry::make_solver;
use crate::solver::{Review, Solver, SolverError, StepReport};
use crate::world::{Reaction, World};
use mpi::traits::*;
use std::collections::BTreeMap;
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
    /// `agreed`: every rank holds the same error (printed once).
    #[error("step {step}: {message}")]
    Solver { step: u64, message: String, agreed: bool },
    #[error("{0}")]
    Runtime(String),
    /// A signal arrived inside a step: the step was abandoned and the state
    /// before it checkpointed (handled by `run`, never returned from it).
    #[error("stopped by a signal inside step {}", step + 1)]
    Interrupted { step: u64, time: f64, path: PathBuf },
}

impl RunError {
    /// Every rank holds this same error: rank 0 alone reports it.
    pub fn agreed(&self) -> bool {
        match self {
            RunError::Input(_) | RunError::Io(_) | RunError::Interrupted { .. } => true,
            RunError::Solver { agreed, .. } => *agreed,
            RunError::Runtime(_) => false,
        }
    }

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
    /// The solver's state from the checkpoint (this rank's slab).
    pub restart_state: SolverState,
    /// The World's part of the checkpoint (this rank's slab of the history
    /// tables; the decomposition, taken when the rank count is the same).
    pub restart_world: io::WorldState,
    /// The decomposition the bodies are placed in (start-up's, or the
    /// checkpoint's on the same rank count).
    pub domain: Option<Domain>,
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
    /// The run stopped at rest (`simulation.until_static`) before t_end.
    pub reached_static: bool,
    pub contacts: u64,
    /// Candidate pairs in the Verlet lists at the end (all ranks).
    pub candidate_pairs: u64,
    /// The first step the tallies below cover: 1, unless the run was
    /// restarted from a checkpoint that did not keep them.
    pub tallies_from_step: u64,
    /// Neighbour-list rebuilds (migrate + ghosts + Verlet) and RCB rebalances.
    pub rebuilds: u64,
    pub rebalances: u64,
    /// Bodies that changed rank (migrations, all ranks).
    pub bodies_migrated: u64,
    /// Load per rank at the end, [min, mean, max]: owned bodies, and the
    /// work RCB balances (owned bodies + the contacts each rank owns).
    pub owned_bodies: [f64; 3],
    pub work_per_rank: [f64; 3],
    pub kinetic_energy: f64,
    pub solver_iterations_total: u64,
    pub solver_iterations_per_step: Vec<u64>,
    /// Per step, the complementarity residual its contact solve ended at
    /// (cd and compatible-cd; null under the DEM).
    pub solver_residual_per_step: Vec<Option<f64>>,
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
    /// The walls at the end: id (2^63 + index), point (moving walls move), removed.
    pub walls: Vec<WallState>,
    /// The lab measurements at the end (`[measure]`; the guide's "Lab tests").
    pub measures: crate::lab::Measures,
    /// A Lees–Edwards run's steady state: stress ratio and solid fraction
    /// {mean, std} over the frames of the second half of the strain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::lab::Steady>,
    /// Peak resident memory (VmHWM) per rank in MB: [min, mean, max].
    pub peak_rss_mb: [f64; 3],
    /// Largest number of bodies any rank held at once during start-up.
    pub startup_max_bodies: u64,
    /// The run stopped on a signal (SIGUSR1, SIGTERM) before its end.
    pub interrupted: bool,
    /// When interrupted: the checkpoint it wrote, to continue with
    /// `stiffgrain restart <resume_from>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_from: Option<PathBuf>,
    /// The solver's own counters (dem: night_owls, night_owl_redos,
    /// closed_pairs_dropped), as top-level keys.
    #[serde(flatten)]
    pub solver_stats: serde_json::Map<String, serde_json::Value>,
}

/// A wall at the end of a run, for summary.json.
#[derive(Debug, serde::Serialize)]
pub struct WallState {
    pub id: u64,
    pub point: [f64; 3],
    pub removed: bool,
}

/// What the steps of a run reported, for summary.json: this start's steps
/// and what the earlier starts of the run (before the checkpoint it
/// restarted from) added up to, so that summary.json covers the whole run.
/// Checkpoints keep the tallies as two tables next to the World's
/// (`RUN_STEPS_TABLE`, `RUN_TOTALS_TABLE`).
#[derive(Debug)]
struct StepTally {
    /// The number of the first step held below.
    first_step: u64,
    /// Per step: solver iterations, Δt taken and the solve's residual (NaN
    /// for none); earlier starts' first.
    iterations_per_step: Vec<u64>,
    dt_per_step: Vec<f64>,
    residual_per_step: Vec<f64>,
    linear_iterations: u64,
    rejected: u64,
    /// This start's wall clock.
    start: Instant,
    /// Earlier starts: wall time, rebuilds, rebalances, bodies migrated,
    /// and per phase [min, mean, max] seconds over ranks (rank 0's copy).
    earlier_wall: f64,
    earlier_counts: [u64; 3],
    earlier_phases: BTreeMap<String, [f64; 3]>,
    /// Earlier starts' solver counters (its summary's integers), by key.
    earlier_solver: BTreeMap<u64, u64>,
    /// The clock after the last step: [uniform, origin step, origin time,
    /// Δt] (checkpointed: a restart counts time as the run did).
    clock: [f64; 4],
    /// The checkpoint's clock (rank 0's copy).
    earlier_clock: Option<[f64; 4]>,
}

/// Checkpoint table of the steps so far: key step, u = [iterations],
/// f = [Δt, residual].
const RUN_STEPS_TABLE: &str = "run_steps";
/// Checkpoint table of the run's totals so far, key → f = [value, ...]:
/// 0 wall time, 1 linear iterations, 2 rejected attempts, 3 rebuilds,
/// 4 rebalances, 5 bodies migrated, 6 the clock's [uniform, origin step,
/// origin time] and 7 its [Δt, 0, 0]; a phase at `PHASE_KEY | hash(name)`
/// with f = [min, mean, max]; a counter of the solver's summary (an
/// integer: night owls, unconverged steps, ...) at `SOLVER_KEY |
/// hash(name)` with f = [value, 0, 0].
const RUN_TOTALS_TABLE: &str = "run_totals";
const PHASE_KEY: u64 = 1 << 63;
const SOLVER_KEY: u64 = 1 << 62;

/// FNV-1a of a name.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// A phase name's key in `RUN_TOTALS_TABLE` (bit 63 set).
fn phase_key(name: &str) -> u64 {
    PHASE_KEY | (name_hash(name) >> 1)
}

/// A solver counter's key in `RUN_TOTALS_TABLE` (bit 63 clear, bit 62 set).
fn solver_key(name: &str) -> u64 {
    SOLVER_KEY | (name_hash(name) >> 2)
}

impl StepTally {
    fn new(first_step: u64) -> Self {
        Self {
            first_step,
            iterations_per_step: Vec::new(),
            dt_per_step: Vec::new(),
            residual_per_step: Vec::new(),
            linear_iterations: 0,
            rejected: 0,
            start: Instant::now(),
            earlier_wall: 0.0,
            earlier_counts: [0; 3],
            earlier_phases: BTreeMap::new(),
            earlier_solver: BTreeMap::new(),
            clock: [f64::NAN; 4],
            earlier_clock: None,
        }
    }

    /// The solver's summary with its counters over the whole run: this
    /// start's plus the earlier starts'. Collective.
    fn solver_summary(&self, world: &World, solver: &dyn Solver) -> serde_json::Map<String, serde_json::Value> {
        let mut m = solver.summary(world.comm());
        for (name, v) in m.iter_mut() {
            if let (Some(n), Some(e)) = (v.as_u64(), self.earlier_solver.get(&solver_key(name))) {
                *v = (n + e).into();
            }
        }
        m
    }

    fn add(&mut self, r: &StepReport) {
        self.iterations_per_step.push(r.iterations);
        self.dt_per_step.push(r.dt);
        self.residual_per_step.push(r.residual.unwrap_or(f64::NAN));
        self.linear_iterations += r.linear_iterations;
        self.rejected += r.rejected;
    }

    fn dt_taken(&self) -> [f64; 3] {
        let d = &self.dt_per_step;
        if d.is_empty() {
            return [0.0; 3];
        }
        let (lo, hi) = d.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        [lo, d.iter().sum::<f64>() / d.len() as f64, hi]
    }

    /// The whole run's wall time, counters and phases so far (collective).
    fn totals(&self, world: &World) -> (f64, [u64; 3], BTreeMap<String, [f64; 3]>) {
        let comm = world.comm();
        let ranks = comm.size() as f64;
        let mut phases = BTreeMap::new();
        for (name, secs) in world.timers().iter() {
            let max = parallel::max_f64(comm, secs);
            let min = -parallel::max_f64(comm, -secs);
            let mean = parallel::sum_f64(comm, secs) / ranks;
            // Earlier starts' [min, mean, max] add up as such: the mean is
            // exact, min and max bound the whole run's per-rank extremes.
            let e = self.earlier_phases.get(name).copied().unwrap_or([0.0; 3]);
            phases.insert(name.to_string(), [min + e[0], mean + e[1], max + e[2]]);
        }
        let migrated = parallel::sum_u64(comm, world.migrated());
        let [r, b, m] = self.earlier_counts;
        let counts = [r + world.rebuilds(), b + world.rebalances(), m + migrated];
        (self.earlier_wall + self.start.elapsed().as_secs_f64(), counts, phases)
    }

    /// The tallies as checkpoint tables: filled on rank 0, empty elsewhere
    /// (the checkpoint spreads them). Collective.
    fn tables(&self, world: &World, solver: &dyn Solver) -> [(String, FlatRecords); 2] {
        let (wall, [rebuilds, rebalances, migrated], phases) = self.totals(world);
        let counters = self.solver_summary(world, solver);
        let mut steps = FlatRecords::new(1, 2);
        let mut totals = FlatRecords::new(0, 3);
        if world.comm().rank() == 0 {
            for (k, ((&it, &dt), &r)) in self.iterations_per_step.iter().zip(&self.dt_per_step).zip(&self.residual_per_step).enumerate() {
                steps.push(self.first_step + k as u64, &[it], &[dt, r]);
            }
            let scalars = [wall, self.linear_iterations as f64, self.rejected as f64, rebuilds as f64, rebalances as f64, migrated as f64];
            for (k, v) in scalars.into_iter().enumerate() {
                totals.push(k as u64, &[], &[v, 0.0, 0.0]);
            }
            let c = self.clock;
            totals.push(6, &[], &c[..3]);
            totals.push(7, &[], &[c[3], 0.0, 0.0]);
            for (name, v) in &phases {
                totals.push(phase_key(name), &[], v);
            }
            for (name, v) in &counters {
                if let Some(n) = v.as_u64() {
                    totals.push(solver_key(name), &[], &[n as f64, 0.0, 0.0]);
                }
            }
        }
        [(RUN_STEPS_TABLE.to_string(), steps), (RUN_TOTALS_TABLE.to_string(), totals)]
    }

    /// The checkpoint's clock (rank 0's), on every rank. Collective.
    fn earlier_clock(&self, comm: &Comm) -> Option<[f64; 4]> {
        let mine = self.earlier_clock.filter(|c| c.iter().all(|x| x.is_finite()));
        parallel::record_from_any_rank(comm, mine.as_ref().map(|c| &c[..]), 4).map(|v| [v[0], v[1], v[2], v[3]])
    }

    /// The earlier starts' solver counters (rank 0's), on every rank.
    /// Collective.
    fn earlier_solver_counters(&self, comm: &Comm) -> BTreeMap<u64, u64> {
        let mut text = self.earlier_solver.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join("\n");
        parallel::broadcast_string(comm, &mut text);
        text.lines().filter_map(|l| l.split_once(' ')).filter_map(|(k, v)| Some((k.parse().ok()?, v.parse().ok()?))).collect()
    }

    /// Takes the earlier starts' tallies from a checkpoint's tables (each
    /// rank holds a slab) to rank 0. Without them (a checkpoint from before
    /// they were kept) the tallies start at the checkpoint. Collective.
    fn adopt(&mut self, world: &World, tables: &[(String, FlatRecords)], checkpoint_step: u64) {
        let comm = world.comm();
        let to_root = |name: &str, n_u: usize| {
            let t = tables.iter().find(|(n, t)| n == name && t.n_u == n_u).map(|(_, t)| t).cloned().unwrap_or_else(|| FlatRecords::new(n_u, if n_u == 1 { 2 } else { 3 }));
            crate::parallel::records::send_to(comm, &t, &vec![0; t.len()])
        };
        let (steps, totals) = (to_root(RUN_STEPS_TABLE, 1), to_root(RUN_TOTALS_TABLE, 0));
        let mut order: Vec<usize> = (0..steps.len()).filter(|&i| steps.keys[i] <= checkpoint_step).collect();
        order.sort_by_key(|&i| steps.keys[i]);
        // Only a complete run of steps ending at the checkpoint counts.
        let first = order.first().map_or(checkpoint_step + 1, |&i| steps.keys[i]);
        if order.len() as u64 != checkpoint_step + 1 - first {
            return;
        }
        self.first_step = first;
        self.iterations_per_step = order.iter().map(|&i| steps.u_row(i)[0]).collect();
        self.dt_per_step = order.iter().map(|&i| steps.f_row(i)[0]).collect();
        self.residual_per_step = order.iter().map(|&i| steps.f_row(i).get(1).copied().unwrap_or(f64::NAN)).collect();
        let names: Vec<&str> = world.timers().iter().map(|(n, _)| n).collect();
        for i in 0..totals.len() {
            let (k, f) = (totals.keys[i], totals.f_row(i));
            match k {
                0 => self.earlier_wall = f[0],
                1 => self.linear_iterations = f[0] as u64,
                2 => self.rejected = f[0] as u64,
                3..=5 => self.earlier_counts[k as usize - 3] = f[0] as u64,
                6 => self.earlier_clock.get_or_insert([f64::NAN; 4])[..3].copy_from_slice(&f[..3]),
                7 => self.earlier_clock.get_or_insert([f64::NAN; 4])[3] = f[0],
                _ if k & PHASE_KEY == 0 && k & SOLVER_KEY != 0 => {
                    self.earlier_solver.insert(k, f[0] as u64);
                }
                _ => {
                    if let Some(n) = names.iter().find(|n| phase_key(n) == k) {
                        self.earlier_phases.insert(n.to_string(), [f[0], f[1], f[2]]);
                    }
                }
            }
        }
    }
}

/// Number of steps to reach `t_end` (a last partial step is not taken).
pub fn step_count(t_end: f64, dt: f64) -> u64 {
    ((t_end / dt) * (1.0 + 1e-12)).floor() as u64
}

/// Creates the directory and locks it for this run (rank 0 holds the lock
/// until the run ends); refuses a second run into it, an earlier run's
/// frames unless asked to overwrite, and a restart into the frames of
/// another run.
fn prepare_output(comm: &Comm, scene: &Scene, opts: &RunOptions) -> Result<Option<io::lock::DirLock>, RunError> {
    let dir = &scene.output.dir;
    let mut msg = String::new();
    let mut lock = None;
    if comm.rank() == 0 {
        let frames = dir.join("frames.h5");
        let earlier = || frames.exists() && !opts.overwrite && opts.restart.is_none();
        let refuse = || format!("output.dir: {} already holds a run (frames.h5); choose another output.dir or pass --overwrite", dir.display());
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        if earlier() {
            // Refused before the lock file is made: nothing is added there.
            msg = refuse();
        } else if let Err(e) = std::fs::create_dir_all(dir) {
            msg = format!("output.dir: cannot create {}: {e}", dir.display());
        } else {
            match io::lock::lock_dir(dir, &io::lock::holder(&command)) {
                Err(e) => msg = e.to_string(),
                Ok(l) => lock = Some(l),
            }
        }
        // Again under the lock: a run may have ended there in between.
        if msg.is_empty() && earlier() {
            msg = refuse();
        } else if msg.is_empty() && opts.restart.is_some() && frames.exists() {
            // A damaged or older file names no run: its frames are salvaged.
            if let Some(id) = io::checkpoint::stored_run_id(&frames).filter(|id| !id.is_empty() && !scene.run_id.is_empty()) {
                if id != scene.run_id {
                    msg = format!(
                        "restart: {} belongs to another run (run {id}) than the checkpoint (run {}); restart into another output.dir with --set output.dir=DIR",
                        frames.display(),
                        scene.run_id
                    );
                }
            }
        }
    }
    parallel::broadcast_string(comm, &mut msg);
    if msg.is_empty() {
        Ok(lock)
    } else {
        Err(RunError::Input(msg))
    }
}

/// A new run's identity (rank 0's, broadcast): stored in frames.h5 and in
/// each checkpoint, so a restart knows the frames it continues and pruning
/// removes only its own run's checkpoints.
pub fn new_run_id(comm: &Comm, scene: &Scene) -> String {
    use std::hash::{Hash, Hasher};
    let mut id = String::new();
    if comm.rank() == 0 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        scene.config_text.hash(&mut h);
        std::process::id().hash(&mut h);
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0).hash(&mut h);
        id = format!("{:016x}", h.finish());
    }
    parallel::broadcast_string(comm, &mut id);
    id
}

/// Where a run is in time: the step, the time, where it ends, and whether
/// it has come to rest (`until_static`).
struct Clock {
    dt: f64,
    first_step: u64,
    t0: f64,
    t_final: f64,
    step: u64,
    time: f64,
    /// Every step so far had the full Δt: time stays the exact
    /// origin time + n·Δt.
    uniform: bool,
    /// (step, time) the uniform time is counted from: step 0 when the run
    /// (or the run a checkpoint continues) was uniform from its start, so
    /// a restart computes the very times the run would have.
    origin: (u64, f64),
    /// Consecutive steps that ended with every body slower than `until_static`.
    quiet: u64,
}

impl Clock {
    /// `earlier`: the checkpoint's clock ([`StepTally::clock`]), taken
    /// when the restart keeps its Δt.
    fn new(scene: &Scene, restart: Option<(u64, f64)>, adaptive: bool, earlier: Option<[f64; 4]>) -> Self {
        let dt = scene.simulation.dt;
        let (first_step, t0) = restart.unwrap_or((0, 0.0));
        let t_end = scene.simulation.t_end;
        let steps = step_count(t_end, dt);
        let from_zero = t0.to_bits() == (first_step as f64 * dt).to_bits();
        // An adaptive run's step numbers do not count full steps: after a
        // restart it ends at steps·Δt (also when fewer steps remain). A
        // fixed-Δt run that continues one with another Δt, or one that
        // adapted its Δt, counts its whole steps from where it starts.
        let t_final = match steps.checked_sub(first_step) {
            Some(n) if !adaptive && from_zero => t0 + n as f64 * dt,
            _ if !adaptive && !from_zero && t_end > t0 => t0 + step_count(t_end - t0, dt) as f64 * dt,
            _ => steps as f64 * dt,
        };
        let origin = if from_zero { (0, 0.0) } else { (first_step, t0) };
        // An adaptive run that took a shorter step adds up its time from there.
        let (uniform, origin) = match earlier {
            Some([u, step, time, d]) if d.to_bits() == dt.to_bits() => (u != 0.0, (step as u64, time)),
            _ => (true, origin),
        };
        Self { dt, first_step, t0, t_final, step: first_step, time: t0, uniform, origin, quiet: 0 }
    }

    /// What a checkpoint keeps of the clock ([`StepTally::clock`]).
    fn snapshot(&self) -> [f64; 4] {
        [if self.uniform { 1.0 } else { 0.0 }, self.origin.0 as f64, self.origin.1, self.dt]
    }

    fn at_end(&self) -> bool {
        self.t_final - self.time <= 1e-9 * self.dt || self.quiet >= STATIC_STEPS
    }

    /// Advances by the step taken.
    fn advance(&mut self, dt_taken: f64) {
        self.uniform &= dt_taken == self.dt;
        self.time = if self.uniform { self.origin.1 + (self.step - self.origin.0) as f64 * self.dt } else { self.time + dt_taken };
    }
}

/// Runs the scene to t_end (or until static) on every rank of `comm`.
/// `bodies` is this rank's share: its bodies from `startup::populate` for a
/// fresh run, or its slab of a checkpoint.
pub fn run(comm: &Comm, scene: &Scene, bodies: Bodies, opts: &RunOptions) -> Result<Summary, RunError> {
    let out_dir = &scene.output.dir;
    let _lock = prepare_output(comm, scene, opts)?;
    let mut solver = make_solver(scene);
    // A checkpoint's own decomposition is kept as it is (an exact restart).
    let rebalance = opts.restart.is_none() || opts.domain.is_none();
    let restart_world = opts.restart.map(|_| &opts.restart_world);
    let mut world = World::new(comm, scene, bodies, opts.domain.clone(), rebalance, &solver.history(), opts.restart.map_or(0.0, |(_, t)| t), restart_world);
    let n_global = parallel::sum_u64(comm, world.n_owned() as u64);
    solver.phases().iter().for_each(|p| world.add_phase(p));
    let mut tally = StepTally::new(opts.restart.map_or(1, |(step, _)| step + 1));
    if let Some((step, _)) = opts.restart {
        solver.restore(comm, opts.restart_state.clone()).map_err(|e| RunError::Input(format!("checkpoint: {e}")))?;
        world.restore(&opts.restart_world);
        tally.adopt(&world, &opts.restart_world.history, step);
        let earlier = tally.earlier_solver_counters(comm);
        solver.resume_counters(&|name| earlier.get(&solver_key(name)).copied().unwrap_or(0));
    }
    let earlier_clock = if opts.restart.is_some() { tally.earlier_clock(comm) } else { None };
    let mut clock = Clock::new(scene, opts.restart, solver.adaptive(), earlier_clock);
    tally.clock = clock.snapshot();
    if opts.restart.is_none() {
        // Frame 0's contacts; before any output is written, so that a
        // refused start leaves none.
        world.set_time(clock.time);
        world.detect();
        check_start_overlaps(&world)?;
    }
    let mut thermo = Thermo::open(comm, out_dir, opts.restart.map(|(step, _)| step), scene.output.thermo_seconds, scene.walls.len())?;
    let mut frames = match opts.restart {
        None => FrameWriter::create(comm, out_dir, scene)?,
        Some((step, _)) => FrameWriter::append(comm, out_dir, scene, step)?,
    };
    let wall0 = Instant::now();
    log::info!("{}", start_line(scene, &world, &clock, n_global, solver.adaptive()));
    world.set_time(clock.time);
    if opts.restart.is_none() {
        let table = world.contact_table(&solver.contact_fields(world.contacts()));
        let row = series_row(&world, solver.as_ref(), 0, 0.0, clock.dt);
        frames.set_walls(world.walls());
        frames.set_periodic(world.scene().periodic.as_ref());
        frames.write_frame_and_series(0, 0.0, clock.dt, world.bodies(), world.n_owned(), table, Some(&row))?;
    }
    log::info!("{}", Thermo::HEADER);
    let mut resume_from = None;
    let every = |n: u64, step: u64| n > 0 && step % n == 0;
    while !clock.at_end() {
        clock.step += 1;
        let (step, time) = (clock.step, clock.time);
        world.set_time(time);
        // The first step of a fresh run uses the contacts of frame 0; a
        // restart's first step starts as the run's next step would have.
        if step > 1 || opts.restart.is_some() {
            world.update_contacts();
        }
        if solver.rolls_back() {
            world.begin_step();
        }
        // What is left of the run, but the full Δt when that is Δt up to
        // rounding: a run extended from its end then continues bit for bit
        // as one longer run would have.
        let left = clock.t_final - time;
        let plan = solver.begin_step(&world, time, if left >= clock.dt * (1.0 - 1e-9) { clock.dt } else { left }, 0);
        world.drop_contacts(&plan.drop);
        // Output after this step: the run's last, every n-th, or possibly the last quiet one.
        let maybe_static = scene.simulation.until_static.is_some() && clock.quiet + 1 >= STATIC_STEPS;
        let output = clock.t_final - (time + plan.dt) <= 1e-9 * clock.dt || every(scene.output.every, step) || maybe_static;
        let report = match take_step(&mut world, solver.as_mut(), &tally, step, time, plan.dt, output) {
            Err(RunError::Interrupted { step, time, path }) => {
                (clock.step, clock.time) = (step, time);
                if comm.rank() == 0 {
                    println!("stopped by a signal inside step {} (at t = {}); resume with: stiffgrain restart {}", step + 1, num(time), path.display());
                }
                resume_from = Some(path);
                break;
            }
            r => r?,
        };
        for &(name, secs) in &report.phases {
            world.timers().reassign("solve", name, secs);
        }
        tally.add(&report);
        clock.advance(report.dt);
        tally.clock = clock.snapshot();
        world.control_walls(solver.reported_forces(), clock.time);
        world.control_cell(solver.reported_forces(), clock.time);
        if let Some(v) = scene.simulation.until_static {
            clock.quiet = if largest_speed(&world) < v { clock.quiet + 1 } else { 0 };
        }
        let last = clock.at_end();
        if last || every(scene.output.every, step) {
            let table = world.contact_table(&solver.contact_fields(world.contacts()));
            let row = series_row(&world, solver.as_ref(), step, clock.time, report.dt);
            let (b, n, time) = (world.bodies(), world.n_owned(), clock.time);
            frames.set_walls(world.walls());
            frames.set_periodic(world.scene().periodic.as_ref());
            world.timers().time("output", || frames.write_frame_and_series(step, time, report.dt, b, n, table, Some(&row)))?;
        }
        if every(scene.output.checkpoint_every, step) || (last && scene.output.checkpoint_at_end) {
            write_checkpoint(&world, solver.as_ref(), &tally, step, clock.time, report.dt)?;
        }
        // A signal after the last step changes nothing: the run is complete.
        if !last && parallel::signals::agreed(comm) {
            let path = write_checkpoint(&world, solver.as_ref(), &tally, step, clock.time, report.dt)?;
            if comm.rank() == 0 {
                println!("stopped by a signal after step {step} (t = {}); resume with: stiffgrain restart {}", num(clock.time), path.display());
            }
            resume_from = Some(path);
            break;
        }
        if last || every(scene.output.thermo_every, step) || thermo.overdue(comm) {
            let wall = wall0.elapsed().as_secs_f64();
            let eta = wall / (clock.time - clock.t0) * (clock.t_final - clock.time);
            let row = series_row(&world, solver.as_ref(), step, clock.time, report.dt);
            thermo.line(&row, n_global, report.iterations, wall, eta)?;
        }
    }
    frames.close()?;
    if clock.quiet >= STATIC_STEPS && comm.rank() == 0 {
        log::info!("static: every body slower than {} m/s for {STATIC_STEPS} steps at t = {}", num(scene.simulation.until_static.unwrap_or(0.0)), num(clock.time));
    }
    finish(&world, solver.as_ref(), &clock, n_global, tally, resume_from, opts.startup_max_bodies)
}

/// The run's first line: what runs where, and until when.
fn start_line(scene: &Scene, world: &World, clock: &Clock, n_global: u64, adaptive: bool) -> String {
    let dt = clock.dt;
    let span = if adaptive {
        format!("from step {} (t = {}) to t = {}, dt ≤ {}", clock.first_step + 1, num(clock.t0), num(scene.simulation.t_end), num(dt))
    } else {
        format!("steps {}..{} of dt = {}", clock.first_step + 1, clock.first_step + ((clock.t_final - clock.t0) / dt).round().max(0.0) as u64, num(dt))
    };
    let until = scene.simulation.until_static.map(|v| format!(" or until static (speeds < {} m/s)", num(v))).unwrap_or_default();
    let d = &world.domain().dims;
    let ranks = world.comm().size();
    // A rank grid, or the RCB cuts a rebalanced start (or restart) uses instead.
    let layout = if d.contains(&0) { "RCB cuts".to_string() } else { format!("{}x{}x{} grid", d[0], d[1], d[2]) };
    format!(
        "stiffgrain {}: {n_global} bod{} on {ranks} rank{} ({layout}), solver {}, {span}{until}",
        env!("CARGO_PKG_VERSION"),
        if n_global == 1 { "y" } else { "ies" },
        if ranks == 1 { "" } else { "s" },
        scene.simulation.solver.name(),
    )
}

/// One step from `time`: the solver's attempts until its review accepts
/// one; between attempts the World carries out the solver's requests (the
/// search at an attempt's end, the roll-back of a redo). A failed attempt
/// leaves the bodies at the step's start: they are checkpointed and the
/// run stops.
fn take_step(
    world: &mut World,
    solver: &mut dyn Solver,
    tally: &StepTally,
    step: u64,
    time: f64,
    mut dt: f64,
    output: bool,
) -> Result<StepReport, RunError> {
    let mut earlier = StepReport::default();
    let (mut attempt, mut rolled_back) = (0, false);
    loop {
        if rolled_back {
            let plan = solver.begin_step(world, time, dt, attempt);
            world.drop_contacts(&plan.drop);
            dt = plan.dt;
        }
        let mut report = match world.attempt((step, time, dt, output), |ctx, bodies, forces, history| solver.step(ctx, bodies, forces, history)) {
            Ok(r) => r,
            Err(e) => {
                let path = write_checkpoint(world, solver, tally, step - 1, time, dt)?;
                if matches!(e, SolverError::Interrupted) {
                    return Err(RunError::Interrupted { step: step - 1, time, path });
                }
                let message = format!("{e}; the state before the step is in {}", path.display());
                // Every rank wrote the checkpoint, so every rank holds an
                // error (a PETSc error in a collective solve is raised on
                // each): the same text everywhere is printed once.
                let mut first = message.clone();
                crate::parallel::broadcast_string(world.comm(), &mut first);
                let same = crate::parallel::all_ok(world.comm(), first == message);
                let agreed = same || matches!(e, SolverError::SmallestStep { .. } | SolverError::NonFinite { .. } | SolverError::NotConverged { .. });
                return Err(RunError::Solver { step, message, agreed });
            }
        };
        report.absorb(&earlier);
        if let Some(retry) = report.retry.take() {
            (dt, earlier, rolled_back) = (retry, report, false);
            attempt += 1;
            continue;
        }
        check_finite(world, step)?;
        if let Some(search) = solver.search(world, time, &report) {
            world.set_time(time + report.dt);
            world.search(search);
        }
        match solver.review(world, time, &report) {
            Review::Accept => return Ok(report),
            Review::Redo { dt: redo, distance } => {
                world.set_time(time);
                world.roll_back(distance);
                (dt, earlier, rolled_back) = (redo, report, true);
                attempt += 1;
            }
        }
    }
}

/// Refuses a start where two spheres overlap by more than
/// `simulation.start_overlap` of the smaller radius (collective). Start-up checked
/// each rank's bodies among themselves; this also sees pairs on two ranks.
fn check_start_overlaps(world: &World) -> Result<(), RunError> {
    let (b, c, scene) = (world.bodies(), world.contacts(), world.scene());
    let radius = |i: usize| match scene.shapes[b.shape[i] as usize] {
        crate::body::Shape::Sphere { radius } => Some(radius),
        crate::body::Shape::Mesh(_) => None,
    };
    let bad = (0..c.len()).find_map(|k| {
        let (ia, ib) = (c.ia[k], c.ib[k]);
        if ib == crate::contact::WALL_INDEX || (b.fixed[ia] && b.fixed[ib]) {
            return None;
        }
        let r = radius(ia)?.min(radius(ib)?);
        (c.gap[k] < -scene.simulation.start_overlap * r).then(|| format!("bodies {} and {} overlap by {:.3e} m at the start ({})", c.a[k], c.b[k], -c.gap[k], scene.simulation.overlap_hint()))
    });
    // The lowest rank with an overlap names it.
    parallel::first_message(world.comm(), bad).map_or(Ok(()), |m| Err(RunError::Input(m)))
}

/// Stops the run (on every rank) when an owned body's state or the kinetic
/// energy is not finite, naming the lowest such body id and the step.
fn check_finite(world: &World, step: u64) -> Result<(), RunError> {
    let b = world.bodies();
    let finite = |i: usize| b.position[i].iter().chain(&b.velocity[i]).chain(&b.angular_velocity[i]).all(|x| x.is_finite());
    let bad = (0..world.n_owned()).filter(|&i| !finite(i)).map(|i| b.id[i]).min();
    let what = match parallel::first_id(world.comm(), bad) {
        Some(id) => format!("non-finite position or velocity of body {id}"),
        None if !world.kinetic_energy().is_finite() => "non-finite kinetic energy".to_string(),
        None => return Ok(()),
    };
    Err(RunError::Solver { step, message: format!("{what} (earlier checkpoints are kept)"), agreed: true })
}

/// The largest speed of a surface point over all bodies, |v| + |ω| times the
/// bounding radius (collective).
fn largest_speed(world: &World) -> f64 {
    let b = world.bodies();
    let local = (0..world.n_owned())
        .map(|i| b.velocity[i].norm() + b.angular_velocity[i].norm() * world.shapes().bounding_radius(b.shape[i]))
        .fold(0.0, f64::max);
    parallel::max_f64(world.comm(), local)
}

/// Ends a run: reduces the timers over ranks, gathers the reactions, writes
/// summary.json and prints the phase table (rank 0).
fn finish(
    world: &World,
    solver: &dyn Solver,
    clock: &Clock,
    n_global: u64,
    tally: StepTally,
    resume_from: Option<PathBuf>,
    startup_max_bodies: u64,
) -> Result<Summary, RunError> {
    let comm = world.comm();
    let (rank, ranks) = (comm.rank() as usize, comm.size() as usize);
    let out_dir = &world.scene().output.dir;
    // The whole run's: this start's and, on rank 0, the earlier starts'.
    let (wall_time, [rebuilds, rebalances, bodies_migrated], phases) = tally.totals(world);
    let peak_rss_mb = parallel::memory::min_mean_max(comm, parallel::memory::peak_rss() as f64 / 1e6);
    let startup_max_bodies = parallel::max_f64(comm, startup_max_bodies as f64) as u64;
    let solver_stats = tally.solver_summary(world, solver);
    let summary = Summary {
        version: env!("CARGO_PKG_VERSION"),
        solver: world.scene().simulation.solver.name(),
        ranks,
        bodies: n_global,
        steps: clock.step,
        time: clock.time,
        reached_static: clock.quiet >= STATIC_STEPS,
        contacts: parallel::sum_u64(comm, world.contacts().len() as u64),
        candidate_pairs: parallel::sum_u64(comm, world.candidate_pairs() as u64),
        tallies_from_step: tally.first_step,
        rebuilds,
        rebalances,
        bodies_migrated,
        owned_bodies: parallel::memory::min_mean_max(comm, world.n_owned() as f64),
        work_per_rank: parallel::memory::min_mean_max(comm, world.work().iter().sum()),
        kinetic_energy: world.kinetic_energy(),
        solver_iterations_total: tally.iterations_per_step.iter().sum(),
        linear_iterations_total: tally.linear_iterations,
        rejected_steps: tally.rejected,
        dt_taken: tally.dt_taken(),
        solver_iterations_per_step: tally.iterations_per_step,
        solver_residual_per_step: tally.residual_per_step.iter().map(|&r| r.is_finite().then_some(r)).collect(),
        wall_time,
        phases,
        reactions: world.reactions(solver.reported_forces()),
        measures: crate::lab::measure(world, solver.reported_forces(), clock.time),
        // Only rank 0 writes summary.json.
        steady: if rank == 0 { steady(world.scene(), clock.time) } else { None },
        walls: world
            .walls()
            .iter()
            .enumerate()
            .map(|(k, w)| {
                let p = w.position(clock.time);
                WallState { id: WALL_ID_BASE + k as u64, point: [p.x, p.y, p.z], removed: w.removed }
            })
            .collect(),
        peak_rss_mb,
        startup_max_bodies,
        interrupted: resume_from.is_some(),
        resume_from,
        solver_stats,
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
            "done: steps {}..{} in {:.2} s ({} neighbour rebuilds); wrote {}",
            clock.first_step + 1,
            clock.step,
            tally.start.elapsed().as_secs_f64(),
            world.rebuilds(),
            out_dir.display()
        );
    }
    Ok(summary)
}

/// A Lees–Edwards run's steady state from the frames (rank 0, after the
/// frames file is closed; None elsewhere and for other runs).
fn steady(scene: &Scene, t_end: f64) -> Option<crate::lab::Steady> {
    let rate = scene.periodic.as_ref()?.shear?.rate;
    let path = scene.output.dir.join("frames.h5");
    match io::read_series(&path, &["time", "stress_ratio", "solid_fraction", "inertial_number", "coordination"]) {
        Ok(c) => crate::lab::Steady::of(&c.try_into().ok()?, rate, t_end),
        Err(e) => {
            log::warn!("{}: cannot read /series for the steady state: {e}", path.display());
            None
        }
    }
}

fn write_checkpoint(world: &World, solver: &dyn Solver, tally: &StepTally, step: u64, time: f64, dt: f64) -> Result<PathBuf, RunError> {
    let (comm, scene) = (world.comm(), world.scene());
    let dir = &scene.output.dir;
    let path = io::checkpoint_path(dir, step);
    let (state, mut world_state) = (solver.state(), world.state());
    world_state.history.extend(tally.tables(world, solver));
    io::check_space(comm, &path, checkpoint_bytes(world, &state, &world_state.history), "the checkpoint")?;
    io::write_checkpoint(comm, &path, step, time, dt, scene, world.bodies(), world.n_owned(), &state, &world_state)?;
    let pruned = if comm.rank() == 0 { io::prune_checkpoints(dir, scene.output.checkpoint_keep, &scene.run_id).map(|_| ()) } else { Ok(()) };
    io::agree(comm, pruned)?;
    if comm.rank() == 0 {
        log::info!("checkpoint {}", path.display());
    }
    Ok(path)
}

/// A generous bound on a checkpoint's size (collective): its bodies, tables
/// and shapes, and room for the HDF5 headers.
fn checkpoint_bytes(world: &World, state: &SolverState, history: &[(String, io::FlatRecords)]) -> u64 {
    let comm = world.comm();
    // id, shape, material, fixed, dof_mask; 23 floats (pose, velocities, mass, inertia).
    let bodies = world.n_owned() as u64 * (8 + 4 + 4 + 1 + 1 + 23 * 8);
    let tables: u64 = state.tables.iter().chain(history).map(|(_, r)| r.len() as u64 * 8 * (1 + r.n_u + r.n_f) as u64).sum();
    let data = parallel::sum_u64(comm, bodies + tables);
    let shapes: u64 = world
        .scene()
        .shapes
        .iter()
        .map(|s| match s {
            crate::body::Shape::Mesh(m) => (m.vertices.len() * 24 + m.triangles.len() * 12) as u64,
            _ => 0,
        })
        .sum();
    let n_tables = (state.tables.len() + history.len()) as u64;
    let headers = 65536 + 16384 * n_tables + 4096 * world.scene().shapes.len() as u64 + world.scene().config_text.len() as u64;
    data + shapes + data / 8 + headers
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

/// The run's time-series row now (collective): kinetic energy, contacts,
/// and each wall's reaction (the force the bodies exert on it, as in
/// summary.json) and point.
fn series_row(world: &World, solver: &dyn Solver, step: u64, time: f64, dt: f64) -> io::SeriesRow {
    let reactions = world.reactions(solver.reported_forces());
    let walls = world.walls();
    let force = |k: usize| reactions.iter().find(|r| r.body == WALL_ID_BASE + k as u64).map_or([0.0; 3], |r| r.force);
    io::SeriesRow {
        step,
        time,
        dt,
        kinetic_energy: world.kinetic_energy(),
        contacts: parallel::sum_u64(world.comm(), world.contacts().len() as u64),
        wall_force: (0..walls.len()).map(force).collect(),
        wall_position: walls.iter().map(|w| w.position(time)).map(|p| [p.x, p.y, p.z]).collect(),
        measures: crate::lab::measure(world, solver.reported_forces(), time).series_values(),
    }
}

/// Thermo lines: printed by rank 0 and appended to OUT/log.txt (one header,
/// whitespace columns), with the series row of each line appended to
/// OUT/series.csv; every `thermo_every` steps and whenever `thermo_seconds`
/// of wall time passed.
struct Thermo {
    /// log.txt and series.csv, open on rank 0.
    files: Option<(std::fs::File, std::fs::File)>,
    /// Rank 0's failures to write are agreed over it (no rank left waiting).
    comm: Comm,
    dir: PathBuf,
    last: Instant,
    seconds: f64,
}

impl Thermo {
    /// Starts with `#` so that `numpy.loadtxt("log.txt")` skips it.
    const HEADER: &'static str =
        "#     step          time          dt    bodies  contacts  kinetic_energy  iters    wall[s]     left[s]";

    /// Rank 0 starts log.txt and series.csv (header only), or, continuing
    /// from the checkpoint of step `restart`, keeps their header and rows up
    /// to that step (the resumed run writes the later ones again).
    fn open(comm: &Comm, dir: &Path, restart: Option<u64>, seconds: f64, n_walls: usize) -> Result<Self, RunError> {
        let files = if comm.rank() == 0 {
            let open = |name: &str, header: &str| {
                let path = dir.join(name);
                continue_table(&path, header, restart).map_err(|e| IoError::fs(&path, "write the log", e))
            };
            open("log.txt", Self::HEADER).and_then(|log| Ok(Some((log, open("series.csv", &series_header(n_walls))?))))
        } else {
            Ok(None)
        };
        let files = io::agree(comm, files)?;
        Ok(Self { files, comm: comm.duplicate(), dir: dir.to_path_buf(), last: Instant::now(), seconds })
    }

    /// True on every rank when rank 0's wall clock passed `seconds` since
    /// the last line (collective).
    fn overdue(&self, comm: &Comm) -> bool {
        let late = comm.rank() == 0 && self.last.elapsed().as_secs_f64() >= self.seconds;
        !parallel::all_ok(comm, !late)
    }

    /// Collective: the thermo line of `row` (printed and in log.txt) and the
    /// row in series.csv.
    fn line(&mut self, row: &io::SeriesRow, bodies: u64, iters: u64, wall: f64, eta: f64) -> Result<(), RunError> {
        self.last = Instant::now();
        let io::SeriesRow { step, time, dt, kinetic_energy: ke, contacts, .. } = *row;
        let s = format!(
            "{step:>10} {time:>13.6e} {dt:>11.4e} {bodies:>9} {contacts:>9} {ke:>15.8e} {iters:>6} {wall:>10.2} {eta:>11.2}"
        );
        log::info!("{s}");
        let r = match &mut self.files {
            Some((log, csv)) => {
                let w = |f: &mut std::fs::File, text: &str, name: &str| {
                    writeln!(f, "{text}").and_then(|_| f.flush()).map_err(|e| IoError::fs(&self.dir.join(name), "write the log", e))
                };
                w(log, &s, "log.txt").and_then(|()| w(csv, &series_line(row), "series.csv"))
            }
            None => Ok(()),
        };
        Ok(io::agree(&self.comm, r)?)
    }
}

/// series.csv's header: the columns of a [`io::SeriesRow`], wall by wall.
fn series_header(n_walls: usize) -> String {
    let mut h = String::from("step,time,dt,kinetic_energy,contacts");
    for k in 0..n_walls {
        for c in ["fx", "fy", "fz", "x", "y", "z"] {
            h += &format!(",wall{k}_{c}");
        }
    }
    for (name, width) in io::MEASURE_COLUMNS {
        match width {
            1 => h += &format!(",{name}"),
            3 => ["x", "y", "z"].iter().for_each(|c| h += &format!(",{name}_{c}")),
            _ => ["xx", "xy", "xz", "yx", "yy", "yz", "zx", "zy", "zz"].iter().for_each(|c| h += &format!(",{name}_{c}")),
        }
    }
    h
}

/// A row of series.csv (shortest exact decimal of each value).
fn series_line(r: &io::SeriesRow) -> String {
    let mut s = format!("{},{:e},{:e},{:e},{}", r.step, r.time, r.dt, r.kinetic_energy, r.contacts);
    for (f, p) in r.wall_force.iter().zip(&r.wall_position) {
        for v in f.iter().chain(p) {
            s += &format!(",{v:e}");
        }
    }
    for v in &r.measures {
        s += &format!(",{v:e}");
    }
    s
}

/// Opens the table `path` to append rows under `header`: a new file, or
/// with `restart`, the file's rows up to that step (a line whose first
/// field is a step number) under one `header` (earlier headers, and the
/// `walls:` lines of earlier versions, dropped), rewritten through a
/// temporary file.
fn continue_table(path: &Path, header: &str, restart: Option<u64>) -> std::io::Result<std::fs::File> {
    let mut text = format!("{header}\n");
    if let Some(after) = restart {
        let old = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let step = |l: &str| l.split(|c: char| c == ',' || c.is_whitespace()).find(|t| !t.is_empty())?.parse::<u64>().ok();
        for l in old.lines().filter(|l| step(l).is_some_and(|s| s <= after)) {
            text += l;
            text.push('\n');
        }
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)?;
    std::fs::OpenOptions::new().append(true).open(path)
}
