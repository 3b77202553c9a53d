//! SIGTERM and SIGUSR1 (SLURM's warning before a time limit): a flag the
//! handlers set, and its collective reading. Solvers read it between their
//! iterations, so a long step notices a signal within a bounded wall time:
//! `mpirun` forwards TERM to the ranks and kills them about a second later
//! (OpenMPI's `odls_base_sigkill_timeout`).
use super::Comm;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;

/// Set by the signal handlers on this rank.
static RAISED: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// Set on every rank at once by [`agreed`] when some rank saw a signal.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// How many iterations a solver loop runs between two [`agreed`] calls:
/// one reduction per this many, a few milliseconds of APGD on a large pack.
pub const EVERY: u64 = 8;

/// Installs the SIGTERM/SIGUSR1 handlers (once per process).
pub fn install_handlers() {
    let flag = RAISED.get_or_init(Default::default).clone();
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGUSR1] {
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
}

fn raised() -> bool {
    RAISED.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// True on every rank when a signal reached any rank (collective: every
/// rank calls it at the same point of the same loop). Once true, it stays
/// true and [`stopping`] says so without communication.
pub fn agreed(comm: &Comm) -> bool {
    if STOPPING.load(Ordering::Relaxed) {
        return true;
    }
    let stop = !super::all_ok(comm, !raised());
    if stop {
        STOPPING.store(true, Ordering::Relaxed);
    }
    stop
}

/// A signal was agreed on (by an earlier [`agreed`]): the same answer on
/// every rank, no communication. A solver that cut its iterations short
/// for it abandons the step.
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Relaxed)
}

/// [`agreed`] every [`EVERY`]-th iteration `it` (the same `it` on every rank).
pub fn agreed_at(comm: &Comm, it: u64) -> bool {
    it % EVERY == 0 && agreed(comm)
}
