//! C strings across the FFI edge: Rust names to PETSc, PETSc's static names
//! back. Shared by every wrapper, so no wrapper imports another for them.
use super::error::{PetscError, Result};
use super::ffi;
use std::ffi::{c_char, CStr, CString};

/// `s` as a C string; a NUL inside it is a PETSc argument error.
pub(crate) fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| PetscError::new(ffi::PETSC_ERR_ARG_WRONG as i32, format!("{s:?} contains NUL")))
}

/// A name PETSc returns (a pointer to static storage) as a `String`; empty
/// for NULL.
pub(crate) fn static_str(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: PETSc returns pointers to static NUL-terminated names.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}
