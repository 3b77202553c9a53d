//! The safe PETSc binding under mpirun: a distributed Poisson solve whose
//! exact discrete solution is known, and a SNES Newton solve with a known
//! root and quadratic convergence.
mod common;
use common::{example, mpirun_ok};

/// Value of `key=` in the first line starting with `prefix`.
fn field(out: &str, prefix: &str, key: &str) -> String {
    let line = out
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{out}"));
    line.split_whitespace()
        .find_map(|t| t.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
        .to_string()
}

fn poisson(np: usize, args: &[&str]) -> String {
    let out = mpirun_ok(np, &example("petsc_poisson"), args);
    assert_eq!(field(&out, "poisson ", "ranks"), np.to_string(), "{out}");
    let err: f64 = field(&out, "poisson ", "max_error").parse().unwrap();
    assert!(err < 1e-8, "max_error {err} too large at {np} ranks:\n{out}");
    assert!(field(&out, "poisson ", "reason").starts_with("CONVERGED"), "{out}");
    out
}

#[test]
fn poisson_cg_jacobi_1_rank() {
    let out = poisson(1, &[]);
    assert_eq!(field(&out, "poisson ", "n"), "1000");
    assert_eq!(field(&out, "poisson ", "ksp"), "cg");
    assert_eq!(field(&out, "poisson ", "pc"), "jacobi");
}

#[test]
fn poisson_cg_jacobi_2_ranks() {
    poisson(2, &[]);
}

#[test]
fn poisson_cg_jacobi_3_ranks() {
    poisson(3, &["999"]);
}

#[test]
fn poisson_options_pass_through() {
    let out = poisson(2, &["-ksp_type", "gmres", "-pc_type", "bjacobi"]);
    assert_eq!(field(&out, "poisson ", "ksp"), "gmres");
    assert_eq!(field(&out, "poisson ", "pc"), "bjacobi");
}
