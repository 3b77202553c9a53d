//! Per-contact output as named columns: a frame writes whatever columns the
//! table holds, so a new output field is one `push` where its values are
//! (ARCHITECTURE.md "Adding an output field").
use super::redistribute::{redistribute_sorted, FlatRecords};
use mpi::traits::*;

/// A per-contact output field a solver contributes to frames, `width`
/// values per contact in `Contacts` order.
#[derive(Clone, Debug)]
pub struct ContactField {
    pub name: &'static str,
    pub width: usize,
    pub values: Vec<f64>,
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
}

impl ContactTable {
    /// An empty table for `rows` contacts.
    pub fn new(rows: usize) -> Self {
        Self { rows, columns: Vec::new() }
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

    /// (integer, float) values per row.
    fn widths(&self) -> (usize, usize) {
        self.columns.iter().fold((0, 0), |(u, f), c| match c.data {
            ColumnData::F64(_) => (u, f + c.width),
            _ => (u + c.width, f),
        })
    }

    /// Collective: the rows of every rank sorted by (body_a, body_b, sub_a,
    /// sub_b) and split into contiguous slabs; returns this rank's slab and
    /// its offset and the total number of rows. Every rank must hold the
    /// same columns (names, kinds, widths) in the same order.
    pub fn sorted<C: Communicator>(&self, comm: &C) -> (ContactTable, u64, u64) {
        let (nu, nf) = self.widths();
        let mut recs = FlatRecords::new(nu, nf);
        let (mut u, mut f) = (Vec::with_capacity(nu), Vec::with_capacity(nf));
        for i in 0..self.rows {
            u.clear();
            f.clear();
            for c in &self.columns {
                let r = i * c.width..(i + 1) * c.width;
                match &c.data {
                    ColumnData::U64(v) => u.extend_from_slice(&v[r]),
                    ColumnData::U32(v) => u.extend(v[r].iter().map(|&x| x as u64)),
                    ColumnData::F64(v) => f.extend_from_slice(&v[r]),
                }
            }
            recs.push(u.first().copied().unwrap_or(0), &u, &f);
        }
        let got = redistribute_sorted(comm, recs);
        let r = &got.records;
        let n = r.len();
        let mut out = ContactTable::new(n);
        let (mut ou, mut of) = (0, 0);
        for c in &self.columns {
            let w = c.width;
            let data = match c.data {
                ColumnData::F64(_) => {
                    let v = (0..n).flat_map(|i| r.f_row(i)[of..of + w].to_vec()).collect();
                    of += w;
                    ColumnData::F64(v)
                }
                ColumnData::U64(_) => {
                    let v = (0..n).flat_map(|i| r.u_row(i)[ou..ou + w].to_vec()).collect();
                    ou += w;
                    ColumnData::U64(v)
                }
                ColumnData::U32(_) => {
                    let v = (0..n).flat_map(|i| r.u_row(i)[ou..ou + w].iter().map(|&x| x as u32).collect::<Vec<_>>()).collect();
                    ou += w;
                    ColumnData::U32(v)
                }
            };
            out.columns.push(Column { name: c.name.clone(), width: w, data });
        }
        (out, got.offset, got.total)
    }
}
