//! Per-contact output as named columns: a frame writes whatever columns the
//! table holds, so a new output field is one `push` where its values are
//! (ARCHITECTURE.md "Adding an output field").
use crate::parallel::records::alltoallv;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use mpi::Count;
use std::cmp::Ordering;

/// A per-contact output field a solver contributes to frames, `width`
/// values per contact in `Contacts` order.
#[derive(Clone, Debug)]
pub struct ContactField {
    pub name: &'static str,
    pub width: usize,
    pub values: Vec<f64>,
    /// The step's column this field stands for in the per-body force sums
    /// of frames (`force_normal` or `force_tangent`: compatible-cd's
    /// compatible forces), if any.
    pub replaces: Option<&'static str>,
}

/// The values of one column, `width` per contact.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    U64(Vec<u64>),
    U32(Vec<u32>),
    F64(Vec<f64>),
}

/// A named column: `width` values per row (1 for a scalar, 3 for a vector).
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub width: usize,
    pub data: ColumnData,
}

/// This rank's contacts as named columns, each contact once (the owner of
/// its body a). The first four integer columns must be `body_a, body_b,
/// sub_a, sub_b`: frames sort contacts by them whatever the rank count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactTable {
    pub rows: usize,
    pub columns: Vec<Column>,
    /// The scalar column that stands for the normal force in per-body sums
    /// (`force_normal` unless a solver's field says otherwise), and the
    /// 3-vector column of the tangential force (`force_tangent`).
    pub normal_force: String,
    pub tangent_force: String,
}

impl ContactTable {
    /// An empty table for `rows` contacts.
    pub fn new(rows: usize) -> Self {
        Self { rows, columns: Vec::new(), normal_force: "force_normal".to_string(), tangent_force: "force_tangent".to_string() }
    }

    fn add(&mut self, name: &str, width: usize, len: usize, data: ColumnData) {
        assert_eq!(len, width * self.rows, "column {name}: {len} values for {} rows of width {width}", self.rows);
        assert!(self.column(name).is_none(), "column {name} added twice");
        self.columns.push(Column { name: name.to_string(), width, data });
    }

    pub fn u64(&mut self, name: &str, width: usize, v: Vec<u64>) {
        self.add(name, width, v.len(), ColumnData::U64(v));
    }

    pub fn u32(&mut self, name: &str, v: Vec<u32>) {
        self.add(name, 1, v.len(), ColumnData::U32(v));
    }

    pub fn f64(&mut self, name: &str, width: usize, v: Vec<f64>) {
        self.add(name, width, v.len(), ColumnData::F64(v));
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Row `i`'s sort key: its first integer value (body_a).
    fn key(&self, i: usize) -> u64 {
        self.columns
            .iter()
            .find_map(|c| match &c.data {
                ColumnData::U64(v) => Some(v[i * c.width]),
                ColumnData::U32(v) => Some(v[i * c.width] as u64),
                ColumnData::F64(_) => None,
            })
            .unwrap_or(0)
    }

    /// Rows `i` and `j` in the order of `FlatRecords` of (key, integer
    /// columns, float columns): the key, the integer values, the float bits.
    fn cmp_rows(&self, i: usize, j: usize) -> Ordering {
        let ints = self.columns.iter().filter(|c| !matches!(c.data, ColumnData::F64(_)));
        let floats = self.columns.iter().filter(|c| matches!(c.data, ColumnData::F64(_)));
        let mut o = self.key(i).cmp(&self.key(j));
        for c in ints.chain(floats) {
            if o != Ordering::Equal {
                break;
            }
            let (a, b) = (i * c.width..(i + 1) * c.width, j * c.width..(j + 1) * c.width);
            o = match &c.data {
                ColumnData::U64(v) => v[a].cmp(&v[b]),
                ColumnData::U32(v) => v[a].cmp(&v[b]),
                ColumnData::F64(v) => v[a].iter().map(|x| x.to_bits()).cmp(v[b].iter().map(|x| x.to_bits())),
            };
        }
        o
    }

    /// Reorders the rows so that row `order[k]` becomes row `k`, one column
    /// at a time.
    fn permute(&mut self, order: &[usize]) {
        for c in &mut self.columns {
            let w = c.width;
            match &mut c.data {
                ColumnData::U64(v) => *v = gather(v, order, w),
                ColumnData::U32(v) => *v = gather(v, order, w),
                ColumnData::F64(v) => *v = gather(v, order, w),
            }
        }
        self.rows = order.len();
    }

    /// Collective: the rows of every rank sorted by (body_a, body_b, sub_a,
    /// sub_b) and split into contiguous slabs; returns this rank's slab and
    /// its offset and the total number of rows. Every rank must hold the
    /// same columns (names, kinds, widths) in the same order.
    ///
    /// The rows go to rank `(key - kmin) * size / (kmax - kmin + 1)` as in
    /// `redistribute_sorted`, one column at a time (each column freed as it
    /// is sent), so a rank holds its table about once, not as records too.
    pub fn sorted<C: Communicator>(mut self, comm: &C) -> (ContactTable, u64, u64) {
        let size = comm.size() as usize;
        let mut order: Vec<usize> = (0..self.rows).collect();
        order.sort_by(|&i, &j| self.cmp_rows(i, j));
        self.permute(&order);
        drop(order);
        let local_min = if self.rows > 0 { self.key(0) } else { u64::MAX };
        let local_max = if self.rows > 0 { self.key(self.rows - 1) } else { 0 };
        let (mut kmin, mut kmax) = (0u64, 0u64);
        comm.all_reduce_into(&local_min, &mut kmin, SystemOperation::min());
        comm.all_reduce_into(&local_max, &mut kmax, SystemOperation::max());
        let mut send_n = vec![0 as Count; size];
        if kmin <= kmax {
            let range = (kmax - kmin) as u128 + 1;
            for i in 0..self.rows {
                send_n[((self.key(i) - kmin) as u128 * size as u128 / range) as usize] += 1;
            }
        }
        let mut recv_n = vec![0 as Count; size];
        comm.all_to_all_into(&send_n[..], &mut recv_n[..]);
        for c in &mut self.columns {
            let w = c.width;
            match &mut c.data {
                ColumnData::U64(v) => *v = alltoallv(comm, &std::mem::take(v), &send_n, &recv_n, w),
                ColumnData::U32(v) => *v = alltoallv(comm, &std::mem::take(v), &send_n, &recv_n, w),
                ColumnData::F64(v) => *v = alltoallv(comm, &std::mem::take(v), &send_n, &recv_n, w),
            }
        }
        self.rows = recv_n.iter().sum::<Count>() as usize;
        let mut order: Vec<usize> = (0..self.rows).collect();
        order.sort_by(|&i, &j| self.cmp_rows(i, j));
        self.permute(&order);
        let n = self.rows as u64;
        let mut counts = vec![0u64; size];
        comm.all_gather_into(&n, &mut counts[..]);
        let rank = comm.rank() as usize;
        (self, counts[..rank].iter().sum(), counts.iter().sum())
    }
}

/// Rows `order[0], order[1], …` of `width` values each.
fn gather<T: Copy>(v: &[T], order: &[usize], width: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(order.len() * width);
    order.iter().for_each(|&i| out.extend_from_slice(&v[i * width..(i + 1) * width]));
    out
}
