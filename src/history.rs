//! History that outlives a step: per-body and per-contact columns a solver
//! declares by name and width (the manner of LAMMPS's fix neigh/history and
//! mesa_pd's ContactHistory). The World keeps the rows where their body
//! lives: a body's row on its owner, a contact's row on the owner of its
//! body a (the contact's rank). Migration, rebalance, roll-back and
//! checkpoints carry the rows; a solver only reads and writes them.
//!
//! The rule for contacts: a solver replaces the contact rows after each
//! accepted step with those of the step's contacts, so a contact that
//! disappears drops its history and one that reappears starts fresh.
use crate::contact::ContactKey;
use crate::parallel::records::{send_to, FlatRecords};
use crate::parallel::Comm;
use mpi::traits::*;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::hash::Hash;

/// A table's rows by key. FxHash: keys are small integers, looked up for
/// every contact each step, and no order is ever read from the map.
pub type Rows<K> = FxHashMap<K, Vec<f64>>;

/// One declared column: `width` floats per row (flags as 0.0 / 1.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub width: usize,
}

/// A declared column's place in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Col {
    offset: usize,
    width: usize,
}

impl Col {
    pub fn width(&self) -> usize {
        self.width
    }

    pub fn of<'r>(&self, row: &'r [f64]) -> &'r [f64] {
        &row[self.offset..self.offset + self.width]
    }

    pub fn of_mut<'r>(&self, row: &'r mut [f64]) -> &'r mut [f64] {
        &mut row[self.offset..self.offset + self.width]
    }
}

/// What a solver keeps between steps ([`crate::solver::Solver::history`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistorySpec {
    pub body: Vec<Column>,
    pub contact: Vec<Column>,
}

/// A key a table's rows are found by and sent with: the body id (the rank
/// that owns it holds the row), or the contact key (owned with body a).
pub trait RowKey: Copy + Eq + Hash + Ord {
    /// Integer fields beside the record key.
    const N_U: usize;
    /// The body whose owner holds the row.
    fn body(&self) -> u64;
    fn fields(&self) -> Vec<u64>;
    fn from_record(key: u64, u: &[u64]) -> Self;
}

impl RowKey for u64 {
    const N_U: usize = 0;
    fn body(&self) -> u64 {
        *self
    }
    fn fields(&self) -> Vec<u64> {
        Vec::new()
    }
    fn from_record(key: u64, _: &[u64]) -> Self {
        key
    }
}

impl RowKey for ContactKey {
    const N_U: usize = 3;
    fn body(&self) -> u64 {
        self.a
    }
    fn fields(&self) -> Vec<u64> {
        vec![self.b, self.sub_a as u64, self.sub_b as u64]
    }
    fn from_record(key: u64, u: &[u64]) -> Self {
        ContactKey::from_u64s(&[key, u[0], u[1], u[2]])
    }
}

/// Rows of declared columns by key.
#[derive(Clone, Debug, PartialEq)]
pub struct Table<K: RowKey> {
    columns: Vec<Column>,
    width: usize,
    rows: Rows<K>,
}

impl<K: RowKey> Default for Table<K> {
    fn default() -> Self {
        Self { columns: Vec::new(), width: 0, rows: Rows::default() }
    }
}

impl<K: RowKey> Table<K> {
    fn declare(columns: &[Column]) -> Self {
        Self { columns: columns.to_vec(), width: columns.iter().map(|c| c.width).sum(), rows: Rows::default() }
    }

    /// The place of column `name` in a row. Panics on a name the solver did
    /// not declare: a programming error, not an input error.
    pub fn col(&self, name: &str) -> Col {
        let mut offset = 0;
        for c in &self.columns {
            if c.name == name {
                return Col { offset, width: c.width };
            }
            offset += c.width;
        }
        panic!("history column {name:?} was not declared");
    }

    /// Floats per row.
    pub fn width(&self) -> usize {
        self.width
    }

    pub fn get(&self, key: &K) -> Option<&[f64]> {
        self.rows.get(key).map(|r| r.as_slice())
    }

    /// The row of `key`, zero-filled when new.
    pub fn entry(&mut self, key: K) -> &mut [f64] {
        let w = self.width;
        self.rows.entry(key).or_insert_with(|| vec![0.0; w])
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The keys of the rows, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.rows.keys()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Replaces every row (a contact table after an accepted step).
    pub fn replace(&mut self, rows: Rows<K>) {
        debug_assert!(rows.values().all(|r| r.len() == self.width));
        self.rows = rows;
    }

    /// Keeps the rows whose key `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.rows.retain(|k, _| keep(k));
    }

    /// The rows as records sorted by key (a checkpoint table).
    pub fn records(&self) -> FlatRecords {
        let mut keys: Vec<&K> = self.rows.keys().collect();
        keys.sort();
        let mut recs = FlatRecords::with_capacity(K::N_U, self.width, keys.len());
        for k in keys {
            recs.push(k.body(), &k.fields(), &self.rows[k]);
        }
        recs
    }

    /// Adds records (rows arriving from another rank or a checkpoint).
    fn absorb(&mut self, recs: &FlatRecords) {
        for i in 0..recs.len() {
            self.rows.insert(K::from_record(recs.keys[i], recs.u_row(i)), recs.f_row(i).to_vec());
        }
    }

    /// Sends the rows of bodies that leave this rank (id → destination)
    /// along with them. Collective.
    fn migrate(&mut self, comm: &Comm, leaving: &HashMap<u64, usize>) {
        let mut out = FlatRecords::new(K::N_U, self.width);
        let mut dest = Vec::new();
        let mut gone: Vec<K> = self.rows.keys().filter(|k| leaving.contains_key(&k.body())).copied().collect();
        gone.sort();
        for k in gone {
            let row = self.rows.remove(&k).expect("listed above");
            out.push(k.body(), &k.fields(), &row);
            dest.push(leaving[&k.body()]);
        }
        let got = send_to(comm, &out, &dest);
        self.absorb(&got);
    }

    /// Takes records that may sit on any rank (a checkpoint's slab) to the
    /// owners of their bodies. Collective.
    fn adopt(&mut self, comm: &Comm, recs: &FlatRecords, owned: &[u64]) {
        // A table of another layout has nothing to give (the solver's state
        // version guards real layout changes); the rounds stay collective.
        let empty = FlatRecords::new(K::N_U, self.width);
        let recs = if recs.n_f == self.width && recs.n_u == K::N_U { recs } else { &empty };
        let got = route_to_owners(comm, recs, owned);
        self.absorb(&got);
    }
}

/// Sends records keyed by body id (any rank may hold any) to the ranks
/// that own those bodies (`owned`: this rank's ids): a rendezvous on rank
/// `id % size`, which learns the owners of the ids it stands for. A record
/// whose body no rank owns is dropped. Collective.
pub fn route_to_owners(comm: &Comm, recs: &FlatRecords, owned: &[u64]) -> FlatRecords {
    let size = comm.size() as u64;
    let me = comm.rank() as u64;
    let rendezvous = |id: u64| (id % size) as usize;
    let dest: Vec<usize> = owned.iter().map(|&id| rendezvous(id)).collect();
    // Owners by id at the rendezvous: the sender's rank rides in u.
    let mut who = FlatRecords::new(1, 0);
    for &id in owned {
        who.push(id, &[me], &[]);
    }
    let owners_got = send_to(comm, &who, &dest);
    let owner: HashMap<u64, usize> = (0..owners_got.len()).map(|i| (owners_got.keys[i], owners_got.u_row(i)[0] as usize)).collect();
    let dest: Vec<usize> = recs.keys.iter().map(|&k| rendezvous(k)).collect();
    let at_rendezvous = send_to(comm, recs, &dest);
    let mut keep = FlatRecords::new(recs.n_u, recs.n_f);
    let mut to = Vec::new();
    for i in 0..at_rendezvous.len() {
        if let Some(&r) = owner.get(&at_rendezvous.keys[i]) {
            keep.push(at_rendezvous.keys[i], at_rendezvous.u_row(i), at_rendezvous.f_row(i));
            to.push(r);
        }
    }
    send_to(comm, &keep, &to)
}

/// Every declared history table of one rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    pub body: Table<u64>,
    pub contact: Table<ContactKey>,
}

/// The table `name` of a checkpoint's list.
pub fn table<'t>(tables: &'t [(String, FlatRecords)], name: &str) -> Option<&'t FlatRecords> {
    tables.iter().find(|(n, _)| n == name).map(|(_, r)| r)
}

/// Checkpoint table names of the two tables.
pub const BODY_TABLE: &str = "body";
pub const CONTACT_TABLE: &str = "contact";

impl History {
    pub fn new(spec: &HistorySpec) -> Self {
        Self { body: Table::declare(&spec.body), contact: Table::declare(&spec.contact) }
    }

    /// Moves the rows of departing bodies (and of the contacts they own) to
    /// their new ranks. Collective.
    pub fn migrate(&mut self, comm: &Comm, leaving: &HashMap<u64, usize>) {
        self.body.migrate(comm, leaving);
        self.contact.migrate(comm, leaving);
    }

    /// Keeps the body rows of `owned` ids only (a body that left the scene).
    pub fn keep_bodies(&mut self, owned: &[u64]) {
        let owned: std::collections::HashSet<u64> = owned.iter().copied().collect();
        self.body.retain(|id| owned.contains(id));
        self.contact.retain(|k| owned.contains(&k.a));
    }

    /// The tables as named checkpoint records.
    pub fn tables(&self) -> Vec<(String, FlatRecords)> {
        vec![(BODY_TABLE.to_string(), self.body.records()), (CONTACT_TABLE.to_string(), self.contact.records())]
    }

    /// Takes a checkpoint's tables (this rank's slab of each) to the owners
    /// of their bodies. Collective.
    pub fn adopt(&mut self, comm: &Comm, tables: &[(String, FlatRecords)], owned: &[u64]) {
        let find = |name: &str, n_u: usize, w: usize| table(tables, name).cloned().unwrap_or_else(|| FlatRecords::new(n_u, w));
        let b = find(BODY_TABLE, 0, self.body.width);
        self.body.adopt(comm, &b, owned);
        let c = find(CONTACT_TABLE, 3, self.contact.width);
        self.contact.adopt(comm, &c, owned);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> HistorySpec {
        HistorySpec {
            body: vec![Column { name: "acceleration", width: 3 }, Column { name: "flag", width: 1 }],
            contact: vec![Column { name: "gap_t", width: 3 }],
        }
    }

    #[test]
    fn columns_find_their_place_in_a_row() {
        let mut h = History::new(&spec());
        assert_eq!(h.body.width(), 4);
        let (acc, flag) = (h.body.col("acceleration"), h.body.col("flag"));
        let row = h.body.entry(7);
        acc.of_mut(row).copy_from_slice(&[1.0, 2.0, 3.0]);
        flag.of_mut(row)[0] = 1.0;
        assert_eq!(h.body.get(&7).unwrap(), &[1.0, 2.0, 3.0, 1.0]);
    }

    #[test]
    fn records_round_trip_sorted_by_key() {
        let mut h = History::new(&spec());
        let k1 = ContactKey { a: 5, b: 9, sub_a: 1, sub_b: 2 };
        let k0 = ContactKey { a: 5, b: 8, sub_a: 0, sub_b: 0 };
        h.contact.entry(k1).copy_from_slice(&[1.0, 2.0, 3.0]);
        h.contact.entry(k0).copy_from_slice(&[4.0, 5.0, 6.0]);
        let recs = h.contact.records();
        assert_eq!(recs.u_row(0), &[8, 0, 0]);
        let mut back = Table::<ContactKey>::declare(&spec().contact);
        back.absorb(&recs);
        assert_eq!(back, h.contact);
    }

    #[test]
    #[should_panic(expected = "not declared")]
    fn an_undeclared_column_is_a_programming_error() {
        History::new(&spec()).contact.col("normal");
    }
}
