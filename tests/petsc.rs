//! The safe PETSc binding under mpirun: a distributed Poisson solve whose
//! exact discrete solution is known, and a SNES Newton solve with a known
//! root and quadratic convergence.
mod common;
use common::mpirun_ok;

use common::example;

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

/// Residual norms from the `history it=K norm=R` lines.
fn history(out: &str) -> Vec<f64> {
    out.lines()
        .filter(|l| l.starts_with("history "))
        .map(|l| field(l, "history ", "norm").parse().unwrap())
        .collect()
}

fn snes(np: usize, args: &[&str]) -> String {
    let out = mpirun_ok(np, &example("snes_newton"), args);
    assert_eq!(field(&out, "snes ", "ranks"), np.to_string(), "{out}");
    let code: i32 = field(&out, "snes ", "code").parse().unwrap();
    assert!(code > 0, "SNES did not converge ({}):\n{out}", field(&out, "snes ", "reason"));
    let error: f64 = field(&out, "snes ", "error").parse().unwrap();
    assert!(error < 1e-10, "error {error} at {np} ranks:\n{out}");

    // Quadratic convergence near the root: log r_{k+1} / log r_k ≈ 2.
    let r = history(&out);
    assert!(r.len() >= 3, "too short a history:\n{out}");
    let quadratic = r
        .windows(2)
        .filter(|w| w[0] < 1e-2 && w[1] > 1e-14)
        .map(|w| w[1].ln() / w[0].ln())
        .collect::<Vec<_>>();
    assert!(quadratic.iter().any(|&q| q > 1.7), "no quadratic step in {r:?} (ratios {quadratic:?})\n{out}");
    // The monitor closure saw every iteration the history recorded.
    assert_eq!(field(&out, "snes ", "monitor_calls"), r.len().to_string(), "{out}");
    out
}

#[test]
fn snes_newton_1_rank() {
    snes(1, &[]);
}

#[test]
fn snes_newton_2_ranks() {
    snes(2, &["100"]);
}

#[test]
fn snes_precheck_closure_is_called_and_shortens_steps() {
    let out = snes(2, &[]);
    let calls: usize = field(&out, "snes ", "precheck_calls").parse().unwrap();
    let changed: usize = field(&out, "snes ", "precheck_changed").parse().unwrap();
    let its: usize = field(&out, "snes ", "iterations").parse().unwrap();
    assert!(calls > 0, "{out}");
    assert_eq!(calls, its, "one pre-check per Newton step:\n{out}");
    // From x = 0 the first Newton steps exceed the cap of 0.5.
    assert!(changed > 0 && changed < calls, "{out}");
}

#[test]
fn snes_options_override_code_defaults() {
    // `-snes_max_it` given: the code default is not applied.
    let out = snes(1, &["-snes_max_it", "40"]);
    assert_eq!(field(&out, "snes ", "default_applied"), "false", "{out}");
    let out = snes(1, &[]);
    assert_eq!(field(&out, "snes ", "default_applied"), "true", "{out}");
    // Too few iterations allowed: SNES reports divergence (negative reason).
    let out = mpirun_ok(1, &example("snes_newton"), &["-snes_max_it", "2"]);
    let code: i32 = field(&out, "snes ", "code").parse().unwrap();
    assert!(code < 0, "{out}");
}

#[test]
fn snes_callback_error_becomes_petsc_error() {
    let out = mpirun_ok(2, &example("snes_newton"), &["--fail-residual"]);
    let line = out.lines().find(|l| l.starts_with("snes_error ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("code=83"), "{line}");
    assert!(line.contains("deliberate failure at residual call 3"), "{line}");
}

#[test]
fn failing_calls_return_errors_with_messages() {
    let out = mpirun_ok(2, &example("petsc_errors"), &[]);
    let case = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("error case={name} ")))
            .unwrap_or_else(|| panic!("no case {name}:\n{out}"))
            .to_string()
    };
    assert!(case("vec_out_of_range").contains("code=63"), "{out}");
    assert!(case("vec_out_of_range").contains("out of range"), "{out}");
    assert!(case("vec_lengths").contains("code=60"), "{out}");
    assert!(case("baij_block_size").contains("block size 6"), "{out}");
    assert!(case("baij_set_blocked").ends_with(" ok"), "{out}");
    // 2 ranks × 12 rows × value 2.
    assert_eq!(field(&out, "baij_mult_norm1", "baij_mult_norm1"), "48", "{out}");
    // Split CSR: the same products as `set_values`, exactly; each rank's
    // rows sum to (1 + r)·x_own + 0.75·x_next over r = 0, 1, 2.
    let line = out.lines().find(|l| l.starts_with("split_csr ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("same=true"), "{out}");
    let norm: f64 = field(&out, "split_csr ", "norm1").parse().expect("norm1");
    // Ranks p = 0, 1 (columns 2p, 2p + 1 hold 2p + 1, 2p + 2): rank 0's rows
    // 1·1 + 0.75·3, 2·2 + 0.75·3, 3·1 + 0.75·3; rank 1's 1·3 + 0.75·1,
    // 2·4 + 0.75·1, 3·3 + 0.75·1.
    let expected = (1.0 + 2.25) + (4.0 + 2.25) + (3.0 + 2.25) + (3.0 + 0.75) + (8.0 + 0.75) + (9.0 + 0.75);
    assert_eq!(norm, expected, "{out}");
    assert!(case("split_unsorted").contains("code=62") && case("split_unsorted").contains("ascending"), "{out}");
    assert!(case("split_out_of_range").contains("code=62"), "{out}");
    assert!(out.contains("errors done"), "{out}");
}

#[test]
fn snes_callback_panic_is_caught_at_the_ffi_boundary() {
    let out = mpirun_ok(1, &example("snes_newton"), &["--panic-jacobian"]);
    let line = out.lines().find(|l| l.starts_with("snes_error ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("code=83"), "{line}");
    assert!(line.contains("Jacobian callback panicked: deliberate panic in the Jacobian"), "{line}");
}
