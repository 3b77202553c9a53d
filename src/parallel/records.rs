//! Records as flat buffers and the all-to-all that moves them between ranks:
//! the one primitive behind migration, ghost exchange and sorted output.
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

    /// No records, room for `n` without growing (large outputs: no slack).
    pub fn with_capacity(n_u: usize, n_f: usize, n: usize) -> Self {
        Self { n_u, n_f, keys: Vec::with_capacity(n), u: Vec::with_capacity(n * n_u), f: Vec::with_capacity(n * n_f) }
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
        self.permute(&idx);
    }

    /// Reorders the records so that record `order[k]` becomes record `k`,
    /// one array at a time: at most one array is held twice.
    pub fn permute(&mut self, order: &[usize]) {
        self.keys = order.iter().map(|&i| self.keys[i]).collect();
        let mut u = Vec::with_capacity(order.len() * self.n_u);
        order.iter().for_each(|&i| u.extend_from_slice(self.u_row(i)));
        self.u = u;
        let mut f = Vec::with_capacity(order.len() * self.n_f);
        order.iter().for_each(|&i| f.extend_from_slice(self.f_row(i)));
        self.f = f;
    }
}

/// Sends record `i` to rank `dest[i]` (collective); returns what this rank
/// received, in rank order. The send buffers are built and sent one array
/// at a time, so only one array is held twice.
pub fn send_to<C: Communicator>(comm: &C, recs: &FlatRecords, dest: &[usize]) -> FlatRecords {
    let size = comm.size() as usize;
    let mut order: Vec<usize> = (0..recs.len()).collect();
    order.sort_by_key(|&i| dest[i]);
    let mut send_n = vec![0 as Count; size];
    for &d in dest {
        send_n[d] += 1;
    }
    let mut recv_n = vec![0 as Count; size];
    comm.all_to_all_into(&send_n[..], &mut recv_n[..]);
    let keys = {
        let s: Vec<u64> = order.iter().map(|&i| recs.keys[i]).collect();
        alltoallv(comm, &s, &send_n, &recv_n, 1)
    };
    let u = {
        let mut s = Vec::with_capacity(order.len() * recs.n_u);
        order.iter().for_each(|&i| s.extend_from_slice(recs.u_row(i)));
        alltoallv(comm, &s, &send_n, &recv_n, recs.n_u)
    };
    let f = {
        let mut s = Vec::with_capacity(order.len() * recs.n_f);
        order.iter().for_each(|&i| s.extend_from_slice(recs.f_row(i)));
        alltoallv(comm, &s, &send_n, &recv_n, recs.n_f)
    };
    FlatRecords { n_u: recs.n_u, n_f: recs.n_f, keys, u, f }
}


/// Asks every rank (this one too when `to_self`) about each query record;
/// a rank answers a query through `answer(key, u, f, reply)` with any
/// number of records of `reply_widths` (integer, float fields) — the
/// ranks that own the thing asked about answer, the others stay silent.
/// Returns the replies to this rank's queries, keyed by the query's index.
/// Collective (the "ask the owners" query of migrations and restarts).
pub fn ask_all<C: Communicator>(
    comm: &C,
    queries: &FlatRecords,
    to_self: bool,
    reply_widths: (usize, usize),
    mut answer: impl FnMut(u64, &[u64], &[f64], &mut FlatRecords),
) -> FlatRecords {
    let (me, size) = (comm.rank() as usize, comm.size() as usize);
    let nu = queries.n_u;
    // Query fields, then the asker and the query's index.
    let mut q = FlatRecords::new(nu + 2, queries.n_f);
    let mut dest = Vec::new();
    let mut u = Vec::with_capacity(nu + 2);
    for i in 0..queries.len() {
        for r in (0..size).filter(|&r| to_self || r != me) {
            u.clear();
            u.extend_from_slice(queries.u_row(i));
            u.extend_from_slice(&[me as u64, i as u64]);
            q.push(queries.keys[i], &u, queries.f_row(i));
            dest.push(r);
        }
    }
    let got = send_to(comm, &q, &dest);
    let mut reply = FlatRecords::new(reply_widths.0, reply_widths.1);
    let mut back = Vec::new();
    let mut one = FlatRecords::new(reply_widths.0, reply_widths.1);
    for k in 0..got.len() {
        let u = got.u_row(k);
        one.keys.clear();
        one.u.clear();
        one.f.clear();
        answer(got.keys[k], &u[..nu], got.f_row(k), &mut one);
        for j in 0..one.len() {
            reply.push(u[nu + 1], one.u_row(j), one.f_row(j));
            back.push(u[nu] as usize);
        }
    }
    send_to(comm, &reply, &back)
}

/// Alltoallv of `width` values per record: `send_n[r]` records go to rank r,
/// `recv_n[r]` come from it.
pub fn alltoallv<C: Communicator, T: Equivalence + Default + Clone>(
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

/// Integer fields of a packed body: id, shape, material, fixed, dof_mask.
pub const BODY_NU: usize = 5;
/// Float fields of a packed body: position 3, orientation (w,x,y,z) 4,
/// velocity 3, angular velocity 3, mass 1, inertia 9 (row-major).
pub const BODY_NF: usize = 23;

/// Appends body `i` to `recs` (built with `FlatRecords::new(BODY_NU, BODY_NF)`), keyed by id.
pub fn push_body(recs: &mut FlatRecords, bodies: &crate::body::Bodies, i: usize) {
    let q = bodies.orientation[i].quaternion();
    let (p, v, w, m) = (bodies.position[i], bodies.velocity[i], bodies.angular_velocity[i], bodies.inertia[i]);
    let mut f = [0.0; BODY_NF];
    f[..14].copy_from_slice(&[p.x, p.y, p.z, q.w, q.i, q.j, q.k, v.x, v.y, v.z, w.x, w.y, w.z, bodies.mass[i]]);
    for r in 0..3 {
        for c in 0..3 {
            f[14 + 3 * r + c] = m[(r, c)];
        }
    }
    let u = [bodies.id[i], bodies.shape[i] as u64, bodies.material[i] as u64, bodies.fixed[i] as u64, bodies.dof_mask[i] as u64];
    recs.push(bodies.id[i], &u, &f);
}

/// The body packed as record `i` by [`push_body`].
pub fn body_from_row(recs: &FlatRecords, i: usize) -> crate::body::Body {
    use nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};
    let (u, f) = (recs.u_row(i), recs.f_row(i));
    crate::body::Body {
        id: u[0],
        shape: u[1] as u32,
        material: u[2] as u32,
        fixed: u[3] != 0,
        dof_mask: u[4] as u8,
        position: Vector3::new(f[0], f[1], f[2]),
        // Stored unit quaternions are taken as they are, bit for bit.
        orientation: UnitQuaternion::new_unchecked(Quaternion::new(f[3], f[4], f[5], f[6])),
        velocity: Vector3::new(f[7], f[8], f[9]),
        angular_velocity: Vector3::new(f[10], f[11], f[12]),
        mass: f[13],
        inertia: Matrix3::from_row_slice(&f[14..23]),
    }
}
