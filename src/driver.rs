//! The time loop: calls the stages of one step in DESIGN.md order and writes
//! frames, thermo lines and the summary.
use crate::body::Bodies;
use crate::io::{ContactRecords, FrameWriter, IoError};
use crate::parallel::{self, Comm};
use crate::scene::Scene;
use crate::timers::Timers;
use mpi::traits::*;
use nalgebra::{UnitQuaternion, Vector3};
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
    pub kinetic_energy: f64,
    pub solver_iterations_total: u64,
    pub solver_iterations_per_step: Vec<u64>,
    pub wall_time: f64,
    /// Seconds per phase: [min, mean, max] over ranks.
    pub phases: std::collections::BTreeMap<String, [f64; 3]>,
    /// Total force on every fixed body and wall from its contacts.
    pub reactions: Vec<Reaction>,
}

/// Reaction force on a fixed body or a wall.
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
fn prepare_output(comm: &Comm, dir: &Path, overwrite: bool) -> Result<(), RunError> {
    let mut msg = String::new();
    if comm.rank() == 0 {
        let frames = dir.join("frames.h5");
        if frames.exists() && !overwrite {
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

/// Free flight of the owned bodies over one step: exact for constant
/// acceleration (x += v dt + g dt²/2), rotation by exp(ω dt); locked DOFs
/// stay put.
pub fn free_flight(bodies: &mut Bodies, n_owned: usize, gravity: &Vector3<f64>, dt: f64) {
    for i in 0..n_owned {
        let mask = bodies.dof_mask[i];
        for k in 0..3 {
            if mask & (1 << k) != 0 {
                bodies.position[i][k] += bodies.velocity[i][k] * dt + 0.5 * gravity[k] * dt * dt;
                bodies.velocity[i][k] += gravity[k] * dt;
            } else {
                bodies.velocity[i][k] = 0.0;
            }
        }
        let mut w = bodies.angular_velocity[i];
        for k in 0..3 {
            if mask & (1 << (3 + k)) == 0 {
                w[k] = 0.0;
            }
        }
        bodies.angular_velocity[i] = w;
        bodies.orientation[i] = UnitQuaternion::from_scaled_axis(w * dt) * bodies.orientation[i];
    }
}

/// Runs the scene to t_end on every rank of `comm`.
pub fn run(comm: &Comm, scene: Scene, opts: &RunOptions) -> Result<Summary, RunError> {
    let rank = comm.rank() as usize;
    let ranks = comm.size() as usize;
    let out_dir = scene.output.dir.clone();
    prepare_output(comm, &out_dir, opts.overwrite)?;

    let mut bodies = scene.bodies.clone();
    let n_global = bodies.len() as u64;
    parallel::ownership::keep_owned(&mut bodies, rank, ranks);
    let n_owned = bodies.len();

    let dt = scene.simulation.dt;
    let steps = step_count(scene.simulation.t_end, dt);
    let gravity = scene.simulation.gravity;
    let mut timers = Timers::default();
    let contacts = ContactRecords::default();
    let mut thermo = Thermo::open(comm, &out_dir.join("log.txt"))?;

    let mut frames = FrameWriter::create(comm, &out_dir, &scene)?;
    let t0 = Instant::now();
    frames.write_frame(0, 0.0, dt, &bodies, n_owned, &contacts)?;
    log::info!(
        "stiffgrain {}: {} bodies on {ranks} rank(s), solver {}, {steps} steps of dt = {dt:e}",
        env!("CARGO_PKG_VERSION"),
        n_global,
        scene.simulation.solver.name()
    );
    log::warn!(
        "solver {}: contact forces are not implemented yet; bodies move in free flight",
        scene.simulation.solver.name()
    );
    log::info!("{}", Thermo::HEADER);
    let mut iterations_per_step = Vec::with_capacity(steps as usize);
    for step in 1..=steps {
        let time = step as f64 * dt;
        timers.time("solve", || free_flight(&mut bodies, n_owned, &gravity, dt));
        iterations_per_step.push(0);
        let last = step == steps;
        if last || (scene.output.every > 0 && step % scene.output.every == 0) {
            timers.time("output", || frames.write_frame(step, time, dt, &bodies, n_owned, &contacts))?;
        }
        if last || step % scene.output.thermo_every == 0 {
            let ke = parallel::sum_f64(comm, bodies.kinetic_energy(n_owned));
            let wall = t0.elapsed().as_secs_f64();
            let eta = wall / step as f64 * (steps - step) as f64;
            thermo.line(step, time, dt, n_global, 0, ke, 0, wall, eta)?;
        }
    }
    let wall_time = t0.elapsed().as_secs_f64();
    let ke = parallel::sum_f64(comm, bodies.kinetic_energy(n_owned));

    let mut phases = std::collections::BTreeMap::new();
    for (name, secs) in timers.iter() {
        let max = parallel::max_f64(comm, secs);
        let min = -parallel::max_f64(comm, -secs);
        let mean = parallel::sum_f64(comm, secs) / ranks as f64;
        phases.insert(name.to_string(), [min, mean, max]);
    }
    let summary = Summary {
        version: env!("CARGO_PKG_VERSION"),
        solver: scene.simulation.solver.name(),
        ranks,
        bodies: n_global,
        steps,
        time: steps as f64 * dt,
        contacts: 0,
        kinetic_energy: ke,
        solver_iterations_total: iterations_per_step.iter().sum(),
        solver_iterations_per_step: iterations_per_step,
        wall_time,
        phases,
        reactions: Vec::new(),
    };
    if rank == 0 {
        write_json_atomically(&out_dir.join("summary.json"), &summary)
            .map_err(|e| RunError::Runtime(format!("{}: {e}", out_dir.join("summary.json").display())))?;
        log::info!("done: {steps} steps in {wall_time:.2} s; wrote {}", out_dir.display());
    }
    Ok(summary)
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

    fn open(comm: &Comm, path: &PathBuf) -> Result<Self, RunError> {
        let file = if comm.rank() == 0 {
            let mut f = std::fs::File::create(path)
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
