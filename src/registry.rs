//! Where each physics is registered: the one file that names every solver,
//! so that the time loop ([`crate::driver`]) knows them only as [`Solver`].
use crate::scene::{Scene, SolverKind};
use crate::solver::Solver;

/// The solver of the scene: the registration line of each physics
/// (ARCHITECTURE.md "Adding a solver").
pub fn make_solver(scene: &Scene) -> Box<dyn Solver> {
    match scene.simulation.solver {
        SolverKind::Cd => Box::new(crate::cd::CdSolver::for_scene(scene)),
        SolverKind::CompatibleCd => Box::new(crate::compat::CompatibleCdSolver::for_scene(scene)),
        SolverKind::Dem => Box::new(crate::dem::DemSolver::new()),
    }
}
