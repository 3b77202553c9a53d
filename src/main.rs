//! Command line: `stiffgrain run|check CONFIG [--set KEY=VALUE]... [-- PETSC OPTIONS]`.
use clap::{Parser, Subcommand};
use mpi::traits::*;
use std::path::PathBuf;
use std::process::ExitCode;
use stiffgrain::{config, driver, logging, parallel, petsc};

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
    /// Validate a config and print a summary of the scene.
    Check {
        config: PathBuf,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = {
        // rsmpi first; PETSc initialises on top of it and is finalised (dropped)
        // before the universe finalises MPI.
        let Some(universe) = mpi::initialize() else {
            eprintln!("stiffgrain: MPI was already initialised");
            return ExitCode::from(1);
        };
        let world = universe.world();
        logging::init(world.rank(), cli.verbose);
        match cli.command {
            Command::Check { config, set } => match load(&world, &config, &set) {
                Ok(scene) => {
                    if world.rank() == 0 {
                        println!("{}: ok", config.display());
                        println!("{}", config::summary(&scene, world.size() as usize));
                    }
                    0
                }
                Err(code) => code,
            },
            Command::Run { config, set, overwrite, petsc: petsc_args } => match load(&world, &config, &set) {
                Err(code) => code,
                Ok(scene) => {
                    let p = match petsc::Petsc::initialize(&petsc_args) {
                        Ok(p) => p,
                        Err(e) => {
                            log::error!("PETSc initialisation failed: {e}");
                            return ExitCode::from(1);
                        }
                    };
                    let result = driver::run(&world, scene, &driver::RunOptions { overwrite });
                    drop(p);
                    match result {
                        Ok(_) => 0,
                        Err(e) => {
                            if world.rank() == 0 || e.exit_code() != 2 {
                                eprintln!("stiffgrain: {e}");
                            }
                            e.exit_code()
                        }
                    }
                }
            },
        }
    };
    ExitCode::from(code)
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
