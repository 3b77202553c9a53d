//! Per-phase wall-clock timers (rapier's stage counters): one accumulator per
//! phase of the time step, started and stopped around each call. Each phase
//! is also a PETSc log stage, so `-log_view` splits PETSc's work the same way.
use crate::petsc::log::Stage;
use std::time::Instant;

/// The phases of one time step, in DESIGN.md order.
pub const PHASES: [&str; 8] =
    ["migration", "ghost_exchange", "broad_phase", "narrow_phase", "assembly", "solve", "compatibility", "output"];

/// Accumulated seconds per phase on this rank.
#[derive(Default)]
pub struct Timers {
    seconds: [f64; PHASES.len()],
    /// PETSc stages, registered when PETSc is initialised.
    stages: Option<Vec<Stage>>,
}

impl Timers {
    /// Timers whose phases are also PETSc log stages (PETSc must be
    /// initialised; otherwise plain timers).
    pub fn with_petsc_stages() -> Self {
        let stages = crate::petsc::init::is_initialized()
            .then(|| PHASES.iter().map(|p| Stage::register(p)).collect::<Result<Vec<_>, _>>().ok())
            .flatten();
        Self { seconds: [0.0; PHASES.len()], stages }
    }

    /// Runs `f` and adds its wall time to `phase`.
    pub fn time<T>(&mut self, phase: &str, f: impl FnOnce() -> T) -> T {
        let k = PHASES.iter().position(|p| *p == phase).expect("known phase name");
        let guard = self.stages.as_ref().and_then(|s| s[k].push().ok());
        let t0 = Instant::now();
        let out = f();
        self.seconds[k] += t0.elapsed().as_secs_f64();
        drop(guard);
        out
    }

    /// Moves `seconds` measured inside phase `from` to phase `to`.
    pub fn reassign(&mut self, from: &str, to: &str, seconds: f64) {
        let k = |name: &str| PHASES.iter().position(|p| *p == name).expect("known phase name");
        self.seconds[k(from)] -= seconds;
        self.seconds[k(to)] += seconds;
    }

    /// (phase, seconds) pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        PHASES.iter().copied().zip(self.seconds.iter().copied())
    }
}
