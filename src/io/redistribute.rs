//! Output stage helper: moves records with `u64` keys so that each rank holds a
//! contiguous block of the globally sorted sequence (range partition of the
//! key space + `MPI_Alltoallv`), and gives each rank its write offset.
use crate::parallel::records::alltoallv as exchange;
pub use crate::parallel::records::FlatRecords;
use mpi::traits::*;
use mpi::Count;

/// This rank's block of the globally sorted records.
#[derive(Clone, Debug)]
pub struct Redistributed {
    /// The records, sorted; rank r's block precedes rank r+1's.
    pub records: FlatRecords,
    /// Index of this rank's first record in the global sequence.
    pub offset: u64,
    /// Number of records on all ranks.
    pub total: u64,
}

/// Collective: sorts the records of all ranks globally and returns this rank's
/// contiguous block and its offset.
///
/// Records are sent to rank `(key - kmin) * size / (kmax - kmin + 1)` (an even
/// split of the key range, from an allreduce of the key bounds), so all records
/// with the same key land on the same rank, then sorted locally. The result is
/// the same whatever the input distribution; only the block boundaries depend
/// on the rank count. Every rank must pass the same `n_u`/`n_f`.
pub fn redistribute_sorted<C: Communicator>(comm: &C, mut recs: FlatRecords) -> Redistributed {
    let size = comm.size() as usize;
    let (n_u, n_f) = (recs.n_u, recs.n_f);
    recs.sort();

    let local_min = recs.keys.first().copied().unwrap_or(u64::MAX);
    let local_max = recs.keys.last().copied().unwrap_or(0);
    let (mut kmin, mut kmax) = (0u64, 0u64);
    comm.all_reduce_into(&local_min, &mut kmin, mpi::collective::SystemOperation::min());
    comm.all_reduce_into(&local_max, &mut kmax, mpi::collective::SystemOperation::max());

    // Destination of each record; keys are sorted so destinations are monotone.
    let mut send_n = vec![0 as Count; size];
    if kmin <= kmax {
        let range = (kmax - kmin) as u128 + 1;
        for &k in &recs.keys {
            let d = ((k - kmin) as u128 * size as u128 / range) as usize;
            send_n[d] += 1;
        }
    }
    let mut recv_n = vec![0 as Count; size];
    comm.all_to_all_into(&send_n[..], &mut recv_n[..]);

    // Each array is freed once sent: the records are held about once.
    let keys = exchange(comm, &std::mem::take(&mut recs.keys), &send_n, &recv_n, 1);
    let u = exchange(comm, &std::mem::take(&mut recs.u), &send_n, &recv_n, n_u);
    let f = exchange(comm, &std::mem::take(&mut recs.f), &send_n, &recv_n, n_f);
    let mut records = FlatRecords { n_u, n_f, keys, u, f };
    records.sort();

    let n = records.len() as u64;
    let mut counts = vec![0u64; size];
    comm.all_gather_into(&n, &mut counts[..]);
    let rank = comm.rank() as usize;
    let offset = counts[..rank].iter().sum();
    let total = counts.iter().sum();
    Redistributed { records, offset, total }
}
