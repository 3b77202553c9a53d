//! The interface between the time loop and the physics (step 3 of the time
//! step): a solver advances the owned bodies over one step given the contacts
//! detected at its start. `cd`, `compatible-cd` and `dem` implement it.
use crate::body::Bodies;
use crate::contact::{ContactShapes, Contacts};
use crate::io::ContactHistory;
use crate::parallel::exchange::Layout;
use crate::parallel::Comm;
use crate::scene::Scene;
use nalgebra::Vector3;

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
    /// A frame is written after this step (compatible-cd then always
    /// computes the compatible forces).
    pub output: bool,
}

/// Forces of the contacts of one step, in `Contacts` order: the force on
/// body b is `f_n · normal + f_t`, on body a its opposite.
#[derive(Clone, Debug, Default)]
pub struct ContactForces {
    pub f_n: Vec<f64>,
    pub f_t: Vec<Vector3<f64>>,
    /// Compatible normal force (compatible-cd), else empty.
    pub f_compatible: Vec<f64>,
}

/// What a step reports for the thermo line and summary.json.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepReport {
    /// Solver iterations (APGD/PGS sweeps, or Newton iterations).
    pub iterations: u64,
    /// The time step actually taken (adaptive solvers may shorten it).
    pub dt: f64,
    /// Seconds of the step spent in the compatibility post-process (timed
    /// as its own phase, apart from the solve).
    pub compatibility_seconds: f64,
    /// Linear (KSP) iterations of the step (implicit DEM; 0 otherwise).
    pub linear_iterations: u64,
    /// Attempts of this step that were rejected and redone with a shorter Δt.
    pub rejected: u64,
}

/// A solver failure; the run writes a last checkpoint and stops.
#[derive(Debug, thiserror::Error)]
pub enum SolverError {
    #[error("PETSc: {0}")]
    Petsc(#[from] crate::petsc::PetscError),
    #[error("not converged after {iterations} iterations (residual {residual:e})")]
    NotConverged { iterations: u64, residual: f64 },
    #[error("{0}")]
    Other(String),
}

/// One physics.
pub trait Solver {
    /// Advances the owned bodies from `ctx.time` by `ctx.dt` (or less, as
    /// reported); fills `forces` for `ctx.contacts`.
    fn step(&mut self, ctx: &StepContext, bodies: &mut Bodies, forces: &mut ContactForces) -> Result<StepReport, SolverError>;

    /// State carried between steps that a checkpoint must keep (Newmark
    /// accelerations, friction history, the next Δt), as keyed records.
    fn save_state(&self) -> ContactHistory {
        Vec::new()
    }

    /// Takes back this rank's slab of the records of [`Solver::save_state`]
    /// after a restart (any rank count: records need not be on the rank that
    /// will use them). Collective.
    fn restore_state(&mut self, _comm: &Comm, _records: ContactHistory) {}
}
