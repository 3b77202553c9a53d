//! Output stage helper: moves records with `u64` keys so that each rank holds a
//! contiguous block of the globally sorted sequence (range partition of the
//! key space + `MPI_Alltoallv`), and gives each rank its write offset.
use mpi::datatype::{Partition, PartitionMut};
use mpi::traits::*;
use mpi::Count;
use std::cmp::Ordering;

/// Records as flat buffers: record `i` has key `keys[i]`, integer fields
/// `u[i*n_u..(i+1)*n_u]` and float fields `f[i*n_f..(i+1)*n_f]`.
///
/// Records sort by key, then by the integer fields lexicographically, then by
/// the bit patterns of the float fields: for contacts use key = `body_a` and
/// put `(body_a, body_b, sub_a, sub_b)` first in `u` to get that order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatRecords {
    /// Integer fields per record.
    pub n_u: usize,
    /// Float fields per record.
    pub n_f: usize,
    pub keys: Vec<u64>,
    pub u: Vec<u64>,
    pub f: Vec<f64>,
}

impl FlatRecords {
    /// No records, `n_u` integer and `n_f` float fields each.
    pub fn new(n_u: usize, n_f: usize) -> Self {
        Self { n_u, n_f, ..Default::default() }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when there are no records.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Appends one record; `u` and `f` must have `n_u` and `n_f` entries.
    pub fn push(&mut self, key: u64, u: &[u64], f: &[f64]) {
        assert_eq!(u.len(), self.n_u, "FlatRecords::push: wrong number of integer fields");
        assert_eq!(f.len(), self.n_f, "FlatRecords::push: wrong number of float fields");
        self.keys.push(key);
        self.u.extend_from_slice(u);
        self.f.extend_from_slice(f);
    }

    /// Integer fields of record `i`.
    pub fn u_row(&self, i: usize) -> &[u64] {
        &self.u[i * self.n_u..(i + 1) * self.n_u]
    }

    /// Float fields of record `i`.
    pub fn f_row(&self, i: usize) -> &[f64] {
        &self.f[i * self.n_f..(i + 1) * self.n_f]
    }

    fn cmp_rows(&self, a: usize, b: usize) -> Ordering {
        self.keys[a]
            .cmp(&self.keys[b])
            .then_with(|| self.u_row(a).cmp(self.u_row(b)))
            .then_with(|| {
                let fa = self.f_row(a).iter().map(|x| x.to_bits());
                let fb = self.f_row(b).iter().map(|x| x.to_bits());
                fa.cmp(fb)
            })
    }

    /// Sorts the records (key, then integer fields, then float bits).
    pub fn sort(&mut self) {
        let mut idx: Vec<usize> = (0..self.len()).collect();
        idx.sort_by(|&a, &b| self.cmp_rows(a, b));
        let mut out = FlatRecords::new(self.n_u, self.n_f);
        out.keys.reserve(self.len());
        out.u.reserve(self.u.len());
        out.f.reserve(self.f.len());
        for i in idx {
            out.push(self.keys[i], self.u_row(i), self.f_row(i));
        }
        *self = out;
    }
}

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

    let keys = exchange(comm, &recs.keys, &send_n, &recv_n, 1);
    let u = exchange(comm, &recs.u, &send_n, &recv_n, n_u);
    let f = exchange(comm, &recs.f, &send_n, &recv_n, n_f);
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

/// Alltoallv of `width` values per record.
fn exchange<C: Communicator, T: Equivalence + Default + Clone>(
    comm: &C,
    send: &[T],
    send_n: &[Count],
    recv_n: &[Count],
    width: usize,
) -> Vec<T> {
    let w = width as Count;
    let scounts: Vec<Count> = send_n.iter().map(|c| c * w).collect();
    let rcounts: Vec<Count> = recv_n.iter().map(|c| c * w).collect();
    let displs = |c: &[Count]| -> Vec<Count> {
        c.iter()
            .scan(0, |acc, &x| {
                let d = *acc;
                *acc += x;
                Some(d)
            })
            .collect()
    };
    let sdispls = displs(&scounts);
    let rdispls = displs(&rcounts);
    let total: Count = rcounts.iter().sum();
    let mut recv = vec![T::default(); total as usize];
    {
        let sp = Partition::new(send, &scounts[..], &sdispls[..]);
        let mut rp = PartitionMut::new(&mut recv[..], &rcounts[..], &rdispls[..]);
        comm.all_to_all_varcount_into(&sp, &mut rp);
    }
    recv
}
