//! Failing PETSc calls return `Err(PetscError)` with a readable message
//! instead of aborting: prints one `error case=... code=... message=...` line
//! per deliberate mistake from rank 0, then `errors done`.
use mpi::traits::*;
use stiffgrain::petsc::{InsertMode, Mat, Petsc, PetscError, PetscInt, SplitCsr, Vector};

fn report(root: bool, case: &str, r: Result<(), PetscError>) {
    if root {
        match r {
            Ok(()) => println!("error case={case} ok"),
            Err(e) => println!("error case={case} code={} message={}", e.code, e.message),
        }
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI init");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let petsc = Petsc::initialize(&args).expect("PETSc init");
    let world = universe.world();
    let root = world.rank() == 0;
    let n = 4 * world.size();

    let mut v = Vector::mpi(&world, 4).expect("Vector");
    // Index beyond the global size: PETSc's own check fails (every rank).
    report(root, "vec_out_of_range", v.set_values(&[n + 10], &[1.0], InsertMode::Insert));
    // Mismatched lengths: caught on the Rust side.
    report(root, "vec_lengths", v.set_values(&[0, 1], &[1.0], InsertMode::Insert));
    // A block size that does not divide the local rows.
    report(root, "baij_block_size", Mat::baij(&world, 6, 4, 4, 1, &[], 0, &[]).map(|_| ()));
    // After the errors, PETSc still works.
    let mut a = Mat::baij(&world, 6, 12, 12, 2, &[], 1, &[]).expect("BAIJ");
    let lo = a.ownership_range().expect("range").start / 6;
    let block: Vec<f64> = (0..36).map(|k| if k % 7 == 0 { 2.0 } else { 0.0 }).collect();
    report(root, "baij_set_blocked", a.set_values_blocked(&[lo, lo + 1], &[lo], &[block.clone(), block].concat(), InsertMode::Add));
    report(root, "baij_assemble", a.assemble());
    // Each rank's two block rows hold diag(2): A·1 = 2 on all 12 local rows.
    let (ones, mut y) = a.create_vecs().expect("vecs");
    let mut ones = ones;
    ones.set(1.0).expect("set");
    a.mult(&ones, &mut y).expect("mult");
    let norm1 = y.norm(stiffgrain::petsc::NormType::One).expect("norm");
    if root {
        println!("baij_mult_norm1={norm1}");
    }
    split_csr(&world, root);
    if root {
        println!("errors done");
    }
    drop((ones, y, a));
    drop(v);
    drop(petsc);
}

/// A matrix built from split CSR arrays equals the one built by
/// `set_values` (products compared exactly); malformed arrays are refused.
fn split_csr(world: &mpi::topology::SimpleCommunicator, root: bool) {
    let (p, size) = (world.rank() as PetscInt, world.size() as PetscInt);
    let (rows, cols) = (3, 2);
    let owned = cols * p..cols * (p + 1);
    // Row r: its own column, the next rank's first column (on one rank its
    // own again, so twice: the entries add), and that column once more.
    let row = |r: PetscInt| vec![(cols * ((p + 1) % size), 0.25), (owned.start + r % cols, 1.0 + r as f64), (cols * ((p + 1) % size), 0.5)];
    let mut csr = SplitCsr::with_capacity(rows as usize, 9);
    let mut reference = Mat::aij(world, rows, cols, 3, &[], 3, &[]).expect("AIJ");
    let row0 = rows * p;
    for r in 0..rows {
        let mut e = row(r);
        csr.push_row(&mut e, &owned);
        for &(j, v) in &row(r) {
            reference.set_values(&[row0 + r], &[j], &[v], InsertMode::Add).expect("set");
        }
    }
    reference.assemble().expect("assemble");
    let split = Mat::aij_from_split(world, cols, cols * size, csr).expect("split");
    let (mut x, mut y) = split.create_vecs().expect("vecs");
    let (mut x2, mut y2) = reference.create_vecs().expect("vecs");
    for (k, v) in x.view_mut().expect("view").iter_mut().enumerate() {
        *v = (owned.start as usize + k + 1) as f64;
    }
    x2.view_mut().expect("view").copy_from_slice(&x.view().expect("view"));
    split.mult(&x, &mut y).expect("mult");
    reference.mult(&x2, &mut y2).expect("mult");
    let same = y.view().expect("view").iter().zip(y2.view().expect("view").iter()).all(|(a, b)| a == b);
    split.mult_transpose(&y, &mut x).expect("multT");
    reference.mult_transpose(&y2, &mut x2).expect("multT");
    let same_t = x.view().expect("view").iter().zip(x2.view().expect("view").iter()).all(|(a, b)| a == b);
    let mut all = 0i32;
    world.all_reduce_into(&((same && same_t) as i32), &mut all, mpi::collective::SystemOperation::min());
    let norm = y.norm(stiffgrain::petsc::NormType::One).expect("norm");
    if root {
        println!("split_csr same={} norm1={norm}", all == 1);
    }
    // Columns out of order, and an owned column out of range.
    let mut unsorted = SplitCsr::with_capacity(1, 2);
    unsorted.push_row(&mut [(owned.start, 1.0)], &owned);
    unsorted.dj.push(0);
    unsorted.da.push(1.0);
    *unsorted.di.last_mut().expect("row") = 2;
    report(root, "split_unsorted", Mat::aij_from_split(world, cols, cols * size, unsorted).map(|_| ()));
    let mut wide = SplitCsr::with_capacity(1, 1);
    wide.push_row(&mut [(owned.start, 1.0)], &owned);
    wide.dj[0] = cols;
    report(root, "split_out_of_range", Mat::aij_from_split(world, cols, cols * size, wide).map(|_| ()));
}
