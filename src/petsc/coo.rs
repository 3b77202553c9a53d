//! COO values into a BAIJ matrix by blocks. PETSc 3.18 has no native COO
//! assembly for (MPI)BAIJ: `MatSetValuesCOO` falls back to one
//! `MatSetValues` per entry, a third of a Newton step's time on the n = 20
//! frictional pyramid. [`BlockCoo`] sums the entries into dense bs × bs
//! blocks and sets them one block row at a time (`MatSetValuesBlocked`).
use super::PetscInt;

/// Where each COO entry lands in a buffer laid out for
/// `MatSetValuesBlocked`, one call per block row.
#[derive(Debug)]
pub(crate) struct BlockCoo {
    pub bs: usize,
    /// Buffer position of entry k (`usize::MAX`: negative index, ignored).
    pub pos: Vec<usize>,
    /// Block row of each group, its block columns `cols[starts[g]..starts[g+1]]`.
    pub rows: Vec<PetscInt>,
    pub cols: Vec<PetscInt>,
    pub starts: Vec<usize>,
}

impl BlockCoo {
    /// The block layout of the COO pattern `(i[k], j[k])` (global scalar
    /// indices; negative ones ignored, as by `MatSetValuesCOO`).
    pub fn new(i: &[PetscInt], j: &[PetscInt], bs: usize) -> BlockCoo {
        let b = bs as PetscInt;
        let key = |k: usize| (i[k] / b, j[k] / b);
        let valid = |k: usize| i[k] >= 0 && j[k] >= 0;
        // Entries come in runs of one block (a contact's rows over one
        // body): deduplicate runs before sorting.
        let mut blocks: Vec<(PetscInt, PetscInt)> = Vec::new();
        for k in (0..i.len()).filter(|&k| valid(k)) {
            if blocks.last() != Some(&key(k)) {
                blocks.push(key(k));
            }
        }
        blocks.sort_unstable();
        blocks.dedup();
        let (mut rows, mut starts) = (Vec::new(), Vec::new());
        for (n, &(r, _)) in blocks.iter().enumerate() {
            if rows.last() != Some(&r) {
                rows.push(r);
                starts.push(n);
            }
        }
        starts.push(blocks.len());
        // Offset of block n in the buffer and the width (blocks) of its row.
        let mut place = vec![(0usize, 0usize); blocks.len()];
        for g in 0..rows.len() {
            let (s, e) = (starts[g], starts[g + 1]);
            for n in s..e {
                place[n] = (s * bs * bs + (n - s) * bs, e - s);
            }
        }
        let mut pos = vec![usize::MAX; i.len()];
        let mut last: Option<((PetscInt, PetscInt), usize)> = None;
        for k in (0..i.len()).filter(|&k| valid(k)) {
            let n = match last {
                Some((kk, n)) if kk == key(k) => n,
                _ => blocks.binary_search(&key(k)).expect("every block was listed"),
            };
            last = Some((key(k), n));
            let (off, width) = place[n];
            let (r, c) = ((i[k] % b) as usize, (j[k] % b) as usize);
            pos[k] = off + r * width * bs + c;
        }
        let cols = blocks.iter().map(|&(_, c)| c).collect();
        BlockCoo { bs, pos, rows, cols, starts }
    }

    /// The buffer of block values for COO values `v`.
    pub fn gather(&self, v: &[f64]) -> Vec<f64> {
        let mut buf = vec![0.0; self.cols.len() * self.bs * self.bs];
        for (&p, &x) in self.pos.iter().zip(v) {
            if p != usize::MAX {
                buf[p] += x;
            }
        }
        buf
    }

    /// Block row g's block columns and its values in `buf`.
    pub fn row<'a>(&'a self, g: usize, buf: &'a [f64]) -> (&'a [PetscInt], &'a [f64]) {
        let (s, e) = (self.starts[g], self.starts[g + 1]);
        let bb = self.bs * self.bs;
        (&self.cols[s..e], &buf[s * bb..e * bb])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_land_in_their_blocks_and_repeats_sum() {
        // bs 2: entries in blocks (0,0), (0,1), (1,1) and a repeat.
        let i = [0, 1, 0, 3, 1, -1, 0];
        let j = [0, 1, 3, 2, 1, 0, 0];
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 9.0, 10.0];
        let c = BlockCoo::new(&i, &j, 2);
        assert_eq!(c.rows, vec![0, 1]);
        let buf = c.gather(&v);
        let (cols, vals) = c.row(0, &buf);
        assert_eq!(cols, &[0, 1]);
        // Row-major over 2 rows × (2 blocks × 2 columns).
        assert_eq!(vals, &[11.0, 0.0, 0.0, 3.0, 0.0, 7.0, 0.0, 0.0]);
        let (cols, vals) = c.row(1, &buf);
        assert_eq!(cols, &[1]);
        assert_eq!(vals, &[0.0, 0.0, 4.0, 0.0]);
    }
}
