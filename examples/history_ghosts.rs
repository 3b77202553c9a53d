//! Checks the history store's view of ghosts in-process (run under mpirun;
//! used by tests/history.rs): every rank tags its owned bodies in a body
//! history column, then reads the column for owned bodies and ghosts
//! (`World::body_history_with_ghosts`); every value must be its body's tag.
//!
//! Usage: `history_ghosts CONFIG.toml`; prints one `key=value` line from
//! rank 0 and exits 1 (on every rank) if a value is wrong.
use mpi::traits::*;
use stiffgrain::history::{Column, HistorySpec};
use stiffgrain::parallel;
use stiffgrain::petsc;
use stiffgrain::world::World;

fn tag(id: u64) -> [f64; 2] {
    [id as f64 + 0.5, -(id as f64)]
}

fn main() {
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    let _petsc = petsc::Petsc::initialize(&[]).expect("PETSc");
    let path = std::env::args().nth(1).expect("usage: history_ghosts CONFIG.toml");
    let mut scene = stiffgrain::config::load(std::path::Path::new(&path), &[]).unwrap_or_else(|e| panic!("{e}"));
    let start = stiffgrain::startup::populate(&world, &mut scene, &path).unwrap_or_else(|e| panic!("{e}"));
    let spec = HistorySpec { body: vec![Column { name: "tag", width: 2 }], contact: Vec::new() };
    let mut sim = World::new(&world, &scene, start.bodies, Some(start.domain), true, &spec, 0.0, None);
    sim.attempt((0, 0.0, scene.simulation.dt, false), |ctx, bodies, _, history| {
        let col = history.body.col("tag");
        for i in 0..ctx.layout.n_owned {
            col.of_mut(history.body.entry(bodies.id[i])).copy_from_slice(&tag(bodies.id[i]));
        }
    });
    let values = sim.body_history_with_ghosts("tag");
    let b = sim.bodies();
    let right = (0..b.len()).all(|i| values[2 * i..2 * i + 2] == tag(b.id[i]));
    let ghosts = parallel::sum_u64(&world, (b.len() - sim.n_owned()) as u64);
    let ok = parallel::all_ok(&world, right && values.len() == 2 * b.len());
    if world.rank() == 0 {
        println!("ghosts={ghosts} ok={ok}");
    }
    if !ok {
        std::process::exit(1);
    }
}
