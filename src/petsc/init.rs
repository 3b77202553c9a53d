//! Starting and stopping PETSc inside an rsmpi program (service used by every
//! solver stage); communicators cross from rsmpi to PETSc through [`AsComm`].
use super::error::{check, error_handler, PetscError, Result};
use super::ffi;
use mpi::traits::Communicator;
use std::ffi::{c_char, CString};
use std::marker::PhantomData;

/// Anything that names an MPI communicator PETSc can use: every rsmpi
/// [`Communicator`] (e.g. `universe.world()`), or a raw handle in [`RawComm`].
pub trait AsComm {
    /// The raw `MPI_Comm` handle.
    fn as_comm(&self) -> mpi::ffi::MPI_Comm;
}

impl<C: Communicator> AsComm for C {
    fn as_comm(&self) -> mpi::ffi::MPI_Comm {
        self.as_raw()
    }
}

/// A raw `MPI_Comm` handle (e.g. from another library), usable wherever an
/// [`AsComm`] is expected. The handle must stay valid while PETSc objects
/// created on it live.
#[derive(Debug, Clone, Copy)]
pub struct RawComm(pub mpi::ffi::MPI_Comm);

impl AsComm for RawComm {
    fn as_comm(&self) -> mpi::ffi::MPI_Comm {
        self.0
    }
}

/// The PETSc library, initialised; `PetscFinalize` runs when it is dropped
/// (that is when `-log_view` prints its report).
///
/// # Order of initialisation and drop
///
/// ```text
/// let universe = mpi::initialize().unwrap();      // 1. MPI_Init (rsmpi)
/// let petsc = Petsc::initialize(&petsc_args)?;    // 2. PetscInitialize
/// { /* create and drop Vector, Mat, Ksp, Snes, Stage guards */ }
/// drop(petsc);                                    // 3. PetscFinalize
/// drop(universe);                                 // 4. MPI_Finalize
/// ```
///
/// Declaring `universe` before `petsc` in the same scope gives this order
/// automatically (locals drop in reverse order). All PETSc objects must be
/// dropped before the `Petsc` guard: every wrapper checks `PetscFinalized` in
/// its `Drop` and, if PETSc is already finalised, leaks its handle instead of
/// calling into a finalised library (a runtime check rather than a lifetime,
/// so that solver structs can own PETSc objects without borrowing `Petsc`).
#[derive(Debug)]
pub struct Petsc {
    /// The C argv PETSc keeps pointers into; must outlive PetscFinalize.
    _args: Vec<CString>,
    _argv: Vec<*mut c_char>,
    /// PETSc is not thread safe: keep the guard on the thread that made it.
    _not_send: PhantomData<*const ()>,
}

impl Petsc {
    /// Initialises PETSc on `MPI_COMM_WORLD` after `mpi::initialize()`.
    ///
    /// `args` are PETSc options as on a PETSc command line (everything after
    /// `--` on the stiffgrain command line, e.g. `-ksp_type cg -log_view`);
    /// a program name is prepended to build the C argv.
    pub fn initialize(args: &[String]) -> Result<Petsc> {
        Self::initialize_on(&RawComm(unsafe { mpi::ffi::RSMPI_COMM_WORLD }), args)
    }

    /// Like [`Petsc::initialize`] with `PETSC_COMM_WORLD` set to `comm`.
    pub fn initialize_on(comm: &impl AsComm, args: &[String]) -> Result<Petsc> {
        if !mpi::environment::is_initialized() {
            return Err(PetscError::new(
                ffi::PETSC_ERR_ORDER as i32,
                "Petsc::initialize called before mpi::initialize()",
            ));
        }
        if is_initialized() {
            return Err(PetscError::new(ffi::PETSC_ERR_ORDER as i32, "PETSc is already initialised"));
        }
        let mut c_args = Vec::with_capacity(args.len() + 1);
        c_args.push(CString::new("stiffgrain").expect("no NUL"));
        for a in args {
            c_args.push(CString::new(a.as_str()).map_err(|_| {
                PetscError::new(ffi::PETSC_ERR_ARG_WRONG as i32, format!("PETSc option {a:?} contains NUL"))
            })?);
        }
        let mut argv: Vec<*mut c_char> = c_args.iter().map(|c| c.as_ptr() as *mut c_char).collect();
        argv.push(std::ptr::null_mut());
        let mut argc = c_args.len() as i32;
        let mut argv_ptr = argv.as_mut_ptr();
        // SAFETY: MPI is initialised; argv is a NUL-terminated array of
        // NUL-terminated strings kept alive in the returned guard.
        unsafe {
            ffi::PETSC_COMM_WORLD = comm.as_comm();
            check(ffi::PetscInitialize(&mut argc, &mut argv_ptr, std::ptr::null(), std::ptr::null()))?;
            check(ffi::PetscPushErrorHandler(Some(error_handler), std::ptr::null_mut()))?;
        }
        Ok(Petsc { _args: c_args, _argv: argv, _not_send: PhantomData })
    }

    /// Finalises PETSc now, returning its error (dropping does the same but
    /// can only print the error).
    pub fn finalize(self) -> Result<()> {
        let r = finalize_now();
        std::mem::forget(self);
        r
    }
}

fn finalize_now() -> Result<()> {
    if !is_initialized() || is_finalized() {
        return Ok(());
    }
    // SAFETY: PETSc is initialised and not finalised.
    unsafe {
        ffi::PetscPopErrorHandler();
        check(ffi::PetscFinalize())
    }
}

impl Drop for Petsc {
    fn drop(&mut self) {
        if let Err(e) = finalize_now() {
            eprintln!("stiffgrain: PetscFinalize failed: {e}");
        }
    }
}

/// Whether `PetscInitialize` has been called.
pub fn is_initialized() -> bool {
    let mut flag = ffi::PetscBool::PETSC_FALSE;
    // SAFETY: PetscInitialized may be called at any time.
    unsafe { ffi::PetscInitialized(&mut flag) };
    flag == ffi::PetscBool::PETSC_TRUE
}

/// Whether `PetscFinalize` has been called.
pub fn is_finalized() -> bool {
    let mut flag = ffi::PetscBool::PETSC_FALSE;
    // SAFETY: PetscFinalized may be called at any time.
    unsafe { ffi::PetscFinalized(&mut flag) };
    flag == ffi::PetscBool::PETSC_TRUE
}

/// Whether PETSc objects may be destroyed now (initialised, not finalised):
/// wrappers' `Drop` leak their handle otherwise.
pub(crate) fn alive() -> bool {
    is_initialized() && !is_finalized()
}

/// Whether PETSc objects may be created now; an error naming `what` otherwise.
pub(crate) fn require_alive(what: &str) -> Result<()> {
    if alive() {
        Ok(())
    } else {
        Err(PetscError::new(
            ffi::PETSC_ERR_ORDER as i32,
            format!("{what}: PETSc is not initialised (or already finalised)"),
        ))
    }
}
