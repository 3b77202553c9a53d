//! Command line: `stiffgrain run|check CONFIG [--set KEY=VALUE]... [-- PETSC OPTIONS]`.
use clap::{Parser, Subcommand};
use mpi::traits::*;
use std::path::PathBuf;
use std::process::ExitCode;
use stiffgrain::{config, driver, io, logging, parallel, petsc, startup};

#[derive(Parser)]
#[command(name = "stiffgrain", version, about = "Stiff rigid grains on distributed-memory machines")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print debug messages from every rank.
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scene: `mpirun -np N stiffgrain run scene.toml -- -log_view`.
    Run {
        config: PathBuf,
        /// Override a config key, e.g. --set simulation.dt=1e-4 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Replace an earlier run's files in output.dir.
        #[arg(long)]
        overwrite: bool,
        /// Options after `--` go to PETSc (-ksp_type, -pc_type, -snes_monitor, -log_view).
        #[arg(last = true, value_name = "PETSC OPTIONS")]
        petsc: Vec<String>,
    },
    /// Resume a run from a checkpoint, on any number of ranks.
    Restart {
        checkpoint: PathBuf,
        /// Override a key of the run's config, e.g. --set simulation.t_end=2.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        #[arg(last = true, value_name = "PETSC OPTIONS")]
        petsc: Vec<String>,
    },
    /// Validate a config and print a summary of the scene.
    Check {
        config: PathBuf,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

fn main() -> ExitCode {
    let code = {
        // SIGTERM/SIGUSR1 are caught from the start: SLURM may send its
        // time-limit USR1 up to a minute early, even while MPI starts up,
        // whose default action would kill the rank before any checkpoint.
        parallel::signals::install_handlers();
        // rsmpi first; PETSc initialises on top of it and is finalised (dropped)
        // before the universe finalises MPI.
        let Some(universe) = mpi::initialize() else {
            eprintln!("stiffgrain: MPI was already initialised");
            return ExitCode::from(1);
        };
        let world = universe.world();
        // After MPI, so that under mpirun a usage error (or --help) is
        // printed once, by rank 0; clap's exit status (2 for bad usage).
        let cli = match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => {
                if world.rank() == 0 {
                    let _ = e.print();
                }
                return ExitCode::from(e.exit_code() as u8);
            }
        };
        logging::init(world.rank(), cli.verbose);
        match cli.command {
            Command::Check { config, set } => match load(&world, &config, &set) {
                // The start-up reads the body files; `check` makes sure they open.
                Ok(scene) => match (startup::memory_check(&world, &scene, &config.display().to_string()), unreadable_body_file(&scene)) {
                    (Ok(_), Some((k, path, e))) => {
                        if world.rank() == 0 {
                            eprintln!("{}: generate[{k}].file: {}: cannot open: {e}", config.display(), path.display());
                        }
                        2
                    }
                    (Ok(mem), None) => {
                        if world.rank() == 0 {
                            println!("{}: ok", config.display());
                            println!("{}", config::summary(&scene, &mem));
                        }
                        0
                    }
                    (Err(e), _) => report(&world, e),
                },
                Err(code) => code,
            },
            Command::Run { config, set, overwrite, petsc: petsc_args } => match load(&world, &config, &set) {
                Err(code) => code,
                Ok(mut scene) => {
                    scene.run_id = driver::new_run_id(&world, &scene);
                    let label = config.display().to_string();
                    let t0 = std::time::Instant::now();
                    let start = startup::memory_check(&world, &scene, &label)
                        .and_then(|_| startup::populate(&world, &mut scene, &label));
                    match start {
                        Err(e) => report(&world, e),
                        Ok(start) => {
                            if world.rank() == 0 {
                                log::info!("start-up: {:.2} s", t0.elapsed().as_secs_f64());
                            }
                            let opts = driver::RunOptions {
                                overwrite,
                                restart: None,
                                restart_state: Default::default(),
                                restart_world: Default::default(),
                                domain: Some(start.domain),
                                startup_max_bodies: start.max_held,
                            };
                            with_petsc(&world, &petsc_args, || driver::run(&world, &scene, start.bodies, &opts))
                        }
                    }
                }
            },
            Command::Restart { checkpoint, set, petsc: petsc_args } => {
                let cp = match io::read_checkpoint(&world, &checkpoint) {
                    Ok(cp) => cp,
                    Err(e) => {
                        if world.rank() == 0 {
                            eprintln!("{e}");
                        }
                        return ExitCode::from(2);
                    }
                };
                let scene = config::apply_overrides(&checkpoint.display().to_string(), &cp.config_text, &set)
                    .and_then(|text| config::from_resolved_text(&checkpoint, &text));
                match scene {
                    Err(e) => {
                        if world.rank() == 0 {
                            eprintln!("{e}");
                        }
                        2
                    }
                    Ok(mut scene) => {
                        // The run it continues (a checkpoint of an older build names none).
                        scene.run_id = if cp.run_id.is_empty() { driver::new_run_id(&world, &scene) } else { cp.run_id.clone() };
                        // Shapes added at start-up (radii read from files) live in the checkpoint.
                        if cp.shapes.len() > scene.shapes.len() && cp.shape_names[..scene.shapes.len()] == scene.shape_names[..] {
                            scene.shapes.extend(cp.shapes[scene.shapes.len()..].iter().cloned());
                            scene.shape_names.extend(cp.shape_names[scene.shape_names.len()..].iter().cloned());
                        }
                        scene.contact_defaults_from_shapes();
                        let opts = driver::RunOptions {
                            overwrite: false,
                            restart: Some((cp.step, cp.time)),
                            restart_state: cp.state.clone(),
                            restart_world: cp.world.clone(),
                            // The run's own decomposition on the same rank
                            // count: every body stays where it was.
                            domain: (cp.n_ranks as i32 == world.size())
                                .then(|| stiffgrain::parallel::domain::Domain::from_flat(&cp.world.domain, world.size() as usize))
                                .flatten(),
                            startup_max_bodies: cp.bodies.len() as u64,
                        };
                        if world.rank() == 0 {
                            log::info!("restart from {} at step {} (t = {})", checkpoint.display(), cp.step, logging::num(cp.time));
                        }
                        with_petsc(&world, &petsc_args, || driver::run(&world, &scene, cp.bodies, &opts))
                    }
                }
            }
        }
    };
    ExitCode::from(code)
}

/// Prints a start-up error once (rank 0); exit status 2.
fn report(world: &parallel::Comm, e: startup::StartupError) -> u8 {
    if world.rank() == 0 {
        eprintln!("{e}");
    }
    2
}

/// Runs `f` between PETSc's initialisation and finalisation; returns the exit status.
fn with_petsc(
    world: &parallel::Comm,
    args: &[String],
    f: impl FnOnce() -> Result<driver::Summary, driver::RunError>,
) -> u8 {
    let p = match petsc::Petsc::initialize(args) {
        Ok(p) => p,
        Err(e) => {
            log::error!("PETSc initialisation failed: {e}");
            return 1;
        }
    };
    let result = f();
    if result.is_ok() && world.rank() == 0 {
        warn_unused_options(args);
    }
    drop(p);
    match result {
        Ok(_) => 0,
        Err(e) => {
            // An agreed error (input, I/O, most solver failures) is on every rank: print it once.
            if world.rank() == 0 || !e.agreed() {
                eprintln!("stiffgrain: {e}");
            }
            e.exit_code()
        }
    }
}

/// Options PETSc reads only when it finalises.
const READ_AT_FINALIZE: [&str; 5] = ["options_left", "malloc_dump", "malloc_view", "memory_view", "objects_dump"];

/// Names once the PETSc options given after `--` or in the environment's
/// `PETSC_OPTIONS` that no solver of the run read: misspelt, or meant for
/// a solver (or prefix) the run never called. Options files (`.petscrc`)
/// are left out: they may hold options for other programs.
fn warn_unused_options(args: &[String]) {
    let Ok(left) = petsc::options::unused() else { return };
    let env = std::env::var("PETSC_OPTIONS").unwrap_or_default();
    let env: Vec<String> = env.split_whitespace().map(String::from).collect();
    let after = unused_names(args, &left);
    let from_env: Vec<String> = unused_names(&env, &left).into_iter().filter(|n| !after.contains(n)).collect();
    let mut parts = Vec::new();
    if !after.is_empty() {
        parts.push(after.join(" "));
    }
    if !from_env.is_empty() {
        parts.push(format!("{} (from PETSC_OPTIONS)", from_env.join(" ")));
    }
    if !parts.is_empty() {
        log::warn!("PETSc options not used by this run: {} (misspelt, or for a solver or prefix the run did not call)", parts.join(", "));
    }
}

/// The option names among `words` that PETSc lists as unused (`left`),
/// each once, in the order given (an option may be repeated anywhere).
fn unused_names(words: &[String], left: &[String]) -> Vec<String> {
    let given = words.iter().filter_map(|a| a.strip_prefix('-')).map(|a| a.trim_start_matches('-')).filter(|a| a.starts_with(|c: char| c.is_ascii_alphabetic()));
    let mut missed: Vec<String> = Vec::new();
    for a in given.filter(|a| !a.starts_with("log_") && !READ_AT_FINALIZE.contains(a) && left.iter().any(|l| l.eq_ignore_ascii_case(a))) {
        let name = format!("-{a}");
        if !missed.contains(&name) {
            missed.push(name);
        }
    }
    missed
}

/// Rank 0 reads the file and applies overrides; every rank validates the same
/// text, so all agree on the scene or on the error (printed once, status 2).
fn load(world: &parallel::Comm, path: &std::path::Path, set: &[String]) -> Result<stiffgrain::scene::Scene, u8> {
    let mut text = String::new();
    let mut error = String::new();
    if world.rank() == 0 {
        match config::read_resolved(path, set) {
            Ok(t) => text = t,
            Err(e) => error = e.to_string(),
        }
    }
    parallel::broadcast_string(world, &mut error);
    if !error.is_empty() {
        if world.rank() == 0 {
            eprintln!("{error}");
        }
        return Err(2);
    }
    parallel::broadcast_string(world, &mut text);
    match config::from_resolved_text(path, &text) {
        Ok(scene) => Ok(scene),
        Err(e) => {
            if world.rank() == 0 {
                eprintln!("{e}");
            }
            Err(2)
        }
    }
}

/// The first body file of `scene` that cannot be opened: its `[[generate]]`
/// index (one source per entry), path and why.
fn unreadable_body_file(scene: &stiffgrain::scene::Scene) -> Option<(usize, PathBuf, std::io::Error)> {
    scene.sources.iter().enumerate().find_map(|(k, s)| match &s.kind {
        stiffgrain::scene::sources::SourceKind::File { path, .. } => std::fs::File::open(path).err().map(|e| (k, path.clone(), e)),
        _ => None,
    })
}
