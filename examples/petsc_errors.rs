//! Failing PETSc calls return `Err(PetscError)` with a readable message
//! instead of aborting: prints one `error case=... code=... message=...` line
//! per deliberate mistake from rank 0, then `errors done`.
use mpi::traits::*;
use stiffgrain::petsc::{InsertMode, Mat, Petsc, PetscError, Vector};

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
        println!("errors done");
    }
    drop((ones, y, a));
    drop(v);
    drop(petsc);
}
