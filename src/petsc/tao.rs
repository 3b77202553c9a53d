//! Optimisation solvers (TAO) for bound-constrained problems whose
//! objective, gradient and Hessian are Rust closures (the frictionless CD
//! QP by `bqpip`, `gpcg`, `bnls`, `tron`, ...).
use super::cstr::cstring;
use super::error::{check, Result};
use super::ffi;
use super::init::{alive, require_alive, AsComm};
use super::ksp::Ksp;
use super::mat::Mat;
use super::snes::guarded;
use super::vec::{Borrowed, Vector};
use super::PetscInt;
use std::ffi::c_void;
use std::fmt::Display;

type ObjGradFn<'a> = Box<dyn FnMut(&Vector, &mut Vector) -> std::result::Result<f64, String> + 'a>;
type ConvergedFn<'a> = Box<dyn FnMut(&Vector) -> std::result::Result<bool, String> + 'a>;

#[derive(Default)]
struct Callbacks<'a> {
    objective_gradient: Option<ObjGradFn<'a>>,
    converged: Option<ConvergedFn<'a>>,
}

/// A TAO solver whose callbacks are Rust closures living for `'a`;
/// `TaoDestroy` on drop. Closure errors and panics become PETSc errors that
/// [`Tao::solve`] returns, as for [`super::Snes`].
pub struct Tao<'a> {
    raw: ffi::Tao,
    /// From `Box::into_raw`; freed in Drop after the TAO is destroyed.
    callbacks: *mut Callbacks<'a>,
}

unsafe extern "C" fn objective_gradient_trampoline(_tao: ffi::Tao, x: ffi::Vec, value: *mut f64, g: ffi::Vec, ctx: *mut c_void) -> ffi::PetscErrorCode {
    // SAFETY: ctx is the Callbacks pointer registered with this TAO, alive
    // until it is destroyed; PETSc calls back on this thread only.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    let mut out = 0.0;
    let code = guarded("objective and gradient", || {
        let func = cb.objective_gradient.as_mut().ok_or("no objective set")?;
        let x = Vector::borrow_raw(x);
        let mut g = Vector::borrow_raw(g);
        out = func(&x, &mut g)?;
        Ok(())
    });
    if !value.is_null() {
        // SAFETY: PETSc passes a valid out pointer.
        unsafe { *value = out };
    }
    code
}

unsafe extern "C" fn constant_hessian_trampoline(_tao: ffi::Tao, _x: ffi::Vec, _h: ffi::Mat, _p: ffi::Mat, _ctx: *mut c_void) -> ffi::PetscErrorCode {
    0
}

unsafe extern "C" fn converged_trampoline(tao: ffi::Tao, ctx: *mut c_void) -> ffi::PetscErrorCode {
    // SAFETY: PETSc's own test first (iteration limits, its tolerances).
    let code = unsafe { ffi::TaoDefaultConvergenceTest(tao, std::ptr::null_mut()) };
    if code != 0 {
        return code;
    }
    // SAFETY: as in objective_gradient_trampoline.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    let mut x: ffi::Vec = std::ptr::null_mut();
    // SAFETY: live handle, valid out pointer; the solution stays owned by the TAO.
    let code = unsafe { ffi::TaoGetSolution(tao, &mut x) };
    if code != 0 {
        return code;
    }
    let mut accept = false;
    let code = guarded("convergence test", || {
        let func = cb.converged.as_mut().ok_or("no convergence test set")?;
        accept = func(&Vector::borrow_raw(x))?;
        Ok(())
    });
    if accept {
        // SAFETY: live handle.
        return unsafe { ffi::TaoSetConvergedReason(tao, ffi::TaoConvergedReason::TAO_CONVERGED_USER) };
    }
    code
}

impl<'a> Tao<'a> {
    /// A TAO of type `kind` (`"bqpip"`, `"gpcg"`, `"bnls"`, ...). Collective.
    pub fn new(comm: &impl AsComm, kind: &str) -> Result<Tao<'a>> {
        require_alive("Tao::new")?;
        let mut raw: ffi::Tao = std::ptr::null_mut();
        // SAFETY: valid out pointer, live communicator.
        check(unsafe { ffi::TaoCreate(comm.as_comm(), &mut raw) })?;
        let tao = Tao { raw, callbacks: Box::into_raw(Box::default()) };
        let k = cstring(kind)?;
        // SAFETY: live handle, valid C string (copied by PETSc).
        check(unsafe { ffi::TaoSetType(tao.raw, k.as_ptr()) })?;
        Ok(tao)
    }

    fn callbacks(&mut self) -> &mut Callbacks<'a> {
        // SAFETY: owned pointer from Box::into_raw; PETSc only uses it inside
        // `solve`, which holds `&mut self`, so this borrow is unique.
        unsafe { &mut *self.callbacks }
    }

    /// The objective and its gradient: the closure gets `x`, writes the
    /// gradient into `g` and returns the objective (the same on every rank).
    pub fn set_objective_and_gradient<F, E>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(&Vector, &mut Vector) -> std::result::Result<f64, E> + 'a,
        E: Display,
    {
        self.callbacks().objective_gradient = Some(Box::new(move |x, g| f(x, g).map_err(|e| e.to_string())));
        // SAFETY: live handle; ctx outlives the TAO (freed after TaoDestroy).
        check(unsafe { ffi::TaoSetObjectiveAndGradient(self.raw, std::ptr::null_mut(), Some(objective_gradient_trampoline), self.callbacks as *mut c_void) })
    }

    /// A constant Hessian `h` (a quadratic objective); PETSc keeps a reference.
    pub fn set_constant_hessian(&mut self, h: &Mat) -> Result<()> {
        // SAFETY: live handles; the callback does nothing.
        check(unsafe { ffi::TaoSetHessian(self.raw, h.raw(), h.raw(), Some(constant_hessian_trampoline), std::ptr::null_mut()) })
    }

    /// Bounds `lower ≤ x ≤ upper` (PETSc keeps references to both vectors).
    pub fn set_variable_bounds(&mut self, lower: &Vector, upper: &Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::TaoSetVariableBounds(self.raw, lower.raw(), upper.raw()) })
    }

    /// A convergence test on top of PETSc's default one: the closure gets
    /// the current iterate and declares convergence (`TAO_CONVERGED_USER`).
    /// It must answer alike on every rank.
    pub fn set_extra_convergence<F, E>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(&Vector) -> std::result::Result<bool, E> + 'a,
        E: Display,
    {
        self.callbacks().converged = Some(Box::new(move |x| f(x).map_err(|e| e.to_string())));
        // SAFETY: live handle; ctx outlives the TAO.
        check(unsafe { ffi::TaoSetConvergenceTest(self.raw, Some(converged_trampoline), self.callbacks as *mut c_void) })
    }

    /// Gradient tolerances (absolute, relative, relative to the start;
    /// `TaoSetTolerances`) and the iteration limit.
    pub fn set_tolerances(&mut self, gatol: f64, grtol: f64, gttol: f64, max_it: PetscInt) -> Result<()> {
        // SAFETY: live handle.
        unsafe {
            check(ffi::TaoSetTolerances(self.raw, gatol, grtol, gttol))?;
            check(ffi::TaoSetMaximumIterations(self.raw, max_it))?;
            check(ffi::TaoSetMaximumFunctionEvaluations(self.raw, PetscInt::MAX))
        }
    }

    /// Options prefix, e.g. `"cd_"` so that `-cd_tao_type` applies here.
    pub fn set_options_prefix(&mut self, prefix: &str) -> Result<()> {
        let p = cstring(prefix)?;
        // SAFETY: live handle, valid C string.
        check(unsafe { ffi::TaoSetOptionsPrefix(self.raw, p.as_ptr()) })
    }

    /// Applies command-line options (`TaoSetFromOptions`, also for the inner KSP).
    pub fn set_from_options(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::TaoSetFromOptions(self.raw) })
    }

    /// The inner linear solver (Newton-type methods), to set its defaults.
    pub fn ksp(&mut self) -> Result<Option<Borrowed<'_, Ksp>>> {
        let mut k: ffi::KSP = std::ptr::null_mut();
        // SAFETY: live handle; the KSP (if any) is owned by the TAO.
        check(unsafe { ffi::TaoGetKSP(self.raw, &mut k) })?;
        Ok((!k.is_null()).then(|| Ksp::borrow_raw(k)))
    }

    /// Minimises from the start in `x`, which holds the solution on return
    /// (`TaoSetSolution`, `TaoSolve`). Collective.
    pub fn solve(&mut self, x: &mut Vector) -> Result<()> {
        // SAFETY: live handles; callbacks registered above stay valid.
        unsafe {
            check(ffi::TaoSetSolution(self.raw, x.raw()))?;
            check(ffi::TaoSolve(self.raw))
        }
    }

    /// Why the last solve stopped (positive: converged, negative: diverged).
    pub fn converged_reason(&self) -> Result<i32> {
        let mut r = ffi::TaoConvergedReason::TAO_CONTINUE_ITERATING;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::TaoGetConvergedReason(self.raw, &mut r) })?;
        Ok(r as i32)
    }

    /// Iterations of the last solve.
    pub fn iteration_number(&self) -> Result<PetscInt> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::TaoGetIterationNumber(self.raw, &mut n) })?;
        Ok(n)
    }

    /// Linear (KSP) iterations of the last solve.
    pub fn linear_iterations(&self) -> Result<PetscInt> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::TaoGetLinearSolveIterations(self.raw, &mut n) })?;
        Ok(n)
    }
}

impl Drop for Tao<'_> {
    fn drop(&mut self) {
        if alive() {
            // SAFETY: owned live handle; PETSc not finalised.
            unsafe { ffi::TaoDestroy(&mut self.raw) };
        }
        // SAFETY: from Box::into_raw in `new`; PETSc no longer calls back.
        drop(unsafe { Box::from_raw(self.callbacks) });
    }
}
