//! The one place a physics plugs into the time loop (ARCHITECTURE.md
//! "Adding a solver"), in the manner of LAMMPS fixes: the driver calls
//! `begin_step`, then `step` and `review` until the step is accepted, and
//! reads what the solver contributes to output, summary and checkpoints
//! through the remaining hooks. Every hook but `step` has a default.
use crate::body::Bodies;
use crate::contact::Contacts;
use crate::io::SolverState;
use crate::parallel::Comm;
pub use crate::history::{Column, History, HistorySpec, Rows};
pub use crate::io::ContactField;
pub use crate::world::{ContactForces, ReportedForces, Search, StepContext, World};

/// What a step reports for the thermo line and summary.json.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    /// Solver iterations (APGD/PGS sweeps, or Newton iterations).
    pub iterations: u64,
    /// The time step actually taken (adaptive solvers may shorten it).
    pub dt: f64,
    /// Linear (KSP) iterations of the step (0 where there is no KSP).
    pub linear_iterations: u64,
    /// The complementarity residual the step's contact solve ended at (cd:
    /// the natural-map residual its stopping rule compares with
    /// tolerance × max|p|); None where the solver has none.
    pub residual: Option<f64>,
    /// Attempts of this step that were rejected and redone with a shorter Δt.
    pub rejected: u64,
    /// The attempt was not taken (bodies, forces and history untouched):
    /// the driver takes it again with this Δt (an adaptive solver's
    /// rejected step).
    pub retry: Option<f64>,
    /// Seconds of the step spent in named parts of the solve, timed as
    /// phases of their own in summary.json (compatible-cd: "compatibility").
    pub phases: Vec<(&'static str, f64)>,
}

impl StepReport {
    /// Adds the counts of an earlier attempt of the same step (redone).
    pub fn absorb(&mut self, earlier: &StepReport) {
        self.iterations += earlier.iterations;
        self.linear_iterations += earlier.linear_iterations;
        self.rejected += earlier.rejected;
        for &(name, s) in &earlier.phases {
            match self.phases.iter_mut().find(|(n, _)| *n == name) {
                Some(p) => p.1 += s,
                None => self.phases.push((name, s)),
            }
        }
    }
}

/// What a solver asks for before an attempt of a step ([`Solver::begin_step`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The Δt to try.
    pub dt: f64,
    /// Contacts of the step (indices) the solver does not model.
    pub drop: Vec<usize>,
}

/// What the solver says of a step it took ([`Solver::review`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Review {
    Accept,
    /// Take the step again from its start with this Δt, contacts detected
    /// out to `distance`: the World rolls back bodies and history, the
    /// solver has put back its own state.
    Redo { dt: f64, distance: f64 },
}

/// A solver failure; the run writes a last checkpoint and stops.
#[derive(Debug, thiserror::Error)]
pub enum SolverError {
    #[error("PETSc: {0}")]
    Petsc(#[from] crate::petsc::PetscError),
    #[error("not converged after {iterations} iterations (residual {residual:e})")]
    NotConverged { iterations: u64, residual: f64 },
    /// A solver's own failure (its error type at its edge).
    #[error("{0}")]
    Step(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("Newton failed at the smallest time step dt_min = {dt:e} (t = {time:e})")]
    SmallestStep { dt: f64, time: f64 },
    /// A signal was agreed on between iterations (`parallel::signals`): the
    /// step is abandoned, the bodies are still at its start.
    #[error("interrupted by a signal")]
    Interrupted,
    /// The step would give a body a non-finite velocity or position (the
    /// lowest such id on any rank); the bodies are still at the step's start.
    #[error("non-finite velocity or position of body {body} (gravity, loads or settings out of range?)")]
    NonFinite { body: u64 },
}

/// A checkpoint's solver state this solver cannot take.
#[derive(Debug, thiserror::Error)]
#[error("solver state version {found} in the checkpoint, this build's {solver} reads version {expected}")]
pub struct StateError {
    pub solver: &'static str,
    pub found: u32,
    pub expected: u32,
}

/// One physics. `cd`, `compatible-cd` and `dem` implement it; the driver
/// knows them only through [`crate::registry::make_solver`]. The driver and
/// the World own the clock and the detection: hooks read the World and
/// return requests ([`Plan`], [`Search`], [`Review`]) that they carry out.
pub trait Solver {
    /// The per-body and per-contact history the solver keeps between steps
    /// (World data: migration and checkpoints carry it).
    fn history(&self) -> HistorySpec {
        HistorySpec::default()
    }

    /// True when `review` may ask for a [`Review::Redo`]: the World then
    /// keeps the owned bodies and history of each step's start.
    fn rolls_back(&self) -> bool {
        false
    }

    /// Before attempt `attempt` (0 first, then after each redo) of a step
    /// from `time`: the Δt to try (at most `dt`) and contacts to drop.
    fn begin_step(&mut self, _world: &World, _time: f64, dt: f64, _attempt: u32) -> Plan {
        Plan { dt, drop: Vec::new() }
    }

    /// Advances the owned bodies from `ctx.time` by `ctx.dt` (or less, as
    /// reported); fills `forces` for `ctx.contacts`; updates its history.
    fn step(&mut self, ctx: &StepContext, bodies: &mut Bodies, forces: &mut ContactForces, history: &mut History) -> Result<StepReport, SolverError>;

    /// After an attempt: the search at its end (`time + report.dt`) the
    /// solver wants done before its review, if any. Collective.
    fn search(&mut self, _world: &World, _time: f64, _report: &StepReport) -> Option<Search> {
        None
    }

    /// After an attempt (and its search): accept it, or put the solver's
    /// own state back to the step's start and ask for a redo. Collective:
    /// every rank returns the same.
    fn review(&mut self, _world: &World, _time: f64, _report: &StepReport) -> Review {
        Review::Accept
    }

    /// Names of the parts of `step` the solver times itself (reported in
    /// [`StepReport::phases`]), timed as phases apart from "solve".
    fn phases(&self) -> &'static [&'static str] {
        &[]
    }

    /// True when steps may be shorter than `simulation.dt` (the run then
    /// ends at `t_end`, not after a step count).
    fn adaptive(&self) -> bool {
        false
    }

    /// State carried between steps that a checkpoint must keep, this
    /// rank's share (empty by default).
    fn state(&self) -> SolverState {
        SolverState::default()
    }

    /// Takes back a checkpoint's state: this rank's slab of every table,
    /// whichever rank will use the records. Collective.
    fn restore(&mut self, _comm: &Comm, state: SolverState) -> Result<(), StateError> {
        match state.version {
            0 if state.tables.is_empty() => Ok(()),
            v => Err(StateError { solver: "this solver", found: v, expected: 0 }),
        }
    }

    /// The counters of the run's earlier starts (a restart), by the keys
    /// of [`Solver::summary`]: warnings throttled on a counter continue
    /// its sequence instead of starting it again. Every rank gets the
    /// same values. Nothing by default.
    fn resume_counters(&mut self, _earlier: &dyn Fn(&str) -> u64) {}

    /// Extra per-contact output fields of the last step, by name.
    fn contact_fields(&self, _contacts: &Contacts) -> Vec<ContactField> {
        Vec::new()
    }

    /// Contact forces that stand for this solver's answer in reactions and
    /// measurements, in place of the step's (compatible-cd: the compatible
    /// forces).
    fn reported_forces(&self) -> Option<ReportedForces<'_>> {
        None
    }

    /// The solver's own counters for summary.json (global: reduce here).
    /// Collective.
    fn summary(&self, _comm: &Comm) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}
