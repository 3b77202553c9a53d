//! Nonlinear solvers (SNES) with the residual, Jacobian, line search (or
//! its pre-check) and monitor written as Rust closures (the DEM Newton
//! step, the compatibility solves).
use super::error::{check, record, Result};
use super::ffi;
use super::init::{alive, require_alive, AsComm};
use super::cstr::{cstring, static_str};
use super::ksp::{ConvergedReason, Ksp};
use super::mat::Mat;
use super::vec::{Borrowed, Vector};
use super::PetscInt;
use std::ffi::{c_char, c_void};
use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};

type ResidualFn<'a> = Box<dyn FnMut(&Vector, &mut Vector) -> std::result::Result<(), String> + 'a>;
type JacobianFn<'a> = Box<dyn FnMut(&Vector, &mut Mat, Option<&mut Mat>) -> std::result::Result<(), String> + 'a>;
type PreCheckFn<'a> = Box<dyn FnMut(&Vector, &mut Vector) -> std::result::Result<bool, String> + 'a>;
type MonitorFn<'a> = Box<dyn FnMut(PetscInt, f64) -> std::result::Result<(), String> + 'a>;
type ConvergedFn<'a> = Box<dyn FnMut(PetscInt, f64) -> std::result::Result<bool, String> + 'a>;
type ObjectiveFn<'a> = Box<dyn FnMut(&Vector) -> std::result::Result<f64, String> + 'a>;
type LineSearchFn<'a> = Box<dyn FnMut(&mut Vector, &mut Vector, &Vector, &mut Vector) -> std::result::Result<Option<f64>, String> + 'a>;

/// The closures PETSc calls back, reached through the `void *ctx` pointer.
#[derive(Default)]
struct Callbacks<'a> {
    residual: Option<ResidualFn<'a>>,
    jacobian: Option<JacobianFn<'a>>,
    precheck: Option<PreCheckFn<'a>>,
    monitor: Option<MonitorFn<'a>>,
    converged: Option<ConvergedFn<'a>>,
    objective: Option<ObjectiveFn<'a>>,
    line_search: Option<LineSearchFn<'a>>,
}

/// PETSc's `PETSC_INFINITY` (a macro, so not in the FFI): a bound at or
/// beyond it is no bound for the VI methods.
pub const INFINITY: f64 = f64::MAX / 4.0;

/// [`ConvergedReason::code`] of a solve stopped at its iteration limit
/// (`SNES_DIVERGED_MAX_IT`).
pub const DIVERGED_MAX_IT: i32 = ffi::SNESConvergedReason::SNES_DIVERGED_MAX_IT as i32;

/// Most residual norms kept by the convergence history.
const HISTORY_LEN: usize = 10_000;

/// A SNES nonlinear solver whose callbacks are Rust closures living for `'a`
/// (they may borrow local data); `SNESDestroy` on drop. The default method
/// is Newton with line search (`newtonls`); everything can be overridden by
/// `-snes_*` options after [`Snes::set_from_options`].
///
/// A closure error (`Err(e)`, reported with `e.to_string()`) or panic is
/// caught at the FFI boundary, turned into `PETSC_ERR_USER`, and
/// [`Snes::solve`] returns it as a `PetscError` carrying the message.
pub struct Snes<'a> {
    raw: ffi::SNES,
    /// From `Box::into_raw`; freed in Drop after the SNES is destroyed.
    callbacks: *mut Callbacks<'a>,
    history: Vec<f64>,
    history_its: Vec<PetscInt>,
}

impl std::fmt::Debug for Snes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snes").field("raw", &self.raw).finish_non_exhaustive()
    }
}

/// Runs a callback body, converting errors and panics to a PETSc error code.
pub(super) fn guarded(what: &str, body: impl FnOnce() -> std::result::Result<(), String>) -> ffi::PetscErrorCode {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(msg)) => {
            record(format!("{what} callback failed: {msg}"));
            ffi::PETSC_ERR_USER as ffi::PetscErrorCode
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            record(format!("{what} callback panicked: {msg}"));
            ffi::PETSC_ERR_USER as ffi::PetscErrorCode
        }
    }
}

unsafe extern "C" fn residual_trampoline(
    _snes: ffi::SNES,
    x: ffi::Vec,
    f: ffi::Vec,
    ctx: *mut c_void,
) -> ffi::PetscErrorCode {
    // SAFETY: ctx is the Callbacks pointer registered with this SNES, alive
    // until the SNES is destroyed; PETSc calls back on this thread only.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    guarded("residual", || {
        let func = cb.residual.as_mut().ok_or("no residual set")?;
        let x = Vector::borrow_raw(x);
        let mut f = Vector::borrow_raw(f);
        func(&x, &mut f)
    })
}

unsafe extern "C" fn objective_trampoline(
    _snes: ffi::SNES,
    x: ffi::Vec,
    value: *mut f64,
    ctx: *mut c_void,
) -> ffi::PetscErrorCode {
    // SAFETY: as in residual_trampoline.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    let mut out = 0.0;
    let code = guarded("objective", || {
        let func = cb.objective.as_mut().ok_or("no objective set")?;
        let x = Vector::borrow_raw(x);
        out = func(&x)?;
        Ok(())
    });
    if !value.is_null() {
        // SAFETY: PETSc passes a valid out pointer.
        unsafe { *value = out };
    }
    code
}

unsafe extern "C" fn jacobian_trampoline(
    _snes: ffi::SNES,
    x: ffi::Vec,
    a: ffi::Mat,
    p: ffi::Mat,
    ctx: *mut c_void,
) -> ffi::PetscErrorCode {
    // SAFETY: as in residual_trampoline.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    guarded("Jacobian", || {
        let func = cb.jacobian.as_mut().ok_or("no Jacobian set")?;
        let x = Vector::borrow_raw(x);
        let mut a_m: Borrowed<'_, Mat> = Mat::borrow_raw(a);
        if p == a || p.is_null() {
            func(&x, &mut a_m, None)
        } else {
            let mut p_m = Mat::borrow_raw(p);
            func(&x, &mut a_m, Some(&mut p_m))
        }
    })
}

unsafe extern "C" fn precheck_trampoline(
    _ls: ffi::SNESLineSearch,
    x: ffi::Vec,
    y: ffi::Vec,
    changed: *mut ffi::PetscBool,
    ctx: *mut c_void,
) -> ffi::PetscErrorCode {
    // SAFETY: as in residual_trampoline.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    let mut did = false;
    let code = guarded("line-search pre-check", || {
        let func = cb.precheck.as_mut().ok_or("no pre-check set")?;
        let x = Vector::borrow_raw(x);
        let mut y = Vector::borrow_raw(y);
        did = func(&x, &mut y)?;
        Ok(())
    });
    if !changed.is_null() {
        // SAFETY: PETSc passes a valid out pointer.
        unsafe { *changed = if did { ffi::PetscBool::PETSC_TRUE } else { ffi::PetscBool::PETSC_FALSE } };
    }
    code
}

unsafe extern "C" fn line_search_trampoline(ls: ffi::SNESLineSearch, ctx: *mut c_void) -> ffi::PetscErrorCode {
    // SAFETY: as in residual_trampoline.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    let (mut x, mut f, mut y, mut w) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: live line search; out pointers valid (the fifth vector not asked for).
    let code = unsafe { ffi::SNESLineSearchGetVecs(ls, &mut x, &mut f, &mut y, &mut w, std::ptr::null_mut()) };
    if code != 0 {
        return code;
    }
    let mut lambda = None;
    let code = guarded("line search", || {
        let func = cb.line_search.as_mut().ok_or("no line search set")?;
        let (mut xv, mut fv, yv, mut wv) = (Vector::borrow_raw(x), Vector::borrow_raw(f), Vector::borrow_raw(y), Vector::borrow_raw(w));
        lambda = func(&mut xv, &mut fv, &yv, &mut wv)?;
        Ok(())
    });
    if code != 0 {
        return code;
    }
    // SAFETY: live line search; X, F and Y are its vectors, updated above.
    unsafe {
        let code = ffi::SNESLineSearchComputeNorms(ls);
        if code != 0 {
            return code;
        }
        match lambda {
            Some(l) => {
                let code = ffi::SNESLineSearchSetLambda(ls, l);
                if code != 0 {
                    return code;
                }
                ffi::SNESLineSearchSetReason(ls, ffi::SNESLineSearchReason::SNES_LINESEARCH_SUCCEEDED)
            }
            None => ffi::SNESLineSearchSetReason(ls, ffi::SNESLineSearchReason::SNES_LINESEARCH_FAILED_USER),
        }
    }
}

unsafe extern "C" fn monitor_trampoline(
    _snes: ffi::SNES,
    it: PetscInt,
    norm: f64,
    ctx: *mut c_void,
) -> ffi::PetscErrorCode {
    // SAFETY: as in residual_trampoline.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    guarded("monitor", || {
        let func = cb.monitor.as_mut().ok_or("no monitor set")?;
        func(it, norm)
    })
}

unsafe extern "C" fn converged_trampoline(
    snes: ffi::SNES,
    it: PetscInt,
    xnorm: f64,
    ynorm: f64,
    fnorm: f64,
    reason: *mut ffi::SNESConvergedReason,
    ctx: *mut c_void,
) -> ffi::PetscErrorCode {
    // SAFETY: PETSc's own default test with the same arguments (no context).
    let code = unsafe { ffi::SNESConvergedDefault(snes, it, xnorm, ynorm, fnorm, reason, std::ptr::null_mut()) };
    if code != 0 {
        return code;
    }
    // SAFETY: as in residual_trampoline; `reason` is a valid out pointer.
    let cb = unsafe { &mut *(ctx as *mut Callbacks<'_>) };
    let current = unsafe { *reason } as i32;
    if current > 0 {
        return 0;
    }
    let mut accept = false;
    let code = guarded("convergence test", || {
        let func = cb.converged.as_mut().ok_or("no convergence test set")?;
        accept = func(it, fnorm)?;
        Ok(())
    });
    if accept {
        // SAFETY: valid out pointer.
        unsafe { *reason = ffi::SNESConvergedReason::SNES_CONVERGED_FNORM_ABS };
    }
    code
}

fn opt_real(v: Option<f64>) -> f64 {
    v.unwrap_or(ffi::PETSC_DEFAULT as f64)
}

impl<'a> Snes<'a> {
    /// Creates a SNES on `comm` (`SNESCreate`), of type `newtonls`, recording
    /// the residual-norm history. Collective.
    pub fn new(comm: &impl AsComm) -> Result<Snes<'a>> {
        require_alive("Snes::new")?;
        let mut raw: ffi::SNES = std::ptr::null_mut();
        // SAFETY: valid out pointer, live communicator.
        check(unsafe { ffi::SNESCreate(comm.as_comm(), &mut raw) })?;
        let mut snes = Snes {
            raw,
            callbacks: Box::into_raw(Box::default()),
            history: vec![0.0; HISTORY_LEN],
            history_its: vec![0; HISTORY_LEN],
        };
        snes.set_type("newtonls")?;
        // SAFETY: the history buffers live (unmoved: Vec heap storage) as
        // long as the SNES; reset = true restarts the history at each solve.
        check(unsafe {
            ffi::SNESSetConvergenceHistory(
                snes.raw,
                snes.history.as_mut_ptr(),
                snes.history_its.as_mut_ptr(),
                HISTORY_LEN as PetscInt,
                ffi::PetscBool::PETSC_TRUE,
            )
        })?;
        Ok(snes)
    }

    fn callbacks(&mut self) -> &mut Callbacks<'a> {
        // SAFETY: owned pointer from Box::into_raw; PETSc only uses it inside
        // `solve`, which holds `&mut self`, so this borrow is unique.
        unsafe { &mut *self.callbacks }
    }

    /// The residual `F(x)`: the closure gets `x` and writes `F(x)` into `f`
    /// (both distributed; use `view()`/`view_mut()` for the local entries).
    /// `r` is the vector PETSc stores `F` in (`None`: a duplicate of the
    /// solution vector). `SNESSetFunction`.
    pub fn set_function<F, E>(&mut self, r: Option<&Vector>, mut f: F) -> Result<()>
    where
        F: FnMut(&Vector, &mut Vector) -> std::result::Result<(), E> + 'a,
        E: Display,
    {
        self.callbacks().residual = Some(Box::new(move |x, out| f(x, out).map_err(|e| e.to_string())));
        let r = r.map_or(std::ptr::null_mut(), |v| v.raw());
        // SAFETY: live handles; ctx outlives the SNES (freed after SNESDestroy).
        check(unsafe { ffi::SNESSetFunction(self.raw, r, Some(residual_trampoline), self.callbacks as *mut c_void) })
    }

    /// The Jacobian `J(x)`: the closure gets `x`, the matrix `a` to fill (and
    /// assemble) and the preconditioning matrix (`None` when it is `a`).
    /// PETSc keeps references to `a` and `p`, so the caller may drop its own.
    /// `SNESSetJacobian`.
    pub fn set_jacobian<F, E>(&mut self, a: &Mat, p: Option<&Mat>, mut f: F) -> Result<()>
    where
        F: FnMut(&Vector, &mut Mat, Option<&mut Mat>) -> std::result::Result<(), E> + 'a,
        E: Display,
    {
        self.callbacks().jacobian = Some(Box::new(move |x, a, p| f(x, a, p).map_err(|e| e.to_string())));
        let p = p.unwrap_or(a);
        // SAFETY: live handles; ctx outlives the SNES.
        check(unsafe {
            ffi::SNESSetJacobian(self.raw, a.raw(), p.raw(), Some(jacobian_trampoline), self.callbacks as *mut c_void)
        })
    }

    /// The objective φ(x) whose gradient is the residual (`SNESSetObjective`):
    /// the backtracking line search (`bt`) then asks for a decrease of φ
    /// instead of ‖F‖². It must return the same value on every rank.
    pub fn set_objective<F, E>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(&Vector) -> std::result::Result<f64, E> + 'a,
        E: Display,
    {
        self.callbacks().objective = Some(Box::new(move |x| f(x).map_err(|e| e.to_string())));
        // SAFETY: live handle; ctx outlives the SNES.
        check(unsafe { ffi::SNESSetObjective(self.raw, Some(objective_trampoline), self.callbacks as *mut c_void) })
    }

    /// Inexact Newton: the inner KSP's relative tolerance follows the
    /// Eisenstat–Walker forcing terms (`SNESKSPSetUseEW`; `-snes_ksp_ew`).
    pub fn set_use_ew(&mut self, flag: bool) -> Result<()> {
        let b = if flag { ffi::PetscBool::PETSC_TRUE } else { ffi::PetscBool::PETSC_FALSE };
        // SAFETY: live handle.
        check(unsafe { ffi::SNESKSPSetUseEW(self.raw, b) })
    }

    /// A line-search pre-check: the closure gets the current iterate `x` and
    /// the search direction `y` (PETSc steps to `x - λ y`), may shorten or
    /// change `y`, and returns whether it changed it
    /// (`SNESLineSearchSetPreCheck` on `SNESGetLineSearch`).
    pub fn set_line_search_precheck<F, E>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(&Vector, &mut Vector) -> std::result::Result<bool, E> + 'a,
        E: Display,
    {
        self.callbacks().precheck = Some(Box::new(move |x, y| f(x, y).map_err(|e| e.to_string())));
        let mut ls: ffi::SNESLineSearch = std::ptr::null_mut();
        // SAFETY: live handle; the line search is owned by the SNES; ctx outlives it.
        unsafe {
            check(ffi::SNESGetLineSearch(self.raw, &mut ls))?;
            check(ffi::SNESLineSearchSetPreCheck(ls, Some(precheck_trampoline), self.callbacks as *mut c_void))
        }
    }

    /// The line search kind (`SNESLineSearchSetType` on `SNESGetLineSearch`):
    /// "bt" (PETSc's default backtracking), "basic" (full steps), "l2", "cp".
    /// Options (`-snes_linesearch_type`) read later override it.
    pub fn set_line_search_type(&mut self, kind: &str) -> Result<()> {
        let k = cstring(kind)?;
        let mut ls: ffi::SNESLineSearch = std::ptr::null_mut();
        // SAFETY: live handle; the line search is owned by the SNES; PETSc copies the name.
        unsafe {
            check(ffi::SNESGetLineSearch(self.raw, &mut ls))?;
            check(ffi::SNESLineSearchSetType(ls, k.as_ptr()))
        }
    }

    /// A line search written in Rust (`SNESLINESEARCHSHELL`): the closure
    /// gets the iterate `x`, the residual `f` = F(x), the direction `y`
    /// (PETSc steps to `x - λ y`) and a work vector; it leaves the new
    /// iterate in `x` and F of it in `f`, and returns `Some(λ)`, or `None`
    /// when it failed (SNES then stops with `DIVERGED_LINE_SEARCH`).
    /// `-snes_linesearch_type` read later overrides it.
    pub fn set_line_search_shell<F, E>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(&mut Vector, &mut Vector, &Vector, &mut Vector) -> std::result::Result<Option<f64>, E> + 'a,
        E: Display,
    {
        self.callbacks().line_search = Some(Box::new(move |x, r, y, w| f(x, r, y, w).map_err(|e| e.to_string())));
        self.set_line_search_type("shell")?;
        let mut ls: ffi::SNESLineSearch = std::ptr::null_mut();
        // SAFETY: live handle; the line search is owned by the SNES; ctx outlives it.
        unsafe {
            check(ffi::SNESGetLineSearch(self.raw, &mut ls))?;
            check(ffi::SNESLineSearchShellSetUserFunc(ls, Some(line_search_trampoline), self.callbacks as *mut c_void))
        }
    }

    /// A monitor called with (iteration, residual norm) at every Newton
    /// iteration, starting with iteration 0 (`SNESMonitorSet`).
    pub fn set_monitor<F, E>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(PetscInt, f64) -> std::result::Result<(), E> + 'a,
        E: Display,
    {
        self.callbacks().monitor = Some(Box::new(move |i, r| f(i, r).map_err(|e| e.to_string())));
        // SAFETY: live handle; ctx outlives the SNES; no destroy callback (we own ctx).
        check(unsafe { ffi::SNESMonitorSet(self.raw, Some(monitor_trampoline), self.callbacks as *mut c_void, None) })
    }

    /// An extra convergence criterion on top of PETSc's default test
    /// (`SNESSetConvergenceTest` with `SNESConvergedDefault` first): when
    /// the default test has not declared convergence (still iterating, or
    /// out of iterations), the closure gets (iteration, ‖F‖₂) and may declare
    /// it (`SNES_CONVERGED_FNORM_ABS`). It must answer alike on every rank.
    pub fn set_extra_convergence<F, E>(&mut self, mut f: F) -> Result<()>
    where
        F: FnMut(PetscInt, f64) -> std::result::Result<bool, E> + 'a,
        E: Display,
    {
        self.callbacks().converged = Some(Box::new(move |i, r| f(i, r).map_err(|e| e.to_string())));
        // SAFETY: live handle; ctx outlives the SNES; no destroy callback (we own ctx).
        check(unsafe {
            ffi::SNESSetConvergenceTest(self.raw, Some(converged_trampoline), self.callbacks as *mut c_void, None)
        })
    }

    /// Bounds `lower ≤ x ≤ upper` of a variational-inequality method
    /// (`vinewtonrsls`, `vinewtonssls`; `SNESVISetVariableBounds`, which
    /// keeps references to both vectors). Use ±[`INFINITY`] for no bound.
    pub fn set_variable_bounds(&mut self, lower: &Vector, upper: &Vector) -> Result<()> {
        // SAFETY: live handles; PETSc takes its own references to the vectors.
        check(unsafe { ffi::SNESVISetVariableBounds(self.raw, lower.raw(), upper.raw()) })
    }

    /// Method by PETSc name (`"newtonls"`, `"newtontr"`, `"ksponly"`, ...).
    pub fn set_type(&mut self, name: &str) -> Result<()> {
        let n = cstring(name)?;
        // SAFETY: live handle, valid C string.
        check(unsafe { ffi::SNESSetType(self.raw, n.as_ptr()) })
    }

    /// Absolute and relative residual tolerances, step tolerance, iteration
    /// and function-evaluation limits (`SNESSetTolerances`); `None` keeps the
    /// current value.
    pub fn set_tolerances(
        &mut self,
        atol: Option<f64>,
        rtol: Option<f64>,
        stol: Option<f64>,
        max_it: Option<PetscInt>,
        max_f: Option<PetscInt>,
    ) -> Result<()> {
        let d = ffi::PETSC_DEFAULT as PetscInt;
        // SAFETY: live handle.
        check(unsafe {
            ffi::SNESSetTolerances(
                self.raw,
                opt_real(atol),
                opt_real(rtol),
                opt_real(stol),
                max_it.unwrap_or(d),
                max_f.unwrap_or(d),
            )
        })
    }

    /// Options prefix, e.g. `"dem_"` so that `-dem_snes_type` applies here.
    pub fn set_options_prefix(&mut self, prefix: &str) -> Result<()> {
        let p = cstring(prefix)?;
        // SAFETY: live handle, valid C string.
        check(unsafe { ffi::SNESSetOptionsPrefix(self.raw, p.as_ptr()) })
    }

    /// Applies command-line options (`SNESSetFromOptions`, also for the inner
    /// KSP/PC and line search): call after setting code defaults.
    pub fn set_from_options(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::SNESSetFromOptions(self.raw) })
    }

    /// The inner linear solver, to set its defaults (before `set_from_options`).
    pub fn ksp(&mut self) -> Result<Borrowed<'_, Ksp>> {
        let mut k: ffi::KSP = std::ptr::null_mut();
        // SAFETY: live handle; the KSP is owned by the SNES.
        check(unsafe { ffi::SNESGetKSP(self.raw, &mut k) })?;
        Ok(Ksp::borrow_raw(k))
    }

    /// Solves `F(x) = b` (`b = None`: `F(x) = 0`) from the initial guess in
    /// `x` (`SNESSolve`). Divergence is not an error here: check
    /// [`Snes::converged_reason`]. A failing callback is. Collective.
    pub fn solve(&mut self, b: Option<&Vector>, x: &mut Vector) -> Result<()> {
        let b = b.map_or(std::ptr::null_mut(), |v| v.raw());
        // SAFETY: live handles; callbacks registered above stay valid.
        check(unsafe { ffi::SNESSolve(self.raw, b, x.raw()) })
    }

    /// Why the last solve stopped (positive: converged, negative: diverged).
    pub fn converged_reason(&self) -> Result<ConvergedReason> {
        let mut code: i32 = 0;
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: SNESConvergedReason is a C enum (i32 sized); the string is static.
        unsafe {
            check(ffi::SNESGetConvergedReason(self.raw, &mut code as *mut i32 as *mut ffi::SNESConvergedReason))?;
            check(ffi::SNESGetConvergedReasonString(self.raw, &mut name))?;
        }
        Ok(ConvergedReason { code, name: static_str(name) })
    }

    /// Newton iterations of the last solve.
    pub fn iteration_number(&self) -> Result<PetscInt> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::SNESGetIterationNumber(self.raw, &mut n) })?;
        Ok(n)
    }

    /// Total linear (KSP) iterations of the last solve.
    pub fn linear_iterations(&self) -> Result<PetscInt> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::SNESGetLinearSolveIterations(self.raw, &mut n) })?;
        Ok(n)
    }

    /// Last residual norm `‖F(x)‖₂` (`SNESGetFunctionNorm`).
    pub fn function_norm(&self) -> Result<f64> {
        let mut r = 0.0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::SNESGetFunctionNorm(self.raw, &mut r) })?;
        Ok(r)
    }

    /// Residual norms of the last solve, one per Newton iteration starting
    /// with the initial guess (`SNESGetConvergenceHistory`).
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        let (mut a, mut its, mut na): (*mut f64, *mut PetscInt, PetscInt) =
            (std::ptr::null_mut(), std::ptr::null_mut(), 0);
        // SAFETY: live handle; `a` points into `self.history`, `na` entries valid.
        check(unsafe { ffi::SNESGetConvergenceHistory(self.raw, &mut a, &mut its, &mut na) })?;
        let na = (na.max(0) as usize).min(HISTORY_LEN);
        Ok(self.history[..na].to_vec())
    }
}

impl Drop for Snes<'_> {
    fn drop(&mut self) {
        if alive() {
            // SAFETY: owned live handle; PETSc not finalised.
            unsafe { ffi::SNESDestroy(&mut self.raw) };
        }
        // SAFETY: from Box::into_raw in `new`; PETSc no longer calls back
        // (destroyed, or finalised).
        drop(unsafe { Box::from_raw(self.callbacks) });
    }
}
