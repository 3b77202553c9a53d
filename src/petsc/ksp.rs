//! Krylov linear solvers (KSP + PC): method and preconditioner chosen in code
//! as defaults and overridable by `-ksp_*`/`-pc_*` options.
use super::cstr::{cstring, static_str};
use super::error::{check, Result};
use super::ffi;
use super::init::{alive, require_alive, AsComm};
use super::mat::Mat;
use super::vec::Vector;
use super::PetscInt;
use std::ffi::c_char;

/// Why a KSP or SNES solve stopped: positive = converged, negative =
/// diverged, 0 = still iterating. `name` is PETSc's name (e.g.
/// `CONVERGED_RTOL`, `DIVERGED_ITS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvergedReason {
    /// The `KSPConvergedReason` / `SNESConvergedReason` value.
    pub code: i32,
    /// PETSc's name of the reason.
    pub name: String,
}

impl ConvergedReason {
    /// Whether the solver converged (`code > 0`).
    pub fn converged(&self) -> bool {
        self.code > 0
    }

    /// Whether the solver diverged (`code < 0`).
    pub fn diverged(&self) -> bool {
        self.code < 0
    }
}

impl std::fmt::Display for ConvergedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.code)
    }
}

/// A Krylov solver with its preconditioner; `KSPDestroy` on drop.
#[derive(Debug)]
pub struct Ksp {
    raw: ffi::KSP,
}

fn opt_real(v: Option<f64>) -> f64 {
    v.unwrap_or(ffi::PETSC_DEFAULT as f64)
}

impl Ksp {
    /// Creates a KSP on `comm` (`KSPCreate`). Collective.
    pub fn new(comm: &impl AsComm) -> Result<Ksp> {
        require_alive("Ksp::new")?;
        let mut raw: ffi::KSP = std::ptr::null_mut();
        // SAFETY: valid out pointer, live communicator.
        check(unsafe { ffi::KSPCreate(comm.as_comm(), &mut raw) })?;
        Ok(Ksp { raw })
    }

    /// Operator `a` and preconditioning matrix `p` (often the same)
    /// (`KSPSetOperators`; PETSc keeps its own references).
    pub fn set_operators(&mut self, a: &Mat, p: &Mat) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::KSPSetOperators(self.raw, a.raw(), p.raw()) })
    }

    /// Krylov method by PETSc name (`"cg"`, `"gmres"`, `"preonly"`, ...).
    pub fn set_type(&mut self, name: &str) -> Result<()> {
        let n = cstring(name)?;
        // SAFETY: live handle, valid C string.
        check(unsafe { ffi::KSPSetType(self.raw, n.as_ptr()) })
    }

    /// Preconditioner by PETSc name (`"jacobi"`, `"bjacobi"`, `"gamg"`, `"hypre"`, ...).
    pub fn set_pc_type(&mut self, name: &str) -> Result<()> {
        let n = cstring(name)?;
        let mut pc: ffi::PC = std::ptr::null_mut();
        // SAFETY: live handle; the PC is owned by the KSP.
        unsafe {
            check(ffi::KSPGetPC(self.raw, &mut pc))?;
            check(ffi::PCSetType(pc, n.as_ptr()))
        }
    }

    /// Relative, absolute and divergence tolerances and the iteration limit
    /// (`KSPSetTolerances`); `None` keeps PETSc's current value.
    pub fn set_tolerances(
        &mut self,
        rtol: Option<f64>,
        atol: Option<f64>,
        dtol: Option<f64>,
        max_it: Option<PetscInt>,
    ) -> Result<()> {
        let it = max_it.unwrap_or(ffi::PETSC_DEFAULT as PetscInt);
        // SAFETY: live handle.
        check(unsafe { ffi::KSPSetTolerances(self.raw, opt_real(rtol), opt_real(atol), opt_real(dtol), it) })
    }

    /// Options prefix, e.g. `"cd_"` so that `-cd_ksp_type` applies to this solver.
    pub fn set_options_prefix(&mut self, prefix: &str) -> Result<()> {
        let p = cstring(prefix)?;
        // SAFETY: live handle, valid C string.
        check(unsafe { ffi::KSPSetOptionsPrefix(self.raw, p.as_ptr()) })
    }

    /// Use a nonzero initial guess (the content of `x` in [`Ksp::solve`]).
    pub fn set_initial_guess_nonzero(&mut self, flag: bool) -> Result<()> {
        let b = if flag { ffi::PetscBool::PETSC_TRUE } else { ffi::PetscBool::PETSC_FALSE };
        // SAFETY: live handle.
        check(unsafe { ffi::KSPSetInitialGuessNonzero(self.raw, b) })
    }

    /// Applies command-line options (`KSPSetFromOptions`): call after setting
    /// code defaults so that `-ksp_type` etc. override them.
    pub fn set_from_options(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::KSPSetFromOptions(self.raw) })
    }

    /// Solves `A x = b` (`KSPSolve`). A diverged solve is not an error here:
    /// check [`Ksp::converged_reason`]. Collective.
    pub fn solve(&mut self, b: &Vector, x: &mut Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::KSPSolve(self.raw, b.raw(), x.raw()) })
    }

    /// Iterations of the last solve.
    pub fn iteration_number(&self) -> Result<PetscInt> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::KSPGetIterationNumber(self.raw, &mut n) })?;
        Ok(n)
    }

    /// Why the last solve stopped.
    pub fn converged_reason(&self) -> Result<ConvergedReason> {
        let mut code: i32 = 0;
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: KSPConvergedReason is a C enum (i32 sized); PETSc writes a
        // valid value. The string is static.
        unsafe {
            check(ffi::KSPGetConvergedReason(self.raw, &mut code as *mut i32 as *mut ffi::KSPConvergedReason))?;
            check(ffi::KSPGetConvergedReasonString(self.raw, &mut name))?;
        }
        Ok(ConvergedReason { code, name: static_str(name) })
    }

    /// Last (preconditioned, by default) residual norm (`KSPGetResidualNorm`).
    pub fn residual_norm(&self) -> Result<f64> {
        let mut r = 0.0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::KSPGetResidualNorm(self.raw, &mut r) })?;
        Ok(r)
    }

    /// The KSP type now in use (after options), e.g. `"cg"`.
    pub fn type_name(&self) -> Result<String> {
        let mut t: *const c_char = std::ptr::null();
        // SAFETY: live handle; the type name is owned by PETSc.
        check(unsafe { ffi::KSPGetType(self.raw, &mut t) })?;
        Ok(static_str(t))
    }

    /// The PC type now in use (after options), e.g. `"jacobi"`.
    pub fn pc_type_name(&self) -> Result<String> {
        let mut pc: ffi::PC = std::ptr::null_mut();
        let mut t: *const c_char = std::ptr::null();
        // SAFETY: live handle; PC owned by the KSP; the name is owned by PETSc.
        unsafe {
            check(ffi::KSPGetPC(self.raw, &mut pc))?;
            check(ffi::PCGetType(pc, &mut t))?;
        }
        Ok(static_str(t))
    }

    /// Borrows a KSP owned by another object (e.g. the one inside a SNES).
    pub(crate) fn borrow_raw<'a>(raw: ffi::KSP) -> super::vec::Borrowed<'a, Ksp> {
        super::vec::add_reference(raw as ffi::PetscObject);
        super::vec::Borrowed::new(Ksp { raw })
    }
}

impl Drop for Ksp {
    fn drop(&mut self) {
        if alive() {
            // SAFETY: owned live handle; PETSc not finalised.
            unsafe { ffi::KSPDestroy(&mut self.raw) };
        }
    }
}
