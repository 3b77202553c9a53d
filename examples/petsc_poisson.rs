//! 1D Poisson -u'' = 2 on (0,1), u(0) = u(1) = 0, by finite differences on N
//! interior points, distributed with PETSc and solved with KSP (CG + Jacobi by
//! default; any `-ksp_*`/`-pc_*` option overrides). The exact solution
//! u = x(1-x) is reproduced exactly at the nodes, so the printed max_error is
//! the solver error only.
//!
//! Usage: `mpirun -np 3 petsc_poisson [N] [PETSc options...]`
use mpi::traits::*;
use stiffgrain::petsc::{InsertMode, Ksp, Mat, NormType, Petsc, Stage, Vector};

fn main() {
    let universe = mpi::initialize().expect("MPI init");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (n, petsc_args) = match args.first().and_then(|a| a.parse::<i32>().ok()) {
        Some(n) => (n, args[1..].to_vec()),
        None => (1000, args),
    };
    let petsc = Petsc::initialize(&petsc_args).expect("PETSc init");
    let world = universe.world();
    if let Err(e) = run(&world, n) {
        eprintln!("petsc_poisson: {e}");
        drop(petsc);
        drop(universe);
        std::process::exit(1);
    }
    // `petsc` drops before `universe`: PetscFinalize, then MPI_Finalize.
}

fn run(world: &mpi::topology::SimpleCommunicator, n: i32) -> Result<(), Box<dyn std::error::Error>> {
    let h = 1.0 / (n as f64 + 1.0);
    let assembly = Stage::register("Poisson assembly")?;
    let solve = Stage::register("Poisson solve")?;

    let guard = assembly.push()?;
    // PETSc decides the contiguous row blocks; the matrix follows the vector.
    let mut b = Vector::with_sizes(world, None, Some(n))?;
    let rows = b.ownership_range()?;
    let local = rows.end - rows.start;
    let (mut d_nnz, mut o_nnz) = (Vec::new(), Vec::new());
    for i in rows.clone() {
        let cols = [i - 1, i, i + 1].into_iter().filter(|&j| (0..n).contains(&j));
        let (d, o): (Vec<i32>, Vec<i32>) = cols.partition(|j| rows.contains(j));
        d_nnz.push(d.len() as i32);
        o_nnz.push(o.len() as i32);
    }
    let mut a = Mat::aij(world, local, local, 0, &d_nnz, 0, &o_nnz)?;
    let s = 1.0 / (h * h);
    for i in rows.clone() {
        let cols: Vec<i32> = [i - 1, i, i + 1].into_iter().filter(|&j| (0..n).contains(&j)).collect();
        let vals: Vec<f64> = cols.iter().map(|&j| if j == i { 2.0 * s } else { -s }).collect();
        a.set_values(&[i], &cols, &vals, InsertMode::Insert)?;
    }
    a.assemble()?;
    b.set(2.0)?;
    let mut exact = b.duplicate()?;
    {
        let mut e = exact.view_mut()?;
        for (k, i) in rows.clone().enumerate() {
            let x = (i as f64 + 1.0) * h;
            e[k] = x * (1.0 - x);
        }
    }
    guard.pop()?;

    let _g = solve.push()?;
    let mut ksp = Ksp::new(world)?;
    ksp.set_operators(&a, &a)?;
    ksp.set_type("cg")?;
    ksp.set_pc_type("jacobi")?;
    ksp.set_tolerances(Some(1e-12), Some(1e-50), None, Some(100_000))?;
    ksp.set_from_options()?;
    let mut x = b.duplicate()?;
    ksp.solve(&b, &mut x)?;
    let reason = ksp.converged_reason()?;
    let its = ksp.iteration_number()?;

    let mut err = x.try_clone()?;
    err.axpy(-1.0, &exact)?;
    let max_error = err.norm(NormType::Infinity)?;
    // Also check A x ≈ b through MatMult.
    let mut ax = b.duplicate()?;
    a.mult(&x, &mut ax)?;
    ax.axpy(-1.0, &b)?;
    let resid = ax.norm(NormType::Two)? / b.norm(NormType::Two)?;
    if world.rank() == 0 {
        println!(
            "poisson n={n} ranks={} iterations={its} max_error={max_error:.3e} rel_residual={resid:.3e} ksp={} pc={} reason={}",
            world.size(),
            ksp.type_name()?,
            ksp.pc_type_name()?,
            reason.name
        );
    }
    if !reason.converged() {
        return Err(format!("KSP did not converge: {reason}").into());
    }
    Ok(())
}
