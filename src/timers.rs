//! Per-phase wall-clock timers (rapier's stage counters): one accumulator per
//! phase of the time step, started and stopped around each call. Each phase
//! is also a PETSc log stage, so `-log_view` splits PETSc's work the same way.
use crate::petsc::log::Stage;
use std::cell::Cell;
use std::time::Instant;

/// The phases of one time step, in ARCHITECTURE.md order; a solver adds
/// its own after them ([`Timers::add_phase`]).
pub const PHASES: [&str; 7] = ["migration", "ghost_exchange", "broad_phase", "narrow_phase", "assembly", "solve", "output"];

/// Accumulated seconds per phase on this rank.
pub struct Timers {
    names: Vec<&'static str>,
    /// Cells: a phase is timed around work that reads the state holding
    /// the timers.
    seconds: Vec<Cell<f64>>,
    /// PETSc stages of `PHASES`, registered when PETSc is initialised.
    stages: Option<Vec<Stage>>,
}

impl Default for Timers {
    fn default() -> Self {
        Self { names: PHASES.to_vec(), seconds: vec![Cell::new(0.0); PHASES.len()], stages: None }
    }
}

impl Timers {
    /// Timers whose phases are also PETSc log stages (PETSc must be
    /// initialised; otherwise plain timers).
    pub fn with_petsc_stages() -> Self {
        let stages = crate::petsc::init::is_initialized()
            .then(|| PHASES.iter().map(|p| Stage::register(p)).collect::<Result<Vec<_>, _>>().ok())
            .flatten();
        Self { stages, ..Self::default() }
    }

    /// Adds a phase (a solver's own part of "solve"); the same on every rank.
    pub fn add_phase(&mut self, name: &'static str) {
        if !self.names.contains(&name) {
            self.names.push(name);
            self.seconds.push(Cell::new(0.0));
        }
    }

    fn index(&self, name: &str) -> usize {
        self.names.iter().position(|p| *p == name).unwrap_or_else(|| panic!("unknown phase {name}"))
    }

    /// Runs `f` and adds its wall time to `phase`.
    pub fn time<T>(&self, phase: &str, f: impl FnOnce() -> T) -> T {
        let k = self.index(phase);
        let guard = self.stages.as_ref().and_then(|s| s.get(k)).and_then(|s| s.push().ok());
        let t0 = Instant::now();
        let out = f();
        self.seconds[k].set(self.seconds[k].get() + t0.elapsed().as_secs_f64());
        drop(guard);
        out
    }

    /// Moves `seconds` measured inside phase `from` to phase `to`.
    pub fn reassign(&self, from: &str, to: &str, seconds: f64) {
        let (from, to) = (&self.seconds[self.index(from)], &self.seconds[self.index(to)]);
        from.set(from.get() - seconds);
        to.set(to.get() + seconds);
    }

    /// (phase, seconds) pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.names.iter().copied().zip(self.seconds.iter().map(Cell::get))
    }
}
