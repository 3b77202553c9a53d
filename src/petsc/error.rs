//! PETSc error codes as Rust `Result`s: the error handler that records the
//! message of a failing call, and the `check` helper every wrapper uses.
use super::ffi;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A failed PETSc call: the PETSc error code and a readable message
/// (PETSc's text for the code, the specific message of the failing routine
/// and where it was raised, when known).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("PETSc error {code}: {message}")]
pub struct PetscError {
    /// The `PetscErrorCode` (e.g. 63 = `PETSC_ERR_ARG_OUTOFRANGE`, 83 = `PETSC_ERR_USER`).
    pub code: i32,
    /// Human-readable description.
    pub message: String,
}

impl PetscError {
    /// An error raised on the Rust side of the binding (bad argument sizes, a
    /// failed callback) with the given PETSc error code.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        PetscError { code, message: message.into() }
    }
}

/// Shorthand for results of PETSc calls.
pub type Result<T> = std::result::Result<T, PetscError>;

/// Message of the first error raised since the last `check`, recorded by
/// [`error_handler`]; PETSc calls it once for the initial error and again for
/// each caller on the way up (`PETSC_ERROR_REPEAT`), which we ignore.
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Whether `LAST` may hold a message: lets the successful `check` of a hot
/// loop (one per `MatSetValuesBlocked`) skip the lock.
static PENDING: AtomicBool = AtomicBool::new(false);

/// Records a message for the next failing `check` (used by callbacks whose
/// error PETSc only sees as a code).
pub(crate) fn record(message: String) {
    if let Ok(mut last) = LAST.lock() {
        *last = Some(message);
        PENDING.store(true, Ordering::Release);
    }
}

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: PETSc passes NUL-terminated strings that outlive the call.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().trim().to_string()
    }
}

/// PETSc error handler installed by `Petsc::initialize`: prints nothing, stores
/// the message of the initial error and returns the code, so that the failing
/// call returns it to Rust (like `PetscReturnErrorHandler`, but keeping the text).
pub(crate) unsafe extern "C" fn error_handler(
    _comm: mpi::ffi::MPI_Comm,
    line: c_int,
    func: *const c_char,
    file: *const c_char,
    n: ffi::PetscErrorCode,
    p: ffi::PetscErrorType,
    mess: *const c_char,
    _ctx: *mut c_void,
) -> ffi::PetscErrorCode {
    if p == ffi::PetscErrorType::PETSC_ERROR_INITIAL {
        let text = format!("{} (in {}() at {}:{})", cstr(mess), cstr(func), cstr(file), line);
        if let Ok(mut last) = LAST.lock() {
            if last.is_none() {
                *last = Some(text);
                PENDING.store(true, Ordering::Release);
            }
        }
    }
    n
}

/// Turns a `PetscErrorCode` into a `Result`, with PETSc's text for the code and
/// the recorded specific message.
pub(crate) fn check(code: ffi::PetscErrorCode) -> Result<()> {
    if code == 0 && !PENDING.load(Ordering::Acquire) {
        return Ok(());
    }
    let specific = LAST.lock().ok().and_then(|mut l| {
        PENDING.store(false, Ordering::Release);
        l.take()
    });
    if code == 0 {
        return Ok(());
    }
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: PetscErrorMessage only writes a pointer to a static string.
    unsafe { ffi::PetscErrorMessage(code as c_int, &mut text, std::ptr::null_mut()) };
    let generic = cstr(text);
    let message = match (generic.is_empty(), specific) {
        (false, Some(s)) if !s.is_empty() => format!("{generic}: {s}"),
        (true, Some(s)) if !s.is_empty() => s,
        (false, _) => generic,
        (true, _) => "(no message)".to_string(),
    };
    Err(PetscError { code, message })
}
