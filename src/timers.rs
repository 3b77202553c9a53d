//! Per-phase wall-clock timers (rapier's stage counters): one accumulator per
//! phase of the time step, started and stopped around each call.
use std::time::Instant;

/// The phases of one time step, in DESIGN.md order.
pub const PHASES: [&str; 8] =
    ["migration", "ghost_exchange", "broad_phase", "narrow_phase", "assembly", "solve", "compatibility", "output"];

/// Accumulated seconds per phase on this rank.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    seconds: [f64; PHASES.len()],
}

impl Timers {
    /// Runs `f` and adds its wall time to `phase`.
    pub fn time<T>(&mut self, phase: &str, f: impl FnOnce() -> T) -> T {
        let k = PHASES.iter().position(|p| *p == phase).expect("known phase name");
        let t0 = Instant::now();
        let out = f();
        self.seconds[k] += t0.elapsed().as_secs_f64();
        out
    }

    /// (phase, seconds) pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        PHASES.iter().copied().zip(self.seconds.iter().copied())
    }
}
