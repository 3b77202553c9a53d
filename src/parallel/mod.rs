//! Parallel services: ownership of bodies by rank, collective agreement on
//! errors, broadcasts. Solvers use these; they never call MPI directly.
pub mod domain;
pub mod exchange;
pub mod memory;
pub mod ownership;
pub mod records;
pub mod rigid_modes;
pub mod signals;

pub use mpi::topology::SimpleCommunicator as Comm;
use mpi::traits::*;

/// True on every rank iff `ok` is true on every rank. Call it before any
/// step where one rank's failure would leave others waiting in a collective.
pub fn all_ok(comm: &Comm, ok: bool) -> bool {
    let mut all = 0i32;
    comm.all_reduce_into(&(ok as i32), &mut all, mpi::collective::SystemOperation::min());
    all == 1
}

/// The smallest of the ids the ranks hold (None on every rank when none
/// holds one): one reduction, to name the first offending body everywhere.
pub fn first_id(comm: &Comm, id: Option<u64>) -> Option<u64> {
    let mut min = u64::MAX;
    comm.all_reduce_into(&id.unwrap_or(u64::MAX), &mut min, mpi::collective::SystemOperation::min());
    (min != u64::MAX).then_some(min)
}

/// The message of the lowest rank that has one, on every rank (None on
/// every rank when none has): to report a collective error once.
pub fn first_message(comm: &Comm, msg: Option<String>) -> Option<String> {
    let (me, size) = (comm.rank(), comm.size());
    let mut first = size;
    comm.all_reduce_into(&if msg.is_some() { me } else { size }, &mut first, mpi::collective::SystemOperation::min());
    if first == size {
        return None;
    }
    let root = comm.process_at_rank(first);
    let mut bytes = if me == first { msg.unwrap_or_default().into_bytes() } else { Vec::new() };
    let mut len = bytes.len() as u64;
    root.broadcast_into(&mut len);
    bytes.resize(len as usize, 0);
    // OpenMPI rejects the dangling pointer of an empty Vec.
    if len > 0 {
        root.broadcast_into(&mut bytes[..]);
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Broadcasts rank 0's string to every rank.
pub fn broadcast_string(comm: &Comm, s: &mut String) {
    let root = comm.process_at_rank(0);
    let mut len = s.len() as u64;
    root.broadcast_into(&mut len);
    let mut bytes = if comm.rank() == 0 { std::mem::take(s).into_bytes() } else { vec![0u8; len as usize] };
    // OpenMPI rejects the dangling pointer of an empty Vec.
    if len > 0 {
        root.broadcast_into(&mut bytes[..]);
    }
    *s = String::from_utf8(bytes).expect("broadcast of UTF-8 text");
}

/// Global sum of a value.
pub fn sum_f64(comm: &Comm, x: f64) -> f64 {
    let mut out = 0.0;
    comm.all_reduce_into(&x, &mut out, mpi::collective::SystemOperation::sum());
    out
}

/// Global sums of several values in one reduction, in place.
pub fn sum_f64s(comm: &Comm, x: &mut [f64]) {
    let local = x.to_vec();
    comm.all_reduce_into(&local[..], x, mpi::collective::SystemOperation::sum());
}

/// Global sum of a count.
pub fn sum_u64(comm: &Comm, x: u64) -> u64 {
    let mut out = 0u64;
    comm.all_reduce_into(&x, &mut out, mpi::collective::SystemOperation::sum());
    out
}

/// The record of `n` values that one rank holds (a checkpoint's table
/// lands on whichever rank reads its slab), on every rank; None on every
/// rank when none holds it. One reduction.
pub fn record_from_any_rank(comm: &Comm, mine: Option<&[f64]>, n: usize) -> Option<Vec<f64>> {
    let local = mine.map_or_else(|| vec![f64::NEG_INFINITY; n], <[f64]>::to_vec);
    let mut all = vec![0.0; n];
    comm.all_reduce_into(&local[..], &mut all[..], mpi::collective::SystemOperation::max());
    all.iter().all(|x| *x > f64::NEG_INFINITY).then_some(all)
}

/// Global maximum of a value.
pub fn max_f64(comm: &Comm, x: f64) -> f64 {
    let mut out = 0.0;
    comm.all_reduce_into(&x, &mut out, mpi::collective::SystemOperation::max());
    out
}
