//! The time loop (ARCHITECTURE.md "One time step"): neighbours (migrate,
//! ghosts) → contacts → solver step → the solver's review → output →
//! checkpoint, each stage timed as a phase; thermo lines and the summary.
//! The loop knows the physics only through the [`Solver`] trait.
use crate::body::Bodies;
use crate::contact::WALL_ID_BASE;
use crate::io::{self, FlatRecords, FrameWriter, IoError, SolverState};
use crate::parallel::domain::Domain;
use crate::parallel::{self, Comm};
use crate::scene::{Scene, STATIC_STEPS};
use crate::registry::make_solver;
use crate::solver::{Review, Solver, StepReport};
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
    /// Per step: solver iterations and Δt taken; earlier starts' first.
    iterations_per_step: Vec<u64>,
    dt_per_step: Vec<f64>,
    linear_iterations: u64,
    rejected: u64,
    /// This start's wall clock.
    start: Instant,
    /// Earlier starts: wall time, rebuilds, rebalances, bodies migrated,
    /// and per phase [min, mean, max] seconds over ranks (rank 0's copy).
    earlier_wall: f64,
    earlier_counts: [u64; 3],
    earlier_phases: BTreeMap<String, [f64; 3]>,
}

/// Checkpoint table of the steps so far: key step, u = [iterations], f = [Δt].
const RUN_STEPS_TABLE: &str = "run_steps";
/// Checkpoint table of the run's totals so far, key → f = [value, ...]:
/// 0 wall time, 1 linear iterations, 2 rejected attempts, 3 rebuilds,
/// 4 rebalances, 5 bodies migrated; a phase at `PHASE_KEY | hash(name)`
/// with f = [min, mean, max].
const RUN_TOTALS_TABLE: &str = "run_totals";
const PHASE_KEY: u64 = 1 << 63;

/// A phase name's key in `RUN_TOTALS_TABLE` (FNV-1a; below 2^63).
fn phase_key(name: &str) -> u64 {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
    PHASE_KEY | (h >> 1)
}

impl StepTally {
    fn new(first_step: u64) -> Self {
        Self {
            first_step,
            iterations_per_step: Vec::new(),
            dt_per_step: Vec::new(),
            linear_iterations: 0,
            rejected: 0,
            start: Instant::now(),
            earlier_wall: 0.0,
            earlier_counts: [0; 3],
            earlier_phases: BTreeMap::new(),
        }
    }

    fn add(&mut self, r: &StepReport) {
        self.iterations_per_step.push(r.iterations);
        self.dt_per_step.push(r.dt);
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
    fn tables(&self, world: &World) -> [(String, FlatRecords); 2] {
        let (wall, [rebuilds, rebalances, migrated], phases) = self.totals(world);
        let mut steps = FlatRecords::new(1, 1);
        let mut totals = FlatRecords::new(0, 3);
        if world.comm().rank() == 0 {
            for (k, (&it, &dt)) in self.iterations_per_step.iter().zip(&self.dt_per_step).enumerate() {
                steps.push(self.first_step + k as u64, &[it], &[dt]);
            }
            let scalars = [wall, self.linear_iterations as f64, self.rejected as f64, rebuilds as f64, rebalances as f64, migrated as f64];
            for (k, v) in scalars.into_iter().enumerate() {
                totals.push(k as u64, &[], &[v, 0.0, 0.0]);
            }
            for (name, v) in &phases {
                totals.push(phase_key(name), &[], v);
            }
        }
        [(RUN_STEPS_TABLE.to_string(), steps), (RUN_TOTALS_TABLE.to_string(), totals)]
    }

    /// Takes the earlier starts' tallies from a checkpoint's tables (each
    /// rank holds a slab) to rank 0. Without them (a checkpoint from before
    /// they were kept) the tallies start at the checkpoint. Collective.
    fn adopt(&mut self, world: &World, tables: &[(String, FlatRecords)], checkpoint_step: u64) {
        let comm = world.comm();
        let to_root = |name: &str, n_u: usize| {
            let t = tables.iter().find(|(n, t)| n == name && t.n_u == n_u).map(|(_, t)| t).cloned().unwrap_or_else(|| FlatRecords::new(n_u, if n_u == 1 { 1 } else { 3 }));
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
        let names: Vec<&str> = world.timers().iter().map(|(n, _)| n).collect();
        for i in 0..totals.len() {
            let (k, f) = (totals.keys[i], totals.f_row(i));
            match k {
                0 => self.earlier_wall = f[0],
                1 => self.linear_iterations = f[0] as u64,
                2 => self.rejected = f[0] as u64,
                3..=5 => self.earlier_counts[k as usize - 3] = f[0] as u64,
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
    fn new(scene: &Scene, restart: Option<(u64, f64)>, adaptive: bool) -> Self {
        let dt = scene.simulation.dt;
        let (first_step, t0) = restart.unwrap_or((0, 0.0));
        let steps = step_count(scene.simulation.t_end, dt);
        // An adaptive run's step numbers do not count full steps: after a
        // restart it ends at steps·Δt (also when fewer steps remain).
        let t_final = match steps.checked_sub(first_step) {
            Some(n) if !adaptive => t0 + n as f64 * dt,
            _ => steps as f64 * dt,
        };
        let origin = if t0.to_bits() == (first_step as f64 * dt).to_bits() { (0, 0.0) } else { (first_step, t0) };
        Self { dt, first_step, t0, t_final, step: first_step, time: t0, uniform: true, origin, quiet: 0 }
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
    prepare_output(comm, out_dir, opts)?;
    let mut solver = make_solver(scene);
    // A checkpoint's own decomposition is kept as it is (an exact restart).
    let rebalance = opts.restart.is_none() || opts.domain.is_none();
    let mut world = World::new(comm, scene, bodies, opts.domain.clone(), rebalance, &solver.history());
    let n_global = parallel::sum_u64(comm, world.n_owned() as u64);
    solver.phases().iter().for_each(|p| world.add_phase(p));
    let mut tally = StepTally::new(opts.restart.map_or(1, |(step, _)| step + 1));
    if let Some((step, _)) = opts.restart {
        solver.restore(comm, opts.restart_state.clone()).map_err(|e| RunError::Input(format!("checkpoint: {e}")))?;
        world.restore(&opts.restart_world);
        tally.adopt(&world, &opts.restart_world.history, step);
    }
    let mut clock = Clock::new(scene, opts.restart, solver.adaptive());
    let mut thermo = Thermo::open(comm, &out_dir.join("log.txt"), opts.restart.is_some(), scene.output.thermo_seconds)?;
    let mut frames = match opts.restart {
        None => FrameWriter::create(comm, out_dir, scene)?,
        Some((step, _)) => FrameWriter::append(comm, out_dir, scene, step)?,
    };
    let wall0 = Instant::now();
    log::info!("{}", start_line(scene, &world, &clock, n_global, solver.adaptive()));
    world.set_time(clock.time);
    if opts.restart.is_none() {
        world.detect();
        let table = world.contact_table(&solver.contact_fields(world.contacts()));
        frames.write_frame(0, 0.0, clock.dt, world.bodies(), world.n_owned(), table)?;
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
        let report = take_step(&mut world, solver.as_mut(), &tally, step, time, plan.dt, output)?;
        for &(name, secs) in &report.phases {
            world.timers().reassign("solve", name, secs);
        }
        tally.add(&report);
        clock.advance(report.dt);
        if let Some(v) = scene.simulation.until_static {
            clock.quiet = if largest_speed(&world) < v { clock.quiet + 1 } else { 0 };
        }
        let last = clock.at_end();
        if last || every(scene.output.every, step) {
            let table = world.contact_table(&solver.contact_fields(world.contacts()));
            let (b, n, time) = (world.bodies(), world.n_owned(), clock.time);
            world.timers().time("output", || frames.write_frame(step, time, report.dt, b, n, table))?;
        }
        if every(scene.output.checkpoint_every, step) || (last && scene.output.checkpoint_at_end) {
            write_checkpoint(&world, solver.as_ref(), &tally, step, clock.time, report.dt)?;
        }
        // A signal after the last step changes nothing: the run is complete.
        if !last && !parallel::all_ok(comm, !stop_requested()) {
            let path = write_checkpoint(&world, solver.as_ref(), &tally, step, clock.time, report.dt)?;
            if comm.rank() == 0 {
                println!("stopped by a signal after step {step} (t = {:e}); resume with: stiffgrain restart {}", clock.time, path.display());
            }
            resume_from = Some(path);
            break;
        }
        if last || every(scene.output.thermo_every, step) || thermo.overdue(comm) {
            let wall = wall0.elapsed().as_secs_f64();
            let eta = wall / (clock.time - clock.t0) * (clock.t_final - clock.time);
            let n_contacts = parallel::sum_u64(comm, world.contacts().len() as u64);
            thermo.line(step, clock.time, report.dt, n_global, n_contacts, world.kinetic_energy(), report.iterations, wall, eta)?;
            if scene.walls.iter().any(|w| w.moves()) {
                thermo.walls(world.walls(), clock.time, &world.reactions(solver.reaction_normals()))?;
            }
        }
    }
    frames.close()?;
    if clock.quiet >= STATIC_STEPS && comm.rank() == 0 {
        log::info!("static: every body slower than {:e} m/s for {STATIC_STEPS} steps at t = {:e}", scene.simulation.until_static.unwrap_or(0.0), clock.time);
    }
    finish(&world, solver.as_ref(), &clock, n_global, tally, resume_from, opts.startup_max_bodies)
}

/// The run's first line: what runs where, and until when.
fn start_line(scene: &Scene, world: &World, clock: &Clock, n_global: u64, adaptive: bool) -> String {
    let dt = clock.dt;
    let span = if adaptive {
        format!("from step {} (t = {:e}) to t = {:e}, dt ≤ {dt:e}", clock.first_step + 1, clock.t0, scene.simulation.t_end)
    } else {
        format!("steps {}..{} of dt = {dt:e}", clock.first_step + 1, step_count(scene.simulation.t_end, dt))
    };
    let until = scene.simulation.until_static.map(|v| format!(" or until static (speeds < {v:e} m/s)")).unwrap_or_default();
    let d = &world.domain().dims;
    format!(
        "stiffgrain {}: {n_global} bodies on {} rank(s) ({}x{}x{} grid), solver {}, {span}{until}",
        env!("CARGO_PKG_VERSION"),
        world.comm().size(),
        d[0],
        d[1],
        d[2],
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
                let message = format!("{e}; the state before the step is in {}", path.display());
                return Err(RunError::Solver { step, message });
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

/// Stops the run (on every rank) when an owned body's state is not finite.
fn check_finite(world: &World, step: u64) -> Result<(), RunError> {
    let b = world.bodies();
    let bad: Vec<u64> = (0..world.n_owned())
        .filter(|&i| !(b.position[i].iter().all(|x| x.is_finite()) && b.velocity[i].iter().all(|x| x.is_finite())))
        .map(|i| b.id[i])
        .collect();
    if parallel::all_ok(world.comm(), bad.is_empty()) {
        return Ok(());
    }
    if !bad.is_empty() {
        log::error!("step {step}: non-finite state of bodies {:?}", &bad[..bad.len().min(10)]);
    }
    Err(RunError::Solver { step, message: "non-finite positions or velocities (earlier checkpoints are kept)".into() })
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
        wall_time,
        phases,
        reactions: world.reactions(solver.reaction_normals()),
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
        solver_stats: solver.summary(comm),
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

fn write_checkpoint(world: &World, solver: &dyn Solver, tally: &StepTally, step: u64, time: f64, dt: f64) -> Result<PathBuf, RunError> {
    let (comm, scene) = (world.comm(), world.scene());
    let dir = &scene.output.dir;
    let path = io::checkpoint_path(dir, step);
    let (state, mut world_state) = (solver.state(), world.state());
    world_state.history.extend(tally.tables(world));
    io::check_space(comm, &path, checkpoint_bytes(world, &state, &world_state.history), "the checkpoint")?;
    io::write_checkpoint(comm, &path, step, time, dt, scene, world.bodies(), world.n_owned(), &state, &world_state)?;
    let pruned = if comm.rank() == 0 { io::prune_checkpoints(dir, scene.output.checkpoint_keep).map(|_| ()) } else { Ok(()) };
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

/// Thermo lines: printed by rank 0 and appended to OUT/log.txt, every
/// `thermo_every` steps and whenever `thermo_seconds` of wall time passed.
struct Thermo {
    file: Option<std::fs::File>,
    /// Rank 0's failures to write are agreed over it (no rank left waiting).
    comm: Comm,
    path: PathBuf,
    last: Instant,
    seconds: f64,
}

impl Thermo {
    const HEADER: &'static str =
        "      step          time          dt    bodies  contacts  kinetic_energy  iters    wall[s]     left[s]";

    fn open(comm: &Comm, path: &PathBuf, append: bool, seconds: f64) -> Result<Self, RunError> {
        let file = if comm.rank() == 0 {
            let f = std::fs::OpenOptions::new().create(true).append(append).write(true).truncate(!append).open(path);
            f.and_then(|mut f| writeln!(f, "{}", Self::HEADER).map(|()| Some(f))).map_err(|e| IoError::fs(path, "write the log", e))
        } else {
            Ok(None)
        };
        let file = io::agree(comm, file)?;
        Ok(Self { file, comm: comm.duplicate(), path: path.clone(), last: Instant::now(), seconds })
    }

    /// True on every rank when rank 0's wall clock passed `seconds` since
    /// the last line (collective).
    fn overdue(&self, comm: &Comm) -> bool {
        let late = comm.rank() == 0 && self.last.elapsed().as_secs_f64() >= self.seconds;
        !parallel::all_ok(comm, !late)
    }

    /// The moving walls: where they are and the contact force on them.
    fn walls(&mut self, walls: &[crate::scene::Wall], time: f64, reactions: &[Reaction]) -> Result<(), RunError> {
        let mut s = String::from("     walls:");
        for (k, w) in walls.iter().enumerate().filter(|(_, w)| w.moves()) {
            let f = reactions.iter().find(|r| r.body == WALL_ID_BASE + k as u64).map_or([0.0; 3], |r| r.force);
            let p = w.position(time);
            s += &format!(" [{k}] at ({:.6e}, {:.6e}, {:.6e}) force ({:.6e}, {:.6e}, {:.6e})", p.x, p.y, p.z, f[0], f[1], f[2]);
        }
        self.write(&s)
    }

    /// Collective (every rank calls it for each line).
    fn write(&mut self, s: &str) -> Result<(), RunError> {
        log::info!("{s}");
        let r = match &mut self.file {
            Some(f) => writeln!(f, "{s}").and_then(|_| f.flush()).map_err(|e| IoError::fs(&self.path, "write the log", e)),
            None => Ok(()),
        };
        Ok(io::agree(&self.comm, r)?)
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
        self.last = Instant::now();
        let s = format!(
            "{step:>10} {time:>13.6e} {dt:>11.4e} {bodies:>9} {contacts:>9} {ke:>15.8e} {iters:>6} {wall:>10.2} {eta:>11.2}"
        );
        self.write(&s)
    }
}
