//! Newton's method with SNES on a distributed nonlinear system with a known
//! root: F(x) = M x + x³ − c = 0, M = I + ε·tridiag(−1, 2, −1), x³ entrywise,
//! c = M x* + x*³ for x*_i = 1 + ½ sin(2π (i+1)/(N+1)). F is the gradient of a
//! strictly convex function, so Newton with line search converges from x = 0.
//! The Jacobian M + diag(3x²) is written in Rust; a line-search pre-check caps
//! the Newton step at ‖y‖∞ ≤ 0.5 (so early steps are shortened).
//!
//! Usage: `mpirun -np 2 snes_newton [N] [--fail-residual] [--panic-jacobian] [PETSc options...]`
//! Prints the residual-norm history and the final error from rank 0.
use mpi::traits::*;
use std::cell::{Cell, RefCell};
use stiffgrain::petsc::{options, InsertMode, Mat, NormType, Petsc, Stage, Vector};

const EPS: f64 = 0.5;
const MAX_STEP: f64 = 0.5;

fn exact(i: i32, n: i32) -> f64 {
    1.0 + 0.5 * (2.0 * std::f64::consts::PI * (i as f64 + 1.0) / (n as f64 + 1.0)).sin()
}

fn main() {
    let universe = mpi::initialize().expect("MPI init");
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let fail = args.iter().any(|a| a == "--fail-residual");
    let panic_jacobian = args.iter().any(|a| a == "--panic-jacobian");
    args.retain(|a| a != "--fail-residual" && a != "--panic-jacobian");
    let (n, petsc_args) = match args.first().and_then(|a| a.parse::<i32>().ok()) {
        Some(n) => (n, args[1..].to_vec()),
        None => (64, args),
    };
    let petsc = Petsc::initialize(&petsc_args).expect("PETSc init");
    let world = universe.world();
    if let Err(e) = run(&world, n, fail, panic_jacobian) {
        eprintln!("snes_newton: {e}");
        drop(petsc);
        drop(universe);
        std::process::exit(1);
    }
}

fn run(
    world: &mpi::topology::SimpleCommunicator,
    n: i32,
    fail: bool,
    panic_jacobian: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = world.rank() == 0;
    // A code default the command line may override.
    let default_applied = options::set_default("-snes_max_it", Some("50"))?;
    let stage = Stage::register("Newton solve")?;

    let mut x = Vector::with_sizes(world, None, Some(n))?;
    let rows = x.ownership_range()?;
    let local = rows.end - rows.start;
    let neighbours = |i: i32| -> Vec<i32> { [i - 1, i, i + 1].into_iter().filter(|&j| (0..n).contains(&j)).collect() };
    let (mut d_nnz, mut o_nnz) = (Vec::new(), Vec::new());
    for i in rows.clone() {
        let (d, o): (Vec<i32>, Vec<i32>) = neighbours(i).into_iter().partition(|j| rows.contains(j));
        d_nnz.push(d.len() as i32);
        o_nnz.push(o.len() as i32);
    }
    // M = I + ε tridiag(−1, 2, −1), the linear part of F.
    let mut m = Mat::aij(world, local, local, 0, &d_nnz, 0, &o_nnz)?;
    for i in rows.clone() {
        let cols = neighbours(i);
        let vals: Vec<f64> = cols.iter().map(|&j| if j == i { 1.0 + 2.0 * EPS } else { -EPS }).collect();
        m.set_values(&[i], &cols, &vals, InsertMode::Insert)?;
    }
    m.assemble()?;
    let mut xstar = x.duplicate()?;
    {
        let mut v = xstar.view_mut()?;
        for (k, i) in rows.clone().enumerate() {
            v[k] = exact(i, n);
        }
    }
    // c = M x* + x*³
    let mut c = x.duplicate()?;
    m.mult(&xstar, &mut c)?;
    {
        let xs = xstar.view()?;
        let mut cv = c.view_mut()?;
        for k in 0..cv.len() {
            cv[k] += xs[k].powi(3);
        }
    }
    let jac = Mat::aij(world, local, local, 0, &d_nnz, 0, &o_nnz)?;

    let residual_calls = Cell::new(0usize);
    let precheck_calls = Cell::new(0usize);
    let precheck_changed = Cell::new(0usize);
    let monitored = RefCell::new(Vec::new());
    let mut snes = stiffgrain::petsc::Snes::new(world)?;
    snes.set_function(None, |x: &Vector, f: &mut Vector| -> Result<(), Box<dyn std::error::Error>> {
        residual_calls.set(residual_calls.get() + 1);
        if fail && residual_calls.get() == 3 {
            return Err("deliberate failure at residual call 3".into());
        }
        m.mult(x, f)?;
        let xv = x.view()?;
        let cv = c.view()?;
        let mut fv = f.view_mut()?;
        for k in 0..fv.len() {
            fv[k] += xv[k].powi(3) - cv[k];
        }
        Ok(())
    })?;
    let rows_j = rows.clone();
    snes.set_jacobian(&jac, None, move |x: &Vector, a: &mut Mat, _p: Option<&mut Mat>| -> stiffgrain::petsc::Result<()> {
        assert!(!panic_jacobian, "deliberate panic in the Jacobian");
        let xv = x.view()?;
        for (k, i) in rows_j.clone().enumerate() {
            let cols = neighbours(i);
            let vals: Vec<f64> =
                cols.iter().map(|&j| if j == i { 1.0 + 2.0 * EPS + 3.0 * xv[k] * xv[k] } else { -EPS }).collect();
            a.set_values(&[i], &cols, &vals, InsertMode::Insert)?;
        }
        drop(xv);
        a.assemble()
    })?;
    snes.set_line_search_precheck(|_x: &Vector, y: &mut Vector| -> stiffgrain::petsc::Result<bool> {
        precheck_calls.set(precheck_calls.get() + 1);
        let big = y.norm(NormType::Infinity)?;
        if big > MAX_STEP {
            y.scale(MAX_STEP / big)?;
            precheck_changed.set(precheck_changed.get() + 1);
            return Ok(true);
        }
        Ok(false)
    })?;
    snes.set_monitor(|it, norm| -> Result<(), String> {
        monitored.borrow_mut().push((it, norm));
        Ok(())
    })?;
    snes.set_tolerances(Some(1e-11), Some(1e-14), Some(1e-16), None, None)?;
    {
        // Exact linear solves keep Newton quadratic; options still override.
        let mut ksp = snes.ksp()?;
        ksp.set_tolerances(Some(1e-14), Some(1e-50), None, Some(10_000))?;
    }
    snes.set_from_options()?;

    x.zero()?;
    let solved = {
        let _g = stage.push()?;
        snes.solve(None, &mut x)
    };
    if let Err(e) = solved {
        if root {
            println!("snes_error code={} message={}", e.code, e.message);
        }
        return Ok(());
    }
    let reason = snes.converged_reason()?;
    let history = snes.residual_history()?;
    let mut err = x.try_clone()?;
    err.axpy(-1.0, &xstar)?;
    let error = err.norm(NormType::Infinity)?;
    if root {
        for (k, r) in history.iter().enumerate() {
            println!("history it={k} norm={r:.6e}");
        }
        println!(
            "snes n={n} ranks={} reason={} code={} iterations={} function_norm={:.3e} error={error:.3e} \
             precheck_calls={} precheck_changed={} monitor_calls={} residual_calls={} default_applied={default_applied}",
            world.size(),
            reason.name,
            reason.code,
            snes.iteration_number()?,
            snes.function_norm()?,
            precheck_calls.get(),
            precheck_changed.get(),
            monitored.borrow().len(),
            residual_calls.get(),
        );
    }
    drop(snes);
    Ok(())
}
